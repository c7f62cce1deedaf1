use clap::Args;
use serde_json::Map;

use super::update;
use crate::context::Ctx;
use crate::error::CommandError;
use crate::output::Report;
use baton_core::model::ReplanEntry;
use baton_core::time::format_ts;

/// Record a ticket's progress in the batch, and optionally a replan note.
#[derive(Debug, Args)]
pub struct TicketArgs {
    /// The ticket id, as given to `batch start`.
    ticket: String,
    #[arg(long, value_parser = ["pending", "in_progress", "complete", "stalled", "skipped"])]
    status: String,
    /// Append a note to the append-only `replan_log`.
    #[arg(long, value_name = "TEXT")]
    replan: Option<String>,
    /// Take over a batch that records no owner session.
    #[arg(long)]
    force: bool,
    /// The owner epoch this caller holds.
    #[arg(long, value_name = "N")]
    epoch: Option<u64>,
}

pub fn cmd_batch_ticket(ctx: &Ctx, args: TicketArgs) -> Result<Report, CommandError> {
    update(ctx, args.force, args.epoch, |state| {
        let known: Vec<String> = state.tickets.iter().map(|t| t.ticket_id.clone()).collect();
        let entry = state
            .tickets
            .iter_mut()
            .find(|t| t.ticket_id == args.ticket)
            .ok_or_else(|| {
                CommandError::usage(format!(
                    "ticket {:?} is not in batch {}",
                    args.ticket, state.batch_id
                ))
                .hint(format!("the batch holds: {}", known.join(", ")))
            })?;
        entry.status = args.status.clone();
        if let Some(note) = &args.replan {
            state.replan_log.push(ReplanEntry {
                at: format_ts(ctx.now),
                ticket_id: Some(args.ticket.clone()),
                note: note.clone(),
                extra: Map::new(),
            });
        }
        Ok(format!(
            "{} is {} in batch {}",
            args.ticket, args.status, state.batch_id
        ))
    })
}
