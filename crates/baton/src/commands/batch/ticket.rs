use clap::Args;

use super::{BatchFlags, update};
use crate::error::CommandError;
use crate::output::Report;
use baton_core::journal::JournalEvent;
use baton_core::model::{TICKET_STATUSES, replan_entry};
use baton_core::text::{esc, esc_join};
use baton_core::time::format_ts;
use baton_ops::batch::BatchWrite;
use baton_ops::env::Ctx;

/// Record a ticket's progress in the batch, and any `replan_log` entry.
///
/// Starting a ticket (`in_progress`) sets its `started_at`; ending it (`complete`, `blocked`,
/// `skipped_already_merged`) sets its `ended_at`.
#[derive(Debug, Args)]
pub struct TicketArgs {
    /// The ticket id, as given to `batch start`.
    ticket: String,
    /// The ticket's new status (the originating schema's per-ticket statuses).
    #[arg(long, value_parser = TICKET_STATUSES)]
    status: String,
    /// What the ticket did, or why it is blocked (stored as its `last_summary`).
    #[arg(long, value_name = "TEXT")]
    summary: Option<String>,
    /// Append a `replan_log` entry `{ts, action, ticket_id, detail}` with this detail.
    #[arg(long, value_name = "DETAIL")]
    replan: Option<String>,
    /// The action of that `replan_log` entry, for example drop_merged, investigator_rerun or
    /// re_sequence [default: drop_merged for skipped_already_merged, else re_sequence].
    #[arg(long, value_name = "ACTION", requires = "replan")]
    replan_action: Option<String>,
    #[command(flatten)]
    flags: BatchFlags,
}

pub fn cmd_batch_ticket(ctx: &Ctx, args: TicketArgs) -> Result<Report, CommandError> {
    let now = format_ts(ctx.now);
    update(
        ctx,
        &args.flags,
        BatchWrite::Ticket,
        JournalEvent::Ticket,
        |state| {
            let known = esc_join(state.tickets.iter().map(|t| t.ticket_id.as_str()));
            let batch_id = esc(&state.batch_id).into_owned();
            let entry = state
                .tickets
                .iter_mut()
                .find(|t| t.ticket_id == args.ticket)
                .ok_or_else(|| {
                    baton_ops::OpError::usage(format!(
                        "ticket {:?} is not in batch {batch_id}",
                        esc(&args.ticket)
                    ))
                    .hint(format!("the batch holds: {known}"))
                })?;
            entry.status = args.status.clone();
            let stamp = match args.status.as_str() {
                "in_progress" => Some("started_at"),
                "complete" | "blocked" | "skipped_already_merged" => Some("ended_at"),
                _ => None,
            };
            if let Some(field) = stamp {
                entry.extra.insert(field.into(), now.clone().into());
            }
            if let Some(summary) = &args.summary {
                entry
                    .extra
                    .insert("last_summary".into(), summary.clone().into());
            }
            if let Some(detail) = &args.replan {
                let action = args.replan_action.as_deref().unwrap_or(
                    if args.status == "skipped_already_merged" {
                        "drop_merged"
                    } else {
                        "re_sequence"
                    },
                );
                state
                    .replan_log
                    .push(replan_entry(&now, action, Some(&args.ticket), detail));
            }
            Ok((
                format!(
                    "{} is {} in batch {batch_id}",
                    esc(&args.ticket),
                    args.status
                ),
                serde_json::json!({
                    "ticket": args.ticket,
                    "status": args.status,
                    "summary": args.summary,
                    "replan": args.replan,
                }),
            ))
        },
    )
}
