//! Jobs: one per chat and file, failures and completions written atomically with their notices,
//! transitions the state machine forbids, listings, and a job's operation. The queue's claims
//! are in `queue.rs`.

use super::{
    CHAT, OTHER_CHAT, T0, at, claim, claim_message, completion, enqueue, insert, job, message, new_job, processing_job,
    raw, tickets,
};
use crate::domain::{ChatRef, JobEvent, JobState, MessageKind, OutboxState, Submission, Ticket, TransitionError};
use crate::domain::{MessageId, ResultFile, SourceFile, UpdateId};
use crate::store::MessageFilter;
use crate::store::{AttemptRule, JobFilter, Release, Stage, Store, StoreError};

conformance!(
    one_job_per_chat_and_file,
    fail_job_writes_failure_and_notice_atomically,
    complete_job_records_the_result_and_queues_delivery,
    illegal_transitions_are_rejected_before_sql,
    resubmitting_an_ended_job_keeps_the_ticket,
    job_listing_filters_newest_first,
    the_census_counts_jobs_messages_and_dead_chats,
    an_operation_keeps_its_arguments_and_a_password_only_until_the_job_ends,
    only_a_default_operation_switches_and_only_to_one_the_ticket_has_not_run,
);

async fn one_job_per_chat_and_file(store: Store) {
    let first = insert(&store, &new_job(CHAT, 1), T0).await;

    let mut tx = store.begin().await.unwrap();
    let again = Submission {
        update_id: UpdateId(2_000),
        message_id: MessageId(2_001),
        file_id: "file-again".into(),
        ..new_job(CHAT, 1)
    };
    let err = tx.insert_job(&again, at(1)).await.expect_err("UNIQUE(chat_id, file_unique_id) refuses a second row");
    assert!(matches!(err, StoreError::Query { .. }), "{err:?}");
    assert!(!err.is_transient(), "a constraint violation fails the same way again: {err:?}");
    drop(tx);

    let mut tx = store.begin().await.unwrap();
    let found = tx.job_by_file(CHAT, "uniq-1").await.unwrap().expect("the first job");
    assert_eq!(
        (found.ticket, found.submission.update_id, found.submission.file_id.as_str()),
        (first, UpdateId(1_001), "file-1")
    );
    assert_eq!(tx.job(first).await.unwrap(), Some(found));
    assert_eq!(tx.job_by_file(OTHER_CHAT, "uniq-1").await.unwrap(), None);
    assert_eq!(tx.job_by_file(CHAT, "uniq-2").await.unwrap(), None);
    // The same file in another chat is another job.
    let other = tx.insert_job(&new_job(OTHER_CHAT, 1), at(2)).await.unwrap();
    assert_ne!(other, first);
    tx.commit().await.unwrap();
    assert_eq!(store.jobs(&JobFilter { limit: 10, ..JobFilter::default() }).await.unwrap().len(), 2);
}

async fn fail_job_writes_failure_and_notice_atomically(store: Store) {
    // The holder fails a job: state, reason and notice together.
    let t1 = insert(&store, &new_job(CHAT, 1), T0).await;
    let (_, lease) = claim(&store, Stage::Download, "d", T0).await;
    let notice = message("job:1:failure", CHAT, MessageKind::Failure, Some(t1));
    assert!(
        store
            .fail_job(t1, JobState::Accepted, Some(&lease), "not a PDF", "png", std::slice::from_ref(&notice), at(1))
            .await
            .unwrap()
    );
    let failed = job(&store, t1).await;
    assert_eq!(
        (failed.state, failed.error.as_deref(), failed.error_detail.as_deref()),
        (JobState::Failed, Some("not a PDF"), Some("png"))
    );
    assert_eq!((failed.lease, failed.updated_at), (None, at(1)));
    let queued = store.messages(&MessageFilter::job(t1)).await.unwrap();
    assert_eq!(queued.len(), 1);
    assert_eq!((queued[0].kind, queued[0].body.as_str()), (MessageKind::Failure, "body of job:1:failure"));

    // The conditional update matches nothing: no notice.
    let other = message("job:1:failure-again", CHAT, MessageKind::Failure, Some(t1));
    assert!(
        !store
            .fail_job(t1, JobState::Accepted, None, "again", "again", std::slice::from_ref(&other), at(2))
            .await
            .unwrap()
    );
    let t2 = insert(&store, &new_job(CHAT, 2), T0).await;
    let notice2 = message("job:2:failure", CHAT, MessageKind::Failure, Some(t2));
    assert!(
        !store
            .fail_job(t2, JobState::Fetched, None, "wrong state", "", std::slice::from_ref(&notice2), at(2))
            .await
            .unwrap()
    );
    assert_eq!(
        store.messages(&MessageFilter::chat(CHAT)).await.unwrap().len(),
        1,
        "no notice for failures that did not happen"
    );
    assert_eq!(job(&store, t2).await.state, JobState::Accepted);

    // Without a lease (intake, admin), an unclaimed job fails too.
    assert!(
        store
            .fail_job(t2, JobState::Accepted, None, "too big", "", std::slice::from_ref(&notice2), at(3))
            .await
            .unwrap()
    );
    assert_eq!(job(&store, t2).await.state, JobState::Failed);
    assert_eq!(store.messages(&MessageFilter::job(t2)).await.unwrap().len(), 1);

    // The notice cannot be queued (it names a job that does not exist): the failure is undone.
    let t3 = insert(&store, &new_job(CHAT, 3), T0).await;
    let broken = message("job:3:failure", CHAT, MessageKind::Failure, Some(Ticket(i64::MAX)));
    store
        .fail_job(t3, JobState::Accepted, None, "x", "y", std::slice::from_ref(&broken), at(4))
        .await
        .expect_err("the notice violates a foreign key");
    let kept = job(&store, t3).await;
    assert_eq!((kept.state, kept.error), (JobState::Accepted, None));
    assert_eq!(store.messages(&MessageFilter::chat(CHAT)).await.unwrap().len(), 2);
}

async fn complete_job_records_the_result_and_queues_delivery(store: Store) {
    let (ticket, lease) = processing_job(&store, 1, T0).await;
    let delivery = message("job:1:result", CHAT, MessageKind::Result, Some(ticket));
    assert!(store.complete_job(ticket, &lease, &completion(1), std::slice::from_ref(&delivery), at(5)).await.unwrap());
    let ready = job(&store, ticket).await;
    assert_eq!(ready.state, JobState::Ready);
    assert_eq!(
        ready.result,
        Some(ResultFile {
            path: Some("/spool/results/1.pdf".into()),
            size: 777,
            expires_at: at(86_400_000),
            telegram_file_id: None,
            parts: None,
        })
    );
    let source = SourceFile { size: 2_048, sha256: "ab12".into(), path: None, format: Some("pdf-1.7".into()) };
    assert_eq!(ready.source, Some(source), "the source is deleted, its facts kept");
    assert_eq!((ready.lease, ready.updated_at), (None, at(5)));
    let queued = store.messages(&MessageFilter::job(ticket)).await.unwrap();
    assert_eq!(queued.len(), 1);
    assert_eq!((queued[0].kind, queued[0].state, queued[0].chat), (MessageKind::Result, OutboxState::Pending, CHAT));

    // Completing twice does nothing the second time.
    assert!(!store.complete_job(ticket, &lease, &completion(1), std::slice::from_ref(&delivery), at(6)).await.unwrap());
    assert_eq!(store.messages(&MessageFilter::job(ticket)).await.unwrap().len(), 1);

    // The delivery cannot be queued: the job stays in processing with its lease.
    let (t2, lease2) = processing_job(&store, 2, at(10)).await;
    let broken = message("job:2:result", CHAT, MessageKind::Result, Some(Ticket(i64::MAX)));
    store
        .complete_job(t2, &lease2, &completion(2), std::slice::from_ref(&broken), at(11))
        .await
        .expect_err("the delivery violates a foreign key");
    let kept = job(&store, t2).await;
    assert_eq!((kept.state, kept.result, kept.lease), (JobState::Processing, None, Some(lease2)));
}

async fn illegal_transitions_are_rejected_before_sql(store: Store) {
    let ticket = insert(&store, &new_job(CHAT, 1), T0).await;
    let (_, lease) = claim(&store, Stage::Download, "d", T0).await;
    let before = job(&store, ticket).await;
    let skip = Release {
        from: JobState::Accepted,
        event: JobEvent::Completed,
        not_before: at(1),
        detail: Some("skip".into()),
        attempts: AttemptRule::Restarted,
    };
    let notice = message("job:1:failure", CHAT, MessageKind::Failure, Some(ticket));
    let is_refused = |r: Result<bool, StoreError>, from: JobState, event: JobEvent| match r {
        Err(StoreError::Transition(e)) => assert_eq!(e, TransitionError { from, event }),
        other => panic!("{from} + {event:?} must be refused, got {other:?}"),
    };

    is_refused(store.release_job(ticket, &lease, &skip, at(1)).await, JobState::Accepted, JobEvent::Completed);
    is_refused(
        store.fail_job(ticket, JobState::Ready, Some(&lease), "x", "y", std::slice::from_ref(&notice), at(1)).await,
        JobState::Ready,
        JobEvent::Failed,
    );
    let mut tx = store.begin().await.unwrap();
    is_refused(
        tx.resubmit_job(ticket, JobState::Accepted, &new_job(CHAT, 1), at(1)).await,
        JobState::Accepted,
        JobEvent::Resubmitted,
    );
    is_refused(
        tx.resubmit_job(ticket, JobState::Ready, &new_job(CHAT, 1), at(1)).await,
        JobState::Ready,
        JobEvent::Resubmitted,
    );
    tx.commit().await.unwrap();
    assert_eq!(job(&store, ticket).await, before, "nothing changed");
    assert!(store.messages(&MessageFilter::ALL).await.unwrap().is_empty());

    // With the pool closed, any SQL would fail with a query error: the refusal comes first.
    store.close().await;
    is_refused(store.release_job(ticket, &lease, &skip, at(2)).await, JobState::Accepted, JobEvent::Completed);
    is_refused(
        store.fail_job(ticket, JobState::Expired, None, "x", "y", std::slice::from_ref(&notice), at(2)).await,
        JobState::Expired,
        JobEvent::Failed,
    );
    assert!(matches!(store.job(ticket).await, Err(StoreError::Query { .. })), "the pool is closed");
}

async fn resubmitting_an_ended_job_keeps_the_ticket(store: Store) {
    // A job that went all the way and whose result expired.
    let (ticket, lease) = processing_job(&store, 1, T0).await;
    let delivery = message("job:1:result", CHAT, MessageKind::Result, Some(ticket));
    assert!(store.complete_job(ticket, &lease, &completion(1), std::slice::from_ref(&delivery), at(1)).await.unwrap());
    let (m, mlease) = claim_message(&store, "s", at(2)).await;
    assert!(store.mark_message_sent(&m, &mlease, MessageId(1), Some("result-file"), at(3)).await.unwrap());
    let done = job(&store, ticket).await;
    let old_token = lease.token;
    // No store method expires jobs yet (retention is not written), so set the state directly.
    assert_eq!(
        raw(&store, "UPDATE jobs SET status = 'expired', result_path = NULL WHERE id = $1", ticket.0).await.unwrap(),
        1
    );

    let again = Submission {
        update_id: UpdateId(5_000),
        message_id: MessageId(6_000),
        file_id: "file-new".into(),
        declared_name: Some("renamed.pdf".into()),
        ..new_job(CHAT, 1)
    };
    let mut tx = store.begin().await.unwrap();
    assert!(!tx.resubmit_job(ticket, JobState::Failed, &again, at(10)).await.unwrap(), "it is expired, not failed");
    assert!(tx.resubmit_job(ticket, JobState::Expired, &again, at(10)).await.unwrap());
    tx.commit().await.unwrap();

    let fresh = job(&store, ticket).await;
    assert_eq!((fresh.ticket, fresh.state, fresh.submission.chat), (ticket, JobState::Accepted, CHAT));
    assert_eq!(
        (fresh.submission.update_id, fresh.submission.message_id, fresh.submission.file_id.as_str()),
        (UpdateId(5_000), MessageId(6_000), "file-new")
    );
    assert_eq!(
        (fresh.submission.file_unique_id.as_str(), fresh.submission.declared_name.as_deref()),
        ("uniq-1", Some("renamed.pdf"))
    );
    assert_eq!((fresh.source, fresh.result), (None, None), "nothing of the last run is kept");
    assert_eq!((fresh.error, fresh.error_detail, fresh.lease), (None, None, None));
    // Due from its resubmission: it queues behind what arrived before it.
    assert_eq!((fresh.attempts, fresh.not_before, fresh.source_losses), (0, at(10), 0));
    assert_eq!((fresh.created_at, fresh.updated_at), (done.created_at, at(10)));

    // Claimable again, with a token above every earlier one.
    let (claimed, new_lease) = claim(&store, Stage::Download, "d", at(11)).await;
    assert_eq!((claimed.ticket, claimed.attempts), (ticket, 1));
    assert!(new_lease.token > old_token);

    // A failed job comes back the same way.
    let t2 = insert(&store, &new_job(CHAT, 2), at(20)).await;
    let notice = message("job:2:failure", CHAT, MessageKind::Failure, Some(t2));
    assert!(
        store
            .fail_job(t2, JobState::Accepted, None, "gone", "404", std::slice::from_ref(&notice), at(21))
            .await
            .unwrap()
    );
    let mut tx = store.begin().await.unwrap();
    assert!(tx.resubmit_job(t2, JobState::Failed, &new_job(CHAT, 2), at(22)).await.unwrap());
    tx.commit().await.unwrap();
    let back = job(&store, t2).await;
    assert_eq!((back.state, back.error, back.error_detail), (JobState::Accepted, None, None));
}

async fn job_listing_filters_newest_first(store: Store) {
    let a1 = insert(&store, &new_job(CHAT, 1), T0).await;
    let a2 = insert(&store, &new_job(CHAT, 2), at(1)).await;
    let a3 = insert(&store, &new_job(CHAT, 3), at(2)).await;
    let b1 = insert(&store, &new_job(OTHER_CHAT, 4), at(3)).await;
    let b2 = insert(&store, &new_job(OTHER_CHAT, 5), at(4)).await;
    let notice = message("job:2:failure", CHAT, MessageKind::Failure, Some(a2));
    assert!(
        store.fail_job(a2, JobState::Accepted, None, "no", "", std::slice::from_ref(&notice), at(5)).await.unwrap()
    );

    let list = |chat: Option<ChatRef>, state: Option<JobState>, limit: i64| {
        let store = store.clone();
        async move { tickets(&store.jobs(&JobFilter { chat, state, since: None, limit }).await.unwrap()) }
    };
    assert_eq!(list(Some(CHAT), None, 10).await, [a3, a2, a1]);
    assert_eq!(list(Some(CHAT), None, 2).await, [a3, a2]);
    assert_eq!(list(Some(CHAT), Some(JobState::Failed), 10).await, [a2]);
    assert_eq!(list(Some(CHAT), Some(JobState::Accepted), 10).await, [a3, a1]);
    assert_eq!(list(None, Some(JobState::Accepted), 10).await, [b2, b1, a3, a1]);
    assert_eq!(list(None, None, 100).await, [b2, b1, a3, a2, a1]);
    assert_eq!(list(None, None, 1).await, [b2]);
    assert_eq!(list(Some(OTHER_CHAT), Some(JobState::Failed), 10).await, []);
    assert_eq!(list(Some(ChatRef(999)), None, 10).await, []);

    let mut tx = store.begin().await.unwrap();
    assert_eq!(tickets(&tx.chat_jobs(OTHER_CHAT, 1).await.unwrap()), [b2]);
    assert_eq!(tickets(&tx.chat_jobs(CHAT, 10).await.unwrap()), [a3, a2, a1]);
    // The queue ahead of a ticket: unfinished jobs before it (a2 failed), counted to cap + 1.
    assert_eq!(tx.jobs_ahead(a3, 10).await.unwrap(), 1);
    assert_eq!(tx.jobs_ahead(b2, 10).await.unwrap(), 3);
    assert_eq!(tx.jobs_ahead(b2, 1).await.unwrap(), 2, "stops counting past the cap");
    tx.commit().await.unwrap();
}

async fn the_census_counts_jobs_messages_and_dead_chats(store: Store) {
    let empty = store.census().await.unwrap();
    assert_eq!(empty.jobs, JobState::ALL.map(|s| (s, 0)).to_vec(), "every state, at zero");
    assert_eq!(empty.oldest_waiting, None);
    assert!(empty.messages.iter().all(|(_, n)| *n == 0));
    assert_eq!(empty.dead_chats, 0);

    // Two waiting, taken in at T0 + 5 and T0 + 9; one in processing (taken in at T0, earlier,
    // but no longer waiting).
    let (_processing, _) = processing_job(&store, 1, T0).await;
    insert(&store, &new_job(CHAT, 2), at(5)).await;
    insert(&store, &new_job(OTHER_CHAT, 3), at(9)).await;
    assert!(enqueue(&store, &message("m1", CHAT, MessageKind::Reply, None), T0).await);
    assert!(enqueue(&store, &message("m2", CHAT, MessageKind::Reply, None), T0).await);
    assert!(store.mark_chat_dead(OTHER_CHAT, "blocked", T0).await.is_ok());

    let census = store.census().await.unwrap();
    let count = |state: JobState| census.jobs.iter().find(|(s, _)| *s == state).map(|(_, n)| *n);
    assert_eq!(count(JobState::Accepted), Some(2));
    assert_eq!(count(JobState::Processing), Some(1));
    assert_eq!(count(JobState::Ready), Some(0));
    assert_eq!(census.oldest_waiting, Some(at(5)));
    let messages = |state: OutboxState| census.messages.iter().find(|(s, _)| *s == state).map(|(_, n)| *n);
    // Marking OTHER_CHAT dead touched none of CHAT's messages.
    assert_eq!(messages(OutboxState::Pending), Some(2));
    assert_eq!(messages(OutboxState::Sent), Some(0));
    assert_eq!(census.dead_chats, 1);
}

async fn an_operation_keeps_its_arguments_and_a_password_only_until_the_job_ends(store: Store) {
    use crate::domain::Operation;
    let rotate = Operation::parse("rotate 270 2-3,5").unwrap();
    let t1 = insert(
        &store,
        &Submission { operation: rotate.clone(), language_code: Some("ru".into()), ..new_job(CHAT, 1) },
        T0,
    )
    .await;
    let stored = job(&store, t1).await;
    assert_eq!((&stored.submission.operation, stored.submission.language_code.as_deref()), (&rotate, Some("ru")));

    // A password is kept apart from the arguments while the job is unfinished…
    let decrypt = Operation::parse("decrypt open sesame").unwrap();
    let t2 = insert(&store, &Submission { operation: decrypt.clone(), ..new_job(CHAT, 2) }, T0).await;
    assert_eq!(job(&store, t2).await.submission.operation, decrypt, "the password comes back while it runs");
    assert_eq!(
        raw(&store, "UPDATE jobs SET updated_at = updated_at WHERE id = $1 AND arguments = ''", t2.0).await.unwrap(),
        1
    );
    // …and erased by whatever ends it: here a cancellation, through the statement every failure runs.
    let mut tx = store.begin().await.unwrap();
    assert!(tx.cancel_job(t2, JobState::Accepted, "cancelled", "test", at(1)).await.unwrap());
    tx.commit().await.unwrap();
    let ended = job(&store, t2).await;
    assert!(matches!(&ended.submission.operation, Operation::Decrypt { password } if password.is_empty()));
    assert_eq!(
        raw(&store, "UPDATE jobs SET updated_at = updated_at WHERE id = $1 AND secret IS NULL", t2.0).await.unwrap(),
        1
    );
}

async fn only_a_default_operation_switches_and_only_to_one_the_ticket_has_not_run(store: Store) {
    use crate::domain::Operation;
    let by_default = Submission { operation: Operation::ToPdf, chosen_by_default: true, ..new_job(CHAT, 1) };
    let ticket = insert(&store, &by_default, T0).await;
    assert!(job(&store, ticket).await.submission.chosen_by_default, "the choice is kept");
    let (claimed, lease) = claim(&store, Stage::Download, "downloader", T0).await;
    assert_eq!(claimed.ticket, ticket);
    let switch = |lease, operation| {
        let store = store.clone();
        async move { store.switch_operation(ticket, &lease, &operation, at(2)).await.unwrap() }
    };
    assert!(!switch(lease.clone(), Operation::Optimize).await, "only while processing");
    assert!(store.mark_fetched(ticket, &lease, "/spool/1.pdf", 2_048, "ab12", T0).await.unwrap());
    let (_, lease) = claim(&store, Stage::Process, "processor", at(1)).await;
    let stale = crate::domain::Lease { token: lease.token - 1, ..lease.clone() };
    assert!(!switch(stale, Operation::Optimize).await, "fenced by the lease");

    // Another run of the ticket already does `text`: this run may not become a second one.
    let text = Submission { operation: Operation::Text, run_of: Some(ticket), ..new_job(CHAT, 2) };
    insert(&store, &text, at(1)).await;
    assert!(!switch(lease.clone(), Operation::Text).await, "one run per ticket and operation");

    assert!(switch(lease.clone(), Operation::Optimize).await);
    let switched = job(&store, ticket).await;
    assert_eq!(switched.submission.operation, Operation::Optimize);
    assert!(!switched.submission.chosen_by_default, "the operation now fits the content");
    assert_eq!(switched.state, JobState::Processing, "and the run goes on");
    assert!(!switch(lease, Operation::Shrink { target: None }).await, "a run switches once");

    let on_purpose = insert(&store, &new_job(CHAT, 3), at(3)).await;
    assert!(!job(&store, on_purpose).await.submission.chosen_by_default);
}
