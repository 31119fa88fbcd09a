//! Logging setup. Output goes to stderr (journald under systemd); `RUST_LOG` filters, and
//! `DOCKET_LOG_FORMAT=json` switches to one JSON object per line. Colours (ANSI escape codes)
//! are used only when stderr is a terminal and `NO_COLOR` is not set: journald, a pipe or a file
//! gets plain text.
//!
//! What is never logged: the bot token, file download URLs and file paths from getFile (they
//! hold the token), database passwords, message texts, captions and user file names. Modules
//! log ids and sizes instead, and `#[instrument]` is always used with `skip_all`.

use std::io::IsTerminal;
use std::net::SocketAddr;

use tracing_subscriber::EnvFilter;

/// Installs the global subscriber. Safe to call more than once (later calls do nothing).
pub fn init() {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn,reqwest=warn,hyper=warn"));
    let json = std::env::var("DOCKET_LOG_FORMAT").is_ok_and(|v| v.eq_ignore_ascii_case("json"));
    let colour = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_ansi(colour);
    let _ = if json { builder.json().try_init() } else { builder.try_init() };
}

/// Serves Prometheus metrics at `http://<listen>/metrics` for the rest of the process.
///
/// Counters and gauges are recorded through the `metrics` facade everywhere (`docket_*`); without
/// an endpoint they cost next to nothing and go nowhere.
pub fn serve_metrics(listen: SocketAddr) -> anyhow::Result<()> {
    metrics_exporter_prometheus::PrometheusBuilder::new()
        .with_http_listener(listen)
        .install()
        .map_err(|e| anyhow::anyhow!("cannot serve metrics on {listen}: {e}"))
}
