//! Captures everything docket logs during the test run, so tests can assert that no secret was
//! ever written.

use std::io::Write;
use std::sync::{Mutex, OnceLock};

use fake_bot_api::TEST_TOKEN;

static CAPTURED: OnceLock<Mutex<Vec<u8>>> = OnceLock::new();

fn buffer() -> &'static Mutex<Vec<u8>> {
    CAPTURED.get_or_init(|| Mutex::new(Vec::new()))
}

struct Capture;

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        buffer().lock().expect("log buffer").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Installs the capturing subscriber (debug level for docket) once per test binary.
pub fn capture() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        let _ = tracing_subscriber::fmt()
            .with_env_filter("debug,sqlx=warn,hyper=warn,h2=warn,reqwest=debug,axum=warn,tower=warn")
            .with_writer(|| Capture)
            .with_ansi(false)
            .try_init();
    });
}

/// Everything logged so far.
pub fn captured() -> String {
    String::from_utf8_lossy(&buffer().lock().expect("log buffer")).into_owned()
}

/// Panics if the token (or its secret half) appears in any log line.
pub fn assert_no_secrets() {
    if std::thread::panicking() {
        return;
    }
    let secret = TEST_TOKEN.split(':').nth(1).expect("token has a secret half");
    let logs = captured();
    assert!(!logs.contains(secret), "the bot token leaked into the logs");
    assert!(!logs.contains("/file/bot"), "a file download URL leaked into the logs");
}
