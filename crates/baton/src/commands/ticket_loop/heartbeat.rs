use std::ffi::{OsStr, OsString};

use clap::Args;
use serde_json::json;

use super::{Target, WriteFlags};
use crate::output::Report;
use baton_core::model::LoopStatus;
use baton_core::text::{esc, esc_or};
use baton_core::time::format_ts;
use baton_ops::env::Ctx;
use baton_ops::error::CommandError;
use baton_store::LockScope;

/// Refresh `last_updated` of a loop this session owns and is running.
///
/// Anything else (another owner, not active, no such loop, an older `--epoch`) is a no-op that
/// exits 0, so a per-turn hook can call it blindly.
#[derive(Debug, Args)]
pub struct HeartbeatArgs {
    /// The ticket id.
    ticket: OsString,
    #[command(flatten)]
    flags: WriteFlags,
}

pub fn cmd_loop_heartbeat(ctx: &Ctx, args: HeartbeatArgs) -> Result<Report, CommandError> {
    heartbeat(ctx, &args.ticket, &args.flags)
}

/// Refreshes a loop this session owns and runs; anything else is a no-op.
pub fn heartbeat(ctx: &Ctx, ticket: &OsStr, flags: &WriteFlags) -> Result<Report, CommandError> {
    let store = ctx.store()?;
    let target = Target::derive(ctx, ticket);
    let noop = |why: String| {
        Ok(Report::ok(
            json!({ "refreshed": false, "key": target.key, "why": why }),
            format!("no heartbeat: {why}"),
        ))
    };
    if !store.exists()? {
        return noop("no state directory".into());
    }
    let _guard = store.lock(LockScope::Loop(&target.key))?;
    let Some(mut loaded) = store.read_loop(&target.key)? else {
        return noop(format!("no loop-state for {}", target.raw));
    };
    let state = &mut loaded.state;
    // A sessionless caller keeps a sessionless loop alive: the protocol's carve-out.
    if state.owner() != ctx.session() {
        return noop(format!(
            "the loop for {} is owned by {}",
            target.shown(),
            esc_or(state.owner(), "no session")
        ));
    }
    if state.status != LoopStatus::Active {
        return noop(format!(
            "the loop for {} is {}",
            target.shown(),
            state.status.as_str()
        ));
    }
    if flags.epoch.is_some_and(|held| held != state.owner_epoch) {
        return noop(format!(
            "owner epoch is {}, not the one held",
            state.owner_epoch
        ));
    }
    if state.ticket_id.as_deref().is_some_and(|t| t != target.raw) {
        return noop(format!(
            "key {} belongs to ticket {:?}",
            target.key,
            esc(state.ticket_id.as_deref().unwrap_or_default())
        ));
    }
    loaded.writable()?;
    loaded.state.touch(ctx.now);
    store.write_loop(&target.key, &loaded.state, &loaded.expect())?;
    let batch_warning = super::keep_batch_live(&*store, ctx, &target);
    let report = Report::ok(
        json!({ "refreshed": true, "key": target.key, "last_updated": loaded.state.last_updated }),
        format!("heartbeat: {} at {}", target.shown(), format_ts(ctx.now)),
    );
    Ok(match batch_warning {
        Some(w) => report.warn(w),
        None => report,
    })
}
