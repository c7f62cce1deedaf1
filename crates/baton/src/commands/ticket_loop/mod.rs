//! `baton loop`: the per-ticket loop state of the ticket-loop protocol (docs/ticket-loop.md).

mod artifact;
mod finish;
pub mod heartbeat;
mod init;
pub mod interrupt;
mod key;
mod set;
mod show;

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use clap::{Args, Subcommand};
use serde_json::{Value, json};

use crate::output::Report;
use baton_core::decide::loop_write::{REFUSED, check_key_collision, check_reset};
use baton_core::decide::ownership::{GateOutcome, Writer, gate};
use baton_core::key::{KeySource, loop_file_name, loop_key};
use baton_core::model::LoopState;
use baton_core::text::esc;
use baton_core::text::shell_quote;
use baton_core::{Decision, Reason};
use baton_ops::env::Ctx;
use baton_ops::error::{CommandError, ExitStatus};
use baton_ops::journal;
use baton_store::{JournalTarget, LockScope, RecordKey, StateStore, random_hex};

/// Record and inspect one ticket's loop state (`.agentic/loop-state-<KEY>.json`).
#[derive(Debug, Subcommand)]
pub enum LoopCommand {
    Key(key::KeyArgs),
    Init(init::InitArgs),
    Set(set::SetArgs),
    Artifact(artifact::ArtifactArgs),
    Heartbeat(heartbeat::HeartbeatArgs),
    Interrupt(interrupt::InterruptArgs),
    Finish(finish::FinishArgs),
    Show(show::ShowArgs),
}

pub fn dispatch(ctx: &Ctx, cmd: LoopCommand) -> Result<Report, CommandError> {
    match cmd {
        LoopCommand::Key(args) => key::cmd_loop_key(ctx, args),
        LoopCommand::Init(args) => init::cmd_loop_init(ctx, args),
        LoopCommand::Set(args) => set::cmd_loop_set(ctx, args),
        LoopCommand::Artifact(args) => artifact::cmd_loop_artifact(ctx, args),
        LoopCommand::Heartbeat(args) => heartbeat::cmd_loop_heartbeat(ctx, args),
        LoopCommand::Interrupt(args) => interrupt::cmd_loop_interrupt(ctx, args),
        LoopCommand::Finish(args) => finish::cmd_loop_finish(ctx, args),
        LoopCommand::Show(args) => show::cmd_loop_show(ctx, args),
    }
}

/// The ownership options of every loop write.
#[derive(Debug, Clone, Default, Args)]
pub struct WriteFlags {
    /// Take over legacy state that records no owner session.
    #[arg(long)]
    pub force: bool,
    /// The owner epoch this caller was handed (by `loop init` or `resume accept`); a write
    /// holding an older epoch than the file's is refused.
    #[arg(long, value_name = "N")]
    pub epoch: Option<u64>,
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

    /// The ticket for text output, control characters escaped.
    pub fn shown(&self) -> String {
        esc(&self.raw).into_owned()
    }

    /// The ticket quoted for a suggested command.
    pub fn arg(&self) -> String {
        shell_quote(&esc(&self.raw))
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
    pub fn require_stable(&self) -> Result<(), CommandError> {
        if self.source != KeySource::NoSession {
            return Ok(());
        }
        Err(CommandError::usage(
            "neither a ticket id nor a session id gives this loop a key: it would get a random one that no later command could address",
        )
        .hint("pass the ticket id (`baton loop init PROJ-123`), or give the session with `--session <ID>` or `BATON_SESSION`"))
    }
}

pub fn missing_loop(target: &Target) -> CommandError {
    CommandError::usage(format!(
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
    flags: &WriteFlags,
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

pub use baton_ops::loops::owner_record;

pub fn writer<'a>(ctx: &'a Ctx, flags: &WriteFlags) -> Writer<'a> {
    Writer {
        session: ctx.session(),
        epoch: flags.epoch,
        force: flags.force,
    }
}

pub use baton_ops::loops::{Adoption, adopt_legacy, legacy_held, legacy_key};

/// The warning of every write made with no session id; `what` is `loop` or `batch`.
pub fn no_session_warning(ctx: &Ctx, what: &str) -> Option<String> {
    ctx.session().is_none().then(|| {
        format!("no session id (`--session`, `BATON_SESSION` or `CLAUDE_CODE_SESSION_ID`): nothing protects this {what} from another session without one")
    })
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

fn refresh_batch(store: &dyn StateStore, ctx: &Ctx, target: &Target) -> Result<(), CommandError> {
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
    ticket: &OsStr,
    flags: &WriteFlags,
    event: &'static str,
    apply: impl FnOnce(&mut LoopState, &Target) -> Result<Applied, Decision>,
) -> Result<Report, CommandError> {
    let store = ctx.store()?;
    let target = Target::derive(ctx, ticket);
    if !store.exists()? {
        return Err(missing_loop(&target));
    }
    let adoption = adopt_legacy(&*store, ctx)?;
    let notes = adoption.notes.join("\n");
    if let Some(held) = adoption.held_for(&target.key) {
        let d = legacy_held(ctx, &held.state, REFUSED, &target.arg());
        return Ok(Report::decision(&d).text_before(&notes));
    }
    let _guard = store.lock(LockScope::Loop(&target.key))?;
    let Some(loaded) = store.read_loop(&target.key)? else {
        return Err(adoption
            .notes
            .into_iter()
            .fold(missing_loop(&target), CommandError::hint));
    };
    loaded.writable()?;
    if let Err(d) = check_key_collision(&loaded.state, &target.raw, &target.key) {
        return Ok(Report::decision(&d).text_before(&notes));
    }
    let mut state = loaded.state.clone();
    if let Err(d) = check_reset(&state, ctx.session(), ctx.now, flags.force, &target.arg()) {
        return Ok(Report::decision(&d).text_before(&notes));
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
        GateOutcome::Refused(d) => return Ok(Report::decision(&d).text_before(&notes)),
    };
    let applied = match apply(&mut state, &target) {
        Ok(applied) => applied,
        Err(d) => return Ok(Report::decision(&d).text_before(&notes)),
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
        store.write_loop(&target.key, &state, &loaded.expect())?;
        if journal::loop_changed(&loaded.state, &state) {
            let mut events = Vec::new();
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
            journal_warning = journal::append(&*store, JournalTarget::Loop(&target.key), &events);
        }
    }
    let batch_warning = changed
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
    let mut report = loop_report(&decision, &target, &loaded.path, &state, &message)
        .with("changed", changed)
        .with("notes", adoption.notes.clone())
        .text_before(&notes);
    if changed && let Some(w) = no_session_warning(ctx, "loop") {
        report = report.warn(w);
    }
    for w in [batch_warning, journal_warning].into_iter().flatten() {
        report = report.warn(w);
    }
    Ok(report)
}

/// What a loop's journal records of a transition, read off the state before and after it.
fn loop_event_details(event: &str, before: &LoopState, after: &LoopState) -> Value {
    match event {
        "set" => json!({
            "from": journal::loop_position(before),
            "to": journal::loop_position(after),
            "open_findings": after.open_findings(),
        }),
        "artifact" => json!({
            "tier": after.promotion_tier,
            "brief": after.brief_path,
            "plan": after.plan_path,
            "brief_owed": after.brief_owed,
        }),
        "interrupt" => json!({
            "reason": after.interrupt_reason,
            "resume_after": after.resume_after,
        }),
        "finish" => json!({
            "status": after.status.as_str(),
            "reason": after.loop_state.termination_reason,
        }),
        _ => json!({}),
    }
}

/// The report of a loop write: the message, the rules that fired, the next step.
pub fn loop_report(
    decision: &Decision,
    target: &Target,
    path: &Path,
    state: &LoopState,
    message: &str,
) -> Report {
    let mut text = format!("{message}\n");
    for reason in &decision.reasons {
        text.push_str(&format!("  {}: {}\n", reason.rule, reason.message));
    }
    if let Some(next) = &decision.next {
        text.push_str(&format!("next: {next}\n"));
    }
    Report::new(
        ExitStatus::Success,
        crate::output::decision_json(decision),
        text,
    )
    .with("ticket", target.raw.clone())
    .with("key", target.key.clone())
    .with("path", path.display().to_string())
    .with("status", state.status.as_str())
    .with("owner", state.session_id.clone())
    .with("epoch", state.owner_epoch)
    .with("breadcrumb", state.breadcrumb())
}

/// The state as JSON, for `--json` outputs that include it.
pub fn state_json(state: &LoopState) -> Value {
    serde_json::to_value(state).unwrap_or_else(|e| json!({ "error": e.to_string() }))
}
