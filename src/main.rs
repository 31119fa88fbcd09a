//! The `docket` binary: parse the command line, run it, turn an error into a message and an
//! exit code. Everything else lives in the library.

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;

/// How long the runtime waits, once `docket` is done, for blocking work still running (lopdf, a
/// local copy): such work cannot be interrupted, its job has been released already, and the
/// process must exit within its shutdown grace whatever a document costs.
const BLOCKING_WORK_AT_EXIT: Duration = Duration::from_millis(500);

fn main() -> ExitCode {
    docket::telemetry::init();
    let cli = docket::cli::Cli::parse();
    // The child of a contained run works alone under an address-space limit: no runtime, whose
    // threads would take address space from the document.
    let cli = match docket::cli::run_if_contained_child(cli) {
        Ok(cli) => cli,
        Err(Ok(())) => return ExitCode::SUCCESS,
        Err(Err(e)) => {
            eprintln!("docket: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("docket: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(docket::cli::run(cli));
    runtime.shutdown_timeout(BLOCKING_WORK_AT_EXIT);
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // `{:#}` prints the whole chain: "while opening …: cannot create the folder …".
            eprintln!("docket: {e:#}");
            ExitCode::FAILURE
        }
    }
}
