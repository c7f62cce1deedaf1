use clap::Args;

use super::{BatchFlags, update};
use crate::error::CommandError;
use crate::output::Report;
use baton_core::journal::JournalEvent;
use baton_core::text::esc;
use baton_ops::batch::BatchWrite;
use baton_ops::env::Ctx;

/// End the batch: `complete` or `stalled`.
///
/// End the batch: `complete` when every ticket is done, `stalled` when it cannot go on.
#[derive(Debug, Args)]
pub struct FinishArgs {
    /// How the batch ended (the originating schema's terminal statuses).
    #[arg(long, value_parser = ["complete", "stalled"])]
    status: String,
    #[command(flatten)]
    flags: BatchFlags,
}

pub fn cmd_batch_finish(ctx: &Ctx, args: FinishArgs) -> Result<Report, CommandError> {
    update(
        ctx,
        &args.flags,
        BatchWrite::Finish,
        JournalEvent::Finish,
        |state| {
            state.status = baton_core::model::BatchStatus::parse(&args.status);
            Ok((
                format!("batch {} is {}", esc(&state.batch_id), args.status),
                serde_json::json!({ "status": args.status }),
            ))
        },
    )
}
