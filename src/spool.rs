//! Files on disk, in folders by purpose under `[storage] data_dir`:
//!
//! - `downloads/`: `.part` files being written and verified sources of unfinished jobs;
//! - `work/<ticket>/`: intermediate output of a job being processed;
//! - `results/<ticket>/`: results of `ready` jobs, each with its preview beside it when it has
//!   one ([`preview_path_for`]).
//!
//! Every name is derived from the ticket plus random characters, never from anything a user
//! sent, so a file name like `../../etc/passwd` is only ever text in a message.
//!
//! Every file an attempt writes also carries the lease token of its claim (`<ticket>-<token>-…`
//! in `downloads/`, `<token>-…` in the per-job folders). Before it starts, an attempt removes
//! what earlier attempts (smaller tokens) left, and nothing else: a former holder that stalled
//! past its lease cannot delete the files, or the committed result, of the worker that holds the
//! job after it. Per-job folders themselves are only removed once the job ended, so a new
//! holder never finds its folder gone.

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

    /// The prefix of the download files of the attempt with lease `token`: `<ticket>-<token>-`.
    pub fn download_attempt_prefix(ticket: Ticket, token: i64) -> String {
        format!("{}-{token}-", ticket.0)
    }

    /// The prefix of the files the attempt with lease `token` writes into a per-job folder.
    pub fn attempt_prefix(token: i64) -> String {
        format!("{token}-")
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

    /// Removes the files of `ticket` that download attempts before the one with lease `token`
    /// left in `downloads/` (a `.part`, an unrecorded source). Only the lease holder calls this,
    /// right before it downloads; files of its own or of later attempts stay. Returns how many
    /// files were removed.
    pub fn remove_earlier_downloads(&self, ticket: Ticket, token: i64) -> io::Result<usize> {
        let prefix = Self::download_prefix(ticket);
        remove_older(&self.root, &self.downloads(), token, |name| name.strip_prefix(&prefix))
    }

    /// Removes what processing attempts before the one with lease `token` left in
    /// `work/<ticket>/` and `results/<ticket>/` (intermediate output, a result written but never
    /// recorded). Only the lease holder calls this, right before its own attempt; the recorded
    /// source in `downloads/` is not touched. Returns how many files were removed.
    pub fn remove_earlier_output(&self, ticket: Ticket, token: i64) -> io::Result<usize> {
        let mut removed = 0;
        for dir in [self.work_root(), self.results_root()] {
            removed += remove_older(&self.root, &dir.join(ticket.0.to_string()), token, |name| Some(name))?;
        }
        Ok(removed)
    }

    /// Removes every file of an ended job (cancelled, forgotten, failed, expired): its downloads,
    /// its intermediate output and its results. Only for a job whose row no longer points at
    /// any of them and that nobody holds. Missing is fine. Returns how many downloads went.
    pub fn remove_everything_of(&self, ticket: Ticket) -> io::Result<usize> {
        let prefix = Self::download_prefix(ticket);
        let removed = remove_older(&self.root, &self.downloads(), i64::MAX, |name| name.strip_prefix(&prefix))?;
        self.remove_path(&self.work_root().join(ticket.0.to_string()))?;
        self.remove_path(&self.results_root().join(ticket.0.to_string()))?;
        Ok(removed)
    }

    /// Removes a job's intermediate output. Missing is fine.
    pub fn remove_work(&self, ticket: Ticket) -> io::Result<()> {
        self.remove_path(&self.work_root().join(ticket.0.to_string()))
    }

    /// Removes a file the store pointed at, after the store stopped pointing at it, and its
    /// per-job folder when that was its last file. Missing is fine.
    pub fn remove_file(&self, path: &str) -> io::Result<()> {
        let path = Path::new(path);
        self.remove_path(path)?;
        if let Some(parent) =
            path.parent().filter(|p| p.starts_with(self.results_root()) || p.starts_with(self.work_root()))
        {
            // The per-job folder goes when its last file goes; non-empty is fine.
            self.remove_empty_folder(parent);
        }
        Ok(())
    }

    /// Removes `path`, a file or a folder with all it holds: the one way docket deletes what it
    /// wrote. A path outside the data folder is refused, whatever asked for it (a row, a
    /// listing); missing is fine.
    pub fn remove_path(&self, path: &Path) -> io::Result<()> {
        delete_within(&self.root, path).map(|_| ())
    }

    /// Removes the folder `dir` if it is empty and inside the data folder; anything else is left
    /// as it is (a folder that still holds files is in use).
    pub fn remove_empty_folder(&self, dir: &Path) {
        if dir.starts_with(&self.root) {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

/// Deletes `path` (a file, or a folder with everything in it) if it lies inside `root`, which
/// every deletion of the data folder goes through. Returns whether something was there.
fn delete_within(root: &Path, path: &Path) -> io::Result<bool> {
    // Only ever delete inside the data folder, whatever a row says. No `..` either: a path that
    // climbs out of the folder still starts with it.
    let climbs = path.components().any(|c| matches!(c, std::path::Component::ParentDir));
    if !path.starts_with(root) || climbs {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "refusing to delete a file outside the data folder"));
    }
    let is_dir = std::fs::symlink_metadata(path).is_ok_and(|meta| meta.is_dir());
    let gone = if is_dir { std::fs::remove_dir_all(path) } else { std::fs::remove_file(path) };
    match gone {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

/// Removes the files in `dir` that `attempt_part` (the part of the name after any ticket, or
/// `None` for another job's file) says an attempt before `token` wrote: a name that does not
/// start with a token is older than every attempt that names its files. A missing `dir` is fine.
fn remove_older(root: &Path, dir: &Path, token: i64, attempt_part: impl Fn(&str) -> Option<&str>) -> io::Result<usize> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    let mut removed = 0;
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(&attempt_part) else { continue };
        let written_by = rest.split('-').next().and_then(|t| t.parse::<i64>().ok());
        if written_by.is_some_and(|t| t >= token) {
            continue;
        }
        // A run's scratch folder is removed with all it holds.
        delete_within(root, &entry.path())?;
        removed += 1;
    }
    Ok(removed)
}

/// Where the `number`-th file of an album lies in its source folder (from 1, in album order):
/// `<folder>/<number>`. The download writes them so, and processing and the run's child read
/// them so ([`album_files`]).
pub fn album_file(folder: &Path, number: u32) -> PathBuf {
    folder.join(number.to_string())
}

/// The files of the album source folder `folder`, in album order: `1`, `2`, … up to the first
/// number that is not a file.
pub fn album_files(folder: &Path) -> Vec<PathBuf> {
    (1..).map(|number| album_file(folder, number)).take_while(|path| path.is_file()).collect()
}

/// Where the preview of the result at `result` lies: beside it, under the result's own name with
/// `.preview.jpg` added. It carries the result's attempt prefix, so it goes with the result
/// wherever the result goes (a later attempt's cleanup, the janitor, the job's end).
pub fn preview_path_for(result: &Path) -> PathBuf {
    let mut name = result.as_os_str().to_owned();
    name.push(PREVIEW_SUFFIX);
    PathBuf::from(name)
}

/// What [`preview_path_for`] adds to a result's path.
pub const PREVIEW_SUFFIX: &str = ".preview.jpg";

/// A safe file name for the uploaded result of `operation`, derived from the declared name: path
/// separators and control characters removed, length bounded, the declared extension replaced
/// by the result's, and the operation named unless it is `optimize` or gives another kind of
/// file anyway (`contract.pdf` → `contract.pdf`, `contract-shrink.pdf`, `contract-pages.zip`,
/// `contract.txt`; `photo.jpg` → `photo.pdf`).
pub fn result_file_name_for(declared: Option<&str>, operation: &crate::domain::Operation) -> String {
    use crate::domain::Operation;
    let plain = result_file_name(declared);
    let stem = plain.get(..plain.len() - ".pdf".len()).unwrap_or("document");
    // The declared extension goes too when the result is a PDF made of something else.
    let stem = match stem.rsplit_once('.') {
        Some((base, ext))
            if !base.is_empty()
                && ["jpg", "jpeg", "png", "tif", "tiff", "webp"].contains(&ext.to_ascii_lowercase().as_str()) =>
        {
            base
        }
        _ => stem,
    };
    let extension = operation.output().extension();
    match operation {
        Operation::Optimize | Operation::ToPdf | Operation::Text | Operation::Info => {
            format!("{stem}.{extension}")
        }
        Operation::Split { .. } => format!("{stem}-pages.{extension}"),
        other => format!("{stem}-{}.{extension}", other.name()),
    }
}

/// The file name a person sees for one part of a result sent in parts: the declared name's stem
/// with the part's pages (`contract-p001-040.pdf` for the archive's `page-p001-040.pdf`).
pub fn part_file_name(declared: Option<&str>, part_name: &str) -> String {
    let plain = result_file_name(declared);
    let stem = plain.get(..plain.len() - ".pdf".len()).unwrap_or("document");
    let pages = part_name.strip_prefix(crate::pdf::split::PART_PREFIX).unwrap_or(part_name);
    let pages: String = pages.chars().filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.')).collect();
    format!("{stem}{pages}")
}

/// A safe file name for an uploaded PDF, derived from the declared name: path separators and
/// control characters removed, length bounded, `.pdf` ensured.
pub fn result_file_name(declared: Option<&str>) -> String {
    let raw = declared.unwrap_or("document.pdf");
    let base = raw.rsplit(['/', '\\']).next().unwrap_or(raw);
    let clean: String = base
        .chars()
        .filter(|c| crate::domain::names::shows(*c) && !matches!(c, '"' | '<' | '>' | '|' | ':' | '*' | '?'))
        .take(120)
        .collect();
    // At most 200 bytes, cut at a character boundary: room for the suffix within the 255 bytes
    // a file name may have wherever the person saves it.
    let clean = &clean[..clean.floor_char_boundary(200)];
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
        assert_eq!(result_file_name(Some("a\u{0}b\u{202E}fdp.exe")), "abfdp.exe.pdf");
        for long in ["я".repeat(300), "🦀".repeat(100), format!("a{}", "я".repeat(150))] {
            let name = result_file_name(Some(&long));
            assert!(name.len() <= 204 && name.ends_with(".pdf"), "{} bytes: {name}", name.len());
        }
        assert_eq!(result_file_name(Some("...")), "document.pdf");
        assert_eq!(result_file_name(None), "document.pdf");
    }

    #[test]
    fn result_names_say_what_was_done() {
        use crate::domain::Operation;
        let name = |declared: &str, words: &str| {
            result_file_name_for(Some(declared), &Operation::parse(words).unwrap_or_else(|e| panic!("{e}")))
        };
        assert_eq!(name("contract.pdf", "optimize"), "contract.pdf");
        assert_eq!(name("contract.pdf", "shrink"), "contract-shrink.pdf");
        assert_eq!(name("contract.pdf", "split"), "contract-pages.zip");
        assert_eq!(name("contract.pdf", "text"), "contract.txt");
        assert_eq!(name("contract.pdf", "rotate 90"), "contract-rotate.pdf");
        assert_eq!(name("photo.jpg", "topdf"), "photo.pdf");
        assert_eq!(result_file_name_for(None, &Operation::Text), "document.txt");
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
    fn removing_a_path_that_climbs_out_of_the_data_folder_is_refused() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let spool = Spool::open(&tmp.path().join("data")).expect("open");
        let outside = tmp.path().join("keep");
        std::fs::create_dir(&outside).expect("mkdir");
        // Starts with the data folder, yet names a folder beside it.
        let climbing = spool.results_root().join("..").join("..").join("keep");
        let err = spool.remove_path(&climbing).expect_err("refused");
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        assert!(outside.exists());
        // A folder inside goes with what it holds; one already gone is fine.
        let work = spool.work_dir(Ticket(3)).expect("work");
        std::fs::write(work.join("1-x.pdf"), b"x").expect("write");
        spool.remove_path(&work).expect("removed");
        assert!(!work.exists());
        spool.remove_path(&work).expect("missing is fine");
    }

    #[test]
    fn an_unwritable_folder_stops_startup() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let file = tmp.path().join("not-a-dir");
        std::fs::write(&file, b"x").expect("write");
        let err = Spool::open(&file).expect_err("a file is not a data folder");
        assert!(err.to_string().contains("not-a-dir"), "{err}");
    }

    #[test]
    fn an_attempt_removes_only_what_earlier_attempts_of_its_stage_left() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let spool = Spool::open(&tmp.path().join("data")).expect("open");
        let t = Ticket(12);
        let work = spool.work_dir(t).expect("work");
        let results = spool.result_dir(t).expect("results");
        let files = [
            spool.downloads().join("12-3-abc.part"),
            spool.downloads().join("12-old.part"),
            spool.downloads().join("12-5-def.source"),
            spool.downloads().join("120-1-other.part"),
            work.join("3-optimize-x.pdf"),
            work.join("5-optimize-y.pdf"),
            results.join("4-0123.pdf"),
            results.join("7-4567.pdf"),
        ];
        for f in &files {
            std::fs::write(f, b"x").expect("write");
        }
        // The attempt with token 5: tokens 3 and 4 and the unnumbered file go; its own (5), a
        // later attempt's (7) and another job's (ticket 120) stay.
        assert_eq!(spool.remove_earlier_downloads(t, 5).expect("remove"), 2);
        assert_eq!(spool.remove_earlier_output(t, 5).expect("remove"), 2);
        let left: Vec<bool> = files.iter().map(|f| f.exists()).collect();
        assert_eq!(left, [false, false, true, true, false, true, false, true]);
        assert!(work.is_dir() && results.is_dir(), "the folders stay");
    }

    #[test]
    fn an_earlier_attempts_scratch_folder_goes_with_what_it_holds() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let spool = Spool::open(&tmp.path().join("data")).expect("open");
        let work = spool.work_dir(Ticket(3)).expect("work");
        let (earlier, own) = (work.join("2-scratch-a"), work.join("6-scratch-b"));
        for dir in [&earlier, &own] {
            std::fs::create_dir_all(dir.join("nested")).expect("mkdir");
            std::fs::write(dir.join("nested/tmp"), b"x").expect("write");
        }
        assert_eq!(spool.remove_earlier_output(Ticket(3), 6).expect("remove"), 1);
        assert!(!earlier.exists() && own.join("nested/tmp").exists());
    }
}
