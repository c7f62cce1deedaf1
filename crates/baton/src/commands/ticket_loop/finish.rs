use std::ffi::OsString;

use baton_core::journal::JournalEvent;
use clap::Args;

use super::{Applied, transition};
use crate::args::WriteFlags;
use crate::error::CommandError;
use crate::output::Report;
use baton_core::model::LoopStatus;
use baton_ops::env::Ctx;

/// End a loop: `complete`, or `stalled` when it cannot go on.
///
/// After a stalled loop, the next ticket may start.
#[derive(Debug, Args)]
pub struct FinishArgs {
    /// The ticket id.
    ticket: OsString,
    /// How it ended: `complete` (the loop exited cleanly) or `stalled` (cap reached, no
    /// convergence, blocked).
    #[arg(long, value_parser = ["complete", "stalled"])]
    status: String,
    /// Why the loop ended (stored as `termination_reason`).
    #[arg(long, value_name = "TEXT")]
    reason: Option<String>,
    #[command(flatten)]
    flags: WriteFlags,
}

pub fn cmd_loop_finish(ctx: &Ctx, args: FinishArgs) -> Result<Report, CommandError> {
    let report = finish(ctx, &args)?;
    if args.status != "complete"
        || report.status != crate::error::ExitStatus::Success
        || report.json.get("changed") == Some(&serde_json::Value::Bool(false))
    {
        return Ok(report);
    }
    // A loop finished complete is a claim: judged at once, and kept for the session's stops.
    let target = baton_ops::ticket_loop::Target::derive(ctx, &args.ticket);
    let claimed = ctx
        .store()
        .and_then(|store| baton_ops::judge::claim_loop(ctx, &target.raw, &target.key, &*store));
    Ok(crate::view::with_claim(report, "the loop's end", claimed))
}

fn finish(ctx: &Ctx, args: &FinishArgs) -> Result<Report, CommandError> {
    transition(
        ctx,
        &args.ticket,
        &args.flags,
        JournalEvent::Finish,
        |state, target| {
            if state.status.is_terminal() {
                return Ok(Applied {
                    changed: false,
                    message: format!(
                        "{} is already {}; nothing changed",
                        target.shown(),
                        state.status.as_str()
                    ),
                    next: None,
                    warnings: Vec::new(),
                });
            }
            state.status = if args.status == "complete" {
                LoopStatus::Complete
            } else {
                LoopStatus::Stalled
            };
            if let Some(reason) = &args.reason {
                state.loop_state.termination_reason = Some(reason.clone());
            }
            state.touch(ctx.now);
            Ok(Applied {
                changed: true,
                // The breadcrumb above says where it ended.
                message: format!("{} is {}", target.shown(), args.status),
                next: None,
                warnings: Vec::new(),
            })
        },
    )
}
