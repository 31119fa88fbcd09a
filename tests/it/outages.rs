//! docket through database outages (issue 27, point 3), on a PostgreSQL server of the test's own
//! that it can stop and start again.

#![cfg(feature = "postgres-tests")]

use sqlx::Connection as _;

use crate::support::own_postgres::OwnPostgres;

/// The harness's own server stops and starts again on the same port, and answers after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tests_own_server_stops_and_starts_again_on_its_port() {
    let server = OwnPostgres::start();
    let mut conn = sqlx::PgConnection::connect(&server.url()).await.expect("connects");
    server.stop();
    assert!(sqlx::query("SELECT 1").execute(&mut conn).await.is_err(), "a stopped server answers nothing");
    assert!(sqlx::PgConnection::connect(&server.url()).await.is_err(), "nor takes connections");
    server.start_again();
    let mut conn = sqlx::PgConnection::connect(&server.url()).await.expect("connects again");
    sqlx::query("SELECT 1").execute(&mut conn).await.expect("answers again");
}
