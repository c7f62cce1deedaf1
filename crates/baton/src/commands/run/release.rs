use clap::Args;
use serde_json::json;

use super::HolderArgs;
use crate::output::Report;
use baton_core::model::RunStatus;
use baton_ops::env::Ctx;
use baton_ops::error::CommandError;
use baton_ops::single_run::{self, LeaseEnd};

/// Release the run lock. Refused (exit 3) while another live holder has it, and for another
/// holder's stale lock without `--force`.
#[derive(Debug, Args)]
pub struct ReleaseArgs {
    /// The run id `baton run new` printed (16 hex digits, or a legacy `YYYYMMDD-HHMMSS`).
    run_id: String,
    /// End another holder's stale lock.
    #[arg(long)]
    force: bool,
    #[command(flatten)]
    holder: HolderArgs,
}

pub fn cmd_run_release(ctx: &Ctx, args: ReleaseArgs) -> Result<Report, CommandError> {
    end_lease(ctx, &args.run_id, &args.holder, None, args.force)
}

/// Drops the lease (and, with `status`, ends the run) unless a live foreign holder has it.
pub fn end_lease(
    ctx: &Ctx,
    raw_id: &str,
    holder: &HolderArgs,
    status: Option<RunStatus>,
    force: bool,
) -> Result<Report, CommandError> {
    Ok(
        match single_run::end_lease(ctx, raw_id, &holder.holder(), status, force)? {
            LeaseEnd::Refused(d) => Report::decision(&d),
            LeaseEnd::Ended {
                id,
                status,
                finished,
                warning,
            } => {
                let what = if finished {
                    format!("run {id} is {status}; its lock is released")
                } else {
                    format!("run {id}'s lock is released")
                };
                let report = Report::ok(
                    json!({ "verdict": "ok", "run_id": id.to_string(), "status": status }),
                    what,
                );
                match warning {
                    Some(w) => report.warn(w),
                    None => report,
                }
            }
        },
    )
}
