//! The `docket` binary: parse the command line, run it, turn an error into a message and an
//! exit code. Everything else lives in the library.

use std::process::ExitCode;

use clap::Parser;

#[tokio::main]
async fn main() -> ExitCode {
    docket::telemetry::init();
    let cli = docket::cli::Cli::parse();
    match docket::cli::run(cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // `{:#}` prints the whole chain: "while opening …: cannot create the folder …".
            eprintln!("docket: {e:#}");
            ExitCode::FAILURE
        }
    }
}
