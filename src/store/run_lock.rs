//! One `docket run` per SQLite database.
//!
//! SQLite is the single-machine backend: two bots on one file would both poll getUpdates (and
//! knock each other out with 409s), both send, and each keep its own byte budget. So `docket run`
//! takes an exclusive lock on a file beside the database (`<database>.run-lock`) and holds it for
//! the life of the process; a second `docket run` is refused, naming the first. The kernel drops
//! the lock when the holder dies however it dies (a SIGKILL included), so a crash never leaves a
//! stale lock behind. The admin commands (`status`, `jobs`, `janitor`) take no lock and work
//! beside the running bot.
//!
//! PostgreSQL needs no such lock: several hosts sharing one database is what it is for.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read as _, Seek as _, SeekFrom, Write as _};
use std::path::{Path, PathBuf};

use super::{DatabaseUrl, StoreError, StoreResult};
use crate::domain::Timestamp;

/// The lock of the one `docket run` on a SQLite database, held until dropped.
#[derive(Debug)]
pub struct RunLock {
    /// Kept open: closing it releases the lock.
    _file: File,
    path: PathBuf,
}

impl RunLock {
    /// Takes the lock for `url`'s database, or fails with [`StoreError::InUse`] naming the
    /// process that holds it. `None` for PostgreSQL, which takes no lock.
    pub fn acquire(url: &DatabaseUrl, now: Timestamp) -> StoreResult<Option<Self>> {
        match url {
            DatabaseUrl::Sqlite(database) => Self::acquire_file(&lock_path(database), url, now).map(Some),
            DatabaseUrl::Postgres(_) => Ok(None),
        }
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn acquire_file(path: &Path, url: &DatabaseUrl, now: Timestamp) -> StoreResult<Self> {
        let io = |source: std::io::Error| StoreError::Lock { path: path.display().to_string(), source };
        if let Some(folder) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(folder)
                .map_err(|source| StoreError::Folder { path: folder.display().to_string(), source })?;
        }
        let mut file = OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path).map_err(io)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                let holder = holder.trim();
                let holder = if holder.is_empty() { "another process".to_owned() } else { holder.to_owned() };
                return Err(StoreError::InUse { url: url.redacted(), holder, path: path.display().to_string() });
            }
            Err(TryLockError::Error(e)) => return Err(io(e)),
        }
        // Who holds it, for the message a second `docket run` gives.
        file.set_len(0).map_err(io)?;
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        let holder = format!("docket run, pid {}, since {}", std::process::id(), now.datetime_utc());
        file.write_all(holder.as_bytes()).and_then(|()| file.flush()).map_err(io)?;
        Ok(Self { _file: file, path: path.to_owned() })
    }
}

/// `<database>.run-lock`, beside the database file.
fn lock_path(database: &Path) -> PathBuf {
    let mut name = database.file_name().map(ToOwned::to_owned).unwrap_or_else(|| "docket.db".into());
    name.push(".run-lock");
    database.with_file_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_on_the_same_database_is_refused_naming_the_first() {
        let dir = tempfile::tempdir().expect("tempdir");
        let url = DatabaseUrl::Sqlite(dir.path().join("data/docket.db"));
        let at = Timestamp::from_millis(1_800_000_000_000);
        let first = RunLock::acquire(&url, at).expect("free").expect("SQLite takes a lock");
        assert_eq!(first.path(), dir.path().join("data/docket.db.run-lock"));
        match RunLock::acquire(&url, at) {
            Err(StoreError::InUse { holder, .. }) => {
                assert!(holder.contains(&format!("pid {}", std::process::id())), "{holder}");
            }
            other => panic!("a second lock must be refused, got {other:?}"),
        }
        drop(first);
        RunLock::acquire(&url, at).expect("free again once the first is dropped").expect("a lock");
    }

    #[test]
    fn postgres_takes_no_lock() {
        let url = DatabaseUrl::Postgres("postgres://127.0.0.1/test".into());
        assert!(RunLock::acquire(&url, Timestamp::from_millis(0)).expect("no lock").is_none());
    }
}
