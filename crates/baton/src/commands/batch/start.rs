use std::ffi::OsString;

use clap::Args;

use crate::error::CommandError;
use crate::output::Report;
use baton_ops::batch::{self, BatchStart};
use baton_ops::env::Ctx;

/// Start a batch of 2 or more tickets, owned by this session.
///
/// One batch per project root: refused (exit 3) while another session's batch is active and
/// live, and while a batch that records no owner session exists, in any status (`--force`
/// takes it over). A finished or stale batch is archived first.
#[derive(Debug, Args)]
pub struct StartArgs {
    /// The tickets, in the order to run them.
    #[arg(required = true, num_args = 1..)]
    tickets: Vec<OsString>,
    /// How the batch runs (recorded as `mode`).
    #[arg(long, default_value = "sequential")]
    mode: String,
    /// Take over a batch that records no owner session.
    #[arg(long)]
    force: bool,
}

pub fn cmd_batch_start(ctx: &Ctx, args: StartArgs) -> Result<Report, CommandError> {
    let done = batch::start(
        ctx,
        &*ctx.store()?,
        &batch::Start {
            tickets: &args.tickets,
            mode: &args.mode,
            force: args.force,
        },
    )?;
    Ok(match done {
        BatchStart::Refused(d) => Report::decision(&d),
        BatchStart::Started {
            decision,
            state,
            warnings,
        } => {
            let mut report = Report::decision(&decision)
                .with("batch_id", state.batch_id.clone())
                .with("epoch", state.owner_epoch)
                .text_before(&format!(
                    "started batch {} with {} tickets",
                    state.batch_id,
                    state.tickets.len()
                ));
            for w in warnings {
                report = report.warn(w);
            }
            report
        }
    })
}
