//! `docket process FILE --op NAME -o OUT`: an admin's own run of one operation, contained as
//! the bot runs it (the parent's side; the child's is [`crate::operations::run`]).

use std::path::Path;

use anyhow::Context;

use super::out;
use crate::config::Config;
use crate::domain::operation::{Operation, ParseError};
use crate::domain::{DocumentInfo, FailureReason, Output};
use crate::operations::run::ProcessArgs;
use crate::operations::{self, Availability, Failure, Limits, Outcome, Report, Request, Work};
use crate::texts::{self, Lang};

/// `docket process FILE --op NAME -o OUT`: the operation, contained as the bot runs it.
///
/// `--op decrypt PASSWORD` takes the password from the command line (an admin's own file), or,
/// when none is written there, from the `DOCKET_PASSWORD` environment variable, which keeps it
/// out of the shell's history and the process list. Either way the child gets it on its stdin.
/// `--op info` prints the facts instead of sizes.
pub(super) async fn process(config: &Config, args: ProcessArgs) -> anyhow::Result<()> {
    let work = work_for_file(config, &args.operation_words(), &args.file)?;
    let ProcessArgs { file, output, lang, .. } = args;
    // The run's temporary files go beside its output, the one folder it may write to.
    let output_dir = output.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
    let scratch = tempfile::Builder::new()
        .prefix(".docket-scratch-")
        .tempdir_in(output_dir)
        .with_context(|| format!("while creating a temporary folder in {}", output_dir.display()))?;
    let request = Request {
        limits: work.limits(Limits::from(&config.processing)),
        password: work.password(),
        work,
        input: file,
        output,
        lang,
        // An admin's own run: the lines it writes into a result are in English.
        texts_lang: Lang::ENGLISH,
        shrink: operations::ShrinkSettings::from(&config.processing),
        scratch: Some(scratch.path().to_owned()),
    };
    let program = operations::this_binary();
    let outcome = operations::run_contained(&program, &request).await.context("while starting the operation")?;
    out(&outcome_text(&request, outcome)?)
}

/// The work `op` names for `file`, checked against what the file really is: a decrypt's
/// password taken from the environment when the command line has none, and `topdf` of an office
/// document handed to LibreOffice.
fn work_for_file(config: &Config, op: &str, file: &Path) -> anyhow::Result<Work> {
    let work = match work_named(config, op)? {
        Work::Builtin(Operation::Decrypt { password }) if password.is_empty() => {
            let password = std::env::var("DOCKET_PASSWORD")
                .context("decrypt needs a password: `--op decrypt PASSWORD`, or DOCKET_PASSWORD in the environment")?;
            Work::Builtin(Operation::Decrypt { password: crate::domain::Password::new(password) })
        }
        work => work,
    };
    let format = crate::detect::detect_path(file).with_context(|| format!("while reading {}", file.display()))?;
    let accepts: Vec<&str> = match &work {
        Work::Builtin(operation) => operation.accepts().to_vec(),
        Work::Tool(tool) => tool.accepts.iter().map(String::as_str).collect(),
        Work::Office(_) => operations::office::FORMATS.to_vec(),
        Work::Render(_) => vec!["pdf"],
    };
    if !accepts.contains(&format.label()) {
        anyhow::bail!(
            "{} takes {}, and {} is none of them (the content looks like {})",
            work.name(),
            accepts.join(", "),
            file.display(),
            format.describe()
        );
    }
    let soffice = &config.processing.soffice;
    let Some(work) = work.for_content(format.label(), operations::Office::available(soffice).as_ref()) else {
        match operations::Office::find(soffice) {
            Availability::Unavailable(why) => anyhow::bail!("{why}"),
            Availability::Available(_) => anyhow::bail!("LibreOffice ({soffice}) vanished while docket looked"),
        }
    };
    Ok(work)
}

/// What an admin's run printed, or the error it ends with: the facts of `info`, the sizes of
/// any other result, or the reason a person would have been told.
fn outcome_text(request: &Request, outcome: Outcome) -> anyhow::Result<String> {
    let (file, output) = (&request.input, &request.output);
    let name = file.display().to_string();
    let reason = match outcome {
        Outcome::Reported(Report::Done { .. }) if matches!(&request.work, Work::Builtin(operation) if operation.output() == Output::Message) =>
        {
            let json = std::fs::read(output).with_context(|| format!("while reading {}", output.display()))?;
            let info: DocumentInfo = serde_json::from_slice(&json).context("while reading the facts")?;
            return Ok(texts::document_info(Lang::ENGLISH, &info));
        }
        Outcome::Reported(Report::Done { output_bytes, pages, .. }) => {
            let input_bytes = std::fs::metadata(file).map(|m| m.len()).unwrap_or(0);
            let pages = pages.map(|p| format!("{p} pages, ")).unwrap_or_default();
            return Ok(format!(
                "{} → {}: {pages}{} → {}",
                file.display(),
                output.display(),
                texts::size(Lang::ENGLISH, input_bytes),
                texts::size(Lang::ENGLISH, output_bytes)
            ));
        }
        Outcome::Reported(Report::Failed { failure: Failure::FileTooBig { limit }, .. }) => {
            FailureReason::WroteTooMuch { limit }
        }
        Outcome::Reported(Report::Failed { failure, detail }) => match failure.reason(&request.work) {
            Some(reason) => reason,
            None => anyhow::bail!("{} failed: {detail}", request.work.name()),
        },
        Outcome::OutOfMemory { limit } => FailureReason::NeedsTooMuchMemory { limit },
        Outcome::FileTooBig { limit } | Outcome::WroteTooMuch { limit } => FailureReason::WroteTooMuch { limit },
        Outcome::TimedOut { limit } => FailureReason::TookTooLong { limit },
        Outcome::Crashed { .. } => FailureReason::Crashed,
        Outcome::KilledFromOutside { detail } => anyhow::bail!("{} was stopped: {detail}", request.work.name()),
    };
    anyhow::bail!("{}", texts::failure_reason(Lang::ENGLISH, &name, &reason))
}

/// The operation `words` name: a built-in one with its arguments, or an available external
/// tool.
fn work_named(config: &Config, words: &str) -> anyhow::Result<Work> {
    let name = words.split_whitespace().next().unwrap_or_default();
    match Operation::parse(words) {
        Ok(Operation::Ocr { .. }) | Err(ParseError::Unknown(_)) => {}
        Ok(operation) => return Ok(Work::Builtin(operation)),
        Err(e) => anyhow::bail!("{e}"),
    }
    let Some(tool) = config.processing.external.get(name).map(|t| t.to_tool(name)) else {
        let mut known: Vec<String> =
            Operation::NAMES.iter().filter(|n| **n != "ocr").map(|n| (*n).to_owned()).collect();
        known.extend(config.processing.external.keys().cloned());
        anyhow::bail!("unknown operation {name:?}; this configuration has {}", known.join(", "));
    };
    match tool.availability() {
        Availability::Available(_) => Ok(Work::Tool(tool)),
        Availability::Unavailable(why) => anyhow::bail!("{why}"),
    }
}
