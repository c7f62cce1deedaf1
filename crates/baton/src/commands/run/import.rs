use std::path::PathBuf;

use clap::Args;
use serde_json::json;

use super::state_file_lines;
use crate::error::CommandError;
use crate::output::Report;
use baton_ops::env::Ctx;
use baton_ops::single_run;

/// Import a run from an originating pipeline state file.
///
/// The file is `/tmp/pipeline_state_<run_id>.json`; the run goes into `.agentic/runs/`.
/// Only a regular file owned by this user is read (never a link, never another user's file in
/// the shared `/tmp`). Every field is kept; the known ones (`PIPELINE_BASE_COMMIT`, the plan
/// file, completed agents) are mapped. `baton run resume` imports on its own when the run is
/// not in `.agentic/runs/` yet.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The run id `baton run new` printed (16 hex digits, or a legacy `YYYYMMDD-HHMMSS`).
    run_id: String,
    /// The file to import [default: /tmp/pipeline_state_<run_id>.json].
    #[arg(long, value_name = "PATH")]
    from: Option<PathBuf>,
}

pub fn cmd_run_import(ctx: &Ctx, args: ImportArgs) -> Result<Report, CommandError> {
    let done = single_run::import(ctx, &*ctx.store()?, &args.run_id, args.from.as_deref())?;
    let (id, run, path) = (&done.id, &done.run, &done.path);
    let report = Report::ok(
        json!({ "run_id": id.to_string(), "imported_from": run.imported_from, "state_file": path.display().to_string() }),
        format!(
            "imported run {id} from {}\n{}",
            run.imported_from.as_deref().unwrap_or_default(),
            state_file_lines(run, path)
        ),
    );
    Ok(match done.warning {
        Some(w) => report.warn(w),
        None => report,
    })
}
