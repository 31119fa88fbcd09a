//! The parent's side: start the child, wait for it within the time limit, kill it and all it
//! started when the time is up or nobody waits any more, and say what became of it.

use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use super::{Failure, Report, Request};

/// How a contained run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The child reported (a result or a refusal).
    Reported(Report),
    /// The child reached its address-space limit.
    OutOfMemory {
        /// The limit, in bytes.
        limit: u64,
    },
    /// The child, or a program it started, was stopped for writing a file larger than
    /// [`super::Limits::max_file`] (`SIGXFSZ`).
    FileTooBig {
        /// The limit, in bytes.
        limit: u64,
    },
    /// The run reached [`super::Limits::disk`] bytes on disk, and was killed.
    WroteTooMuch {
        /// The limit, in bytes.
        limit: u64,
    },
    /// The child used up its time (wall clock, or CPU).
    TimedOut {
        /// The wall-clock limit.
        limit: Duration,
    },
    /// Something outside docket killed the child (the system's OOM killer, an admin): not the
    /// document's fault as far as anyone can tell.
    KilledFromOutside {
        /// The exit status, for admins.
        detail: String,
    },
    /// The child died without a report: a crash, a panic outside the guarded work.
    Crashed {
        /// The exit status and the end of its stderr, for admins.
        detail: String,
    },
}

/// How much of a dead child's stderr goes into a detail.
const STDERR_TAIL_BYTES: usize = 2000;

/// How much of the child's stdout and of its stderr the parent keeps: the end of each, since
/// the report is the child's last line and a dying program's last words are what explain it. The
/// rest is read and dropped, so a child that writes gigabytes costs the service nothing.
const KEPT_OUTPUT_BYTES: usize = 64 * 1024;

/// How often the parent measures what a run has on disk against [`super::Limits::disk`].
const DISK_CHECK_EVERY: Duration = Duration::from_millis(250);

/// The filter the child logs with: errors only. lopdf warns once per bad entry of a damaged
/// file, which is the document talking, not docket; what the parent needs is the report.
const CHILD_LOG_FILTER: &str = "error";

/// Runs `request` in a child: `program` (docket's own binary) with [`Request::child_args`], in a
/// new process group, stdin closed (after the request's password, when it has one), with an
/// environment of its own that holds none of the service's (no token, no secrets, no
/// `RUST_LOG`): `PATH`, a UTF-8 locale, and its scratch folder as `TMPDIR` and `HOME`.
///
/// Returns when the child has ended, or when `request.limits.timeout` has passed, or when the
/// run has more than `request.limits.disk` on disk, after killing it. Only the last
/// 64 KiB of its stdout and stderr are kept. Dropping the future (the lease was
/// lost, the job was cancelled) kills the child's whole process group at once. A result the
/// child reports is synced to disk before this returns; one it reports without having written it
/// is [`Outcome::Crashed`]. Errors only when the child cannot be started or its result cannot be
/// synced.
pub async fn run_contained(program: &Path, request: &Request) -> std::io::Result<Outcome> {
    let mut command = child_command(program, request);
    let mut child = command.spawn()?;
    let group = GroupKiller::of(&child);
    if let (Some(password), Some(mut stdin)) = (&request.password, child.stdin.take()) {
        use tokio::io::AsyncWriteExt;
        // A child that dies before reading it closes the pipe: its outcome says why, not this.
        let written = stdin.write_all(password.expose().as_bytes()).await;
        if let Err(error) = written {
            tracing::debug!(%error, "the child did not take its password");
        }
        drop(stdin);
    }
    let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
    let outcome = {
        let ended = async {
            let status = child.wait().await;
            // Whatever happened, nothing the child started outlives it, nor holds its pipes open.
            group.kill();
            status
        };
        let run = tokio::time::timeout(request.limits.timeout, async {
            tokio::join!(ended, keep_tail(stdout), keep_tail(stderr))
        });
        tokio::select! {
            waited = run => match waited {
                Err(_elapsed) => Outcome::TimedOut { limit: request.limits.timeout },
                Ok((status, stdout, stderr)) => {
                    if stderr.dropped > 0 {
                        tracing::debug!(
                            operation = request.work.name(),
                            dropped_bytes = stderr.dropped,
                            "the operation's process wrote more to stderr than is kept"
                        );
                    }
                    judge(status?, &stdout.kept, &stderr.kept, request)
                }
            },
            limit = watch_disk(request) => Outcome::WroteTooMuch { limit },
        }
    };
    // Timed out, or over its disk limit: the run is killed here, with all it started.
    drop(group);
    if let Outcome::Reported(Report::Done { .. }) = &outcome
        && let Some(crashed) = sync_result(&request.output).await?
    {
        return Ok(crashed);
    }
    Ok(outcome)
}

/// The command that starts the child: its arguments, pipes and environment, as
/// [`run_contained`] says.
fn child_command(program: &Path, request: &Request) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(program);
    command
        .args(request.child_args())
        .stdin(if request.password.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env_clear()
        // glibc gives each thread an arena that reserves 64 MiB of address space: under
        // RLIMIT_AS that is memory the document cannot use. Two arenas are enough for lopdf.
        .env("MALLOC_ARENA_MAX", "2")
        .env("RUST_LOG", CHILD_LOG_FILTER)
        // The run's share of the cores, for the thread pools of the programs a tool starts.
        .env("RAYON_NUM_THREADS", request.limits.threads.to_string())
        .env("OMP_THREAD_LIMIT", request.limits.threads.to_string())
        .env("LANG", "C.UTF-8")
        // Its own process group, so that the child and everything it starts die together.
        .process_group(0)
        .kill_on_drop(true);
    if let Some(path) = std::env::var_os("PATH") {
        command.env("PATH", path);
    }
    if let Some(scratch) = &request.scratch {
        command.env("TMPDIR", scratch).env("HOME", scratch);
    }
    command
}

/// Makes the result the child reported at `output` durable; `Some` outcome ([`Outcome::Crashed`])
/// when the child reported a result it did not write.
async fn sync_result(output: &Path) -> std::io::Result<Option<Outcome>> {
    // The child writes its result and leaves making it durable to here, the one place every
    // result passes, a built-in operation's and an external tool's alike: once the run is
    // `ready` its source is deleted. One sync, off the operation's own clock.
    let path = output.to_path_buf();
    let synced = tokio::task::spawn_blocking(move || std::fs::File::open(path)?.sync_all())
        .await
        .map_err(std::io::Error::other)?;
    match synced {
        Ok(()) => Ok(None),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            Ok(Some(Outcome::Crashed { detail: "the child reported a result it did not write".into() }))
        }
        Err(error) => Err(error),
    }
}

/// The end of what a child wrote to one pipe, and how much before it was dropped.
#[derive(Debug, Default)]
struct Tail {
    kept: Vec<u8>,
    dropped: u64,
}

/// Reads `pipe` to its end, keeping its last [`KEPT_OUTPUT_BYTES`]. A read error ends the
/// reading: what was kept still tells what it can.
async fn keep_tail(pipe: Option<impl tokio::io::AsyncRead + Unpin>) -> Tail {
    use tokio::io::AsyncReadExt;
    let mut tail = Tail::default();
    let Some(mut pipe) = pipe else { return tail };
    let mut buffer = vec![0u8; 16 * 1024];
    loop {
        match pipe.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                tail.kept.extend_from_slice(&buffer[..n]);
                // Trimmed in steps of at least the kept size, so each byte is moved about once.
                if tail.kept.len() >= 2 * KEPT_OUTPUT_BYTES {
                    let excess = tail.kept.len() - KEPT_OUTPUT_BYTES;
                    tail.kept.drain(..excess);
                    tail.dropped += excess as u64;
                }
            }
        }
    }
    tail
}

/// Resolves, with the limit, once the run has `request.limits.disk` bytes on disk or more (its
/// output and its scratch folder); never while it stays below. Reaching the limit is enough: a
/// file the run writes cannot grow past it (`RLIMIT_FSIZE`), and a tool whose writer was stopped
/// there may go on without it.
async fn watch_disk(request: &Request) -> u64 {
    let limit = request.limits.disk;
    let (output, scratch) = (request.output.clone(), request.scratch.clone());
    loop {
        tokio::time::sleep(DISK_CHECK_EVERY).await;
        let (output, scratch) = (output.clone(), scratch.clone());
        let used = tokio::task::spawn_blocking(move || {
            let output = std::fs::symlink_metadata(&output).map_or(0, |m| m.len());
            output + scratch.as_deref().map_or(0, bytes_under)
        })
        .await
        .unwrap_or(0);
        if used >= limit {
            return limit;
        }
    }
}

/// The bytes of the files under `dir`, its folders included, not following links.
fn bytes_under(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .flatten()
        .map(|entry| match entry.file_type() {
            Ok(kind) if kind.is_dir() => bytes_under(&entry.path()),
            Ok(_) => entry.metadata().map_or(0, |m| m.len()),
            Err(_) => 0,
        })
        .sum()
}

/// What an ended child's status, stdout and stderr mean.
fn judge(status: ExitStatus, stdout: &[u8], stderr: &[u8], request: &Request) -> Outcome {
    use std::os::unix::process::ExitStatusExt;
    let stderr = String::from_utf8_lossy(stderr);
    let report =
        String::from_utf8_lossy(stdout).lines().rev().find_map(|line| serde_json::from_str::<Report>(line).ok());
    let out_of_memory = is_out_of_memory(&stderr);
    match report {
        // A tool that ran out of memory ends with an error of its own: the stderr says which.
        Some(Report::Failed { failure: Failure::ToolFailed, .. }) if out_of_memory => {
            Outcome::OutOfMemory { limit: request.limits.memory }
        }
        Some(report) => Outcome::Reported(report),
        None if out_of_memory => Outcome::OutOfMemory { limit: request.limits.memory },
        None => match status.signal() {
            Some(SIGXCPU) => Outcome::TimedOut { limit: request.limits.timeout },
            Some(SIGXFSZ) => Outcome::FileTooBig { limit: request.limits.max_file },
            Some(SIGKILL) => Outcome::KilledFromOutside { detail: format!("the child was killed ({status})") },
            _ => Outcome::Crashed { detail: format!("the child ended with {status}: {}", tail(&stderr)) },
        },
    }
}

const SIGKILL: i32 = 9;
const SIGXCPU: i32 = 24;
/// The signal a write past `RLIMIT_FSIZE` raises.
pub(super) const SIGXFSZ: i32 = 25;

/// Whether a child's stderr says an allocation failed: Rust's own message, C++'s, Python's and
/// C's as tools print them.
fn is_out_of_memory(stderr: &str) -> bool {
    ["memory allocation of", "std::bad_alloc", "MemoryError", "Cannot allocate memory", "out of memory"]
        .iter()
        .any(|sign| stderr.contains(sign))
}

fn tail(text: &str) -> String {
    let text = text.trim_end();
    let start = text.len().saturating_sub(STDERR_TAIL_BYTES);
    let start = (start..=text.len()).find(|&i| text.is_char_boundary(i)).unwrap_or(text.len());
    text[start..].to_owned()
}

/// Kills a child's process group when dropped.
struct GroupKiller {
    #[cfg(target_os = "linux")]
    group: Option<rustix::process::Pid>,
}

impl GroupKiller {
    fn of(child: &tokio::process::Child) -> Self {
        Self {
            // The group's id is the child's pid (`process_group(0)`).
            #[cfg(target_os = "linux")]
            group: child.id().and_then(|id| i32::try_from(id).ok()).and_then(rustix::process::Pid::from_raw),
        }
    }

    /// Kills every process left in the group.
    fn kill(&self) {
        // An empty group is already gone (ESRCH): nothing to do.
        #[cfg(target_os = "linux")]
        if let Some(group) = self.group {
            let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
        }
    }
}

impl Drop for GroupKiller {
    fn drop(&mut self) {
        self.kill();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operations::{Limits, Work};
    use std::os::unix::process::ExitStatusExt;

    fn request() -> Request {
        Request {
            work: Work::Builtin(crate::domain::Operation::Optimize),
            input: "in.pdf".into(),
            output: "out.pdf".into(),
            lang: "eng".into(),
            limits: Limits {
                memory: 1 << 30,
                timeout: Duration::from_secs(60),
                max_inflate: 1 << 20,
                max_file: 1 << 30,
                disk: 1 << 30,
                threads: 1,
            },
            password: None,
            scratch: None,
            shrink: crate::operations::ShrinkSettings::default(),
            texts_lang: crate::texts::Lang::ENGLISH,
        }
    }

    #[test]
    fn a_report_on_the_last_line_wins() {
        let stdout = b"noise\n{\"outcome\":\"done\",\"output_bytes\":5,\"pages\":1}\n";
        let outcome = judge(ExitStatus::from_raw(0), stdout, b"", &request());
        assert_eq!(outcome, Outcome::Reported(Report::Done { output_bytes: 5, pages: Some(1), peak_rss_bytes: None }));
    }

    #[test]
    fn an_allocation_failure_is_out_of_memory() {
        let stderr = b"memory allocation of 1073741824 bytes failed\n";
        let outcome = judge(ExitStatus::from_raw(6), b"", stderr, &request());
        assert_eq!(outcome, Outcome::OutOfMemory { limit: 1 << 30 });
    }

    #[tokio::test]
    async fn only_the_end_of_a_pipe_is_kept_and_the_rest_is_counted() {
        let written: Vec<u8> = (0..5 * KEPT_OUTPUT_BYTES + 7).map(|i| (i % 251) as u8).collect();
        let tail = keep_tail(Some(&written[..])).await;
        assert!(tail.kept.len() >= KEPT_OUTPUT_BYTES && tail.kept.len() < 2 * KEPT_OUTPUT_BYTES);
        assert!(written.ends_with(&tail.kept));
        assert_eq!(tail.dropped + tail.kept.len() as u64, written.len() as u64);
    }

    #[test]
    fn a_write_past_the_file_limit_is_said_so() {
        assert_eq!(judge(ExitStatus::from_raw(SIGXFSZ), b"", b"", &request()), Outcome::FileTooBig { limit: 1 << 30 });
    }

    #[test]
    fn signals_say_what_happened() {
        assert_eq!(
            judge(ExitStatus::from_raw(SIGXCPU), b"", b"", &request()),
            Outcome::TimedOut { limit: Duration::from_secs(60) }
        );
        assert!(matches!(
            judge(ExitStatus::from_raw(SIGKILL), b"", b"", &request()),
            Outcome::KilledFromOutside { .. }
        ));
        match judge(ExitStatus::from_raw(11), b"", "x".repeat(5000).as_bytes(), &request()) {
            Outcome::Crashed { detail } => assert!(detail.len() < 2100, "{}", detail.len()),
            other => panic!("{other:?}"),
        }
    }
}
