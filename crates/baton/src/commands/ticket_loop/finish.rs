use std::ffi::OsString;

use clap::Args;

use super::{Applied, WriteFlags, transition};
use crate::context::Ctx;
use crate::error::CommandError;
use crate::output::Report;
use baton_core::model::LoopStatus;
use baton_core::time::format_ts;

/// End a loop: `complete`, or `stalled` when it cannot go on (the next ticket may).
#[derive(Debug, Args)]
pub struct FinishArgs {
    /// The ticket id.
    ticket: OsString,
    #[arg(long, value_parser = ["complete", "stalled"])]
    status: String,
    /// Why the loop ended (stored as `termination_reason`).
    #[arg(long, value_name = "TEXT")]
    reason: Option<String>,
    #[command(flatten)]
    flags: WriteFlags,
}

pub fn cmd_loop_finish(ctx: &Ctx, args: FinishArgs) -> Result<Report, CommandError> {
    transition(ctx, &args.ticket, &args.flags, |state, target| {
        state.status = if args.status == "complete" {
            LoopStatus::Complete
        } else {
            LoopStatus::Stalled
        };
        if let Some(reason) = &args.reason {
            state.loop_state.termination_reason = Some(reason.clone());
        }
        state.last_updated = Some(format_ts(ctx.now));
        Ok(Applied {
            changed: true,
            // The breadcrumb above says where it ended.
            message: format!("{} is {}", target.raw, args.status),
            next: None,
            warnings: Vec::new(),
        })
    })
}
