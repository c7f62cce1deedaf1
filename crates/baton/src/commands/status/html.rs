//! `baton status --html`: the work `baton status` lists, each with its history, drawn as one
//! timeline page (`baton_core::timeline`).

use std::io::IsTerminal;
use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use crate::error::{CommandError, ExitStatus};
use crate::output::Report;
use crate::view::{journal_line, ledger_events, ledger_line, shown};
use baton_core::decide::survey::{Call, Detail, SurveyVerdict};
use baton_core::key::sanitize;
use baton_core::ledger::parse_ledger;
use baton_core::packet::WorkKind;
use baton_core::run_id::RunId;
use baton_core::text::esc;
use baton_core::time::{age, human_age, parse_ts};
use baton_core::timeline::{EventIn, Label, LaneIn, build, render_html};
use baton_ops::env::Ctx;
use baton_ops::survey::{Work, survey};
use baton_store::{JournalTarget, StateStore};

pub fn cmd_html(ctx: &Ctx, out: Option<&Path>) -> Result<Report, CommandError> {
    let s = survey(ctx, &*ctx.store()?)?;
    let store = ctx.store()?;
    let mut warnings: Vec<String> = s
        .notes
        .iter()
        .map(|n| n.trim_start_matches("warning: ").to_string())
        .collect();
    let mut lanes = Vec::new();
    for w in crate::view::by_urgency(&s.work) {
        match history(&*store, w, &mut warnings) {
            Ok(Some(events)) => lanes.push(lane(ctx, w, events)),
            Ok(None) => {}
            Err(e) => {
                warnings.push(format!(
                    "the history of {} {} is unreadable, so its lane is empty: {}",
                    w.kind,
                    esc(&w.key),
                    esc(&e.message)
                ));
                lanes.push(lane(ctx, w, Vec::new()));
            }
        }
    }
    // Work whose state is gone (archived, pruned) keeps its journal: its lanes come last.
    match archived(ctx, &*store, &s.work, &mut warnings) {
        Ok(more) => lanes.extend(more),
        Err(e) => warnings.push(format!(
            "the journals of archived work could not be listed: {}",
            esc(&e.message)
        )),
    }
    // The guard of shared checkouts: who works where, and what it refused, on a lane of its own.
    match guard_lane(ctx, &*store) {
        Ok(Some(lane)) => lanes.push(lane),
        Ok(None) => {}
        Err(e) => warnings.push(format!(
            "the guard's journal is unreadable, so its lane is left out: {}",
            esc(&e.message)
        )),
    }
    // The accounts' windows: each breaker on a lane of its own.
    match baton_ops::window::ours(ctx, &*store) {
        Ok(book) => lanes.extend(book.iter().map(|b| window_lane(ctx, b))),
        Err(e) => warnings.push(format!(
            "the accounts' windows are unreadable, so their lanes are left out: {}",
            esc(&e.to_string())
        )),
    }
    let title = store
        .layout()
        .root
        .file_name()
        .map_or_else(|| "project".into(), |n| n.to_string_lossy().into_owned());
    let latest = lanes
        .iter()
        .flat_map(|l| l.events.iter().filter_map(|e| e.at))
        .max();
    if let Some(latest) = latest.filter(|t| *t > ctx.now) {
        warnings.push(format!(
            "an event is dated {}, after now ({}): a clock ahead, or BATON_NOW in the past; the page draws it after the now-line",
            baton_core::time::format_ts(latest),
            baton_core::time::format_ts(ctx.now)
        ));
    }
    let timeline = build(&title, lanes, ctx.now);
    let page = render_html(&timeline);
    let mut json = Page {
        path: None,
        html: None,
        lanes: timeline.lanes.len(),
        events: timeline.events,
        sessions: &timeline.sessions,
        bytes: page.len(),
    };
    let mut report = match out {
        Some(out) => {
            let path = ctx.dir.join(out);
            baton_store::atomic::replace_with_mode(&path, page.as_bytes(), 0o644).map_err(|e| {
                CommandError::new(
                    ExitStatus::Failure,
                    format!("cannot write the timeline to {}: {e}", path.display()),
                )
                .hint("pass `--out` a file in a directory you can write to")
            })?;
            let shown = path.display().to_string();
            let text = format!("{shown}\n");
            json.path = Some(shown);
            Report::of(ExitStatus::Success, &json, text).note(format!(
                "wrote the timeline of {} lane(s) and {} event(s) ({} KB); open it in a browser",
                timeline.lanes.len(),
                timeline.events,
                page.len().div_ceil(1024)
            ))
        }
        None => {
            json.html = Some(&page);
            let report = Report::of(ExitStatus::Success, &json, page.clone());
            if std::io::stdout().is_terminal() {
                report.note("`--out FILE` writes the page to a file to open in a browser")
            } else {
                report
            }
        }
    };
    for w in warnings {
        report = report.warn(w);
    }
    Ok(report)
}

/// The page under `--json`: where it was written, or the page itself; then what it draws.
#[derive(Debug, Serialize)]
struct Page<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    html: Option<&'a str>,
    lanes: usize,
    events: usize,
    sessions: &'a [String],
    /// The page's size.
    bytes: usize,
}

/// The events of one piece of work, oldest first; `None` for work without a history of its own
/// (the feature pointer).
fn history(
    store: &dyn StateStore,
    w: &Work,
    warnings: &mut Vec<String>,
) -> Result<Option<Vec<EventIn>>, CommandError> {
    let mut journal = |target: JournalTarget| -> Result<Vec<Value>, CommandError> {
        let journal = store.read_journal(target)?;
        if journal.truncated {
            warnings.push(format!(
                "the history of {} {} is long: its lane shows only its most recent events",
                w.kind,
                esc(&w.key)
            ));
        }
        Ok(journal.events)
    };
    let events: Vec<Value> = match w.kind {
        // The row names the ticket; its journal is named by the loop key derived from it.
        WorkKind::Loop => journal(JournalTarget::Loop(&sanitize(w.key.as_bytes())))?,
        WorkKind::Batch => journal(JournalTarget::Batch)?,
        WorkKind::Run => match RunId::parse(&w.key) {
            Ok(id) => journal(JournalTarget::Run(&id))?,
            Err(_) => Vec::new(),
        },
        WorkKind::Ledger => {
            let path = store.layout().root.join(&w.key).join("STATE.md");
            let Some(text) = baton_store::ledger::read(&path)? else {
                return Ok(Some(Vec::new()));
            };
            let mut events = events_in(ledger_events(&parse_ledger(&text)), |e| {
                ledger_line(e, &shown)
            });
            // The judge's verdicts on its claims, on the same lane.
            events.extend(events_in(
                store.read_journal(JournalTarget::Judge(&w.key))?.events,
                |e| crate::view::judge_line(e, &shown),
            ));
            // The originating protocol writes no time on its lines (the suffix is optional):
            // such a ledger is drawn at the file's last change rather than not at all.
            if !events.is_empty() && events.iter().all(|e| e.at.is_none()) {
                let changed = std::fs::metadata(&path)
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|t| jiff::Timestamp::try_from(t).ok());
                if let Some(changed) = changed {
                    for e in &mut events {
                        e.at = Some(changed);
                    }
                    warnings.push(format!(
                        "no line of {} carries a time: its {} event(s) are drawn at the file's last change, {}",
                        esc(&w.key),
                        events.len(),
                        baton_core::time::format_ts(changed)
                    ));
                }
            }
            return Ok(Some(events));
        }
        _ => return Ok(None),
    };
    Ok(Some(events_in(events, |e| journal_line(e, &shown))))
}

/// Lanes for the journals no surveyed work claims: loops archived by `resume fresh` or a new
/// `loop init`, a finished batch, pruned runs.
fn archived(
    ctx: &Ctx,
    store: &dyn StateStore,
    work: &[Work],
    warnings: &mut Vec<String>,
) -> Result<Vec<LaneIn>, CommandError> {
    let journals = store.list_journals()?;
    let has = |kind: WorkKind, key: &str| {
        work.iter().any(|w| {
            w.kind == kind
                && (w.key == key || (kind == WorkKind::Loop && sanitize(w.key.as_bytes()) == key))
        })
    };
    let mut rows = Vec::new();
    for key in journals.loops.iter().filter(|k| !has(WorkKind::Loop, k)) {
        rows.push((WorkKind::Loop, key.clone()));
    }
    if journals.batch && !work.iter().any(|w| w.kind == WorkKind::Batch) {
        rows.push((WorkKind::Batch, "batch".to_string()));
    }
    for id in journals
        .runs
        .iter()
        .filter(|id| !has(WorkKind::Run, id.as_str()))
    {
        rows.push((WorkKind::Run, id.to_string()));
    }
    let mut lanes = Vec::new();
    for (kind, key) in rows {
        let w = Work {
            kind,
            key: key.clone(),
            phase: String::new(),
            status: "no state".into(),
            owner: None,
            call: Call {
                detail: Some(Detail::Archived),
                ..Call::of(SurveyVerdict::Decided(baton_core::Verdict::None))
            },
            class: None,
            next: Some(format!(
                "`baton log {}` prints its history",
                baton_core::text::shell_quote(&key)
            )),
            item: None,
            aside: None,
        };
        match history(store, &w, warnings) {
            Ok(Some(events)) if !events.is_empty() => lanes.push(lane(ctx, &w, events)),
            Ok(_) => {}
            Err(e) => warnings.push(format!(
                "the history of {kind} {} is unreadable: {}",
                esc(&key),
                esc(&e.message)
            )),
        }
    }
    Ok(lanes)
}

/// The guard's lane (docs/guard.md): its refusals and allowances, labelled with the live
/// sessions of the repository's checkouts; none when it has neither.
fn guard_lane(ctx: &Ctx, store: &dyn StateStore) -> Result<Option<LaneIn>, CommandError> {
    let events = store.read_journal(JournalTarget::Guard)?.events;
    let checkouts = baton_ops::guard::live_checkouts(&ctx.dir, ctx.now);
    if events.is_empty() && checkouts.is_empty() {
        return Ok(None);
    }
    let refused = events.iter().filter(|e| e["event"] == "refused").count();
    let who: Vec<String> = checkouts
        .iter()
        .map(|c| {
            format!(
                "{} ({}) in {} on {}",
                crate::view::short_session(&esc(&c.session)),
                esc(&c.client),
                esc(&c.worktree),
                c.branch.as_deref().map_or("a detached HEAD", |b| b)
            )
        })
        .collect();
    Ok(Some(LaneIn {
        label: Label {
            kind: "guard".into(),
            key: "checkouts".into(),
            status: format!("{refused} refused"),
            verdict: String::new(),
            class: None,
            next: Some("`baton log guard` lists every refusal".into()),
            phase: if who.is_empty() {
                "no live session registered".into()
            } else {
                who.join("; ")
            },
            owner: None,
            owner_state: None,
            urgency: None,
            command: None,
        },
        live: !checkouts.is_empty(),
        last_write: None,
        events: events_in(events, |e| journal_line(e, &shown)),
    }))
}

/// An account's window (docs/window.md) as a lane: tripped, probed, open again, labelled with
/// its reset and who waits. Its events come from the breaker itself, which keeps them.
fn window_lane(ctx: &Ctx, b: &baton_core::breaker::Breaker) -> LaneIn {
    let reset = parse_ts(Some(&b.reset));
    let closed = reset.is_some_and(|r| r > ctx.now);
    let mut events = vec![serde_json::json!({
        "ts": b.opened,
        "event": "interrupt",
        "reason": "rate_limit",
        "detail": format!("tripped by {} on {}; resets {}", b.tripped_by.id, b.tripped_by.host, b.reset),
    })];
    if let Some(p) = &b.probe {
        events.push(serde_json::json!({
            "ts": p.by.since,
            "event": "probe",
            "detail": format!("{} on {} launches first", p.by.id, p.by.host),
        }));
        if let Some(ok) = &p.ok {
            events.push(serde_json::json!({
                "ts": ok,
                "event": "resume",
                "detail": "a turn ran without a limit: the waiters follow, staggered",
            }));
        }
    }
    let line = |e: &Value| {
        format!(
            "{}  {}  {}",
            e["ts"].as_str().unwrap_or(""),
            e["event"].as_str().unwrap_or(""),
            e["detail"].as_str().unwrap_or("")
        )
    };
    let waiting: Vec<&str> = b.waiters.iter().map(|w| w.id.as_str()).collect();
    LaneIn {
        label: Label {
            kind: "window".into(),
            key: format!("{} {}", b.label, b.window),
            status: match (closed, b.probe.as_ref().and_then(|p| p.ok.as_ref())) {
                (true, _) => "closed".into(),
                (false, Some(_)) => "open again".into(),
                (false, None) => "reset passed".into(),
            },
            verdict: String::new(),
            class: closed.then(|| "rate_limit".into()),
            next: Some(format!("`baton window check --client {}`", b.client)),
            phase: match (closed, waiting.is_empty()) {
                (true, true) => format!("closed until {}", b.reset),
                (true, false) => {
                    format!("closed until {}; waiting: {}", b.reset, waiting.join(", "))
                }
                (false, _) => format!("reset {}; waiting: {}", b.reset, waiting.len()),
            },
            owner: None,
            owner_state: None,
            urgency: None,
            command: None,
        },
        live: closed,
        last_write: None,
        events: events
            .into_iter()
            .map(|e| EventIn {
                at: parse_ts(e["ts"].as_str()),
                line: line(&e),
                fields: e,
            })
            .collect(),
    }
}

/// Events as the timeline takes them, each with the line `baton log` prints for it.
fn events_in(events: Vec<Value>, line: fn(&Value) -> String) -> Vec<EventIn> {
    events
        .into_iter()
        .map(|e| EventIn {
            at: parse_ts(e["ts"].as_str()),
            line: line(&e),
            fields: e,
        })
        .collect()
}

fn lane(ctx: &Ctx, w: &Work, events: Vec<EventIn>) -> LaneIn {
    let owner = w.owner.as_ref();
    // As `baton status` shows the owner: live or stale, and the age of its last write.
    let owner_state = owner.map(|o| {
        let state = if o.live { "live" } else { "stale" };
        match parse_ts(o.last_write.as_deref()) {
            Some(t) => format!("{state} {}", human_age(age(ctx.now, t))),
            None => state.to_string(),
        }
    });
    LaneIn {
        label: Label {
            kind: w.kind.to_string(),
            key: w.key.clone(),
            status: w.status.clone(),
            verdict: w.shown_verdict(),
            class: w.class.map(|c| c.as_str().to_string()),
            next: crate::view::row_next(w),
            phase: w.phase.clone(),
            owner: owner.and_then(|o| o.session.clone()),
            owner_state,
            urgency: w.item.as_ref().map(|i| i.urgency),
            command: w.item.as_ref().and_then(|i| i.accept.clone()),
        },
        live: w.owner.as_ref().is_some_and(|o| o.live),
        last_write: w
            .owner
            .as_ref()
            .and_then(|o| parse_ts(o.last_write.as_deref())),
        events,
    }
}
