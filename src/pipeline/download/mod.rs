//! The download stage: getFile right before streaming, the body to a `.part` file while hashing,
//! size checks, rename. The `.part` file removes itself if the attempt ends early.
//!
//! The source is not `fsync`ed: it is a copy that can always be fetched again, and the processing
//! stage checks its size and sha256 in full before every use (`process::verify_source`), so bytes a
//! power cut takes back are found there and downloaded again. A sync would make every download
//! wait for the disk to protect against a rare event that the check already covers; results,
//! which are not copies of anything, are synced (`operations::run_contained`).

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt as _;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use futures_util::StreamExt;
use sha2::{Digest, Sha256};
use tokio::io::AsyncWriteExt as _;

mod album;

pub use album::album_digest;
use album::fetch_album;

use super::{PipelineDeps, StageError};
use crate::domain::{FailureReason, Job, Operation};
use crate::spool::Spool;
use crate::telegram::TelegramError;
use crate::telegram::client::ByteStream;

/// A verified source on disk.
#[derive(Debug)]
pub struct Fetched {
    /// Where it is.
    pub path: String,
    /// Bytes received.
    pub size: u64,
    /// Hex sha256 of those bytes.
    pub sha256: String,
}

/// What a running download has received so far, for the person's status message.
#[derive(Debug, Default)]
pub struct Received {
    /// Bytes written (of every file, for a ticket of several).
    pub bytes: AtomicU64,
    /// For a ticket of several files, the one being downloaded (from 1); 0 for a ticket of one.
    file: AtomicU32,
    /// For a ticket of several files, how many it has.
    files: AtomicU32,
}

impl Received {
    /// The file being downloaded and how many the ticket has, for a ticket of several.
    pub fn part(&self) -> Option<(u32, u32)> {
        let file = self.file.load(Ordering::Relaxed);
        (file > 0).then(|| (file, self.files.load(Ordering::Relaxed)))
    }

    fn start_file(&self, file: u32, files: u32) {
        self.files.store(files, Ordering::Relaxed);
        self.file.store(file, Ordering::Relaxed);
    }
}

/// Downloads the job's file (or, for an album's ticket, every file of it) and verifies it.
/// `received` follows what was written so far (for the person's status message).
pub async fn fetch(deps: &PipelineDeps, job: &Job, received: &Arc<Received>) -> Result<Fetched, StageError> {
    // The file must fit the mode's download limit and, with its intermediate output, the budget.
    let limit = deps.settings.get().download_limit.min(deps.budget.largest_source());
    // An attempt that died (a crash, a lost lease) may have left a .part or an unrecorded source.
    let token = job.lease.as_ref().map_or(0, |l| l.token);
    match deps.spool.remove_earlier_downloads(job.ticket, token) {
        Ok(0) => {}
        Ok(n) => tracing::info!(files = n, "removed files of an earlier, unfinished attempt"),
        Err(e) => return Err(StageError::io("cleaning up an earlier attempt", e)),
    }
    if job.submission.operation == Operation::Merge {
        return fetch_album(deps, job, limit, token, received).await;
    }
    let declared = job.submission.declared_size.and_then(|s| u64::try_from(s).ok());
    let part = tempfile::Builder::new()
        .prefix(&Spool::download_attempt_prefix(job.ticket, token))
        .suffix(".part")
        .tempfile_in(deps.spool.downloads())
        .map_err(|e| StageError::io("creating the .part file", e))?;
    let (std_file, part_path) = part.into_parts();
    let wanted = Wanted { file_id: &job.submission.file_id, declared, limit };
    // Known at last for a file Telegram did not size: reserve what it really needs.
    let (size, sha256) =
        fetch_into(deps, wanted, std_file, received, |size| deps.budget.resize(job.ticket, size)).await?;
    let source = deps.spool.source_path_for(&part_path);
    part_path.persist(&source).map_err(|e| StageError::io("renaming the download", e.error))?;
    Ok(Fetched { path: source.to_string_lossy().into_owned(), size, sha256 })
}

/// One file to download: its file_id, the size Telegram declared, and the most bytes it may have.
#[derive(Debug, Clone, Copy)]
struct Wanted<'a> {
    file_id: &'a str,
    declared: Option<u64>,
    limit: u64,
}

/// Downloads `wanted` into `file` (a `.part`), hashing while it goes; its size and hex sha256.
/// `sized` learns the size getFile announced, when it did.
///
/// One sequence, kept whole because its order is the download's contract: the declared size
/// checked, getFile called right before the transfer (its link is never stored), the bytes
/// streamed and hashed, and both announced sizes checked against what came.
async fn fetch_into(
    deps: &PipelineDeps,
    wanted: Wanted<'_>,
    file: File,
    received: &Arc<Received>,
    sized: impl FnOnce(u64),
) -> Result<(u64, String), StageError> {
    let Wanted { file_id, declared, limit } = wanted;
    if let Some(size) = declared.filter(|s| *s > limit) {
        return Err(StageError::fail(FailureReason::TooBig { size, limit }, "declared size over the download limit"));
    }
    // A fresh getFile for every attempt: links expire, and are never stored.
    let remote = deps.telegram.get_file(file_id).await.map_err(|e| get_file_error(e, declared.unwrap_or(0), limit))?;
    if let Some(size) = remote.size.filter(|s| *s > limit) {
        return Err(StageError::fail(FailureReason::TooBig { size, limit }, "getFile size over the download limit"));
    }
    if let Some(size) = remote.size {
        sized(size);
    }
    // Telegram's two announcements must agree with the bytes; stop soon after the smaller.
    let expected = match (remote.size, declared) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    let bound = SizeBound { limit, expected };
    let (total, sha256) = match deps.telegram.local_source(&remote) {
        // A local Bot API server's own disk: one blocking copy loop, no async hops per chunk.
        Some(source) => {
            let received = Arc::clone(received);
            tokio::task::spawn_blocking(move || copy_local(&source, file, bound, &received.bytes))
                .await
                .map_err(|e| StageError::retry(format!("the local copy panicked: {e}")))??
        }
        None => {
            let body = deps.telegram.open_file(&remote).await.map_err(transfer_error)?;
            stream_to_file(body, file, bound, &received.bytes).await?
        }
    };
    for (what, expected) in [("declared", declared), ("getFile", remote.size)] {
        if let Some(expected) = expected.filter(|e| *e != total) {
            return Err(StageError::fail(
                FailureReason::SizeMismatch { declared: expected, real: total },
                format!("{what} size {expected} but received {total} bytes"),
            ));
        }
    }
    Ok((total, sha256))
}

/// How far past the size Telegram announced a download may run before it is stopped. The final
/// check still wants the exact size; this bound only keeps a file that is longer than announced
/// from being read to the mode's limit (2000 MB with a local Bot API server).
const SIZE_TOLERANCE: u64 = 64 * 1024;

/// Where a download stops: past the mode's limit, or well past the size Telegram announced.
#[derive(Debug, Clone, Copy)]
struct SizeBound {
    /// The largest file the mode and the budget allow.
    limit: u64,
    /// The size getFile or the update announced, when one did.
    expected: Option<u64>,
}

impl SizeBound {
    /// The most bytes to accept.
    fn stop_after(self) -> u64 {
        self.expected.map_or(self.limit, |e| e.saturating_add(SIZE_TOLERANCE).min(self.limit))
    }

    /// The failure for a file found to have at least `seen` bytes, more than [`Self::stop_after`].
    fn exceeded(self, seen: u64) -> StageError {
        match self.expected {
            Some(declared) if seen <= self.limit => StageError::fail(
                FailureReason::SizeMismatch { declared, real: seen },
                format!("received more than the announced {declared} bytes; stopped at {seen}"),
            ),
            _ => StageError::fail(FailureReason::TooBig { size: seen, limit: self.limit }, "download passed the limit"),
        }
    }
}

/// Streams `body` into `file` (the `.part`), hashing on a separate thread, stopping as soon as
/// more than `bound` allows arrives. Returns the size and the hex sha256.
async fn stream_to_file(
    mut body: ByteStream,
    file: std::fs::File,
    bound: SizeBound,
    received: &AtomicU64,
) -> Result<(u64, String), StageError> {
    let mut file = tokio::fs::File::from_std(file);
    // SHA-256 runs on its own thread, fed chunk by chunk, so hashing overlaps the transfer and
    // the write instead of adding to them.
    let (to_hasher, mut chunks) = tokio::sync::mpsc::channel::<bytes::Bytes>(16);
    let hashing = tokio::task::spawn_blocking(move || {
        let mut hasher = Sha256::new();
        while let Some(chunk) = chunks.blocking_recv() {
            hasher.update(&chunk);
        }
        hex::encode(hasher.finalize())
    });
    let mut total: u64 = 0;
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(transfer_error)?;
        total += chunk.len() as u64;
        if total > bound.stop_after() {
            // Stop reading at once: a lying size must not fill the disk.
            return Err(bound.exceeded(total));
        }
        // Cheap: `Bytes` clones share the buffer. A closed channel means the hasher died, which
        // the join below reports.
        let _ = to_hasher.send(chunk.clone()).await;
        file.write_all(&chunk).await.map_err(|e| StageError::io("writing the download", e))?;
        // Added, not set: an album's files count up one after the other.
        received.fetch_add(chunk.len() as u64, Ordering::Relaxed);
    }
    drop(to_hasher);
    let sha256 = hashing.await.map_err(|e| StageError::retry(format!("hashing the download failed: {e}")))?;
    // Hands the last buffered bytes to the kernel (a write error, a full disk, shows up here).
    file.flush().await.map_err(|e| StageError::io("writing the download", e))?;
    Ok((total, sha256))
}

/// Copies a local Bot API server's file into `file` (the `.part`), stopping as soon as more than
/// `bound` allows is copied. Returns the size and the hex sha256.
///
/// The copy runs inside the kernel (`copy_file_range`, as `cp` does: no trip through user memory),
/// in chunks; after each chunk, a second thread hashes it by reading it back from the source,
/// whose pages the copy has just brought into the page cache, so hashing overlaps the copy of the
/// next chunk, on two cores. Where the kernel cannot copy between
/// these two files (`EXDEV`, `ENOSYS`, `EINVAL`, `EOPNOTSUPP`: other filesystems, old kernels,
/// other systems), the rest is copied with plain reads and writes, with the same result.
fn copy_local(
    source: &Path,
    file: std::fs::File,
    bound: SizeBound,
    received: &AtomicU64,
) -> Result<(u64, String), StageError> {
    copy_local_with(source, file, bound, kernel_copy, received)
}

/// What a local copy copies at a time (measured here: 4 and 16 MiB do the same).
const CHUNK: u64 = 8 * 1024 * 1024;

/// A copy of `len` bytes at `offset` from one file to the same offset in another, which may copy
/// fewer bytes (as `copy_file_range`; 0 at the end of the source) and returns how many.
type CopyRange = fn(&File, &File, u64, usize) -> io::Result<usize>;

/// [`copy_local`] with the in-kernel copy given, so tests can force the fallback.
fn copy_local_with(
    source: &Path,
    file: File,
    bound: SizeBound,
    copy_range: CopyRange,
    received: &AtomicU64,
) -> Result<(u64, String), StageError> {
    let limit = bound.stop_after();
    let src = File::open(source)
        .map_err(|e| StageError::retry(format!("cannot open the local Bot API server's copy: {}", e.kind())))?;
    read_sequentially(&src);
    let for_hasher = src.try_clone().map_err(read_error)?;
    // Byte ranges already copied; the hasher reads them back from the source's page cache.
    let (to_hasher, copied_ranges) = std::sync::mpsc::sync_channel::<(u64, u64)>(2);
    let hasher = spawn_range_hasher(for_hasher, copied_ranges);
    let mut in_kernel = true;
    let mut total: u64 = 0;
    let copied = (|| {
        loop {
            // Never more than one byte past the limit.
            let want = CHUNK.min(limit.saturating_add(1) - total);
            let mut done = 0;
            if in_kernel {
                let (copied, supported) = copy_chunk(copy_range, &src, &file, total, want)?;
                done = copied;
                in_kernel = supported;
            }
            if !in_kernel && done < want {
                done += copy_through_memory(&src, &file, total + done, want - done)?;
            }
            if done == 0 {
                return Ok(());
            }
            let offset = total;
            total += done;
            received.fetch_add(done, Ordering::Relaxed);
            if total > limit {
                let size = src.metadata().map_or(total, |m| m.len().max(total));
                return Err(bound.exceeded(size));
            }
            if to_hasher.send((offset, done)).is_err() {
                return Err(StageError::retry("the hashing thread stopped"));
            }
        }
    })();
    drop(to_hasher);
    let sha256 = hasher.join().map_err(|_| StageError::retry("the hashing thread panicked"))?;
    copied?;
    let sha256 = sha256.map_err(read_error)?;
    Ok((total, sha256))
}

/// A thread that hashes `source` by the byte ranges `copied_ranges` names, in order, reading
/// them back (from the page cache, just copied); its sha256 in hex once the ranges end.
fn spawn_range_hasher(
    source: File,
    copied_ranges: std::sync::mpsc::Receiver<(u64, u64)>,
) -> std::thread::JoinHandle<io::Result<String>> {
    std::thread::spawn(move || -> io::Result<String> {
        let mut hasher = Sha256::new();
        let mut buf = vec![0; 1024 * 1024];
        for (offset, len) in copied_ranges {
            let mut done = 0;
            while done < len {
                let want = buf.len().min(usize::try_from(len - done).unwrap_or(usize::MAX));
                let n = read_full_at(&source, &mut buf[..want], offset + done)?;
                if n < want {
                    // The source shrank after its copy.
                    return Err(io::ErrorKind::UnexpectedEof.into());
                }
                hasher.update(&buf[..n]);
                done += n as u64;
            }
        }
        Ok(hex::encode(hasher.finalize()))
    })
}

fn read_error(e: io::Error) -> StageError {
    StageError::retry(format!("reading the local Bot API server's copy: {}", e.kind()))
}

/// Copies up to `len` bytes at `offset` with `copy_range`, until the end of the source. Returns
/// the bytes copied, and `false` when the kernel said it cannot copy between these files.
fn copy_chunk(copy_range: CopyRange, src: &File, dst: &File, offset: u64, len: u64) -> Result<(u64, bool), StageError> {
    let mut done = 0;
    while done < len {
        match copy_range(src, dst, offset + done, usize::try_from(len - done).unwrap_or(usize::MAX)) {
            Ok(0) => break,
            Ok(n) => done += n as u64,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if cannot_copy_in_kernel(&e) => return Ok((done, false)),
            Err(e) => return Err(StageError::io("writing the download", e)),
        }
    }
    Ok((done, true))
}

/// Copies up to `len` bytes at `offset` with reads and writes, until the end of the source;
/// returns the bytes copied.
fn copy_through_memory(src: &File, dst: &File, offset: u64, len: u64) -> Result<u64, StageError> {
    let mut buf = vec![0; usize::try_from(len.min(1024 * 1024)).unwrap_or(1024 * 1024)];
    let mut done = 0;
    while done < len {
        let want = buf.len().min(usize::try_from(len - done).unwrap_or(usize::MAX));
        let n = read_full_at(src, &mut buf[..want], offset + done).map_err(read_error)?;
        dst.write_all_at(&buf[..n], offset + done).map_err(|e| StageError::io("writing the download", e))?;
        done += n as u64;
        if n < want {
            break;
        }
    }
    Ok(done)
}

/// `copy_file_range` errors that mean "not between these files", not "failed".
fn cannot_copy_in_kernel(e: &io::Error) -> bool {
    #[cfg(target_os = "linux")]
    {
        use rustix::io::Errno;
        let errno = Errno::from_io_error(e);
        [Errno::XDEV, Errno::NOSYS, Errno::INVAL, Errno::OPNOTSUPP].into_iter().any(|c| errno == Some(c))
    }
    #[cfg(not(target_os = "linux"))]
    {
        e.kind() == io::ErrorKind::Unsupported
    }
}

/// `copy_file_range` from `offset` to the same offset, file positions untouched.
#[cfg(target_os = "linux")]
fn kernel_copy(src: &File, dst: &File, offset: u64, len: usize) -> io::Result<usize> {
    let (mut from, mut to) = (offset, offset);
    Ok(rustix::fs::copy_file_range(src, Some(&mut from), dst, Some(&mut to), len)?)
}

#[cfg(not(target_os = "linux"))]
fn kernel_copy(_: &File, _: &File, _: u64, _: usize) -> io::Result<usize> {
    Err(io::ErrorKind::Unsupported.into())
}

/// Asks for aggressive readahead, as `cp` does.
fn read_sequentially(src: &File) {
    #[cfg(target_os = "linux")]
    // Only advice: a refusal changes nothing but the speed.
    let _ = rustix::fs::fadvise(src, 0, None, rustix::fs::Advice::Sequential);
    #[cfg(not(target_os = "linux"))]
    let _ = src;
}

/// Reads at `offset` until `buf` is full or the file ends; returns the bytes read.
fn read_full_at(src: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match src.read_at(&mut buf[filled..], offset + filled as u64) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

fn get_file_error(e: TelegramError, declared: u64, limit: u64) -> StageError {
    match e {
        TelegramError::RetryAfter(d) => StageError::FloodWait { after: d, detail: "getFile: flood control".into() },
        TelegramError::Permanent(text) if text.contains("file is too big") => {
            StageError::fail(FailureReason::TooBig { size: declared.max(limit + 1), limit }, format!("getFile: {text}"))
        }
        TelegramError::Permanent(text) | TelegramError::ChatGone(text) => {
            StageError::fail(FailureReason::FileUnavailable, format!("getFile: {text}"))
        }
        other => StageError::retry(format!("getFile: {other}")),
    }
}

fn transfer_error(e: TelegramError) -> StageError {
    match e {
        TelegramError::RetryAfter(d) => StageError::FloodWait { after: d, detail: "download: flood control".into() },
        other => StageError::retry(format!("download: {other}")),
    }
}

#[cfg(test)]
#[cfg(target_os = "linux")]
mod tests {
    use rustix::io::Errno;

    use super::*;

    /// A file of `len` pseudo-random bytes in `dir`.
    fn source(dir: &Path, len: usize) -> (std::path::PathBuf, Vec<u8>) {
        let mut state: u32 = 0x9E37_79B9;
        let bytes: Vec<u8> = (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                state.to_le_bytes()[0]
            })
            .collect();
        let path = dir.join("source.bin");
        std::fs::write(&path, &bytes).unwrap();
        (path, bytes)
    }

    /// Copies `src` into a new file of `dir` with `copy`; returns the outcome and what was written.
    fn copy_into(src: &Path, dir: &Path, limit: u64, copy: CopyRange) -> (Result<(u64, String), StageError>, Vec<u8>) {
        let out = dir.join("copy.part");
        let _ = std::fs::remove_file(&out);
        let file = File::options().read(true).write(true).create_new(true).open(&out).unwrap();
        let result = copy_local_with(src, file, SizeBound { limit, expected: None }, copy, &AtomicU64::new(0));
        (result, std::fs::read(&out).unwrap())
    }

    #[test]
    fn the_fallbacks_give_the_bytes_and_hash_of_the_kernel_copy() {
        let dir = tempfile::tempdir().unwrap();
        // Several chunks and a partial last one.
        let (src, bytes) = source(dir.path(), 2 * CHUNK as usize + 12_345);
        let expected = (bytes.len() as u64, hex::encode(Sha256::digest(&bytes)));
        let copies: [(&str, CopyRange); 3] = [
            ("copy_file_range", kernel_copy),
            ("no copy_file_range between these files", |_, _, _, _| Err(Errno::XDEV.into())),
            // Short copies, then refused in the middle of a chunk: the rest goes through write.
            ("copy_file_range refused halfway", |src, dst, offset, len| {
                if offset >= 300_000 {
                    Err(Errno::NOSYS.into())
                } else {
                    kernel_copy(src, dst, offset, len.min(100_000))
                }
            }),
        ];
        for (what, copy) in copies {
            let (result, written) = copy_into(&src, dir.path(), u64::MAX, copy);
            assert_eq!(result.unwrap(), expected, "{what}");
            assert!(written == bytes, "{what}: the copy differs from the source");
        }
    }

    #[test]
    fn an_empty_file_is_copied() {
        let dir = tempfile::tempdir().unwrap();
        let (src, _) = source(dir.path(), 0);
        let (result, written) = copy_into(&src, dir.path(), 10, kernel_copy);
        assert_eq!(result.unwrap(), (0, hex::encode(Sha256::digest(b""))));
        assert!(written.is_empty());
    }

    #[test]
    fn a_file_over_the_limit_stops_the_copy() {
        let dir = tempfile::tempdir().unwrap();
        let (src, bytes) = source(dir.path(), CHUNK as usize + 1000);
        let limit = CHUNK + 10;
        let (result, written) = copy_into(&src, dir.path(), limit, kernel_copy);
        match result {
            Err(StageError::Fail { reason: FailureReason::TooBig { size, limit: l }, .. }) => {
                assert_eq!((size, l), (bytes.len() as u64, limit));
            }
            other => panic!("{other:?}"),
        }
        // Never more than one byte past the limit.
        assert_eq!(written.len() as u64, limit + 1);
    }

    #[test]
    fn other_copy_errors_are_reported_as_disk_errors() {
        let dir = tempfile::tempdir().unwrap();
        let (src, _) = source(dir.path(), 1000);
        let (result, _) = copy_into(&src, dir.path(), u64::MAX, |_, _, _, _| Err(Errno::IO.into()));
        match result {
            Err(StageError::Retry { detail, .. }) => assert!(detail.starts_with("writing the download: "), "{detail}"),
            other => panic!("{other:?}"),
        }
        // A full disk is not the document's doing: its attempt is given back.
        let (result, _) = copy_into(&src, dir.path(), u64::MAX, |_, _, _, _| Err(Errno::NOSPC.into()));
        match result {
            Err(StageError::Unavailable { detail, .. }) => {
                assert!(detail.starts_with("writing the download: "), "{detail}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_file_longer_than_announced_stops_soon_after_the_announced_size() {
        let dir = tempfile::tempdir().unwrap();
        let (src, _) = source(dir.path(), 4 * CHUNK as usize);
        let out = dir.path().join("copy.part");
        let file = File::options().read(true).write(true).create_new(true).open(&out).unwrap();
        let bound = SizeBound { limit: u64::MAX, expected: Some(1000) };
        match copy_local_with(&src, file, bound, kernel_copy, &AtomicU64::new(0)) {
            Err(StageError::Fail { reason: FailureReason::SizeMismatch { declared: 1000, real }, .. }) => {
                assert_eq!(real, 4 * CHUNK, "reports the real size");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(std::fs::metadata(&out).unwrap().len(), 1000 + SIZE_TOLERANCE + 1, "stopped right after the bound");
    }
}
