//! The `_sqlx_migrations` table sqlx keeps: which of docket's migrations a database has applied.
//! Whether the table exists at all is asked differently per backend (`MIGRATIONS_TABLE` in
//! `sqlite.rs` and `postgres.rs`). Here too: applying migrations, and checking that an existing
//! database has them all.

#[cfg(feature = "postgres")]
use super::postgres;
use super::{Conn, DatabaseError, DatabaseUrl, Pool, QueryContext, Store, StoreError, StoreResult, sqlite};

/// The versions of the migrations applied successfully, in order.
pub const APPLIED_MIGRATIONS: &str = "SELECT version FROM _sqlx_migrations WHERE success ORDER BY version";

/// Runs [`APPLIED_MIGRATIONS`].
pub(super) async fn applied(c: &mut Conn<'_>) -> StoreResult<Vec<i64>> {
    c.scalars(APPLIED_MIGRATIONS, &[]).await.context("reading the applied migrations")
}

impl Store {
    /// Applies pending migrations of the backend.
    pub async fn migrate(&self) -> StoreResult<()> {
        match &self.pool {
            Pool::Sqlite(pool) => sqlite::MIGRATOR.run(pool).await,
            #[cfg(feature = "postgres")]
            Pool::Postgres(pool) => postgres::migrate(pool).await,
        }
        .map_err(|e| StoreError::Migrate(DatabaseError::from_migrate(e)))
    }

    /// The migrations applied to the database; `None` without a migrations table (docket never
    /// ran on it).
    async fn applied_migrations(&self) -> StoreResult<Option<Vec<i64>>> {
        let present = match &self.pool {
            Pool::Sqlite(pool) => sqlite::has_migrations_table(pool).await?,
            #[cfg(feature = "postgres")]
            Pool::Postgres(pool) => postgres::has_migrations_table(pool).await?,
        };
        if !present {
            return Ok(None);
        }
        applied(&mut self.acquire().await?.conn()).await.map(Some)
    }

    /// Whether the database at `url` holds docket's schema with every migration of this build
    /// applied ([`Store::open_existing`]): [`StoreError::NotDocket`] without a migrations table,
    /// [`StoreError::Outdated`] when some are missing.
    pub(super) async fn check_migrations(&self, url: &DatabaseUrl) -> StoreResult<()> {
        match self.applied_migrations().await {
            Err(e) => Err(e),
            Ok(None) => Err(StoreError::NotDocket { url: url.redacted() }),
            Ok(Some(applied)) => {
                let known = self.known_migrations();
                let missing = known.iter().filter(|v| !applied.contains(v)).count();
                if missing == 0 {
                    Ok(())
                } else {
                    Err(StoreError::Outdated { url: url.redacted(), missing, known: known.len() })
                }
            }
        }
    }

    /// The versions of the migrations of this build.
    fn known_migrations(&self) -> Vec<i64> {
        let migrator = match &self.pool {
            Pool::Sqlite(_) => &sqlite::MIGRATOR,
            #[cfg(feature = "postgres")]
            Pool::Postgres(_) => &postgres::MIGRATOR,
        };
        migrator.iter().map(|m| m.version).collect()
    }
}
