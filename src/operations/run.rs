//! The one place the two sides of a contained run meet: the command line.
//!
//! The parent ([`super::contained`]) starts docket's own binary with [`Request::child_args`]:
//! `docket process INPUT --op NAME [ARGS] --output OUTPUT --contained --memory-limit …`. The
//! child's binary parses that back into [`ProcessArgs`] (the same struct `docket process` reads
//! for an admin), before any async runtime exists, and [`serve_child`] turns it into the very
//! [`Request`] the parent sent ([`ProcessArgs::into_request`]), runs it
//! ([`super::child::run_here`]) and prints one [`Report`] as a JSON line. What goes on the
//! command line and how it is read back are written here and nowhere else, so the two cannot
//! drift; a test sends requests of every kind through both.
//!
//! What the command line does not carry: the password of a `decrypt` (anyone on the machine can
//! read `/proc/PID/cmdline`; it goes to the child's stdin), the run's disk limit (the parent
//! watches the disk), its scratch folder (the child's `TMPDIR` and `HOME`), and what the
//! configuration says of an external tool beyond its command and reach (the parent has applied
//! it already).

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;

use super::{ExternalTool, Limits, Office, Renderer, Report, Request, ShrinkSettings, Work};
use crate::domain::{Operation, Password};
use crate::texts::Lang;

/// `docket process`: what an admin types to run one operation on a local file, and what the
/// parent adds (hidden, with `--contained`) when it starts the child of a run.
#[derive(Debug, Clone, clap::Args)]
pub struct ProcessArgs {
    /// The input file.
    pub file: PathBuf,
    /// The operation and its arguments (`--op rotate 180 2,4`): a built-in one, or an
    /// external one of `[processing.external.<name>]`.
    #[arg(long, num_args = 1.., allow_negative_numbers = true, default_value = super::OPTIMIZE, value_name = "NAME [ARGS]")]
    pub op: Vec<String>,
    /// Where to write the result.
    #[arg(short, long, value_name = "OUT")]
    pub output: PathBuf,
    /// The document's language(s), for tools that use `{lang}` (Tesseract codes: eng+rus).
    #[arg(long, default_value = super::DEFAULT_LANG)]
    pub lang: String,
    /// Be the child of a contained run: limit this process, work, report JSON on stdout.
    #[arg(long, hide = true)]
    pub contained: bool,
    /// The child's address-space limit, in bytes.
    #[arg(long, hide = true, requires = "contained")]
    memory_limit: Option<u64>,
    /// The child's time limit, in seconds.
    #[arg(long, hide = true, requires = "contained")]
    timeout_secs: Option<u64>,
    /// The child's inflate cap, in bytes.
    #[arg(long, hide = true, requires = "contained")]
    max_inflate: Option<u64>,
    /// The largest file the child may write, in bytes.
    #[arg(long, hide = true, requires = "contained")]
    max_file: Option<u64>,
    /// The threads the child may keep busy (default: the machine's cores).
    #[arg(long, hide = true, requires = "contained")]
    threads: Option<usize>,
    /// The process that started the child (the service): the child does not work once it
    /// is gone.
    #[arg(long, hide = true, requires = "contained")]
    parent_pid: Option<u32>,
    /// LibreOffice's program, for `topdf` of an office document.
    #[arg(long, hide = true, requires = "contained")]
    office: Option<PathBuf>,
    /// MuPDF's program, for a preview.
    #[arg(long, hide = true, requires = "contained")]
    renderer: Option<PathBuf>,
    /// A preview's longest side, in pixels.
    #[arg(long, hide = true, requires = "renderer")]
    max_side: Option<u32>,
    /// The most bytes a preview may have.
    #[arg(long, hide = true, requires = "renderer")]
    max_bytes: Option<u64>,
    /// A path the external program may reach besides its own files (repeated).
    #[arg(long, hide = true, requires = "contained")]
    reach: Vec<PathBuf>,
    /// The language of what the child writes for people into its result (`en`, `ru`).
    #[arg(long, hide = true, requires = "contained")]
    texts_lang: Option<String>,
    /// `shrink`'s target resolution, in dots per inch.
    #[arg(long, hide = true, requires = "contained", default_value_t = crate::pdf::DEFAULT_SHRINK_DPI)]
    shrink_dpi: u32,
    /// `shrink`'s JPEG quality.
    #[arg(long, hide = true, requires = "contained", default_value_t = crate::pdf::DEFAULT_JPEG_QUALITY)]
    jpeg_quality: u8,
    /// The external program and its arguments (placeholders unexpanded), for the child.
    #[arg(last = true, hide = true)]
    tool: Vec<String>,
}

impl Request {
    /// The arguments of `docket` that make it the child of this run (after the program name),
    /// which [`ProcessArgs::into_request`] reads back.
    pub fn child_args(&self) -> Vec<OsString> {
        let mut args: Vec<OsString> =
            vec!["process".into(), self.input.clone().into(), "--op".into(), self.work.name().into()];
        // A built-in operation's arguments follow its name; they never hold a password.
        if let Work::Builtin(operation) = &self.work {
            args.extend(operation.arguments().split_whitespace().map(OsString::from));
        }
        args.extend([
            "--output".into(),
            self.output.clone().into(),
            "--contained".into(),
            "--memory-limit".into(),
            self.limits.memory.to_string().into(),
            "--timeout-secs".into(),
            self.limits.timeout.as_secs().max(1).to_string().into(),
            "--max-inflate".into(),
            self.limits.max_inflate.to_string().into(),
            "--max-file".into(),
            self.limits.max_file.to_string().into(),
            "--threads".into(),
            self.limits.threads.to_string().into(),
            "--shrink-dpi".into(),
            self.shrink.dpi.to_string().into(),
            "--jpeg-quality".into(),
            self.shrink.jpeg_quality.to_string().into(),
            "--lang".into(),
            self.lang.clone().into(),
            "--texts-lang".into(),
            self.texts_lang.code().into(),
            // The child dies with this process, or does not start its work once it is gone.
            "--parent-pid".into(),
            std::process::id().to_string().into(),
        ]);
        if let Work::Office(office) = &self.work {
            args.extend(["--office".into(), office.program.clone().into_os_string()]);
        }
        if let Work::Render(renderer) = &self.work {
            args.extend([
                "--renderer".into(),
                renderer.program.clone().into_os_string(),
                "--max-side".into(),
                renderer.max_side.to_string().into(),
                "--max-bytes".into(),
                renderer.max_bytes.to_string().into(),
            ]);
        }
        if let Work::Tool(tool) = &self.work {
            for path in &tool.reach {
                args.extend(["--reach".into(), path.clone().into_os_string()]);
            }
            args.push("--".into());
            args.extend(tool.command.iter().map(OsString::from));
        }
        args
    }
}

impl ProcessArgs {
    /// The operation's words as typed: its name and arguments (`rotate 180 2,4`).
    pub fn operation_words(&self) -> String {
        self.op.join(" ")
    }

    /// The request a parent's [`Request::child_args`] carried. `password` gives a `decrypt`'s
    /// password (the child reads it from its stdin: [`super::child::read_password`]).
    pub fn into_request(self, password: impl FnOnce() -> std::io::Result<Password>) -> anyhow::Result<Request> {
        let op = self.operation_words();
        let work = if let Some(program) = self.office {
            Work::Office(Office { program })
        } else if let Some(program) = self.renderer {
            Work::Render(Renderer {
                program,
                max_side: self.max_side.context("--max-side is required with --renderer")?,
                max_bytes: self.max_bytes.context("--max-bytes is required with --renderer")?,
            })
        } else if self.tool.is_empty() {
            match Operation::parse(&op).with_context(|| format!("operation {op:?} needs its command after `--`"))? {
                Operation::Decrypt { .. } => Work::Builtin(Operation::Decrypt {
                    password: password().context("while reading the password from stdin")?,
                }),
                operation => Work::Builtin(operation),
            }
        } else {
            // The parent applied the rest of the tool's configuration (what it accepts, its
            // limits, its memory factor) before it started this run.
            Work::Tool(ExternalTool {
                name: op,
                command: self.tool,
                accepts: Vec::new(),
                output: String::new(),
                memory_limit: None,
                timeout: None,
                memory_factor: 1.0,
                reach: self.reach,
            })
        };
        let limits = Limits {
            memory: self.memory_limit.context("--memory-limit is required with --contained")?,
            timeout: std::time::Duration::from_secs(
                self.timeout_secs.context("--timeout-secs is required with --contained")?,
            ),
            max_inflate: self.max_inflate.context("--max-inflate is required with --contained")?,
            max_file: self.max_file.context("--max-file is required with --contained")?,
            // The parent watches what the run has on disk; the child only knows its file limit.
            disk: u64::MAX,
            threads: self
                .threads
                .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)),
        };
        Ok(Request {
            work,
            input: self.file,
            output: self.output,
            lang: self.lang,
            limits,
            password: None,
            shrink: ShrinkSettings { dpi: self.shrink_dpi, jpeg_quality: self.jpeg_quality },
            texts_lang: self.texts_lang.as_deref().map_or(Lang::ENGLISH, Lang::from_code),
            scratch: None,
        })
    }
}

/// The child of a contained run (`--contained`): read the request back, limit this process,
/// run, print the report as one JSON line. Fails (a non-zero exit) when the operation did,
/// after the report. Synchronous: the binary calls it before it starts an async runtime, whose
/// threads would take address space from the document.
pub fn serve_child(args: ProcessArgs) -> anyhow::Result<()> {
    let parent = args.parent_pid;
    let request = args.into_request(super::child::read_password)?;
    let report = super::child::run_here(&request, parent);
    let line = serde_json::to_string(&report).context("while writing the report")?;
    writeln!(std::io::stdout().lock(), "{line}").context("while writing the report to stdout")?;
    match report {
        Report::Done { .. } => Ok(()),
        Report::Failed { detail, .. } => anyhow::bail!("{detail}"),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use clap::Parser;

    use super::*;

    /// Just enough of docket's command line to read a child's arguments back.
    #[derive(Debug, Parser)]
    struct Docket {
        #[command(subcommand)]
        command: Subcommand,
    }

    #[derive(Debug, clap::Subcommand)]
    enum Subcommand {
        Process(ProcessArgs),
    }

    fn request(work: Work) -> Request {
        Request {
            work,
            input: PathBuf::from("/data/work/12/source.pdf"),
            output: PathBuf::from("/data/work/12/out put.pdf"),
            lang: "eng+rus".into(),
            texts_lang: Lang::from_code("ru"),
            limits: Limits {
                memory: 600 << 20,
                timeout: Duration::from_secs(90),
                threads: 3,
                max_inflate: 1 << 30,
                max_file: 2 << 30,
                disk: 5 << 30,
            },
            password: None,
            shrink: ShrinkSettings { dpi: 120, jpeg_quality: 61 },
            scratch: Some(PathBuf::from("/data/work/12/scratch")),
        }
    }

    /// `request` as its child reads it back.
    fn read_back(request: &Request, password: &str) -> Request {
        let argv = std::iter::once(OsString::from("docket")).chain(request.child_args());
        let Subcommand::Process(args) = Docket::try_parse_from(argv).expect("the child's arguments parse").command;
        assert!(args.contained);
        let password = Password::new(password.to_owned());
        args.into_request(|| Ok(password)).expect("a request")
    }

    /// What the child knows of `sent`: all but the disk limit and scratch folder.
    fn as_the_child_sees_it(sent: Request) -> Request {
        Request { limits: Limits { disk: u64::MAX, ..sent.limits }, scratch: None, password: None, ..sent }
    }

    #[test]
    fn a_built_in_operation_with_arguments_comes_back_as_it_was_sent() {
        for words in ["rotate 180 2,4", "pages 2-3", "shrink", "optimize", "text"] {
            let sent = request(Work::Builtin(Operation::parse(words).expect("an operation")));
            assert_eq!(read_back(&sent, ""), as_the_child_sees_it(sent.clone()), "{words}");
        }
    }

    #[test]
    fn a_decrypt_gets_its_password_from_the_side_channel_not_the_command_line() {
        let operation = Operation::Decrypt { password: Password::new("correct horse".into()) };
        let sent =
            Request { password: Some(Password::new("correct horse".into())), ..request(Work::Builtin(operation)) };
        assert!(sent.child_args().iter().all(|arg| !arg.to_string_lossy().contains("horse")));
        assert_eq!(read_back(&sent, "correct horse"), as_the_child_sees_it(sent.clone()));
    }

    #[test]
    fn office_renders_and_external_tools_come_back_with_their_program_command_and_reach() {
        let office = request(Work::Office(Office { program: PathBuf::from("/usr/bin/soffice") }));
        assert_eq!(read_back(&office, ""), as_the_child_sees_it(office.clone()));
        let preview = Renderer { program: PathBuf::from("/usr/bin/mutool"), max_side: 320, max_bytes: 200_000 };
        let render = request(Work::Render(preview));
        assert_eq!(read_back(&render, ""), as_the_child_sees_it(render.clone()));

        let tool = ExternalTool {
            name: "ocr".into(),
            command: vec!["ocrmypdf".into(), "-l".into(), "{lang}".into(), "{input}".into(), "{output}".into()],
            accepts: vec!["pdf".into()],
            output: "pdf".into(),
            memory_limit: Some(1 << 30),
            timeout: Some(Duration::from_secs(600)),
            memory_factor: 4.0,
            reach: vec![PathBuf::from("/opt/tessdata")],
        };
        let sent = request(Work::Tool(tool.clone()));
        let Work::Tool(read) = read_back(&sent, "").work else { panic!("a tool run reads back as a tool") };
        assert_eq!((read.name, read.command, read.reach), (tool.name, tool.command, tool.reach));
    }

    #[test]
    fn a_child_without_its_limits_is_refused_with_the_missing_flag_named() {
        let argv = ["docket", "process", "in.pdf", "--output", "out.pdf", "--contained"];
        let Subcommand::Process(args) = Docket::try_parse_from(argv).expect("parses").command;
        let error = args.into_request(|| Ok(Password::new(String::new()))).expect_err("no limits");
        assert!(error.to_string().contains("--memory-limit"), "{error}");
    }
}
