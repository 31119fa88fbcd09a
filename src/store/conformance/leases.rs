//! Leases on jobs and messages: a claim is exclusive, a lapsed lease can be claimed again (with a
//! new token), a renewed one cannot, and a holder whose lease was taken over can no longer write.

use std::collections::BTreeSet;
use std::time::Duration;

use tokio::task::JoinSet;

use super::{CHAT, LEASE, T0, at, claim, claim_message, completion, enqueue, insert, job, message, new_job, tickets};
use crate::domain::MessageId;
use crate::domain::{ChatRef, Job, JobEvent, JobState, MessageKind, OutboxState, Timestamp};
use crate::store::MessageFilter;
use crate::store::{AttemptRule, Release, Stage, Store};

conformance!(
    exclusive_claims_under_concurrency,
    expired_leases_are_reclaimable_and_bump_the_token,
    a_renewed_lease_is_not_reclaimable,
    stale_owners_cannot_write,
);

/// Claims all jobs of `stage` with `workers` concurrent claimers, each until nothing is left.
async fn claim_concurrently(store: &Store, stage: Stage, workers: usize, now: Timestamp) -> Vec<Job> {
    let mut set = JoinSet::new();
    for w in 0..workers {
        let store = store.clone();
        set.spawn(async move {
            let owner = format!("worker-{w}");
            let mut got = Vec::new();
            while let Some(job) = store.claim_job(stage, &owner, now, LEASE).await.unwrap() {
                assert_eq!(job.lease.as_ref().map(|l| l.owner.as_str()), Some(owner.as_str()));
                got.push(job);
            }
            got
        });
    }
    let mut all = Vec::new();
    while let Some(got) = set.join_next().await {
        all.extend(got.unwrap());
    }
    all
}

async fn exclusive_claims_under_concurrency(store: Store) {
    let mut inserted = BTreeSet::new();
    for n in 0..20 {
        inserted.insert(insert(&store, &new_job(CHAT, n), T0).await);
    }

    let downloads = claim_concurrently(&store, Stage::Download, 8, T0).await;
    assert_eq!(downloads.len(), 20, "each job is claimed exactly once");
    assert_eq!(tickets(&downloads).into_iter().collect::<BTreeSet<_>>(), inserted);
    for j in &downloads {
        assert_eq!((j.state, j.attempts), (JobState::Accepted, 1));
        assert_eq!(j.lease.as_ref().map(|l| (l.token, l.until)), Some((1, T0.plus(LEASE))));
    }
    assert!(store.claim_job(Stage::Download, "late", T0, LEASE).await.unwrap().is_none());

    for j in &downloads {
        let lease = j.lease.as_ref().unwrap();
        assert!(store.mark_fetched(j.ticket, lease, "/spool/x", 1, "00", T0).await.unwrap());
    }
    let processing = claim_concurrently(&store, Stage::Process, 8, T0).await;
    assert_eq!(processing.len(), 20, "each fetched job is claimed exactly once");
    assert_eq!(tickets(&processing).into_iter().collect::<BTreeSet<_>>(), inserted);
    assert!(processing.iter().all(|j| j.state == JobState::Processing && j.lease.as_ref().unwrap().token == 2));

    // Outgoing messages: one per chat, so none waits for another.
    for n in 0..20 {
        assert!(enqueue(&store, &message(&format!("m{n}"), ChatRef(n), MessageKind::Reply, None), T0).await);
    }
    let mut set = JoinSet::new();
    for w in 0..8 {
        let store = store.clone();
        set.spawn(async move {
            let mut got = Vec::new();
            while let Some(m) = store.claim_message(&format!("sender-{w}"), T0, LEASE).await.unwrap() {
                got.push(m.id);
            }
            got
        });
    }
    let mut ids = Vec::new();
    while let Some(got) = set.join_next().await {
        ids.extend(got.unwrap());
    }
    assert_eq!(ids.len(), 20, "each message is claimed exactly once");
    assert_eq!(ids.iter().collect::<BTreeSet<_>>().len(), 20);
}

async fn expired_leases_are_reclaimable_and_bump_the_token(store: Store) {
    // Download stage.
    let ticket = insert(&store, &new_job(CHAT, 1), T0).await;
    let (first, lease_a) = claim(&store, Stage::Download, "a", T0).await;
    assert_eq!(first.ticket, ticket);
    assert_eq!((lease_a.owner.as_str(), lease_a.token, lease_a.until), ("a", 1, T0.plus(LEASE)));
    assert_eq!(first.attempts, 1);
    let just_before = T0.plus(LEASE).minus(Duration::from_millis(1));
    assert!(store.claim_job(Stage::Download, "b", just_before, LEASE).await.unwrap().is_none());
    let (second, lease_b) = claim(&store, Stage::Download, "b", T0.plus(LEASE)).await;
    assert_eq!(second.ticket, ticket);
    assert_eq!((lease_b.owner.as_str(), lease_b.token), ("b", 2));
    assert_eq!(lease_b.until, T0.plus(LEASE).plus(LEASE));
    assert_eq!(second.attempts, 2);

    // Process stage: a lapsed `processing` job is claimed again.
    let now = at(1_000_000);
    assert!(store.mark_fetched(ticket, &lease_b, "/spool/1.pdf", 10, "ff", now).await.unwrap());
    let (p1, lease_c) = claim(&store, Stage::Process, "c", now).await;
    assert_eq!((p1.state, lease_c.token, p1.attempts), (JobState::Processing, 3, 1));
    assert!(store.claim_job(Stage::Process, "d", now, LEASE).await.unwrap().is_none());
    let (p2, lease_d) = claim(&store, Stage::Process, "d", now.plus(LEASE)).await;
    assert_eq!((p2.ticket, p2.state, lease_d.token, p2.attempts), (ticket, JobState::Processing, 4, 2));
    assert_eq!(p2.source_path(), Some("/spool/1.pdf"));

    // Outbox: a lapsed `sending` row is not simply claimed again: its outcome is unknown, so it
    // becomes `unknown` first and the sender applies the kind's rule.
    assert!(enqueue(&store, &message("reply", CHAT, MessageKind::Reply, Some(ticket)), T0).await);
    let (m1, ml1) = claim_message(&store, "s1", T0).await;
    assert_eq!((m1.state, m1.attempts, ml1.token), (OutboxState::Sending, 1, 1));
    assert!(store.claim_message("s2", just_before, LEASE).await.unwrap().is_none());
    assert!(store.lapse_messages(just_before).await.unwrap().is_empty(), "the lease still holds");
    assert!(store.claim_message("s2", T0.plus(LEASE), LEASE).await.unwrap().is_none());
    let lapsed = store.lapse_messages(T0.plus(LEASE)).await.unwrap();
    assert_eq!(
        lapsed.iter().map(|m| (m.id, m.state, m.lease.is_none())).collect::<Vec<_>>(),
        [(m1.id, OutboxState::Unknown, true)]
    );
    assert!(store.lapse_messages(T0.plus(LEASE)).await.unwrap().is_empty(), "once");
    assert!(store.requeue_unknown(m1.id, T0.plus(LEASE), "sent again", T0.plus(LEASE)).await.unwrap());
    let (m2, ml2) = claim_message(&store, "s2", T0.plus(LEASE)).await;
    assert_eq!((m2.id, m2.attempts, ml2.token, ml2.owner.as_str()), (m1.id, 2, 2, "s2"));
    // The stale sender's late outcome changes nothing.
    assert!(!store.mark_message_sent(&m1, &ml1, MessageId(1), None, T0.plus(LEASE)).await.unwrap());
}

async fn a_renewed_lease_is_not_reclaimable(store: Store) {
    let ticket = insert(&store, &new_job(CHAT, 1), T0).await;
    let (_, lease) = claim(&store, Stage::Download, "a", T0).await;
    let later = T0.plus(LEASE).plus(LEASE);
    assert!(store.renew_job_lease(ticket, &lease, later, at(30_000)).await.unwrap());
    let renewed = job(&store, ticket).await;
    assert_eq!(renewed.lease.as_ref().map(|l| (l.token, l.until)), Some((1, later)));
    assert_eq!(renewed.updated_at, at(30_000));
    assert!(store.claim_job(Stage::Download, "b", T0.plus(LEASE), LEASE).await.unwrap().is_none());
    let (again, lease_b) = claim(&store, Stage::Download, "b", later).await;
    assert_eq!((again.ticket, lease_b.token), (ticket, 2));
    // A released job holds no lease any more, so nothing renews it.
    assert!(store.mark_fetched(ticket, &lease_b, "/p", 1, "00", later).await.unwrap());
    assert!(!store.renew_job_lease(ticket, &lease_b, later.plus(LEASE), later).await.unwrap());

    // The same for a sender's lease on a message (long uploads).
    assert!(enqueue(&store, &message("m", CHAT, MessageKind::Reply, Some(ticket)), T0).await);
    let (m, mlease) = claim_message(&store, "s1", T0).await;
    assert!(store.renew_message_lease(m.id, &mlease, later, at(30_000)).await.unwrap());
    assert_eq!(store.messages(&MessageFilter::ALL).await.unwrap()[0].lease.as_ref().map(|l| l.until), Some(later));
    assert!(store.claim_message("s2", T0.plus(LEASE), LEASE).await.unwrap().is_none());
    assert!(store.lapse_messages(T0.plus(LEASE)).await.unwrap().is_empty(), "renewed, so not lapsed");
    assert_eq!(store.lapse_messages(later).await.unwrap().len(), 1);
    assert!(store.requeue_unknown(m.id, later, "sent again", later).await.unwrap());
    let (again, mlease_b) = claim_message(&store, "s2", later).await;
    assert_eq!((again.id, mlease_b.token), (m.id, 2));
    assert!(!store.renew_message_lease(m.id, &mlease, later.plus(LEASE), later).await.unwrap(), "stale");
    assert!(store.retry_message(m.id, &mlease_b, later, "later", later).await.unwrap());
    assert!(!store.renew_message_lease(m.id, &mlease_b, later.plus(LEASE), later).await.unwrap(), "given back");
}

async fn stale_owners_cannot_write(store: Store) {
    // Download: a's lease lapses, b re-claims; a can no longer move the job.
    let ticket = insert(&store, &new_job(CHAT, 1), T0).await;
    let (_, stale) = claim(&store, Stage::Download, "a", T0).await;
    let (_, fresh) = claim(&store, Stage::Download, "b", T0.plus(LEASE)).await;
    let now = at(100_000);
    assert!(!store.mark_fetched(ticket, &stale, "/spool/a", 1, "aa", now).await.unwrap());
    assert!(!store.renew_job_lease(ticket, &stale, now.plus(LEASE), now).await.unwrap());
    let notice = message("job:1:failure", CHAT, MessageKind::Failure, Some(ticket));
    assert!(
        !store
            .fail_job(ticket, JobState::Accepted, Some(&stale), "no", "stale", std::slice::from_ref(&notice), now)
            .await
            .unwrap()
    );
    assert!(
        store.messages(&MessageFilter::job(ticket)).await.unwrap().is_empty(),
        "a refused failure queues no notice"
    );
    let held = job(&store, ticket).await;
    assert_eq!((held.state, held.lease.as_ref()), (JobState::Accepted, Some(&fresh)));
    assert!(store.renew_job_lease(ticket, &fresh, now.plus(LEASE), now).await.unwrap());
    assert!(store.mark_fetched(ticket, &fresh, "/spool/b", 2, "bb", now).await.unwrap());
    assert_eq!(job(&store, ticket).await.source_path(), Some("/spool/b"));

    // Process: c's lease lapses, d re-claims; c can neither release, complete, fail nor renew.
    let (_, stale) = claim(&store, Stage::Process, "c", now).await;
    let later = now.plus(LEASE);
    let (_, fresh) = claim(&store, Stage::Process, "d", later).await;
    let retry = Release {
        from: JobState::Processing,
        event: JobEvent::RetryLater,
        not_before: later,
        detail: Some("stale".into()),
        attempts: AttemptRule::Spent,
    };
    assert!(!store.release_job(ticket, &stale, &retry, later).await.unwrap());
    let delivery = message("job:1:result", CHAT, MessageKind::Result, Some(ticket));
    assert!(!store.complete_job(ticket, &stale, &completion(1), std::slice::from_ref(&delivery), later).await.unwrap());
    assert!(
        !store
            .fail_job(ticket, JobState::Processing, Some(&stale), "no", "stale", std::slice::from_ref(&notice), later)
            .await
            .unwrap()
    );
    assert!(!store.renew_job_lease(ticket, &stale, later.plus(LEASE), later).await.unwrap());
    assert!(
        store.messages(&MessageFilter::job(ticket)).await.unwrap().is_empty(),
        "nothing was queued by the stale owner"
    );
    let held = job(&store, ticket).await;
    assert_eq!((held.state, held.lease.as_ref(), held.error_detail), (JobState::Processing, Some(&fresh), None));
    assert!(store.complete_job(ticket, &fresh, &completion(1), std::slice::from_ref(&delivery), later).await.unwrap());

    // Outbox: s1's lease lapses (the row goes through `unknown` and is sent again), s2
    // re-claims; s1 can neither mark sent, retry nor close.
    let (m, stale) = claim_message(&store, "s1", later).await;
    let now = later.plus(LEASE);
    assert_eq!(store.lapse_messages(now).await.unwrap().len(), 1);
    assert!(store.requeue_unknown(m.id, now, "sent again", now).await.unwrap());
    let (_, fresh) = claim_message(&store, "s2", now).await;
    assert!(!store.mark_message_sent(&m, &stale, MessageId(1), Some("stale-file"), now).await.unwrap());
    assert!(!store.retry_message(m.id, &stale, now, "stale", now).await.unwrap());
    assert!(!store.close_message(m.id, &stale, OutboxState::Failed, "stale", now).await.unwrap());
    assert!(!store.renew_message_lease(m.id, &stale, now.plus(LEASE), now).await.unwrap());
    assert_eq!(job(&store, ticket).await.result.and_then(|r| r.telegram_file_id), None);
    assert!(store.mark_message_sent(&m, &fresh, MessageId(2), Some("fresh-file"), now).await.unwrap());
    let sent = store.messages(&MessageFilter::job(ticket)).await.unwrap();
    assert_eq!((sent[0].state, sent[0].telegram_message_id), (OutboxState::Sent, Some(MessageId(2))));
    assert_eq!(job(&store, ticket).await.result.and_then(|r| r.telegram_file_id).as_deref(), Some("fresh-file"));
}
