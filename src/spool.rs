//! Files on disk, in folders by purpose under `[storage] data_dir`:
//!
//! - `downloads/`: `.part` files being written and verified sources of unfinished jobs;
//! - `work/<ticket>/`: intermediate output of a job being processed;
//! - `results/<ticket>/`: results of `ready` jobs.
//!
//! Every name is derived from the ticket plus random characters, never from anything a user
//! sent, so a file name like `../../etc/passwd` is only ever text in a message.

use std::io;
use std::path::{Path, PathBuf};

use crate::domain::Ticket;

/// Why the data folder cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("data folder {path} is not usable: {source}")]
pub struct SpoolError {
    /// The folder.
    pub path: PathBuf,
    /// The cause.
    #[source]
    pub source: io::Error,
}

/// The data folder. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Spool {
    root: PathBuf,
}

impl Spool {
    /// Creates the folders when missing and checks that they are writable.
    pub fn open(root: &Path) -> Result<Self, SpoolError> {
        let spool = Self { root: root.to_path_buf() };
        for dir in [spool.downloads(), spool.work_root(), spool.results_root()] {
            std::fs::create_dir_all(&dir).map_err(|source| SpoolError { path: dir.clone(), source })?;
            // Probe: an unwritable folder must stop startup, not fail every job later.
            tempfile::Builder::new()
                .prefix(".probe-")
                .tempfile_in(&dir)
                .map_err(|source| SpoolError { path: dir.clone(), source })?;
        }
        Ok(spool)
    }

    /// The data folder itself.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `downloads/`.
    pub fn downloads(&self) -> PathBuf {
        self.root.join("downloads")
    }

    /// `work/`.
    pub fn work_root(&self) -> PathBuf {
        self.root.join("work")
    }

    /// `results/`.
    pub fn results_root(&self) -> PathBuf {
        self.root.join("results")
    }

    /// The prefix of every download file of a job: `<ticket>-`.
    pub fn download_prefix(ticket: Ticket) -> String {
        format!("{}-", ticket.0)
    }

    /// The verified source of a job, next to its `.part`: `downloads/<ticket>-<random>.source`.
    pub fn source_path_for(&self, part: &Path) -> PathBuf {
        part.with_extension("source")
    }

    /// `work/<ticket>/`, created.
    pub fn work_dir(&self, ticket: Ticket) -> io::Result<PathBuf> {
        let dir = self.work_root().join(ticket.0.to_string());
        std::fs::create_dir_all(&dir)?;
        Ok(dir)
    }

    /// `results/<ticket>/`, created.
    pub fn result_dir(&self, ticket: Ticket) -> io::Result<PathBuf> {
        let dir = self.results_root().join(ticket.0.to_string());
        std::fs::create_dir_all(&dir)?;
        Ok(dir)
    }

    /// Removes every file of `ticket` in `downloads/` (a `.part` or an unrecorded source left by
    /// an attempt that died). Only the lease holder calls this, right before downloading again.
    pub fn remove_downloads_of(&self, ticket: Ticket) -> io::Result<usize> {
        let prefix = Self::download_prefix(ticket);
        let mut removed = 0;
        for entry in std::fs::read_dir(self.downloads())? {
            let entry = entry?;
            if entry.file_name().to_str().is_some_and(|n| n.starts_with(&prefix)) {
                match std::fs::remove_file(entry.path()) {
                    Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                    _ => removed += 1,
                }
            }
        }
        Ok(removed)
    }

    /// Removes `results/<ticket>/`: before a job is `ready`, anything there is a result an attempt
    /// wrote but never recorded (it died between the move and the commit).
    pub fn remove_unrecorded_results(&self, ticket: Ticket) -> io::Result<()> {
        remove_dir_if_exists(&self.results_root().join(ticket.0.to_string()))
    }

    /// Removes a job's intermediate output. Missing is fine.
    pub fn remove_work(&self, ticket: Ticket) -> io::Result<()> {
        remove_dir_if_exists(&self.work_root().join(ticket.0.to_string()))
    }

    /// Removes a file the store pointed at, after the store stopped pointing at it.
    pub fn remove_file(&self, path: &str) -> io::Result<()> {
        let path = Path::new(path);
        // Only ever delete inside the data folder, whatever a row says.
        if !path.starts_with(&self.root) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "refusing to delete a file outside the data folder",
            ));
        }
        match std::fs::remove_file(path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => {
                if let Some(parent) =
                    path.parent().filter(|p| p.starts_with(self.results_root()) || p.starts_with(self.work_root()))
                {
                    // The per-job folder goes when its last file goes; non-empty is fine.
                    let _ = std::fs::remove_dir(parent);
                }
                Ok(())
            }
        }
    }
}

fn remove_dir_if_exists(dir: &Path) -> io::Result<()> {
    match std::fs::remove_dir_all(dir) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// A safe file name for the uploaded result, derived from the declared name: path separators and
/// control characters removed, length bounded, `.pdf` ensured.
pub fn result_file_name(declared: Option<&str>) -> String {
    let raw = declared.unwrap_or("document.pdf");
    let base = raw.rsplit(['/', '\\']).next().unwrap_or(raw);
    let clean: String = base
        .chars()
        .filter(|c| !c.is_control() && !matches!(c, '"' | '<' | '>' | '|' | ':' | '*' | '?'))
        .take(120)
        .collect();
    let clean = clean.trim().trim_start_matches('.');
    let stem = if clean.is_empty() { "document" } else { clean };
    let lower = stem.to_ascii_lowercase();
    if lower.ends_with(".pdf") { stem.to_owned() } else { format!("{stem}.pdf") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_names_never_carry_paths_or_controls() {
        assert_eq!(result_file_name(Some("../../etc/passwd")), "passwd.pdf");
        assert_eq!(result_file_name(Some("C:\\x\\report.PDF")), "report.PDF");
        assert_eq!(result_file_name(Some("a\nb.pdf")), "ab.pdf");
        assert_eq!(result_file_name(Some("...")), "document.pdf");
        assert_eq!(result_file_name(None), "document.pdf");
    }

    #[test]
    fn open_creates_the_folders_and_refuses_to_delete_outside() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let spool = Spool::open(&tmp.path().join("data")).expect("open");
        assert!(spool.downloads().is_dir() && spool.work_root().is_dir() && spool.results_root().is_dir());
        let outside = tmp.path().join("keep.txt");
        std::fs::write(&outside, b"x").expect("write");
        assert!(spool.remove_file(outside.to_str().expect("utf8")).is_err());
        assert!(outside.exists());
    }

    #[test]
    fn an_unwritable_folder_stops_startup() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let file = tmp.path().join("not-a-dir");
        std::fs::write(&file, b"x").expect("write");
        let err = Spool::open(&file).expect_err("a file is not a data folder");
        assert!(err.to_string().contains("not-a-dir"), "{err}");
    }
}
