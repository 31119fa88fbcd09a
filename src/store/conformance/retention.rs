//! Retention: due results expire in one statement, the janitor sees exactly the jobs that may
//! own files, and a ticket's history goes with its last run.

use super::{CHAT, T0, at, completion, insert, job, message, new_job, processing_job, tickets};
use crate::domain::{JobState, MessageKind};
use crate::store::{Completion, Store};

conformance!(due_results_expire_in_one_statement, file_owners_are_the_live_jobs, a_ticket_is_pruned_with_its_last_run);

async fn due_results_expire_in_one_statement(store: Store) {
    let mut due = Vec::new();
    for n in 1..=3 {
        let (ticket, lease) = processing_job(&store, n, T0).await;
        let delivery = message(&format!("job:{n}:result"), CHAT, MessageKind::Result, Some(ticket));
        let done = Completion { expires_at: at(1_000 * n), ..completion(n) };
        assert!(store.complete_job(ticket, &lease, &done, std::slice::from_ref(&delivery), at(1)).await.unwrap());
        due.push(ticket);
    }
    let all = tickets(&store.kept_results().await.unwrap());
    assert_eq!(all, due, "all results, oldest expiry first");
    assert_eq!(tickets(&store.results_due(at(2_000)).await.unwrap()), &due[..2]);

    assert_eq!(store.expire_due(at(1_999)).await.unwrap(), &due[..1]);
    assert_eq!(store.expire_due(at(2_000)).await.unwrap(), &due[1..2], "only what is due and still ready");
    assert_eq!(store.expire_due(at(2_000)).await.unwrap(), []);
    let gone = job(&store, due[0]).await;
    assert_eq!(
        (gone.state, gone.result.map(|r| (r.path, r.telegram_file_id, r.expires_at)), gone.updated_at),
        (JobState::Expired, Some((None, None, at(1_000))), at(1_999))
    );
    let kept = job(&store, due[2]).await;
    assert_eq!((kept.state, kept.result_path()), (JobState::Ready, Some("/spool/results/3.pdf")));
    assert_eq!(tickets(&store.kept_results().await.unwrap()), &due[2..]);
}

async fn file_owners_are_the_live_jobs(store: Store) {
    let (processing, lease) = processing_job(&store, 2, T0).await;
    let (ready, ready_lease) = processing_job(&store, 3, T0).await;
    let queued = insert(&store, &new_job(CHAT, 1), T0).await;
    let delivery = message("job:3:result", CHAT, MessageKind::Result, Some(ready));
    assert!(
        store.complete_job(ready, &ready_lease, &completion(3), std::slice::from_ref(&delivery), at(1)).await.unwrap()
    );
    let failed = insert(&store, &new_job(CHAT, 4), T0).await;
    let notice = message("job:4:failure", CHAT, MessageKind::Failure, Some(failed));
    assert!(
        store.fail_job(failed, JobState::Accepted, None, "no", "", std::slice::from_ref(&notice), at(1)).await.unwrap()
    );

    let mut owners = store.file_owners().await.unwrap();
    owners.sort_by_key(|o| o.ticket);
    let seen: Vec<_> = owners
        .iter()
        .map(|o| {
            (o.ticket, o.state, o.lease.as_ref().map(|l| l.token), o.local_path.as_deref(), o.result_path.as_deref())
        })
        .collect();
    assert_eq!(
        seen,
        [
            (processing, JobState::Processing, Some(lease.token), Some("/spool/2.pdf"), None),
            (ready, JobState::Ready, None, None, Some("/spool/results/3.pdf")),
            (queued, JobState::Accepted, None, None, None),
        ]
    );
}

async fn a_ticket_is_pruned_with_its_last_run(store: Store) {
    use crate::domain::{Operation, Submission};
    use crate::store::History;
    let first = insert(&store, &new_job(CHAT, 1), T0).await;
    let further = Submission { operation: Operation::Shrink { target: None }, run_of: Some(first), ..new_job(CHAT, 1) };
    let run = insert(&store, &further, T0).await;
    let mut tx = store.begin().await.unwrap();
    assert!(tx.cancel_job(first, JobState::Accepted, "cancelled", "test", at(1)).await.unwrap());
    tx.commit().await.unwrap();
    let history = History { older_than: at(10), ended_jobs: true };
    assert_eq!(store.prune(&history).await.unwrap().jobs, 0, "the first run stays while a further one is kept");
    assert_eq!(store.runs(first).await.unwrap().len(), 2);

    let mut tx = store.begin().await.unwrap();
    assert!(tx.cancel_job(run, JobState::Accepted, "cancelled", "test", at(2)).await.unwrap());
    tx.commit().await.unwrap();
    assert_eq!(store.prune(&history).await.unwrap().jobs, 2, "the ticket goes with its last run");
    assert!(store.runs(first).await.unwrap().is_empty());
}
