//! `baton loop`: the per-ticket loop state of the ticket-loop protocol (docs/ticket-loop.md).

mod artifact;
mod finish;
mod heartbeat;
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

use crate::context::Ctx;
use crate::error::{CommandError, ExitStatus};
use crate::journal;
use crate::output::{Report, shell_quote};
use baton_core::decide::loop_resume::last_write;
use baton_core::decide::loop_write::{REFUSED, check_key_collision, check_reset};
use baton_core::decide::ownership::{GateOutcome, OwnerRecord, Writer, gate};
use baton_core::key::{KeySource, loop_file_name, loop_key};
use baton_core::model::{LoopState, LoopStatus, SCHEMA_VERSION};
use baton_core::text::{esc, esc_or};
use baton_core::time::is_live;
use baton_core::{Decision, Reason};
use baton_store::layout::LEGACY_LOOP_FILE;
use baton_store::store::Loaded;
use baton_store::{FsStore, JournalTarget, LockScope, StateStore, random_hex};

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

/// What the gate sees of a loop's owner. An interrupt is the owner's own release of the loop, so
/// an interrupted loop's last write no longer makes it live: otherwise the offer of the resume
/// check could not be accepted for 10 minutes after the owner's last transition.
pub fn owner_record(state: &LoopState, now: jiff::Timestamp) -> OwnerRecord<'_> {
    OwnerRecord {
        session: state.session_id.as_deref(),
        liveness: state.liveness(now),
        batch_active: None,
        released: state.status == LoopStatus::Interrupted,
        epoch: state.owner_epoch,
    }
}

pub fn writer<'a>(ctx: &'a Ctx, flags: &WriteFlags) -> Writer<'a> {
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

/// What legacy adoption did: notes to print first, and a legacy loop it left in place because
/// a live session still writes it.
#[derive(Default)]
pub struct Adoption {
    pub notes: Vec<String>,
    pub held: Option<(String, Loaded<LoopState>)>,
}

impl Adoption {
    /// The legacy loop left in place for `key`, if that is the key asked about.
    pub fn held_for(&self, key: &str) -> Option<&Loaded<LoopState>> {
        self.held.as_ref().filter(|(k, _)| k == key).map(|(_, l)| l)
    }
}

/// Adopts a legacy `.agentic/loop-state.json` onto its keyed file, under the locks of both.
///
/// The keyed file is written first and the legacy one removed second, so a crash in between
/// leaves both; the next run sees the keyed file equal to what adoption would write and only
/// removes the legacy one. A keyed file that differs wins, and the legacy file is archived
/// rather than deleted. An unreadable legacy file is reported and left alone, and so is one
/// that another session is still writing: moving it would lose that session's next write.
pub fn adopt_legacy(store: &FsStore, ctx: &Ctx) -> Result<Adoption, CommandError> {
    let mut adoption = Adoption::default();
    // Most projects have no legacy file; seeing that takes no lock.
    if !store.exists()? || std::fs::symlink_metadata(store.layout.legacy_loop_file()).is_err() {
        return Ok(adoption);
    }
    let _legacy_lock = store.lock(LockScope::LegacyLoop)?;
    let legacy = match store.read_legacy_loop() {
        Ok(None) => return Ok(adoption),
        Ok(Some(loaded)) => loaded,
        Err(e) => {
            adoption.notes.push(format!(
                "warning: legacy state skipped: {}",
                esc(&e.to_string())
            ));
            return Ok(adoption);
        }
    };
    if let Err(e) = legacy.writable() {
        adoption.notes.push(format!(
            "warning: legacy state skipped: {}",
            esc(&e.to_string())
        ));
        return Ok(adoption);
    }
    let mut adopted = legacy.state.clone();
    let key = legacy_key(&adopted);
    let legacy_name = store.layout.legacy_loop_file();
    // The ownership gate, whatever the status: the originating Stop hook marks the legacy file
    // `interrupted` at the end of every turn of a session that goes on working, so a recent
    // write by another session (or by no session, for a caller that has one) is live state.
    let mine = adopted.owner() == ctx.session();
    if !mine && is_live(ctx.now, adopted.liveness(ctx.now)) {
        adoption.notes.push(format!(
            "note: legacy {} is held by live session {} ({}); left in place",
            legacy_name.display(),
            esc_or(adopted.owner(), "(no session id)"),
            last_write(&adopted, ctx.now)
        ));
        adoption.held = Some((key, legacy));
        return Ok(adoption);
    }
    adopted.loop_key = Some(key.clone());
    adopted.schema_version = SCHEMA_VERSION;
    let _key_lock = store.lock(LockScope::Loop(&key))?;
    let note = match store.read_loop(&key) {
        Err(e) => format!(
            "warning: legacy state not adopted, its keyed file is unreadable: {}",
            esc(&e.to_string())
        ),
        Ok(Some(keyed)) if keyed.state == adopted => {
            store.remove_legacy_loop()?;
            format!(
                "note: finished adopting legacy {} onto {} (removed the leftover)",
                legacy_name.display(),
                loop_file_name(&key)
            )
        }
        Ok(Some(keyed))
            if keyed.state.status.is_terminal()
                && matches!(
                    gate(owner_record(&keyed.state, ctx.now), writer(ctx, &WriteFlags::default()), ctx.now, &loop_file_name(&key), "baton resume"),
                    GateOutcome::Refused(ref d) if d.rules() == ["gate.foreign-live-owner"]
                ) =>
        {
            // A finished loop that a live session still holds is that session's to clear.
            format!(
                "note: legacy {} not adopted yet: {} is finished but still held by live session {}",
                legacy_name.display(),
                loop_file_name(&key),
                esc_or(keyed.state.owner(), "(no session id)")
            )
        }
        Ok(Some(keyed)) if keyed.state.status.is_terminal() => {
            // Only a resumable (or live) keyed file wins; a finished one gives way.
            let archived = store.archive_loop(&key, ctx.now)?;
            store.write_loop(&key, &adopted)?;
            store.remove_legacy_loop()?;
            journal_adoption(
                store,
                ctx,
                &key,
                &adopted,
                Some(&archived),
                &mut adoption.notes,
            );
            format!(
                "note: adopted legacy {} onto {}; the finished keyed loop was moved to {}",
                legacy_name.display(),
                loop_file_name(&key),
                archived.display()
            )
        }
        Ok(Some(_)) => {
            let archived = store.archive_legacy_loop(ctx.now)?;
            format!(
                "note: {} already exists and wins over legacy {}; the legacy file was moved to {}",
                loop_file_name(&key),
                legacy_name.display(),
                archived.display()
            )
        }
        Ok(None) => {
            store.write_loop(&key, &adopted)?;
            store.remove_legacy_loop()?;
            journal_adoption(store, ctx, &key, &adopted, None, &mut adoption.notes);
            format!(
                "note: adopted legacy {} onto {}",
                legacy_name.display(),
                loop_file_name(&key)
            )
        }
    };
    adoption.notes.push(note);
    Ok(adoption)
}

/// The `adopt` event of a legacy loop adopted onto its keyed file, appended under the key's
/// lock; a failure is a note, like the rest of what adoption says.
fn journal_adoption(
    store: &FsStore,
    ctx: &Ctx,
    key: &str,
    adopted: &LoopState,
    archived: Option<&Path>,
    notes: &mut Vec<String>,
) {
    let event = journal::event(
        ctx,
        "adopt",
        Some(adopted.owner_epoch),
        json!({
            "from": LEGACY_LOOP_FILE,
            "ticket": adopted.ticket_id,
            "owner": adopted.session_id,
            "status": adopted.status.as_str(),
            "archived": archived.map(|p| p.display().to_string()),
        }),
    );
    if let Some(w) = journal::append(store, JournalTarget::Loop(key), &[event]) {
        notes.push(format!("warning: {w}"));
    }
}

/// The key a legacy loop is adopted under: from its `ticket_id`, else `session-<sid>`, else
/// `legacy`.
pub fn legacy_key(state: &LoopState) -> String {
    let ticket = state.ticket_id.clone().unwrap_or_default();
    let (key, source) = loop_key(ticket.as_bytes(), state.session_id.as_deref(), String::new);
    if source == KeySource::NoSession {
        "legacy".to_string()
    } else {
        key
    }
}

/// What is said of a ticket whose legacy `loop-state.json` another live session still writes:
/// `live` to a check, `refused` (exit 3) to a write.
pub fn legacy_held(ctx: &Ctx, held: &LoopState, verdict: &'static str, t: &str) -> Decision {
    let owner = esc_or(held.owner(), "(no session id)");
    Decision::new(
        verdict,
        Reason::new(
            "loop.legacy-held",
            format!(
                "session {owner} still writes the legacy {LEGACY_LOOP_FILE} for {t} ({}, {}): it is left in place",
                held.status.as_str(),
                last_write(held, ctx.now)
            ),
        ),
        Some(format!(
            "leave {t} to session {owner} (`baton loop show {t}`); once its last write is 10 minutes old, `baton resume {t}` adopts it"
        )),
    )
}

/// The batch is live while its owner works its tickets: a write or heartbeat by the batch's
/// owner to one of its tickets' loops refreshes the batch's `updated_at` too, so that another
/// session's `batch start` never takes a batch whose owner is busy on a ticket. Called after the
/// loop's write, under its lock (the loop's lock is always taken before the batch's). The loop's
/// write has happened by then, so a failure here is a warning, never the command's error.
pub fn keep_batch_live(store: &FsStore, ctx: &Ctx, target: &Target) -> Option<String> {
    refresh_batch(store, ctx, target)
        .err()
        .map(|e| format!("the batch's liveness was not refreshed: {}", e.message))
}

fn refresh_batch(store: &FsStore, ctx: &Ctx, target: &Target) -> Result<(), CommandError> {
    let Some(me) = ctx.session() else {
        return Ok(());
    };
    if std::fs::symlink_metadata(store.layout.batch_file()).is_err() {
        return Ok(());
    }
    let _batch = store.lock(LockScope::Batch)?;
    let Some(loaded) = store.read_batch()? else {
        return Ok(());
    };
    let mut batch = loaded.state;
    let ours = batch.is_active()
        && batch.owner() == Some(me)
        && batch.tickets.iter().any(|t| {
            t.ticket_id == target.raw || t.loop_key.as_deref() == Some(target.key.as_str())
        });
    if ours && loaded.access == baton_store::read::Access::ReadWrite {
        batch.touch(&baton_core::time::format_ts(ctx.now));
        store.write_batch(&batch)?;
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
    let adoption = adopt_legacy(&store, ctx)?;
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
            "loop.key-field-mismatch",
            format!("{was}; set to {} from its name", target.key),
        ));
        state.loop_key = Some(target.key.clone());
        changed = true;
    }
    let mut journal_warning = None;
    if changed {
        store.write_loop(&target.key, &state)?;
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
            journal_warning = journal::append(&store, JournalTarget::Loop(&target.key), &events);
        }
    }
    let batch_warning = changed
        .then(|| keep_batch_live(&store, ctx, &target))
        .flatten();
    let decision = Decision {
        verdict: "ok",
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
