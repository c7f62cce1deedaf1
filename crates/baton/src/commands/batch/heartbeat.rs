use clap::Args;
use serde_json::json;

use crate::error::CommandError;
use crate::output::Report;
use baton_core::text::esc;
use baton_ops::batch::BatchHeartbeat;
use baton_ops::env::Ctx;
use baton_ops::ticket_loop::Ownership;

/// Refresh the heartbeat of the batch this session owns.
///
/// Refresh `updated_at` of the batch this session owns while it is active, so that it stays
/// live between two of its tickets.
///
/// Anything else (another owner or none, not active, no batch, an older `--epoch`) is a no-op
/// that exits 0, so a per-turn hook can call it blindly.
#[derive(Debug, Args)]
pub struct HeartbeatArgs {
    /// The owner epoch this caller holds (printed by `batch start` and `batch resume`); holding
    /// an older epoch than the file's refreshes nothing.
    #[arg(long, value_name = "N")]
    epoch: Option<u64>,
}

pub fn cmd_batch_heartbeat(ctx: &Ctx, args: HeartbeatArgs) -> Result<Report, CommandError> {
    let done = baton_ops::batch::heartbeat(
        ctx,
        &*ctx.store()?,
        &Ownership {
            force: false,
            epoch: args.epoch,
        },
    )?;
    Ok(match done {
        BatchHeartbeat::Skipped { why } => Report::ok(
            json!({ "refreshed": false, "why": why }),
            format!("no heartbeat: {why}"),
        ),
        BatchHeartbeat::Refreshed {
            batch_id,
            updated_at,
        } => Report::ok(
            json!({ "refreshed": true, "batch_id": batch_id, "updated_at": updated_at }),
            format!(
                "heartbeat: batch {} at {}",
                esc(&batch_id),
                ctx.shown(ctx.now)
            ),
        ),
    })
}
