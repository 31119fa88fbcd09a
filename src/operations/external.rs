//! External programs as operations: `[processing.external.<name>]`.
//!
//! A tool is an argument list, never a shell command line: `{input}`, `{output}`, `{lang}` and
//! `{threads}` (the threads the run may keep busy, for a tool's `--jobs`) are replaced inside the
//! arguments, and nothing else is interpreted, so a file name or a
//! language can never become a command. Whether the program exists is checked once, when docket
//! starts ([`ExternalTool::availability`]); a missing one makes its operation unavailable with
//! a message, not a failure per run.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Peak resident memory per byte of input assumed for a tool that does not say its own.
pub const DEFAULT_TOOL_MEMORY_FACTOR: f64 = 10.0;

/// One configured external program.
#[derive(Debug, Clone, PartialEq)]
pub struct ExternalTool {
    /// The operation's name (the `<name>` of its section).
    pub name: String,
    /// The program and its arguments, with `{input}`, `{output}` and `{lang}` placeholders.
    pub command: Vec<String>,
    /// The formats it takes, by [`crate::detect::DetectedFormat::label`] (`pdf`, `docx`, …).
    pub accepts: Vec<String>,
    /// The format of what it writes (a label as in `accepts`).
    pub output: String,
    /// Its own address-space limit, instead of `[processing] memory_limit`.
    pub memory_limit: Option<u64>,
    /// Its own time limit, instead of `[processing] timeout`.
    pub timeout: Option<Duration>,
    /// Peak resident memory per byte of input, for the memory budget.
    pub memory_factor: f64,
    /// Paths it may read and write beyond its own files and the system's (see
    /// [`super::confine`]).
    pub reach: Vec<PathBuf>,
}

// The factor is a measured ratio, never NaN.
impl Eq for ExternalTool {}

/// Whether a tool's program can run on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Availability {
    /// Found, at this path.
    Available(PathBuf),
    /// Not found: why, in words for an admin.
    Unavailable(String),
}

impl ExternalTool {
    /// Whether the program is there: a path is checked as is, a bare name is looked up in
    /// `PATH`, and it must be an executable file.
    pub fn availability(&self) -> Availability {
        let Some(program) = self.command.first() else {
            return Availability::Unavailable(format!("operation {:?} has an empty command", self.name));
        };
        locate(program, |missing| format!("operation {:?} is unavailable: its program {missing}", self.name))
    }
}

/// The arguments of `command` with its placeholders replaced.
pub fn expand(command: &[String], input: &Path, output: &Path, lang: &str, threads: usize) -> Vec<OsString> {
    command
        .iter()
        .map(|arg| match arg.as_str() {
            // Whole-argument placeholders keep paths that are not UTF-8 intact.
            "{input}" => input.as_os_str().to_owned(),
            "{output}" => output.as_os_str().to_owned(),
            other => other
                .replace("{input}", &input.to_string_lossy())
                .replace("{output}", &output.to_string_lossy())
                .replace("{lang}", lang)
                .replace("{threads}", &threads.to_string())
                .into(),
        })
        .collect()
}

/// Whether `program` (a path, or a name looked up in `PATH`) is there to run. When it is not,
/// `unavailable` says what that means, given what is missing, worded the same for every program:
/// `"mutool" is not installed on this machine (not an executable file in PATH)`.
pub fn locate(program: &str, unavailable: impl FnOnce(&str) -> String) -> Availability {
    match find_program(program, std::env::var_os("PATH")) {
        Some(path) => Availability::Available(path),
        None => {
            let where_ = if program.contains('/') { "" } else { " in PATH" };
            let missing = format!("{program:?} is not installed on this machine (not an executable file{where_})");
            Availability::Unavailable(unavailable(&missing))
        }
    }
}

/// Where `program` is: itself when it names a path, else the first executable file of that
/// name in `path` (a `PATH` value).
pub fn find_program(program: &str, path: Option<OsString>) -> Option<PathBuf> {
    if program.contains('/') {
        return Some(PathBuf::from(program)).filter(|p| is_executable(p));
    }
    std::env::split_paths(&path?).map(|dir| dir.join(program)).find(|p| is_executable(p))
}

/// A tool named `ocr` running `command`, with no limits of its own and `memory_factor`, for unit
/// tests.
#[cfg(test)]
pub(crate) fn stand_in(command: &[&str], memory_factor: f64) -> ExternalTool {
    ExternalTool {
        name: "ocr".into(),
        command: command.iter().map(|s| (*s).to_owned()).collect(),
        accepts: vec!["pdf".into()],
        output: "pdf".into(),
        memory_limit: None,
        timeout: None,
        memory_factor,
        reach: Vec::new(),
    }
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(command: &[&str]) -> ExternalTool {
        stand_in(command, DEFAULT_TOOL_MEMORY_FACTOR)
    }

    #[test]
    fn placeholders_are_replaced_inside_arguments_and_nothing_else_is_interpreted() {
        let args = expand(
            &[
                "ocrmypdf".into(),
                "-l".into(),
                "{lang}".into(),
                "{input}".into(),
                "--out={output}".into(),
                "--jobs={threads}".into(),
                "$HOME;".into(),
            ],
            Path::new("/in dir/a b.pdf"),
            Path::new("/out/r.pdf"),
            "eng+rus",
            3,
        );
        let args: Vec<_> = args.iter().map(|a| a.to_string_lossy().into_owned()).collect();
        assert_eq!(args, ["ocrmypdf", "-l", "eng+rus", "/in dir/a b.pdf", "--out=/out/r.pdf", "--jobs=3", "$HOME;"]);
    }

    #[test]
    fn a_missing_program_makes_the_tool_unavailable_with_its_name() {
        let missing = tool(&["docket-no-such-tool-3f9a", "{input}"]).availability();
        match missing {
            Availability::Unavailable(why) => {
                assert!(why.contains("\"docket-no-such-tool-3f9a\" is not installed"), "{why}");
                assert!(why.contains("operation \"ocr\""), "{why}");
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(tool(&["/bin/no/such"]).availability(), Availability::Unavailable(_)));
        assert!(matches!(tool(&[]).availability(), Availability::Unavailable(_)));
        assert!(matches!(tool(&["sh"]).availability(), Availability::Available(_)));
    }
}
