//! The store's own SQL, for the benchmarks, which EXPLAIN and time the statements the store really
//! runs instead of copies of them. Not an API: the statements change with the store.
//!
//! Each table module's statements are here under the module's name; what only one backend runs
//! is under [`sqlite`] and `postgres`.

/// The claim statements, which differ per backend in how they lock (see each backend's
/// `CLAIMS`). Each picks one row in a subquery `WHERE id = (SELECT … LIMIT 1)` and leases it in
/// the same statement, bumping its `lease_token` and counting an attempt.
///
/// The per-chat order check of the message claim reads other rows of the chat; the status
/// re-check in its outer UPDATE keeps a row from being taken after it left `pending`. The
/// download claim's per-chat count repeats the predicate of the partial index `jobs_held` word
/// for word (`o.lease_owner IS NOT NULL OR …`), which is what lets both databases use it; the term
/// changes nothing, because every write that clears `lease_owner` clears `lease_until` too.
#[derive(Debug)]
pub struct ClaimSql {
    /// Claims an `accepted` job: $1 owner, $2 lease until, $3 now, $4 the size assumed for a
    /// job without a declared size, $5 the largest size that fits the byte budget, $6 how many
    /// jobs of one chat may be in flight, $7 the claiming node (unused: any host downloads).
    /// Taking an album's ticket seals it: a part that comes later is a file of its own.
    pub download: &'static str,
    /// Claims a `processing` job whose lease lapsed (resumed first: it already holds a source on
    /// disk and a place in the budget): same binds; only a job of node $7 (NULL: any node) or of
    /// none, since its source is on that host's disk.
    pub process_lapsed: &'static str,
    /// Claims a `fetched` job: same binds and the same node rule. Separate from `process_lapsed`
    /// so each is one index range in order, not an OR of two ranges plus a sort.
    pub process_fetched: &'static str,
    /// Claims the next deliverable outbox row: `pending`, due, the first open row of its chat,
    /// and neither its chat nor the bot as a whole ([`WHOLE_BOT`](crate::store::statements::pacing::WHOLE_BOT)) paced or paused. Same first binds,
    /// then $4 the claiming node (NULL: any). A result waits while its job is not `ready` (it is
    /// being produced again after its host was lost), and one without a stored Telegram file_id
    /// goes only from the host that holds its file.
    /// A lapsed `sending` row is not claimed here: its outcome is unknown, and
    /// [`Store::lapse_messages`](crate::store::Store::lapse_messages) hands it to the kind's rule
    /// first.
    pub message: &'static str,
}

/// A processing claim of [`ClaimSql`]: `$set` added to what every claim sets, the job's state
/// as `$state` requires it, and the due, node and order rules both processing claims share.
macro_rules! process_claim_sql {
    ($set:literal, $state:literal, $row_lock:literal) => {
        concat!(
            "UPDATE jobs SET ",
            $set,
            "lease_owner = $1, lease_token = lease_token + 1,
                lease_until = $2, attempts = attempts + 1, updated_at = $3
            WHERE id = (SELECT id FROM jobs WHERE ",
            $state,
            " AND not_before <= $3
                          AND ($7 IS NULL OR node IS NULL OR node = $7)
                        ORDER BY not_before, id LIMIT 1",
            $row_lock,
            ")
            RETURNING *"
        )
    };
}
pub(super) use process_claim_sql;

/// Writes the [`ClaimSql`] of a backend, whose statements differ only in how the subquery locks
/// the row it picks: `$row_lock` follows each `LIMIT 1` (`""` for SQLite, whose single writer
/// already serialises a claim; `" FOR UPDATE SKIP LOCKED"` for PostgreSQL). One text for both,
/// so a change to what a claim picks cannot reach one backend only.
macro_rules! claim_sql {
    ($row_lock:literal) => {
        $crate::store::statements::ClaimSql {
            download: concat!(
                "UPDATE jobs SET lease_owner = $1, lease_token = lease_token + 1, lease_until = $2,
                    attempts = attempts + 1, updated_at = $3, gathering = NULL
                WHERE id = (SELECT j.id FROM jobs j WHERE j.status = 'accepted' AND j.not_before <= $3
                              AND (j.lease_until IS NULL OR j.lease_until <= $3)
                              AND COALESCE(j.declared_size, $4) <= $5
                              AND (SELECT COUNT(*) FROM jobs o WHERE o.chat_id = j.chat_id AND o.id <> j.id
                                     AND (o.lease_owner IS NOT NULL OR o.status IN ('fetched', 'processing'))
                                     AND ((o.status = 'accepted' AND o.lease_until > $3)
                                          OR o.status IN ('fetched', 'processing'))) < $6
                            ORDER BY j.not_before, j.id LIMIT 1",
                $row_lock,
                ")
                RETURNING *"
            ),
            process_lapsed: $crate::store::statements::process_claim_sql!(
                "",
                "status = 'processing' AND lease_until <= $3",
                $row_lock
            ),
            process_fetched: $crate::store::statements::process_claim_sql!(
                "status = 'processing', ",
                "status = 'fetched'",
                $row_lock
            ),
            message: concat!(
                "UPDATE outbox SET status = 'sending', lease_owner = $1, lease_token = lease_token + 1,
                    lease_until = $2, attempts = attempts + 1, updated_at = $3
                WHERE id = (SELECT o.id FROM outbox o
                            WHERE o.status = 'pending' AND o.not_before <= $3
                              AND NOT EXISTS (SELECT 1 FROM outbox e WHERE e.chat_id = o.chat_id AND e.id <> o.id
                                              AND e.status IN ('pending', 'sending')
                                              AND (e.status = 'sending' OR (e.id < o.id AND e.kind <> 'progress')))
                              AND NOT EXISTS (SELECT 1 FROM chat_pacing p WHERE p.chat_id = o.chat_id
                                              AND p.not_before > $3)
                              AND NOT EXISTS (SELECT 1 FROM chat_pacing g WHERE g.chat_id = 0 AND g.not_before > $3)
                              AND (o.kind <> 'result' OR NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = o.job_id
                                     AND (j.status IN ('accepted', 'fetched', 'processing')
                                          OR (j.status = 'ready' AND j.result_file_id IS NULL
                                              AND j.node IS NOT NULL AND j.node <> $4))))
                            ORDER BY o.priority, o.id LIMIT 1",
                $row_lock,
                ")
                  AND status = 'pending'
                RETURNING *"
            ),
        }
    };
}
pub(super) use claim_sql;

/// A module here for each table module of the store, holding what it holds (its statements are
/// the `pub` items there).
macro_rules! table_statements {
    ($($(#[$doc:meta])* $table:ident,)*) => {
        $($(#[$doc])* pub mod $table {
            pub use crate::store::$table::*;
        })*
    };
}

table_statements! {
    /// The `updates` and `poll_offsets` tables.
    updates,
    /// The `jobs` table.
    jobs,
    /// The `outbox` table.
    outbox,
    /// The `dead_chats` table.
    chats,
    /// The `chat_modes` table.
    modes,
    /// The `chat_pacing` table.
    pacing,
    /// People's and admins' requests: cancel, retry, forget, invites, `/stats`.
    people,
    /// What the janitor reads and removes.
    retention,
    /// The `_sqlx_migrations` table.
    migrations,
}

/// What only SQLite runs: its claim statements and its look for the migrations table.
pub mod sqlite {
    pub use crate::store::sqlite::{CLAIMS, MIGRATIONS_TABLE};
}

/// What only PostgreSQL runs: its claim statements, the lock that serialises message claims and
/// its look for the migrations table.
#[cfg(feature = "postgres")]
pub mod postgres {
    pub use crate::store::postgres::{CLAIMS, LOCK_MESSAGE_CLAIMS, MIGRATIONS_TABLE};
}

#[cfg(test)]
mod tests {
    use crate::domain::{JobEvent, JobState, Transition};

    /// The claims that move every matching row at once name their states as literals (so each is
    /// a range of a partial index); they must be the moves the state machine allows.
    #[test]
    fn set_based_moves_are_the_ones_the_state_machine_allows() {
        let expiry = Transition::of(JobState::Ready, JobEvent::Expired).expect("legal");
        let expire_due = super::retention::EXPIRE_DUE;
        assert!(expire_due.contains(&format!("SET status = '{}'", expiry.to)), "{expire_due}");
        assert!(expire_due.contains(&format!("WHERE status = '{}'", expiry.from)), "{expire_due}");

        let start = Transition::of(JobState::Fetched, JobEvent::ProcessingStarted).expect("legal");
        let resume = Transition::of(JobState::Processing, JobEvent::ProcessingStarted).expect("legal");
        assert_eq!(resume.to, resume.from, "a resumed claim keeps its state: process_lapsed sets none");
        let claims = [
            super::sqlite::CLAIMS,
            #[cfg(feature = "postgres")]
            super::postgres::CLAIMS,
        ];
        for claims in claims {
            let fetched = claims.process_fetched;
            assert!(fetched.contains(&format!("SET status = '{}'", start.to)), "{fetched}");
            assert!(fetched.contains(&format!("status = '{}'", start.from)), "{fetched}");
            assert!(!claims.process_lapsed.contains("SET status"), "{}", claims.process_lapsed);
            assert!(claims.process_lapsed.contains(&format!("status = '{}'", resume.from)));
        }

        // Forgetting a person: ready results expire, unfinished jobs end as cancelled ones do.
        let forget = super::people::FORGET_JOBS;
        let expiry = Transition::of(JobState::Ready, JobEvent::Expired).expect("legal");
        assert!(forget.contains(&format!("WHEN status = '{}' THEN '{}'", expiry.from, expiry.to)), "{forget}");
        for from in [JobState::Accepted, JobState::Fetched, JobState::Processing] {
            let cancel = Transition::of(from, JobEvent::Cancelled).expect("legal");
            assert_eq!(cancel.to, JobState::Failed);
            assert!(forget.contains(&format!("'{from}'")), "{forget}");
        }
        assert!(forget.contains("WHEN status IN ('accepted', 'fetched', 'processing') THEN 'failed'"), "{forget}");
    }
}
