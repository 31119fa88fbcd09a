//! Several hosts on one PostgreSQL database: each registers as a node with a heartbeat, the
//! bot-wide roles show on the node that holds them and move when it dies, and two live
//! processes cannot share a node name.

#![cfg(feature = "postgres-tests")]

use std::time::Duration;

use docket::domain::{NodeStatus, Timestamp};

use crate::support::child::DocketProcess;
use crate::support::{Backend, DEADLINE, TestApp, eventually};

/// `dead_after` of these tests: heartbeats every 2.5 s.
const DEAD_AFTER: Duration = Duration::from_secs(10);

/// The roles of each node, by name, once every node in `expected` shows them.
async fn wait_for_roles(app: &TestApp, expected: &[(&str, &[&str])]) {
    eventually(DEADLINE + DEAD_AFTER, async || {
        let nodes = app.store.nodes().await.map_err(|e| e.to_string())?;
        let seen: Vec<(String, Vec<String>)> =
            nodes.iter().map(|n| (n.beat.name.to_string(), n.beat.roles.clone())).collect();
        let matches = expected.iter().all(|(name, roles)| {
            seen.iter().any(|(n, r)| n == name && r.iter().map(String::as_str).eq(roles.iter().copied()))
        });
        if matches { Ok(()) } else { Err(format!("nodes and roles: {seen:?}, waiting for {expected:?}")) }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_poller_role_shows_on_its_node_and_moves_when_that_node_dies() {
    let mut app = TestApp::spawn_with(Backend::Postgres, |c| {
        c.node.name = docket::domain::NodeName::new("first");
        c.node.dead_after = DEAD_AFTER;
    })
    .await;
    wait_for_roles(&app, &[("first", &["poller"])]).await;
    let second = app.start_another_as("second").await;
    wait_for_roles(&app, &[("first", &["poller"]), ("second", &[])]).await;

    // The poller dies without a word: the other takes the role, and the dead one is seen dead
    // once its heartbeat is older than dead_after.
    app.kill().await;
    wait_for_roles(&app, &[("second", &["poller"])]).await;
    let now = Timestamp::from_millis(chrono::Utc::now().timestamp_millis());
    let nodes = app.store.nodes().await.expect("nodes");
    let first = nodes.iter().find(|n| n.beat.name.as_str() == "first").expect("first is listed");
    assert_eq!(first.stopped_at, None, "a killed node never said it stopped");
    assert_eq!(first.status(now.plus(DEAD_AFTER), DEAD_AFTER), NodeStatus::Dead);
    second.stop().await;
    let nodes = app.store.nodes().await.expect("nodes");
    let second = nodes.iter().find(|n| n.beat.name.as_str() == "second").expect("second is listed");
    assert!(second.stopped_at.is_some() && second.beat.roles.is_empty(), "{second:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_process_under_a_live_nodes_name_is_refused_naming_it() {
    let app = TestApp::spawn_with(Backend::Postgres, |c| c.node.name = docket::domain::NodeName::new("twin")).await;
    let docket::store::DatabaseUrl::Postgres(url) = &app.config.storage.database_url else { unreachable!() };
    let dir = tempfile::tempdir().expect("temp dir");
    let toml = format!(
        "[telegram]\npoll_timeout = \"1s\"\n[storage]\ndatabase_url = {url:?}\ndata_dir = {data:?}\n[node]\nname = \"twin\"\n",
        url = url,
        data = dir.path().join("data").display().to_string(),
    );
    let process = DocketProcess::new(dir, &toml, &app.fake);
    process.start();
    let status = process.exit_status(DEADLINE).await;
    let log = process.log_text();
    assert!(!status.success(), "{status}: {log}");
    assert!(log.contains("the node name twin is taken by"), "{log}");
    assert!(log.contains("[node] name"), "{log}");
}
