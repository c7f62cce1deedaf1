//! The ticket loop's operations: every transition of a loop (`loop set`, `artifact`,
//! `interrupt`, `finish`), its heartbeat, the resume check (`gather`), `resume accept`
//! (`resume_accept.rs`), `resume fresh`, and the checks a command makes before it moves a loop
//! out of the way. Each returns what happened, typed; the command or hook renders it.

use baton_core::journal::JournalEvent;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use jiff::Timestamp;
use serde_json::{Value, json};

use crate::env::Ctx;
use crate::error::OpError;
use crate::journal;
use crate::loops::{Adoption, adopt_legacy, legacy_held, loop_tree, owner_record, work_committed};
use baton_core::decide::batch::single_ticket_warning;
use baton_core::decide::loop_resume::{
    self, OtherLoop, ResumeDecision, ResumeFacts, decide_loop_resume, is_resumable,
};
use baton_core::decide::loop_write::{InitPlan, decide_init};
use baton_core::decide::loop_write::{REFUSED, check_key_collision, check_reset};
use baton_core::decide::ownership::{GateOutcome, Writer, gate};
use baton_core::key::{KeySource, loop_file_name, loop_key};
use baton_core::model::{InterruptReason, LoopState, LoopStatus, Phase};
use baton_core::text::{esc, esc_or, shell_quote};
use baton_core::time::format_ts;
use baton_core::{Decision, Reason};
use baton_store::git::{self, TreeStatus};
use baton_store::{
    Expect, Guard, JournalTarget, LockScope, RecordKey, StateStore, Versioned, random_hex,
};

mod resume_accept;
mod take_back;
pub use resume_accept::{Accept, Acceptance, Accepted, ArtifactKind, Governing, SetAside, accept};
pub use take_back::{TakeBack, may_take_back, take_back};

/// The ownership options of every loop write.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ownership {
    /// Take over legacy state that records no owner session.
    pub force: bool,
    /// The owner epoch this caller was handed; a write holding an older one is refused.
    pub epoch: Option<u64>,
}

/// What a transition did.
#[derive(Debug)]
pub enum Transition {
    /// A gate or a check refused it: nothing changed. `notes` are what legacy adoption said
    /// first.
    Refused {
        decision: Decision,
        notes: Vec<String>,
    },
    Written(Box<Written>),
}

impl Transition {
    fn refused(decision: Decision, notes: &[String]) -> Transition {
        Transition::Refused {
            decision,
            notes: notes.to_vec(),
        }
    }

    /// Whether the loop was changed (a refusal or a repeat changes nothing).
    pub fn changed(&self) -> bool {
        matches!(self, Transition::Written(w) if w.changed)
    }
}

/// A transition that passed every gate: the loop as it is now.
#[derive(Debug)]
pub struct Written {
    /// `ok`, the rules that fired (a takeover, a repaired key field), the next step.
    pub decision: Decision,
    pub target: Target,
    /// How messages name the loop's record.
    pub path: PathBuf,
    pub state: LoopState,
    /// The breadcrumb, then what the transition did.
    pub message: String,
    /// Whether anything was written: a repeat writes nothing.
    pub changed: bool,
    /// What legacy adoption said first.
    pub notes: Vec<String>,
    /// What went wrong after the write (its journal, the batch's liveness) or what protects
    /// nothing (no session id): the write stands.
    pub warnings: Vec<String>,
}

/// What a heartbeat did: a heartbeat of anything but this session's running loop is a no-op.
#[derive(Debug)]
pub enum Heartbeat {
    Refreshed {
        target: Target,
        last_updated: Option<String>,
        warning: Option<String>,
    },
    Skipped {
        key: String,
        why: String,
    },
}

/// A ticket as typed, and the key it maps to.
#[derive(Debug, Clone)]
pub struct Target {
    /// The raw ticket id (lossy UTF-8 for display and for the stored `ticket_id`).
    pub raw: String,
    pub key: String,
    pub source: KeySource,
}

impl Target {
    pub fn derive(ctx: &Ctx, ticket: &OsStr) -> Target {
        let (key, source) = loop_key(ticket.as_bytes(), ctx.session(), || random_hex(4));
        Target {
            raw: ticket.to_string_lossy().into_owned(),
            key,
            source,
        }
    }

    /// The loop recorded at `key`, addressed as its state names it: by its ticket, or (a loop
    /// started with none) by its key, which its owner's session gave it.
    pub fn of_record(key: &str, state: &LoopState) -> Target {
        let raw = state.ticket_id.clone().unwrap_or_default();
        let source = if raw.is_empty() {
            KeySource::Session
        } else {
            KeySource::Ticket
        };
        Target {
            raw,
            key: key.to_string(),
            source,
        }
    }

    /// The ticket for text output, control characters escaped; for a loop with no ticket, its
    /// key.
    pub fn shown(&self) -> String {
        match self.source {
            KeySource::Ticket => esc(&self.raw).into_owned(),
            _ => self.key.clone(),
        }
    }

    /// The ticket quoted for a suggested command; for a loop with no ticket, its key, which
    /// names it from any session (the empty ticket would name the running session's own).
    pub fn arg(&self) -> String {
        match self.source {
            KeySource::Ticket => shell_quote(&esc(&self.raw)),
            _ => shell_quote(&self.key),
        }
    }

    pub fn file_name(&self) -> String {
        loop_file_name(&self.key)
    }

    /// The command that shows this ticket's loop.
    pub fn show(&self) -> String {
        format!("baton loop show {}", self.arg())
    }

    /// Refuses a ticket that gives no stable key: with neither a ticket nor a session id, the
    /// key would be random and no later command could find the loop again.
    pub fn require_stable(&self) -> Result<(), OpError> {
        if self.source != KeySource::NoSession {
            return Ok(());
        }
        Err(OpError::usage(
            "neither a ticket id nor a session id gives this loop a key: it would get a random one that no later command could address",
        )
        .hint("pass the ticket id (`baton loop init PROJ-123`), or give the session with `--session <ID>` or `BATON_SESSION`"))
    }
}

pub fn missing_loop(target: &Target) -> OpError {
    OpError::usage(format!(
        "no loop-state for {} (file {})",
        target.shown(),
        target.file_name()
    ))
    .hint(format!(
        "start it with `baton loop init {}`, or check the ticket id with `baton loop key {}`",
        target.arg(),
        target.arg()
    ))
}

/// Refuses to move a loop out of the way (archive or replace it) when the ownership gate would
/// refuse a write: a live session may hold a loop that is not active, and a foreign session
/// must not clobber it.
pub fn may_replace(
    ctx: &Ctx,
    state: &LoopState,
    flags: &Ownership,
    target: &Target,
) -> Result<(), Decision> {
    match gate(
        owner_record(state, ctx.now),
        writer(ctx, flags),
        ctx.now,
        &target.file_name(),
        &target.show(),
    ) {
        GateOutcome::Refused(d) => Err(d),
        GateOutcome::Owner | GateOutcome::Takeover { .. } => Ok(()),
    }
}

/// The writer the ownership gate sees: this session, with the caller's options.
pub fn writer<'a>(ctx: &'a Ctx, flags: &Ownership) -> Writer<'a> {
    Writer {
        session: ctx.session(),
        epoch: flags.epoch,
        force: flags.force,
    }
}

/// The warning of every write made with no session id; `what` is `loop` or `batch`.
pub fn no_session_warning(ctx: &Ctx, what: &str) -> Option<String> {
    ctx.session().is_none().then(|| {
        format!("no session id (`--session`, `BATON_SESSION` or `CLAUDE_CODE_SESSION_ID`): nothing protects this {what} from another session without one")
    })
}

/// A tool call with no session id of a client that names none to its tool calls (OpenCode,
/// whose tool calls get theirs from baton's plugin), refused before anything is written: work
/// started there would be recorded under no session at all.
pub fn refuse_sessionless_tool_call(ctx: &Ctx) -> Result<(), OpError> {
    if ctx.session().is_some() {
        return Ok(());
    }
    let client = baton_core::client::Client::ALL.into_iter().find(|c| {
        c.def().sessionless_tool_call_fix().is_some()
            && ctx
                .settings
                .client_pids
                .iter()
                .any(|(v, _)| Some(*v) == c.def().pid_variable())
    });
    let Some(client) = client else {
        return Ok(());
    };
    Err(OpError::usage(format!(
        "this {} tool call has no session id, so the work it starts would be no session's: {} names none to its tool calls",
        client.def().title(),
        client.def().title()
    ))
    .hint(client.def().sessionless_tool_call_fix().unwrap_or_default()))
}

/// The batch is live while its owner works its tickets: a write or heartbeat by the batch's
/// owner to one of its tickets' loops refreshes the batch's `updated_at` too, so that another
/// session's `batch start` never takes a batch whose owner is busy on a ticket. Called after the
/// loop's write, under its lock (the loop's lock is always taken before the batch's). The loop's
/// write has happened by then, so a failure here is a warning, never the command's error.
pub fn keep_batch_live(store: &dyn StateStore, ctx: &Ctx, target: &Target) -> Option<String> {
    refresh_batch(store, ctx, target)
        .err()
        .map(|e| format!("the batch's liveness was not refreshed: {}", e.message))
}

fn refresh_batch(store: &dyn StateStore, ctx: &Ctx, target: &Target) -> Result<(), OpError> {
    let Some(me) = ctx.session() else {
        return Ok(());
    };
    if !store.contains(&RecordKey::Batch)? {
        return Ok(());
    }
    let _batch = store.lock(LockScope::Batch)?;
    let Some(loaded) = store.read_batch()? else {
        return Ok(());
    };
    let mut batch = loaded.state.clone();
    let ours = batch.is_active()
        && batch.owner() == Some(me)
        && batch.tickets.iter().any(|t| {
            t.ticket_id == target.raw || t.loop_key.as_deref() == Some(target.key.as_str())
        });
    if ours && loaded.access == baton_store::read::Access::ReadWrite {
        batch.touch(&baton_core::time::format_ts(ctx.now));
        store.write_batch(&batch, &loaded.expect())?;
    }
    Ok(())
}

/// The result of applying a transition to a loop.
pub struct Applied {
    pub changed: bool,
    pub message: String,
    pub next: Option<String>,
    pub warnings: Vec<Reason>,
}

/// The shared write path of `loop set`, `artifact`, `interrupt` and `finish`: adopt legacy
/// state, then under the loop's lock read the keyed file, refuse a key collision, pass the
/// ownership gate, apply the change and write it atomically. A refusal changes nothing.
///
/// A write that changed more than the liveness stamp appends `event` to the loop's journal
/// (after a `takeover` event when the gate handed the loop to this session), under the same
/// lock; its details are read off the state before and after.
pub fn transition(
    ctx: &Ctx,
    store: &dyn StateStore,
    target: Target,
    flags: &Ownership,
    event: JournalEvent,
    apply: impl FnOnce(&mut LoopState, &Target) -> Result<Applied, Decision>,
) -> Result<Transition, OpError> {
    if !store.exists()? {
        return Err(missing_loop(&target));
    }
    let adoption = adopt_legacy(store, ctx)?;
    let notes = adoption.notes.clone();
    if let Some(held) = adoption.held_for(&target.key) {
        let d = legacy_held(ctx, &held.state, REFUSED, &target.arg());
        return Ok(Transition::refused(d, &notes));
    }
    let _guard = store.lock(LockScope::Loop(&target.key))?;
    let Some(loaded) = store.read_loop(&target.key)? else {
        return Err(adoption
            .notes
            .into_iter()
            .fold(missing_loop(&target), OpError::hint));
    };
    loaded.writable()?;
    if let Err(d) = check_key_collision(&loaded.state, &target.raw, &target.key) {
        return Ok(Transition::refused(d, &notes));
    }
    let mut state = loaded.state.clone();
    if let Err(d) = check_reset(&state, ctx.session(), ctx.now, flags.force, &target.arg()) {
        return Ok(Transition::refused(d, &notes));
    }
    let takeover = match gate(
        owner_record(&state, ctx.now),
        writer(ctx, flags),
        ctx.now,
        &target.file_name(),
        &target.show(),
    ) {
        GateOutcome::Owner => None,
        GateOutcome::Takeover { epoch, reason } => Some((epoch, reason)),
        GateOutcome::Refused(d) => return Ok(Transition::refused(d, &notes)),
    };
    let applied = match apply(&mut state, &target) {
        Ok(applied) => applied,
        Err(d) => return Ok(Transition::refused(d, &notes)),
    };
    let mut reasons = Vec::new();
    // A change that changes nothing takes nothing over either.
    if let Some((epoch, reason)) = takeover.filter(|_| applied.changed) {
        state.session_id = ctx.session.clone();
        state.owner_epoch = epoch;
        reasons.push(reason);
    }
    reasons.extend(applied.warnings);
    let mut changed = applied.changed;
    if changed && state.loop_key.as_deref() != Some(target.key.as_str()) {
        // The file name wins over a disagreeing field.
        let was = match state.loop_key.as_deref() {
            Some(k) => format!("the file's loop_key was {:?}", esc(k)),
            None => "the file had no loop_key".to_string(),
        };
        reasons.push(Reason::new(
            baton_core::Rule::LoopKeyFieldMismatch,
            format!("{was}; set to {} from its name", target.key),
        ));
        state.loop_key = Some(target.key.clone());
        changed = true;
    }
    let mut journal_warning = None;
    if changed {
        let mut events = Vec::new();
        if journal::loop_changed(&loaded.state, &state) {
            if state.owner_epoch != loaded.state.owner_epoch {
                events.push(journal::takeover(
                    ctx,
                    (loaded.state.owner(), loaded.state.owner_epoch),
                    (state.owner(), state.owner_epoch),
                    "gate",
                ));
            }
            events.push(journal::event(
                ctx,
                event,
                Some(state.owner_epoch),
                loop_event_details(event, &loaded.state, &state),
            ));
        }
        // The write and its events: one transaction on a server.
        journal_warning =
            journal::write_loop(store, &target.key, &state, &loaded.expect(), &events)?;
    }
    // An interrupt says the session stopped: it is no sign of life for the batch (and a
    // refresh would move the batch past the pause that covers it).
    let batch_warning = (changed && event != JournalEvent::Interrupt)
        .then(|| keep_batch_live(&*store, ctx, &target))
        .flatten();
    let decision = Decision {
        verdict: baton_core::Verdict::Ok,
        reasons,
        next: applied.next,
    };
    // Every transition prints its breadcrumb first.
    let crumb = state.breadcrumb();
    let message = if applied.message.starts_with(&crumb) {
        applied.message
    } else {
        format!("{crumb}\n{}", applied.message)
    };
    let mut warnings = Vec::new();
    if changed && let Some(w) = no_session_warning(ctx, "loop") {
        warnings.push(w);
    }
    warnings.extend([batch_warning, journal_warning].into_iter().flatten());
    Ok(Transition::Written(Box::new(Written {
        decision,
        path: loaded.path.clone(),
        target,
        state,
        message,
        changed,
        notes,
        warnings,
    })))
}

/// What a loop's journal records of a transition, read off the state before and after it.
fn loop_event_details(event: JournalEvent, before: &LoopState, after: &LoopState) -> Value {
    match event {
        JournalEvent::Set => json!({
            "from": journal::loop_position(before),
            "to": journal::loop_position(after),
            "open_findings": after.open_findings(),
        }),
        JournalEvent::Artifact => json!({
            "tier": after.promotion_tier,
            "brief": after.brief_path,
            "plan": after.plan_path,
            "brief_owed": after.brief_owed,
        }),
        JournalEvent::Interrupt => json!({
            "reason": after.interrupt_reason,
            "resume_after": after.resume_after,
        }),
        JournalEvent::Finish => json!({
            "status": after.status.as_str(),
            "reason": after.loop_state.termination_reason,
        }),
        _ => json!({}),
    }
}

/// Marks a loop interrupted for `reason` (a rate limit waits until `resume_after`, or its
/// default, before it resumes); an interrupted loop takes only a later reset time.
pub fn interrupt(
    ctx: &Ctx,
    store: &dyn StateStore,
    target: Target,
    reason: InterruptReason,
    resume_after: Option<Timestamp>,
    flags: &Ownership,
) -> Result<Transition, OpError> {
    transition(
        ctx,
        store,
        target,
        flags,
        JournalEvent::Interrupt,
        |state, target| {
            match state.status {
                LoopStatus::Interrupted => {
                    // A later word on when the rate limit resets is news; anything else is a repeat.
                    let after = resume_after.map(format_ts);
                    let changed = after.is_some() && after != state.resume_after;
                    let message = if changed {
                        state.resume_after = after;
                        format!(
                            "{} is already interrupted; resume after {}",
                            target.shown(),
                            resume_after.map(|t| ctx.shown(t)).unwrap_or_default()
                        )
                    } else {
                        format!("{} is already interrupted; nothing changed", target.shown())
                    };
                    return Ok(Applied {
                        changed,
                        message,
                        next: Some(format!(
                            "`baton resume {}` in the next session",
                            target.arg()
                        )),
                        warnings: Vec::new(),
                    });
                }
                LoopStatus::Complete | LoopStatus::Stalled => {
                    return Err(Decision::new(
                        REFUSED,
                        Reason::new(
                            baton_core::Rule::LoopNotActive,
                            format!(
                                "the loop for {} is {}",
                                target.shown(),
                                state.status.as_str()
                            ),
                        ),
                        None,
                    ));
                }
                LoopStatus::Active => {}
            }
            state.status = LoopStatus::Interrupted;
            state.interrupted_at = Some(format_ts(ctx.now));
            state.interrupt_reason = Some(reason.as_str().to_string());
            state.resume_after = resume_after.map(format_ts);
            let reset = loop_resume::resume_after(state)
                .map(|t| format!("; it may resume after {}", ctx.shown(t)))
                .unwrap_or_default();
            Ok(Applied {
                changed: true,
                message: format!("interrupted {} ({reason}){reset}", target.shown()),
                next: Some(format!(
                    "in the next session, `baton resume {}`",
                    target.arg()
                )),
                warnings: Vec::new(),
            })
        },
    )
}

/// Refreshes a loop this session owns and runs; anything else is a no-op.
pub fn heartbeat(
    ctx: &Ctx,
    store: &dyn StateStore,
    target: Target,
    flags: &Ownership,
) -> Result<Heartbeat, OpError> {
    let noop = |why: String| {
        Ok(Heartbeat::Skipped {
            key: target.key.clone(),
            why,
        })
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
    let warning = keep_batch_live(store, ctx, &target);
    Ok(Heartbeat::Refreshed {
        last_updated: loaded.state.last_updated.clone(),
        target,
        warning,
    })
}

/// An accept that claimed the loop and did not finish: active and owned, yet still carrying the
/// interrupt it was accepted from.
pub fn claim_pending(state: &LoopState) -> bool {
    state.status == LoopStatus::Active && state.interrupted_at.is_some()
}

/// Everything the resume check needs, read under the loop's lock.
pub struct Gathered {
    pub _guard: Option<Guard>,
    pub target: Target,
    pub loaded: Option<Versioned<LoopState>>,
    /// `loaded` is a legacy `loop-state.json` that a live session still writes, not the keyed
    /// file: it is only ever read.
    pub held_legacy: bool,
    /// The working tree, asked only when the verdict depends on it.
    pub tree: Option<TreeStatus>,
    pub decision: ResumeDecision,
    /// Notes of legacy adoption and of unreadable candidates, printed first.
    pub notes: Vec<String>,
}

/// Adopts legacy state, locks the ticket's loop, reads its keyed file, scans the others and
/// decides. Git is asked about the tree only when the verdict depends on it.
pub fn gather(ctx: &Ctx, store: &dyn StateStore, target: Target) -> Result<Gathered, OpError> {
    // A query on a project without state creates nothing, not even a lock's sidecar.
    let exists = store.exists()?;
    let adoption = if exists {
        adopt_legacy(store, ctx)?
    } else {
        Adoption::default()
    };
    let mut notes = adoption.notes.clone();
    // The scan runs before this ticket's lock is taken: it clears the temp files of killed
    // writers only when their file's lock is free, and this process must not hold one of them.
    let mut others = Vec::new();
    for scanned in store.scan_loops(None)? {
        if scanned.key == target.key {
            continue;
        }
        match scanned.loaded {
            Ok(l) if is_resumable(&l.state, ctx.now) => others.push(OtherLoop {
                key: scanned.key,
                status: l.state.status,
                last_updated: l.state.liveness(ctx.now),
            }),
            Ok(_) => {}
            Err(e) => notes.push(format!(
                "warning: skipped an unreadable candidate: {}",
                esc(&e.to_string())
            )),
        }
    }
    others.sort_by_cached_key(|o| baton_core::text::natural_key(&o.key));
    // git runs before the lock is taken, on what the file says now (its tree check can start a
    // user's fsmonitor hook, which must not stall other writers); the decision is made on the
    // file as it is under the lock.
    let held = adoption.held_for(&target.key);
    let unlocked = match held {
        Some(held) => Some(held.state.clone()),
        None => store.read_loop(&target.key)?.map(|l| l.state),
    };
    // An accept of this session that stopped after its claim needs the tree too: it may still
    // have the work to set aside.
    let mut tree = match &unlocked {
        Some(state) if held.is_none() && (is_resumable(state, ctx.now) || claim_pending(state)) => {
            loop_tree(store.layout(), state).ok()
        }
        _ => None,
    };
    let committed = unlocked
        .as_ref()
        .filter(|s| held.is_none() && is_resumable(s, ctx.now))
        .and_then(|s| work_committed(&store.layout().root, s));
    let guard = if exists && held.is_none() {
        Some(store.lock(LockScope::Loop(&target.key))?)
    } else {
        None
    };
    let arg = target.arg();
    let (loaded, decision) = match held {
        Some(held) => {
            // A live session still writes the legacy file for this ticket: whatever a keyed file
            // says, the ticket is that session's.
            let d = legacy_held(ctx, &held.state, baton_core::Verdict::Live, &arg);
            let decision = ResumeDecision {
                decision: d,
                mode: None,
                archive: false,
                resume_after: None,
                others: None,
                accept: None,
                decline: None,
            };
            (Some(held.clone()), decision)
        }
        None => {
            let loaded = store.read_loop(&target.key)?;
            // Rarely the file became resumable between the two reads: ask git now.
            if let Some(l) = &loaded
                && tree.is_none()
                && is_resumable(&l.state, ctx.now)
            {
                tree = loop_tree(store.layout(), &l.state).ok();
            }
            let decision = decide_loop_resume(&ResumeFacts {
                ticket_arg: &arg,
                state: loaded.as_ref().map(|l| &l.state),
                me: ctx.session(),
                now: ctx.now,
                tree_dirty: tree.as_ref().map(|t| t.dirty),
                checked_out: tree.as_ref().and_then(|t| t.branch.as_deref()),
                work_committed: committed,
                others: &others,
            });
            (loaded, decision)
        }
    };
    let held_legacy = held.is_some();
    Ok(Gathered {
        _guard: guard,
        target,
        loaded,
        held_legacy,
        tree,
        decision,
        notes,
    })
}

/// What `resume fresh` did.
#[derive(Debug)]
pub enum Fresh {
    /// No loop for the ticket: nothing to archive.
    NoLoop,
    /// A gate or a check refused it: nothing changed.
    Refused(Decision),
    /// The loop was archived (`to`), so that `loop init` can start a fresh one.
    Archived {
        decision: Decision,
        to: PathBuf,
        warning: Option<String>,
    },
}

/// `resume fresh`'s outcome, with the ticket and what legacy adoption said first.
#[derive(Debug)]
pub struct FreshDone {
    pub target: Target,
    pub notes: Vec<String>,
    pub outcome: Fresh,
}

/// Starts over: archives the ticket's loop (kept, never deleted) unless a live session runs it.
pub fn fresh(
    ctx: &Ctx,
    store: &dyn StateStore,
    ticket: &OsStr,
    flags: &Ownership,
) -> Result<FreshDone, OpError> {
    let g = gather(ctx, store, Target::derive(ctx, ticket))?;
    let notes = g.notes.clone();
    let done = |outcome| FreshDone {
        target: g.target.clone(),
        notes: notes.clone(),
        outcome,
    };
    let t = g.target.arg();
    let Some(loaded) = &g.loaded else {
        return Ok(done(Fresh::NoLoop));
    };
    if g.held_legacy {
        let d = legacy_held(ctx, &loaded.state, REFUSED, &t);
        return Ok(done(Fresh::Refused(d)));
    }
    loaded.writable()?;
    if let Err(d) = check_key_collision(&loaded.state, &g.target.raw, &g.target.key) {
        return Ok(done(Fresh::Refused(d)));
    }
    if let Err(d) = baton_core::decide::loop_write::check_reset(
        &loaded.state,
        ctx.session(),
        ctx.now,
        flags.force,
        &t,
    ) {
        return Ok(done(Fresh::Refused(d)));
    }
    if let Err(d) = may_replace(ctx, &loaded.state, flags, &g.target) {
        return Ok(done(Fresh::Refused(d)));
    }
    // The loop's history stays: the journal outlives the state it describes. The archive and
    // its `fresh` event: one transaction on a server.
    let event = |to: &std::path::Path| {
        vec![journal::event(
            ctx,
            JournalEvent::Fresh,
            Some(loaded.state.owner_epoch),
            json!({
                "archived": to.display().to_string(),
                "owner": loaded.state.session_id,
                "status": loaded.state.status.as_str(),
            }),
        )]
    };
    let target = JournalTarget::Loop(&g.target.key);
    let (to, appended) = store.archive_journaled(
        &RecordKey::Loop(g.target.key.clone()),
        &loaded.expect(),
        ctx.now,
        target,
        &event,
    )?;
    let journal_warning = journal::warning(store, target, appended);
    let d = Decision::new(
        baton_core::Verdict::Archived,
        Reason::new(
            baton_core::Rule::LoopFreshArchived,
            format!("the loop for {t} was moved to {}", to.display()),
        ),
        Some(format!("start the new loop with `baton loop init {t}`")),
    );
    Ok(done(Fresh::Archived {
        decision: d,
        to,
        warning: journal_warning,
    }))
}

/// What `loop init` is asked for.
#[derive(Debug, Clone)]
pub struct Init<'a> {
    pub ticket: &'a OsStr,
    /// The first phase (`skeptic` or `qa` start that loop; a later one records where a loop
    /// that starts later stands).
    pub phase: &'a str,
    pub max_iterations: u64,
    /// The branch the work is measured against; `None`: origin's HEAD branch, else main, else
    /// master.
    pub base: Option<&'a str>,
    pub flags: Ownership,
}

/// `--base` as a branch name that exists here or on `origin`.
fn checked_base(root: &std::path::Path, raw: &str) -> Result<String, OpError> {
    let name = git::branch_name(raw.trim());
    let known = !name.is_empty()
        && (git::ref_exists(root, &format!("refs/heads/{name}"))?
            || git::ref_exists(root, &format!("refs/remotes/origin/{name}"))?);
    if known {
        Ok(name.to_string())
    } else {
        Err(
            OpError::usage(format!("--base {raw:?} names no branch here or on origin"))
                .hint("pass a branch name such as `--base main` (`git branch -a` lists them)"),
        )
    }
}

/// Starts a ticket's loop: creates its keyed file, active and owned by this session; a finished
/// loop (or one the ownership gate lets this session replace) is archived first.
pub fn init(ctx: &Ctx, store: &dyn StateStore, args: &Init) -> Result<Transition, OpError> {
    refuse_sessionless_tool_call(ctx)?;
    let target = Target::derive(ctx, args.ticket);
    target.require_stable()?;
    let adoption = adopt_legacy(store, ctx)?;
    let notes = adoption.notes.clone();
    if let Some(held) = adoption.held_for(&target.key) {
        let d = legacy_held(ctx, &held.state, REFUSED, &target.arg());
        return Ok(Transition::refused(d, &notes));
    }
    // git runs before the lock is taken (a user's fsmonitor hook must not stall other writers).
    let layout = store.layout();
    let branch = git::tree_status(&layout.root, &[])?.branch;
    let base = match args.base {
        Some(raw) => Some(checked_base(&layout.root, raw)?),
        None => git::default_base(&layout.root)?,
    };
    let _guard = store.lock(LockScope::Loop(&target.key))?;
    let existing = store.read_loop(&target.key)?;
    if let Some(existing) = &existing {
        existing.writable()?;
        if let Err(d) = check_key_collision(&existing.state, &target.raw, &target.key) {
            return Ok(Transition::refused(d, &notes));
        }
    }
    let mut reasons = Vec::new();
    // What the journal says of the loop this one replaces, if any.
    let mut replaced = serde_json::Value::Null;
    match decide_init(
        existing.as_ref().map(|l| &l.state),
        ctx.session(),
        ctx.now,
        &target.arg(),
    ) {
        InitPlan::Refuse(d) => return Ok(Transition::refused(d, &notes)),
        InitPlan::AlreadyOwned => {
            let loaded = existing.expect("AlreadyOwned implies a file");
            let decision = Decision {
                verdict: baton_core::Verdict::Ok,
                reasons,
                next: Some(format!(
                    "record transitions with `baton loop set {}`",
                    target.arg()
                )),
            };
            let message = format!(
                "{} already runs in this session {}",
                target.shown(),
                loaded.state.breadcrumb()
            );
            return Ok(Transition::Written(Box::new(Written {
                decision,
                target,
                path: loaded.path,
                state: loaded.state,
                message,
                changed: false,
                notes,
                warnings: Vec::new(),
            })));
        }
        InitPlan::Create { archive_old } => {
            if let Some(old) = &existing {
                // A finished loop of a live foreign session, or any live foreign loop, stays.
                if let Err(d) = may_replace(ctx, &old.state, &args.flags, &target) {
                    return Ok(Transition::refused(d, &notes));
                }
                let to = store.archive_loop(&target.key, &old.expect(), ctx.now)?;
                replaced = serde_json::json!({
                    "archived": to.display().to_string(),
                    "session": old.state.session_id,
                    "epoch": old.state.owner_epoch,
                    "status": old.state.status.as_str(),
                });
                let (rule, what) = if archive_old {
                    (baton_core::Rule::LoopTerminalArchived, "the finished loop")
                } else {
                    (baton_core::Rule::LoopReplacedArchived, "the previous loop")
                };
                reasons.push(baton_core::Reason::new(
                    rule,
                    format!("{what} was moved to {}", to.display()),
                ));
            }
        }
    }
    if let Ok(Some(batch)) = store.read_batch()
        && let Some(warning) = single_ticket_warning(Some(&batch.state), ctx.session(), ctx.now)
    {
        reasons.push(warning);
    }
    let mut state = LoopState::new(target.raw.clone(), target.key.clone(), ctx.session.clone());
    state.branch = branch;
    state.repo = Some(layout.root.display().to_string());
    state.base_branch = base;
    state.last_phase = Some(args.phase.to_string());
    // `loop_state.phase` names the loop that runs; a later phase leaves it unset until one does.
    state.loop_state.phase = Phase::parse(args.phase)
        .filter(|p| p.is_loop())
        .map(|p| p.as_str().to_string());
    state.loop_state.iteration = 1;
    state.loop_state.max_iterations = args.max_iterations;
    state.touch(ctx.now);
    let init = journal::event(
        ctx,
        JournalEvent::Init,
        Some(state.owner_epoch),
        serde_json::json!({
            "ticket": target.raw,
            "phase": state.last_phase,
            "iteration": state.loop_state.iteration,
            "max_iterations": state.loop_state.max_iterations,
            "branch": state.branch,
            "base": state.base_branch,
            "replaced": replaced,
        }),
    );
    let journal_warning =
        journal::write_loop(store, &target.key, &state, &Expect::Absent, &[init])?;
    let batch_warning = keep_batch_live(store, ctx, &target);
    let decision = Decision {
        verdict: baton_core::Verdict::Ok,
        reasons,
        next: Some(format!(
            "record each phase transition with `baton loop set {} --phase <P> --action <A>` (owner epoch {})",
            target.arg(),
            state.owner_epoch
        )),
    };
    let message = format!(
        "started the loop for {} {}",
        target.shown(),
        state.breadcrumb()
    );
    let mut warnings: Vec<String> = no_session_warning(ctx, "loop").into_iter().collect();
    warnings.extend([batch_warning, journal_warning].into_iter().flatten());
    Ok(Transition::Written(Box::new(Written {
        decision,
        path: store.name(&RecordKey::Loop(target.key.clone())),
        target,
        state,
        message,
        changed: true,
        notes,
        warnings,
    })))
}
