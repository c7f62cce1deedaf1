//! The single-run protocol's lease: the run lock as a lease with a holder, an epoch and a
//! heartbeat, and the writes only its holder may make. Each returns what happened, typed; the
//! command or hook renders it.

use baton_core::journal::JournalEvent;
use serde_json::json;

use crate::env::Ctx;
use crate::error::OpError;
use crate::journal;
use crate::runs::{self, lease_state_of};
use baton_core::decide::lease::{Here, LeaseState};
use baton_core::model::Lease;
use baton_core::model::{InterruptReason, RunState, RunStatus};
use baton_core::run_id::RunId;
use baton_core::time::format_ts;
use baton_core::{Decision, Reason};
use baton_store::{Expect, Guard, LockScope, StateStore, random_hex, sha256_hex};

mod run_import;
mod run_new;
mod run_prune;
mod run_record;
pub use run_prune::{Prune, PruneEntry, Pruned, prune};
mod run_resume;
pub use run_import::{
    Imported, build_import, completion_ledger, default_source, import, import_event,
    merge_completion_ledger,
};
pub use run_new::{NewRun, RunStart, Started, new_run};
pub use run_record::{Record, RecordWhat, Recorded, record};
pub use run_resume::{DEFAULT_PROJECT_FILE, ResumeRun, Resumed, resume};

/// Who holds the run lock: the long-lived agent process, never baton's own.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Holder {
    /// The agent process the lock is held for; `None`: `$CLAUDE_PID`, else an agent among
    /// baton's ancestors, else none (the heartbeat alone decides).
    pub pid: Option<u32>,
    /// The lease epoch this caller was handed: a fencing token, never a proof of who holds it.
    pub epoch: Option<u64>,
    /// The lease token of a holder with neither a session nor a process.
    pub token: Option<String>,
}

/// What ending a lease did.
#[derive(Debug)]
pub enum LeaseEnd {
    /// A live foreign holder, another holder's stale lease without `force`, or an older epoch.
    Refused(Decision),
    Ended {
        id: RunId,
        /// The run's status now.
        status: RunStatus,
        /// Whether the run was ended (`run finish`), not only its lease released.
        finished: bool,
        warning: Option<String>,
    },
}

/// What interrupting this session's lease did.
#[derive(Debug)]
pub enum LeaseInterrupt {
    /// This caller does not hold the lease: nothing changed.
    NotHeld { id: RunId },
    Interrupted {
        id: RunId,
        reason: InterruptReason,
        warning: Option<String>,
    },
}

/// What a lease heartbeat did: anything but the holder's own lease is a no-op.
#[derive(Debug)]
pub enum LeaseRefresh {
    Refreshed { id: RunId },
    Skipped { id: RunId, why: String },
}

/// Parses a run id argument; anything off the allowlist is invalid input that never reaches a
/// path.
pub fn parse_run_id(raw: &str) -> Result<RunId, OpError> {
    RunId::parse(raw).map_err(|e| {
        OpError::usage(e.to_string())
            .hint("list runs with `ls .agentic/runs/`, or start one with `baton run new`")
    })
}

/// A run opened for a write, under the store's lock.
pub struct OpenRun {
    pub id: RunId,
    pub _guard: Guard,
    pub run: RunState,
    /// What the write after the change expects: the revision read.
    pub read: Expect,
}

/// Opens a run for a write under the store's lock: the id checked, the file read, a newer schema
/// refused. A project without state is told so without creating any.
pub fn open_for_write(store: &dyn StateStore, raw_id: &str) -> Result<OpenRun, OpError> {
    let id = parse_run_id(raw_id)?;
    if !store.exists()? {
        return Err(missing_run(&id));
    }
    let guard = store.lock(LockScope::Runs)?;
    let loaded = store.read_run(&id)?.ok_or_else(|| missing_run(&id))?;
    loaded.writable()?;
    let read = loaded.expect();
    Ok(OpenRun {
        id,
        _guard: guard,
        run: loaded.state,
        read,
    })
}

/// A missing run: never a path built from an unchecked id.
pub fn missing_run(id: &RunId) -> OpError {
    OpError::usage(format!("no run {id} in this project (.agentic/runs/{id}.json)"))
        .hint(format!("import an originating one with `baton run import {id}`, or start a new run with `baton run new`"))
}

/// Refuses a write by anyone but the lease holder, and by a holder of an older epoch.
pub fn require_holder(
    run: &RunState,
    here: &Here,
    holder: &Holder,
    now: jiff::Timestamp,
) -> Result<(), baton_core::Decision> {
    let id = &run.run_id;
    if let (Some(held), Some(lease)) = (holder.epoch, &run.lease)
        && held != lease.epoch
    {
        return Err(Decision::new(
            baton_core::Verdict::Refused,
            Reason::new(
                baton_core::Rule::RunStaleEpoch,
                format!(
                    "run {id}'s lock is at epoch {}, this writer holds epoch {held}: it was taken over",
                    lease.epoch
                ),
            ),
            Some(format!(
                "stop writing to run {id}; check it with `baton run show {id}`"
            )),
        ));
    }
    match lease_state_of(run, here, now) {
        LeaseState::Mine => Ok(()),
        LeaseState::Live(why) => Err(Decision::new(
            baton_core::Verdict::Refused,
            Reason::new(
                baton_core::Rule::RunLockHeld,
                format!(
                    "Another /implement is active on run_id {id}; wait for it to complete or use a fresh run_id. ({why})"
                ),
            ),
            Some(format!(
                "wait for the holder, or start a fresh run with `baton run new`; see `baton run show {id}`"
            )),
        )),
        LeaseState::Free | LeaseState::Stale(_) => Err(Decision::new(
            baton_core::Verdict::Refused,
            Reason::new(
                baton_core::Rule::RunLockNotHeld,
                format!("this caller does not hold run {id}'s lock"),
            ),
            Some(format!("take it with `baton run resume {id}` first")),
        )),
    }
}

/// Drops the lease (and, with `status`, ends the run) unless a live foreign holder has it.
pub fn end_lease(
    ctx: &Ctx,
    store: &dyn StateStore,
    raw_id: &str,
    holder: &Holder,
    status: Option<RunStatus>,
    force: bool,
) -> Result<LeaseEnd, OpError> {
    let OpenRun {
        id,
        _guard,
        mut run,
        read,
    } = open_for_write(store, raw_id)?;
    let before = run.clone();
    let (here, _) = runs::here(ctx, holder.pid, holder.token.as_deref(), false)?;
    if let (Some(held), Some(lease)) = (holder.epoch, &run.lease)
        && held != lease.epoch
    {
        let d = Decision::new(
            baton_core::Verdict::Refused,
            Reason::new(
                baton_core::Rule::RunStaleEpoch,
                format!(
                    "run {id}'s lock is at epoch {}, this caller holds epoch {held}",
                    lease.epoch
                ),
            ),
            Some(format!("check the run with `baton run show {id}`")),
        );
        return Ok(LeaseEnd::Refused(d));
    }
    match lease_state_of(&run, &here, ctx.now) {
        LeaseState::Live(why) => {
            let d = Decision::new(
                baton_core::Verdict::Refused,
                Reason::new(
                    baton_core::Rule::RunLockHeld,
                    format!(
                        "Another /implement is active on run_id {id}; wait for it to complete or use a fresh run_id. ({why})"
                    ),
                ),
                Some(format!(
                    "only the holder releases a live lock (`baton --session <its session> run release {id}`, or `--token`), or end its holder process; `baton run resume` takes it over once the holder is gone (its process ended, or, on another machine, its heartbeat is past the TTL); `baton run show {id}` names the holder"
                )),
            );
            return Ok(LeaseEnd::Refused(d));
        }
        // Another holder's lock that went stale: its run may still be going, so ending it
        // for that holder is a deliberate act.
        LeaseState::Stale(why) if !force => {
            let d = Decision::new(
                baton_core::Verdict::Refused,
                Reason::new(
                    baton_core::Rule::RunLockNotHeld,
                    format!("this caller does not hold run {id}'s lock ({why})"),
                ),
                Some(format!(
                    "resume the run with `baton run resume {id}`, or repeat with `--force` to end another holder's stale lock"
                )),
            );
            return Ok(LeaseEnd::Refused(d));
        }
        LeaseState::Free | LeaseState::Mine | LeaseState::Stale(_) => {}
    }
    run.lease = None;
    if let Some(status) = &status {
        run.status = status.clone();
    }
    run.updated_at = Some(format_ts(ctx.now));
    // A release of a lock nobody holds, or a finish of a finished run, is no event.
    let events: Vec<serde_json::Value> = journal::run_changed(&before, &run)
        .then(|| {
            let released = before
                .lease
                .as_ref()
                .map(|l| json!({ "session": l.session, "epoch": l.epoch, "pid": l.pid }));
            match &status {
                Some(s) => journal::event(
                    ctx,
                    JournalEvent::Finish,
                    Some(run.lease_epoch),
                    json!({ "status": s, "released": released, "forced": force }),
                ),
                None => journal::event(
                    ctx,
                    JournalEvent::Release,
                    Some(run.lease_epoch),
                    json!({ "released": released, "forced": force }),
                ),
            }
        })
        .into_iter()
        .collect();
    // The run and its event: one transaction on a server.
    let journal_warning = journal::write_run(store, &run, &read, &events)?;
    Ok(LeaseEnd::Ended {
        id,
        status: run.status,
        finished: status.is_some(),
        warning: journal_warning,
    })
}

/// Records that the run's holder was interrupted (`reason` as a loop's interrupt reason), and
/// drops its lease so the next session finds the run free with the reason beside it. Only the
/// holder's own lease: anything else is a no-op, as a hook needs.
pub fn interrupt_lease(
    ctx: &Ctx,
    store: &dyn StateStore,
    raw_id: &str,
    holder: &Holder,
    reason: InterruptReason,
    evidence: &str,
) -> Result<LeaseInterrupt, OpError> {
    let OpenRun {
        id,
        _guard,
        mut run,
        read,
    } = open_for_write(store, raw_id)?;
    let (here, _) = runs::here(ctx, holder.pid, holder.token.as_deref(), false)?;
    if lease_state_of(&run, &here, ctx.now) != LeaseState::Mine {
        return Ok(LeaseInterrupt::NotHeld { id });
    }
    let released = run
        .lease
        .take()
        .map(|l| json!({ "session": l.session, "epoch": l.epoch, "pid": l.pid }));
    run.extra
        .insert("interrupt_reason".into(), reason.as_str().into());
    run.extra
        .insert("interrupted_at".into(), format_ts(ctx.now).into());
    run.updated_at = Some(format_ts(ctx.now));
    let event = journal::event(
        ctx,
        JournalEvent::Interrupt,
        Some(run.lease_epoch),
        json!({ "reason": reason, "evidence": evidence, "released": released }),
    );
    let warning = journal::write_run(store, &run, &read, &[event])?;
    Ok(LeaseInterrupt::Interrupted {
        id,
        reason,
        warning,
    })
}

/// Refreshes the lease of a run this caller holds; anything else is a no-op.
pub fn heartbeat(
    ctx: &Ctx,
    store: &dyn StateStore,
    run_id: &str,
    holder: &Holder,
) -> Result<LeaseRefresh, OpError> {
    let id = parse_run_id(run_id)?;
    let noop = |why: String| {
        Ok(LeaseRefresh::Skipped {
            id: id.clone(),
            why,
        })
    };
    if !store.exists()? {
        return noop("no state directory".into());
    }
    let _guard = store.lock(LockScope::Runs)?;
    let Some(mut loaded) = store.read_run(&id)? else {
        return noop(format!("no run {id}"));
    };
    let (here, _) = runs::here(ctx, holder.pid, holder.token.as_deref(), false)?;
    if let Err(d) = require_holder(&loaded.state, &here, holder, ctx.now) {
        return noop(
            d.reasons
                .first()
                .map(|r| r.message.clone())
                .unwrap_or_default(),
        );
    }
    loaded.writable()?;
    if let Some(lease) = loaded.state.lease.as_mut() {
        lease.heartbeat_at = format_ts(ctx.now);
    }
    store.write_run(&loaded.state, &loaded.expect())?;
    Ok(LeaseRefresh::Refreshed { id })
}

/// Takes (or refreshes) the lease for this caller: a new holder gets epoch + 1. A new holder
/// with neither a session nor a process to be known by gets a random token, returned here to be
/// printed once; the lease keeps only its hash.
pub fn take_lease(
    run: &mut RunState,
    here: &Here,
    source: &str,
    state: &LeaseState,
    now: jiff::Timestamp,
) -> Option<String> {
    let now_s = format_ts(now);
    // A holder takes the run on: an interrupt recorded before says nothing about it any more.
    run.extra.remove("interrupt_reason");
    run.extra.remove("interrupted_at");
    if let (LeaseState::Mine, Some(lease)) = (state, run.lease.as_mut()) {
        // The same holder, perhaps in a new agent process: the lease follows it, or a second
        // agent could later find the first one's dead pid and take the lock beside it.
        lease.heartbeat_at = now_s;
        // A lease that names its session keeps it: only a lease with none learns one.
        if lease.session.is_none() {
            lease.session = here.session.clone();
        }
        if here.pid.is_some() {
            lease.pid = here.pid.map(|p| p.0);
            lease.pid_start = here.pid.map(|p| p.1);
            lease.pid_source = source.to_string();
            lease.host = here.host.clone();
            lease.boot_id = here.boot_id.clone();
        }
        return None;
    }
    run.lease_epoch += 1;
    let token = (here.session.is_none() && here.pid.is_none()).then(|| random_hex(16));
    run.lease = Some(Lease {
        session: here.session.clone(),
        host: here.host.clone(),
        boot_id: here.boot_id.clone(),
        pid: here.pid.map(|p| p.0),
        pid_start: here.pid.map(|p| p.1),
        pid_source: source.to_string(),
        acquired_at: now_s.clone(),
        heartbeat_at: now_s,
        epoch: run.lease_epoch,
        token_sha256: token.as_deref().map(|t| sha256_hex(t.as_bytes())),
    });
    token
}
