//! The batch as more than one command (and the session-start survey) sees it, and its
//! operations: `batch start` (`start`), the shared write path of the others (`update`) and the
//! owner's heartbeat (`heartbeat`).

use crate::env::Ctx;
use crate::error::OpError;
use crate::journal;
use crate::ticket_loop::{Ownership, no_session_warning};
use baton_core::journal::JournalEvent;
use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;

use serde_json::{Map, Value};

use baton_core::Decision;
use baton_core::decide::batch::decide_batch_start;
use baton_core::decide::loop_write::REFUSED;
use baton_core::decide::ownership::{GateOutcome, OwnerRecord, Writer, gate};
use baton_core::key::{batch_prefix, loop_key};
use baton_core::model::BatchState;
use baton_core::model::{BatchStatus, BatchTicket, SCHEMA_VERSION};
use baton_core::text::shell_quote;
use baton_core::text::{esc, esc_join};
use baton_core::time::format_ts;
use baton_core::{Reason, Rule, Verdict};
use baton_store::layout::BATCH_FILE;
use baton_store::{Expect, LockScope, RecordKey, StateStore, random_hex};

/// The batch picks the ticket; the ticket's own loop resume picks the phase.
pub fn next_step(state: &BatchState) -> Option<String> {
    if state.status == BatchStatus::Stalled {
        return Some(
            "the batch stalled: ask the human, then resume it (`baton batch resume`) or start a new one (`baton batch start`)"
                .into(),
        );
    }
    if state.is_finished() {
        return None;
    }
    let resume = if state.is_active() {
        ""
    } else {
        "resume the batch with `baton batch resume`, then "
    };
    let blocked = esc_join(state.blocked().map(|t| t.ticket_id.as_str()));
    Some(match state.next_ticket() {
        Some(t) => format!(
            "{resume}ticket {}: `baton resume {}`",
            esc(&t.ticket_id),
            shell_quote(&esc(&t.ticket_id))
        ),
        None if state.blocked().next().is_some() => format!(
            "only blocked tickets are left ({}): replan them (`baton batch ticket <T> --status pending --replan <DETAIL>`), or end the batch with `baton batch finish --status stalled`",
            blocked
        ),
        None => "every ticket is done: `baton batch finish --status complete`".into(),
    })
}

/// The error of a batch command in a project without a batch.
pub fn missing_batch() -> OpError {
    OpError::usage(format!(
        "no {} in this project",
        baton_store::layout::BATCH_FILE
    ))
    .hint("start one with `baton batch start <T1> <T2>…`")
}

/// What a batch write did.
#[derive(Debug)]
pub enum BatchUpdate {
    /// The ownership gate or the batch's status refused it: nothing changed.
    Refused(Decision),
    Written {
        decision: Decision,
        state: Box<BatchState>,
        /// What the write did, printed before the decision.
        message: String,
        warnings: Vec<String>,
    },
}

/// What the ownership gate sees of the batch's owner.
pub fn owner_record(state: &BatchState, now: jiff::Timestamp) -> OwnerRecord<'_> {
    OwnerRecord {
        session: state.session_id.as_deref(),
        liveness: state.liveness(now),
        batch_active: Some(state.is_active()),
        released: false,
        epoch: state.owner_epoch,
    }
}

/// What a batch write is, for the status rules of `update`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchWrite {
    /// `batch ticket`: the batch must be running (its own owner's interrupted batch runs on).
    Ticket,
    /// `batch resume`: an interrupted, paused, stalled or stale batch runs again.
    Resume,
    /// `batch finish`: ends a batch in any status but a finished one.
    Finish,
    /// The owner's session ended with the batch active (`interrupt`): only an active batch.
    Interrupt,
}

/// The shared write path of `batch ticket`, `batch resume` and `batch finish`: under the
/// batch's lock, read, gate, check the status, apply, write, and journal: `apply` returns the
/// message and the details of the `event` appended to the batch's journal (after a `takeover`
/// event when the gate handed the batch to this session).
///
/// The originating Stop hook marks its own session's batch `interrupted` at the end of every
/// turn, so that session's next write simply runs on. A batch interrupted by another session,
/// paused by the operator or stalled runs again only through `batch resume`.
pub fn update(
    ctx: &Ctx,
    store: &dyn StateStore,
    flags: &Ownership,
    kind: BatchWrite,
    event: JournalEvent,
    apply: impl FnOnce(&mut BatchState) -> Result<(String, serde_json::Value), OpError>,
) -> Result<BatchUpdate, OpError> {
    if !store.exists()? {
        return Err(missing_batch());
    }
    let _guard = store.lock(LockScope::Batch)?;
    let loaded = store.read_batch()?.ok_or_else(missing_batch)?;
    loaded.writable()?;
    let mut state = loaded.state.clone();
    let mut reasons = Vec::new();
    match gate(
        owner_record(&state, ctx.now),
        Writer {
            session: ctx.session(),
            epoch: flags.epoch,
            force: flags.force,
        },
        ctx.now,
        BATCH_FILE,
        "baton batch show",
    ) {
        GateOutcome::Owner => {}
        GateOutcome::Takeover { epoch, reason } => {
            state.session_id = ctx.session.clone();
            state.owner_epoch = epoch;
            reasons.push(reason);
        }
        GateOutcome::Refused(d) => return Ok(BatchUpdate::Refused(d)),
    }
    let took_over = !reasons.is_empty();
    let status = state.status.clone();
    let id = esc(&state.batch_id).into_owned();
    let refuse = |message: String, next: &str| {
        Ok(BatchUpdate::Refused(baton_core::Decision::new(
            REFUSED,
            baton_core::Reason::new(baton_core::Rule::BatchNotRunning, message),
            Some(next.to_string()),
        )))
    };
    match (kind, &status) {
        (_, BatchStatus::Complete | BatchStatus::Abandoned)
        | (BatchWrite::Finish, BatchStatus::Stalled) => {
            return refuse(
                format!("batch {id} is {}: it has ended", esc(status.as_str())),
                "start a new batch with `baton batch start <T1> <T2>…`",
            );
        }
        (BatchWrite::Ticket, BatchStatus::Interrupted) if !took_over => {
            resume_batch(&mut state, &mut reasons)
        }
        (
            BatchWrite::Ticket,
            BatchStatus::Interrupted | BatchStatus::Paused | BatchStatus::Stalled,
        ) => {
            return refuse(
                format!(
                    "batch {id} is {}: resume it before its tickets move",
                    esc(status.as_str())
                ),
                "resume it with `baton batch resume` (see it with `baton batch show`)",
            );
        }
        (
            BatchWrite::Resume,
            BatchStatus::Interrupted | BatchStatus::Paused | BatchStatus::Stalled,
        ) => resume_batch(&mut state, &mut reasons),
        (BatchWrite::Interrupt, BatchStatus::Active) if !took_over => {}
        (BatchWrite::Interrupt, _) => {
            return refuse(
                format!(
                    "batch {id} is {}{}: there is nothing of this session's to interrupt",
                    esc(status.as_str()),
                    if took_over {
                        " and another session's"
                    } else {
                        ""
                    }
                ),
                "see it with `baton batch show`",
            );
        }
        _ => {}
    }
    let (message, details) = apply(&mut state)?;
    state.touch(&format_ts(ctx.now));
    let mut events = Vec::new();
    if journal::batch_changed(&loaded.state, &state) {
        if took_over {
            events.push(journal::takeover(
                ctx,
                (loaded.state.owner(), loaded.state.owner_epoch),
                (state.owner(), state.owner_epoch),
                "gate",
            ));
        }
        let mut details = details;
        if let Some(obj) = details.as_object_mut() {
            obj.insert("batch_id".into(), state.batch_id.clone().into());
            // A resume (or a ticket write that resumes its owner's interrupted batch) says
            // what the batch was resumed from; a finish's new status says enough.
            if status != state.status && event != JournalEvent::Finish {
                obj.insert("from_status".into(), status.as_str().into());
            }
        }
        events.push(journal::event(ctx, event, Some(state.owner_epoch), details));
    }
    // The write and its events: one transaction on a server.
    let journal_warning = journal::write_batch(store, &state, &loaded.expect(), &events)?;
    let decision = baton_core::Decision {
        verdict: baton_core::Verdict::Ok,
        reasons,
        next: next_step(&state),
    };
    let mut warnings: Vec<String> = journal_warning.into_iter().collect();
    warnings.extend(no_session_warning(ctx, "batch"));
    Ok(BatchUpdate::Written {
        decision,
        state: Box::new(state),
        message,
        warnings,
    })
}

/// Marks the active batch this session owns `interrupted`, for `reason`, when the session ends
/// with it active: the originating protocol's mark on exit, with a fresh `updated_at`, so that
/// the next session is offered the batch (`baton batch resume`) at once rather than finding it
/// live for another 10 minutes. Through the shared write path (`update`): the ownership gate
/// under the batch's lock, the fence of the read, and an `interrupt` event in its journal.
pub fn interrupt(
    ctx: &Ctx,
    store: &dyn StateStore,
    reason: baton_core::model::InterruptReason,
) -> Result<BatchUpdate, OpError> {
    update(
        ctx,
        store,
        &Ownership::default(),
        BatchWrite::Interrupt,
        JournalEvent::Interrupt,
        |state| {
            state.status = BatchStatus::Interrupted;
            state
                .extra
                .insert("interrupted_at".into(), format_ts(ctx.now).into());
            state
                .extra
                .insert("interrupt_reason".into(), reason.as_str().into());
            Ok((
                format!(
                    "interrupted batch {} ({})",
                    esc(&state.batch_id),
                    reason.as_str()
                ),
                serde_json::json!({ "reason": reason.as_str() }),
            ))
        },
    )
}

/// What a batch heartbeat did: a heartbeat of anything but this session's active batch is a
/// no-op.
#[derive(Debug)]
pub enum BatchHeartbeat {
    Refreshed {
        batch_id: String,
        updated_at: Option<String>,
    },
    Skipped {
        why: String,
    },
}

/// Refreshes `updated_at` of the batch this session owns while it is active, so that between
/// two tickets (the last one's loop finished, the next one's not yet started) another session's
/// `batch start` still finds it live. Anything else (another owner or none, not active, no
/// batch, an older `--epoch`) is a no-op. Under the batch's lock, with the fence of the read;
/// a write that only refreshes the liveness stamp journals nothing, as with every batch write.
pub fn heartbeat(
    ctx: &Ctx,
    store: &dyn StateStore,
    flags: &Ownership,
) -> Result<BatchHeartbeat, OpError> {
    let noop = |why: String| Ok(BatchHeartbeat::Skipped { why });
    if !store.exists()? || !store.contains(&RecordKey::Batch)? {
        return noop(format!("no {BATCH_FILE}"));
    }
    let _guard = store.lock(LockScope::Batch)?;
    let Some(loaded) = store.read_batch()? else {
        return noop(format!("no {BATCH_FILE}"));
    };
    let state = &loaded.state;
    let id = esc(&state.batch_id).into_owned();
    let me = ctx.session().filter(|s| !s.is_empty());
    // Unlike a loop, a batch with no owner is never kept alive: the gate treats it as another
    // session's until `--force` says otherwise.
    if me.is_none() || state.owner() != me {
        return noop(format!(
            "batch {id} is owned by {}",
            esc(state.owner().unwrap_or("no session"))
        ));
    }
    if !state.is_active() {
        return noop(format!("batch {id} is {}", esc(state.status.as_str())));
    }
    if flags.epoch.is_some_and(|held| held != state.owner_epoch) {
        return noop(format!(
            "owner epoch is {}, not the one held",
            state.owner_epoch
        ));
    }
    loaded.writable()?;
    let mut state = loaded.state.clone();
    state.touch(&format_ts(ctx.now));
    store.write_batch(&state, &loaded.expect())?;
    Ok(BatchHeartbeat::Refreshed {
        batch_id: state.batch_id.clone(),
        updated_at: state.updated_at.clone(),
    })
}

/// The batch runs again: `active`, its interrupt and pause marks cleared, its wall clock and
/// `replan_log` kept (the originating resume's last step).
pub fn resume_batch(state: &mut BatchState, reasons: &mut Vec<baton_core::Reason>) {
    reasons.push(baton_core::Reason::new(
        baton_core::Rule::BatchResumed,
        format!(
            "batch {} was {}; it is active again",
            esc(&state.batch_id),
            esc(state.status.as_str())
        ),
    ));
    state.status = BatchStatus::Active;
    for field in [
        "interrupted_at",
        "interrupt_reason",
        "paused_at",
        "pause_reason",
    ] {
        if state.extra.contains_key(field) {
            state.extra.insert(field.into(), serde_json::Value::Null);
        }
    }
}

/// What `batch start` is asked for.
#[derive(Debug, Clone)]
pub struct Start<'a> {
    /// The tickets, in the order to run them (two or more).
    pub tickets: &'a [OsString],
    /// How the batch runs (recorded as `mode`).
    pub mode: &'a str,
    /// Take over a batch that records no owner session.
    pub force: bool,
}

/// What `batch start` did.
#[derive(Debug)]
pub enum BatchStart {
    /// Too few tickets, or the batch there may not be replaced: nothing changed.
    Refused(Decision),
    /// The batch is written, active and owned by this session (any earlier one archived, as
    /// the decision's reasons say).
    Started {
        decision: Decision,
        state: Box<BatchState>,
        /// The journal's, then the one of a write with no session id.
        warnings: Vec<String>,
    },
}

/// Starts a batch of two or more tickets, owned by this session. One batch per project root:
/// another live session's active batch, or one that records no owner (without `force`), stays;
/// a finished or stale batch is archived first.
pub fn start(ctx: &Ctx, store: &dyn StateStore, args: &Start) -> Result<BatchStart, OpError> {
    let keys: Vec<String> = args
        .tickets
        .iter()
        .map(|raw| loop_key(raw.as_bytes(), ctx.session(), || random_hex(4)).0)
        .collect();
    for (i, key) in keys.iter().enumerate() {
        if let Some(j) = keys[..i].iter().position(|k| k == key) {
            return Err(OpError::usage(format!(
                "tickets {:?} and {:?} share the key {key}, so they would share one loop-state file",
                args.tickets[j].to_string_lossy(),
                args.tickets[i].to_string_lossy()
            ))
            .hint("list each ticket once, under ids that differ after sanitizing (`baton loop key <TICKET>`)"));
        }
    }
    if let Err(d) = decide_batch_start(None, args.tickets.len(), ctx.session(), ctx.now) {
        return Ok(BatchStart::Refused(d));
    }
    let _guard = store.lock(LockScope::Batch)?;
    let existing = store.read_batch()?;
    if let Some(existing) = &existing {
        existing.writable()?;
    }
    let old = existing.as_ref().map(|l| &l.state);
    if let Err(d) = decide_batch_start(old, args.tickets.len(), ctx.session(), ctx.now) {
        return Ok(BatchStart::Refused(d));
    }
    let mut reasons = Vec::new();
    if let Some(old) = old {
        // The ownership gate, in any status: an ownerless batch is another session's until
        // `--force` says otherwise, and a live owner's active batch is never archived.
        if let GateOutcome::Refused(d) = gate(
            owner_record(old, ctx.now),
            Writer {
                session: ctx.session(),
                epoch: None,
                force: args.force,
            },
            ctx.now,
            BATCH_FILE,
            "baton batch show",
        ) {
            return Ok(BatchStart::Refused(d));
        }
        let to = store.archive(&RecordKey::Batch, &Expect::read(existing.as_ref()), ctx.now)?;
        reasons.push(Reason::new(
            Rule::BatchPreviousArchived,
            format!(
                "batch {} ({}) was moved to {}",
                esc(&old.batch_id),
                esc(old.status.as_str()),
                to.display()
            ),
        ));
    }
    let tickets: Vec<BatchTicket> = args
        .tickets
        .iter()
        .zip(keys)
        .map(|(raw, key)| BatchTicket {
            ticket_id: raw.to_string_lossy().into_owned(),
            loop_key: Some(key),
            status: "pending".into(),
            extra: ["started_at", "ended_at", "last_summary"]
                .into_iter()
                .map(|k| (k.to_string(), Value::Null))
                .collect(),
        })
        .collect();
    let stamp = ctx.now.strftime("%Y%m%dT%H%M%SZ");
    let batch_id = format!(
        "{}-batch-{stamp}-{}",
        batch_prefix(args.tickets[0].as_bytes()),
        random_hex(2)
    );
    let now = format_ts(ctx.now);
    let state = BatchState {
        schema_version: SCHEMA_VERSION,
        session_id: ctx.session.clone(),
        batch_id,
        status: BatchStatus::Active,
        mode: Some(args.mode.to_string()),
        created_at: Some(now.clone()),
        updated_at: Some(now.clone()),
        tickets,
        replan_log: Vec::new(),
        owner_epoch: old.map_or(0, |o| o.owner_epoch + 1),
        // The originating schema's envelope, so its own readers find every field they expect.
        extra: Map::from_iter([
            ("interrupted_at".into(), Value::Null),
            ("interrupt_reason".into(), Value::Null),
            ("paused_at".into(), Value::Null),
            ("pause_reason".into(), Value::Null),
            ("wallclock_started_at".into(), now.into()),
        ]),
    };
    let start = journal::event(
        ctx,
        JournalEvent::Start,
        Some(state.owner_epoch),
        serde_json::json!({
            "batch_id": state.batch_id,
            "mode": state.mode,
            "tickets": state.tickets.iter().map(|t| t.ticket_id.as_str()).collect::<Vec<_>>(),
            "replaced": old.map(|o| serde_json::json!({
                "batch_id": o.batch_id,
                "session": o.session_id,
                "epoch": o.owner_epoch,
                "status": o.status,
            })),
        }),
    );
    let journal_warning = journal::write_batch(store, &state, &Expect::Absent, &[start])?;
    let decision = Decision {
        verdict: Verdict::Ok,
        reasons,
        next: next_step(&state),
    };
    let mut warnings: Vec<String> = journal_warning.into_iter().collect();
    warnings.extend(no_session_warning(ctx, "batch"));
    Ok(BatchStart::Started {
        decision,
        state: Box::new(state),
        warnings,
    })
}
