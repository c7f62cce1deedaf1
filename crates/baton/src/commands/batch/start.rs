use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;

use clap::Args;
use serde_json::{Map, Value};

use crate::output::Report;
use baton_core::decide::batch::decide_batch_start;
use baton_core::decide::ownership::{GateOutcome, Writer, gate};
use baton_core::key::{batch_prefix, loop_key};
use baton_core::model::{BatchState, BatchTicket, SCHEMA_VERSION};
use baton_core::text::esc;
use baton_core::time::format_ts;
use baton_core::{Decision, Reason};
use baton_ops::batch::owner_record;
use baton_ops::env::Ctx;
use baton_ops::error::CommandError;
use baton_store::layout::BATCH_FILE;
use baton_store::{Expect, JournalTarget, LockScope, RecordKey, random_hex};

/// Start a batch of 2 or more tickets, owned by this session.
///
/// One batch per project root: refused (exit 3) while another session's batch is active and
/// live, and while a batch that records no owner session exists, in any status (`--force`
/// takes it over). A finished or stale batch is archived first.
#[derive(Debug, Args)]
pub struct StartArgs {
    /// The tickets, in the order to run them.
    #[arg(required = true, num_args = 1..)]
    tickets: Vec<OsString>,
    /// How the batch runs (recorded as `mode`).
    #[arg(long, default_value = "sequential")]
    mode: String,
    /// Take over a batch that records no owner session.
    #[arg(long)]
    force: bool,
}

pub fn cmd_batch_start(ctx: &Ctx, args: StartArgs) -> Result<Report, CommandError> {
    let keys: Vec<String> = args
        .tickets
        .iter()
        .map(|raw| loop_key(raw.as_bytes(), ctx.session(), || random_hex(4)).0)
        .collect();
    for (i, key) in keys.iter().enumerate() {
        if let Some(j) = keys[..i].iter().position(|k| k == key) {
            return Err(CommandError::usage(format!(
                "tickets {:?} and {:?} share the key {key}, so they would share one loop-state file",
                args.tickets[j].to_string_lossy(),
                args.tickets[i].to_string_lossy()
            ))
            .hint("list each ticket once, under ids that differ after sanitizing (`baton loop key <TICKET>`)"));
        }
    }
    if let Err(d) = decide_batch_start(None, args.tickets.len(), ctx.session(), ctx.now) {
        return Ok(Report::decision(&d));
    }
    let store = ctx.store()?;
    let _guard = store.lock(LockScope::Batch)?;
    let existing = store.read_batch()?;
    if let Some(existing) = &existing {
        existing.writable()?;
    }
    let old = existing.as_ref().map(|l| &l.state);
    if let Err(d) = decide_batch_start(old, args.tickets.len(), ctx.session(), ctx.now) {
        return Ok(Report::decision(&d));
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
            return Ok(Report::decision(&d));
        }
        let to = store.archive(&RecordKey::Batch, &Expect::read(existing.as_ref()), ctx.now)?;
        reasons.push(Reason::new(
            baton_core::Rule::BatchPreviousArchived,
            format!(
                "batch {} ({}) was moved to {}",
                esc(&old.batch_id),
                esc(&old.status),
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
        batch_id: batch_id.clone(),
        status: "active".into(),
        mode: Some(args.mode),
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
    store.write_batch(&state, &Expect::Absent)?;
    let start = baton_ops::journal::event(
        ctx,
        "start",
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
    let journal_warning = baton_ops::journal::append(&*store, JournalTarget::Batch, &[start]);
    let decision = Decision {
        verdict: baton_core::Verdict::Ok,
        reasons,
        next: baton_ops::batch::next_step(&state),
    };
    let report = Report::decision(&decision)
        .with("batch_id", batch_id.clone())
        .with("epoch", state.owner_epoch)
        .text_before(&format!(
            "started batch {batch_id} with {} tickets",
            state.tickets.len()
        ));
    let report = match journal_warning {
        Some(w) => report.warn(w),
        None => report,
    };
    Ok(super::with_session_warning(ctx, report))
}
