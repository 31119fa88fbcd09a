//! docket: a Telegram bot that takes large documents, processes them in the background through a
//! durable job store, and never lies about where a file is.
//!
//! The modules are layered, bottom to top; a module imports from its own layer and those below
//! it, never from above (`tests/layers.rs` checks every `crate::` path).
//!
//! - Wiring: [`cli`] (commands), [`app`] (starts the loops, handles signals), [`config`] (reads
//!   and checks the configuration, and hands each service its own settings), [`telemetry`].
//! - Services: [`intake`] (the polling loop, and update → job + ticket reply in one transaction),
//!   [`pipeline`] (download and processing pools with leases, and what a stage's outcome means),
//!   [`outbox`] (the sender of every message), [`janitor`] (retention, orphans, history).
//! - Adapters: [`store`] (SQLite and PostgreSQL behind one interface), [`telegram`] (Bot API
//!   client and update parsing), [`pdf`] (lopdf), [`operations`] (every operation in a child
//!   process under limits; external tools), [`detect`] (format by signature), [`spool`] (files
//!   on disk, named by job, never by user input), [`sealing`] (secrets kept in the database,
//!   sealed).
//! - Runtime and presentation: [`runtime`] (shutdown, wake-ups, worker pools, the lease
//!   heartbeat), [`texts`] (every sentence a person reads).
//! - Domain: [`domain`] (tickets, states, transitions, leases, what an update means, the records
//!   of jobs and messages, time), no I/O.
//!
//! Only what the binary, the benches and the integration tests use is public; `intake`,
//! `outbox`, `telegram`, `detect` and `sealing` are reached from outside only through the
//! services that `app` starts.

pub mod app;
pub mod cli;
pub mod config;
mod detect;
pub mod domain;
mod intake;
pub mod janitor;
pub mod operations;
mod outbox;
pub mod pdf;
pub mod pipeline;
pub mod runtime;
mod sealing;
pub mod spool;
pub mod store;
mod telegram;
pub mod telemetry;
pub mod texts;
