//! Part 5: what the database itself can do on docket's schema, with claims and completions in
//! batches.
//!
//! The statements are docket's in shape but written here, on a connection of the bench's own,
//! with none of docket's per-job work around them: a claim is one `UPDATE … WHERE id IN (the
//! oldest k fetched jobs) RETURNING id, lease_token` (PostgreSQL: the inner SELECT with `FOR
//! UPDATE SKIP LOCKED`), a completion is one transaction that moves those k jobs to `ready`,
//! fenced by their lease tokens as docket fences its writes. Batches of 1 are docket's shape;
//! larger batches are what a queue built for throughput does (River fetches and completes in
//! batches). The rates are an upper bound for any batching docket could add: the same rows,
//! indexes, triggers and durable commits, without the statements docket makes around each job.

use std::time::{Duration, Instant};

use anyhow::ensure;
use bench_support::stats::Spread;
use sqlx::Connection;

use docket::domain::{Clock, SystemClock};

use super::Db;

/// A run's jobs: about `seconds` at the warm-up's rate, within these bounds.
const MIN_JOBS: usize = 1_000;
const MAX_JOBS: usize = 400_000;

/// A connection of the bench's own to a fresh store's database.
enum Conn {
    Sqlite(sqlx::SqliteConnection),
    Postgres(sqlx::PgConnection),
}

impl Conn {
    async fn open(db: &Db) -> anyhow::Result<Self> {
        Ok(match db {
            Db::Sqlite(dir) => {
                let options = sqlx::sqlite::SqliteConnectOptions::new()
                    .filename(Db::sqlite_file(dir))
                    .journal_mode(sqlx::sqlite::SqliteJournalMode::Wal)
                    .synchronous(sqlx::sqlite::SqliteSynchronous::Full)
                    .busy_timeout(Duration::from_secs(30));
                Self::Sqlite(sqlx::SqliteConnection::connect_with(&options).await?)
            }
            Db::Postgres(url) => Self::Postgres(sqlx::PgConnection::connect(url).await?),
        })
    }

    /// Records `jobs` jobs in `fetched`, from chats of their own, in one statement.
    async fn fill(&mut self, jobs: usize) -> anyhow::Result<()> {
        let n = i64::try_from(jobs)?;
        match self {
            Self::Sqlite(c) => {
                sqlx::query(
                    "WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < ?1)
                     INSERT INTO jobs (update_id, chat_id, message_id, file_id, file_unique_id, operation,
                                       status, local_path, real_size, created_at, updated_at)
                     SELECT n, 10000 + n, n, 'file-id-' || n, 'unique-' || n, 'optimize',
                            'fetched', '/data/sources/' || n, 150000, 1, 1 FROM g",
                )
                .bind(n)
                .execute(&mut *c)
                .await?;
            }
            Self::Postgres(c) => {
                sqlx::query(
                    "INSERT INTO jobs (update_id, chat_id, message_id, file_id, file_unique_id, operation,
                                       status, local_path, real_size, created_at, updated_at)
                     SELECT n, 10000 + n, n, 'file-id-' || n, 'unique-' || n, 'optimize',
                            'fetched', '/data/sources/' || n, 150000, 1, 1 FROM generate_series(1, $1) n",
                )
                .bind(n)
                .execute(&mut *c)
                .await?;
                sqlx::query("ANALYZE jobs").execute(&mut *c).await?;
            }
        }
        Ok(())
    }

    /// Claims up to `batch` of the oldest fetched jobs for `owner`: their ids and lease tokens.
    async fn claim(&mut self, owner: &str, batch: usize, now: i64) -> anyhow::Result<Vec<(i64, i64)>> {
        // `$n` parameters are numbered in order of appearance by SQLite too.
        macro_rules! claim {
            ($lock:literal) => {
                concat!(
                    "UPDATE jobs SET status = 'processing', lease_owner = $1, lease_token = lease_token + 1,
                                     lease_until = $2 + 60000, attempts = attempts + 1, updated_at = $2
                     WHERE id IN (SELECT id FROM jobs WHERE status = 'fetched' AND lease_owner IS NULL
                                  AND not_before <= $2 ORDER BY not_before, id LIMIT $3",
                    $lock,
                    ") RETURNING id, lease_token"
                )
            };
        }
        let limit = i64::try_from(batch)?;
        Ok(match self {
            Self::Sqlite(c) => sqlx::query_as(claim!("")).bind(owner).bind(now).bind(limit).fetch_all(&mut *c).await?,
            Self::Postgres(c) => {
                let statement = claim!(" FOR UPDATE SKIP LOCKED");
                sqlx::query_as(statement).bind(owner).bind(now).bind(limit).fetch_all(&mut *c).await?
            }
        })
    }

    /// Moves the claimed jobs to `ready` in one transaction, each only while its lease is held.
    async fn complete(&mut self, claimed: &[(i64, i64)], now: i64) -> anyhow::Result<u64> {
        let mut done = 0;
        match self {
            Self::Sqlite(c) => {
                // One prepared statement per job in one transaction: SQLite runs it in-process,
                // so a statement costs microseconds; the commit (a flush) is what a batch shares.
                let mut tx = c.begin_with("BEGIN IMMEDIATE").await?;
                for (id, token) in claimed {
                    done += sqlx::query(
                        "UPDATE jobs SET status = 'ready', lease_owner = NULL, lease_until = NULL,
                                         result_path = '/data/results/' || id, result_size = 1000,
                                         result_expires_at = ?3 + 86400000, updated_at = ?3
                         WHERE id = ?1 AND lease_token = ?2 AND status = 'processing'",
                    )
                    .bind(id)
                    .bind(token)
                    .bind(now)
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
                }
                tx.commit().await?;
            }
            Self::Postgres(c) => {
                // One statement for the batch: every statement is a round trip to the server.
                let (ids, tokens): (Vec<i64>, Vec<i64>) = claimed.iter().copied().unzip();
                let mut tx = c.begin().await?;
                done = sqlx::query(
                    "UPDATE jobs SET status = 'ready', lease_owner = NULL, lease_until = NULL,
                                     result_path = '/data/results/' || jobs.id, result_size = 1000,
                                     result_expires_at = $3 + 86400000, updated_at = $3
                     FROM unnest($1::bigint[], $2::bigint[]) AS done(id, token)
                     WHERE jobs.id = done.id AND jobs.lease_token = done.token AND jobs.status = 'processing'",
                )
                .bind(&ids)
                .bind(&tokens)
                .bind(now)
                .execute(&mut *tx)
                .await?
                .rows_affected();
                tx.commit().await?;
            }
        }
        Ok(done)
    }

    async fn close(self) -> anyhow::Result<()> {
        match self {
            Self::Sqlite(c) => c.close().await?,
            Self::Postgres(c) => c.close().await?,
        }
        Ok(())
    }
}

/// One run: `jobs` fetched jobs claimed and completed by `workers` connections, `batch` at a
/// time, until none is left. Jobs per second over the timed phase.
async fn run(db: &Db, jobs: usize, workers: usize, batch: usize) -> anyhow::Result<f64> {
    let store = db.fresh().await?;
    let mut filler = Conn::open(db).await?;
    filler.fill(jobs).await?;
    filler.close().await?;
    let mut conns = Vec::new();
    for _ in 0..workers {
        conns.push(Conn::open(db).await?);
    }
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for (w, mut conn) in conns.into_iter().enumerate() {
        tasks.spawn(async move {
            let owner = format!("ceiling-{w}");
            let mut done = 0u64;
            loop {
                let now = SystemClock.now().as_millis();
                let claimed = conn.claim(&owner, batch, now).await?;
                if claimed.is_empty() {
                    break;
                }
                done += conn.complete(&claimed, now).await?;
            }
            conn.close().await?;
            anyhow::Ok(done)
        });
    }
    let mut done = 0;
    while let Some(joined) = tasks.join_next().await {
        done += joined??;
    }
    let elapsed = started.elapsed().as_secs_f64();
    ensure!(done == jobs as u64, "{done} of {jobs} jobs completed");
    drop(store);
    Ok(jobs as f64 / elapsed)
}

/// The rows of part 5's table: per backend, batch size and worker count, the median (range)
/// of `runs` runs of about `seconds`.
pub(crate) async fn part(
    dbs: &[Db],
    batches: &[usize],
    workers: &[usize],
    runs: usize,
    seconds: f64,
) -> anyhow::Result<Vec<String>> {
    let mut rows = Vec::new();
    for db in dbs {
        let backend = db.backend();
        for &batch in batches {
            for &w in workers {
                let warm = run(db, (batch * w * 20).clamp(MIN_JOBS / 10, 20_000), w, batch).await?;
                let jobs = ((warm * seconds) as usize).clamp(MIN_JOBS, MAX_JOBS);
                let mut rates = Vec::new();
                for r in 0..runs {
                    eprintln!(
                        "{}: ceiling, batch {batch}, {w} workers, {jobs} jobs, run {}/{runs}",
                        backend.name(),
                        r + 1
                    );
                    rates.push(run(db, jobs, w, batch).await?);
                }
                let s = Spread::of(&rates);
                rows.push(format!(
                    "| {} | {batch} | {w} | {jobs} | **{}** | {:.3} × |",
                    backend.name(),
                    super::rate(s),
                    s.median / backend.goal()
                ));
            }
        }
    }
    Ok(rows)
}
