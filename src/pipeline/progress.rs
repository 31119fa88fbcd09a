//! The status message's edits a stage queues: its steps, the place in line, a download's bytes.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tracing::warn;

use super::download::Received;
use super::{PipelineDeps, outcome};
use crate::domain::{Job, Timestamp};
use crate::texts::{Lang, Progress};

/// How often a running download updates its status message. Telegram allows about one message
/// a second per chat, and every other job of the chat shares that.
const PROGRESS_EVERY: Duration = Duration::from_secs(3);

/// Queues a progress edit for a state reached at `at`. Best effort: the next state supersedes a
/// lost one, and a report that arrives after a newer state's (workers race) is dropped.
pub(super) async fn report(deps: &PipelineDeps, job: &Job, step: &Progress, at: Timestamp) {
    match deps.store.enqueue(&outcome::progress_edit(chat_lang(deps, job).await, job, step), at).await {
        Ok(true) => deps.wake.outbox.notify_waiters(),
        Ok(false) => {}
        Err(e) => warn!(error = %e, "could not queue a progress edit"),
    }
}

/// Shows the waiting jobs at [`outcome::REPORTED_POSITIONS`] their new place in line (as of
/// `at`, when the queue moved). An edit whose text the status message shows already is not
/// queued again. Best effort, like every progress edit.
pub(super) async fn report_queue(deps: PipelineDeps, at: Timestamp) {
    let deepest = outcome::REPORTED_POSITIONS.last().copied().unwrap_or(0);
    let head = match deps.store.queue_head(at, i64::try_from(deepest).unwrap_or(i64::MAX)).await {
        Ok(head) => head,
        Err(e) => {
            warn!(error = %e, "could not read the queue to show positions");
            return;
        }
    };
    for (index, job) in head.iter().enumerate() {
        let position = index as u64 + 1;
        if !outcome::reports_position(position) {
            continue;
        }
        let edit = outcome::progress_edit(chat_lang(&deps, job).await, job, &Progress::Queued { position });
        let shown = match deps.store.messages(&crate::store::MessageFilter::job(job.ticket)).await {
            Ok(messages) => messages.iter().any(|m| m.idempotency_key == edit.idempotency_key && m.body == edit.body),
            Err(_) => false,
        };
        if !shown {
            report(&deps, job, &Progress::Queued { position }, at).await;
        }
    }
}

/// Reports a running download's bytes and, for a ticket of several files, the file it is at
/// (`received`, kept by the download stage) every [`PROGRESS_EVERY`].
pub(super) async fn report_download(deps: PipelineDeps, job: Job, received: Arc<Received>) {
    let total = job.submission.declared_size.and_then(|s| u64::try_from(s).ok());
    let mut last = 0;
    loop {
        tokio::time::sleep(PROGRESS_EVERY).await;
        let done = received.bytes.load(Ordering::Relaxed);
        if done != last {
            last = done;
            let step = Progress::Downloading { done, total, part: received.part() };
            report(&deps, &job, &step, deps.clock.now()).await;
        }
    }
}

/// The language `job`'s chat is written to in, read when a message is queued (the outbox keeps
/// text). A store that cannot say gets English: the message matters more than its language.
pub(super) async fn chat_lang(deps: &PipelineDeps, job: &Job) -> Lang {
    match deps.store.chat_lang(job.submission.chat).await {
        Ok(lang) => lang,
        Err(e) => {
            warn!(error = %e, "could not read the chat's language; writing in English");
            Lang::ENGLISH
        }
    }
}
