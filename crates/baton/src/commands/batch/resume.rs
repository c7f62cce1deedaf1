use clap::Args;

use super::{BatchFlags, update};
use crate::error::CommandError;
use crate::output::Report;
use baton_core::journal::JournalEvent;
use baton_core::text::esc;
use baton_ops::batch::BatchWrite;
use baton_ops::env::Ctx;

/// Resume a batch: take it over and name the next ticket.
///
/// Resume an interrupted, paused, stalled or stale batch: this session becomes its owner (owner
/// epoch + 1 when it takes the batch over), the batch is active again, and the next ticket is
/// named.
///
/// Refused (exit 3) while another live session runs the batch. Each ticket's own
/// `baton resume <TICKET>` then picks the phase.
#[derive(Debug, Args)]
pub struct ResumeArgs {
    #[command(flatten)]
    flags: BatchFlags,
}

pub fn cmd_batch_resume(ctx: &Ctx, args: ResumeArgs) -> Result<Report, CommandError> {
    update(
        ctx,
        &args.flags,
        BatchWrite::Resume,
        JournalEvent::Resume,
        |state| {
            Ok((
                format!(
                    "batch {} is active under this session (owner epoch {})",
                    esc(&state.batch_id),
                    state.owner_epoch
                ),
                serde_json::json!({}),
            ))
        },
    )
}
