//! A small file system of the test's own (a tmpfs it mounts), for what a full disk does. Mounting
//! needs root: where it cannot, [`Tmpfs::mount`] says why and the test skips.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use tempfile::TempDir;

/// A tmpfs mounted over a temporary folder, unmounted when dropped.
pub struct Tmpfs {
    dir: TempDir,
}

impl Tmpfs {
    /// A tmpfs of `size` (`mount`'s spelling: `16m`); `None`, with a line on stderr, where this
    /// machine does not let the test mount one.
    pub fn mount(size: &str) -> Option<Self> {
        let dir = tempfile::tempdir().expect("a temp dir");
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .output();
        match mounted {
            Ok(out) if out.status.success() => Some(Self { dir }),
            Ok(out) => {
                eprintln!("skipped: cannot mount a tmpfs here: {}", String::from_utf8_lossy(&out.stderr).trim());
                None
            }
            Err(e) => {
                eprintln!("skipped: cannot run mount: {e}");
                None
            }
        }
    }

    /// Where it is mounted.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Bytes free on it now.
    pub fn free(&self) -> u64 {
        fs4::available_space(self.path()).expect("statvfs of the tmpfs")
    }

    /// Fills it with a ballast file until about `free` bytes are left (a tmpfs counts written
    /// pages, so the bytes are really written), and returns the ballast's path.
    pub fn fill_leaving(&self, free: u64) -> PathBuf {
        let path = self.path().join("ballast");
        let mut file = std::fs::OpenOptions::new().create(true).append(true).open(&path).expect("ballast opens");
        let chunk = vec![0xA5_u8; 64 * 1024];
        while self.free() > free {
            let want = usize::try_from(self.free() - free).unwrap_or(usize::MAX).min(chunk.len());
            if file.write_all(&chunk[..want]).is_err() {
                break;
            }
            file.flush().expect("ballast flushes");
        }
        path
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        // Lazily: a test that failed may leave a file open on it.
        let _ = Command::new("umount").arg("-l").arg(self.dir.path()).status();
    }
}
