//! The docket child every bot run is, as the lossy, pages and memory benchmarks start it: this
//! build's binary, `docket process FILE --contained`. Each includes this file with
//! `#[path = "common/child.rs"] mod child;` and uses all of it.

use std::path::Path;
use std::process::Command;

/// This build's docket binary.
pub const DOCKET: &str = env!("CARGO_BIN_EXE_docket");

/// Bytes in a MiB, for the sizes and the peaks per MB of input the reports print.
pub const MIB: f64 = 1024.0 * 1024.0;

/// `docket process INPUT [--op OP] -o OUTPUT --contained` with limits that do not bind: an
/// address-space limit of `memory_limit` bytes, `max_inflate` bytes of inflated streams, no
/// file size limit, an hour; two malloc arenas, as docket gives its children
/// (`operations::contained`).
pub fn process(input: &Path, op: Option<&str>, output: &Path, memory_limit: u64, max_inflate: u64) -> Command {
    let mut command = Command::new(DOCKET);
    command.arg("process").arg(input);
    if let Some(op) = op {
        command.args(["--op", op]);
    }
    command
        .arg("-o")
        .arg(output)
        .args(["--contained", "--memory-limit", &memory_limit.to_string(), "--timeout-secs", "3600"])
        .args(["--max-inflate", &max_inflate.to_string()])
        .args(["--max-file", &u64::MAX.to_string()])
        .env("MALLOC_ARENA_MAX", "2");
    command
}
