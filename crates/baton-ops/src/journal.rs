//! Writing the journal from the commands: one event per write that changed a loop, the batch
//! or a run, appended under the same lock as that write, right after it; a command that writes
//! and journals calls `write_loop`, `write_batch` or `write_run` here, which on a server makes
//! the write and its events one transaction.
//!
//! The state file is the truth and the journal its history: an append that fails after the
//! state was written does not undo the command (it succeeds, with a warning naming the
//! journal), and a write that was refused, failed or changed nothing appends nothing.
//! Heartbeats are never journalled: they say a session is alive, not that anything happened.

use serde_json::{Map, Value, json};

use crate::env::Ctx;
use baton_core::journal::JournalEvent;
use baton_core::model::{BatchState, LoopState, RunState};
use baton_core::time::format_ts;
use baton_store::{Expect, JournalTarget, LockScope, StateStore, StoreError};

/// An event: `ts` (the command's clock, so `BATON_NOW` replays), its name, the acting session,
/// the target's owner epoch after the write when it has one, and the event's own fields.
pub fn event(ctx: &Ctx, name: JournalEvent, epoch: Option<u64>, details: Value) -> Value {
    let mut out = Map::new();
    out.insert("ts".into(), format_ts(ctx.now).into());
    out.insert("event".into(), name.as_str().into());
    out.insert("session".into(), json!(ctx.session));
    if let Some(epoch) = epoch {
        out.insert("epoch".into(), epoch.into());
    }
    if let Value::Object(details) = details {
        out.extend(details);
    }
    Value::Object(out)
}

/// Appends `events` in order; on failure, the warning to print (the state write stands).
pub fn append(store: &dyn StateStore, target: JournalTarget, events: &[Value]) -> Option<String> {
    let appended = events
        .iter()
        .try_for_each(|event| store.append_journal(target, event));
    warning(store, target, appended)
}

/// The warning to print when the appends after a write failed (`None` when they did not):
/// the state write stands. A store that writes a record and its events in one transaction
/// (`StateStore::write_raw_journaled`) never has one to give.
pub fn warning(
    store: &dyn StateStore,
    target: JournalTarget,
    appended: Result<(), StoreError>,
) -> Option<String> {
    let e = appended.err()?;
    let path = store
        .journal_shown(target)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| store.layout().journal_dir().display().to_string());
    Some(format!(
        "the state was written, but its journal {path} was not appended ({e}); `baton log` will miss this event: check the file and its directory"
    ))
}

/// Writes a loop and appends its events as one change (`StateStore::write_loop_journaled`);
/// the warning to print when only the appends failed.
pub fn write_loop(
    store: &dyn StateStore,
    key: &str,
    state: &LoopState,
    expect: &Expect,
    events: &[Value],
) -> Result<Option<String>, StoreError> {
    let (_, appended) = store.write_loop_journaled(key, state, expect, events)?;
    // The owner's pre-compaction hook asks the store only after this (a hint: best effort).
    if let Some(owner) = state.owner() {
        let _ = baton_store::sessions::mark_write(store.layout(), owner);
    }
    Ok(warning(store, JournalTarget::Loop(key), appended))
}

/// `write_loop` for the batch.
pub fn write_batch(
    store: &dyn StateStore,
    state: &BatchState,
    expect: &Expect,
    events: &[Value],
) -> Result<Option<String>, StoreError> {
    let (_, appended) = store.write_batch_journaled(state, expect, events)?;
    Ok(warning(store, JournalTarget::Batch, appended))
}

/// `write_loop` for a run.
pub fn write_run(
    store: &dyn StateStore,
    state: &RunState,
    expect: &Expect,
    events: &[Value],
) -> Result<Option<String>, StoreError> {
    let (_, appended) = store.write_run_journaled(state, expect, events)?;
    let id = baton_core::run_id::RunId::parse(&state.run_id).ok();
    Ok(match &id {
        Some(id) => warning(store, JournalTarget::Run(id), appended),
        None => appended
            .err()
            .map(|e| format!("the state was written, but its journal was not appended ({e})")),
    })
}

/// Appends one event (`event`'s name and `details`, at the context's clock) to the journal of
/// each of `loops`, each under that loop's lock, as the supervisor records its attempts. A
/// loop whose lock cannot be had is skipped; an append that fails is a warning, returned.
pub fn record_attempt<'a>(
    ctx: &Ctx,
    store: &dyn StateStore,
    loops: impl IntoIterator<Item = &'a String>,
    name: JournalEvent,
    details: Value,
) -> Vec<String> {
    let event = event(ctx, name, None, details);
    let mut warnings = Vec::new();
    for key in loops {
        let Ok(_guard) = store.lock(LockScope::Loop(key)) else {
            continue;
        };
        if let Some(w) = append(
            store,
            JournalTarget::Loop(key),
            std::slice::from_ref(&event),
        ) {
            warnings.push(w);
        }
    }
    warnings
}

/// Whether a loop write changed more than its liveness stamp: a repeat that only refreshes
/// `last_updated` is a heartbeat, not history.
pub fn loop_changed(before: &LoopState, after: &LoopState) -> bool {
    let (mut a, mut b) = (before.clone(), after.clone());
    let stamp = jiff::Timestamp::UNIX_EPOCH;
    a.touch(stamp);
    b.touch(stamp);
    a != b
}

/// Whether a batch write changed more than its liveness stamp.
pub fn batch_changed(before: &BatchState, after: &BatchState) -> bool {
    let (mut a, mut b) = (before.clone(), after.clone());
    a.touch("");
    b.touch("");
    a != b
}

/// Whether a run write changed more than its liveness stamps (`updated_at`, the lease's
/// heartbeat).
pub fn run_changed(before: &RunState, after: &RunState) -> bool {
    let strip = |run: &RunState| {
        let mut run = run.clone();
        run.updated_at = None;
        if let Some(lease) = run.lease.as_mut() {
            lease.heartbeat_at.clear();
        }
        run
    };
    strip(before) != strip(after)
}

/// Where a loop stands, for the `from`/`to` of a `set`.
pub fn loop_position(state: &LoopState) -> Value {
    json!({
        "phase": state.last_phase,
        "action": state.last_phase_action,
        "iteration": state.loop_state.iteration,
    })
}

/// The `takeover` event: ownership moved from one session and epoch to another.
pub fn takeover(
    ctx: &Ctx,
    from: (Option<&str>, u64),
    to: (Option<&str>, u64),
    mode: &str,
) -> Value {
    event(
        ctx,
        JournalEvent::Takeover,
        Some(to.1),
        json!({
            "from_session": from.0,
            "from_epoch": from.1,
            "to_session": to.0,
            "to_epoch": to.1,
            "mode": mode,
        }),
    )
}

/// Gives an interrupted loop back the `interrupt` event its writer was killed before
/// appending: the state was replaced, and the process died before the journal's append (the
/// two are separate files). The event is the one that write would have appended (its time is
/// the state's `interrupted_at`, its session the owner), marked `restored`. Nothing is done
/// when the store writes a state and its events in one step, when the loop is not interrupted,
/// when its journal is empty (another tool wrote the loop), or when its journal holds an
/// `interrupt` at that time. `seen` is the loop as the caller read it, without the lock: a loop
/// whose history is whole (nearly all) costs no lock and no second read, and a reader never
/// waits behind a writer for nothing; a torn one is read and checked again under its lock
/// before the append. True when an event was appended.
pub fn restore_interrupt_event(
    store: &dyn StateStore,
    key: &str,
    seen: &LoopState,
) -> Result<bool, StoreError> {
    if store.journal_in_step() || !lacks_interrupt_event(store, key, seen)? {
        return Ok(false);
    }
    let _guard = store.lock(LockScope::Loop(key))?;
    let Some(loaded) = store.read_loop(key)? else {
        return Ok(false);
    };
    let state = loaded.state;
    if !lacks_interrupt_event(store, key, &state)? {
        return Ok(false);
    }
    let event = json!({
        "ts": state.interrupted_at,
        "event": JournalEvent::Interrupt.as_str(),
        "session": state.session_id,
        "epoch": state.owner_epoch,
        "reason": state.interrupt_reason,
        "resume_after": state.resume_after,
        "restored": true,
    });
    store.append_journal(JournalTarget::Loop(key), &event)?;
    Ok(true)
}

/// The keys of the loops that have a journal, listed once, for a reader about to look at many
/// loops' history (`restore_interrupt_event` over every loop a survey reads): a loop without
/// one has no history to mend, and is then not looked for one by one. `None` when the store
/// writes a state and its events in one step, and nothing is ever to be mended.
pub fn loops_with_history(
    store: &dyn StateStore,
) -> Result<Option<std::collections::HashSet<String>>, StoreError> {
    if store.journal_in_step() {
        return Ok(None);
    }
    Ok(Some(store.list_journals()?.loops.into_iter().collect()))
}

/// Whether `state` is interrupted and its journal, which holds other events, holds no
/// `interrupt` at its `interrupted_at`. A loop with no history at all was not written through
/// baton (another tool interrupted it): its history is unknown, not torn.
fn lacks_interrupt_event(
    store: &dyn StateStore,
    key: &str,
    state: &LoopState,
) -> Result<bool, StoreError> {
    let Some(at) = state
        .interrupted_at
        .as_deref()
        .filter(|_| state.status == baton_core::model::LoopStatus::Interrupted)
    else {
        return Ok(false);
    };
    let journal = store.read_journal(JournalTarget::Loop(key))?;
    Ok(!journal.events.is_empty()
        && !journal.events.iter().any(|e| {
            e["event"] == JournalEvent::Interrupt.as_str() && e["ts"].as_str() == Some(at)
        }))
}
