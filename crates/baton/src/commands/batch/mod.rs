//! `baton batch`: the cursor over a run of 2 or more tickets (`.agentic/batch-state.json`).
//! Each ticket keeps its own loop-state; the batch only says which ticket is next.

mod finish;
mod resume;
mod show;

mod start;
mod ticket;

use clap::Subcommand;

use crate::output::Report;
use baton_core::decide::loop_write::REFUSED;
use baton_core::decide::ownership::{GateOutcome, OwnerRecord, Writer, gate};
use baton_core::model::BatchState;
use baton_core::text::esc;
use baton_core::time::format_ts;
use baton_ops::batch::missing_batch;
use baton_ops::env::Ctx;
use baton_ops::error::CommandError;
use baton_ops::ticket_loop::no_session_warning;
use baton_store::layout::BATCH_FILE;
use baton_store::{JournalTarget, LockScope, StateStore};

/// Run several tickets as one batch, one per project root.
#[derive(Debug, Subcommand)]
pub enum BatchCommand {
    Start(start::StartArgs),
    Ticket(ticket::TicketArgs),
    Show(show::ShowArgs),
    Resume(resume::ResumeArgs),
    Finish(finish::FinishArgs),
}

pub fn dispatch(ctx: &Ctx, cmd: BatchCommand) -> Result<Report, CommandError> {
    match cmd {
        BatchCommand::Start(args) => start::cmd_batch_start(ctx, args),
        BatchCommand::Ticket(args) => ticket::cmd_batch_ticket(ctx, args),
        BatchCommand::Show(args) => show::cmd_batch_show(ctx, args),
        BatchCommand::Resume(args) => resume::cmd_batch_resume(ctx, args),
        BatchCommand::Finish(args) => finish::cmd_batch_finish(ctx, args),
    }
}

pub fn owner_record(state: &BatchState, now: jiff::Timestamp) -> OwnerRecord<'_> {
    OwnerRecord {
        session: state.session_id.as_deref(),
        liveness: state.liveness(now),
        batch_active: Some(state.is_active()),
        released: false,
        epoch: state.owner_epoch,
    }
}

/// The ownership options of every batch write.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct BatchFlags {
    /// Take over a batch that records no owner session.
    #[arg(long)]
    pub force: bool,
    /// The owner epoch this caller holds (printed by `batch start` and `batch resume`); a write
    /// holding an older epoch than the file's is refused.
    #[arg(long, value_name = "N")]
    pub epoch: Option<u64>,
}

/// What a batch write is, for the status rules of `update`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BatchWrite {
    /// `batch ticket`: the batch must be running (its own owner's interrupted batch runs on).
    Ticket,
    /// `batch resume`: an interrupted, paused, stalled or stale batch runs again.
    Resume,
    /// `batch finish`: ends a batch in any status but a finished one.
    Finish,
}

/// The shared write path of `batch ticket`, `batch resume` and `batch finish`: under the
/// batch's lock, read, gate, check the status, apply, write, and journal: `apply` returns the
/// message and the details of the `event` appended to the batch's journal (after a `takeover`
/// event when the gate handed the batch to this session).
///
/// The originating Stop hook marks its own session's batch `interrupted` at the end of every
/// turn, so that session's next write simply runs on. A batch interrupted by another session,
/// paused by the operator or stalled runs again only through `batch resume`.
fn update(
    ctx: &Ctx,
    flags: &BatchFlags,
    kind: BatchWrite,
    event: &'static str,
    apply: impl FnOnce(&mut BatchState) -> Result<(String, serde_json::Value), CommandError>,
) -> Result<Report, CommandError> {
    let store: Box<dyn StateStore> = ctx.store()?;
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
        GateOutcome::Refused(d) => return Ok(Report::decision(&d)),
    }
    let took_over = !reasons.is_empty();
    let status = state.status.clone();
    let id = esc(&state.batch_id).into_owned();
    let refuse = |message: String, next: &str| {
        Ok(Report::decision(&baton_core::Decision::new(
            REFUSED,
            baton_core::Reason::new(baton_core::Rule::BatchNotRunning, message),
            Some(next.to_string()),
        )))
    };
    match (kind, status.as_str()) {
        (_, "complete" | "abandoned") | (BatchWrite::Finish, "stalled") => {
            return refuse(
                format!("batch {id} is {}: it has ended", esc(&status)),
                "start a new batch with `baton batch start <T1> <T2>…`",
            );
        }
        (BatchWrite::Ticket, "interrupted") if !took_over => resume_batch(&mut state, &mut reasons),
        (BatchWrite::Ticket, "interrupted" | "paused" | "stalled") => {
            return refuse(
                format!(
                    "batch {id} is {}: resume it before its tickets move",
                    esc(&status)
                ),
                "resume it with `baton batch resume` (see it with `baton batch show`)",
            );
        }
        (BatchWrite::Resume, "interrupted" | "paused" | "stalled") => {
            resume_batch(&mut state, &mut reasons)
        }
        _ => {}
    }
    let (message, details) = apply(&mut state)?;
    state.touch(&format_ts(ctx.now));
    store.write_batch(&state, &loaded.expect())?;
    let mut journal_warning = None;
    if baton_ops::journal::batch_changed(&loaded.state, &state) {
        let mut events = Vec::new();
        if took_over {
            events.push(baton_ops::journal::takeover(
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
            if status != state.status && event != "finish" {
                obj.insert("from_status".into(), status.clone().into());
            }
        }
        events.push(baton_ops::journal::event(
            ctx,
            event,
            Some(state.owner_epoch),
            details,
        ));
        journal_warning = baton_ops::journal::append(&*store, JournalTarget::Batch, &events);
    }
    let decision = baton_core::Decision {
        verdict: baton_core::Verdict::Ok,
        reasons,
        next: baton_ops::batch::next_step(&state),
    };
    let report = Report::decision(&decision)
        .with("batch_id", state.batch_id.clone())
        .with("status", state.status.clone())
        .with("epoch", state.owner_epoch)
        .text_before(&message);
    let report = match journal_warning {
        Some(w) => report.warn(w),
        None => report,
    };
    Ok(with_session_warning(ctx, report))
}

/// A batch written with no session id says that nothing protects it.
fn with_session_warning(ctx: &Ctx, report: Report) -> Report {
    match no_session_warning(ctx, "batch") {
        Some(w) => report.warn(w),
        None => report,
    }
}

/// The batch runs again: `active`, its interrupt and pause marks cleared, its wall clock and
/// `replan_log` kept (the originating resume's last step).
fn resume_batch(state: &mut BatchState, reasons: &mut Vec<baton_core::Reason>) {
    reasons.push(baton_core::Reason::new(
        baton_core::Rule::BatchResumed,
        format!(
            "batch {} was {}; it is active again",
            esc(&state.batch_id),
            esc(&state.status)
        ),
    ));
    state.status = "active".into();
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
