//! What `docket status`, `jobs` and `nodes` print: text for people, or JSON with stable field
//! names for scripts.

use serde_json::json;

use crate::domain::{Job, Node, NodeName, Timestamp};
use crate::texts::{self, Lang};

/// What `docket status N` prints for `job` and the `runs` of its ticket.
pub(super) fn status(job: &Job, runs: &[Job], json: bool) -> String {
    if json {
        let mut json = job_json(job);
        json["runs"] = runs.iter().map(run_json).collect();
        json.to_string()
    } else {
        status_text(job, runs)
    }
}

/// What `docket jobs` prints: one line per job, or one JSON object per line.
pub(super) fn jobs(jobs: &[Job], json: bool) -> String {
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
    lines.join("\n")
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
pub(super) fn nodes(nodes: &[Node], now: Timestamp, dead_after: std::time::Duration, json: bool) -> String {
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
fn job_json(job: &Job) -> serde_json::Value {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::operation::Operation;
    use crate::domain::{JobState, Ticket};

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
}
