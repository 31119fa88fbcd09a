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

/// Runs `request` in a child: `program` (docket's own binary) with [`Request::child_args`], in a
/// new process group, stdin closed (after the request's password, when it has one).
///
/// Returns when the child has ended, or when `request.limits.timeout` has passed, after killing
/// it. Dropping the future (the lease was lost, the job was cancelled) kills the child's whole
/// process group at once. A result the child reports is synced to disk before this returns; one
/// it reports without having written it is [`Outcome::Crashed`]. Errors only when the child
/// cannot be started or its result cannot be synced.
pub async fn run_contained(program: &Path, request: &Request) -> std::io::Result<Outcome> {
    let mut command = tokio::process::Command::new(program);
    command
        .args(request.child_args())
        .stdin(if request.password.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // glibc gives each thread an arena that reserves 64 MiB of address space: under
        // RLIMIT_AS that is memory the document cannot use. Two arenas are enough for lopdf.
        .env("MALLOC_ARENA_MAX", "2")
        // Its own process group, so that the child and everything it starts die together.
        .process_group(0)
        .kill_on_drop(true);
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
    let waited = tokio::time::timeout(request.limits.timeout, child.wait_with_output()).await;
    // Whatever happened, nothing the child started outlives it.
    drop(group);
    let outcome = match waited {
        Err(_elapsed) => Outcome::TimedOut { limit: request.limits.timeout },
        Ok(output) => {
            let output = output?;
            judge(output.status, &output.stdout, &output.stderr, request)
        }
    };
    if let Outcome::Reported(Report::Done { .. }) = &outcome {
        // The child writes its result and leaves making it durable to here, the one place every
        // result passes, a built-in operation's and an external tool's alike: once the run is
        // `ready` its source is deleted. One sync, off the operation's own clock.
        let path = request.output.clone();
        let synced = tokio::task::spawn_blocking(move || std::fs::File::open(path)?.sync_all())
            .await
            .map_err(std::io::Error::other)?;
        match synced {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Outcome::Crashed { detail: "the child reported a result it did not write".into() });
            }
            Err(error) => return Err(error),
        }
    }
    Ok(outcome)
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
            Some(SIGKILL) => Outcome::KilledFromOutside { detail: format!("the child was killed ({status})") },
            _ => Outcome::Crashed { detail: format!("the child ended with {status}: {}", tail(&stderr)) },
        },
    }
}

const SIGKILL: i32 = 9;
const SIGXCPU: i32 = 24;

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
}

impl Drop for GroupKiller {
    fn drop(&mut self) {
        // An empty group is already gone (ESRCH): nothing to do.
        #[cfg(target_os = "linux")]
        if let Some(group) = self.group {
            let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
        }
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
            limits: Limits { memory: 1 << 30, timeout: Duration::from_secs(60), max_inflate: 1 << 20 },
            password: None,
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
