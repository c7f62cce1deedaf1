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
    let report = end_lease(
        ctx,
        &args.run_id,
        &args.holder,
        Some(RunStatus::parse(&args.status)),
        args.force,
    )?;
    if args.status != "complete" || report.status != crate::error::ExitStatus::Success {
        return Ok(report);
    }
    // A run finished complete is a claim where the project declares its gates: judged at once,
    // and kept for the session's stops.
    let Ok(id) = baton_core::run_id::RunId::parse(&args.run_id) else {
        return Ok(report);
    };
    let claimed = ctx
        .store()
        .and_then(|store| baton_ops::judge::claim_run(ctx, id.as_str(), &*store));
    Ok(crate::view::with_claim(report, "the run's end", claimed))
}
