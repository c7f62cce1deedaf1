use clap::Args;

use super::{HolderArgs, end_lease};
use crate::error::CommandError;
use crate::output::Report;
use baton_ops::env::Ctx;

/// Release the run lock.
///
/// Refused (exit 3) while another live holder has it, and for another holder's stale lock
/// without `--force`.
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
