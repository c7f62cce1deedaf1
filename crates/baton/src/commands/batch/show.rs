use clap::Args;

use crate::error::CommandError;
use crate::output::Report;
use baton_ops::batch::missing_batch;
use baton_ops::env::Ctx;

/// Show the batch and the ticket a batch resume picks next.
#[derive(Debug, Args)]
pub struct ShowArgs {}

pub fn cmd_batch_show(ctx: &Ctx, _args: ShowArgs) -> Result<Report, CommandError> {
    let loaded = ctx.store()?.read_batch()?.ok_or_else(missing_batch)?;
    Ok(crate::view::batch(ctx, &loaded))
}
