//! `baton pause`: the explicit pause mark of the continuation protocol.

use clap::Args;
use serde_json::json;

use crate::output::Report;
use baton_core::model::{PauseMark, Pauses};
use baton_core::text::esc_or;
use baton_core::time::format_ts;
use baton_ops::env::Ctx;
use baton_ops::error::CommandError;
use baton_store::{Expect, LockScope, RecordKey, git};

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
    let store = ctx.store()?;
    if args.clear {
        if !store.exists()? {
            return Ok(Report::ok(json!({ "cleared": false }), "no pause mark"));
        }
        let _guard = store.lock(LockScope::Feature)?;
        let Some(loaded) = store.read_pause()? else {
            return Ok(Report::ok(json!({ "cleared": false }), "no pause mark"));
        };
        loaded.writable()?;
        let mut pauses = loaded.state.clone();
        let had = pauses.clear(ctx.session());
        if pauses.marks.is_empty() {
            store.remove(&RecordKey::Pause, &loaded.expect())?;
        } else if had {
            store.write_pause(&pauses, &loaded.expect())?;
        }
        let text = if had {
            "pause mark removed"
        } else {
            "no pause mark for this session"
        };
        return Ok(Report::ok(json!({ "cleared": had }), text));
    }
    let mark = PauseMark {
        paused_at: format_ts(ctx.now),
        session_id: ctx.session.clone(),
        reason: args.reason.clone(),
        extra: Default::default(),
    };
    // Asked before the lock: git status can start a user's fsmonitor hook.
    let excluded: Vec<std::path::PathBuf> =
        store.layout().state_dir_in_tree().into_iter().collect();
    let refs: Vec<&std::path::Path> = excluded.iter().map(|p| p.as_path()).collect();
    let dirty = git::tree_dirty(&store.layout().root, &refs)?;
    let guard = store.lock(LockScope::Feature)?;
    let old = store.read_pause()?;
    let mut pauses = match &old {
        Some(old) => {
            old.writable()?;
            old.state.clone()
        }
        None => Pauses::default(),
    };
    pauses.set(mark.clone());
    store.write_pause(&pauses, &Expect::read(old.as_ref()))?;
    drop(guard);
    let who = esc_or(ctx.session(), "every session (no session id)");
    let mut report = Report::ok(
        json!({ "pause": mark, "path": store.name(&RecordKey::Pause).display().to_string(), "tree_dirty": dirty }),
        format!(
            "paused at {} for {who}\nnext: the next session's `baton resume` offers this work as paused",
            mark.paused_at
        ),
    );
    if dirty {
        report = report.warn(
            "the tree has uncommitted changes: commit them (`git status` lists them) so the next session sees a clean pause, then pause again",
        );
    }
    Ok(report)
}
