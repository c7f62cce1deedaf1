//! A session taking back its own interrupted loop: the client continued the same session by
//! itself once a usage limit reset (Claude Code's auto-continue), or the person typed again in
//! it. The loop goes back to the session that owned it, as itself (same owner, same epoch), and
//! the journal records who resumed it and how, so that no second waker resumes it too: another
//! session's `baton resume accept` or a supervisor then finds the loop live and owned.

use std::ffi::OsStr;

use baton_core::journal::JournalEvent;
use baton_core::model::{LoopState, LoopStatus};
use baton_core::time::parse_ts;
use baton_store::LockScope;
use baton_store::StateStore;
use jiff::Timestamp;

use super::Target;
use crate::env::Ctx;
use crate::error::OpError;
use crate::journal;

/// Why a loop was not taken back, or that it was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TakeBack {
    /// The loop is the session's again: active, its interrupt cleared.
    Taken { key: String, resume_count: u64 },
    /// The recorded reset is still ahead: the limit has not reset, so nothing resumes yet.
    NotYet { until: Timestamp },
    /// Not this session's interrupted loop any more (resumed, taken over, finished, gone).
    NotOwn { why: String },
}

/// Whether `state` may be taken back by `session` at `now`: interrupted, owned by `session`,
/// and past its recorded reset (`resume_after`), unless the client says the usage came back
/// before it (`usage_back`: Claude Code's early auto-continue). The protocol's default wait for
/// a rate limit recorded without a reset time is not applied: the client continuing the session
/// is the word that the limit reset, and there is no recorded time it could contradict.
pub fn may_take_back(
    state: &LoopState,
    session: &str,
    now: Timestamp,
    usage_back: bool,
) -> Result<(), TakeBack> {
    if state.owner() != Some(session) {
        return Err(TakeBack::NotOwn {
            why: "another session owns it now".into(),
        });
    }
    if state.status != LoopStatus::Interrupted {
        return Err(TakeBack::NotOwn {
            why: format!("it is {}", state.status.as_str()),
        });
    }
    if let Some(until) = parse_ts(state.resume_after.as_deref()).filter(|t| *t > now && !usage_back)
    {
        return Err(TakeBack::NotYet { until });
    }
    Ok(())
}

/// Takes the loop for `ticket` back for the session `ctx.session`, under the loop's lock, when
/// `may_take_back` allows it; `how` is what the journal records of how the session went on.
pub fn take_back(
    ctx: &Ctx,
    store: &dyn StateStore,
    ticket: &OsStr,
    how: &str,
) -> Result<TakeBack, OpError> {
    let target = Target::derive(ctx, ticket);
    let Some(session) = ctx.session() else {
        return Ok(TakeBack::NotOwn {
            why: "no session".into(),
        });
    };
    if !store.exists()? {
        return Ok(TakeBack::NotOwn {
            why: "no state directory".into(),
        });
    }
    let _guard = store.lock(LockScope::Loop(&target.key))?;
    let Some(loaded) = store.read_loop(&target.key)? else {
        return Ok(TakeBack::NotOwn {
            why: "its loop-state is gone".into(),
        });
    };
    loaded.writable()?;
    if loaded
        .state
        .ticket_id
        .as_deref()
        .is_some_and(|t| t != target.raw)
    {
        return Ok(TakeBack::NotOwn {
            why: "the key belongs to another ticket".into(),
        });
    }
    let usage_back = baton_core::hook::usage_back_early(how);
    if let Err(no) = may_take_back(&loaded.state, session, ctx.now, usage_back) {
        return Ok(no);
    }
    let original = &loaded.state;
    let mut state = original.clone();
    state.status = LoopStatus::Active;
    state.resume_count += 1;
    state.interrupted_at = None;
    state.interrupt_reason = None;
    state.resume_after = None;
    state.touch(ctx.now);
    let event = journal::event(
        ctx,
        JournalEvent::Resume,
        Some(state.owner_epoch),
        serde_json::json!({
            "mode": "own-session",
            "by": session,
            "how": how,
            "interrupt_reason": original.interrupt_reason,
            "resume_after": original.resume_after,
            "resume_count": state.resume_count,
        }),
    );
    // The loop is taken back whether or not its journal could be written: the state is the
    // authority, the journal its history.
    let _ = journal::write_loop(store, &target.key, &state, &loaded.expect(), &[event])?;
    Ok(TakeBack::Taken {
        key: target.key,
        resume_count: state.resume_count,
    })
}
