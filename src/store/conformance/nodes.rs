//! Nodes: a name belongs to one live process at a time; a restarted or dead node's name can be
//! taken back; heartbeats and stops are the holder's alone, and a drain asked for reaches the
//! holder's next heartbeat.

use std::time::Duration;

use super::{T0, at};
use crate::domain::{NodeBeat, NodeName, NodeStatus};
use crate::store::{Heartbeat, Store};

conformance!(a_node_name_belongs_to_one_live_process, heartbeats_drains_and_stops_are_the_holders);

const DEAD_AFTER: Duration = Duration::from_secs(120);

fn beat(name: &str, process: &str) -> NodeBeat {
    NodeBeat {
        name: NodeName::new(name).expect("a node name"),
        process: process.to_owned(),
        roles: vec!["poller".to_owned()],
        bytes: (10, 100),
        memory: (20, 200),
    }
}

async fn a_node_name_belongs_to_one_live_process(store: Store) {
    assert_eq!(store.register_node(&beat("a", "host-a:1:"), DEAD_AFTER, T0).await.unwrap(), None);
    assert_eq!(store.register_node(&beat("b", "host-b:1:"), DEAD_AFTER, T0).await.unwrap(), None);

    // Another process under a live node's name is refused, and told who holds it.
    let holder = store.register_node(&beat("a", "host-c:7:"), DEAD_AFTER, at(1_000)).await.unwrap();
    let holder = holder.expect("the name is held");
    assert_eq!(holder.beat.process, "host-a:1:");
    assert_eq!(holder.status(at(1_000), DEAD_AFTER), NodeStatus::Running);

    // The same process registering again (a retried start) is itself.
    assert_eq!(store.register_node(&beat("a", "host-a:1:"), DEAD_AFTER, at(2_000)).await.unwrap(), None);

    // Once the holder is silent for longer than dead_after, the name can be taken.
    let later = at(2_000 + DEAD_AFTER.as_millis() as i64 + 1);
    assert_eq!(store.register_node(&beat("a", "host-c:7:"), DEAD_AFTER, later).await.unwrap(), None);
    let nodes = store.nodes().await.unwrap();
    let names: Vec<&str> = nodes.iter().map(|n| n.beat.name.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    assert_eq!(nodes[0].beat.process, "host-c:7:");
    assert_eq!((nodes[0].started_at, nodes[0].last_seen), (later, later));
    assert_eq!(nodes[1].status(later, DEAD_AFTER), NodeStatus::Dead);
}

async fn heartbeats_drains_and_stops_are_the_holders(store: Store) {
    let mine = beat("a", "host-a:1:");
    assert_eq!(store.register_node(&mine, DEAD_AFTER, T0).await.unwrap(), None);
    let mut busier = mine.clone();
    busier.bytes = (55, 100);
    busier.roles = vec![];
    assert_eq!(store.node_heartbeat(&busier, at(5_000)).await.unwrap(), Heartbeat::Recorded);
    let node = &store.nodes().await.unwrap()[0];
    assert_eq!((node.beat.bytes, node.beat.memory, node.last_seen), ((55, 100), (20, 200), at(5_000)));
    assert!(node.beat.roles.is_empty());

    // A process that does not hold the name beats for nothing.
    assert_eq!(store.node_heartbeat(&beat("a", "host-z:9:"), at(6_000)).await.unwrap(), Heartbeat::NotMine);
    assert_eq!(store.nodes().await.unwrap()[0].last_seen, at(5_000));

    // A drain asked for reaches the node's next heartbeat, until it registers again.
    assert!(store.request_drain(&mine.name, at(6_500)).await.unwrap());
    assert!(!store.request_drain(&mine.name, at(6_600)).await.unwrap(), "asked once");
    assert!(!store.request_drain(&NodeName::new("nobody").unwrap(), at(6_600)).await.unwrap());
    assert_eq!(store.node_heartbeat(&mine, at(6_700)).await.unwrap(), Heartbeat::DrainRequested);

    // A clean stop: no roles, no reservations, and the name is free at once.
    store.stop_node(&mine.name, &mine.process, at(7_000)).await.unwrap();
    let node = &store.nodes().await.unwrap()[0];
    assert_eq!(node.status(at(7_000), DEAD_AFTER), NodeStatus::Stopped);
    assert_eq!((node.beat.bytes.0, node.beat.memory.0, node.beat.roles.len()), (0, 0, 0));
    assert_eq!(
        store.node_heartbeat(&mine, at(8_000)).await.unwrap(),
        Heartbeat::NotMine,
        "a stopped node does not beat"
    );
    assert!(!store.request_drain(&mine.name, at(8_000)).await.unwrap(), "a stopped node cannot be drained");
    assert_eq!(store.register_node(&beat("a", "host-c:7:"), DEAD_AFTER, at(8_000)).await.unwrap(), None);
}
