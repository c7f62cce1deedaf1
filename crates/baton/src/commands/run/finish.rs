use clap::Args;

use super::{HolderArgs, end_lease};
use crate::error::CommandError;
use crate::output::Report;
use baton_core::model::RunStatus;
use baton_ops::env::Ctx;

/// End a run (`complete` or `abandoned`) and release its lock.
///
/// Finished runs can be pruned (`baton run prune`).
#[derive(Debug, Args)]
pub struct FinishArgs {
    /// The run id `baton run new` printed (16 hex digits, or a legacy `YYYYMMDD-HHMMSS`).
    run_id: String,
    /// How the run ended.
    #[arg(long, default_value = "complete", value_parser = ["complete", "abandoned"])]
    status: String,
    /// End a run whose stale lock another holder had.
    #[arg(long)]
    force: bool,
    #[command(flatten)]
    holder: HolderArgs,
}

pub fn cmd_run_finish(ctx: &Ctx, args: FinishArgs) -> Result<Report, CommandError> {
    end_lease(
        ctx,
        &args.run_id,
        &args.holder,
        Some(RunStatus::parse(&args.status)),
        args.force,
    )
}
