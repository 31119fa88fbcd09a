//! What docket talks to in the throughput and memory runs: nginx serving the test files over
//! HTTP on loopback, and a minimal Bot API that answers getFile with an absolute path, as a local
//! Bot API server (`--local`) does.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use axum::Router;
use axum::extract::{Path as AxumPath, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures_util::FutureExt as _;
use serde_json::json;
use tokio::sync::oneshot;
use url::Url;

/// The token docket is built with in these runs (only ever sent to 127.0.0.1).
pub const TOKEN: &str = "123456:BENCH-docket-download";

/// nginx on `127.0.0.1:<port>` serving `files_dir` under its own absolute path, so that
/// `http://127.0.0.1:<port>` + `<absolute path of a file>` is that file. Stopped on drop.
pub struct Nginx {
    child: Child,
    port: u16,
    prefix: PathBuf,
}

impl Nginx {
    pub fn start(work: &Path, files_dir: &Path) -> anyhow::Result<Self> {
        let prefix = work.join("nginx");
        std::fs::create_dir_all(prefix.join("tmp"))?;
        let port = free_port()?;
        let files = files_dir.to_str().context("the files folder must be valid UTF-8")?.trim_end_matches('/');
        let p = prefix.to_str().context("the work folder must be valid UTF-8")?;
        let conf = format!(
            r"daemon off;
master_process on;
worker_processes 1;
pid {p}/nginx.pid;
error_log {p}/error.log warn;
events {{ worker_connections 64; }}
http {{
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_timeout 30s;
    default_type application/octet-stream;
    client_body_temp_path {p}/tmp/body;
    proxy_temp_path {p}/tmp/proxy;
    fastcgi_temp_path {p}/tmp/fastcgi;
    uwsgi_temp_path {p}/tmp/uwsgi;
    scgi_temp_path {p}/tmp/scgi;
    server {{
        listen 127.0.0.1:{port};
        location / {{ return 404; }}
        location {files}/ {{ root /; }}
    }}
}}
"
        );
        let conf_path = prefix.join("nginx.conf");
        std::fs::write(&conf_path, conf)?;
        let mut child = Command::new("nginx")
            .arg("-p")
            .arg(&prefix)
            .arg("-e")
            .arg(prefix.join("error.log"))
            .arg("-c")
            .arg(&conf_path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("starting nginx (apt-get install -y nginx)")?;
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                break;
            }
            if let Some(status) = child.try_wait()? {
                let log = std::fs::read_to_string(prefix.join("error.log")).unwrap_or_default();
                bail!("nginx exited with {status}: {log}");
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                bail!("nginx did not listen on 127.0.0.1:{port} within 10 s");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(Self { child, port, prefix })
    }

    /// `http://127.0.0.1:<port>`: docket's `local_files_url`.
    pub fn base_url(&self) -> Url {
        Url::parse(&format!("http://127.0.0.1:{}", self.port)).expect("a loopback URL is valid")
    }

    /// The URL of a file under the served folder.
    pub fn url_of(&self, file: &Path) -> String {
        format!("http://127.0.0.1:{}{}", self.port, file.display())
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        // SIGTERM to the master stops its worker too (killing the master alone would orphan it).
        let _ = Command::new("kill").arg("-TERM").arg(self.child.id().to_string()).status();
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                let _ = std::fs::remove_dir_all(&self.prefix);
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> anyhow::Result<u16> {
    let listener = TcpListener::bind(("127.0.0.1", 0))?;
    Ok(listener.local_addr()?.port())
}

/// What getFile answers.
#[derive(Debug, Clone, Default)]
struct Served {
    path: String,
    size: u64,
    /// Send `file_size` even when it does not fit teloxide's `u32` (to show what happens).
    force_size: bool,
}

/// A Bot API that only knows getFile. Serves until dropped.
pub struct FileApi {
    addr: SocketAddr,
    served: Arc<Mutex<Served>>,
    _stop: oneshot::Sender<()>,
}

impl FileApi {
    pub async fn start() -> anyhow::Result<Self> {
        let served = Arc::new(Mutex::new(Served::default()));
        let router = Router::new().route("/{token}/{method}", get(answer).post(answer)).with_state(Arc::clone(&served));
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(async move {
            // Serves until `_stop` is dropped with the FileApi: `stopped` then ends (as an error).
            let _ = axum::serve(listener, router).with_graceful_shutdown(stopped.map(|_| ())).await;
        });
        Ok(Self { addr, served, _stop: stop })
    }

    /// The Bot API base URL for docket's `api_url`.
    pub fn api_url(&self) -> Url {
        Url::parse(&format!("http://{}/", self.addr)).expect("a socket address makes a valid URL")
    }

    /// From now on getFile describes `path` (absolute) of `size` bytes. A size that does not fit
    /// in `u32` is left out, as teloxide cannot read it, unless `force_size`.
    pub fn serve(&self, path: &Path, size: u64, force_size: bool) {
        *self.served.lock().unwrap_or_else(PoisonError::into_inner) =
            Served { path: path.display().to_string(), size, force_size };
    }
}

async fn answer(
    State(served): State<Arc<Mutex<Served>>>,
    AxumPath((token, method)): AxumPath<(String, String)>,
) -> Response {
    if token.strip_prefix("bot") != Some(TOKEN) {
        return (
            StatusCode::UNAUTHORIZED,
            axum::Json(json!({"ok": false, "error_code": 401, "description": "Unauthorized"})),
        )
            .into_response();
    }
    if !method.eq_ignore_ascii_case("getFile") {
        return (
            StatusCode::NOT_FOUND,
            axum::Json(json!({"ok": false, "error_code": 404, "description": "Not Found"})),
        )
            .into_response();
    }
    let served = served.lock().unwrap_or_else(PoisonError::into_inner).clone();
    let mut result = json!({
        "file_id": "BQACAgIAAxkBAAIbench",
        "file_unique_id": "AgADbench",
        "file_path": served.path,
    });
    if served.force_size || served.size <= u64::from(u32::MAX) {
        result["file_size"] = json!(served.size);
    }
    axum::Json(json!({"ok": true, "result": result})).into_response()
}
