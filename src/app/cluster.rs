//! What keeps several dockets on one PostgreSQL database working as one: a single poller, under a
//! role the database hands out, and wake-ups relayed from every process's commits.

use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::domain::retry::backoff_jittered;
use crate::intake::polling::Poller;
use crate::runtime::Wakeups;
use crate::store::{Change, Role, Store};
use crate::telegram::TelegramError;

/// How often a process that is not the poller tries to become it.
const POLLER_ROLE_RETRY: Duration = Duration::from_secs(1);

/// Polls getUpdates only while this process holds [`Role::Poller`], so one process of all those
/// on a database calls getUpdates at a time; the others stand by and take over within about a
/// second once the holder stops or dies (its database session ends, and the lock with it). The
/// new poller continues from the stored offset. A holder whose session ends stops polling.
pub(super) async fn poll_while_sole_poller(
    store: Store,
    poller: Poller,
    stop: CancellationToken,
) -> Result<(), TelegramError> {
    let bot = poller.bot_id();
    let beat = poller.heartbeat();
    loop {
        let mut role = loop {
            match store.try_take_role(Role::Poller, bot).await {
                Ok(Some(role)) => break role,
                Ok(None) => {}
                Err(e) => warn!(error = %e, "cannot ask the database who polls; asking again"),
            }
            // Standing by is healthy: /healthz watches this heartbeat.
            beat.beat();
            tokio::select! {
                () = stop.cancelled() => return Ok(()),
                () = tokio::time::sleep(POLLER_ROLE_RETRY) => {}
            }
        };
        info!("this process is the one that polls getUpdates");
        let term = stop.child_token();
        let polling = poller.clone().run(term.clone());
        tokio::pin!(polling);
        tokio::select! {
            result = &mut polling => return result,
            () = role.lost() => {
                warn!("lost the poller role (its database session ended): stopping polling; another process may poll now");
                term.cancel();
                polling.await?;
            }
        }
    }
}

/// Wakes this process's workers and senders when any process on the database commits a change
/// that may make work claimable (PostgreSQL's LISTEN/NOTIFY; SQLite has one process, which wakes
/// its own). Without the feed, or while it is down, workers still find work at their next poll.
pub(super) async fn relay_changes(store: Store, wake: Wakeups, stop: CancellationToken) {
    let wake_all = || {
        wake.downloads.notify_waiters();
        wake.processing.notify_waiters();
        wake.outbox.notify_waiters();
    };
    let mut failures = 0;
    let mut feed = None;
    while !stop.is_cancelled() {
        let step = async {
            let feed = match &mut feed {
                Some(feed) => feed,
                None => match store.changes().await? {
                    Some(connected) => feed.insert(connected),
                    None => return Ok(None),
                },
            };
            feed.next().await.map(Some)
        };
        let change = tokio::select! {
            () = stop.cancelled() => return,
            change = step => change,
        };
        match change {
            Ok(None) => return,
            Ok(Some(Change::Jobs)) => {
                failures = 0;
                wake.downloads.notify_waiters();
                wake.processing.notify_waiters();
            }
            Ok(Some(Change::Outbox)) => {
                failures = 0;
                wake.outbox.notify_waiters();
            }
            Ok(Some(Change::Missed)) => {
                warn!("lost the connection that listens for changes; listening again");
                wake_all();
            }
            Err(e) => {
                failures += 1;
                feed = None;
                let wait = backoff_jittered(failures, Duration::from_millis(200), Duration::from_secs(10));
                warn!(error = %e, wait_ms = wait.as_millis() as u64, "cannot listen for changes; trying again");
                wake_all();
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(wait) => {}
                }
            }
        }
    }
}
