//! The command line: `docket run`, `migrate`, `check-config`, `status`, `jobs`, `retry`,
//! `cancel`, `janitor`, `process`.
//!
//! Every command reads the same configuration through [`Config::load`], so `check-config`
//! validates exactly what `run` would use.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::{Parser, Subcommand};
use serde_json::json;

use std::sync::Arc;

use tokio::sync::Notify;

use crate::config::{CONFIG_ENV, Config};
use crate::domain::operation::{Operation, ParseError};
use crate::domain::{Clock as _, DocumentInfo, Output, SystemClock};
use crate::domain::{
    FailureReason, IdempotencyKey, Job, JobState, MessageKind, NewMessage, Node, NodeName, Ticket, Timestamp,
};
use crate::janitor::{JanitorDeps, JanitorSettings};
use crate::operations::{self, Availability, Failure, Limits, Outcome, Report, Request, Work};
use crate::spool::Spool;
use crate::store::{JobFilter, Store};
use crate::telegram::BotToken;
use crate::texts::{self, Lang};

/// docket: a Telegram bot that processes large documents durably.
#[derive(Debug, Parser)]
#[command(name = "docket", version, about)]
pub struct Cli {
    /// Configuration file (TOML). Without it, built-in defaults apply.
    #[arg(long, global = true, env = CONFIG_ENV, value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The commands.
#[derive(Debug, Subcommand)]
#[expect(clippy::large_enum_variant, reason = "parsed once per process; boxing would only add noise")]
pub enum Command {
    /// Run the bot (token from TELOXIDE_TOKEN, else $CREDENTIALS_DIRECTORY/telegram-token)
    /// until SIGTERM or Ctrl-C.
    Run,
    /// Create or upgrade the database schema, then exit.
    Migrate,
    /// Validate the configuration and print the effective settings as TOML (every key; no
    /// secrets).
    CheckConfig,
    /// Show one job.
    Status {
        /// The ticket number (`4812` or `#4812`).
        ticket: Ticket,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// List jobs, newest first.
    Jobs {
        /// Only jobs in this state (accepted, fetched, processing, ready, failed, expired).
        #[arg(long, value_parser = parse_state)]
        state: Option<JobState>,
        /// Only jobs last changed within this long (`1d`, `6h`, `30m`): with `--state failed`,
        /// those that failed lately.
        #[arg(long, value_parser = parse_age)]
        since: Option<std::time::Duration>,
        /// At most this many.
        #[arg(long, default_value_t = 20)]
        limit: i64,
        /// Print JSON lines instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// List the hosts running docket on this database (`[node] name`): status (running, stopped,
    /// or dead after `[node] dead_after` without a heartbeat), roles, budgets, last heartbeat.
    Nodes {
        /// Print JSON lines instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Ask the host running as node NAME to stop in order (as SIGTERM would, from any host): at
    /// its next heartbeat it stops claiming, finishes or releases its work within its grace
    /// period, hands its roles over and exits with success. Waits until it has stopped.
    Drain {
        /// The node (`docket nodes` lists them).
        name: String,
        /// Return once asked, without waiting for the stop.
        #[arg(long)]
        no_wait: bool,
    },
    /// Send a failed job back to the queue (`accepted`), its attempts counted afresh; its chat is
    /// told. Safe beside a running bot.
    Retry {
        /// The ticket number (`4812` or `#4812`).
        ticket: Ticket,
    },
    /// Cancel a job that is not ready yet, as its chat's `/cancel` would; its chat is told. A
    /// running bot's worker stops at its next lease renewal and deletes the job's files.
    Cancel {
        /// The ticket number (`4812` or `#4812`).
        ticket: Ticket,
    },
    /// One janitor pass: expire results, enforce the results cap, delete orphans and stale
    /// `.part` files, prune old rows. Safe beside a running bot.
    Janitor {
        /// List what would be deleted, with sizes, and delete nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Run one operation on a local file (no bot, no database), in a child process under the
    /// limits of `[processing]`, as the bot does.
    Process {
        /// The input file.
        file: PathBuf,
        /// The operation and its arguments (`--op rotate 180 2,4`): a built-in one, or an
        /// external one of `[processing.external.<name>]`.
        #[arg(long, num_args = 1.., allow_negative_numbers = true, default_value = operations::OPTIMIZE, value_name = "NAME [ARGS]")]
        op: Vec<String>,
        /// Where to write the result.
        #[arg(short, long, value_name = "OUT")]
        output: PathBuf,
        /// The document's language(s), for tools that use `{lang}` (Tesseract codes: eng+rus).
        #[arg(long, default_value = operations::DEFAULT_LANG)]
        lang: String,
        /// Be the child of a contained run: limit this process, work, report JSON on stdout.
        #[arg(long, hide = true)]
        contained: bool,
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
    },
}

fn parse_state(s: &str) -> Result<JobState, String> {
    s.parse().map_err(|_| {
        format!("unknown state {s:?}; expected one of accepted, fetched, processing, ready, failed, expired")
    })
}

fn parse_age(s: &str) -> Result<std::time::Duration, String> {
    humantime::parse_duration(s).map_err(|e| format!("{s:?} is not a duration such as 1d, 6h or 30m: {e}"))
}

/// Runs the parsed command.
pub async fn run(cli: Cli) -> anyhow::Result<()> {
    let cli = match run_if_contained_child(cli) {
        Ok(cli) => cli,
        Err(done) => return done,
    };
    let config = Config::load(cli.config.as_deref())?;
    match cli.command {
        Command::Run => {
            let token = BotToken::from_env()?;
            crate::app::run(&config, cli.config.as_deref(), token).await
        }
        Command::Migrate => {
            let store = open(&config).await?;
            store.close().await;
            out(&format!("database {} is up to date", config.storage.database_url.redacted()))
        }
        Command::CheckConfig => {
            let token = match BotToken::locate() {
                Ok((token, source)) => format!("# bot token: from {source}, bot {}", token.bot_id()),
                Err(e) => format!("# bot token: none usable yet (docket run needs one): {e}"),
            };
            out(&effective(&config, cli.config.as_deref(), &token))?;
            out(&tool_availability(&config))
        }
        Command::Status { ticket, json } => {
            let store = open_existing(&config).await?;
            let job = store.job(ticket).await?;
            let runs = store.runs(job.as_ref().map_or(ticket, Job::ticket_number)).await?;
            store.close().await;
            let Some(job) = job else { anyhow::bail!("no such ticket: {ticket}") };
            if json {
                let mut json = job_json(&job);
                json["runs"] = runs.iter().map(run_json).collect();
                out(&json.to_string())
            } else {
                out(&status_text(&job, &runs))
            }
        }
        Command::Retry { ticket } => {
            let store = open_existing(&config).await?;
            let done = retry(&store, ticket).await;
            store.close().await;
            out(&done?)
        }
        Command::Cancel { ticket } => {
            let store = open_existing(&config).await?;
            let done = cancel(&store, ticket).await;
            store.close().await;
            out(&done?)
        }
        Command::Jobs { state, since, limit, json } => {
            let store = open_existing(&config).await?;
            let since = since.map(|age| SystemClock.now().minus(age));
            let jobs = store.jobs(&JobFilter { chat: None, state, since, limit: limit.max(1) }).await?;
            store.close().await;
            let lines: Vec<String> = if json {
                jobs.iter().map(|j| job_json(j).to_string()).collect()
            } else {
                jobs.iter()
                    .map(|j| {
                        format!(
                            "{:>8}  {:<10}  {:>10}  {}",
                            j.ticket,
                            j.state,
                            size_of(j.submission.declared_size),
                            texts::display_name(Lang::ENGLISH, j.name())
                        )
                    })
                    .collect()
            };
            out(&lines.join("\n"))
        }
        Command::Nodes { json } => {
            let store = open_existing(&config).await?;
            let nodes = store.nodes().await;
            store.close().await;
            out(&nodes_text(&nodes?, SystemClock.now(), config.node.dead_after, json))
        }
        Command::Drain { name, no_wait } => {
            let store = open_existing(&config).await?;
            let done = drain(&store, &name, !no_wait).await;
            store.close().await;
            out(&done?)
        }
        Command::Janitor { dry_run } => janitor(&config, dry_run).await,
        Command::Process { file, op, output, lang, .. } => process(&config, file, &op.join(" "), output, lang).await,
    }
}

/// How long `docket drain` waits for the node to stop: its heartbeat, its grace period and its
/// senders' last deliveries take far less with any sane configuration.
const DRAIN_WAIT: std::time::Duration = std::time::Duration::from_secs(600);

/// `docket drain NAME`.
async fn drain(store: &Store, name: &str, wait: bool) -> anyhow::Result<String> {
    let Some(name) = NodeName::new(name) else { anyhow::bail!("{name:?} is not a node name") };
    let find =
        async || -> anyhow::Result<Option<Node>> { Ok(store.nodes().await?.into_iter().find(|n| n.beat.name == name)) };
    if !store.request_drain(&name, SystemClock.now()).await? {
        match find().await? {
            None => anyhow::bail!("no node is named {name} (docket nodes lists them)"),
            Some(node) if node.stopped_at.is_some() => return Ok(format!("{name} is stopped already")),
            // Asked before: wait for the stop all the same.
            Some(_) => {}
        }
    }
    if !wait {
        return Ok(format!("asked {name} to drain; docket nodes shows it stopped when it is done"));
    }
    let deadline = tokio::time::Instant::now() + DRAIN_WAIT;
    loop {
        if let Some(at) = find().await?.and_then(|node| node.stopped_at) {
            return Ok(format!("{name} drained and stopped at {at}"));
        }
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "{name} was asked to drain but has not stopped after {} s; docket nodes shows its heartbeat",
            DRAIN_WAIT.as_secs()
        );
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
}

/// `docket retry N`.
async fn retry(store: &Store, ticket: Ticket) -> anyhow::Result<String> {
    let Some(job) = store.job(ticket).await? else { anyhow::bail!("no such ticket: {ticket}") };
    if job.state != JobState::Failed {
        anyhow::bail!("{ticket} is {}, not failed; only a failed job can be retried", job.state);
    }
    if matches!(&job.submission.operation, Operation::Decrypt { password } if password.is_empty()) {
        anyhow::bail!(
            "{ticket} is a decrypt, and its password was erased when it ended (docket keeps none): \
             the person must send the file again with `decrypt PASSWORD`"
        );
    }
    let now = SystemClock.now();
    let notice = NewMessage {
        // One notice per retry: the job's last change (its failure) tells it from an earlier one.
        idempotency_key: IdempotencyKey::retried(ticket, job.updated_at),
        job: Some(ticket),
        chat: job.submission.chat,
        kind: MessageKind::Reply,
        body: texts::retrying_for_admin(
            Lang::from_stored(store.chat_language(job.submission.chat).await?.as_deref()),
            &job,
        ),
        reply_to_message_id: Some(job.submission.message_id),
        buttons: Vec::new(),
    };
    if !store.retry_job(ticket, &notice, now).await? {
        anyhow::bail!("{ticket} changed meanwhile; it is not failed any more");
    }
    Ok(format!("{ticket} is back in the queue (accepted)"))
}

/// `docket cancel N`.
async fn cancel(store: &Store, ticket: Ticket) -> anyhow::Result<String> {
    let mut tx = store.begin().await?;
    let Some(job) = tx.job(ticket).await? else { anyhow::bail!("no such ticket: {ticket}") };
    if job.state.is_terminal() {
        anyhow::bail!("{ticket} is {} already; only a job that is not ready yet can be cancelled", job.state);
    }
    let now = SystemClock.now();
    if !crate::intake::cancel_job(&mut tx, &job, "cancelled by an admin (docket cancel)", now).await? {
        anyhow::bail!("{ticket} changed meanwhile; try again");
    }
    let notice = NewMessage {
        idempotency_key: IdempotencyKey::cancelled_by_admin(ticket, job.updated_at),
        job: Some(ticket),
        chat: job.submission.chat,
        kind: MessageKind::Reply,
        body: texts::cancelled(Lang::from_stored(tx.chat_language(job.submission.chat).await?.as_deref()), &job),
        reply_to_message_id: Some(job.submission.message_id),
        buttons: Vec::new(),
    };
    tx.enqueue(&notice, now).await?;
    tx.commit().await?;
    Ok(format!("{ticket} is cancelled (it was {})", job.state))
}

async fn open(config: &Config) -> anyhow::Result<Store> {
    Store::open(&config.storage.database_url)
        .await
        .with_context(|| format!("while opening {}", config.storage.database_url.redacted()))
}

/// Opens the bot's database for the admin commands: it must exist and hold docket's schema;
/// nothing is created or migrated.
async fn open_existing(config: &Config) -> anyhow::Result<Store> {
    Ok(Store::open_existing(&config.storage.database_url).await?)
}

async fn janitor(config: &Config, dry_run: bool) -> anyhow::Result<()> {
    // Never on a database that is not there: against an empty one every file would look like
    // an orphan.
    let store = open_existing(config).await?;
    let deps = JanitorDeps {
        store: store.clone(),
        clock: Arc::new(SystemClock),
        spool: Spool::open(&config.storage.data_dir)?,
        settings: crate::runtime::Live::new(JanitorSettings::from_config(config)),
        outbox: Arc::new(Notify::new()),
    };
    let report = crate::janitor::pass(&deps, dry_run).await?;
    store.close().await;
    let verb = if dry_run { "would delete" } else { "deleted" };
    let mut lines: Vec<String> = report
        .removed
        .iter()
        .map(|r| format!("{verb} {} ({}): {}", r.path.display(), texts::size(Lang::ENGLISH, r.bytes), r.cause.as_str()))
        .collect();
    let tickets: Vec<String> = report.expired_jobs.iter().map(ToString::to_string).collect();
    lines.push(format!(
        "{}: {} files, {}; {} results expired{}; kept {} files under a live lease; {} pruned {} update ids, {} messages, {} jobs",
        if dry_run { "dry run" } else { "done" },
        report.removed.len(),
        texts::size(Lang::ENGLISH, report.removed_bytes()),
        report.expired_jobs.len(),
        if tickets.is_empty() { String::new() } else { format!(" ({})", tickets.join(", ")) },
        report.kept_leased,
        if dry_run { "would have" } else { "" },
        report.pruned.updates,
        report.pruned.messages,
        report.pruned.jobs,
    ));
    out(&lines.join("\n"))
}

/// `docket process FILE --op NAME -o OUT`: the operation, contained as the bot runs it.
///
/// `--op decrypt PASSWORD` takes the password from the command line (an admin's own file), or,
/// when none is written there, from the `DOCKET_PASSWORD` environment variable, which keeps it
/// out of the shell's history and the process list. Either way the child gets it on its stdin.
/// `--op info` prints the facts instead of sizes.
async fn process(config: &Config, file: PathBuf, op: &str, output: PathBuf, lang: String) -> anyhow::Result<()> {
    let work = match work_named(config, op)? {
        Work::Builtin(Operation::Decrypt { password }) if password.is_empty() => {
            let password = std::env::var("DOCKET_PASSWORD")
                .context("decrypt needs a password: `--op decrypt PASSWORD`, or DOCKET_PASSWORD in the environment")?;
            Work::Builtin(Operation::Decrypt { password: crate::domain::Password::new(password) })
        }
        work => work,
    };
    let format = crate::detect::detect_path(&file).with_context(|| format!("while reading {}", file.display()))?;
    let accepts: Vec<&str> = match &work {
        Work::Builtin(operation) => operation.accepts().to_vec(),
        Work::Tool(tool) => tool.accepts.iter().map(String::as_str).collect(),
        Work::Office(_) => operations::office::FORMATS.to_vec(),
    };
    if !accepts.contains(&format.label()) {
        anyhow::bail!(
            "{} takes {}, and {} is none of them (the content looks like {})",
            work.name(),
            accepts.join(", "),
            file.display(),
            format.describe()
        );
    }
    let soffice = &config.processing.soffice;
    let Some(work) = work.for_content(format.label(), operations::Office::available(soffice).as_ref()) else {
        match operations::Office::find(soffice) {
            Availability::Unavailable(why) => anyhow::bail!("{why}"),
            Availability::Available(_) => anyhow::bail!("LibreOffice ({soffice}) vanished while docket looked"),
        }
    };
    // The run's temporary files go beside its output, the one folder it may write to.
    let output_dir = output.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
    let scratch = tempfile::Builder::new()
        .prefix(".docket-scratch-")
        .tempdir_in(output_dir)
        .with_context(|| format!("while creating a temporary folder in {}", output_dir.display()))?;
    let request = Request {
        limits: work.limits(Limits::from(&config.processing)),
        password: work.password(),
        work,
        input: file.clone(),
        output: output.clone(),
        lang,
        // An admin's own run: the lines it writes into a result are in English.
        texts_lang: texts::Lang::ENGLISH,
        shrink: operations::ShrinkSettings::from(&config.processing),
        scratch: Some(scratch.path().to_owned()),
    };
    let program = operations::this_binary();
    let outcome = operations::run_contained(&program, &request).await.context("while starting the operation")?;
    let name = file.display().to_string();
    let reason = match outcome {
        Outcome::Reported(Report::Done { .. }) if matches!(&request.work, Work::Builtin(operation) if operation.output() == Output::Message) =>
        {
            let json = std::fs::read(&output).with_context(|| format!("while reading {}", output.display()))?;
            let info: DocumentInfo = serde_json::from_slice(&json).context("while reading the facts")?;
            return out(&texts::document_info(texts::Lang::ENGLISH, &info));
        }
        Outcome::Reported(Report::Done { output_bytes, pages, .. }) => {
            let input_bytes = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
            let pages = pages.map(|p| format!("{p} pages, ")).unwrap_or_default();
            return out(&format!(
                "{} → {}: {pages}{} → {}",
                file.display(),
                output.display(),
                texts::size(Lang::ENGLISH, input_bytes),
                texts::size(Lang::ENGLISH, output_bytes)
            ));
        }
        Outcome::Reported(Report::Failed { failure: Failure::FileTooBig { limit }, .. }) => {
            FailureReason::WroteTooMuch { limit }
        }
        Outcome::Reported(Report::Failed { failure, detail }) => match failure.reason(&request.work) {
            Some(reason) => reason,
            None => anyhow::bail!("{} failed: {detail}", request.work.name()),
        },
        Outcome::OutOfMemory { limit } => FailureReason::NeedsTooMuchMemory { limit },
        Outcome::FileTooBig { limit } | Outcome::WroteTooMuch { limit } => FailureReason::WroteTooMuch { limit },
        Outcome::TimedOut { limit } => FailureReason::TookTooLong { limit },
        Outcome::Crashed { .. } => FailureReason::Crashed,
        Outcome::KilledFromOutside { detail } => anyhow::bail!("{} was stopped: {detail}", request.work.name()),
    };
    anyhow::bail!("{}", texts::failure_reason(Lang::ENGLISH, &name, &reason))
}

/// The operation `words` name: a built-in one with its arguments, or an available external
/// tool.
fn work_named(config: &Config, words: &str) -> anyhow::Result<Work> {
    let name = words.split_whitespace().next().unwrap_or_default();
    match Operation::parse(words) {
        Ok(Operation::Ocr { .. }) | Err(ParseError::Unknown(_)) => {}
        Ok(operation) => return Ok(Work::Builtin(operation)),
        Err(e) => anyhow::bail!("{e}"),
    }
    let Some(tool) = config.processing.external.get(name).map(|t| t.to_tool(name)) else {
        let mut known: Vec<String> =
            Operation::NAMES.iter().filter(|n| **n != "ocr").map(|n| (*n).to_owned()).collect();
        known.extend(config.processing.external.keys().cloned());
        anyhow::bail!("unknown operation {name:?}; this configuration has {}", known.join(", "));
    };
    match tool.availability() {
        Availability::Available(_) => Ok(Work::Tool(tool)),
        Availability::Unavailable(why) => anyhow::bail!("{why}"),
    }
}

/// Runs `docket process … --contained`, synchronously, and gives its result as `Err`; any other
/// command comes back as `Ok` to be run on the async runtime. The binary calls this before it
/// starts the runtime, so the child of a contained run has no runtime threads.
pub fn run_if_contained_child(cli: Cli) -> Result<Cli, anyhow::Result<()>> {
    match cli.command {
        Command::Process { contained: true, .. } => Err(contained_child(cli.command)),
        _ => Ok(cli),
    }
}

/// The child of a contained run (`--contained`): limit this process, run, print the report as
/// one JSON line. Fails (a non-zero exit) when the operation did, after the report.
fn contained_child(command: Command) -> anyhow::Result<()> {
    let Command::Process {
        file,
        op,
        output,
        lang,
        memory_limit,
        timeout_secs,
        texts_lang,
        max_inflate,
        max_file,
        threads,
        reach,
        shrink_dpi,
        jpeg_quality,
        tool,
        office,
        parent_pid,
        ..
    } = command
    else {
        unreachable!("called for `process --contained` only");
    };
    let op = op.join(" ");
    let work = if let Some(program) = office {
        Work::Office(operations::Office { program })
    } else if tool.is_empty() {
        match Operation::parse(&op).with_context(|| format!("operation {op:?} needs its command after `--`"))? {
            // The password comes on stdin, never on the command line (see `Request::password`).
            Operation::Decrypt { .. } => Work::Builtin(Operation::Decrypt {
                password: operations::child::read_password().context("while reading the password from stdin")?,
            }),
            operation => Work::Builtin(operation),
        }
    } else {
        let mut external = crate::config::ExternalToolConfig {
            command: tool,
            accepts: Vec::new(),
            output: String::new(),
            memory_limit: None,
            timeout: None,
            memory_factor: 1.0,
            reach,
        }
        .to_tool(&op);
        external.accepts.clear();
        Work::Tool(external)
    };
    let limits = Limits {
        memory: memory_limit.context("--memory-limit is required with --contained")?,
        timeout: std::time::Duration::from_secs(timeout_secs.context("--timeout-secs is required with --contained")?),
        max_inflate: max_inflate.context("--max-inflate is required with --contained")?,
        max_file: max_file.context("--max-file is required with --contained")?,
        // The parent watches what the run has on disk; the child only knows its file limit.
        disk: u64::MAX,
        threads: threads.unwrap_or_else(crate::config::workers::default_process),
    };
    let shrink = operations::ShrinkSettings { dpi: shrink_dpi, jpeg_quality };
    let texts_lang = texts_lang.as_deref().map_or(texts::Lang::ENGLISH, texts::Lang::from_code);
    let request =
        Request { work, input: file, output, lang, limits, password: None, shrink, texts_lang, scratch: None };
    let report = operations::child::run_here(&request, parent_pid);
    out(&serde_json::to_string(&report).context("while writing the report")?)?;
    match report {
        Report::Done { .. } => Ok(()),
        Report::Failed { detail, .. } => anyhow::bail!("{detail}"),
    }
}

/// Comment lines on whether each external tool can run here, for `check-config`.
fn tool_availability(config: &Config) -> String {
    let lines: Vec<String> = config
        .processing
        .tools()
        .iter()
        .map(|tool| match tool.availability() {
            Availability::Available(path) => {
                format!("# operation {:?}: available ({})", tool.name, path.display())
            }
            Availability::Unavailable(why) => format!("# {why}"),
        })
        .collect();
    let tools = if lines.is_empty() { "# no external operations configured".to_owned() } else { lines.join("\n") };
    let office = match operations::Office::find(&config.processing.soffice) {
        Availability::Available(path) => {
            format!("# office conversion (topdf): available, LibreOffice at {}", path.display())
        }
        Availability::Unavailable(why) => format!("# {why}"),
    };
    format!("{tools}\n{office}")
}

fn size_of(bytes: Option<i64>) -> String {
    bytes.map(|b| texts::size(Lang::ENGLISH, b.max(0) as u64)).unwrap_or_else(|| "?".to_owned())
}

/// What `docket status N` prints: the job, then every run of its ticket when it has more than
/// one (an operation asked again of the same document).
fn status_text(job: &Job, runs: &[Job]) -> String {
    let mut lines = vec![
        format!("ticket:     {}", job.ticket),
        format!("state:      {}", job.state),
        format!("chat:       {}", job.submission.chat.0),
        format!("name:       {}", texts::display_name(Lang::ENGLISH, job.name())),
        format!(
            "declared:   {} ({})",
            size_of(job.submission.declared_size),
            job.submission.declared_mime.as_deref().unwrap_or("no MIME")
        ),
        format!("attempts:   {}", job.attempts),
        format!("created:    {}", job.created_at),
        format!("updated:    {}", job.updated_at),
    ];
    let optional = [
        ("real size", job.source.as_ref().map(|s| size_of(Some(s.size)))),
        ("sha256", job.source.as_ref().map(|s| s.sha256.clone())),
        ("format", job.source.as_ref().and_then(|s| s.format.clone())),
        ("result", job.result.as_ref().map(|r| size_of(Some(r.size)))),
        ("expires", job.result.as_ref().map(|r| r.expires_at.to_string())),
        ("error", job.error.clone()),
        ("detail", job.error_detail.clone()),
        ("lease", job.lease.as_ref().map(|l| format!("{} until {}", l.owner, l.until))),
        // Which host's data folder holds the job's files (several hosts on one database).
        ("node", job.node.as_ref().map(|n| n.as_str().to_owned())),
    ];
    lines.extend(optional.into_iter().filter_map(|(k, v)| v.map(|v| format!("{:<11} {v}", format!("{k}:")))));
    if runs.len() > 1 {
        lines.push(format!("runs of ticket {}:", job.ticket_number()));
        for run in runs {
            let mark = if run.ticket == job.ticket { " (this one)" } else { "" };
            let node = run.node.as_ref().map(|n| format!(" on {n}")).unwrap_or_default();
            lines.push(format!("  {}  {:<10}  {}{node}{mark}", run.ticket, run.state, run.submission.operation));
        }
    }
    lines.join("\n")
}

/// One run as `docket status N --json` lists it under `runs`.
fn run_json(run: &Job) -> serde_json::Value {
    json!({
        "ticket": run.ticket.0,
        "state": run.state.as_str(),
        "operation": run.submission.operation.name(),
        "arguments": run.submission.operation.arguments(),
        "node": run.node.as_ref().map(NodeName::as_str),
    })
}

/// What `docket nodes` prints at `now`: a table, or JSON lines (stable field names).
pub fn nodes_text(nodes: &[Node], now: Timestamp, dead_after: std::time::Duration, json: bool) -> String {
    let roles = |node: &Node| if node.beat.roles.is_empty() { "-".to_owned() } else { node.beat.roles.join(",") };
    let mut lines = Vec::new();
    if !json {
        lines.push(format!(
            "{:<20}  {:<8}  {:<8}  {:>21}  {:>21}  {:>10}  process",
            "node", "status", "roles", "budget in use", "memory in use", "last seen"
        ));
    }
    for node in nodes {
        let status = node.status(now, dead_after).as_str();
        let seen = node.last_seen.until(now).as_secs();
        if json {
            lines.push(
                json!({
                    "node": node.beat.name.as_str(),
                    "status": status,
                    "roles": node.beat.roles,
                    "process": node.beat.process,
                    "bytes_reserved": node.beat.bytes.0,
                    "bytes_budget": node.beat.bytes.1,
                    "memory_reserved": node.beat.memory.0,
                    "memory_budget": node.beat.memory.1,
                    "started_at": node.started_at.rfc3339(),
                    "last_seen": node.last_seen.rfc3339(),
                    "stopped_at": node.stopped_at.map(Timestamp::rfc3339),
                })
                .to_string(),
            );
        } else {
            let share = |(used, total): (u64, u64)| {
                format!("{} / {}", texts::size(Lang::ENGLISH, used), texts::size(Lang::ENGLISH, total))
            };
            lines.push(format!(
                "{:<20}  {:<8}  {:<8}  {:>21}  {:>21}  {:>8} s  {}",
                node.beat.name.as_str(),
                status,
                roles(node),
                share(node.beat.bytes),
                share(node.beat.memory),
                seen,
                node.beat.process.trim_end_matches(':')
            ));
        }
    }
    lines.join("\n")
}

/// The `--json` form of a job, for scripts. Field names are stable.
pub fn job_json(job: &Job) -> serde_json::Value {
    json!({
        "ticket": job.ticket.0,
        "state": job.state.as_str(),
        "chat_id": job.submission.chat.0,
        "user_id": job.submission.user_id.map(|u| u.0),
        "declared_name": job.submission.declared_name,
        "declared_mime": job.submission.declared_mime,
        "size": job.submission.declared_size,
        "real_size": job.source.as_ref().map(|s| s.size),
        "sha256": job.source.as_ref().map(|s| &s.sha256),
        "detected_format": job.source.as_ref().and_then(|s| s.format.as_ref()),
        "operation": job.submission.operation.name(),
        "attempts": job.attempts,
        "error": job.error,
        "result_size": job.result.as_ref().map(|r| r.size),
        "result_expires_at": job.result.as_ref().map(|r| r.expires_at.rfc3339()),
        "node": job.node.as_ref().map(NodeName::as_str),
        "created_at": job.created_at.rfc3339(),
        "updated_at": job.updated_at.rfc3339(),
    })
}

/// What `check-config` prints: a comment saying the configuration is valid and where it came
/// from, `token` (a comment on where the bot token would come from, never the token), then the
/// whole effective configuration as TOML ([`Config::to_toml`]: every key, no password), which
/// can be saved and used as a config file.
fn effective(config: &Config, path: Option<&Path>, token: &str) -> String {
    let origin = path.map_or_else(|| "no file, built-in defaults".to_owned(), |p| p.display().to_string());
    format!("# configuration is valid ({origin}); the effective settings:\n{token}\n\n{}", config.to_toml().trim_end())
}

fn out(text: &str) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{text}").context("while writing to stdout")
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn verify_cli() {
        Cli::command().debug_assert();
    }

    #[test]
    fn status_lists_the_runs_of_a_ticket_with_more_than_one() {
        let at = Timestamp::from_millis(1_796_000_000_000);
        let first = Job { state: JobState::Ready, ..Job::accepted_for_tests(12, "scan.pdf", Some(1_000), at) };
        let mut pages = Job::accepted_for_tests(13, "scan.pdf", Some(1_000), at);
        pages.submission.run_of = Some(Ticket(12));
        pages.submission.operation = Operation::parse("pages 2-3").expect("an operation");
        pages.node = NodeName::new("docket-2");
        let runs = [first.clone(), pages.clone()];
        let text = status_text(&pages, &runs);
        assert!(text.contains("runs of ticket #12:"), "{text}");
        assert!(text.lines().any(|l| l.contains("#12") && l.contains("ready") && l.contains("optimize")), "{text}");
        assert!(text.lines().any(|l| l.contains("#13") && l.contains("pages 2-3 on docket-2 (this one)")), "{text}");
        assert!(!status_text(&first, &runs[..1]).contains("runs of ticket"), "one run: no list");
    }

    #[test]
    fn status_and_jobs_parse_their_options() {
        let cli = Cli::try_parse_from(["docket", "status", "#4812", "--json"]).expect("parses");
        assert!(matches!(cli.command, Command::Status { ticket: Ticket(4812), json: true }));
        let cli = Cli::try_parse_from(["docket", "jobs", "--state", "failed", "--limit", "3"]).expect("parses");
        assert!(matches!(
            cli.command,
            Command::Jobs { state: Some(JobState::Failed), since: None, limit: 3, json: false }
        ));
        let cli = Cli::try_parse_from(["docket", "jobs", "--state", "failed", "--since", "1d"]).expect("parses");
        assert!(matches!(cli.command, Command::Jobs { since: Some(d), .. } if d.as_secs() == 86_400));
        assert!(Cli::try_parse_from(["docket", "jobs", "--since", "yesterday"]).is_err());
        let cli = Cli::try_parse_from(["docket", "retry", "#12"]).expect("parses");
        assert!(matches!(cli.command, Command::Retry { ticket: Ticket(12) }));
        let cli = Cli::try_parse_from(["docket", "cancel", "12"]).expect("parses");
        assert!(matches!(cli.command, Command::Cancel { ticket: Ticket(12) }));
        assert!(Cli::try_parse_from(["docket", "jobs", "--state", "done"]).is_err());
    }
}
