//! Operations, and the process boundary every one of them runs behind.
//!
//! An operation ([`Work`]: `optimize` with lopdf, or an external program configured under
//! `[processing.external.<name>]`) never runs in the service's own process. The service (the
//! *parent*, [`contained`]) re-executes its own binary as `docket process INPUT --op NAME -o
//! OUTPUT --contained …` with the run's limits (that command line, both ways, is [`run`]'s), in a process group of its own; the *child*
//! ([`child`]) first limits itself (address space, CPU time, no core dumps), then works, and
//! writes one [`Report`] as a JSON line on its stdout. Whatever the child does — finish, fail,
//! panic, run out of memory, hang — the parent turns it into an [`Outcome`], and nothing of the
//! document's cost reaches the service: its memory, its threads and its other runs stay as
//! they were.
//!
//! The parent kills the whole process group when the run's time is up and when its future is
//! dropped (the run's lease was lost, the job was cancelled, shutdown), so an external tool's
//! own children (ocrmypdf → tesseract, ghostscript) die with it.
//!
//! This module is an adapter: it may use [`crate::pdf`], [`crate::detect`] and the domain, and
//! must not import the store, Telegram, the pipeline or the configuration (which converts its
//! sections into [`Limits`] and [`ExternalTool`]s).

pub mod child;
pub mod confine;
pub mod contained;
pub mod external;
pub mod office;
pub mod render;
pub mod run;

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::domain::{FailureReason, Operation, Password};
pub use crate::pdf::ShrinkSettings;

pub use contained::{Outcome, run_contained};
pub use external::{Availability, ExternalTool};
pub use office::Office;
pub use render::Renderer;

/// The name of the operation that runs when none is asked for.
pub const OPTIMIZE: &str = "optimize";

/// Peak resident memory of an `optimize` child per byte of input, at worst: files made of very
/// many small objects (32–35 ×), and, since every Flate stream is inflated to be deflated again
/// on both cores, large text PDFs (51 × on a 2,415-page manual). Measured by
/// `benches/memory.rs` and `benches/lossy.rs`; see BENCHMARKS.md.
pub const OPTIMIZE_MEMORY_FACTOR: f64 = 60.0;

/// Peak resident memory of a `shrink` child per byte of input, at worst: scans whose images
/// decode to many times their compressed size (two at a time, one per core): 8–11 × on the
/// corpus's scans, measured by `benches/lossy.rs` (see BENCHMARKS.md), with room for JPEGs
/// compressed harder than those. A file whose images decode to far more than the
/// file's own size (a small file of huge blank pages) can exceed it: the child's address-space
/// limit is what stops that one.
pub const SHRINK_MEMORY_FACTOR: f64 = 30.0;

/// Peak resident memory of a `topdf` child per byte of input, at worst: a PNG or WebP decodes to
/// many times its size, and its samples are held with their deflated copy. An estimate: the
/// corpus's images are too small to measure it (`benches/lossy.rs`, BENCHMARKS.md); the same
/// caveat as [`SHRINK_MEMORY_FACTOR`].
pub const TOPDF_MEMORY_FACTOR: f64 = 30.0;

/// Peak resident memory of a child that has not read anything yet (the binary, its runtime and
/// allocator): what `benches/memory.rs` takes off a run's peak before it divides by the input to
/// measure a factor; see BENCHMARKS.md.
pub const CHILD_BASE_MEMORY: u64 = 16 * 1024 * 1024;

/// Address space docket's own child maps before its input counts, with room to spare: its
/// binary, the 64 MiB stack of the lopdf thread, a malloc arena per thread (two at most, 64 MiB
/// each) and the stacks of its pool. A debug build's child peaks at 300–434 MiB of address space
/// (`VmPeak`) on a 20-page PDF with one or two threads, while its resident memory stays near
/// 22 MiB. What a built-in run's address-space limit, and so its reservation, starts from; the
/// input's factor comes on top. Below it, running out shows as a thread that cannot start, not
/// as an allocation that fails.
pub const CHILD_BASE_ADDRESS_SPACE: u64 = 512 * 1024 * 1024;

/// Address space an external program is given however small its input: interpreters and the
/// programs they start (ocrmypdf's Python, Tesseract with its OpenMP threads, Ghostscript,
/// LibreOffice) map far more than they touch; ocrmypdf peaks at 320 MiB on a two-page scan.
pub const TOOL_BASE_ADDRESS_SPACE: u64 = 1024 * 1024 * 1024;

/// The program a run's child is: the very binary this process runs. On Linux that is
/// `/proc/self/exe`, which the kernel resolves in the forked process to the image the service
/// was started from, even after a package upgrade replaced the file at its path (a child of the
/// new version would not speak the old parent's protocol). Elsewhere, the path it was started
/// from.
pub fn this_binary() -> PathBuf {
    if cfg!(target_os = "linux") && std::path::Path::new("/proc/self/exe").exists() {
        return PathBuf::from("/proc/self/exe");
    }
    std::env::current_exe().unwrap_or_else(|_| PathBuf::from("docket"))
}

/// Says once, at start, which programs operations can run here: each external tool, and
/// LibreOffice for office documents (`soffice`: `[processing] soffice`), and MuPDF for previews
/// when they are on (`renderer`: `[processing] renderer`), with a hint for an admin when one is
/// missing.
pub fn announce_programs(tools: &[ExternalTool], soffice: &str, renderer: Option<&str>) {
    for tool in tools {
        match tool.availability() {
            Availability::Available(path) => {
                tracing::info!(operation = %tool.name, program = %path.display(), "external operation available")
            }
            Availability::Unavailable(why) => tracing::warn!(operation = %tool.name, "{why}"),
        }
    }
    match Office::find(soffice) {
        Availability::Available(path) => {
            tracing::info!(program = %path.display(), "office conversion available: topdf turns office documents into PDFs")
        }
        Availability::Unavailable(why) => tracing::warn!("{why}"),
    }
    match renderer.map(Renderer::find) {
        Some(Availability::Available(path)) => {
            tracing::info!(program = %path.display(), "previews available: PDF results are sent with their first page as a thumbnail")
        }
        Some(Availability::Unavailable(why)) => tracing::warn!("{why}"),
        None => tracing::info!("previews are off ([processing] preview = false)"),
    }
}

/// What a contained run does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Work {
    /// One of docket's own operations, run by [`crate::pdf::run`].
    Builtin(Operation),
    /// Run an external program on the input.
    Tool(ExternalTool),
    /// `topdf` of an office document: LibreOffice converts it ([`office`]).
    Office(Office),
    /// A PDF's first page as a JPEG, drawn by MuPDF ([`render`]): a result's preview.
    Render(Renderer),
}

impl Work {
    /// The operation's name: a built-in one's (`optimize`), or the external tool's.
    pub fn name(&self) -> &str {
        match self {
            Self::Builtin(operation) => operation.name(),
            Self::Tool(tool) => &tool.name,
            Self::Office(_) => Operation::ToPdf.name(),
            Self::Render(_) => "preview",
        }
    }

    /// The work that does this on content of `label`: `topdf` of an office document is
    /// LibreOffice's (`office`, when installed). `None`: it needs LibreOffice, and there is none.
    #[must_use]
    pub fn for_content(self, label: &str, office: Option<&Office>) -> Option<Self> {
        match self {
            Self::Builtin(Operation::ToPdf) if office::takes(label) => office.cloned().map(Self::Office),
            work => Some(work),
        }
    }

    /// The program a person is told could not process their file: an external tool's name,
    /// LibreOffice, or the operation's.
    pub fn program_name(&self) -> &str {
        match self {
            Self::Office(_) => "LibreOffice",
            Self::Render(_) => "MuPDF",
            other => other.name(),
        }
    }

    /// Whether the run starts programs of its own, which outlive a child killed by the kernel:
    /// its child then watches the service instead (see [`child`]).
    pub fn starts_programs(&self) -> bool {
        !matches!(self, Self::Builtin(_))
    }

    /// Peak resident memory per byte of input, at worst (what the memory budget reserves).
    pub fn memory_factor(&self) -> f64 {
        match self {
            Self::Builtin(operation) => builtin_memory_factor(operation),
            Self::Tool(tool) => tool.memory_factor,
            Self::Office(_) => office::OFFICE_MEMORY_FACTOR,
            Self::Render(_) => render::RENDER_MEMORY_FACTOR,
        }
    }

    /// The password a `decrypt` carries, for [`Request::password`]; `None` for anything else.
    pub fn password(&self) -> Option<Password> {
        match self {
            Self::Builtin(Operation::Decrypt { password }) => Some(password.clone()),
            _ => None,
        }
    }

    /// The limits of a run of this operation: a tool's own where it sets them, else `defaults`.
    pub fn limits(&self, defaults: Limits) -> Limits {
        match self {
            Self::Builtin(_) | Self::Office(_) => defaults,
            // A preview is a courtesy the result waits for: a page MuPDF cannot draw in that
            // time delays the result no longer.
            Self::Render(_) => Limits { timeout: defaults.timeout.min(render::MAX_DRAWING_TIME), ..defaults },
            Self::Tool(tool) => Limits {
                memory: tool.memory_limit.unwrap_or(defaults.memory),
                timeout: tool.timeout.unwrap_or(defaults.timeout),
                ..defaults
            },
        }
    }
}

/// Address space a run of `work` maps before its input counts.
fn base_address_space(work: &Work) -> u64 {
    match work {
        Work::Builtin(_) => CHILD_BASE_ADDRESS_SPACE,
        Work::Tool(_) | Work::Office(_) | Work::Render(_) => TOOL_BASE_ADDRESS_SPACE,
    }
}

/// Peak resident memory per byte of input of a built-in operation, at worst.
fn builtin_memory_factor(operation: &Operation) -> f64 {
    match operation {
        Operation::Shrink { .. } => SHRINK_MEMORY_FACTOR,
        // A merge's pictures decode as topdf's do; its PDFs are copied stream for stream, about
        // 10 × their size at peak on text PDFs (`benches/merge.rs`, BENCHMARKS.md).
        Operation::ToPdf | Operation::Merge => TOPDF_MEMORY_FACTOR,
        _ => OPTIMIZE_MEMORY_FACTOR,
    }
}

/// What bounds one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Address space of the child, in bytes (`RLIMIT_AS`); reaching it is "out of memory". Sized
    /// for one run by [`Limits::sized_for`], and then exactly what that run reserves from the
    /// memory budget.
    pub memory: u64,
    /// Wall-clock time from start to report; the child is killed when it is up. CPU time is
    /// capped at this times [`Limits::threads`], so a child cannot spin on after a lost parent.
    pub timeout: Duration,
    /// Threads the run may keep busy: a built-in's thread pool, `RAYON_NUM_THREADS` and
    /// `OMP_THREAD_LIMIT` for a tool and what it starts, and `{threads}` in a tool's command.
    pub threads: usize,
    /// Largest size one stream may inflate to while a PDF is loaded.
    pub max_inflate: u64,
    /// Largest file the child (and every program it starts) may write (`RLIMIT_FSIZE`): a
    /// write past it kills the writer with `SIGXFSZ`, so a run stops when it reaches the limit
    /// instead of after it filled the disk.
    pub max_file: u64,
    /// Most bytes one run may have on disk at once: its output and its scratch folder together.
    /// The parent watches both while the run works ([`run_contained`]) and kills the run when it
    /// reaches it.
    pub disk: u64,
}

impl Limits {
    /// These limits for one run of `work` on `input_bytes`: its address space is what the run
    /// reserves from the memory budget, the one number for both, so no child can use more than
    /// was set aside for it. It is the run's base plus its input times its worst-case factor, at
    /// most the configured limit (`self.memory`).
    #[must_use]
    pub fn sized_for(self, work: &Work, input_bytes: u64) -> Self {
        let worst = base_address_space(work) as f64 + input_bytes as f64 * work.memory_factor();
        Self { memory: (worst.ceil() as u64).min(self.memory), ..self }
    }
}

/// One contained run: what to do, on what, into where, within what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The operation.
    pub work: Work,
    /// The input file.
    pub input: PathBuf,
    /// Where the result goes; created or truncated by the child.
    pub output: PathBuf,
    /// The document's language(s) for tools that use `{lang}` (Tesseract codes: `eng+rus`).
    pub lang: String,
    /// The language of what a built-in writes for people into its result (the chat's).
    pub texts_lang: crate::texts::Lang,
    /// The bounds.
    pub limits: Limits,
    /// The password `decrypt` opens the document with. It never goes on the child's command
    /// line (anyone on the machine can read `/proc/PID/cmdline`): the parent writes it to the
    /// child's stdin and closes it ([`run_contained`]); the child reads it there
    /// ([`child::read_password`]).
    pub password: Option<Password>,
    /// What `shrink` aims at (`[processing] shrink_dpi`, `jpeg_quality`).
    pub shrink: ShrinkSettings,
    /// The run's own folder for temporary files (the child's `TMPDIR` and `HOME`), counted with
    /// the output against [`Limits::disk`]; `None`: the system's temporary folder, not counted.
    pub scratch: Option<PathBuf>,
}

/// `{lang}` when no language is given.
pub const DEFAULT_LANG: &str = "eng";

/// What a child reports on its stdout, as one JSON line, when it got to report at all.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Report {
    /// The result is at the output path.
    Done {
        /// Its size.
        output_bytes: u64,
        /// Its pages, when the operation counted them.
        pages: Option<u32>,
        /// The child's peak resident memory (`VmHWM`), external programs not included.
        #[serde(default)]
        peak_rss_bytes: Option<u64>,
    },
    /// The operation refused the input or could not finish.
    Failed {
        /// Why, as a kind the parent maps to a reason.
        failure: Failure,
        /// What happened, for admins.
        detail: String,
    },
}

impl Failure {
    /// The reason a person is told, for a failure of `work`; `None` when the failure is not the
    /// document's (reading or writing failed, the child could not limit itself): worth another
    /// attempt, not a reason.
    pub fn reason(&self, work: &Work) -> Option<FailureReason> {
        Some(match self {
            Self::Encrypted => FailureReason::Encrypted,
            Self::NoPages => FailureReason::NoPages,
            Self::NoSuchPage { page, page_count } => FailureReason::NoSuchPage { page: *page, pages: *page_count },
            Self::WrongPassword => FailureReason::WrongPassword,
            Self::CannotShrinkTo { target, smallest } => {
                FailureReason::CannotShrinkTo { target: *target, smallest: *smallest }
            }
            Self::PageTooBigForParts { page, size, target } => {
                FailureReason::PageTooBigForParts { page: *page, size: *size, target: *target }
            }
            Self::Unreadable => FailureReason::Unreadable,
            Self::InflatesTooMuch { limit } => FailureReason::InflatesTooMuch { limit: *limit },
            Self::ToolFailed => FailureReason::ToolFailed { tool: work.program_name().to_owned() },
            // The child knows the file's place only; the pipeline adds its name and the album's
            // size from the ticket (`pipeline::process`).
            Self::InPart { part, failure } => FailureReason::InPart {
                number: *part,
                count: 0,
                name: String::new(),
                reason: Box::new(failure.reason(work)?),
            },
            // What the limit was made of decides the reason (`pipeline::process`).
            Self::FileTooBig { .. } => return None,
            Self::Io | Self::LimitsRefused => return None,
        })
    }
}

/// Why a child's operation failed, when it could say.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Failure {
    /// The PDF needs a password.
    Encrypted,
    /// The PDF's structure cannot be read (lopdf refused or panicked, caps included).
    Unreadable,
    /// The PDF has no pages.
    NoPages,
    /// A stream inflates past the limit.
    InflatesTooMuch {
        /// The limit, in bytes.
        limit: u64,
    },
    /// Reading the input or writing the output failed: worth another attempt.
    Io,
    /// The external program ended without a result.
    ToolFailed,
    /// The child could not set its own limits: it did no work.
    LimitsRefused,
    /// A page list names a page the document does not have.
    NoSuchPage {
        /// The first missing page listed.
        page: u32,
        /// The pages the document has.
        page_count: u32,
    },
    /// The password given does not open the PDF.
    WrongPassword,
    /// `shrink` to a size: the smallest settings still gave more.
    CannotShrinkTo {
        /// The target, in bytes.
        target: u64,
        /// The smallest result, in bytes.
        smallest: u64,
    },
    /// `split` by size: one page alone is over the part size.
    PageTooBigForParts {
        /// The page, from 1.
        page: u32,
        /// Its size alone, in bytes.
        size: u64,
        /// The part size, in bytes.
        target: u64,
    },
    /// An external program was stopped for writing a file larger than [`Limits::max_file`].
    FileTooBig {
        /// The limit, in bytes.
        limit: u64,
    },
    /// `merge` failed on one of the album's files: `failure` is that file's.
    InPart {
        /// The file, from 1 in album order.
        part: u32,
        /// What went wrong with it.
        failure: Box<Failure>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_runs_address_space_is_its_base_and_its_inputs_factor_up_to_the_configured_limit() {
        let configured = Limits {
            memory: 2 << 30,
            timeout: Duration::from_secs(60),
            max_inflate: 1,
            max_file: 1,
            disk: 1,
            threads: 4,
        };
        let optimize = Work::Builtin(Operation::Optimize);
        let small = configured.sized_for(&optimize, 1_000_000);
        assert_eq!(small.memory, CHILD_BASE_ADDRESS_SPACE + 60_000_000);
        assert_eq!(Limits { memory: configured.memory, ..small }, configured, "only the memory is sized");
        assert_eq!(configured.sized_for(&optimize, 1 << 30).memory, 2 << 30, "never past the configured limit");
        let tool = Work::Tool(external::stand_in(&["ocrmypdf"], 10.0));
        assert_eq!(configured.sized_for(&tool, 1000).memory, TOOL_BASE_ADDRESS_SPACE + 10_000);
    }

    #[test]
    fn a_preview_gets_at_most_its_own_drawing_time_and_otherwise_the_runs_limits() {
        let configured = Limits {
            memory: 2 << 30,
            timeout: Duration::from_secs(600),
            max_inflate: 1,
            max_file: 1,
            disk: 1,
            threads: 4,
        };
        let render = Work::Render(Renderer { program: "mutool".into(), max_side: 320, max_bytes: 200_000 });
        assert_eq!(render.limits(configured), Limits { timeout: render::MAX_DRAWING_TIME, ..configured });
        let short = Limits { timeout: Duration::from_secs(5), ..configured };
        assert_eq!(render.limits(short), short, "never longer than the configured timeout");
    }
}
