//! The queue: claims by due time and `not_before`, the download limits of size and chat, the
//! processing claim's order, releases and their attempts, and which jobs hold files.

use std::time::Duration;

use super::{
    CHAT, LEASE, OTHER_CHAT, T0, at, claim, claim_message, completion, enqueue, insert, job, message, new_job,
    processing_job, raw,
};
use crate::domain::{ChatRef, JobEvent, JobState, MessageKind, Submission, Timestamp};
use crate::store::{AttemptRule, ClaimLimits, Release, Stage, Store};

conformance!(
    claims_respect_not_before,
    a_lapsed_processing_job_is_resumed_before_fetched_ones,
    downloads_respect_size_and_per_chat_limits,
    the_queue_is_ordered_by_when_jobs_became_due,
    releases_refund_or_count_attempts_and_count_lost_sources,
    a_failed_job_points_at_no_source,
    the_jobs_holding_files_are_in_flight_or_leased_by_this_process,
    waiting_jobs_per_chat_leave_out_downloads,
    a_ticket_still_gathering_files_is_not_in_the_queues_head_and_failing_ends_its_gathering,
);

async fn claims_respect_not_before(store: Store) {
    let ticket = insert(&store, &new_job(CHAT, 1), T0).await;
    let (_, lease) = claim(&store, Stage::Download, "d", T0).await;
    assert!(store.mark_fetched(ticket, &lease, "/spool/1.pdf", 10, "ff", T0).await.unwrap());
    let (_, lease) = claim(&store, Stage::Process, "p", T0).await;

    // A retry keeps the source and waits until not_before.
    let retry = Release {
        from: JobState::Processing,
        event: JobEvent::RetryLater,
        not_before: at(30_000),
        detail: Some("timeout".into()),
        attempts: AttemptRule::Spent,
    };
    assert!(store.release_job(ticket, &lease, &retry, at(1)).await.unwrap());
    let waiting = job(&store, ticket).await;
    assert_eq!((waiting.state, waiting.not_before, waiting.attempts), (JobState::Fetched, at(30_000), 1));
    assert_eq!(
        (waiting.source_path(), waiting.error_detail.as_deref(), waiting.lease.as_ref()),
        (Some("/spool/1.pdf"), Some("timeout"), None)
    );
    assert!(store.claim_job(Stage::Process, "p", at(29_999), LEASE).await.unwrap().is_none());
    let (again, lease) = claim(&store, Stage::Process, "p", at(30_000)).await;
    assert_eq!((again.ticket, again.attempts), (ticket, 2));

    // A lost source goes back to download: path dropped, attempts restarted, detail kept.
    let lost = Release {
        from: JobState::Processing,
        event: JobEvent::SourceLost,
        not_before: at(60_000),
        detail: None,
        attempts: AttemptRule::Restarted,
    };
    assert!(store.release_job(ticket, &lease, &lost, at(30_001)).await.unwrap());
    let back = job(&store, ticket).await;
    assert_eq!((back.state, back.source_path(), back.attempts), (JobState::Accepted, None, 0));
    assert_eq!(back.error_detail.as_deref(), Some("timeout"), "no new detail keeps the old one");
    assert!(store.claim_job(Stage::Download, "d", at(59_999), LEASE).await.unwrap().is_none());
    assert!(store.claim_job(Stage::Process, "p", at(60_000), LEASE).await.unwrap().is_none(), "not a process job");
    let (claimed, _) = claim(&store, Stage::Download, "d", at(60_000)).await;
    assert_eq!((claimed.ticket, claimed.attempts), (ticket, 1));

    // A job not yet due is passed over for a later one that is; a retried message waits too.
    let late = insert(&store, &new_job(CHAT, 2), at(60_001)).await;
    let early = insert(&store, &new_job(CHAT, 3), at(60_002)).await;
    assert!(raw(&store, "UPDATE jobs SET not_before = 1900000000000 WHERE id = $1", late.0).await.is_ok());
    let (first, _) = claim(&store, Stage::Download, "d", at(60_003)).await;
    assert_eq!(first.ticket, early);
    assert!(store.claim_job(Stage::Download, "d", at(60_003), LEASE).await.unwrap().is_none());
    assert!(enqueue(&store, &message("m", CHAT, MessageKind::Reply, None), T0).await);
    let (m, mlease) = claim_message(&store, "s", T0).await;
    assert!(store.retry_message(m.id, &mlease, at(5_000), "flood", T0).await.unwrap());
    assert!(store.claim_message("s", at(4_999), LEASE).await.unwrap().is_none());
    assert_eq!(claim_message(&store, "s", at(5_000)).await.0.id, m.id);
}

async fn a_lapsed_processing_job_is_resumed_before_fetched_ones(store: Store) {
    let (stuck, lease) = processing_job(&store, 1, T0).await;
    // A newer job waits in `fetched`, and is due earlier than the stuck one's lease ends.
    let waiting = insert(&store, &new_job(CHAT, 2), at(1)).await;
    let (_, dl) = claim(&store, Stage::Download, "downloader", at(1)).await;
    assert!(store.mark_fetched(waiting, &dl, "/spool/2.pdf", 10, "ff", at(1)).await.unwrap());

    let lapsed = T0.plus(LEASE);
    let (first, resumed) = claim(&store, Stage::Process, "p2", lapsed).await;
    assert_eq!((first.ticket, first.state, first.attempts), (stuck, JobState::Processing, 2));
    assert_eq!(resumed.token, lease.token + 1);
    let (second, _) = claim(&store, Stage::Process, "p3", lapsed).await;
    assert_eq!((second.ticket, second.state), (waiting, JobState::Processing));
    assert!(store.claim_job(Stage::Process, "p4", lapsed, LEASE).await.unwrap().is_none());
}

async fn downloads_respect_size_and_per_chat_limits(store: Store) {
    let limits = ClaimLimits { unknown_size: 5_000, max_size: 4_096, per_chat: 2 };
    let claim_dl = |owner: &'static str, now: Timestamp| {
        let store = store.clone();
        async move { store.claim_download(owner, now, LEASE, &limits).await.unwrap().map(|j| j.ticket) }
    };
    // CHAT: a job too big for the budget right now, then three that fit; OTHER_CHAT: one.
    let big = insert(&store, &new_job(CHAT, 9), T0).await; // 10 KiB declared
    let a1 = insert(&store, &new_job(CHAT, 1), at(1)).await;
    let a2 = insert(&store, &new_job(CHAT, 2), at(2)).await;
    let a3 = insert(&store, &new_job(CHAT, 3), at(3)).await;
    let unknown = Submission { declared_size: None, ..new_job(OTHER_CHAT, 4) };
    let unsized_job = insert(&store, &unknown, at(4)).await;
    let b1 = insert(&store, &new_job(OTHER_CHAT, 0), at(5)).await;

    assert_eq!(claim_dl("w1", at(10)).await, Some(a1), "the big one waits, without an attempt");
    assert_eq!(claim_dl("w2", at(10)).await, Some(a2));
    assert_eq!(claim_dl("w3", at(10)).await, Some(b1), "CHAT is at its bound; a job without a size is assumed too big");
    assert_eq!(claim_dl("w4", at(10)).await, None);
    assert_eq!(job(&store, big).await.attempts, 0);

    // One of CHAT's jobs moves on to `fetched`: it still holds its source, so the bound holds.
    let lease = job(&store, a1).await.lease.unwrap();
    assert!(store.mark_fetched(a1, &lease, "/spool/1.pdf", 10, "ff", at(11)).await.unwrap());
    assert_eq!(claim_dl("w5", at(12)).await, None);
    // Its processing ends: CHAT has room again.
    let (_, plase) = claim(&store, Stage::Process, "p", at(13)).await;
    let delivery = message("job:1:result", CHAT, MessageKind::Result, Some(a1));
    assert!(store.complete_job(a1, &plase, &completion(1), std::slice::from_ref(&delivery), at(14)).await.unwrap());
    assert_eq!(claim_dl("w6", at(15)).await, Some(a3));
    // A lapsed lease no longer counts against the chat.
    let wide = ClaimLimits { max_size: i64::MAX, ..limits };
    let after = at(15).plus(LEASE);
    let got = store.claim_download("w7", after, LEASE, &wide).await.unwrap().map(|j| j.ticket);
    assert_eq!(got, Some(big), "the oldest, now that it fits and CHAT's leases lapsed");
    assert_ne!(unsized_job, big);
}

async fn the_queue_is_ordered_by_when_jobs_became_due(store: Store) {
    // Job 1 arrives first, fails a getFile and waits 10 s; jobs 2 and 3 arrive meanwhile, job 4
    // after its delay ended. Due order: 2, 3 (arrived before job 1 became due again), 1, 4.
    let first = insert(&store, &new_job(CHAT, 1), at(0)).await;
    let (_, lease) = claim(&store, Stage::Download, "d", at(1)).await;
    let retry = Release {
        from: JobState::Accepted,
        event: JobEvent::RetryLater,
        not_before: at(10_000),
        detail: None,
        attempts: AttemptRule::Spent,
    };
    assert!(store.release_job(first, &lease, &retry, at(2)).await.unwrap());
    let second = insert(&store, &new_job(OTHER_CHAT, 2), at(3)).await;
    let third = insert(&store, &new_job(OTHER_CHAT, 3), at(9_000)).await;
    let fourth = insert(&store, &new_job(ChatRef(77), 4), at(10_001)).await;
    let mut order = Vec::new();
    for n in 0..4 {
        let (job, lease) = claim(&store, Stage::Download, "d", at(20_000 + n)).await;
        order.push(job.ticket);
        let detail = "done";
        assert!(
            store.fail_job(job.ticket, JobState::Accepted, Some(&lease), "x", detail, &[], at(20_000)).await.unwrap()
        );
    }
    assert_eq!(order, [second, third, first, fourth]);

    // A resubmitted job counts from its resubmission, not from its first arrival.
    let fifth = insert(&store, &new_job(ChatRef(78), 5), at(30_000)).await;
    let mut tx = store.begin().await.unwrap();
    assert!(tx.resubmit_job(first, JobState::Failed, &new_job(CHAT, 1), at(30_001)).await.unwrap());
    tx.commit().await.unwrap();
    let (next, _) = claim(&store, Stage::Download, "d", at(30_002)).await;
    assert_eq!(next.ticket, fifth, "the resubmitted job does not jump the queue");
    assert_eq!(job(&store, first).await.not_before, at(30_001));
}

async fn releases_refund_or_count_attempts_and_count_lost_sources(store: Store) {
    let ticket = insert(&store, &new_job(CHAT, 1), T0).await;
    let release = |attempts, event, from| Release { from, event, not_before: at(5), detail: None, attempts };
    let (claimed, lease) = claim(&store, Stage::Download, "d", at(1)).await;
    assert_eq!(claimed.attempts, 1);
    // A shutdown or a flood wait is not the job's fault: the claim's attempt is given back.
    let refund = release(AttemptRule::Refunded, JobEvent::RetryLater, JobState::Accepted);
    assert!(store.release_job(ticket, &lease, &refund, at(2)).await.unwrap());
    assert_eq!(job(&store, ticket).await.attempts, 0);
    let (_, lease) = claim(&store, Stage::Download, "d", at(5)).await;
    let spent = release(AttemptRule::Spent, JobEvent::RetryLater, JobState::Accepted);
    assert!(store.release_job(ticket, &lease, &spent, at(6)).await.unwrap());
    assert_eq!(job(&store, ticket).await.attempts, 1, "a failure of its own counts");

    // Each lost source is counted, across the restarted download attempts, until resubmission.
    for losses in 1..=2 {
        let (_, lease) = claim(&store, Stage::Download, "d", at(10 * losses)).await;
        assert!(store.mark_fetched(ticket, &lease, "/spool/1.source", 10, "ff", at(10 * losses)).await.unwrap());
        let (_, lease) = claim(&store, Stage::Process, "p", at(10 * losses + 1)).await;
        let lost = release(AttemptRule::Restarted, JobEvent::SourceLost, JobState::Processing);
        let lost = Release { not_before: at(10 * losses + 2), ..lost };
        assert!(store.release_job(ticket, &lease, &lost, at(10 * losses + 2)).await.unwrap());
        let back = job(&store, ticket).await;
        assert_eq!((back.state, back.attempts, back.source_losses), (JobState::Accepted, 0, losses));
    }
    let (_, lease) = claim(&store, Stage::Download, "d", at(100)).await;
    assert!(store.fail_job(ticket, JobState::Accepted, Some(&lease), "x", "y", &[], at(101)).await.unwrap());
    let mut tx = store.begin().await.unwrap();
    assert!(tx.resubmit_job(ticket, JobState::Failed, &new_job(CHAT, 1), at(102)).await.unwrap());
    tx.commit().await.unwrap();
    assert_eq!(job(&store, ticket).await.source_losses, 0, "a resubmission starts afresh");
}

async fn a_failed_job_points_at_no_source(store: Store) {
    let ticket = insert(&store, &new_job(CHAT, 1), T0).await;
    let (_, lease) = claim(&store, Stage::Download, "d", at(1)).await;
    assert!(store.mark_fetched(ticket, &lease, "/spool/1.source", 10, "ff", at(2)).await.unwrap());
    let (_, lease) = claim(&store, Stage::Process, "p", at(3)).await;
    assert!(store.fail_job(ticket, JobState::Processing, Some(&lease), "x", "y", &[], at(4)).await.unwrap());
    let failed = job(&store, ticket).await;
    assert_eq!(
        (failed.state, failed.source_path()),
        (JobState::Failed, None),
        "the source is deleted with the failure"
    );
}

async fn the_jobs_holding_files_are_in_flight_or_leased_by_this_process(store: Store) {
    // Claimed in ticket order: this process's live download, another process's, a download that
    // became `fetched`, one whose lease lapsed, one that failed; the last never claimed.
    let claims = [("h:1:download-0", LEASE), ("h:2:download-0", LEASE), ("h:1:download-1", LEASE)];
    let claims = claims.into_iter().chain([("h:1:download-0", Duration::from_millis(1)), ("h:1:download-1", LEASE)]);
    let mut tickets = Vec::new();
    for (n, (owner, lease_len)) in claims.enumerate() {
        let ticket = insert(&store, &new_job(CHAT, n as i64), T0).await;
        let job = store.claim_download(owner, T0, lease_len, &ClaimLimits::NONE).await.unwrap().expect("claimable");
        assert_eq!(job.ticket, ticket);
        let lease = job.lease.expect("leased");
        if n == 2 {
            assert!(store.mark_fetched(ticket, &lease, "/spool/3.source", 10, "ff", at(1)).await.unwrap());
        }
        if n == 4 {
            assert!(store.fail_job(ticket, JobState::Accepted, Some(&lease), "x", "y", &[], at(1)).await.unwrap());
        }
        tickets.push(ticket);
    }
    let _waiting = insert(&store, &new_job(CHAT, 9), T0).await;
    let mut holding = store.jobs_holding_files("h:1:", at(10)).await.unwrap();
    holding.sort();
    assert_eq!(holding, [tickets[0], tickets[2]], "this process's live downloads and every job with a source");
}

async fn waiting_in_chat(store: &Store, now: Timestamp, cap: u64) -> u64 {
    let mut tx = store.begin().await.unwrap();
    let n = tx.waiting_in_chat(CHAT, now, cap).await.unwrap();
    tx.commit().await.unwrap();
    n
}

async fn waiting_jobs_per_chat_leave_out_downloads(store: Store) {
    for n in 1..=3 {
        insert(&store, &new_job(CHAT, n), at(n)).await;
    }
    insert(&store, &new_job(OTHER_CHAT, 9), at(4)).await;
    assert_eq!(waiting_in_chat(&store, at(10), 100).await, 3, "another chat's job is not counted");
    assert_eq!(waiting_in_chat(&store, at(10), 2).await, 2, "counted up to the cap");

    // Downloading is no longer waiting; a download whose lease lapsed waits again.
    let (downloading, lease) = claim(&store, Stage::Download, "w", at(10)).await;
    assert_eq!(downloading.submission.chat, CHAT);
    assert_eq!(waiting_in_chat(&store, at(11), 100).await, 2);
    assert_eq!(waiting_in_chat(&store, at(10).plus(LEASE), 100).await, 3);
    // Downloaded: it has left the queue.
    assert!(store.mark_fetched(downloading.ticket, &lease, "/spool/1.pdf", 10, "ff", at(12)).await.unwrap());
    assert_eq!(waiting_in_chat(&store, at(10).plus(LEASE), 100).await, 2);
}

async fn a_ticket_still_gathering_files_is_not_in_the_queues_head_and_failing_ends_its_gathering(store: Store) {
    let single = insert(&store, &new_job(CHAT, 1), at(0)).await;
    let merge = insert(&store, &new_job(OTHER_CHAT, 2), at(1)).await;
    let mut tx = store.begin().await.unwrap();
    tx.start_merge(merge, at(2)).await.unwrap();
    tx.commit().await.unwrap();
    let head: Vec<_> = store.queue_head(at(10), 10).await.unwrap().into_iter().map(|j| j.ticket).collect();
    assert_eq!(head, [single], "an open merge has no place in line yet");

    assert!(store.fail_job(merge, JobState::Accepted, None, "dropped", "test", &[], at(20)).await.unwrap());
    let mut tx = store.begin().await.unwrap();
    assert!(tx.open_merge(OTHER_CHAT).await.unwrap().is_none(), "a failed merge is not the chat's open one");
    tx.commit().await.unwrap();
}
