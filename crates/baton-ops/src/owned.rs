//! What one session owns (its active loops, the run leases it holds and its active batch) and
//! the two things done to all of it at once: a refresh, and an interrupt with a reason. The
//! hooks do both on a client's events; `baton supervise` interrupts what an agent left when it
//! died unheard.

use jiff::Timestamp;

use crate::env::Ctx;
use crate::error::OpError;
use crate::single_run::{Holder, LeaseInterrupt, interrupt_lease};
use crate::ticket_loop::{Heartbeat, Ownership, Target, Transition, interrupt};
use baton_core::hook::HEARTBEAT_COALESCE_SECS;
use baton_core::model::Pauses;
use baton_core::model::{BatchState, InterruptReason, LoopState, LoopStatus, RunState};
use baton_core::time::parse_ts;
use baton_store::{RecordKey, StateStore};

#[derive(Default)]
pub struct Owned {
    pub loops: Vec<(String, LoopState)>,
    pub runs: Vec<RunState>,
    /// The batch, when it is active and this session's.
    pub batch: Option<BatchState>,
    /// The first state file that mentions the session but could not be read.
    pub unreadable: Option<String>,
}

impl Owned {
    /// The first error of a pass over the owned files, else the unreadable file skipped.
    pub fn outcome(&self, first_error: Option<OpError>) -> Result<(), OpError> {
        match (first_error, &self.unreadable) {
            (Some(e), _) => Err(e),
            (None, Some(what)) => Err(OpError::broken(format!("skipped: {what}"))),
            (None, None) => Ok(()),
        }
    }
}

/// The loops, runs and batch `session` owns, as they are on disk now (read without a lock: each
/// write re-reads its file under the lock and checks again).
pub fn owned(store: &dyn StateStore, session: &str) -> Result<Owned, OpError> {
    let mut owned = Owned::default();
    if !store.exists()? {
        return Ok(owned);
    }
    // Only files that mention the session are parsed. An id JSON would escape is not looked
    // for in the bytes: every file is parsed then.
    let plain = session
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'));
    let needle = plain.then_some(session.as_bytes());
    for scanned in store.scan_loops(needle)? {
        match scanned.loaded {
            Ok(loaded) if loaded.state.owner() == Some(session) => {
                owned.loops.push((scanned.key, loaded.state));
            }
            Ok(_) => {}
            Err(e) => {
                owned.unreadable.get_or_insert(e.to_string());
            }
        }
    }
    for (_, listed) in store.list_runs(needle)? {
        match listed {
            Ok(loaded)
                if loaded
                    .state
                    .lease
                    .as_ref()
                    .is_some_and(|l| l.session.as_deref() == Some(session)) =>
            {
                owned.runs.push(loaded.state);
            }
            Ok(_) => {}
            Err(e) => {
                owned.unreadable.get_or_insert(e.to_string());
            }
        }
    }
    if store.contains(&RecordKey::Batch)? {
        match store.read_batch() {
            Ok(Some(loaded))
                if loaded.state.is_active() && loaded.state.owner() == Some(session) =>
            {
                owned.batch = Some(loaded.state);
            }
            Ok(_) => {}
            // Like a loop, an unreadable batch counts only when it mentions the session.
            Err(e) => {
                let mentions = store
                    .read_raw(&RecordKey::Batch)
                    .ok()
                    .flatten()
                    .is_none_or(|raw| {
                        needle.is_none_or(|n| raw.bytes.windows(n.len()).any(|w| w == n))
                    });
                if mentions {
                    owned.unreadable.get_or_insert(e.to_string());
                }
            }
        }
    }
    Ok(owned)
}

/// What a refresh of a session's work did: the window the next one waits for, when a lease
/// lives shorter than `HEARTBEAT_COALESCE_SECS` allows (`None`: that window), and the first
/// error met (the rest is refreshed all the same).
#[derive(Debug, Default)]
pub struct Refreshed {
    pub window: Option<i64>,
    pub error: Option<OpError>,
}

/// Keeps the work of `ctx`'s session live: each active loop, the batch and each run lease it
/// owns whose last write is older than the coalescing window. Work the session paused (`baton
/// pause` from a tool call) stays as the pause left it: a refresh would be a write after the
/// pause, and the next session would no longer see it paused.
pub fn refresh(
    ctx: &Ctx,
    store: &dyn StateStore,
    owned: &Owned,
    pauses: Option<&Pauses>,
) -> Refreshed {
    let now = ctx.now;
    let paused =
        |last: Option<Timestamp>| pauses.is_some_and(|p| p.covering(ctx.session(), last).is_some());
    let mut first_error = None;
    // A loop of one of the batch's tickets refreshes the batch with it.
    let mut batch_refreshed = false;
    for (key, state) in &owned.loops {
        let live = fresh(state.liveness(now), now, HEARTBEAT_COALESCE_SECS);
        if state.status != LoopStatus::Active || live || paused(state.liveness(now)) {
            continue;
        }
        match crate::ticket_loop::heartbeat(
            ctx,
            store,
            Target::of_record(key, state),
            &Ownership::default(),
        ) {
            Ok(Heartbeat::Refreshed { .. }) => {
                batch_refreshed |= owned.batch.as_ref().is_some_and(|b| {
                    b.tickets.iter().any(|t| {
                        t.loop_key.as_deref() == Some(key.as_str())
                            || Some(&t.ticket_id) == state.ticket_id.as_ref()
                    })
                });
            }
            Ok(Heartbeat::Skipped { .. }) => {}
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    // The batch the session owns stays live between its tickets too, while no loop of it
    // exists yet to refresh it.
    if let Some(batch) = &owned.batch {
        let last = batch.liveness(now);
        if !batch_refreshed
            && !fresh(last, now, HEARTBEAT_COALESCE_SECS)
            && !paused(last)
            && let Err(e) = crate::batch::heartbeat(ctx, store, &Ownership::default())
        {
            first_error.get_or_insert(e);
        }
    }
    // A lease may live shorter than a loop's 10 minutes (`run new --lease-ttl`): each is
    // refreshed once a quarter of its TTL has passed, and the session's window shrinks to the
    // shortest of them.
    let mut window = HEARTBEAT_COALESCE_SECS;
    for run in &owned.runs {
        let ttl = i64::try_from(run.policy.lease_ttl_secs).unwrap_or(i64::MAX);
        let quarter = (ttl / 4).clamp(1, HEARTBEAT_COALESCE_SECS);
        window = window.min(quarter);
        let beat = run
            .lease
            .as_ref()
            .and_then(|l| parse_ts(Some(&l.heartbeat_at)));
        if fresh(beat, now, quarter) || paused(beat) {
            continue;
        }
        if let Err(e) = crate::single_run::heartbeat(ctx, store, &run.run_id, &Holder::default()) {
            first_error.get_or_insert(e);
        }
    }
    Refreshed {
        window: (window < HEARTBEAT_COALESCE_SECS).then_some(window),
        error: first_error,
    }
}

/// Whether `at` is under `window` seconds old at `now` (a time ahead of `now` is not).
pub fn fresh(at: Option<Timestamp>, now: Timestamp, window: i64) -> bool {
    at.is_some_and(|t| {
        let age = now.duration_since(t);
        age >= jiff::SignedDuration::ZERO && age < jiff::SignedDuration::from_secs(window)
    })
}

/// What interrupting a session's work did: the tickets and runs interrupted, the loops a gate
/// refused (another session took them over since they were read), and the first error met on
/// the way (the others are still tried).
#[derive(Debug, Default)]
pub struct Interrupted {
    pub tickets: Vec<String>,
    pub runs: Vec<String>,
    pub refused: Vec<(String, baton_core::Decision)>,
    /// The rate limit was recorded on the active feature (the session's work was the feature).
    pub feature: bool,
}

/// Whether the session whose work is `owned` works on the active feature rather than on work
/// of its own: seed 004 sessions own nothing (no ticket loop, no run lease, no batch), and the
/// feature pointer records no owner, so a session with no active loop, no lease and no active
/// batch is the one on the feature (the survey says the same: live work of a known session
/// means someone is on it, and only that session).
pub fn works_on_the_feature(owned: &Owned) -> bool {
    owned.runs.is_empty()
        && owned.batch.is_none()
        && owned
            .loops
            .iter()
            .all(|(_, s)| s.status != LoopStatus::Active)
}

/// Interrupts every active loop in `owned` and every run lease it holds, for `reason` (a rate
/// limit with its reset time when known), as the owner session `ctx.session`. A rate limit of a
/// session whose work is the active feature (`works_on_the_feature`) is recorded on the feature
/// (`continuation::record_feature_interrupt`), so the next session classes it `rate_limit` and
/// `baton wait` waits for its reset. Returns what was interrupted, and the first error met on
/// the way (the others are still tried).
pub fn interrupt_owned(
    ctx: &Ctx,
    store: &dyn StateStore,
    owned: &Owned,
    reason: InterruptReason,
    evidence: &str,
    resume_after: Option<Timestamp>,
) -> (Interrupted, Result<(), OpError>) {
    let mut first_error = None;
    let mut done = Interrupted::default();
    // An interrupt applied again after its writer was killed between a loop's state and its
    // journal: the state stands, and the event comes back.
    if owned
        .loops
        .iter()
        .any(|(_, s)| s.status == LoopStatus::Interrupted)
    {
        for (key, state) in &owned.loops {
            if let Err(e) = crate::journal::restore_interrupt_event(store, key, state) {
                first_error.get_or_insert(e.into());
            }
        }
    }
    for (key, state) in &owned.loops {
        if state.status != LoopStatus::Active {
            continue;
        }
        let target = Target::of_record(key, state);
        // A loop with no ticket is named by its key, which finds it from any session (the
        // empty ticket would name the taking-back session's own).
        let shown = if target.raw.is_empty() {
            target.key.clone()
        } else {
            target.raw.clone()
        };
        match interrupt(
            ctx,
            store,
            target,
            reason,
            resume_after,
            &Ownership::default(),
        ) {
            Ok(Transition::Written(_)) => done.tickets.push(shown),
            Ok(Transition::Refused { decision, .. }) => done.refused.push((shown, decision)),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    for run in &owned.runs {
        match interrupt_lease(
            ctx,
            store,
            &run.run_id,
            &Holder::default(),
            reason,
            evidence,
        ) {
            Ok(LeaseInterrupt::Interrupted { id, .. }) => done.runs.push(id.to_string()),
            Ok(LeaseInterrupt::NotHeld { .. }) => {}
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    if reason == InterruptReason::RateLimit
        && ctx.session().is_some()
        && works_on_the_feature(owned)
    {
        let recorded =
            crate::continuation::record_feature_interrupt(ctx, store, reason, resume_after);
        match recorded {
            Ok(written) => done.feature = written,
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    (done, owned.outcome(first_error))
}

/// What a checkpoint of a session's loops did.
#[derive(Debug, PartialEq, Eq)]
pub enum Checkpointed {
    /// The positions are those of the session's last checkpoint: nothing was written.
    Unchanged,
    /// One `checkpoint` event went into the journal of each active loop; `fingerprint` is what
    /// the session records as its last checkpoint.
    Recorded { fingerprint: String, loops: usize },
}

/// One `checkpoint` event (its position and the client's `hook` event) in the journal of each
/// active loop the session owns, under the loop's lock, unless the positions are those of
/// `last` (the fingerprint of the session's last checkpoint). A journal that cannot be
/// written fails the checkpoint: the caller records the fingerprint only once it is
/// `Recorded`.
pub fn checkpoint(
    ctx: &Ctx,
    store: &dyn StateStore,
    owned: &Owned,
    hook: &str,
    last: Option<&str>,
) -> Result<Checkpointed, OpError> {
    let positions: Vec<(&str, String)> = owned
        .loops
        .iter()
        .filter(|(_, s)| s.status == LoopStatus::Active)
        .map(|(key, s)| (key.as_str(), s.position()))
        .collect();
    let fingerprint: String = positions.iter().map(|(k, p)| format!("{k}={p};")).collect();
    if last == Some(fingerprint.as_str()) {
        return Ok(Checkpointed::Unchanged);
    }
    for (key, position) in &positions {
        let event = crate::journal::event(
            ctx,
            baton_core::journal::JournalEvent::Checkpoint,
            None,
            serde_json::json!({ "position": position, "hook": hook }),
        );
        let _guard = store.lock(baton_store::LockScope::Loop(key))?;
        if let Some(w) =
            crate::journal::append(store, baton_store::JournalTarget::Loop(key), &[event])
        {
            return Err(OpError::broken(w));
        }
    }
    Ok(Checkpointed::Recorded {
        fingerprint,
        loops: positions.len(),
    })
}
