use clap::Args;
use serde_json::json;

use super::no_batch;
use crate::output::Report;
use baton_core::text::{esc, esc_or};
use baton_core::time::{age, human_age, is_live};
use baton_ops::env::Ctx;
use baton_ops::error::CommandError;

/// Show the batch and the ticket a batch resume picks next.
#[derive(Debug, Args)]
pub struct ShowArgs {}

use baton_ops::batch::next_step;

pub fn cmd_batch_show(ctx: &Ctx, _args: ShowArgs) -> Result<Report, CommandError> {
    let store = ctx.store()?;
    let loaded = store.read_batch()?.ok_or_else(no_batch)?;
    let s = &loaded.state;
    let last = s.liveness(ctx.now);
    let seen = last.map_or_else(
        || "no last-write time".into(),
        |t| format!("last write {} ago", human_age(age(ctx.now, t))),
    );
    let mut text = format!(
        "batch {} ({}, {})\n  owner: {} (epoch {}, {}, {seen})\n",
        esc(&s.batch_id),
        esc(&s.status),
        esc_or(s.mode.as_deref(), "sequential"),
        esc_or(s.owner(), "none"),
        s.owner_epoch,
        if is_live(ctx.now, last) {
            "live"
        } else {
            "stale"
        },
    );
    for t in &s.tickets {
        text.push_str(&format!("  {:<12} {}\n", esc(&t.status), esc(&t.ticket_id)));
    }
    if !s.replan_log.is_empty() {
        text.push_str(&format!("  replans: {}\n", s.replan_log.len()));
    }
    let next = next_step(s);
    if let Some(next) = &next {
        text.push_str(&format!("next: {next}\n"));
    }
    Ok(Report::ok(
        json!({ "path": loaded.path.display().to_string(), "next": next, "state": s }),
        text,
    ))
}
