//! Logging setup and the metrics endpoint.
//!
//! Log output goes to stderr (journald under systemd); `[log] level` (or `RUST_LOG`) filters,
//! and `[log] format = "json"` (or `DOCKET_LOG_FORMAT=json`) switches to one JSON object per
//! line; a reload applies new values. Colours (ANSI escape codes) are used only when stderr is a
//! terminal and `NO_COLOR` is not set: journald, a pipe or a file gets plain text.
//!
//! `[metrics] listen` serves `/metrics` (the Prometheus recorder behind the `metrics` facade,
//! rendered here, because the exporter's own listener cannot add routes) and `/healthz`, whose
//! checks the wiring supplies as a [`Probe`].
//!
//! What is never logged: the bot token, file download URLs and file paths from getFile (they
//! hold the token), database passwords, message texts, captions and user file names. Modules
//! log ids and sizes instead, and `#[instrument]` is always used with `skip_all`.

use std::io::IsTerminal;
use std::sync::{Arc, OnceLock};

use tracing_subscriber::layer::{Layer, SubscriberExt as _};
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{EnvFilter, Registry, reload};

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use futures_util::future::BoxFuture;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use tokio_util::sync::CancellationToken;

use crate::config::{LogConfig, LogFormat};

/// The environment variable that overrides `[log] format`.
pub const LOG_FORMAT_ENV: &str = "DOCKET_LOG_FORMAT";
/// The environment variable that overrides `[log] level`.
pub const LOG_LEVEL_ENV: &str = "RUST_LOG";

/// The writer layer, boxed so that text and JSON can replace each other.
type Writer = Box<dyn Layer<Registry> + Send + Sync>;
/// The subscriber below the filter: the registry and the writer.
type Written = tracing_subscriber::layer::Layered<reload::Layer<Writer, Registry>, Registry>;

/// Handles on the installed subscriber's filter and writer, for [`apply`].
struct Control {
    filter: reload::Handle<EnvFilter, Written>,
    writer: reload::Handle<Writer, Registry>,
}

static CONTROL: OnceLock<Control> = OnceLock::new();

/// Installs the global subscriber with the built-in `[log]` defaults (overridden by
/// `RUST_LOG` and `DOCKET_LOG_FORMAT`), before the configuration is read; [`apply`] then sets
/// the configured ones. Safe to call more than once (later calls do nothing).
pub fn init() {
    let config = LogConfig::default();
    let (writer, writer_handle) = reload::Layer::new(writer(format(&config)));
    let (filter, filter_handle) = reload::Layer::new(filter(&config));
    if Registry::default().with(writer).with(filter).try_init().is_ok() {
        let _ = CONTROL.set(Control { filter: filter_handle, writer: writer_handle });
    }
}

/// Applies `[log]` to the subscriber [`init`] installed: at start, and again on every reload.
/// `RUST_LOG` and `DOCKET_LOG_FORMAT` still win when set.
pub fn apply(config: &LogConfig) {
    let Some(control) = CONTROL.get() else { return };
    let _ = control.writer.reload(writer(format(config)));
    let _ = control.filter.reload(filter(config));
}

fn format(config: &LogConfig) -> LogFormat {
    std::env::var(LOG_FORMAT_ENV).ok().and_then(|v| LogFormat::parse(&v)).unwrap_or(config.format)
}

fn filter(config: &LogConfig) -> EnvFilter {
    let from_env = std::env::var(LOG_LEVEL_ENV).ok().filter(|v| !v.trim().is_empty());
    // `[log] level` was checked when the configuration was read; a bad RUST_LOG falls back to it.
    from_env
        .and_then(|v| EnvFilter::try_new(v).ok())
        .or_else(|| EnvFilter::try_new(&config.level).ok())
        .unwrap_or_else(|| EnvFilter::new(crate::config::log::DEFAULT_LEVEL))
}

fn writer(format: LogFormat) -> Writer {
    let colour = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let layer = tracing_subscriber::fmt::layer().with_writer(std::io::stderr).with_target(false);
    match format {
        LogFormat::Text => layer.with_ansi(colour).boxed(),
        LogFormat::Json => layer.json().with_ansi(false).boxed(),
    }
}

/// Installs the Prometheus recorder behind the `metrics` facade, with histogram buckets for the
/// durations (`docket_*_seconds`). Counters and gauges are recorded everywhere (`docket_*`);
/// without a recorder they cost next to nothing and go nowhere.
pub fn install_recorder() -> anyhow::Result<PrometheusHandle> {
    PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Suffix("_seconds".to_owned()), DURATION_BUCKETS)
        .and_then(PrometheusBuilder::install_recorder)
        .map_err(|e| anyhow::anyhow!("cannot install the metrics recorder: {e}"))
}

/// Bucket bounds of the duration histograms, in seconds: a small PDF's processing to a 2 GB
/// download on a slow line.
const DURATION_BUCKETS: &[f64] = &[0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0];

/// What `/metrics` and `/healthz` need to answer.
#[derive(Clone)]
pub struct Endpoint {
    /// Renders the recorder.
    pub metrics: PrometheusHandle,
    /// Checks health and refreshes the gauges read from the database.
    pub probe: Arc<dyn Probe>,
}

/// The checks behind the endpoint, supplied by the wiring (`app`).
pub trait Probe: Send + Sync {
    /// Sets the gauges read from the database, before a scrape.
    fn refresh(&self) -> BoxFuture<'_, ()>;
    /// Why docket is not healthy; empty when it is.
    fn problems(&self) -> BoxFuture<'_, Vec<String>>;
}

/// Serves `GET /metrics` (Prometheus text) and `GET /healthz` (200 `ok`, or 503 with one reason a
/// line) on `listener` until `stop` is cancelled.
pub async fn serve(listener: tokio::net::TcpListener, endpoint: Endpoint, stop: CancellationToken) {
    let app = Router::new().route("/metrics", get(metrics)).route("/healthz", get(healthz)).with_state(endpoint);
    if let Err(e) = axum::serve(listener, app).with_graceful_shutdown(stop.cancelled_owned()).await {
        tracing::error!(error = %e, "the metrics endpoint stopped");
    }
}

async fn metrics(State(endpoint): State<Endpoint>) -> impl IntoResponse {
    endpoint.probe.refresh().await;
    endpoint.metrics.run_upkeep();
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], endpoint.metrics.render())
}

async fn healthz(State(endpoint): State<Endpoint>) -> impl IntoResponse {
    let problems = endpoint.probe.problems().await;
    if problems.is_empty() {
        (StatusCode::OK, "ok\n".to_owned())
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, problems.iter().map(|p| format!("{p}\n")).collect())
    }
}
