//! A PostgreSQL server of the test's own, which the test may stop and start again on the same
//! loopback port: `initdb` into a temp folder, `pg_ctl start` with trust authentication, TCP on
//! 127.0.0.1 only and the unix socket in the temp folder. Run as the `postgres` user when the
//! test runs as root (initdb refuses root). Stopped (fast mode) when dropped, even after a panic.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A running (or stopped) PostgreSQL server in a temp folder.
pub struct OwnPostgres {
    dir: tempfile::TempDir,
    bin: PathBuf,
    /// The loopback port it listens on, the same after every restart.
    pub port: u16,
}

impl OwnPostgres {
    /// Creates the cluster and starts it.
    pub fn start() -> Self {
        let bin = server_bin();
        let dir = tempfile::tempdir().expect("temp dir");
        if as_root() {
            chown_to_postgres(dir.path());
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0").expect("free port").local_addr().expect("addr").port();
        let server = Self { dir, bin, port };
        let data = server.data();
        server
            .run("initdb", &["-D", &data, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8", "--no-locale"]);
        server.start_again();
        server
    }

    /// `postgres://postgres@127.0.0.1:<port>/postgres`.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// Starts the stopped server on the same port, waiting until it accepts connections.
    pub fn start_again(&self) {
        let options =
            format!("-c listen_addresses=127.0.0.1 -p {} -k {} -c fsync=off", self.port, self.dir.path().display());
        let log = self.dir.path().join("server.log").display().to_string();
        self.run("pg_ctl", &["-D", &self.data(), "-l", &log, "-w", "-o", &options, "start"]);
    }

    /// Stops the server (fast mode: connections are cut at once), waiting until it is down.
    pub fn stop(&self) {
        self.run("pg_ctl", &self.stop_args());
    }

    /// `pg_ctl`'s arguments for [`stop`](Self::stop), which dropping runs too.
    fn stop_args(&self) -> [String; 6] {
        ["-D", &self.data(), "-m", "fast", "-w", "stop"].map(str::to_owned)
    }

    fn data(&self) -> String {
        self.dir.path().join("data").display().to_string()
    }

    fn command(&self, program: &str) -> Command {
        let program = self.bin.join(program);
        if as_root() {
            let mut cmd = Command::new("runuser");
            cmd.args(["-u", "postgres", "--"]).arg(program);
            cmd
        } else {
            Command::new(program)
        }
    }

    fn run(&self, program: &str, args: &[impl AsRef<std::ffi::OsStr> + std::fmt::Debug]) {
        let out = self.command(program).args(args).output().unwrap_or_else(|e| panic!("{program}: {e}"));
        assert!(out.status.success(), "{program} {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
}

impl Drop for OwnPostgres {
    fn drop(&mut self) {
        let _ = self.command("pg_ctl").args(self.stop_args()).output();
    }
}

/// The newest `/usr/lib/postgresql/<version>/bin` that holds `initdb`.
fn server_bin() -> PathBuf {
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .expect("PostgreSQL's server binaries under /usr/lib/postgresql")
        .flatten()
        .filter_map(|e| Some((e.file_name().to_str()?.parse().ok()?, e.path().join("bin"))))
        .filter(|(_, bin)| bin.join("initdb").exists())
        .collect();
    found.sort();
    found.pop().expect("an initdb under /usr/lib/postgresql/*/bin").1
}

fn as_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// Hands `dir` to the `postgres` user, so its server can write there.
fn chown_to_postgres(dir: &Path) {
    let out = Command::new("chown").arg("postgres:").arg(dir).output().expect("chown runs");
    assert!(out.status.success(), "chown: {}", String::from_utf8_lossy(&out.stderr));
}
