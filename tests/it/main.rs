//! docket's integration tests: the real bot (every loop, real SQLite or PostgreSQL, real files)
//! against a fake Telegram Bot API served over HTTP on 127.0.0.1.
//!
//! One test binary; `support/` holds the harness, each other module a group of behaviours.

mod support;

mod albums;
mod budget;
mod cli;
mod containment;
mod crash;
mod disk_full;
mod e2e;
mod groups;
mod languages;
mod merges;
mod nodes;
mod office;
mod operations_choice;
mod operations_lossy;
mod operations_pages;
mod outages;
mod outbox;
mod people;
mod previews;
mod queue;
mod real_input;
mod recovery;
mod results_that_fit;
mod retention;
mod run_bounds;
mod service;
mod telegram_answers;
mod webhook;
