use clap::Args;
use serde_json::json;

use super::HolderArgs;
use crate::error::CommandError;
use crate::output::Report;
use baton_ops::env::Ctx;
use baton_ops::single_run::LeaseRefresh;

/// Refresh the run lock's heartbeat when this caller holds it.
///
/// Refresh the run lock's heartbeat, when this caller holds it; anything else is a no-op that
/// exits 0, so a per-turn hook can call it blindly.
#[derive(Debug, Args)]
pub struct HeartbeatArgs {
    /// The run id `baton run new` printed (16 hex digits, or a legacy `YYYYMMDD-HHMMSS`).
    run_id: String,
    #[command(flatten)]
    holder: HolderArgs,
}

pub fn cmd_run_heartbeat(ctx: &Ctx, args: HeartbeatArgs) -> Result<Report, CommandError> {
    let done =
        baton_ops::single_run::heartbeat(ctx, &*ctx.store()?, &args.run_id, &args.holder.holder())?;
    Ok(render_heartbeat(ctx, done))
}

/// What a lease heartbeat did, as a command prints it.
pub fn render_heartbeat(ctx: &Ctx, done: LeaseRefresh) -> Report {
    match done {
        LeaseRefresh::Skipped { id, why } => Report::ok(
            json!({ "refreshed": false, "run_id": id.to_string(), "why": why }),
            format!("no heartbeat: {why}"),
        ),
        LeaseRefresh::Refreshed { id } => Report::ok(
            json!({ "refreshed": true, "run_id": id.to_string() }),
            format!("heartbeat: run {id} at {}", ctx.shown(ctx.now)),
        ),
    }
}
