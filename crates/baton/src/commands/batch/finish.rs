use clap::Args;

use super::update;
use crate::context::Ctx;
use crate::error::CommandError;
use crate::output::Report;

/// End the batch: `complete`, or `abandoned`.
#[derive(Debug, Args)]
pub struct FinishArgs {
    #[arg(long, value_parser = ["complete", "abandoned"])]
    status: String,
    /// Take over a batch that records no owner session.
    #[arg(long)]
    force: bool,
    /// The owner epoch this caller holds.
    #[arg(long, value_name = "N")]
    epoch: Option<u64>,
}

pub fn cmd_batch_finish(ctx: &Ctx, args: FinishArgs) -> Result<Report, CommandError> {
    update(ctx, args.force, args.epoch, |state| {
        state.status = args.status.clone();
        Ok(format!("batch {} is {}", state.batch_id, args.status))
    })
}
