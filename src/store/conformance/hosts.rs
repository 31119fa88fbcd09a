//! Hosts sharing one database: a job's files are on the host that downloaded it, so only that
//! host processes it and uploads its result (a result with a Telegram file_id goes from any
//! host); a lost host's jobs go back to be downloaded again by any host.

use std::time::Duration;

use super::{CHAT, LEASE, T0, at, claim, completion, enqueue, insert, job, message, new_job};
use crate::domain::{JobState, MessageId, MessageKind, NodeBeat, NodeName, Ticket, Timestamp};
use crate::store::{Stage, Store};

conformance!(
    processing_and_uploads_stay_on_the_host_that_holds_the_files,
    a_lost_hosts_jobs_go_back_to_be_downloaded_by_any_host
);

const DEAD_AFTER: Duration = Duration::from_secs(120);

fn host(store: &Store, name: &str) -> Store {
    store.for_node(NodeName::new(name).expect("a node name"))
}

async fn register(store: &Store, name: &str, now: Timestamp) {
    let beat = NodeBeat {
        name: NodeName::new(name).expect("a node name"),
        process: format!("{name}:1:"),
        roles: Vec::new(),
        bytes: (0, 0),
        memory: (0, 0),
    };
    assert_eq!(store.register_node(&beat, DEAD_AFTER, now).await.unwrap(), None);
}

/// Job `n`, downloaded by `by` at `now`: `fetched`, its source on that host.
async fn fetched_on(by: &Store, n: i64, now: Timestamp) -> Ticket {
    let ticket = insert(by, &new_job(CHAT, n), now).await;
    let (claimed, lease) = claim(by, Stage::Download, "downloader", now).await;
    assert_eq!(claimed.ticket, ticket);
    assert!(by.mark_fetched(ticket, &lease, &format!("/spool/{n}.pdf"), 2_048, "ab12", now).await.unwrap());
    ticket
}

/// Job `n`, downloaded and processed by `by`: `ready`, its result queued for upload.
async fn ready_on(by: &Store, n: i64, now: Timestamp) -> Ticket {
    let ticket = fetched_on(by, n, now).await;
    let (claimed, lease) = claim(by, Stage::Process, "processor", now).await;
    assert_eq!(claimed.ticket, ticket);
    let result = message(&format!("job:{n}:result"), CHAT, MessageKind::Result, Some(ticket));
    assert!(by.complete_job(ticket, &lease, &completion(n), &[result], now).await.unwrap());
    ticket
}

async fn processing_and_uploads_stay_on_the_host_that_holds_the_files(store: Store) {
    let (a, b) = (host(&store, "a"), host(&store, "b"));
    let ticket = fetched_on(&b, 1, T0).await;
    assert_eq!(job(&store, ticket).await.node, NodeName::new("b"), "the download is recorded as b's");

    // The source is on b's disk: a never claims its processing, b does.
    assert!(a.claim_job(Stage::Process, "a-worker", at(10), LEASE).await.unwrap().is_none());
    assert!(a.jobs_holding_files("a:1:", at(10)).await.unwrap().is_empty(), "a's budget holds nothing of it");
    assert_eq!(b.jobs_holding_files("b:1:", at(10)).await.unwrap(), [ticket]);
    let (claimed, lease) = claim(&b, Stage::Process, "b-worker", at(10)).await;
    assert_eq!(claimed.ticket, ticket);

    // A lapsed processing lease is resumed by b only.
    let lapsed = at(10).plus(LEASE);
    assert!(a.claim_job(Stage::Process, "a-worker", lapsed, LEASE).await.unwrap().is_none());
    let (resumed, resumed_lease) = claim(&b, Stage::Process, "b-again", lapsed).await;
    assert_eq!(resumed.ticket, ticket);
    assert!(resumed_lease.token > lease.token, "a new claim fences the old one");
    let lease = resumed_lease;

    // Its result is uploaded from b's disk: a passes over it, and over the chat's later message.
    let result = message("job:1:result", CHAT, MessageKind::Result, Some(ticket));
    assert!(b.complete_job(ticket, &lease, &completion(1), &[result], lapsed).await.unwrap());
    assert!(enqueue(&store, &message("reply:after", CHAT, MessageKind::Reply, None), lapsed).await);
    assert!(a.claim_message("a-sender", lapsed, LEASE).await.unwrap().is_none());
    let sent = b.claim_message("b-sender", lapsed, LEASE).await.unwrap().expect("b uploads it");
    assert_eq!(sent.kind, MessageKind::Result);
    let lease = sent.lease.clone().expect("a lease");
    assert!(b.mark_message_sent(&sent, &lease, MessageId(900), Some("tg-file-1"), lapsed).await.unwrap());
    let reply = a.claim_message("a-sender", lapsed, LEASE).await.unwrap().expect("the later reply goes from any host");
    assert_eq!(reply.kind, MessageKind::Reply);
    let lease = reply.lease.clone().expect("a lease");
    assert!(a.mark_message_sent(&reply, &lease, MessageId(901), None, lapsed).await.unwrap());

    // With the Telegram file_id stored, the same result goes again from any host.
    assert!(enqueue(&store, &message("update:9:result", CHAT, MessageKind::Result, Some(ticket)), lapsed).await);
    let again = a.claim_message("a-sender", lapsed, LEASE).await.unwrap().expect("sent by file_id from a");
    assert_eq!((again.kind, again.job), (MessageKind::Result, Some(ticket)));

    // A handle for no host (the admin commands) claims processing anywhere.
    let other = fetched_on(&b, 2, lapsed).await;
    let (claimed, _) = claim(&store, Stage::Process, "admin", lapsed).await;
    assert_eq!(claimed.ticket, other);
}

async fn a_lost_hosts_jobs_go_back_to_be_downloaded_by_any_host(store: Store) {
    let (a, b, c) = (host(&store, "a"), host(&store, "b"), host(&store, "c"));
    for name in ["a", "b", "c"] {
        register(&store, name, T0).await;
    }
    // On b: a result delivered (Telegram keeps the document: any host can send it again by its
    // file_id), a result not yet delivered, a job being processed, a job waiting for processing.
    let delivered = ready_on(&b, 3, T0).await;
    let sent = b.claim_message("b-sender", T0, LEASE).await.unwrap().expect("job 3's result");
    let lease = sent.lease.clone().expect("a lease");
    assert!(b.mark_message_sent(&sent, &lease, MessageId(903), Some("tg-file-3"), T0).await.unwrap());
    let undelivered = ready_on(&b, 2, T0).await;
    let processing = fetched_on(&b, 4, T0).await;
    let (claimed, lease) = claim(&b, Stage::Process, "b-worker", T0).await;
    assert_eq!(claimed.ticket, processing);
    let waiting = fetched_on(&b, 1, T0).await;
    let on_a = fetched_on(&a, 5, T0).await;
    let on_c = fetched_on(&c, 6, T0).await;

    // Until dead_after has passed, b is not lost: nothing moves. c beats; b falls silent, and
    // renews the lease of the job it processes (it may be alive behind a partition).
    let alive = T0.plus(DEAD_AFTER);
    assert!(a.hand_back_lost_nodes(DEAD_AFTER, alive).await.unwrap().iter().all(|(_, t)| t.is_empty()));
    let c_beat = NodeBeat {
        name: NodeName::new("c").expect("a name"),
        process: "c:1:".into(),
        roles: Vec::new(),
        bytes: (0, 0),
        memory: (0, 0),
    };
    store.node_heartbeat(&c_beat, alive).await.unwrap();
    assert!(b.renew_job_lease(processing, &lease, alive.plus(LEASE), alive).await.unwrap());

    // A host that never registered (it died before its registration got through) counts as lost.
    let ghost = fetched_on(&host(&store, "ghost"), 7, alive).await;

    // Once b is lost, its jobs go back to be downloaded again; the one under a live lease waits
    // for its holder.
    let lost = alive.plus(Duration::from_millis(1));
    let handed = a.hand_back_lost_nodes(DEAD_AFTER, lost).await.unwrap();
    let mut tickets: Vec<Ticket> =
        handed.iter().filter(|(n, _)| n.as_str() == "b").flat_map(|(_, t)| t.clone()).collect();
    tickets.sort();
    let mut expected = vec![waiting, undelivered];
    expected.sort();
    assert_eq!(tickets, expected, "{handed:?}");
    let of_ghost: Vec<Ticket> =
        handed.iter().filter(|(n, _)| n.as_str() == "ghost").flat_map(|(_, t)| t.clone()).collect();
    assert_eq!(of_ghost, [ghost], "{handed:?}");
    assert!(handed.iter().all(|(n, t)| ["b", "ghost"].contains(&n.as_str()) || t.is_empty()), "{handed:?}");
    for ticket in [waiting, undelivered, ghost] {
        let back = job(&store, ticket).await;
        assert_eq!((back.state, back.node, back.lease), (JobState::Accepted, None, None), "{ticket}");
        assert!(back.result.is_none(), "the result was on b's disk: {ticket}");
        assert!(back.source.as_ref().is_none_or(|s| s.path.is_none()), "{ticket}");
    }
    assert_eq!(job(&store, on_a).await.state, JobState::Fetched, "a is alive: its job stays");
    assert_eq!(job(&store, on_c).await.state, JobState::Fetched, "c is alive: its job stays");
    assert_eq!(job(&store, processing).await.state, JobState::Processing, "under a live lease");
    assert_eq!(job(&store, delivered).await.state, JobState::Ready, "sent by its file_id from any host");

    // While job 2 is produced again, its result waits: no host claims it only to fail.
    assert!(a.claim_message("a-sender", lost, LEASE).await.unwrap().is_none());
    assert!(c.claim_message("c-sender", lost, LEASE).await.unwrap().is_none());

    // Any host downloads the handed-back jobs again.
    let (again, _) = claim(&c, Stage::Download, "c-downloader", lost).await;
    assert!([waiting, undelivered, ghost].contains(&again.ticket));

    // Once its lease lapses, the processing job goes back too; another look finds nothing more.
    let lapsed = alive.plus(LEASE).plus(Duration::from_millis(1));
    let handed = a.hand_back_lost_nodes(DEAD_AFTER, lapsed).await.unwrap();
    let tickets: Vec<Ticket> = handed.into_iter().flat_map(|(_, t)| t).collect();
    assert_eq!(tickets, [processing]);
    assert!(a.hand_back_lost_nodes(DEAD_AFTER, lapsed).await.unwrap().iter().all(|(_, t)| t.is_empty()));

    // A drained host that stopped is lost at once, not after dead_after.
    assert!(store.request_drain(&c_beat.name, lapsed).await.unwrap());
    store.stop_node(&c_beat.name, &c_beat.process, lapsed).await.unwrap();
    let handed = a.hand_back_lost_nodes(DEAD_AFTER, lapsed).await.unwrap();
    let tickets: Vec<Ticket> = handed.into_iter().flat_map(|(_, t)| t).collect();
    assert_eq!(tickets, [on_c]);
}
