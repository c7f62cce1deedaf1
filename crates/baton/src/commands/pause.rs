//! `baton pause`: the explicit pause mark of the continuation protocol.

use clap::Args;
use serde_json::json;

use crate::error::CommandError;
use crate::output::Report;
use baton_core::text::esc_or;
use baton_ops::continuation::{self, Cleared};
use baton_ops::env::Ctx;

/// Mark this session's work paused on purpose, so the next session resumes it from the next
/// step instead of treating it as a crash.
///
/// The mark (one per session in `.agentic/pause.json`; a later pause of the same session
/// replaces its earlier one) covers what this session (every session, without a session id)
/// owns and last wrote before the pause, and the work that records no owner: the feature and
/// the ledgers. Anything written after the pause was resumed since, and is judged on its own.
/// Pause at a checkpoint with a clean tree: a pause over uncommitted changes is reported as
/// unclean by the next session.
#[derive(Debug, Args)]
pub struct PauseArgs {
    /// Why the work is paused; shown to the next session.
    #[arg(long, value_name = "TEXT")]
    reason: Option<String>,
    /// Remove this session's pause mark instead.
    #[arg(long, conflicts_with = "reason")]
    clear: bool,
}

pub fn cmd_pause(ctx: &Ctx, args: PauseArgs) -> Result<Report, CommandError> {
    if args.clear {
        return Ok(match continuation::clear_pause(ctx, &*ctx.store()?)? {
            Cleared::NoMark => Report::ok(json!({ "cleared": false }), "no pause mark"),
            Cleared::NotThisSession => Report::ok(
                json!({ "cleared": false }),
                "no pause mark for this session",
            ),
            Cleared::Removed => Report::ok(json!({ "cleared": true }), "pause mark removed"),
        });
    }
    let paused = continuation::pause(ctx, &*ctx.store()?, args.reason.clone())?;
    let who = esc_or(ctx.session(), "every session (no session id)");
    let mut report = Report::ok(
        json!({ "pause": paused.mark, "path": paused.path.display().to_string(), "tree_dirty": paused.tree_dirty }),
        format!(
            "paused at {} for {who}\nnext: the next session's `baton resume` offers this work as paused",
            paused.mark.paused_at
        ),
    );
    if paused.tree_dirty {
        report = report.warn(
            "the tree has uncommitted changes: commit them (`git status` lists them) so the next session sees a clean pause, then pause again",
        );
    }
    Ok(report)
}
