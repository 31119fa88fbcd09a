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

/// Makes every insert into `jobs` fail with SQLSTATE `code`, as the server itself answers when it
/// cannot take a row now (53100 `disk_full`, 25006 `read_only_sql_transaction`, 53300
/// `too_many_connections`), while the rest of the database goes on working: an update that makes
/// no job can still be recorded. Each refusal is counted in a sequence, which a rollback does not
/// undo ([`FAULT_HITS`]). [`CLEAR_FAULT`] ends it.
pub fn refuse_jobs(code: &str) -> String {
    format!(
        "CREATE SEQUENCE IF NOT EXISTS simulated_fault_hits;
         CREATE OR REPLACE FUNCTION simulated_fault() RETURNS trigger LANGUAGE plpgsql AS $$
           BEGIN
             PERFORM nextval('simulated_fault_hits');
             RAISE EXCEPTION 'simulated fault' USING ERRCODE = TG_ARGV[0];
           END $$;
         DROP TRIGGER IF EXISTS simulated_fault ON jobs;
         CREATE TRIGGER simulated_fault BEFORE INSERT ON jobs FOR EACH ROW EXECUTE FUNCTION simulated_fault('{code}');"
    )
}

/// How often [`refuse_jobs`] refused an insert.
pub const FAULT_HITS: &str = "SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM simulated_fault_hits";

/// Ends what [`refuse_jobs`] started.
pub const CLEAR_FAULT: &str = "DROP TRIGGER simulated_fault ON jobs";
