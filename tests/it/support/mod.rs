//! The test harness: a running docket wired to a fake Bot API, a temp data folder and a fresh
//! database ([`TestApp`], in this process), the real binary as a child process ([`child`]), plus
//! waiting helpers that poll a condition until a deadline (never a bare sleep).

mod app;
pub mod calls;
pub mod child;
pub mod generated;
pub mod logs;
#[cfg(feature = "postgres-tests")]
pub mod own_postgres;
#[cfg(feature = "postgres-tests")]
pub mod postgres;
pub mod tmpfs;
pub mod upload;

use std::path::{Path, PathBuf};
use std::time::Duration;

pub use app::{TestApp, test_options};

/// How long any single wait in a test may take before it fails.
pub const DEADLINE: Duration = Duration::from_secs(20);

/// Stamps each `async fn case(backend: Backend)` into one test per backend:
/// `sqlite::case` always, `postgres::case` with `--features postgres-tests`.
#[macro_export]
macro_rules! per_backend {
    ($($case:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    super::$case($crate::support::Backend::Sqlite).await;
                }
            )*
        }
        #[cfg(feature = "postgres-tests")]
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    super::$case($crate::support::Backend::Postgres).await;
                }
            )*
        }
    };
}

/// Which database a test runs against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    #[cfg(feature = "postgres-tests")]
    Postgres,
}

/// Polls `probe` every 20 ms until it gives `Ok`; once `deadline` has passed, panics with what
/// its last `Err` said (the state the test waited in vain to see change).
pub async fn eventually<T>(deadline: Duration, probe: impl AsyncFnMut() -> Result<T, String>) -> T {
    poll_until(deadline, probe).await.unwrap_or_else(|last| panic!("{last}"))
}

/// The one polling loop of the harness, behind [`eventually`] and the waits of
/// [`child::DocketProcess`]: polls `probe` every 20 ms until it gives `Ok`, or, once `deadline`
/// has passed, returns its last `Err`.
pub async fn poll_until<T, E>(deadline: Duration, mut probe: impl AsyncFnMut() -> Result<T, E>) -> Result<T, E> {
    let deadline = tokio::time::Instant::now() + deadline;
    loop {
        match probe().await {
            Ok(value) => return Ok(value),
            Err(last) if tokio::time::Instant::now() > deadline => return Err(last),
            Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
}

/// A fixture file's bytes.
pub fn fixture(rel: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures").join(rel);
    std::fs::read(&path).unwrap_or_else(|e| panic!("fixture {}: {e}", path.display()))
}

/// A stand-in for `[processing.external.ocr]`: `sh -c SCRIPT ocr INPUT OUTPUT ARGS…` (so the
/// script sees the input as `$1`, the output as `$2` and `args` from `$3` on), taking a PDF and
/// giving one, with no limits of its own, allowed to reach the paths of `reach`.
pub fn sh_ocr(script: &str, args: &[String], reach: Vec<PathBuf>) -> docket::config::ExternalToolConfig {
    let mut command: Vec<String> = vec!["sh".into(), "-c".into(), script.into(), "ocr".into()];
    command.extend(["{input}".into(), "{output}".into()]);
    command.extend_from_slice(args);
    docket::config::ExternalToolConfig {
        command,
        accepts: vec!["pdf".into()],
        output: "pdf".into(),
        memory_limit: None,
        timeout: None,
        memory_factor: 1.0,
        reach,
    }
}

/// Ghostscript rendering `input` into `output` with `device` at `dpi`, quietly and in its safe
/// mode; built, not run (see [`render_with_ghostscript`]).
pub fn ghostscript(device: &str, dpi: u32, input: &Path, output: &Path) -> std::process::Command {
    let mut gs = std::process::Command::new("gs");
    gs.args(["-q", "-dNOPAUSE", "-dBATCH", "-dSAFER"])
        .arg(format!("-sDEVICE={device}"))
        .arg(format!("-r{dpi}"))
        .arg(format!("-sOutputFile={}", output.display()))
        .arg(input);
    gs
}

/// Runs [`ghostscript`], which must succeed (its stderr says why not).
pub fn render_with_ghostscript(device: &str, dpi: u32, input: &Path, output: &Path) {
    let out = ghostscript(device, dpi, input, output).output().expect("Ghostscript runs (gs, installed by .ci/run)");
    assert!(out.status.success(), "gs: {}", String::from_utf8_lossy(&out.stderr));
}

/// A fresh temp folder (deleted when dropped) and the paths of an input file `input` and an
/// output file `output` in it, for a one-shot command such as `docket process`.
pub fn input_and_output(input: &str, output: &str) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let (input, output) = (dir.path().join(input), dir.path().join(output));
    (dir, input, output)
}

/// Every file under `dir`, recursively.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() { stack.push(p) } else { out.push(p) }
        }
    }
    out.sort();
    out
}
