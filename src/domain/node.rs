//! Nodes: the hosts running `docket run` on one database, each under a name of its own, and
//! what tells a live one from a dead one.

use std::fmt;
use std::time::Duration;

use super::Timestamp;

/// A host's name among those on one database (`[node] name`): 1 to 64 letters, digits, `.`,
/// `_` or `-`, so it reads well in logs and tables and needs no quoting anywhere.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeName(String);

impl NodeName {
    /// Checks `name`; `None` when it is empty, too long or holds other characters.
    pub fn new(name: &str) -> Option<Self> {
        let fits = (1..=64).contains(&name.len())
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
        fits.then(|| Self(name.to_owned()))
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for NodeName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What a node says of itself at every heartbeat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeBeat {
    /// Its name.
    pub name: NodeName,
    /// `<host>:<pid>:`, the prefix of its leases: which process holds the name.
    pub process: String,
    /// The bot-wide roles it holds (`poller`, `janitor`), by name.
    pub roles: Vec<String>,
    /// Bytes of its byte budget reserved, and the budget.
    pub bytes: (u64, u64),
    /// Bytes of its memory budget reserved, and the budget.
    pub memory: (u64, u64),
}

/// A node as the database last heard of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// What it said at its last heartbeat.
    pub beat: NodeBeat,
    /// When its process registered.
    pub started_at: Timestamp,
    /// Its last heartbeat.
    pub last_seen: Timestamp,
    /// When it stopped cleanly; `None` while it runs, or after it died.
    pub stopped_at: Option<Timestamp>,
}

/// Where a node is, as seen at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeStatus {
    /// Its heartbeat is recent.
    Running,
    /// It stopped cleanly.
    Stopped,
    /// Its heartbeat is older than `dead_after`, and it never said it stopped.
    Dead,
}

impl NodeStatus {
    /// The word `docket nodes` shows.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Stopped => "stopped",
            Self::Dead => "dead",
        }
    }
}

impl Node {
    /// Its status at `now`, when a heartbeat older than `dead_after` means dead.
    pub fn status(&self, now: Timestamp, dead_after: Duration) -> NodeStatus {
        if self.stopped_at.is_some() {
            NodeStatus::Stopped
        } else if self.last_seen.until(now) > dead_after {
            NodeStatus::Dead
        } else {
            NodeStatus::Running
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_names_are_plain_words() {
        for good in ["a", "host-1", "db.example_2", &"x".repeat(64)] {
            assert!(NodeName::new(good).is_some(), "{good}");
        }
        for bad in ["", "two words", "semi;colon", "ünï", &"x".repeat(65)] {
            assert!(NodeName::new(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn a_node_is_dead_only_after_its_heartbeat_is_old_and_it_never_stopped() {
        let name = NodeName::new("a").expect("a name");
        let beat = NodeBeat { name, process: "a:1:".into(), roles: vec![], bytes: (0, 0), memory: (0, 0) };
        let t0 = Timestamp::from_millis(1_000_000);
        let mut node = Node { beat, started_at: t0, last_seen: t0, stopped_at: None };
        let dead_after = Duration::from_secs(120);
        assert_eq!(node.status(t0.plus(dead_after), dead_after), NodeStatus::Running);
        assert_eq!(node.status(t0.plus(dead_after + Duration::from_millis(1)), dead_after), NodeStatus::Dead);
        node.stopped_at = Some(t0);
        assert_eq!(node.status(t0.plus(dead_after * 10), dead_after), NodeStatus::Stopped);
    }
}
