//! What the admin commands that change things do: `docket drain`, `retry`, `cancel` and
//! `janitor`. Each is safe beside a running bot: it changes the database as the bot would, in
//! one transaction, and queues what the person is told through the outbox.

use std::sync::Arc;

use tokio::sync::Notify;

use super::{open_existing, out};
use crate::config::Config;
use crate::domain::operation::Operation;
use crate::domain::{
    Clock as _, IdempotencyKey, JobState, MessageKind, NewMessage, Node, NodeName, SystemClock, Ticket,
};
use crate::janitor::{JanitorDeps, JanitorSettings};
use crate::spool::Spool;
use crate::store::Store;
use crate::texts::{self, Lang};

/// How long `docket drain` waits for the node to stop: its heartbeat, its grace period and its
/// senders' last deliveries take far less with any sane configuration.
const DRAIN_WAIT: std::time::Duration = std::time::Duration::from_secs(600);

/// `docket drain NAME`.
pub(super) async fn drain(store: &Store, name: &str, wait: bool) -> anyhow::Result<String> {
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
pub(super) async fn retry(store: &Store, ticket: Ticket) -> anyhow::Result<String> {
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
    let body = texts::retrying_for_admin(store.chat_lang(job.submission.chat).await?, &job);
    // One notice per retry: the job's last change (its failure) tells it from an earlier one.
    let notice = NewMessage::about_job(&job, IdempotencyKey::retried(ticket, job.updated_at), MessageKind::Reply, body);
    if !store.retry_job(ticket, &notice, now).await? {
        anyhow::bail!("{ticket} changed meanwhile; it is not failed any more");
    }
    Ok(format!("{ticket} is back in the queue (accepted)"))
}

/// `docket cancel N`.
pub(super) async fn cancel(store: &Store, ticket: Ticket) -> anyhow::Result<String> {
    let mut tx = store.begin().await?;
    let Some(job) = tx.job(ticket).await? else { anyhow::bail!("no such ticket: {ticket}") };
    if job.state.is_terminal() {
        anyhow::bail!("{ticket} is {} already; only a job that is not ready yet can be cancelled", job.state);
    }
    let now = SystemClock.now();
    if !crate::intake::cancel_job(&mut tx, &job, "cancelled by an admin (docket cancel)", now).await? {
        anyhow::bail!("{ticket} changed meanwhile; try again");
    }
    let body = texts::cancelled(tx.chat_lang(job.submission.chat).await?, &job);
    let key = IdempotencyKey::cancelled_by_admin(ticket, job.updated_at);
    let notice = NewMessage::about_job(&job, key, MessageKind::Reply, body);
    tx.enqueue(&notice, now).await?;
    tx.commit().await?;
    Ok(format!("{ticket} is cancelled (it was {})", job.state))
}

/// `docket janitor [--dry-run]`: one janitor pass, and what it deleted (or would delete).
pub(super) async fn janitor(config: &Config, dry_run: bool) -> anyhow::Result<()> {
    // Never on a database that is not there: against an empty one every file would look like
    // an orphan.
    let store = open_existing(config).await?;
    let deps = JanitorDeps {
        store: store.clone(),
        clock: Arc::new(SystemClock),
        spool: Spool::open(&config.storage.data_dir)?,
        settings: crate::runtime::Live::new(JanitorSettings::from_config(config)),
        outbox: Arc::new(Notify::new()),
        // One pass, never the watch between passes: it tells no one.
        node: config.node.name.as_ref().map_or_else(String::new, |name| name.as_str().to_owned()),
        disk: Arc::new(crate::janitor::DiskWatch::default()),
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
