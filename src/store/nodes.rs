//! The `nodes` table: the hosts running `docket run` on this database, their heartbeats, roles
//! and budgets.

use std::time::Duration;

use super::args::Arg;
use super::{Conn, QueryContext, Store, StoreError, StoreResult};
use crate::domain::{JobEvent, JobState, Node, NodeBeat, NodeName, Ticket, Timestamp, Transition};

/// Registers a node, or takes its row back: $1 name, $2 process, $3 now, $4 roles, $5–$8 the
/// budgets, $9 the heartbeat older than which a process counts as dead. A row whose process is
/// another one that still beats (it did not stop, and was seen after $9) is left alone: two
/// live processes must not share a name.
pub const REGISTER_NODE: &str = "INSERT INTO nodes (name, process, started_at, last_seen, stopped_at, roles,
        bytes_reserved, bytes_budget, memory_reserved, memory_budget)
    VALUES ($1, $2, $3, $3, NULL, $4, $5, $6, $7, $8)
    ON CONFLICT (name) DO UPDATE SET process = excluded.process, started_at = excluded.started_at,
        last_seen = excluded.last_seen, stopped_at = NULL, roles = excluded.roles,
        bytes_reserved = excluded.bytes_reserved, bytes_budget = excluded.bytes_budget,
        memory_reserved = excluded.memory_reserved, memory_budget = excluded.memory_budget,
        drain_requested_at = NULL
    WHERE nodes.process = excluded.process OR nodes.stopped_at IS NOT NULL OR nodes.last_seen < $9";

/// A heartbeat: $1 name, $2 process, $3 now, $4 roles, $5–$8 the budgets. Only the process that
/// holds the name beats for it; the row it returns says whether a drain was asked for.
pub const NODE_HEARTBEAT: &str = "UPDATE nodes SET last_seen = $3, roles = $4, bytes_reserved = $5,
        bytes_budget = $6, memory_reserved = $7, memory_budget = $8
    WHERE name = $1 AND process = $2 AND stopped_at IS NULL
    RETURNING drain_requested_at";

/// The PostgreSQL server's clock, in milliseconds since the epoch (`clock_timestamp()`, not the
/// transaction's start).
#[cfg(feature = "postgres")]
const DATABASE_TIME: &str = "SELECT CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)";

/// Asks a running node to drain: $1 name, $2 now. A node that stopped is left as it is.
pub const REQUEST_DRAIN: &str =
    "UPDATE nodes SET drain_requested_at = $2 WHERE name = $1 AND stopped_at IS NULL AND drain_requested_at IS NULL";

/// A clean stop: $1 name, $2 process, $3 now. The node holds no role and no budget any more.
pub const STOP_NODE: &str = "UPDATE nodes SET stopped_at = $3, last_seen = $3, roles = '', bytes_reserved = 0,
        memory_reserved = 0
    WHERE name = $1 AND process = $2";

/// The nodes lost at $1 (heartbeat older than this), or drained and stopped, other than $2 (NULL:
/// none), that still hold jobs: their download, their result, or their processing. A node that
/// holds jobs but never registered (it died before its registration got through) is lost too.
pub const LOST_NODES: &str = "SELECT name FROM nodes
    WHERE ($2 IS NULL OR name <> $2)
      AND (last_seen < $1 OR (stopped_at IS NOT NULL AND drain_requested_at IS NOT NULL))
      AND EXISTS (SELECT 1 FROM jobs WHERE jobs.node = nodes.name AND status IN ('fetched', 'processing', 'ready'))
    UNION
    SELECT DISTINCT node AS name FROM jobs
    WHERE node IS NOT NULL AND ($2 IS NULL OR node <> $2) AND status IN ('fetched', 'processing', 'ready')
      AND NOT EXISTS (SELECT 1 FROM nodes WHERE nodes.name = jobs.node)
    ORDER BY name";

/// Hands back the jobs of the lost node $3 that are in state $4, to be downloaded again by any
/// host ($5, `accepted`), due at $1 now: their files were on that host's disk. A job under a live
/// lease is left to its holder (it is gone with the host, and its lease lapses), a result with a
/// stored Telegram file_id is kept (any host sends it by that id), and one past its expiry is left
/// to the janitor's expiry. $2 is the detail admins read. Returns the jobs handed back.
pub const HAND_BACK_JOBS: &str = "UPDATE jobs SET status = $5, local_path = NULL, node = NULL,
        result_path = NULL, result_size = NULL, result_expires_at = NULL, attempts = 0, not_before = $1,
        lease_owner = NULL, lease_until = NULL, error_detail = $2, updated_at = $1
    WHERE node = $3 AND status = $4 AND (lease_until IS NULL OR lease_until <= $1)
      AND ($4 <> 'ready' OR (result_file_id IS NULL AND result_expires_at > $1))
    RETURNING id";

/// The largest byte budget of the nodes alive at $1 (a heartbeat since then, not stopped, not
/// draining); NULL when none is.
pub const LARGEST_LIVE_BYTES_BUDGET: &str = "SELECT MAX(bytes_budget) FROM nodes
    WHERE last_seen >= $1 AND stopped_at IS NULL AND drain_requested_at IS NULL";

/// Every node, by name.
pub const NODES: &str = "SELECT * FROM nodes ORDER BY name";

/// One node: $1 name.
pub const NODE: &str = "SELECT * FROM nodes WHERE name = $1";

#[derive(sqlx::FromRow)]
struct NodeRow {
    name: String,
    process: String,
    started_at: i64,
    last_seen: i64,
    stopped_at: Option<i64>,
    roles: String,
    bytes_reserved: i64,
    bytes_budget: i64,
    memory_reserved: i64,
    memory_budget: i64,
}

impl NodeRow {
    fn into_node(self) -> StoreResult<Node> {
        let name = NodeName::new(&self.name)
            .ok_or_else(|| StoreError::Corrupt(format!("node name {:?} is not a node name", self.name)))?;
        let count = |n: i64| u64::try_from(n).unwrap_or(0);
        Ok(Node {
            beat: NodeBeat {
                name,
                process: self.process,
                roles: self.roles.split(',').filter(|r| !r.is_empty()).map(str::to_owned).collect(),
                bytes: (count(self.bytes_reserved), count(self.bytes_budget)),
                memory: (count(self.memory_reserved), count(self.memory_budget)),
            },
            started_at: Timestamp::from_millis(self.started_at),
            last_seen: Timestamp::from_millis(self.last_seen),
            stopped_at: self.stopped_at.map(Timestamp::from_millis),
        })
    }
}

fn figure(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Runs [`REGISTER_NODE`]: `Ok(None)` when the row is this process's now, `Ok(Some(node))` when
/// another live process holds the name (that node).
pub(super) async fn register(
    c: &mut Conn<'_>,
    beat: &NodeBeat,
    dead_after: Duration,
    now: Timestamp,
) -> StoreResult<Option<Node>> {
    let mut args = beat_columns(beat, now);
    args.push(now.minus(dead_after).into());
    let taken = c.execute(REGISTER_NODE, &args).await.context("registering this node")?;
    if taken == 1 {
        return Ok(None);
    }
    let row: Option<NodeRow> =
        c.fetch_optional(NODE, &[beat.name.as_str().into()]).await.context("reading the node holding this name")?;
    row.map(NodeRow::into_node).transpose()
}

/// The binds $1 to $8 of [`REGISTER_NODE`] and [`NODE_HEARTBEAT`]: what a beat reports, at `now`.
fn beat_columns(beat: &NodeBeat, now: Timestamp) -> Vec<Arg<'_>> {
    vec![
        beat.name.as_str().into(),
        (&beat.process).into(),
        now.into(),
        beat.roles.join(",").into(),
        figure(beat.bytes.0).into(),
        figure(beat.bytes.1).into(),
        figure(beat.memory.0).into(),
        figure(beat.memory.1).into(),
    ]
}

/// What a heartbeat found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Heartbeat {
    /// Recorded.
    Recorded,
    /// Recorded, and `docket drain` asked this node to stop in order.
    DrainRequested,
    /// This process no longer holds the name (it was taken over after this process was silent
    /// for longer than `dead_after`, or it stopped): nothing was recorded.
    NotMine,
}

/// Runs [`NODE_HEARTBEAT`].
pub(super) async fn heartbeat(c: &mut Conn<'_>, beat: &NodeBeat, now: Timestamp) -> StoreResult<Heartbeat> {
    let found: Option<Option<i64>> =
        c.scalar_optional(NODE_HEARTBEAT, &beat_columns(beat, now)).await.context("recording this node's heartbeat")?;
    Ok(match found {
        None => Heartbeat::NotMine,
        Some(None) => Heartbeat::Recorded,
        Some(Some(_)) => Heartbeat::DrainRequested,
    })
}

/// Runs [`REQUEST_DRAIN`]; `false` when no running node has that name, or a drain was asked
/// for already.
pub(super) async fn request_drain(c: &mut Conn<'_>, name: &NodeName, now: Timestamp) -> StoreResult<bool> {
    let asked =
        c.execute(REQUEST_DRAIN, &[name.as_str().into(), now.into()]).await.context("asking a node to drain")?;
    Ok(asked == 1)
}

/// Runs [`STOP_NODE`].
pub(super) async fn stop(c: &mut Conn<'_>, name: &NodeName, process: &str, now: Timestamp) -> StoreResult<()> {
    c.execute(STOP_NODE, &[name.as_str().into(), process.into(), now.into()])
        .await
        .map(drop)
        .context("recording this node's stop")
}

/// Runs [`LOST_NODES`] for nodes silent since `silent_since`, other than `this`.
pub(super) async fn lost(
    c: &mut Conn<'_>,
    this: Option<&NodeName>,
    silent_since: Timestamp,
) -> StoreResult<Vec<NodeName>> {
    let names: Vec<String> = c
        .scalars(LOST_NODES, &[silent_since.into(), this.map(NodeName::as_str).into()])
        .await
        .context("looking for lost nodes")?;
    names
        .into_iter()
        .map(|name| NodeName::new(&name).ok_or_else(|| StoreError::Corrupt(format!("node name {name:?}"))))
        .collect()
}

/// Runs [`HAND_BACK_JOBS`] for the move `step` (from a state to `accepted`).
pub(super) async fn hand_back(
    c: &mut Conn<'_>,
    node: &NodeName,
    step: Transition,
    detail: &str,
    now: Timestamp,
) -> StoreResult<Vec<Ticket>> {
    let ids: Vec<i64> = c
        .scalars(
            HAND_BACK_JOBS,
            &[now.into(), detail.into(), node.as_str().into(), step.from.as_str().into(), step.to.as_str().into()],
        )
        .await
        .context("handing back a lost node's jobs")?;
    Ok(ids.into_iter().map(Ticket).collect())
}

/// Runs [`NODES`].
pub(super) async fn all(c: &mut Conn<'_>) -> StoreResult<Vec<Node>> {
    let rows: Vec<NodeRow> = c.fetch_all(NODES, &[]).await.context("reading the nodes")?;
    rows.into_iter().map(NodeRow::into_node).collect()
}

impl Store {
    /// Registers this process as the node `beat.name`, or takes that node's row back after a
    /// restart. `Ok(Some(node))` when another process holds the name and still beats (its
    /// heartbeat is newer than `dead_after`): two live processes must not share a name.
    pub async fn register_node(
        &self,
        beat: &NodeBeat,
        dead_after: Duration,
        now: Timestamp,
    ) -> StoreResult<Option<Node>> {
        register(&mut self.acquire().await?.conn(), beat, dead_after, now).await
    }

    /// The database server's clock now, for comparing with this host's ([`crate::domain::Clock`]
    /// times every lease and heartbeat). `None` on SQLite, whose clock is this machine's own.
    pub async fn database_time(&self) -> StoreResult<Option<Timestamp>> {
        let mut conn = self.acquire().await?;
        match conn.conn() {
            Conn::Sqlite(_) => Ok(None),
            #[cfg(feature = "postgres")]
            Conn::Postgres(c) => {
                let millis: i64 = sqlx::query_scalar(DATABASE_TIME)
                    .fetch_one(&mut *c)
                    .await
                    .context("reading the database's clock")?;
                Ok(Some(Timestamp::from_millis(millis)))
            }
        }
    }

    /// Records this node's heartbeat, and says whether a drain was asked for.
    pub async fn node_heartbeat(&self, beat: &NodeBeat, now: Timestamp) -> StoreResult<Heartbeat> {
        heartbeat(&mut self.acquire().await?.conn(), beat, now).await
    }

    /// Asks the running node `name` to drain (stop claiming, finish or release its work, hand
    /// its roles over, stop) at its next heartbeat; `false` when no running node has that name,
    /// or it was asked already.
    pub async fn request_drain(&self, name: &NodeName, now: Timestamp) -> StoreResult<bool> {
        request_drain(&mut self.acquire().await?.conn(), name, now).await
    }

    /// Records a clean stop of the node `name` run by `process`.
    pub async fn stop_node(&self, name: &NodeName, process: &str, now: Timestamp) -> StoreResult<()> {
        stop(&mut self.acquire().await?.conn(), name, process, now).await
    }

    /// Hands the jobs of every lost node back to the queue: a node whose heartbeat is older than
    /// `dead_after`, or that was drained and stopped, other than this handle's. Its downloads,
    /// and the results it never delivered (those without a Telegram file_id), were on its disk:
    /// those jobs go back to `accepted`, to be downloaded again by file_id by any host. Returns,
    /// per node, the jobs handed back.
    pub async fn hand_back_lost_nodes(
        &self,
        dead_after: Duration,
        now: Timestamp,
    ) -> StoreResult<Vec<(NodeName, Vec<Ticket>)>> {
        let lost = lost(&mut self.acquire().await?.conn(), self.node.as_ref(), now.minus(dead_after)).await?;
        let mut handed = Vec::new();
        for node in lost {
            let detail = format!("its host {node} was lost; downloaded again");
            let mut tx = self.begin().await?;
            let mut tickets = Vec::new();
            for from in [JobState::Fetched, JobState::Processing, JobState::Ready] {
                let step = Transition::of(from, JobEvent::HostLost)?;
                tickets.extend(hand_back(&mut tx.conn(), &node, step, &detail, now).await?);
            }
            tx.commit_as("committing a lost node's hand-back").await?;
            handed.push((node, tickets));
        }
        Ok(handed)
    }

    /// Every node that ever ran on this database, by name.
    pub async fn nodes(&self) -> StoreResult<Vec<Node>> {
        all(&mut self.acquire().await?.conn()).await
    }

    /// The largest byte budget among the nodes that beat since `alive_since` and are neither
    /// stopped nor draining; `None` when there are none.
    pub async fn largest_live_bytes_budget(&self, alive_since: Timestamp) -> StoreResult<Option<u64>> {
        largest_live_bytes_budget(&mut self.acquire().await?.conn(), alive_since).await
    }
}

impl super::Tx {
    /// [`Store::largest_live_bytes_budget`], in this transaction.
    pub async fn largest_live_bytes_budget(&mut self, alive_since: Timestamp) -> StoreResult<Option<u64>> {
        largest_live_bytes_budget(&mut self.conn(), alive_since).await
    }
}

/// Runs [`LARGEST_LIVE_BYTES_BUDGET`].
async fn largest_live_bytes_budget(c: &mut Conn<'_>, alive_since: Timestamp) -> StoreResult<Option<u64>> {
    let largest: Option<i64> = c
        .scalar(LARGEST_LIVE_BYTES_BUDGET, &[alive_since.into()])
        .await
        .context("finding the largest byte budget of the live hosts")?;
    Ok(largest.map(|n| u64::try_from(n).unwrap_or(0)))
}
