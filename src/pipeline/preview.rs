//! A result's preview: its first page drawn as a JPEG ([`crate::operations::render`]), placed
//! beside the result ([`crate::spool::preview_path_for`]) and sent as the document's thumbnail.
//!
//! The drawing is a contained run like any other (the memory budget, the run's limits, its
//! scratch folder and disk bound), made after the result is checked and before it is placed. A
//! preview is a courtesy: when it cannot be drawn (MuPDF refused the page, the run reached a
//! limit), the result is sent without one and the job goes on.

use tracing::{debug, warn};

use super::PipelineDeps;
use super::attempt::Attempt;
use super::process::{RunFiles, run_contained};
use crate::domain::{Operation, Output, Ticket};
use crate::operations::{DEFAULT_LANG, Work};
use crate::spool::Spool;

/// Draws the preview of the result `attempt` made with `operation`, when previews are on and the
/// result is one PDF; `None` when there is none to send.
pub(super) async fn draw(
    deps: &PipelineDeps,
    ticket: Ticket,
    token: i64,
    operation: &Operation,
    attempt: &Attempt,
    texts_lang: crate::texts::Lang,
) -> Option<tempfile::TempPath> {
    let renderer = deps.settings.get().preview.clone()?;
    if operation.output() != Output::Pdf {
        return None;
    }
    let folder = attempt.output.parent()?.to_path_buf();
    let prefix = format!("{}preview-", Spool::attempt_prefix(token));
    let made = tokio::task::spawn_blocking(move || {
        tempfile::Builder::new().prefix(&prefix).suffix(".jpg").tempfile_in(folder).map(|f| f.into_temp_path())
    })
    .await;
    let preview = match made {
        Ok(Ok(preview)) => preview,
        Ok(Err(e)) => {
            warn!(%ticket, error = %e, "could not create the preview's file; the result goes without one");
            return None;
        }
        Err(e) => {
            warn!(%ticket, error = %e, "creating the preview's file panicked; the result goes without one");
            return None;
        }
    };
    let files = RunFiles { input: &attempt.output, output: &preview, scratch: attempt.scratch.path() };
    match run_contained(deps, Work::Render(renderer), files, DEFAULT_LANG.to_owned(), texts_lang).await {
        Ok(bytes) => {
            debug!(%ticket, bytes, "drew the result's preview");
            Some(preview)
        }
        Err(e) => {
            warn!(%ticket, error = %e, "the result's first page could not be drawn; it is sent without a preview");
            None
        }
    }
}
