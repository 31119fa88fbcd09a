//! The processing stage: verify the source, detect what it really is, check that the job's
//! operation takes that format, run the operation in a child process under the run's limits
//! (after reserving its memory), check the result against the upload limit, draw its preview
//! ([`super::preview`]), move both into `results/`.
//!
//! The job's [`Operation`] decides the [`Work`]: a built-in one runs as itself; `ocr` runs the
//! external program configured as `[processing.external.ocr]`, with the operation's languages or
//! the sender's (Telegram's `language_code`, as Tesseract codes).

use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use tracing::{debug, info, warn};

use super::attempt::{self, Attempt};
use super::{Detail, PipelineDeps, StageError};
use crate::detect::{self, DetectedFormat};
use crate::domain::{FailureReason, Job, Operation, Output as ResultKind, Password, SourcePart, default_operation};
use crate::operations::{self, DEFAULT_LANG, Failure, Limits, Outcome, Report, Request, Work};
use crate::sealing::SealingKey;

/// A result on disk, ready to be committed.
#[derive(Debug)]
pub struct Output {
    /// The operation that made it: the run's own, or the default that fits the content when no
    /// caption chose the run's and the declared type lied.
    pub operation: Operation,
    /// Where it is (under `results/`).
    pub path: String,
    /// Its size.
    pub size: u64,
    /// The detected format of the source.
    pub format: String,
    /// When the declared name or MIME type disagrees with the content: what to tell the person
    /// ("sent as report.pdf, but it is a ZIP archive").
    pub note: Option<String>,
    /// For an operation whose result is a message (`info`): the message's text.
    pub message: Option<String>,
    /// For a result sent in parts (`split 45MB`): how many there are.
    pub parts: Option<u32>,
}

/// Runs the job's operation on its verified source.
pub async fn produce(deps: &PipelineDeps, job: &Job) -> Result<Output, StageError> {
    let chat_lang = super::progress::chat_lang(deps, job).await;
    let (source, format, parts) = verified_source(deps, job).await?;
    let (operation, work) = choose_work(deps, job, &format).await?;
    let operation = &operation;
    if matches!(operation, Operation::Decrypt { .. }) {
        delete_the_password_message(deps, job).await;
    }
    // An album's files are named one by one in its ticket reply; its first one's name says
    // nothing of the rest.
    let note = (*operation != Operation::Merge
        && detect::declared_disagrees(
            job.submission.declared_name.as_deref(),
            job.submission.declared_mime.as_deref(),
            &format,
        ))
    .then(|| {
        let found = crate::texts::format_name(chat_lang, format.label(), &format.describe());
        crate::texts::declared_but_is(chat_lang, job.name(), &found)
    });
    let lang = tesseract_languages(operation, job.submission.language_code.as_deref());

    let spool = deps.spool.clone();
    let ticket = job.ticket;
    let token = job.lease.as_ref().map_or(0, |l| l.token);
    let name = operation.name().to_owned();
    let extension = operation.output().extension();
    let attempt =
        attempt::blocking("preparing the run", move || Attempt::prepare(&spool, ticket, token, &name, extension))
            .await?;
    let files = RunFiles { input: &source, output: &attempt.output, scratch: attempt.scratch.path() };
    let output_bytes = run_contained(deps, work, files, lang, chat_lang)
        .await
        .map_err(|e| super::album_source::named_part(e, &parts))?;

    let limit = deps.settings.get().upload_limit;
    let parts = match operation.output() {
        ResultKind::Parts => Some(parts_within(&attempt.output, limit, operation).await?),
        _ if output_bytes > limit => {
            return Err(StageError::fail(
                FailureReason::ResultTooBig { size: output_bytes, limit, operation: operation.name().to_owned() },
                format!("result of {output_bytes} bytes over the upload limit"),
            ));
        }
        _ => None,
    };
    let message = match operation.output() {
        ResultKind::Message => Some(info_message(chat_lang, job, &attempt.output).await?),
        _ => None,
    };
    let preview = super::preview::draw(deps, ticket, token, operation, &attempt, chat_lang).await;
    let spool = deps.spool.clone();
    let result = attempt::blocking("placing the result", move || {
        attempt.place_result(&spool, ticket, token, extension, preview)
    })
    .await?;
    Ok(Output {
        operation: operation.clone(),
        path: result.to_string_lossy().into_owned(),
        size: output_bytes,
        format: format.label().to_owned(),
        note,
        message,
        parts,
    })
}

/// How many parts the result sent in parts at `zip` has, each within the upload `limit` (a
/// part size asked for above the limit is refused here, with the biggest part's size).
async fn parts_within(zip: &Path, limit: u64, operation: &Operation) -> Result<u32, StageError> {
    let parts = crate::pdf::parts::parts_of(zip.to_path_buf())
        .await
        .map_err(|e| StageError::retry(format!("reading the parts: {e}")))?;
    let biggest = parts.iter().map(|part| part.size).max().unwrap_or(0);
    if biggest > limit {
        return Err(StageError::fail(
            FailureReason::ResultTooBig { size: biggest, limit, operation: operation.name().to_owned() },
            format!("a part of {biggest} bytes over the upload limit"),
        ));
    }
    u32::try_from(parts.len()).map_err(|_| StageError::retry("more parts than can be counted"))
}

/// The job's source, checked to be what was downloaded, and its format detected from the
/// content. For an album's ticket, the folder of its files, each checked and of a format `merge`
/// takes (the first one's format stands for the album's).
async fn verified_source(
    deps: &PipelineDeps,
    job: &Job,
) -> Result<(PathBuf, DetectedFormat, Vec<SourcePart>), StageError> {
    if job.submission.operation == Operation::Merge {
        return super::album_source::verified_album(deps, job).await;
    }
    let Some(expected) = job.source.clone() else {
        return Err(StageError::SourceLost { detail: "no source recorded".into() });
    };
    let Some(source) = expected.path.as_deref().map(PathBuf::from) else {
        return Err(StageError::SourceLost { detail: "no source recorded".into() });
    };
    // Size and sha256 in full, every time: downloads are not synced (see `download`), so after a
    // power cut this is where bytes the disk never got are found, and fetched again.
    let src = source.clone();
    tokio::task::spawn_blocking(move || verify_source(&src, expected.size, &expected.sha256))
        .await
        .map_err(|e| StageError::retry(format!("verifying the source panicked: {e}")))??;

    let src = source.clone();
    let format = tokio::task::spawn_blocking(move || detect::detect_path(&src))
        .await
        .map_err(|e| StageError::retry(format!("detection panicked: {e}")))?
        .map_err(|e| StageError::SourceLost { detail: Detail::caused_by("reading the source", e) })?;
    Ok((source, format, Vec::new()))
}

/// The operation the run carries out on content of `format`, and the work that does it: the
/// job's own, or the default that fits when no caption chose it and the declared type lied. A
/// format the operation does not take, or an office file without LibreOffice, fails the run.
async fn choose_work(deps: &PipelineDeps, job: &Job, format: &DetectedFormat) -> Result<(Operation, Work), StageError> {
    let mut operation = unsealed(deps, job);
    let (mut work, mut accepts) = work_for(&deps.settings.get().tools, &operation)?;
    if !takes(&accepts, format)
        && let Some(fitting) = fitting_default(deps, job, format).await?
    {
        info!(
            from = operation.name(),
            to = fitting.name(),
            format = format.label(),
            "the declared type lied: running the default operation that fits the content"
        );
        operation = fitting;
        (work, accepts) = work_for(&deps.settings.get().tools, &operation)?;
    }
    if !takes(&accepts, format) {
        return Err(StageError::fail(
            FailureReason::WrongFormat {
                operation: operation.name().to_owned(),
                accepts,
                found: format.describe(),
                found_label: format.label().to_owned(),
            },
            format!("declared {:?}, content is {}", job.submission.declared_mime, format.label()),
        ));
    }
    let Some(work) = work.for_content(format.label(), deps.settings.get().office.as_ref()) else {
        return Err(StageError::fail(
            FailureReason::OfficeUnavailable,
            format!("{} needs LibreOffice, which [processing] soffice did not find on this host", format.label()),
        ));
    };
    Ok((operation, work))
}

/// The message of an operation whose result is one (`info`): the child writes the facts
/// (`DocumentInfo` as JSON) to `facts`; the message is written here, in words, so the child
/// needs no texts.
async fn info_message(chat_lang: crate::texts::Lang, job: &Job, facts: &Path) -> Result<String, StageError> {
    let facts = tokio::fs::read(facts).await.map_err(|e| StageError::retry(format!("reading the facts: {e}")))?;
    let info: crate::domain::DocumentInfo = serde_json::from_slice(&facts)
        .map_err(|e| StageError::retry(format!("the facts the child wrote do not read: {e}")))?;
    Ok(crate::texts::info_message(chat_lang, job.name(), &crate::texts::document_info(chat_lang, &info)))
}

/// For a run whose operation no caption chose and which does not take the content's real
/// `format`: the operation intake would have chosen had the file been declared truly
/// ([`default_operation()`] of the real format), once the run is switched to it.
/// `None`: the operation was chosen on purpose, nothing else fits either, or the switch was not
/// recorded (the lease was lost, or the ticket has a run of that operation already): the run
/// refuses the file as it is.
async fn fitting_default(
    deps: &PipelineDeps,
    job: &Job,
    format: &DetectedFormat,
) -> Result<Option<Operation>, StageError> {
    if !job.submission.chosen_by_default {
        return Ok(None);
    }
    let mode = deps.store.chat_mode(job.submission.chat);
    let fitting = default_operation(Some(format.label()), mode, &deps.settings.get().default_operation)
        .await
        .map_err(|e| StageError::store("reading the chat's mode", e))?;
    // The run's own operation does not take the format, so neither does it as the fitting one.
    if !work_for(&deps.settings.get().tools, &fitting).is_ok_and(|(_, accepts)| takes(&accepts, format)) {
        return Ok(None);
    }
    let Some(lease) = job.lease.as_ref() else { return Ok(None) };
    let switched = deps
        .store
        .switch_operation(job.ticket, lease, &fitting, deps.clock.now())
        .await
        .map_err(|e| StageError::store("switching the run's operation", e))?;
    Ok(switched.then_some(fitting))
}

/// The job's operation with a decrypt's password opened (intake sealed it; see
/// `crate::sealing`). A password that does not open with this key is empty: the run then fails
/// as with a wrong password.
fn unsealed(deps: &PipelineDeps, job: &Job) -> Operation {
    match &job.submission.operation {
        Operation::Decrypt { password } => {
            let binding = SealingKey::binding(job.submission.chat, &job.submission.file_unique_id);
            let opened = deps.sealing.open(password.expose(), &binding);
            if opened.is_none() {
                warn!(ticket = %job.ticket, "the job's password does not open with this key ([storage] secret_key_env, or the token, changed?)");
            }
            Operation::Decrypt { password: Password::new(opened.unwrap_or_default()) }
        }
        other => other.clone(),
    }
}

/// Deletes the person's message whose caption gave a decrypt its password, now that the run
/// has the password (sealed in the database until the job ends). Best effort: in a group the
/// bot may lack the right, and the ticket reply asked the person to delete it there. A retry
/// finds the message gone, which is fine.
async fn delete_the_password_message(deps: &PipelineDeps, job: &Job) {
    let (chat, message) = (job.submission.chat, job.submission.message_id);
    match deps.telegram.delete_message(chat, message).await {
        Ok(()) => info!(ticket = %job.ticket, "deleted the message that carried the password"),
        Err(e) => debug!(ticket = %job.ticket, error = %e, "could not delete the message that carried the password"),
    }
}

/// Whether `accepts` (an operation's formats) has the detected `format`.
fn takes(accepts: &[String], format: &DetectedFormat) -> bool {
    accepts.iter().any(|a| a == format.label())
}

/// What runs `operation`, and the formats it takes: a built-in operation itself, or for `ocr` the
/// external program configured under that name (a failure saying OCR is not set up when there is
/// none, or its program is missing).
fn work_for(tools: &[operations::ExternalTool], operation: &Operation) -> Result<(Work, Vec<String>), StageError> {
    match operation {
        Operation::Ocr { .. } => {
            let Some(tool) = tools.iter().find(|t| t.name == "ocr") else {
                return Err(StageError::fail(
                    FailureReason::NotSetUp { operation: "ocr".into() },
                    "no [processing.external.ocr] is configured",
                ));
            };
            if let operations::Availability::Unavailable(why) = tool.availability() {
                return Err(StageError::fail(FailureReason::NotSetUp { operation: "ocr".into() }, why));
            }
            Ok((Work::Tool(tool.clone()), tool.accepts.clone()))
        }
        other => Ok((Work::Builtin(other.clone()), other.accepts().iter().map(|a| (*a).to_owned()).collect())),
    }
}

/// Tesseract's codes for the languages of Telegram's `language_code`s (ISO 639-1, sometimes with
/// a region: `pt-br`), for the ones people most often write in.
const TESSERACT_LANGUAGES: &[(&str, &str)] = &[
    ("en", "eng"),
    ("ru", "rus"),
    ("uk", "ukr"),
    ("be", "bel"),
    ("de", "deu"),
    ("fr", "fra"),
    ("es", "spa"),
    ("it", "ita"),
    ("pt", "por"),
    ("pl", "pol"),
    ("nl", "nld"),
    ("tr", "tur"),
    ("kk", "kaz"),
    ("uz", "uzb"),
    ("ar", "ara"),
    ("fa", "fas"),
    ("he", "heb"),
    ("zh", "chi_sim"),
    ("ja", "jpn"),
    ("ko", "kor"),
];

/// `{lang}` of a run: the languages the operation names (`ocr rus+eng`), else the sender's
/// language as Tesseract's code, else [`DEFAULT_LANG`].
pub fn tesseract_languages(operation: &Operation, language_code: Option<&str>) -> String {
    if let Operation::Ocr { languages: Some(languages) } = operation {
        return languages.as_str().to_owned();
    }
    let primary = language_code.map(|code| code.split(['-', '_']).next().unwrap_or(code).to_ascii_lowercase());
    primary
        .and_then(|code| TESSERACT_LANGUAGES.iter().find(|(telegram, _)| *telegram == code))
        .map_or_else(|| DEFAULT_LANG.to_owned(), |(_, tesseract)| (*tesseract).to_owned())
}

/// The source must be on disk with the recorded size and sha256; otherwise it is lost, and the
/// job goes back to be downloaded again.
fn verify_source(path: &Path, size: i64, sha256: &str) -> Result<(), StageError> {
    let (len, digest) = hash_file(path)?;
    if i64::try_from(len).ok() != Some(size) {
        return Err(lost(format!("source has {len} bytes, {size} recorded")));
    }
    if digest != sha256 {
        return Err(lost("source does not match its recorded sha256".into()));
    }
    Ok(())
}

/// The source is missing or not what was downloaded: download it again.
pub(super) fn lost(detail: String) -> StageError {
    StageError::SourceLost { detail: detail.into() }
}

/// The size and hex sha256 of the file at `path`, read in full.
pub(super) fn hash_file(path: &Path) -> Result<(u64, String), StageError> {
    let mut file = std::fs::File::open(path).map_err(|e| lost(format!("source missing: {e}")))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1024 * 1024];
    let mut len = 0;
    loop {
        let n = file.read(&mut buf).map_err(|e| lost(format!("source unreadable: {e}")))?;
        if n == 0 {
            break;
        }
        len += n as u64;
        hasher.update(&buf[..n]);
    }
    Ok((len, hex::encode(hasher.finalize())))
}

/// The paths of one run.
pub(super) struct RunFiles<'a> {
    /// What it reads.
    pub(super) input: &'a Path,
    /// What it writes.
    pub(super) output: &'a Path,
    /// Its temporary folder.
    pub(super) scratch: &'a Path,
}

/// Runs `work` on `files.input` into `files.output` in a child process, once its memory is
/// reserved; returns the result's size. Dropping the future (a lost lease, shutdown) kills the
/// child and gives the memory back.
///
/// The child's address space is exactly what it reserved: its input's size times its factor
/// ([`operations::Limits::sized_for`]), and its threads are its share of the budget
/// ([`MemoryReservation::threads`](super::memory::MemoryReservation::threads)). A run that
/// reaches a sized limit below the configured one is given one more try at the configured limit
/// (the factor is a measured worst case, not a promise), reserving that much.
pub(super) async fn run_contained(
    deps: &PipelineDeps,
    work: Work,
    files: RunFiles<'_>,
    lang: String,
    texts_lang: crate::texts::Lang,
) -> Result<u64, StageError> {
    let settings = deps.settings.get();
    let room = fs4::available_space(deps.spool.root()).ok().map(|free| free.saturating_sub(settings.min_free));
    let disk = DiskBounds::of(&work, work.limits(settings.limits), settings.upload_limit, room);
    let input = files.input.to_path_buf();
    let input_bytes = tokio::task::spawn_blocking(move || input_size(&input)).await.unwrap_or(0);
    let configured = disk.limits;
    let mut limits = configured.sized_for(&work, input_bytes);
    loop {
        let outcome = run_reserved(deps, &work, &files, limits, &lang, texts_lang).await?;
        match outcome {
            Outcome::OutOfMemory { limit } if limit < configured.memory => {
                tracing::info!(
                    operation = work.name(),
                    input_bytes,
                    limit,
                    configured = configured.memory,
                    "the run reached the memory it reserved; trying once more at the configured limit"
                );
                limits = Limits { memory: configured.memory, ..limits };
            }
            outcome => return judge_outcome(&work, &disk, input_bytes, limits.memory, outcome),
        }
    }
}

/// The bytes a run reads: its input file's, or an album's files' together.
fn input_size(input: &Path) -> u64 {
    let size = |path: &Path| std::fs::metadata(path).map_or(0, |m| m.len());
    if input.is_dir() { crate::spool::album_files(input).iter().map(|file| size(file)).sum() } else { size(input) }
}

/// Reserves `limits.memory` from the memory budget, then runs `work` under `limits` with the
/// threads its share of the budget allows.
async fn run_reserved(
    deps: &PipelineDeps,
    work: &Work,
    files: &RunFiles<'_>,
    limits: Limits,
    lang: &str,
    texts_lang: crate::texts::Lang,
) -> Result<Outcome, StageError> {
    let settings = deps.settings.get();
    let memory = deps.memory.reserve(limits.memory).await.map_err(|never| {
        StageError::fail(FailureReason::NeedsTooMuchMemory { limit: never.capacity }, never.to_string())
    })?;
    let request = Request {
        work: work.clone(),
        input: files.input.to_path_buf(),
        output: files.output.to_path_buf(),
        lang: lang.to_owned(),
        limits: Limits { threads: memory.threads(limits.threads), ..limits },
        password: work.password(),
        texts_lang,
        shrink: settings.shrink,
        scratch: Some(files.scratch.to_path_buf()),
    };
    operations::run_contained(&settings.program, &request)
        .await
        .map_err(|e| StageError::retry(format!("starting the operation's process: {e}")))
}

/// What a run's outcome means for its job.
fn judge_outcome(
    work: &Work,
    disk: &DiskBounds,
    input_bytes: u64,
    reserved: u64,
    outcome: Outcome,
) -> Result<u64, StageError> {
    match outcome {
        Outcome::Reported(Report::Done { output_bytes, peak_rss_bytes, .. }) => {
            tracing::debug!(
                operation = work.name(),
                input_bytes,
                reserved_bytes = reserved,
                peak_rss_bytes,
                "the operation's process finished"
            );
            Ok(output_bytes)
        }
        Outcome::Reported(Report::Failed { failure: Failure::FileTooBig { limit }, detail }) => {
            Err(disk.stopped_at(work, limit, detail))
        }
        Outcome::FileTooBig { limit } => {
            Err(disk.stopped_at(work, limit, format!("the {} process wrote a file over {limit} bytes", work.name())))
        }
        Outcome::WroteTooMuch { limit } => {
            Err(disk.stopped_at(work, limit, format!("the {} run had more than {limit} bytes on disk", work.name())))
        }
        Outcome::Reported(Report::Failed { failure, detail }) => Err(failure_error(work, failure, detail)),
        Outcome::OutOfMemory { limit } => Err(StageError::fail(
            FailureReason::NeedsTooMuchMemory { limit },
            format!("the {} process reached its memory limit of {limit} bytes", work.name()),
        )),
        Outcome::TimedOut { limit } => Err(StageError::fail(
            FailureReason::TookTooLong { limit },
            format!("the {} process was killed after {}", work.name(), humantime::format_duration(limit)),
        )),
        Outcome::KilledFromOutside { detail } => Err(StageError::retry(detail)),
        Outcome::Crashed { detail } => Err(StageError::fail(FailureReason::Crashed, detail)),
    }
}

/// What one run may write, and where each bound comes from: a built-in operation's one file, its
/// result, may be no larger than the upload limit (a larger one could not be sent), unless it is
/// sent in parts (each part is checked once it is made); all the run
/// has on disk, no more than `[processing] disk_limit` nor the free space above `min_free`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct DiskBounds {
    /// The run's limits, `max_file` and `disk` narrowed as above.
    limits: operations::Limits,
    /// The upload limit in force.
    upload_limit: u64,
    /// Whether the free space, not the configured limit, is what bounds the run.
    short_of_space: bool,
}

impl DiskBounds {
    fn of(work: &Work, mut limits: operations::Limits, upload_limit: u64, room: Option<u64>) -> Self {
        let configured = limits.disk;
        limits.disk = room.map_or(configured, |room| room.min(configured));
        limits.max_file = match work {
            // A result sent in parts may be larger than one upload: each part is checked instead.
            Work::Builtin(operation) if operation.output() == ResultKind::Parts => limits.disk,
            Work::Builtin(_) => upload_limit.min(limits.disk),
            // A program's intermediate files may well be larger than its result.
            Work::Tool(_) | Work::Office(_) | Work::Render(_) => limits.disk,
        };
        Self { limits, upload_limit, short_of_space: limits.disk < configured }
    }

    /// The error of a run stopped at `limit`, one of these bounds: the result grew too big, the
    /// run wrote too much, or the disk is nearly full (not the document's doing: worth another
    /// attempt once space is back).
    fn stopped_at(&self, work: &Work, limit: u64, detail: String) -> StageError {
        if matches!(work, Work::Builtin(_)) && limit == self.upload_limit {
            return StageError::fail(
                FailureReason::ResultGrewTooBig { limit, operation: work.name().to_owned() },
                detail,
            );
        }
        if self.short_of_space {
            tracing::warn!(limit, "a run was stopped: the data folder is nearly full");
            return StageError::Unavailable { detail: format!("{detail}: the data folder is nearly full").into() };
        }
        StageError::fail(FailureReason::WroteTooMuch { limit }, detail)
    }
}

fn failure_error(work: &Work, failure: Failure, detail: String) -> StageError {
    match failure.reason(work) {
        Some(reason) => StageError::fail(reason, detail),
        // Not the document's fault: worth another attempt.
        None => StageError::retry(detail),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(disk: u64) -> operations::Limits {
        operations::Limits {
            memory: 1 << 30,
            timeout: std::time::Duration::from_secs(60),
            max_inflate: 1 << 20,
            max_file: disk,
            disk,
            threads: 2,
        }
    }

    #[test]
    fn a_builtin_writes_one_file_up_to_the_upload_limit_and_a_tool_up_to_its_disk_limit() {
        let builtin = Work::Builtin(Operation::Split { ranges: None });
        let bounds = DiskBounds::of(&builtin, limits(4 << 30), 50 << 20, Some(100 << 30));
        assert_eq!((bounds.limits.max_file, bounds.limits.disk), (50 << 20, 4 << 30));
        assert!(!bounds.short_of_space);
        let error = bounds.stopped_at(&builtin, 50 << 20, "over".into());
        assert!(matches!(&error, StageError::Fail { reason: FailureReason::ResultGrewTooBig { .. }, .. }), "{error:?}");
        let error = bounds.stopped_at(&builtin, 4 << 30, "over".into());
        assert!(matches!(&error, StageError::Fail { reason: FailureReason::WroteTooMuch { .. }, .. }), "{error:?}");
    }

    #[test]
    fn a_run_bounded_by_the_free_space_is_tried_again_not_failed() {
        let tool = Work::Tool(operations::external::stand_in(&["ocrmypdf"], 1.0));
        let bounds = DiskBounds::of(&tool, limits(4 << 30), 50 << 20, Some(1 << 30));
        assert_eq!((bounds.limits.max_file, bounds.limits.disk), (1 << 30, 1 << 30));
        assert!(bounds.short_of_space);
        let error = bounds.stopped_at(&tool, 1 << 30, "over".into());
        assert!(matches!(&error, StageError::Unavailable { .. }), "not the document's doing: {error:?}");
    }

    #[test]
    fn ocr_speaks_the_operations_languages_or_the_senders() {
        let ocr = |words: &str| Operation::parse(words).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(tesseract_languages(&ocr("ocr rus+eng"), Some("de")), "rus+eng");
        assert_eq!(tesseract_languages(&ocr("ocr"), Some("ru")), "rus");
        assert_eq!(tesseract_languages(&ocr("ocr"), Some("pt-BR")), "por");
        assert_eq!(tesseract_languages(&ocr("ocr"), Some("xx")), "eng");
        assert_eq!(tesseract_languages(&ocr("ocr"), None), "eng");
    }
}
