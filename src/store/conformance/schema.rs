//! The schema: names the code does not know are refused, Telegram's 64-bit ids round-trip, the
//! indexes are the expected ones, and (with both backends) PostgreSQL's schema matches SQLite's.

use std::collections::BTreeSet;

use super::{BOT, CHAT, T0, claim_message, enqueue, insert, job, message, new_job, raw};
use crate::domain::{BotId, MessageId, UpdateId, UserId};
use crate::domain::{ChatRef, MessageKind, NewMessage, Submission};
use crate::store::MessageFilter;
use crate::store::{Conn, Store, UpdateOutcome};

conformance!(large_telegram_ids_round_trip, the_schema_rejects_unknown_names, the_schema_has_the_expected_indexes);

async fn large_telegram_ids_round_trip(store: Store) {
    let big = Submission {
        update_id: UpdateId(9_000_000_000),
        chat: ChatRef(-1_009_876_543_210),
        user_id: Some(UserId(7_000_000_000)),
        message_id: MessageId(3_000_000_000),
        declared_size: Some(5 * 1024 * 1024 * 1024),
        ..new_job(CHAT, 1)
    };
    let ticket = insert(&store, &big, T0).await;
    let stored = job(&store, ticket).await;
    assert_eq!(
        (stored.submission.update_id, stored.submission.chat, stored.submission.user_id),
        (big.update_id, big.chat, big.user_id)
    );
    assert_eq!((stored.submission.message_id, stored.submission.declared_size), (big.message_id, big.declared_size));
    assert_eq!((stored.created_at, stored.not_before), (T0, T0), "due from its arrival");
    let mut tx = store.begin().await.unwrap();
    assert!(
        tx.register_update(BotId(-9_000_000_000), UpdateId(9_000_000_000), UpdateOutcome::Recorded, None, T0)
            .await
            .unwrap()
    );
    tx.commit().await.unwrap();
    assert_eq!(
        store.update_outcome(BotId(-9_000_000_000), UpdateId(9_000_000_000)).await.unwrap(),
        Some((UpdateOutcome::Recorded, None))
    );
    let m = NewMessage {
        reply_to_message_id: Some(MessageId(3_000_000_000)),
        buttons: Vec::new(),
        ..message("k", big.chat, MessageKind::Reply, Some(ticket))
    };
    assert!(enqueue(&store, &m, T0).await);
    let (claimed, lease) = claim_message(&store, "s", T0).await;
    assert_eq!((claimed.chat, claimed.reply_to_message_id), (big.chat, Some(MessageId(3_000_000_000))));
    assert!(store.mark_message_sent(&claimed, &lease, MessageId(4_000_000_000), None, T0).await.unwrap());
    assert_eq!(
        store.messages(&MessageFilter::chat(big.chat)).await.unwrap()[0].telegram_message_id,
        Some(MessageId(4_000_000_000))
    );
}

async fn the_schema_rejects_unknown_names(store: Store) {
    let ticket = insert(&store, &new_job(CHAT, 1), T0).await;
    assert!(enqueue(&store, &message("k", CHAT, MessageKind::Reply, Some(ticket)), T0).await);
    let mut tx = store.begin().await.unwrap();
    assert!(tx.register_update(BOT, UpdateId(1), UpdateOutcome::Recorded, None, T0).await.unwrap());
    tx.commit().await.unwrap();
    let id = store.messages(&MessageFilter::ALL).await.unwrap()[0].id.0;

    for (sql, row) in [
        ("UPDATE jobs SET status = 'done' WHERE id = $1", ticket.0),
        ("UPDATE jobs SET operation = 'sharpen' WHERE id = $1", ticket.0),
        ("UPDATE outbox SET status = 'lost' WHERE id = $1", id),
        ("UPDATE outbox SET kind = 'photo' WHERE id = $1", id),
        ("UPDATE updates SET outcome = 'maybe' WHERE update_id = $1", 1),
        ("UPDATE outbox SET job_id = 999999 WHERE id = $1", id),
    ] {
        assert!(raw(&store, sql, row).await.is_err(), "the schema must refuse: {sql}");
    }
    // The same statements with known names pass, so the refusals above were the constraints.
    for (sql, row) in [
        ("UPDATE jobs SET status = 'expired' WHERE id = $1", ticket.0),
        ("UPDATE jobs SET operation = 'shrink' WHERE id = $1", ticket.0),
        ("UPDATE outbox SET status = 'unknown', kind = 'failure' WHERE id = $1", id),
        ("UPDATE updates SET outcome = 'rejected' WHERE update_id = $1", 1),
    ] {
        assert_eq!(raw(&store, sql, row).await.unwrap(), 1, "{sql}");
    }
}

/// The named indexes of the schema, with the predicate of partial ones (normalised).
async fn indexes(store: &Store) -> BTreeSet<(String, Option<String>)> {
    let mut tx = store.begin().await.unwrap();
    let rows: Vec<(String, Option<String>)> = match tx.conn() {
        Conn::Sqlite(t) => {
            let rows: Vec<(String, String)> = sqlx::query_as(
                "SELECT name, sql FROM sqlite_master
                 WHERE type = 'index' AND sql IS NOT NULL AND tbl_name <> '_sqlx_migrations'",
            )
            .fetch_all(&mut *t)
            .await
            .unwrap();
            rows.into_iter().map(|(name, sql)| (name, sql.split_once(" WHERE ").map(|(_, p)| p.to_owned()))).collect()
        }
        #[cfg(feature = "postgres")]
        Conn::Postgres(t) => sqlx::query_as(
            "SELECT c.relname::TEXT, pg_get_expr(i.indpred, i.indrelid)
             FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_class r ON r.oid = i.indrelid
             JOIN pg_namespace n ON n.oid = r.relnamespace
             WHERE n.nspname = current_schema() AND r.relname <> '_sqlx_migrations'
               AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid)",
        )
        .fetch_all(&mut *t)
        .await
        .unwrap(),
    };
    drop(tx);
    // PostgreSQL prints `x IN ('a', 'b')` back as `x = ANY (ARRAY['a'::text, 'b'::text])`.
    let normalise = |p: String| {
        p.replace("::text", "").replace(" = ANY (ARRAY[", " IN (").replace(['(', ')', ']'], "").trim().to_owned()
    };
    rows.into_iter().map(|(name, pred)| (name, pred.map(normalise))).collect()
}

async fn the_schema_has_the_expected_indexes(store: Store) {
    let expected: BTreeSet<(String, Option<String>)> = [
        ("jobs_chat", None),
        ("jobs_claim", None),
        ("jobs_file", Some("ticket_id IS NULL")),
        ("jobs_run", None),
        ("jobs_ticket", Some("ticket_id IS NOT NULL")),
        ("jobs_expiry", Some("status = 'ready'")),
        ("jobs_held", Some("lease_owner IS NOT NULL OR status IN 'fetched', 'processing'")),
        ("jobs_user", None),
        ("jobs_ended", Some("status IN 'failed', 'expired'")),
        ("jobs_node", Some("node IS NOT NULL")),
        ("jobs_album", Some("media_group_id IS NOT NULL AND ticket_id IS NULL")),
        ("jobs_merging", Some("gathering = 'merge'")),
        ("flood_waits_at", None),
        ("outbox_chat", None),
        ("outbox_job", None),
        ("outbox_open", None),
        ("outbox_open_chat", Some("status IN 'pending', 'sending'")),
        ("updates_received_at", None),
    ]
    .into_iter()
    .map(|(n, p)| (n.to_owned(), p.map(str::to_owned)))
    .collect();
    assert_eq!(indexes(&store).await, expected);
    store.migrate().await.expect("migrating again is a no-op");
    assert_eq!(indexes(&store).await, expected);
}

/// The PostgreSQL schema against the SQLite one, column by column and index by index.
#[cfg(feature = "postgres-tests")]
mod postgres_vs_sqlite {
    use std::collections::BTreeMap;

    use super::{Conn, Store};

    /// (table, column) → (integer or text, NOT NULL, default).
    type Columns = BTreeMap<(String, String), (String, bool, Option<String>)>;
    /// (table, ordered columns, unique, predicate present).
    type Indexes = Vec<(String, String, bool, bool)>;

    const TABLES: [&str; 7] =
        ["updates", "poll_offsets", "jobs", "outbox", "invited_users", "flood_waits", "chat_languages"];

    fn kind(declared: &str) -> String {
        match declared {
            // SQLite's INTEGER holds 64 bits; of PostgreSQL's types only BIGINT matches it.
            "INTEGER" | "bigint" => "int64".into(),
            "TEXT" | "text" => "text".into(),
            other => format!("unexpected type {other}"),
        }
    }

    async fn describe(store: &Store) -> (Columns, Indexes) {
        let mut columns = Columns::new();
        let mut indexes = Indexes::new();
        let mut tx = store.begin().await.unwrap();
        for table in TABLES {
            match tx.conn() {
                Conn::Sqlite(t) => {
                    let rows: Vec<(String, String, i64, Option<String>, i64)> =
                        sqlx::query_as("SELECT name, type, \"notnull\", dflt_value, pk FROM pragma_table_info($1)")
                            .bind(table)
                            .fetch_all(&mut *t)
                            .await
                            .unwrap();
                    for (name, ty, notnull, default, pk) in rows {
                        columns.insert((table.into(), name), (kind(&ty), notnull == 1 || pk > 0, default));
                    }
                    let list: Vec<(String, i64, String, i64)> =
                        sqlx::query_as("SELECT name, \"unique\", origin, partial FROM pragma_index_list($1)")
                            .bind(table)
                            .fetch_all(&mut *t)
                            .await
                            .unwrap();
                    for (name, unique, _, partial) in list {
                        let cols: Vec<String> =
                            sqlx::query_scalar("SELECT name FROM pragma_index_info($1) ORDER BY seqno")
                                .bind(&name)
                                .fetch_all(&mut *t)
                                .await
                                .unwrap();
                        indexes.push((table.into(), cols.join(","), unique == 1, partial == 1));
                    }
                    // INTEGER PRIMARY KEY is the rowid and has no index row; PostgreSQL's has one.
                    let rowid_pk: Option<String> = sqlx::query_scalar(
                        "SELECT name FROM pragma_table_info($1) WHERE pk = 1 AND type = 'INTEGER'
                           AND (SELECT COUNT(*) FROM pragma_table_info($1) WHERE pk > 0) = 1",
                    )
                    .bind(table)
                    .fetch_optional(&mut *t)
                    .await
                    .unwrap();
                    if let Some(pk) = rowid_pk {
                        indexes.push((table.into(), pk, true, false));
                    }
                }
                Conn::Postgres(t) => {
                    let rows: Vec<(String, String, bool, Option<String>, bool)> = sqlx::query_as(
                        "SELECT column_name::TEXT, data_type::TEXT, is_nullable = 'NO', column_default::TEXT,
                                is_identity = 'YES'
                         FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1",
                    )
                    .bind(table)
                    .fetch_all(&mut *t)
                    .await
                    .unwrap();
                    for (name, ty, notnull, default, _identity) in rows {
                        // PostgreSQL prints a text default with its cast: `''::text`.
                        let default = default.map(|d| d.strip_suffix("::text").map_or(d.clone(), str::to_owned));
                        columns.insert((table.into(), name), (kind(&ty), notnull, default));
                    }
                    let list: Vec<(Vec<String>, bool, bool)> = sqlx::query_as(
                        // An expression (attnum 0) reads as an empty name, as SQLite's index_info gives it.
                        "SELECT ARRAY(SELECT COALESCE(a.attname::TEXT, '') FROM unnest(i.indkey) WITH ORDINALITY AS k(num, ord)
                                      LEFT JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.num
                                      ORDER BY k.ord),
                                i.indisunique, i.indpred IS NOT NULL
                         FROM pg_index i JOIN pg_class r ON r.oid = i.indrelid
                         JOIN pg_namespace n ON n.oid = r.relnamespace
                         WHERE n.nspname = current_schema() AND r.relname = $1",
                    )
                    .bind(table)
                    .fetch_all(&mut *t)
                    .await
                    .unwrap();
                    for (cols, unique, partial) in list {
                        indexes.push((table.into(), cols.join(","), unique, partial));
                    }
                }
            }
        }
        drop(tx);
        indexes.sort();
        (columns, indexes)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres_matches_sqlite() {
        super::super::on_sqlite(|sqlite| async move {
            super::super::pg::on_postgres(|postgres| async move {
                let (sqlite_columns, sqlite_indexes) = describe(&sqlite).await;
                let (pg_columns, pg_indexes) = describe(&postgres).await;
                assert!(!sqlite_columns.is_empty() && !sqlite_indexes.is_empty());
                let bad_types: Vec<_> = sqlite_columns
                    .iter()
                    .chain(&pg_columns)
                    .filter(|(_, c)| c.0.starts_with("unexpected"))
                    .map(|((table, column), c)| format!("{table}.{column}: {}", c.0))
                    .collect();
                assert!(bad_types.is_empty(), "{bad_types:?}");
                assert_eq!(pg_columns, sqlite_columns, "columns: type, NOT NULL and default");
                assert_eq!(pg_indexes, sqlite_indexes, "indexes: columns, uniqueness, partial");
            })
            .await;
        })
        .await;
    }
}
