//! The child's side: limit this process, run the operation, say how it went.
//!
//! [`run_here`] is what `docket process … --contained` does. The limits come first, before a
//! byte of the input is read: `RLIMIT_AS` (so an allocation past the limit fails, and Rust
//! aborts with "memory allocation of N bytes failed", which the parent recognises),
//! `RLIMIT_CPU` (its time limit on each of its threads, so a child whose parent is gone cannot
//! spin for ever), `RLIMIT_FSIZE` (a write
//! past [`Limits::max_file`] stops the writer with `SIGXFSZ`, before the disk is full) and
//! `RLIMIT_CORE` 0 (a hostile file must not fill the disk with core dumps); then it confines
//! itself to the run's own files, with no network ([`super::confine`]). External programs
//! inherit them all. A run never outlives the service that waits for it: a built-in operation's
//! child asks the kernel to kill it when its parent dies (`PR_SET_PDEATHSIG`), and does no work
//! when the parent that started it (`--parent-pid`) died before it asked; a tool's child, which
//! must not die before the tool it started, watches that parent while it waits and kills its
//! whole process group, the tool's processes and itself, once the parent is gone.

use std::path::Path;
use std::process::Stdio;

use super::confine::{Reach, confine};
use super::external::expand;
use super::{Failure, Limits, Report, Request, Work};
use crate::domain::{Operation, Password};
use crate::pdf::{self, PdfError};

/// Limits this process, runs `request` and returns what to report. Synchronous: it is the only
/// work of its process. `started_by` is the process that started it (`--parent-pid`: the
/// service), or else this process's parent as it is now.
///
/// One sequence, kept whole because its order is the containment: the limits, the check that the
/// parent still lives and the confinement all come before a byte of the input is read or a thread
/// or program started, and only then does the work run.
pub fn run_here(request: &Request, started_by: Option<u32>) -> Report {
    let parent = started_by.or_else(parent);
    let die_with_parent = !request.work.starts_programs();
    if let Err(e) = apply_limits(&request.limits, die_with_parent) {
        return Report::Failed { failure: Failure::LimitsRefused, detail: format!("setting the limits: {e}") };
    }
    // The kernel sends the parent-death signal only for a parent that dies after it was asked
    // for: one that died before (while this process was starting) has left it to a reaper.
    if die_with_parent && self::parent() != parent {
        return Report::Failed {
            failure: Failure::LimitsRefused,
            detail: "the process that started this run is gone".into(),
        };
    }
    // Before any other thread starts (each inherits it from the thread that starts it) and
    // before a byte of the input is read.
    let extra = match &request.work {
        Work::Tool(tool) => tool.reach.as_slice(),
        Work::Builtin(_) | Work::Office(_) | Work::Render(_) => &[],
    };
    let mut reach = Reach::of(&request.input, &request.output, extra);
    if let Work::Office(_) = &request.work {
        reach = reach.with_sockets_in(super::office::SOCKET_FOLDERS);
    }
    if let Err(e) = confine(&reach) {
        return Report::Failed { failure: Failure::LimitsRefused, detail: format!("confining the run: {e}") };
    }
    match &request.work {
        Work::Builtin(operation) => {
            // The pool lopdf and the operations parallelise on: as wide as the run's share of the
            // cores, not the machine's.
            let pool = rayon::ThreadPoolBuilder::new().num_threads(request.limits.threads.max(1)).build_global();
            if let Err(e) = pool {
                return Report::Failed {
                    failure: Failure::LimitsRefused,
                    detail: format!("sizing the thread pool: {e}"),
                };
            }
            let max_inflate = usize::try_from(request.limits.max_inflate).unwrap_or(usize::MAX);
            let settings = pdf::Settings { max_inflate, shrink: request.shrink, lang: request.texts_lang };
            let produced = match operation {
                Operation::Merge => merge_album(&request.input, &request.output, &settings),
                operation => pdf::run(operation, &request.input, &request.output, &settings).map_err(|e| (None, e)),
            };
            match produced {
                Ok(produced) => Report::Done {
                    output_bytes: produced.output_bytes,
                    pages: produced.pages,
                    peak_rss_bytes: peak_rss(),
                },
                Err((part, e)) => in_part(part, pdf_failure(e)),
            }
        }
        Work::Tool(tool) => {
            let args = expand(&tool.command, &request.input, &request.output, &request.lang, request.limits.threads);
            run_tool(&args, &request.output, &request.limits, parent)
        }
        Work::Office(office) => {
            let label = match crate::detect::detect_path(&request.input) {
                Ok(format) => format.label().to_owned(),
                Err(e) => return Report::Failed { failure: Failure::Io, detail: format!("reading the input: {e}") },
            };
            super::office::convert(office, &request.input, &label, &request.output, |args| {
                run_to_end(args, &request.limits, parent)
            })
        }
        Work::Render(renderer) => super::render::render(renderer, &request.input, &request.output, |args| {
            run_to_end(args, &request.limits, parent)
        }),
    }
}

/// `merge` of the album whose source folder is `folder` ([`crate::spool::album_files`]), each
/// file's format detected from its content; a failure with the part (from 1) it names.
fn merge_album(
    folder: &Path,
    output: &Path,
    settings: &pdf::Settings,
) -> Result<pdf::Produced, (Option<u32>, PdfError)> {
    let mut inputs = Vec::new();
    for path in crate::spool::album_files(folder) {
        let format = crate::detect::detect_path(&path).map_err(|e| (None, PdfError::Io(e)))?;
        inputs.push(pdf::merge::MergeInput { path, label: format.label().to_owned() });
    }
    pdf::merge::merge(&inputs, output, settings)
        .map_err(|e| (e.part.and_then(|part| u32::try_from(part).ok()), e.error))
}

/// `report`, a failure, as one of the album's file `part` when a part is named.
fn in_part(part: Option<u32>, report: Report) -> Report {
    match (part, report) {
        (Some(part), Report::Failed { failure, detail }) => {
            Report::Failed { failure: Failure::InPart { part, failure: Box::new(failure) }, detail }
        }
        (_, report) => report,
    }
}

fn pdf_failure(error: PdfError) -> Report {
    let detail = error.to_string();
    let failure = match error {
        PdfError::Encrypted => Failure::Encrypted,
        PdfError::NoPages => Failure::NoPages,
        PdfError::InflatesTooMuch { limit } => Failure::InflatesTooMuch { limit: limit as u64 },
        PdfError::Io(_) => Failure::Io,
        PdfError::NoSuchPage { page, page_count } => Failure::NoSuchPage { page, page_count },
        PdfError::WrongPassword => Failure::WrongPassword,
        PdfError::CannotShrinkTo { target, smallest } => Failure::CannotShrinkTo { target, smallest },
        PdfError::PageTooBigForParts { page, size, target } => Failure::PageTooBigForParts { page, size, target },
        PdfError::Unreadable { .. } | PdfError::NotPdf { .. } => Failure::Unreadable,
        // The person is told the operation could not process the file; the detail, in the log,
        // names the package to install.
        PdfError::ToolMissing { .. } => Failure::ToolFailed,
    };
    Report::Failed { failure, detail }
}

/// Runs an external program (`args[0]` with the rest) to completion, and checks that it wrote
/// a result at `output`.
fn run_tool(args: &[std::ffi::OsString], output: &Path, limits: &Limits, parent: Option<u32>) -> Report {
    let name = args.first().map(|program| Path::new(program).display().to_string()).unwrap_or_default();
    if let Err(report) = run_to_end(args, limits, parent) {
        return report;
    }
    match std::fs::metadata(output) {
        Ok(meta) if meta.len() > 0 => {
            Report::Done { output_bytes: meta.len(), pages: None, peak_rss_bytes: peak_rss() }
        }
        Ok(_) => Report::Failed { failure: Failure::ToolFailed, detail: format!("{name} wrote an empty result") },
        Err(e) => Report::Failed { failure: Failure::ToolFailed, detail: format!("{name} wrote no result: {e}") },
    }
}

/// Runs a program (`args[0]` with the rest) until it ends, while the service lives. Its stdout
/// goes to this process's stderr: stdout carries the report alone. `Ok`: it ended well (its
/// status, for messages); `Err`: the report of how it did not.
fn run_to_end(
    args: &[std::ffi::OsString],
    limits: &Limits,
    parent: Option<u32>,
) -> Result<std::process::ExitStatus, Report> {
    use std::os::unix::process::ExitStatusExt;
    let Some((program, rest)) = args.split_first() else {
        return Err(Report::Failed { failure: Failure::ToolFailed, detail: "the command is empty".into() });
    };
    let status = std::process::Command::new(program)
        .args(rest)
        .stdin(Stdio::null())
        .stdout(Stdio::from(std::io::stderr()))
        .spawn()
        .and_then(|mut tool| wait_while_parent_lives(&mut tool, parent));
    let name = Path::new(program).display();
    match status {
        Ok(status) if status.success() => Ok(status),
        Ok(status) if status.signal() == Some(super::contained::SIGXFSZ) => Err(Report::Failed {
            failure: Failure::FileTooBig { limit: limits.max_file },
            detail: format!("{name} was stopped for writing a file over {} bytes", limits.max_file),
        }),
        Ok(status) => {
            Err(Report::Failed { failure: Failure::ToolFailed, detail: format!("{name} ended with {status}") })
        }
        Err(e) => Err(Report::Failed { failure: Failure::ToolFailed, detail: format!("starting {name}: {e}") }),
    }
}

/// How often a tool's child looks whether its parent is still there.
const PARENT_CHECK_EVERY: std::time::Duration = std::time::Duration::from_millis(100);

/// Waits for `tool` to end. Should this process's parent (the service) die first, kills this
/// process group (the tool, what it started, and this process) rather than run on unwatched.
/// Wakes the moment the tool ends (a short run costs no polling delay), and at least every
/// [`PARENT_CHECK_EVERY`] to look at the parent.
fn wait_while_parent_lives(
    tool: &mut std::process::Child,
    parent: Option<u32>,
) -> std::io::Result<std::process::ExitStatus> {
    let ended = ExitSignal::of(tool);
    loop {
        if let Some(status) = tool.try_wait()? {
            return Ok(status);
        }
        if parent.is_some() && self::parent() != parent {
            kill_own_group();
        }
        ended.wait_at_most(PARENT_CHECK_EVERY);
    }
}

/// What says that a child ended: on Linux, a pidfd, readable once it has.
struct ExitSignal {
    #[cfg(target_os = "linux")]
    pidfd: Option<std::os::fd::OwnedFd>,
}

impl ExitSignal {
    #[cfg(target_os = "linux")]
    fn of(child: &std::process::Child) -> Self {
        let pid = i32::try_from(child.id()).ok().and_then(rustix::process::Pid::from_raw);
        let pidfd = pid.and_then(|pid| rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()).ok());
        Self { pidfd }
    }

    #[cfg(not(target_os = "linux"))]
    fn of(_child: &std::process::Child) -> Self {
        Self {}
    }

    /// Returns once the child ended, or after `most` (or on a signal) if it has not.
    fn wait_at_most(&self, most: std::time::Duration) {
        #[cfg(target_os = "linux")]
        if let Some(pidfd) = &self.pidfd {
            use rustix::event::{PollFd, PollFlags, Timespec, poll};
            let seconds = i64::try_from(most.as_secs()).unwrap_or(i64::MAX);
            let timeout = Timespec { tv_sec: seconds, tv_nsec: i64::from(most.subsec_nanos()) };
            let mut fds = [PollFd::new(pidfd, PollFlags::IN)];
            if poll(&mut fds, Some(&timeout)).is_ok() {
                return;
            }
        }
        std::thread::sleep(most);
    }
}

/// This process's parent's id (a process whose parent died has been handed to a reaper).
#[cfg(target_os = "linux")]
fn parent() -> Option<u32> {
    rustix::process::getppid().map(|pid| pid.as_raw_nonzero().get().unsigned_abs())
}

#[cfg(not(target_os = "linux"))]
fn parent() -> Option<u32> {
    None
}

#[cfg(target_os = "linux")]
fn kill_own_group() {
    let _ = rustix::process::kill_process_group(rustix::process::getpgrp(), rustix::process::Signal::KILL);
}

#[cfg(not(target_os = "linux"))]
fn kill_own_group() {}

/// The longest password read from stdin, in bytes.
pub const MAX_PASSWORD_BYTES: u64 = 4096;

/// The password the parent wrote to this child's stdin (see [`super::Request::password`]),
/// without a final line break.
pub fn read_password() -> std::io::Result<Password> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::io::stdin().lock().take(MAX_PASSWORD_BYTES).read_to_end(&mut bytes)?;
    let text = String::from_utf8(bytes).map_err(|_| std::io::Error::other("the password is not UTF-8"))?;
    Ok(Password::new(text.strip_suffix('\n').unwrap_or(&text).to_owned()))
}

/// This process's peak resident memory so far, from `/proc/self/status`.
pub fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kib =
        status.lines().find_map(|l| l.strip_prefix("VmHWM:"))?.trim().trim_end_matches("kB").trim().parse::<u64>();
    kib.ok().map(|kib| kib * 1024)
}

/// CPU seconds a run may use: its wall-clock limit on each of the threads it may keep busy.
pub fn cpu_seconds(limits: &Limits) -> u64 {
    limits.timeout.as_secs().max(1).saturating_mul(limits.threads.max(1) as u64)
}

/// Sets the limits; with `die_with_parent`, asks for SIGKILL when the parent dies.
#[cfg(target_os = "linux")]
fn apply_limits(limits: &Limits, die_with_parent: bool) -> std::io::Result<()> {
    use rustix::process::{Resource, Rlimit, Signal, set_parent_process_death_signal, setrlimit};
    if die_with_parent {
        // Sent when the thread that started this process ends: a runtime worker of the
        // service's, which lives as long as the service does.
        set_parent_process_death_signal(Some(Signal::KILL))?;
    }
    let exactly = |n: u64| Rlimit { current: Some(n), maximum: Some(n) };
    setrlimit(Resource::Core, exactly(0))?;
    setrlimit(Resource::Fsize, exactly(limits.max_file))?;
    let cpu = cpu_seconds(limits);
    // SIGXCPU at the soft limit, SIGKILL a little later if it is ignored.
    setrlimit(Resource::Cpu, Rlimit { current: Some(cpu), maximum: Some(cpu.saturating_add(5)) })?;
    setrlimit(Resource::As, exactly(limits.memory))?;
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn apply_limits(_limits: &Limits, _die_with_parent: bool) -> std::io::Result<()> {
    Err(std::io::Error::other("process limits are implemented for Linux only"))
}
