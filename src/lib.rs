//! docket: a Telegram bot that takes large documents, processes them in the background through a
//! durable job store, and never lies about where a file is.
//!
//! The modules are layered; dependencies point downward only.
//!
//! - Wiring: [`cli`] (commands), [`app`] (starts the loops, handles signals), [`telemetry`],
//!   [`config`].
//! - Services: [`intake`] (update → job + ticket reply, one transaction), [`pipeline`] (download
//!   and processing pools with leases), [`outbox`] (the sender of every message).
//! - Adapters: [`store`] (SQLite and PostgreSQL behind one interface), [`telegram`] (Bot API
//!   client, polling, texts), [`pdf`] (lopdf), [`detect`] (format by signature), [`spool`]
//!   (files on disk, named by job, never by user input).
//! - Domain: [`domain`] (tickets, states, transitions, leases, the records of jobs and messages,
//!   time), no I/O.

pub mod app;
pub mod cli;
pub mod config;
pub mod detect;
pub mod domain;
pub mod intake;
pub mod janitor;
pub mod outbox;
pub mod pdf;
pub mod pipeline;
pub mod runtime;
pub mod spool;
pub mod store;
pub mod telegram;
pub mod telemetry;
pub mod texts;
