//! Office documents as PDFs: `topdf` on a Word, Excel, PowerPoint, OpenDocument or RTF file
//! runs LibreOffice in headless mode (Debian's `libreoffice-writer-nogui`, `-calc-nogui` and
//! `-impress-nogui`).
//!
//! LibreOffice runs as every external program does, inside the run's contained child: the
//! run's time, memory and file-size limits, its process group (killed as a whole), its
//! confinement (its own files and the system's, no network). Besides:
//!
//! - **A profile per run.** LibreOffice keeps a user profile and lets only one process use it:
//!   a second `soffice` on the same profile hands its work to the first one and exits. Each run
//!   gets a fresh profile in its own scratch folder, deleted with it, so two runs at once never
//!   meet, and nothing one document leaves in a profile reaches the next.
//! - **Macros off.** The profile is written before LibreOffice starts, with macro execution
//!   disabled, the macro security level at its highest and links to untrusted referers
//!   blocked ([`PROFILE_SETTINGS`]).
//! - **Its socket.** LibreOffice will not start without its single-instance socket, which it
//!   makes in `/tmp` whatever `TMPDIR` says; the run may make and remove sockets there, and
//!   nothing else ([`SOCKET_FOLDERS`]).
//! - **Named by its format.** The input is linked under a name with the extension of the
//!   format detection found (LibreOffice picks its import filter partly by extension), and the
//!   PDF it writes into a folder of its own is moved to the run's output. LibreOffice exits
//!   successfully even when it could not load the file; the missing PDF is what says so.
//!
//! Whether LibreOffice is installed is found once at start ([`Office::find`], `[processing]
//! soffice`); without it, an office file fails with a reason that says this bot cannot convert
//! office files.

use std::path::{Path, PathBuf};

use super::external::locate;
use super::{Availability, Failure, Report};

/// The formats LibreOffice turns into PDFs here, by detection label: those `topdf` takes that
/// are not pictures.
pub const FORMATS: &[&str] = &["doc", "docx", "odt", "rtf", "xls", "xlsx", "ods", "ppt", "pptx", "odp"];

/// The program `[processing] soffice` names by default (looked up in `PATH`).
pub const DEFAULT_PROGRAM: &str = "soffice";

/// The Debian packages that bring LibreOffice without a desktop, for messages to admins.
pub const PACKAGES: &str = "libreoffice-writer-nogui libreoffice-calc-nogui libreoffice-impress-nogui";

/// Where LibreOffice makes the Unix socket through which a second start on the same profile
/// would hand its work to the first: `/tmp`, hard-coded (it does not read `TMPDIR`), named after
/// the profile, so each run's is its own. Without it LibreOffice does not start; the run may
/// make and remove sockets there and touch nothing else ([`super::confine::Reach::sockets`]).
pub const SOCKET_FOLDERS: &[&str] = &["/tmp"];

/// Peak resident memory of a conversion per byte of input, at worst. An estimate: LibreOffice
/// starts at about 210 MiB whatever the document (measured on a two-page DOCX, inside the
/// tool's base address space), and an office file is compressed XML that its model holds at
/// many times its size.
pub const OFFICE_MEMORY_FACTOR: f64 = 30.0;

/// What the profile of a run holds before LibreOffice first starts on it
/// (`user/registrymodifications.xcu`).
pub const PROFILE_SETTINGS: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<oor:items xmlns:oor="http://openoffice.org/2001/registry" xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<item oor:path="/org.openoffice.Office.Common/Security/Scripting"><prop oor:name="DisableMacrosExecution" oor:op="fuse"><value>true</value></prop></item>
<item oor:path="/org.openoffice.Office.Common/Security/Scripting"><prop oor:name="MacroSecurityLevel" oor:op="fuse"><value>3</value></prop></item>
<item oor:path="/org.openoffice.Office.Common/Security/Scripting"><prop oor:name="BlockUntrustedRefererLinks" oor:op="fuse"><value>true</value></prop></item>
</oor:items>
"#;

/// LibreOffice, found on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Office {
    /// Its `soffice` program.
    pub program: PathBuf,
}

impl Office {
    /// Whether `program` (`[processing] soffice`: a path, or a name looked up in `PATH`) is
    /// there to run.
    pub fn find(program: &str) -> Availability {
        locate(program, |missing| {
            format!(
                "office files cannot be converted: LibreOffice's {missing}; install {PACKAGES}, or set \
                 [processing] soffice"
            )
        })
    }

    /// [`Office::find`] as the converter, when it is there.
    pub fn available(program: &str) -> Option<Self> {
        match Self::find(program) {
            Availability::Available(program) => Some(Self { program }),
            Availability::Unavailable(_) => None,
        }
    }
}

/// Whether `label` (a detection label) is an office format LibreOffice converts.
pub fn takes(label: &str) -> bool {
    FORMATS.contains(&label)
}

/// One conversion's folders, all inside `root` (the run's scratch folder).
#[derive(Debug)]
struct Folders {
    /// LibreOffice's user profile.
    profile: PathBuf,
    /// The input under its format's name.
    input: PathBuf,
    /// Where LibreOffice writes the PDF.
    out: PathBuf,
}

impl Folders {
    /// Lays them out under `root` for `input`, whose content is a `label` file: the profile
    /// with its settings, the input linked as `document.<label>`.
    fn prepare(root: &Path, input: &Path, label: &str) -> std::io::Result<Self> {
        let profile = root.join("profile");
        std::fs::create_dir_all(profile.join("user"))?;
        std::fs::write(profile.join("user").join("registrymodifications.xcu"), PROFILE_SETTINGS)?;
        let linked = root.join("in");
        std::fs::create_dir_all(&linked)?;
        let linked = linked.join(format!("document.{label}"));
        std::os::unix::fs::symlink(std::path::absolute(input)?, &linked)?;
        let out = root.join("out");
        std::fs::create_dir_all(&out)?;
        Ok(Self { profile, input: linked, out })
    }

    /// The PDF LibreOffice writes for the input.
    fn written(&self) -> PathBuf {
        self.out.join("document.pdf")
    }
}

/// The arguments that convert `folders`' input (after the program).
fn arguments(folders: &Folders) -> std::io::Result<Vec<std::ffi::OsString>> {
    let profile = url::Url::from_directory_path(std::path::absolute(&folders.profile)?)
        .map_err(|()| std::io::Error::other("the profile's folder is not an absolute path"))?;
    Ok(vec![
        "--headless".into(),
        "--invisible".into(),
        "--nologo".into(),
        "--nodefault".into(),
        "--nolockcheck".into(),
        "--norestore".into(),
        format!("-env:UserInstallation={profile}").into(),
        "--convert-to".into(),
        "pdf".into(),
        "--outdir".into(),
        folders.out.clone().into(),
        folders.input.clone().into(),
    ])
}

/// Converts `input` (a `label` file) into the PDF at `output`, with LibreOffice run by
/// `run_program` (the child's way of running a program to its end: its status, or why it could
/// not). Runs in the contained child, after its limits and confinement.
pub(super) fn convert(
    office: &Office,
    input: &Path,
    label: &str,
    output: &Path,
    run_program: impl FnOnce(&[std::ffi::OsString]) -> Result<std::process::ExitStatus, Report>,
) -> Report {
    let io_failure =
        |what: &str, e: std::io::Error| Report::Failed { failure: Failure::Io, detail: format!("{what}: {e}") };
    // In the run's scratch folder (the child's TMPDIR), counted against its disk limit.
    let root = match tempfile::Builder::new().prefix("docket-office").tempdir() {
        Ok(root) => root,
        Err(e) => return io_failure("creating the conversion's folder", e),
    };
    let folders = match Folders::prepare(root.path(), input, label) {
        Ok(folders) => folders,
        Err(e) => return io_failure("preparing the conversion's folders", e),
    };
    let mut args = vec![office.program.clone().into_os_string()];
    match arguments(&folders) {
        Ok(rest) => args.extend(rest),
        Err(e) => return io_failure("naming the profile", e),
    }
    let status = match run_program(&args) {
        Ok(status) => status,
        Err(report) => return report,
    };
    let written = folders.written();
    match std::fs::metadata(&written) {
        Ok(meta) if meta.len() > 0 => {}
        _ => {
            return Report::Failed {
                failure: Failure::ToolFailed,
                detail: format!("LibreOffice wrote no PDF for the {label} file (it ended with {status})"),
            };
        }
    }
    if let Err(e) = std::fs::rename(&written, output).or_else(|_| std::fs::copy(&written, output).map(drop)) {
        return io_failure("moving the PDF to the output", e);
    }
    let output_bytes = std::fs::metadata(output).map(|m| m.len()).unwrap_or(0);
    Report::Done { output_bytes, pages: None, peak_rss_bytes: super::child::peak_rss() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_gets_its_own_profile_with_macros_off_and_its_input_named_by_format() {
        let root = tempfile::tempdir().unwrap();
        let input = root.path().join("42-abc.source");
        std::fs::write(&input, b"PK").unwrap();
        let a = Folders::prepare(&root.path().join("run a"), &input, "docx").unwrap();
        let b = Folders::prepare(&root.path().join("run b"), &input, "docx").unwrap();
        assert_ne!(a.profile, b.profile);
        let settings = std::fs::read_to_string(a.profile.join("user/registrymodifications.xcu")).unwrap();
        assert!(settings.contains(r#"<prop oor:name="DisableMacrosExecution" oor:op="fuse"><value>true</value>"#));
        assert_eq!(a.input.file_name().unwrap(), "document.docx");
        assert_eq!(std::fs::read(&a.input).unwrap(), b"PK", "the link leads to the input");
        assert_eq!(a.written(), a.out.join("document.pdf"));

        let args: Vec<String> = arguments(&a).unwrap().iter().map(|a| a.to_string_lossy().into_owned()).collect();
        let profile = args.iter().find_map(|a| a.strip_prefix("-env:UserInstallation=")).unwrap();
        assert!(profile.starts_with("file:///") && profile.ends_with("/run%20a/profile/"), "{profile}");
        assert!(args.contains(&"--headless".to_owned()));
        assert_eq!(args.last().unwrap(), &a.input.to_string_lossy());
    }

    #[test]
    fn only_office_formats_are_taken_and_a_missing_program_names_the_packages() {
        assert!(takes("docx") && takes("odp") && takes("rtf"));
        assert!(!takes("pdf") && !takes("png") && !takes("zip"));
        let topdf = crate::domain::Operation::ToPdf;
        assert!(FORMATS.iter().all(|f| topdf.accepts().contains(f)), "topdf takes every office format");
        match Office::find("docket-no-such-soffice-8c1e") {
            Availability::Unavailable(why) => {
                assert!(why.contains("cannot be converted"), "{why}");
                assert!(why.contains(PACKAGES), "{why}");
            }
            other => panic!("{other:?}"),
        }
        assert!(Office::available("/no/such/soffice").is_none());
    }
}
