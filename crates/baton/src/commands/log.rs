//! `baton log`: the history of one piece of work, oldest first.

use std::ffi::OsString;
use std::path::Path;

use clap::Args;
use serde_json::json;

use crate::error::CommandError;
use crate::output::Report;
use baton_core::key::KeySource;
use baton_core::ledger::parse_ledger;
use baton_core::run_id::{RunId, RunTarget};
use baton_ops::env::Ctx;
use baton_ops::ledgers::Plan;
use baton_ops::ticket_loop::Target;
use baton_store::{Journal, JournalTarget};

/// Show the history of a loop, the batch, a run, a plan ledger or the guard, oldest first.
///
/// One line per event with its time: every transition, interrupt, takeover (with both owners
/// and both epochs), resume and gate result.
///
/// TARGET is read as, in this order: `batch` (or a batch id) for the project's batch; `guard`
/// for the guard of shared checkouts (each git command it refused, each let through by a
/// person: docs/guard.md); a run id
/// (16 hex digits, or a legacy `YYYYMMDD-HHMMSS`) for that run; a plan directory holding a
/// `STATE.md`, or that `STATE.md`, for the ledger's own events in file order, with the judge's
/// verdicts on its claims at their times (each claim, refused stop and claim handed to a
/// person: docs/judge.md); anything else is a ticket id, read through its loop key as `baton
/// loop` reads it.
///
/// Loops, the batch and runs keep their history in `.agentic/journal/`, one append-only file
/// each, written with every change of their state (heartbeats are not history). The journal
/// outlives the state: `resume fresh`, archiving and `run prune` leave it in place. A line
/// that is not an event (a tail torn by a crash) is skipped and counted, never fatal.
///
/// A target with no history prints `no history for …` and exits 0.
#[derive(Debug, Args)]
pub struct LogArgs {
    /// What to show: `batch`, `guard`, a run id, a plan directory (or its `STATE.md`), or a
    /// ticket id.
    target: OsString,
    /// Show only the last N events.
    #[arg(long, value_name = "N")]
    limit: Option<usize>,
}

/// Which history TARGET names.
enum Resolved {
    Loop(Target),
    Batch,
    Run(RunId),
    Ledger(Plan),
    Guard,
}

pub fn cmd_log(ctx: &Ctx, args: LogArgs) -> Result<Report, CommandError> {
    let raw = args.target.to_string_lossy().into_owned();
    let resolved = resolve(ctx, &args.target)?;
    let (kind, path, journal) = match &resolved {
        Resolved::Ledger(plan) => {
            let text = baton_store::ledger::read(&plan.ledger)?
                .ok_or_else(|| baton_ops::ledgers::missing(plan))?;
            let ledger = parse_ledger(&text);
            let mut events = crate::view::ledger_events(&ledger);
            // The judge's verdicts on the plan's claims, each at its time among the lines.
            let judged = ctx
                .store()?
                .read_journal(JournalTarget::Judge(&plan.rel))?
                .events;
            merge_by_time(&mut events, judged);
            let journal = Journal {
                events,
                skipped: ledger.bad.len(),
                truncated: false,
            };
            ("ledger", plan.ledger.clone(), journal)
        }
        other => {
            let store = ctx.store()?;
            let (kind, target) = match other {
                Resolved::Loop(t) => ("loop", JournalTarget::Loop(&t.key)),
                Resolved::Batch => ("batch", JournalTarget::Batch),
                Resolved::Run(id) => ("run", JournalTarget::Run(id)),
                Resolved::Guard => ("guard", JournalTarget::Guard),
                Resolved::Ledger(_) => unreachable!("handled above"),
            };
            let path = store.journal_shown(target)?;
            let mut journal = store.read_journal(target)?;
            // A loop's claims, judged (docs/judge.md), among its events.
            if let Resolved::Loop(t) = other {
                let judged = store
                    .read_journal(JournalTarget::Judge(&format!("loop/{}", t.key)))?
                    .events;
                merge_by_time(&mut journal.events, judged);
            }
            (kind, path, journal)
        }
    };
    let Journal {
        mut events,
        skipped,
        truncated,
    } = journal;
    let total = events.len();
    if let Some(limit) = args.limit {
        events.drain(..total.saturating_sub(limit));
    }
    let shown = match &resolved {
        Resolved::Loop(t) => format!("{} (loop {})", t.shown(), t.key),
        Resolved::Batch => "the batch".to_string(),
        Resolved::Guard => "the guard".to_string(),
        Resolved::Run(id) => format!("run {id}"),
        Resolved::Ledger(plan) => plan.ledger.display().to_string(),
    };
    let mut text = String::new();
    if total == 0 {
        text.push_str(&format!("no history for {shown}\n"));
    }
    let when = |ts: &serde_json::Value| crate::view::local_time(ctx, ts);
    for event in &events {
        text.push_str(
            &if event.get("work").is_some() && event.get("verdict").is_some() {
                crate::view::judge_line(event, &when)
            } else if kind == "ledger" {
                crate::view::ledger_line(event, &when)
            } else {
                crate::view::journal_line(event, &when)
            },
        );
        text.push('\n');
    }
    let mut report = Report::ok(
        json!({
            "target": raw,
            "kind": kind,
            "key": match &resolved { Resolved::Loop(t) => Some(t.key.clone()), _ => None },
            "path": path.display().to_string(),
            "events": events,
            "total": total,
            "skipped": skipped,
            "truncated": truncated,
        }),
        text,
    );
    if skipped > 0 {
        report = report.warn(format!(
            "{skipped} line(s) of {} are not events (a tail torn by a crash, or a damaged line) and were skipped",
            path.display()
        ));
    }
    if truncated {
        report = report.warn(format!(
            "{} is long: only its most recent events were read",
            path.display()
        ));
    }
    Ok(report)
}

/// Puts each of `later` (in time order) after the last of `events` not later than it, or at the
/// end when none has a time to compare.
fn merge_by_time(events: &mut Vec<serde_json::Value>, later: Vec<serde_json::Value>) {
    let at = |e: &serde_json::Value| baton_core::time::parse_ts(e["ts"].as_str());
    for event in later {
        let place = at(&event)
            .and_then(|t| events.iter().rposition(|e| at(e).is_some_and(|a| a <= t)))
            .map_or(events.len(), |i| i + 1);
        events.insert(place, event);
    }
}

fn resolve(ctx: &Ctx, raw: &std::ffi::OsStr) -> Result<Resolved, CommandError> {
    let text = raw.to_str();
    if text == Some("batch") {
        return Ok(Resolved::Batch);
    }
    if text == Some("guard") {
        return Ok(Resolved::Guard);
    }
    if let Some(t) = text
        && let Ok(target) = RunTarget::parse(t)
    {
        return Ok(match target {
            RunTarget::Run(id) => Resolved::Run(id),
            RunTarget::Batch(_) => Resolved::Batch,
        });
    }
    // A path to a ledger: the plan directory holding `STATE.md`, or the file itself.
    let path = ctx.dir.join(Path::new(raw));
    let plan_dir = if path.is_dir() && path.join("STATE.md").is_file() {
        Some(path)
    } else if path.is_file() && path.file_name().is_some_and(|n| n == "STATE.md") {
        path.parent().map(Path::to_path_buf)
    } else {
        None
    };
    if let Some(dir) = plan_dir {
        return Ok(Resolved::Ledger(Plan::resolve(ctx, &dir)?));
    }
    let target = Target::derive(ctx, raw);
    if target.source == KeySource::NoSession {
        return Err(CommandError::usage(
            "neither a ticket id nor a session id gives a loop key, so there is no loop to show",
        )
        .hint("pass a ticket id (`baton log PROJ-123`), `batch`, a run id or a plan directory"));
    }
    Ok(Resolved::Loop(target))
}
