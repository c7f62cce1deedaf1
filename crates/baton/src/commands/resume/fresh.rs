use std::ffi::OsString;

use clap::Args;
use serde_json::json;

use crate::args::WriteFlags;
use crate::error::CommandError;
use crate::output::Report;
use baton_ops::env::Ctx;
use baton_ops::ticket_loop::{self, Fresh};

/// Start over: archive the ticket's loop so that a fresh one can begin.
///
/// Start over: archive the ticket's loop (kept under `.agentic/archive/`, never deleted) so
/// that `baton loop init` can begin a fresh one. Refused while another live session runs it.
#[derive(Debug, Args)]
pub struct FreshArgs {
    /// The ticket id.
    ticket: OsString,
    #[command(flatten)]
    flags: WriteFlags,
}

pub fn cmd_resume_fresh(ctx: &Ctx, args: FreshArgs) -> Result<Report, CommandError> {
    let done = ticket_loop::fresh(ctx, &*ctx.store()?, &args.ticket, &args.flags.ownership())?;
    let notes = done.notes.join("\n");
    let t = done.target.arg();
    Ok(match done.outcome {
        Fresh::NoLoop => Report::ok(
            json!({ "verdict": "none", "archived": null }),
            format!("no loop-state for {t}; nothing to archive\nnext: `baton loop init {t}`"),
        )
        .text_before(&notes),
        Fresh::Refused(d) => Report::decision(&d).text_before(&notes),
        Fresh::Archived {
            decision,
            to,
            warning,
        } => {
            let report = Report::decision(&decision)
                .with("archived", to.display().to_string())
                .text_before(&notes);
            match warning {
                Some(w) => report.warn(w),
                None => report,
            }
        }
    })
}
