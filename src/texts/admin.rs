//! What admins read: the `/stats` answer (and its refusal to others), the alert when a message
//! could not be delivered, and the notice to a person that an admin retried their ticket. The
//! catalog's section "For admins".

use super::catalog::{Lang, plain, render, s};
use super::values::{display_name, duration, run_label, size};
use crate::domain::{ChatRef, Job, OutboxId, Ticket, Timestamp};

/// The admins' alert when a message could not be delivered (one per hour at most).
pub fn delivery_alert(lang: Lang, message_id: OutboxId, chat_id: ChatRef, ticket: Option<Ticket>, why: &str) -> String {
    let mut args = vec![s("chat", chat_id.to_string()), s("message", message_id.to_string()), s("why", why)];
    match ticket {
        Some(ticket) => {
            args.push(s("ticket", ticket.to_string()));
            render(lang, "delivery-alert-about-ticket", &args)
        }
        None => render(lang, "delivery-alert", &args),
    }
}

/// The admins' message that host `node`'s data folder has only `free` bytes, below `[storage]
/// min_free` (once per episode).
pub fn data_folder_low_alert(lang: Lang, node: &str, free: u64, min_free: u64) -> String {
    render(
        lang,
        "data-folder-low-alert",
        &[s("node", node), s("free", size(lang, free)), s("min_free", size(lang, min_free))],
    )
}

/// The notice to a person that an admin sent their failed ticket back to the queue.
pub fn retrying_for_admin(lang: Lang, job: &Job) -> String {
    render(lang, "retrying-for-admin", &[s("ticket", run_label(job)), s("name", display_name(lang, job.name()))])
}

/// The answer to `/stats` for someone who is not an admin.
pub fn admins_only(lang: Lang) -> String {
    plain(lang, "admins-only")
}

/// The `/stats` answer for admins.
pub fn stats(lang: Lang, stats: &crate::domain::BotStats, budget: u64, now: Timestamp) -> String {
    let mut lines = vec![plain(lang, "stats-title")];
    let jobs: Vec<String> = stats.jobs.iter().map(|(state, n)| format!("{state} {n}")).collect();
    let jobs = if jobs.is_empty() { plain(lang, "stats-jobs-none") } else { jobs.join(", ") };
    lines.push(render(lang, "stats-jobs", &[s("jobs", jobs)]));
    lines.push(render(
        lang,
        "stats-budget",
        &[s("in-flight", size(lang, stats.bytes_in_flight)), s("budget", size(lang, budget))],
    ));
    lines.push(match stats.oldest_waiting {
        Some(since) => render(lang, "stats-oldest", &[s("for", duration(lang, since.until(now)))]),
        None => plain(lang, "stats-oldest-none"),
    });
    lines.push(render(lang, "stats-dead-chats", &[s("n", stats.dead_chats.to_string())]));
    lines.push(render(lang, "stats-flood-waits", &[s("n", stats.flood_waits_last_hour.to_string())]));
    let hosts = if stats.hosts.is_empty() { plain(lang, "stats-hosts-none") } else { stats.hosts.join(", ") };
    lines.push(render(lang, "stats-hosts", &[s("hosts", hosts)]));
    lines.join("\n")
}
