//! `baton batch`: the cursor over a run of 2 or more tickets (`.agentic/batch-state.json`).
//! Each ticket keeps its own loop-state; the batch only says which ticket is next.

mod finish;
mod heartbeat;
mod resume;
mod show;

mod start;
mod ticket;

use clap::Subcommand;

use crate::error::CommandError;
use crate::output::Report;
use baton_core::journal::JournalEvent;
use baton_core::model::BatchState;
use baton_ops::batch::{self, BatchUpdate, BatchWrite};
use baton_ops::env::Ctx;
use baton_ops::ticket_loop::Ownership;

/// Run several tickets as one batch, one per project root.
#[derive(Debug, Subcommand)]
pub enum BatchCommand {
    Start(start::StartArgs),
    Ticket(ticket::TicketArgs),
    Show(show::ShowArgs),
    Resume(resume::ResumeArgs),
    Finish(finish::FinishArgs),
    Heartbeat(heartbeat::HeartbeatArgs),
}

pub fn dispatch(ctx: &Ctx, cmd: BatchCommand) -> Result<Report, CommandError> {
    match cmd {
        BatchCommand::Start(args) => start::cmd_batch_start(ctx, args),
        BatchCommand::Ticket(args) => ticket::cmd_batch_ticket(ctx, args),
        BatchCommand::Show(args) => show::cmd_batch_show(ctx, args),
        BatchCommand::Resume(args) => resume::cmd_batch_resume(ctx, args),
        BatchCommand::Finish(args) => finish::cmd_batch_finish(ctx, args),
        BatchCommand::Heartbeat(args) => heartbeat::cmd_batch_heartbeat(ctx, args),
    }
}

/// The ownership options of every batch write.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct BatchFlags {
    /// Take over a batch that records no owner session.
    #[arg(long)]
    pub force: bool,
    /// The owner epoch this caller holds (printed by `batch start` and `batch resume`); a write
    /// holding an older epoch than the file's is refused.
    #[arg(long, value_name = "N")]
    pub epoch: Option<u64>,
}

/// The shared write path of `batch ticket`, `batch resume` and `batch finish`
/// (`baton_ops::batch::update`), rendered.
fn update(
    ctx: &Ctx,
    flags: &BatchFlags,
    kind: BatchWrite,
    event: JournalEvent,
    apply: impl FnOnce(&mut BatchState) -> Result<(String, serde_json::Value), baton_ops::OpError>,
) -> Result<Report, CommandError> {
    let ownership = Ownership {
        force: flags.force,
        epoch: flags.epoch,
    };
    Ok(
        match batch::update(ctx, &*ctx.store()?, &ownership, kind, event, apply)? {
            BatchUpdate::Refused(d) => Report::decision(&d),
            BatchUpdate::Written {
                decision,
                state,
                message,
                warnings,
            } => {
                let mut report = Report::decision(&decision)
                    .with("batch_id", state.batch_id.clone())
                    .with("status", state.status.as_str())
                    .with("epoch", state.owner_epoch)
                    .text_before(&message);
                for w in warnings {
                    report = report.warn(w);
                }
                report
            }
        },
    )
}
