//! A throwaway PostgreSQL database per test: created on the server named by `DATABASE_URL`
//! (compiled only with `--features postgres-tests`, where a missing `DATABASE_URL` fails the test
//! instead of skipping it), dropped with `WITH (FORCE)` when the handle goes, even when the test
//! panicked.
//!
//! The storage conformance suite (`src/store/conformance.rs`) has its own copy of this, as a
//! unit-test module of the library that cannot reach the integration tests' support.

use sqlx::Connection;

/// A database of its own on the test server; dropped with the handle.
pub struct TestDatabase {
    /// The URL of the database (the server's URL with the database's name as its path).
    pub url: String,
    admin_url: String,
    name: String,
}

impl TestDatabase {
    /// Creates an empty database `docket_it_<random>`. Panics without `DATABASE_URL` or when the
    /// server refuses.
    pub async fn create() -> Self {
        let admin_url = std::env::var("DATABASE_URL")
            .expect("DATABASE_URL must point at a PostgreSQL server for --features postgres-tests");
        let name = format!("docket_it_{:016x}", rand::random::<u64>());
        let mut conn = sqlx::PgConnection::connect(&admin_url).await.expect("connect to DATABASE_URL");
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .execute(&mut conn)
            .await
            .expect("create test database");
        let _ = conn.close().await;
        let mut url = url::Url::parse(&admin_url).expect("DATABASE_URL is a URL");
        url.set_path(&name);
        Self { url: url.to_string(), admin_url, name }
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        let (admin_url, name) = (self.admin_url.clone(), self.name.clone());
        // Drop runs outside async; a short-lived runtime on its own thread does the cleanup.
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
            rt.block_on(async {
                if let Ok(mut conn) = sqlx::PgConnection::connect(&admin_url).await {
                    let _ = sqlx::query(sqlx::AssertSqlSafe(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")))
                        .execute(&mut conn)
                        .await;
                }
            });
        })
        .join();
    }
}
