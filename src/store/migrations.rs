//! The `_sqlx_migrations` table sqlx keeps: which of docket's migrations a database has applied.
//! Whether the table exists at all is asked differently per backend (`MIGRATIONS_TABLE` in
//! `sqlite.rs` and `postgres.rs`).

use super::{Conn, QueryContext, StoreResult};

/// The versions of the migrations applied successfully, in order.
pub const APPLIED_MIGRATIONS: &str = "SELECT version FROM _sqlx_migrations WHERE success ORDER BY version";

/// Runs [`APPLIED_MIGRATIONS`].
pub(super) async fn applied(c: &mut Conn<'_>) -> StoreResult<Vec<i64>> {
    dispatch!(c, |c| sqlx::query_scalar(APPLIED_MIGRATIONS).fetch_all(c).await)
        .context("reading the applied migrations")
}
