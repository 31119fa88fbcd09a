//! People's and admins' requests: a cancel ends the job and its holder's lease, a retry takes
//! only a failed job back, forgetting a person touches their jobs and messages only, invites
//! last, and the figures of `/stats` count what is there.

use super::{
    CHAT, LEASE, OTHER_CHAT, T0, at, claim, completion, enqueue, insert, job, message, new_job, processing_job,
};
use crate::domain::{JobState, MessageKind, OutboxState, Submission, Ticket, TransitionError, UserId};
use crate::store::MessageFilter;
use crate::store::{Stage, Store, StoreError};

conformance!(
    a_cancel_ends_the_job_and_its_holders_lease,
    a_cancel_is_refused_for_an_ended_job,
    only_a_failed_job_is_retried,
    forgetting_a_person_touches_only_their_jobs_and_messages,
    invites_are_kept,
    stats_count_what_is_there,
    ended_jobs_are_listed_from_a_moment_on,
);

async fn a_cancel_ends_the_job_and_its_holders_lease(store: Store) {
    let (ticket, lease) = processing_job(&store, 1, T0).await;
    let mut tx = store.begin().await.unwrap();
    assert!(
        tx.cancel_job(ticket, JobState::Processing, "doc-1.pdf was cancelled", "by the person", at(1)).await.unwrap()
    );
    tx.commit().await.unwrap();
    let cancelled = job(&store, ticket).await;
    assert_eq!(cancelled.state, JobState::Failed);
    assert_eq!(cancelled.error.as_deref(), Some("doc-1.pdf was cancelled"));
    assert_eq!((cancelled.lease.is_none(), cancelled.source_path()), (true, None));
    // The holder can neither renew nor finish.
    assert!(!store.renew_job_lease(ticket, &lease, at(2).plus(LEASE), at(2)).await.unwrap());
    assert!(!store.complete_job(ticket, &lease, &completion(1), &[], at(3)).await.unwrap());
    assert_eq!(job(&store, ticket).await.state, JobState::Failed);
    // A cancel that read an older state changes nothing.
    let mut tx = store.begin().await.unwrap();
    assert!(!tx.cancel_job(ticket, JobState::Processing, "again", "again", at(4)).await.unwrap());
}

async fn a_cancel_is_refused_for_an_ended_job(store: Store) {
    let ticket = insert(&store, &new_job(CHAT, 1), T0).await;
    let mut tx = store.begin().await.unwrap();
    let err = tx.cancel_job(ticket, JobState::Ready, "x", "x", at(1)).await.expect_err("ready cannot be cancelled");
    assert!(matches!(err, StoreError::Transition(TransitionError { from: JobState::Ready, .. })), "{err:?}");
    // An `accepted` job nobody holds is cancelled as well.
    assert!(tx.cancel_job(ticket, JobState::Accepted, "x", "x", at(1)).await.unwrap());
    tx.commit().await.unwrap();
    assert_eq!(job(&store, ticket).await.state, JobState::Failed);
}

async fn only_a_failed_job_is_retried(store: Store) {
    let ticket = insert(&store, &new_job(CHAT, 1), T0).await;
    let notice = message("job:1:retry", CHAT, MessageKind::Reply, Some(ticket));
    assert!(!store.retry_job(ticket, &notice, at(1)).await.unwrap(), "an accepted job is not retried");
    assert!(store.messages(&MessageFilter::chat(CHAT)).await.unwrap().is_empty(), "nor is its notice queued");
    let (_, lease) = claim(&store, Stage::Download, "d", at(2)).await;
    assert!(store.fail_job(ticket, JobState::Accepted, Some(&lease), "broken", "detail", &[], at(3)).await.unwrap());
    assert!(store.retry_job(ticket, &notice, at(4)).await.unwrap());
    let retried = job(&store, ticket).await;
    assert_eq!((retried.state, retried.attempts, retried.error), (JobState::Accepted, 0, None));
    assert_eq!(retried.not_before, at(4));
    let queued = store.messages(&MessageFilter { chat: Some(CHAT), job: Some(ticket) }).await.unwrap();
    assert_eq!(queued.len(), 1);
    // It is claimable again.
    let (again, _) = claim(&store, Stage::Download, "d", at(5)).await;
    assert_eq!(again.ticket, ticket);
}

async fn forgetting_a_person_touches_only_their_jobs_and_messages(store: Store) {
    // Person 4242 (every fixture job) has a ready job and one in processing; person 99 has one.
    let (ready, lease) = processing_job(&store, 1, T0).await;
    assert!(store.complete_job(ready, &lease, &completion(1), &[], at(1)).await.unwrap());
    let (running, running_lease) = processing_job(&store, 2, at(2)).await;
    let theirs = insert(&store, &Submission { user_id: Some(UserId(99)), ..new_job(OTHER_CHAT, 3) }, at(3)).await;
    let sent_before = message("job:1:ticket", CHAT, MessageKind::TicketReply, Some(ready));
    let waiting = message("job:2:notice", CHAT, MessageKind::Reply, Some(running));
    let other = message("job:3:ticket", OTHER_CHAT, MessageKind::TicketReply, Some(theirs));
    for m in [&sent_before, &waiting, &other] {
        assert!(enqueue(&store, m, at(4)).await);
    }

    let mut tx = store.begin().await.unwrap();
    assert_eq!(tx.forget_person(UserId(4_242), "forgotten", at(5)).await.unwrap(), 2);
    tx.commit().await.unwrap();

    let expired = job(&store, ready).await;
    assert_eq!(expired.state, JobState::Expired);
    assert_eq!((expired.submission.declared_name.as_deref(), expired.result_path()), (None, None));
    assert_eq!(expired.result.as_ref().map(|r| r.expires_at), Some(at(5)));
    let failed = job(&store, running).await;
    assert_eq!(
        (failed.state, failed.error.as_deref(), failed.source_path()),
        (JobState::Failed, Some("forgotten"), None)
    );
    assert!(!store.renew_job_lease(running, &running_lease, at(6).plus(LEASE), at(6)).await.unwrap());
    for m in store.messages(&MessageFilter::chat(CHAT)).await.unwrap() {
        assert_eq!(m.body, "", "{m:?}");
        assert_eq!(m.state, OutboxState::Failed, "{m:?}");
    }
    let untouched = job(&store, theirs).await;
    assert_eq!(
        (untouched.state, untouched.submission.declared_name.as_deref()),
        (JobState::Accepted, Some("doc-3.pdf"))
    );
    let kept = store.messages(&MessageFilter::chat(OTHER_CHAT)).await.unwrap();
    assert_eq!((kept[0].body.as_str(), kept[0].state), (other.body.as_str(), OutboxState::Pending));
}

async fn invites_are_kept(store: Store) {
    let mut tx = store.begin().await.unwrap();
    assert!(!tx.is_invited(UserId(7)).await.unwrap());
    tx.invite(UserId(7), T0).await.unwrap();
    tx.invite(UserId(7), at(1)).await.unwrap();
    tx.commit().await.unwrap();
    let mut tx = store.begin().await.unwrap();
    assert!(tx.is_invited(UserId(7)).await.unwrap());
    assert!(!tx.is_invited(UserId(8)).await.unwrap());
}

async fn stats_count_what_is_there(store: Store) {
    let empty = store.stats(T0).await.unwrap();
    assert_eq!(empty, crate::domain::BotStats::default());
    let (_, _) = processing_job(&store, 3, T0).await;
    insert(&store, &new_job(CHAT, 1), at(10)).await;
    insert(&store, &new_job(CHAT, 2), at(20)).await;
    store.mark_chat_dead(OTHER_CHAT, "blocked", at(30)).await.unwrap();
    store.record_flood_wait(CHAT, std::time::Duration::from_secs(3), at(40)).await.unwrap();
    // Older than an hour: not counted.
    store
        .record_flood_wait(CHAT, std::time::Duration::from_secs(3), T0.minus(std::time::Duration::from_secs(7_200)))
        .await
        .unwrap();
    let stats = store.stats(at(50)).await.unwrap();
    assert_eq!(stats.jobs, vec![(JobState::Accepted, 2), (JobState::Processing, 1)]);
    assert_eq!(stats.oldest_waiting, Some(at(10)));
    assert_eq!(stats.bytes_in_flight, 2_048, "the source of the processing job");
    assert_eq!((stats.dead_chats, stats.flood_waits_last_hour), (1, 1));
    assert_eq!(stats.hosts, vec!["processor".to_owned()]);
}

async fn ended_jobs_are_listed_from_a_moment_on(store: Store) {
    let early = insert(&store, &new_job(CHAT, 1), T0).await;
    let late = insert(&store, &new_job(CHAT, 2), T0).await;
    let mut tx = store.begin().await.unwrap();
    assert!(tx.cancel_job(early, JobState::Accepted, "x", "x", at(10)).await.unwrap());
    assert!(tx.cancel_job(late, JobState::Accepted, "x", "x", at(20)).await.unwrap());
    tx.commit().await.unwrap();
    assert_eq!(store.ended_since(at(10)).await.unwrap(), vec![early, late]);
    assert_eq!(store.ended_since(at(11)).await.unwrap(), vec![late]);
    assert_eq!(store.ended_since(at(21)).await.unwrap(), Vec::<Ticket>::new());
}
