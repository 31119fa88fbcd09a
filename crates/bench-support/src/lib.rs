//! What docket's benchmarks (`benches/`) share: how they read their command line ([`args`]) and
//! how they sum up their samples ([`stats`]), so that every table means the same thing by
//! "median", "p95" and "ratio".
//!
//! Each benchmark declares its own options as a `#[derive(clap::Parser)]` struct and reads them
//! with [`args`]; `cargo bench --bench NAME -- --help` lists them.

pub mod stats;

use std::ffi::OsString;

/// The benchmark's options from its command line, `--bench` left out (cargo passes it to every
/// benchmark built with `harness = false`). On a bad option clap prints the usage and exits.
pub fn args<A: clap::Parser>() -> A {
    A::parse_from(without_cargos_flag(std::env::args_os()))
}

/// The command line without the `--bench` flag cargo adds.
fn without_cargos_flag(argv: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
    argv.into_iter().filter(|arg| arg != "--bench").collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, clap::Parser)]
    struct Options {
        #[arg(long, default_value_t = 5)]
        runs: usize,
        #[arg(long)]
        keep: bool,
    }

    fn parse(argv: &[&str]) -> Options {
        <Options as clap::Parser>::parse_from(without_cargos_flag(argv.iter().map(OsString::from)))
    }

    #[test]
    fn cargos_bench_flag_is_ignored_wherever_it_stands() {
        let options = parse(&["bench", "--runs", "3", "--bench"]);
        assert_eq!((options.runs, options.keep), (3, false));
        let options = parse(&["bench", "--bench", "--keep"]);
        assert_eq!((options.runs, options.keep), (5, true));
    }

    #[test]
    fn verify_cli() {
        <Options as clap::CommandFactory>::command().debug_assert();
    }
}
