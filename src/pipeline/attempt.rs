//! One attempt's files: what earlier attempts left is removed, the attempt's output and
//! temporary folder are made in `work/<ticket>/`, and the result is moved into
//! `results/<ticket>/` and made durable. All of it blocking file work, run off the async runtime.

use std::path::PathBuf;

use super::StageError;
use crate::domain::Ticket;
use crate::spool::Spool;

/// Runs blocking file work (`what`) off the async runtime: deleting a former attempt's files,
/// creating, moving and syncing files can each take long on a busy disk.
pub(super) async fn blocking<T: Send + 'static>(
    what: &'static str,
    work: impl FnOnce() -> Result<T, StageError> + Send + 'static,
) -> Result<T, StageError> {
    tokio::task::spawn_blocking(work).await.map_err(|e| StageError::retry(format!("{what} panicked: {e}")))?
}

/// The files of one attempt at a run, in `work/<ticket>/`: its output, and the folder for its
/// temporary files. Both vanish if the attempt ends before its result is placed.
pub(super) struct Attempt {
    /// Where the run writes its result.
    pub(super) output: tempfile::TempPath,
    /// The run's temporary folder.
    pub(super) scratch: tempfile::TempDir,
}

impl Attempt {
    /// Removes what earlier attempts left (and only that: a stalled former holder must not touch
    /// what a later one wrote, so the lease `token` names what is this attempt's), then creates
    /// this attempt's files. The run's temporary files (an external tool's) stay in its own
    /// folder, where they are counted against its disk limit and go with the attempt.
    pub(super) fn prepare(
        spool: &Spool,
        ticket: Ticket,
        token: i64,
        operation: &str,
        extension: &str,
    ) -> Result<Self, StageError> {
        spool.remove_earlier_output(ticket, token).map_err(|e| StageError::io("cleaning up earlier attempts", e))?;
        let work_dir = spool.work_dir(ticket).map_err(|e| StageError::io("creating the work folder", e))?;
        let output = tempfile::Builder::new()
            .prefix(&format!("{}{operation}-", Spool::attempt_prefix(token)))
            .suffix(&format!(".{extension}"))
            .tempfile_in(&work_dir)
            .map_err(|e| StageError::io("creating the output file", e))?
            .into_temp_path();
        let scratch = tempfile::Builder::new()
            .prefix(&format!("{}scratch-", Spool::attempt_prefix(token)))
            .tempdir_in(&work_dir)
            .map_err(|e| StageError::io("creating the scratch folder", e))?;
        Ok(Self { output, scratch })
    }

    /// Moves the output into `results/<ticket>/` under a name of its own, with its `preview`
    /// beside it ([`crate::spool::preview_path_for`]) before it, and makes that durable; the
    /// scratch folder goes. Returns the result's path.
    pub(super) fn place_result(
        self,
        spool: &Spool,
        ticket: Ticket,
        token: i64,
        extension: &str,
        preview: Option<tempfile::TempPath>,
    ) -> Result<PathBuf, StageError> {
        drop(self.scratch);
        let result_dir = spool.result_dir(ticket).map_err(|e| StageError::io("creating the result folder", e))?;
        let result =
            result_dir.join(format!("{}{:016x}.{extension}", Spool::attempt_prefix(token), rand::random::<u64>(),));
        // First, so that a result never lies without the preview it was drawn with; a preview
        // that cannot be moved only goes missing.
        if let Some(preview) = preview
            && let Err(e) = preview.persist(crate::spool::preview_path_for(&result))
        {
            tracing::warn!(%ticket, error = %e.error, "could not place the result's preview; it is sent without one");
        }
        self.output.persist(&result).map_err(|e| StageError::io("moving the result", e.error))?;
        // The file's bytes are synced (`operations::run_contained`); its name in
        // `results/<ticket>/`, and that folder's in `results/`, must survive a power cut too,
        // since `ready` deletes the source.
        for dir in [result_dir.as_path(), result_dir.parent().unwrap_or(&result_dir)] {
            std::fs::File::open(dir)
                .and_then(|dir| dir.sync_all())
                .map_err(|e| StageError::io("syncing the result folder", e))?;
        }
        Ok(result)
    }
}
