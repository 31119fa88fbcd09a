//! The command line: `docket run`, `migrate`, `check-config`, `status`, `jobs`, `retry`,
//! `cancel`, `janitor`, `process`.
//!
//! Every command reads the same configuration through [`Config::load`], so `check-config`
//! validates exactly what `run` would use. This file parses and dispatches; what a command does
//! is in `admin.rs` (drain, retry, cancel, janitor), `show.rs` (what status, jobs and nodes
//! print), `check.rs` (what check-config prints) and `process.rs` (an admin's own run). The
//! child of a contained run (`process --contained`) is [`crate::operations::run`]'s.

mod admin;
mod check;
mod process;
mod show;

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::{Parser, Subcommand};

use crate::config::{CONFIG_ENV, Config};
use crate::domain::{Clock as _, JobState, SystemClock, Ticket};
use crate::operations::run::{ProcessArgs, serve_child};
use crate::store::{JobFilter, Store};
use crate::telegram::BotToken;

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
    Process(ProcessArgs),
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
///
/// One arm per command, kept in one match: the dispatch reads as the command list.
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
            out(&check::effective(&config, cli.config.as_deref(), &token))?;
            out(&check::tool_availability(&config))
        }
        Command::Status { ticket, json } => {
            let store = open_existing(&config).await?;
            let job = store.job(ticket).await?;
            let runs = store.runs(job.as_ref().map_or(ticket, crate::domain::Job::ticket_number)).await?;
            store.close().await;
            let Some(job) = job else { anyhow::bail!("no such ticket: {ticket}") };
            out(&show::status(&job, &runs, json))
        }
        Command::Retry { ticket } => {
            let store = open_existing(&config).await?;
            let done = admin::retry(&store, ticket).await;
            store.close().await;
            out(&done?)
        }
        Command::Cancel { ticket } => {
            let store = open_existing(&config).await?;
            let done = admin::cancel(&store, ticket).await;
            store.close().await;
            out(&done?)
        }
        Command::Jobs { state, since, limit, json } => {
            let store = open_existing(&config).await?;
            let since = since.map(|age| SystemClock.now().minus(age));
            let jobs = store.jobs(&JobFilter { chat: None, state, since, limit: limit.max(1) }).await?;
            store.close().await;
            out(&show::jobs(&jobs, json))
        }
        Command::Nodes { json } => {
            let store = open_existing(&config).await?;
            let nodes = store.nodes().await;
            store.close().await;
            out(&show::nodes(&nodes?, SystemClock.now(), config.node.dead_after, json))
        }
        Command::Drain { name, no_wait } => {
            let store = open_existing(&config).await?;
            let done = admin::drain(&store, &name, !no_wait).await;
            store.close().await;
            out(&done?)
        }
        Command::Janitor { dry_run } => admin::janitor(&config, dry_run).await,
        Command::Process(args) => process::process(&config, args).await,
    }
}

/// Runs `docket process … --contained` ([`serve_child`]), synchronously, and gives its result
/// as `Err`; any other command comes back as `Ok` to be run on the async runtime. The binary
/// calls this before it starts the runtime, so the child of a contained run has no runtime
/// threads.
pub fn run_if_contained_child(cli: Cli) -> Result<Cli, anyhow::Result<()>> {
    match cli.command {
        Command::Process(args) if args.contained => Err(serve_child(args)),
        command => Ok(Cli { command, ..cli }),
    }
}

/// Opens (creating or migrating) the bot's database, for `docket migrate`.
async fn open(config: &Config) -> anyhow::Result<Store> {
    Store::open(&config.storage.database_url)
        .await
        .with_context(|| format!("while opening {}", config.storage.database_url.redacted()))
}

/// Opens the bot's database for the admin commands: it must exist and hold docket's schema;
/// nothing is created or migrated.
pub(super) async fn open_existing(config: &Config) -> anyhow::Result<Store> {
    Ok(Store::open_existing(&config.storage.database_url).await?)
}

/// Prints one answer on stdout.
pub(super) fn out(text: &str) -> anyhow::Result<()> {
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
