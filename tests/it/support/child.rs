//! The real `docket` binary as a child process, for every test that runs it: one-shot commands
//! ([`command`], [`output`]) and `docket run` against a fake Bot API ([`DocketProcess`]),
//! restartable on the same folder, killed (SIGKILL) or stopped (SIGTERM), with the stderr of
//! every process it started kept in one log file that is printed when the test fails.
//!
//! Waiting on a running process goes through [`DocketProcess::until`], which polls like
//! [`eventually`](super::eventually) and fails at once when the process exited on its own, and
//! [`DocketProcess::exit_status`], which waits for it to end.

use std::fs::OpenOptions;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use docket::config::DatabaseUrl;
use fake_bot_api::{FakeTelegram, TEST_TOKEN};
use tempfile::TempDir;

use super::{TestApp, poll_until};

/// Variables that steer docket from outside; no child inherits them from the test's environment.
const STEERING: &[&str] =
    &["DOCKET_CONFIG", "DOCKET_LOG_FORMAT", "TELOXIDE_TOKEN", "TELOXIDE_API_URL", "RUST_LOG", "NO_COLOR"];

/// How many of the last log lines a failing test prints.
const LOG_TAIL: usize = 400;

/// `docket`, with none of the variables that steer it set (a test sets what it means to).
pub fn command() -> Command {
    command_of(Path::new(env!("CARGO_BIN_EXE_docket")))
}

/// `program` (a docket binary), with none of the variables that steer it set.
fn command_of(program: &Path) -> Command {
    let mut cmd = Command::new(program);
    for var in STEERING {
        cmd.env_remove(var);
    }
    cmd
}

/// Runs `docket ARGS`, followed by `--config PATH` when given, to completion.
pub fn output(args: &[&str], config: Option<&Path>) -> Output {
    let mut cmd = command();
    cmd.args(args);
    if let Some(config) = config {
        cmd.arg("--config").arg(config);
    }
    cmd.output().expect("the docket binary runs")
}

/// `docket process INPUT [--op OP] -o OUTPUT`, followed by `--config PATH` when given, to
/// completion.
pub fn process(input: &Path, op: Option<&str>, output: &Path, config: Option<&Path>) -> Output {
    let mut args = vec!["process", input.to_str().expect("utf8")];
    if let Some(op) = op {
        args.extend(["--op", op]);
    }
    args.extend(["-o", output.to_str().expect("utf8")]);
    self::output(&args, config)
}

/// A fresh temp folder holding `docket.toml` with `toml` in it: the folder (the file goes when
/// it is dropped) and the file's path, for `--config`.
pub fn write_config(toml: &str) -> (TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = write_config_in(dir.path(), toml);
    (dir, path)
}

/// Writes `toml` to `<dir>/docket.toml` and returns that path.
pub fn write_config_in(dir: &Path, toml: &str) -> PathBuf {
    let path = dir.join("docket.toml");
    std::fs::write(&path, toml).expect("write the configuration");
    path
}

/// A configuration file for a one-shot `docket` command (`status`, `jobs`, `janitor`, …) that
/// reads `app`'s SQLite database: its `[storage]` table names that database, `extra` follows.
pub fn storage_config(app: &TestApp, extra: &str) -> (TempDir, PathBuf) {
    let DatabaseUrl::Sqlite(db) = &app.config.storage.database_url else { unreachable!("a SQLite test app") };
    write_config(&format!("{}{extra}", sqlite_storage(db)))
}

/// A configuration file for `docket janitor` on `app`'s database and data folder (with no
/// free-space floor to speak of), whose `[retention]` table holds `retention`.
pub fn janitor_config(app: &TestApp, retention: &str) -> (TempDir, PathBuf) {
    let data_dir = app.data_dir().display().to_string();
    storage_config(app, &format!("data_dir = {data_dir:?}\nmin_free = \"1 B\"\n[retention]\n{retention}\n"))
}

/// `docket janitor` (with `dry_run`, `--dry-run`) run with `config` to its end, which must be
/// a success; its report.
pub fn janitor(config: &Path, dry_run: bool) -> String {
    let args: &[&str] = if dry_run { &["janitor", "--dry-run"] } else { &["janitor"] };
    let out = output(args, Some(config));
    assert!(out.status.success(), "{}", stderr(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The `[storage]` table naming the SQLite database at `db`, and nothing else.
pub fn sqlite_storage(db: &Path) -> String {
    format!("[storage]\ndatabase_url = \"sqlite://{}\"\n", db.display())
}

/// The start of a `docket run` configuration for a process in `dir`: quick long polls, the
/// database at `url` and the data folder `<dir>/data`. The tables a test needs go after it.
pub fn run_config(dir: &Path, url: &str) -> String {
    format!(
        "[telegram]\npoll_timeout = \"1s\"\n[storage]\ndatabase_url = {url:?}\ndata_dir = {:?}\n",
        dir.join("data").display().to_string()
    )
}

/// A finished command's stderr, as text.
pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// `docket --config <dir>/docket.toml run` as a child process in a folder of its own, against a
/// fake Bot API. Started and stopped as often as a test likes (each process is one "run"); the
/// stderr of every run is appended to `<dir>/docket.log`. Dropping it SIGKILLs a process still
/// running; when the test is failing, the log's tail is printed and the whole log kept beside
/// the (deleted) folder.
pub struct DocketProcess {
    dir: TempDir,
    config: PathBuf,
    log: PathBuf,
    env: Vec<(&'static str, String)>,
    pipe_stderr: bool,
    log_stdout: bool,
    binary: Option<PathBuf>,
    state: Mutex<ProcessState>,
}

#[derive(Default)]
struct ProcessState {
    child: Option<Child>,
    /// Copies a piped stderr into the log file until the process ends.
    tee: Option<JoinHandle<()>>,
    /// Processes started so far.
    runs: u32,
}

impl DocketProcess {
    /// Writes `toml` to `<dir>/docket.toml`; no process yet. Each process gets the test token and
    /// `fake`'s URL, `RUST_LOG=info` and `NO_COLOR=1`, and no other steering variable.
    pub fn new(dir: TempDir, toml: &str, fake: &FakeTelegram) -> Self {
        let config = dir.path().join("docket.toml");
        std::fs::write(&config, toml).expect("write the configuration");
        let log = dir.path().join("docket.log");
        Self {
            dir,
            config,
            log,
            env: vec![
                ("TELOXIDE_TOKEN", TEST_TOKEN.to_owned()),
                ("TELOXIDE_API_URL", fake.api_url().to_string()),
                ("RUST_LOG", "info".to_owned()),
                ("NO_COLOR", "1".to_owned()),
            ],
            pipe_stderr: false,
            log_stdout: false,
            binary: None,
            state: Mutex::new(ProcessState::default()),
        }
    }

    /// Sets one of the variables each process gets (replacing the default).
    pub fn env(mut self, key: &'static str, value: &str) -> Self {
        self.env.retain(|(k, _)| *k != key);
        self.env.push((key, value.to_owned()));
        self
    }

    /// Leaves one of the default variables unset.
    pub fn without_env(mut self, key: &'static str) -> Self {
        self.env.retain(|(k, _)| *k != key);
        self
    }

    /// Starts each process from `binary` (a copy of docket's, which a test may replace while it
    /// runs, as an upgrade does) instead of the one cargo built.
    pub fn binary(mut self, binary: PathBuf) -> Self {
        self.binary = Some(binary);
        self
    }

    /// Gives each process a pipe for its stderr (copied into the log), not the log file itself.
    pub fn stderr_to_pipe(mut self) -> Self {
        self.pipe_stderr = true;
        self
    }

    /// Appends each process's stdout to the log too (it is discarded otherwise), so that the log
    /// holds all the process wrote.
    pub fn stdout_to_log(mut self) -> Self {
        self.log_stdout = true;
        self
    }

    /// The configuration file each process reads (a test may rewrite it, then send SIGHUP).
    pub fn config_path(&self) -> &Path {
        &self.config
    }

    /// The process's folder (its working directory, holding `docket.toml` and `docket.log`).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Starts a process; panics if one is running.
    pub fn start(&self) {
        let mut state = self.state();
        assert!(state.child.is_none(), "a docket process is already running");
        state.runs += 1;
        let mut log = OpenOptions::new().create(true).append(true).open(&self.log).expect("open the log file");
        writeln!(log, "===== docket run #{} =====", state.runs).expect("write the log file");
        let mut cmd = command_of(self.binary.as_deref().unwrap_or(Path::new(env!("CARGO_BIN_EXE_docket"))));
        cmd.arg("--config").arg(&self.config).arg("run").current_dir(self.dir.path());
        for (key, value) in &self.env {
            cmd.env(key, value);
        }
        cmd.stdin(Stdio::null());
        if self.log_stdout {
            cmd.stdout(Stdio::from(log.try_clone().expect("share the log file")));
        } else {
            cmd.stdout(Stdio::null());
        }
        if self.pipe_stderr {
            cmd.stderr(Stdio::piped());
        } else {
            cmd.stderr(Stdio::from(log.try_clone().expect("share the log file")));
        }
        let mut child = cmd.spawn().expect("the docket binary starts");
        state.tee = child.stderr.take().map(|mut pipe| {
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut pipe, &mut log);
            })
        });
        state.child = Some(child);
    }

    /// The running process's id.
    pub fn pid(&self) -> u32 {
        self.state().child.as_ref().expect("a docket process is running").id()
    }

    /// SIGKILLs the running process and reaps it: no destructor, no shutdown, no release of
    /// leases.
    pub fn kill(&self) {
        let mut state = self.state();
        let mut child = state.child.take().expect("a docket process is running");
        child.kill().expect("SIGKILL the docket process");
        child.wait().expect("reap the docket process");
        join_tee(&mut state);
    }

    /// Sends SIGTERM to the running process (it stays running until it exits on its own; see
    /// [`exit_status`](Self::exit_status)).
    pub fn terminate(&self) {
        self.signal("TERM");
    }

    /// Sends the signal named `name` (`"HUP"`, `"TERM"`) to the running process.
    pub fn signal(&self, name: &str) {
        let pid = self.pid();
        let sent = Command::new("kill").arg(format!("-{name}")).arg(pid.to_string()).status().expect("run kill");
        assert!(sent.success(), "kill -{name} {pid}: {sent}");
    }

    /// Waits for the running process to end on its own and returns its exit status; panics with
    /// its log after `timeout`.
    pub async fn exit_status(&self, timeout: Duration) -> ExitStatus {
        match poll_until(timeout, async || self.exited().ok_or(())).await {
            Ok(status) => status,
            Err(()) => panic!("docket still runs after {timeout:?}; its log:\n{}", self.log_text()),
        }
    }

    /// Polls `probe` until it gives a value; panics after `timeout`, or at once if the process
    /// exited on its own meanwhile.
    pub async fn until<T>(&self, what: &str, timeout: Duration, mut probe: impl AsyncFnMut() -> Option<T>) -> T {
        let waited = poll_until(timeout, async || {
            if let Some(value) = probe().await {
                return Ok(value);
            }
            if let Some(status) = self.exited() {
                panic!("docket exited on its own ({status}) while the test waited for {what}");
            }
            Err(())
        })
        .await;
        waited.unwrap_or_else(|()| panic!("waited {timeout:?} for {what} in vain"))
    }

    /// Everything the processes wrote to stderr so far.
    pub fn log_text(&self) -> String {
        String::from_utf8_lossy(&std::fs::read(&self.log).unwrap_or_default()).into_owned()
    }

    /// Neither the token nor a download URL reached any process's log.
    pub fn assert_no_secrets_logged(&self) {
        let secret = TEST_TOKEN.split(':').nth(1).expect("the token has a secret half");
        let log = self.log_text();
        assert!(!log.contains(secret), "the bot token leaked into docket's log");
        assert!(!log.contains("/file/bot"), "a file download URL leaked into docket's log");
    }

    /// The exit status if the running process has ended (it is reaped and forgotten then).
    fn exited(&self) -> Option<ExitStatus> {
        let mut state = self.state();
        let status = state.child.as_mut()?.try_wait().expect("poll the docket process")?;
        state.child = None;
        join_tee(&mut state);
        Some(status)
    }

    fn state(&self) -> MutexGuard<'_, ProcessState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Waits until a piped stderr is all in the log (the process has ended, so the pipe closes).
fn join_tee(state: &mut ProcessState) {
    if let Some(tee) = state.tee.take() {
        let _ = tee.join();
    }
}

impl Drop for DocketProcess {
    fn drop(&mut self) {
        let runs = {
            let mut state = self.state();
            if let Some(mut child) = state.child.take() {
                let _ = child.kill();
                let _ = child.wait();
            }
            join_tee(&mut state);
            state.runs
        };
        if std::thread::panicking() && runs > 0 {
            // The temp folder goes with the test; the whole log is kept beside it.
            let kept = self.dir.path().with_extension("log");
            let kept = std::fs::copy(&self.log, &kept).map(|_| kept.display().to_string());
            eprintln!("docket's whole log: {}", kept.unwrap_or_else(|e| format!("(not kept: {e})")));
            let log = self.log_text();
            let lines: Vec<&str> = log.lines().collect();
            let tail = lines[lines.len().saturating_sub(LOG_TAIL)..].join("\n");
            eprintln!(
                "----- docket's log ({runs} processes, last {} of {} lines) -----\n{tail}\n----- end of docket's log -----",
                lines.len().min(LOG_TAIL),
                lines.len()
            );
        }
    }
}
