//! What a run's child can reach: its own files, the system's programs and libraries, and nothing
//! else. Applied by the child to itself with Landlock before it reads a byte of the input, and
//! inherited by every program it starts.
//!
//! - Files: the input may be read (an album's folder of files listed too); the output's folder
//!   (`work/<ticket>/`, where the run's temporary folder is too) may be read and written; the system's programs, libraries, fonts
//!   and language data ([`SYSTEM`]) may be read and run; a few devices and `/dev/shm` (Python's
//!   process pools need it) may be used; a tool's own `reach` paths may be read and written;
//!   LibreOffice may make (and remove) its single-instance socket in `/tmp`, and nothing more there.
//!   Everything else is out of reach: the database file, the credentials directory with the
//!   token, the configuration, other jobs' files, other processes' `/proc` entries (and so the
//!   service's environment), PostgreSQL's Unix socket.
//! - Network: no TCP connection and no listening port.
//! - Signals: none to a process outside the run (the service, another run).
//!
//! Where the kernel lacks Landlock or part of it, the run goes on with what it supports
//! ([`Confinement`] says which), and the service says so once at start ([`probe`]).

use std::path::{Path, PathBuf};

/// Read and run only: where programs, libraries, fonts and language data live, and the files of
/// `/etc` that loading and running them reads. Missing ones are skipped.
pub const SYSTEM: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/sys",
    "/etc/alternatives",
    "/etc/fonts",
    "/var/cache/fontconfig",
    "/etc/ghostscript",
    "/etc/group",
    "/etc/ImageMagick-6",
    "/etc/ImageMagick-7",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/libreoffice",
    "/etc/locale.alias",
    "/etc/localtime",
    "/etc/magic",
    "/etc/mime.types",
    "/etc/nsswitch.conf",
    "/etc/papersize",
    "/etc/passwd",
    // Debian's LibreOffice keeps its bundled extensions here, linked from /usr/lib/libreoffice.
    "/var/lib/libreoffice",
    "/var/spool/libreoffice",
];

/// Devices a program may read and write.
const DEVICES: &[&str] = &["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/shm"];

/// What one run may reach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reach {
    /// Read only.
    pub input: PathBuf,
    /// Read and write: the output's folder, with the run's temporary folder inside it.
    pub output_dir: PathBuf,
    /// Read and write, besides: a tool's `reach`.
    pub extra: Vec<PathBuf>,
    /// Folders where the run may create and remove Unix sockets, and do nothing else:
    /// LibreOffice's single-instance socket, which it makes in `/tmp` whatever `TMPDIR` says
    /// ([`super::office::SOCKET_FOLDERS`]).
    pub sockets: Vec<PathBuf>,
}

impl Reach {
    /// What a run of `input` into `output` may reach, with a tool's `extra` paths.
    pub fn of(input: &Path, output: &Path, extra: &[PathBuf]) -> Self {
        let output_dir = output.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new(".")).to_owned();
        Self { input: input.to_owned(), output_dir, extra: extra.to_vec(), sockets: Vec::new() }
    }

    /// This reach, where the run may also make Unix sockets in `folders`.
    #[must_use]
    pub fn with_sockets_in(self, folders: &[&str]) -> Self {
        Self { sockets: folders.iter().map(PathBuf::from).collect(), ..self }
    }
}

/// How far the kernel enforced a confinement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confinement {
    /// Every restriction holds.
    Full,
    /// Some hold; an older kernel lacks the rest (network or signal rules, say).
    Partial,
    /// None: the kernel has no Landlock, or it is turned off.
    None,
}

/// Confines this process, and all it starts from now on, to `reach`.
///
/// # Errors
///
/// When a rule cannot be made (a path that cannot be opened is skipped, not an error).
#[cfg(target_os = "linux")]
pub fn confine(reach: &Reach) -> Result<Confinement, landlock::RulesetError> {
    use landlock::{
        ABI, Access, AccessFs, AccessNet, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope,
        path_beneath_rules,
    };
    let abi = ABI::V6;
    let read = AccessFs::from_read(abi);
    let all = AccessFs::from_all(abi);
    let ruleset = Ruleset::default()
        .handle_access(all)?
        .handle_access(AccessNet::from_all(abi))?
        .scope(Scope::from_all(abi))?
        .create()?
        .add_rules(path_beneath_rules(SYSTEM, read))?
        .add_rules(path_beneath_rules(DEVICES, AccessFs::from_read(abi) | AccessFs::from_write(abi)))?
        // This process's own /proc entry (its memory figures), not the others'.
        .add_rules(path_beneath_rules(["/proc/self"], AccessFs::ReadFile | AccessFs::ReadDir))?
        // An album's input is the folder of its files; listing is only granted for a folder.
        .add_rules(path_beneath_rules([&reach.input], AccessFs::ReadFile | AccessFs::ReadDir))?
        .add_rules(path_beneath_rules([&reach.output_dir], all))?
        .add_rules(path_beneath_rules(&reach.extra, all))?
        .add_rules(path_beneath_rules(&reach.sockets, AccessFs::MakeSock | AccessFs::RemoveFile))?;
    Ok(match ruleset.restrict_self()?.ruleset {
        RulesetStatus::FullyEnforced => Confinement::Full,
        RulesetStatus::PartiallyEnforced => Confinement::Partial,
        RulesetStatus::NotEnforced => Confinement::None,
    })
}

/// Elsewhere there is nothing to confine with.
#[cfg(not(target_os = "linux"))]
pub fn confine(_reach: &Reach) -> Result<Confinement, std::io::Error> {
    Ok(Confinement::None)
}

/// How far this kernel can confine a run, tried on a thread that ends at once (the
/// confinement is per thread until it starts processes, and dies with it).
pub fn probe() -> Confinement {
    let scratch = std::env::temp_dir();
    let reach = Reach { input: scratch.clone(), output_dir: scratch, extra: Vec::new(), sockets: Vec::new() };
    std::thread::spawn(move || confine(&reach).unwrap_or(Confinement::None)).join().unwrap_or(Confinement::None)
}

/// Says in the log, once at start, how far this kernel confines runs ([`probe`]).
pub fn announce() {
    match probe() {
        Confinement::Full => tracing::info!("runs are confined to their own files, with no network (Landlock)"),
        Confinement::Partial => tracing::warn!(
            "this kernel's Landlock lacks some rules: runs are confined in part (files, network and signals \
             need Landlock ABI 6, Linux 6.12)"
        ),
        Confinement::None => tracing::warn!(
            "this kernel has no Landlock: a run can read every file docket can and use the network; only its \
             limits and its clean environment contain it"
        ),
    }
}
