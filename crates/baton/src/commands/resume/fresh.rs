use std::ffi::OsString;

use clap::Args;
use serde_json::json;

use crate::args::WriteFlags;
use crate::output::Report;
use baton_core::decide::loop_write::{REFUSED, check_key_collision};
use baton_core::{Decision, Reason};
use baton_ops::env::Ctx;
use baton_ops::error::CommandError;
use baton_ops::loops::legacy_held;
use baton_ops::ticket_loop::gather;
use baton_ops::ticket_loop::may_replace;
use baton_store::JournalTarget;

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
    let g = gather(ctx, &args.ticket)?;
    let notes = g.notes.join("\n");
    let t = g.target.arg();
    let Some(loaded) = &g.loaded else {
        return Ok(Report::ok(
            json!({ "verdict": "none", "archived": null }),
            format!("no loop-state for {t}; nothing to archive\nnext: `baton loop init {t}`"),
        )
        .text_before(&notes));
    };
    if g.held_legacy {
        let d = legacy_held(ctx, &loaded.state, REFUSED, &t);
        return Ok(Report::decision(&d).text_before(&notes));
    }
    loaded.writable()?;
    if let Err(d) = check_key_collision(&loaded.state, &g.target.raw, &g.target.key) {
        return Ok(Report::decision(&d).text_before(&notes));
    }
    if let Err(d) = baton_core::decide::loop_write::check_reset(
        &loaded.state,
        ctx.session(),
        ctx.now,
        args.flags.force,
        &t,
    ) {
        return Ok(Report::decision(&d).text_before(&notes));
    }
    if let Err(d) = may_replace(ctx, &loaded.state, &args.flags.ownership(), &g.target) {
        return Ok(Report::decision(&d).text_before(&notes));
    }
    let to = g
        .store
        .archive_loop(&g.target.key, &loaded.expect(), ctx.now)?;
    // The loop's history stays: the journal outlives the state it describes.
    let event = baton_ops::journal::event(
        ctx,
        "fresh",
        Some(loaded.state.owner_epoch),
        json!({
            "archived": to.display().to_string(),
            "owner": loaded.state.session_id,
            "status": loaded.state.status.as_str(),
        }),
    );
    let journal_warning =
        baton_ops::journal::append(&*g.store, JournalTarget::Loop(&g.target.key), &[event]);
    let d = Decision::new(
        baton_core::Verdict::Archived,
        Reason::new(
            baton_core::Rule::LoopFreshArchived,
            format!("the loop for {t} was moved to {}", to.display()),
        ),
        Some(format!("start the new loop with `baton loop init {t}`")),
    );
    let report = Report::decision(&d)
        .with("archived", to.display().to_string())
        .text_before(&notes);
    Ok(match journal_warning {
        Some(w) => report.warn(w),
        None => report,
    })
}
