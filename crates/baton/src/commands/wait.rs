use std::ffi::{OsStr, OsString};
use std::io::IsTerminal;

use clap::Args;
use jiff::{SignedDuration, Timestamp};
use serde::Serialize;

use crate::args::parse_when;
use crate::error::{CommandError, ExitStatus};
use crate::output::Report;
use baton_core::Decision;
use baton_core::decide::loop_resume::ResumeDecision;
use baton_core::decide::wait::{Wait, combine, decide_wait, survey_wait};
use baton_core::text::esc;
use baton_core::time::{format_ts, human_age, parse_ts, time_left};
use baton_ops::env::Ctx;
use baton_ops::survey::{Work, survey};
use baton_ops::ticket_loop::{Target, gather};
use baton_ops::window::Closed;

/// Say when interrupted work can resume, and with `--sleep` wait until then.
///
/// With a ticket, that ticket's loop. Without one, every piece of work `baton resume` (no
/// argument) finds in the project (the feature, loops, the batch, runs, ledgers), each judged
/// as on its own, then together: ready when any can resume now, else a wait until the earliest
/// rate limit resets, else a person's decision if any needs one, else taken over if another
/// live session runs any, else nothing to resume.
///
/// Exit 0 when it is time (or nothing is left to resume), 3 when another live session runs the
/// work, 4 when a person must decide first (partial work in the tree, no rule covers it, or the
/// limit resets beyond `--max`). Without `--sleep` it says when, and exits 0 for a wait still
/// to come.
#[derive(Debug, Args)]
pub struct WaitArgs {
    /// The ticket id of the loop to wait for. Without it, every piece of work `baton resume`
    /// (no argument) lists: the feature, loops, the batch, runs and ledgers.
    ticket: Option<OsString>,
    /// Wait no longer than this: a delay such as `30m` or `2h`, or an RFC 3339 time. A limit
    /// that resets later is for a person to decide (exit 4).
    #[arg(long, value_name = "WHEN")]
    max: Option<String>,
    /// Sleep while the verdict is a wait for a rate limit to reset, reading the state again
    /// every few seconds: the sleep ends when the work can resume, or early when it is taken
    /// over (exit 3) or a person must decide (exit 4). Without a ticket, it ends once no piece
    /// of work waits any more: one can resume, or none is left waiting. With `BATON_NOW` set,
    /// the clock moves on without sleeping.
    #[arg(long)]
    sleep: bool,
}

/// How often a sleeping wait reads the state again.
const RECHECK: SignedDuration = SignedDuration::from_secs(5);

pub fn cmd_wait(ctx: &Ctx, args: WaitArgs) -> Result<Report, CommandError> {
    let deadline = args
        .max
        .as_deref()
        .map(|raw| parse_when(ctx.now, raw, "--max"))
        .transpose()?;
    match &args.ticket {
        Some(ticket) => {
            let shown = esc(&ticket.to_string_lossy()).into_owned();
            let (wait, d, now) = sleep_through(
                ctx,
                args.sleep,
                |at| {
                    let d = gather(at, &*at.store()?, Target::derive(at, ticket))?.decision;
                    let after = parse_ts(d.resume_after.as_deref());
                    let wait = decide_wait(d.decision.verdict, d.mode, after, at.now, deadline);
                    let (wait, window) = held(at, wait, deadline)?;
                    Ok((wait, (d, window)))
                },
                |(_, window), t| match window {
                    Some(w) => window_line(ctx, w),
                    None => format!("waiting for {shown}: the limit resets at {}", ctx.shown(t)),
                },
            )?;
            let (d, window) = d;
            let r = report(ctx, ticket, wait, &d, (ctx.now, now), deadline);
            Ok(with_window(ctx, r, window.as_ref(), now))
        }
        None => {
            let (wait, all, now) = sleep_through(
                ctx,
                args.sleep,
                |at| {
                    let all = every_piece(at, deadline)?;
                    let wait = combine(all.pieces.iter().map(|p| p.wait));
                    let (wait, window) = held(at, wait, deadline)?;
                    Ok((wait, (all, window)))
                },
                |(all, window): &(All, Option<Closed>), t| match (window, all.first(Wait::Until(t)))
                {
                    (Some(w), _) => window_line(ctx, w),
                    (None, p) => match p {
                        Some(p) => format!(
                            "waiting: the earliest limit resets at {} ({} {})",
                            ctx.shown(t),
                            p.kind,
                            esc(&p.key)
                        ),
                        None => format!("waiting: the earliest limit resets at {}", ctx.shown(t)),
                    },
                },
            )?;
            let (all, window) = all;
            let r = report_all(ctx, wait, &all, (ctx.now, now), deadline);
            Ok(with_window(ctx, r, window.as_ref(), now))
        }
    }
}

/// The verdict once the accounts' windows are counted: while a window is closed, nothing an
/// agent would run can (work to resume, or none: a script's next launch), so the wait lasts
/// until its reset at least; past `--max`, a person decides. A verdict of another session's or
/// a person's stands.
fn held(
    at: &Ctx,
    wait: Wait,
    deadline: Option<Timestamp>,
) -> Result<(Wait, Option<Closed>), CommandError> {
    if matches!(wait, Wait::TakenOver | Wait::HumanFirst) {
        return Ok((wait, None));
    }
    // Inside an agent, its own client's windows; a script's wait, every client's.
    let mut closed = baton_ops::window::closed(at, &*at.store()?)?;
    if let Some((_, client)) = baton_store::process::agent_ancestor_named() {
        closed.retain(|w| w.client == client);
    }
    let Some(latest) = closed.into_iter().max_by_key(|c| c.until) else {
        return Ok((wait, None));
    };
    if matches!(wait, Wait::Until(t) if t >= latest.until) {
        return Ok((wait, None));
    }
    if deadline.is_some_and(|max| latest.until > max) {
        return Ok((Wait::HumanFirst, Some(latest)));
    }
    Ok((Wait::Until(latest.until), Some(latest)))
}

fn window_line(ctx: &Ctx, w: &Closed) -> String {
    format!(
        "the {} window of {} is closed until {}",
        w.window,
        w.label,
        ctx.shown(w.until)
    )
}

/// `report` with the closed window that held the verdict first in its text, and under
/// `--json` as `window`.
fn with_window(ctx: &Ctx, report: Report, window: Option<&Closed>, now: Timestamp) -> Report {
    let Some(w) = window else {
        return report;
    };
    let line = format!(
        "{}, in {}: an agent launched before then is refused by its API (`baton window check --client {}`)",
        window_line(ctx, w),
        human_age(w.until.duration_since(now)),
        w.client.as_str()
    );
    let mut report = report.with(
        "window",
        serde_json::json!({
            "client": w.client.as_str(),
            "account": w.label,
            "window": w.window,
            "until": format_ts(w.until),
        }),
    );
    // The window's line takes the headline's place; the work's own lines follow.
    let rest = report.text.split_once('\n').map_or("", |(_, rest)| rest);
    report.text = format!("{line}\n{rest}");
    report
}

/// Decides with `check` on the state as it is at each moment; with `sleep`, sleeps while the
/// verdict is a wait for a reset, reading the state again every `RECHECK` (on the fake clock
/// of `BATON_NOW`, moving the clock to the reset instead), with a countdown on a terminal's
/// stderr. Returns the last verdict, what it was decided on, and the time then.
fn sleep_through<T>(
    ctx: &Ctx,
    sleep: bool,
    mut check: impl FnMut(&Ctx) -> Result<(Wait, T), CommandError>,
    waiting: impl Fn(&T, Timestamp) -> String,
) -> Result<(Wait, T, Timestamp), CommandError> {
    let fake_clock = ctx.fixed_clock;
    let progress = sleep && std::io::stderr().is_terminal();
    let mut now = ctx.now;
    loop {
        let mut at = ctx.clone();
        at.now = now;
        // The state is read afresh each time, its locks released before any sleep.
        let (wait, facts) = check(&at)?;
        match wait {
            Wait::Until(t) if sleep => {
                let left = t.duration_since(now);
                if progress {
                    // `\x1b[K` clears what a longer line before left.
                    crate::output::to_stderr(&format!(
                        "\r{}, in {}\x1b[K",
                        waiting(&facts, t),
                        time_left(left)
                    ));
                }
                if fake_clock {
                    now = t;
                } else {
                    // A short sleep, then the clock read again: the wait is measured in
                    // wall-clock time, so a machine suspended past the reset ends it on waking.
                    let step = left.clamp(SignedDuration::from_millis(10), RECHECK);
                    std::thread::sleep(step.unsigned_abs());
                    now = ctx.clock()?;
                }
            }
            _ => {
                if progress {
                    crate::output::to_stderr("\n");
                }
                return Ok((wait, facts, now));
            }
        }
    }
}

fn status_of(wait: Wait) -> ExitStatus {
    match wait.exit_code() {
        3 => ExitStatus::Refused,
        4 => ExitStatus::AskHuman,
        _ => ExitStatus::Success,
    }
}

fn report(
    ctx: &Ctx,
    ticket: &OsStr,
    wait: Wait,
    d: &ResumeDecision,
    (started, now): (Timestamp, Timestamp),
    deadline: Option<Timestamp>,
) -> Report {
    let shown = esc(&ticket.to_string_lossy()).into_owned();
    let mut why: Vec<String> = d
        .decision
        .reasons
        .iter()
        .map(crate::output::reason_line)
        .collect();
    let after = parse_ts(d.resume_after.as_deref());
    if let (Wait::HumanFirst, Some(t), Some(max)) = (wait, after, deadline)
        && t > max
    {
        why.push(format!(
            "  wait.beyond-max: the limit resets at {}, after the --max of {}",
            ctx.shown(t),
            ctx.shown(max)
        ));
    }
    let accept = d.accept.clone().or_else(|| d.decision.next.clone());
    let headline = match wait {
        Wait::Ready => format!("{shown}: it can resume now"),
        Wait::Nothing => format!("{shown}: nothing to resume"),
        Wait::Until(t) => format!(
            "{shown}: the rate limit resets at {}, in {}",
            ctx.shown(t),
            human_age(t.duration_since(now))
        ),
        Wait::TakenOver => format!("{shown}: another live session runs it"),
        Wait::HumanFirst => format!("{shown}: a person must decide before it resumes"),
    };
    let mut text = format!("{headline}\n{}", why.join("\n"));
    if let Some(next) = accept.as_deref().filter(|_| wait != Wait::Nothing) {
        text.push_str(&format!("\nnext: {next}"));
    }
    let json = OneJson {
        verdict: wait.as_str(),
        ticket: ticket.to_string_lossy(),
        until: until(wait),
        waited_secs: now.duration_since(started).as_secs(),
        resume: &d.decision,
        next: accept,
    };
    Report::of(status_of(wait), &json, text)
}

/// `baton wait <TICKET>` under `--json`.
#[derive(Debug, Serialize)]
struct OneJson<'a> {
    verdict: &'static str,
    ticket: std::borrow::Cow<'a, str>,
    until: Option<String>,
    waited_secs: i64,
    /// The loop's own resume decision.
    resume: &'a Decision,
    /// Its accept command, else its next step.
    next: Option<String>,
}

/// `baton wait` with no ticket under `--json`: the verdict over every piece, then each.
#[derive(Debug, Serialize)]
struct AllJson<'a> {
    verdict: &'static str,
    until: Option<String>,
    waited_secs: i64,
    items: Vec<PieceJson<'a>>,
}

/// One piece of work under `--json`.
#[derive(Debug, Serialize)]
struct PieceJson<'a> {
    kind: baton_core::packet::WorkKind,
    key: &'a str,
    verdict: &'static str,
    until: Option<String>,
    resets_at: Option<String>,
    /// The verdict `baton resume` (no argument) gives it.
    resume: &'a str,
    next: Option<&'a str>,
}

fn until(wait: Wait) -> Option<String> {
    match wait {
        Wait::Until(t) => Some(format_ts(t)),
        _ => None,
    }
}

/// One piece of work, judged as `baton wait` judges it.
struct Piece {
    kind: baton_core::packet::WorkKind,
    key: String,
    /// The verdict `baton resume` (no argument) gives it.
    resume: String,
    wait: Wait,
    /// When its rate limit resets, while that is still to come.
    resets: Option<Timestamp>,
    next: Option<String>,
}

/// Every piece of work in the project, and the survey's warnings.
struct All {
    pieces: Vec<Piece>,
    notes: Vec<String>,
}

impl All {
    /// The first piece with this verdict.
    fn first(&self, wait: Wait) -> Option<&Piece> {
        self.pieces.iter().find(|p| p.wait == wait)
    }
}

/// What `baton resume` (no argument) finds, each piece with its wait: a loop's as
/// `baton wait <TICKET>` gives it (its resume verdict, mode and `resume_after`), anything else
/// by its row in the survey ([`survey_wait`]: finished is nothing, this session's is ready,
/// another live session's is taken over, another session's quiet work (not offered here) is nothing of this session's, degraded or a delegate's timeout is for a person,
/// the feature's rate limit waits for its recorded reset, anything else interrupted and
/// resumable is ready).
fn every_piece(ctx: &Ctx, deadline: Option<Timestamp>) -> Result<All, CommandError> {
    let s = survey(ctx, &*ctx.store()?)?;
    let mut pieces = Vec::with_capacity(s.work.len());
    // In the survey's order of kinds, keys in natural order (T-2 before T-10).
    let mut kinds = Vec::new();
    for w in &s.work {
        if !kinds.contains(&w.kind) {
            kinds.push(w.kind);
        }
    }
    let mut work: Vec<&Work> = s.work.iter().collect();
    work.sort_by_cached_key(|w| {
        (
            kinds.iter().position(|k| *k == w.kind),
            baton_core::text::natural_key(&w.key),
        )
    });
    for w in work {
        // A quiet loop of another session is not this session's to wait for.
        pieces.push(if w.kind == "loop" && w.aside.is_none() {
            a_loop(ctx, w, deadline)?
        } else {
            // The packet ranks a person's decision or a degraded state first: urgency 0.
            let degraded = w.item.as_ref().is_some_and(|i| i.urgency == 0);
            // The feature's rate limit keeps its reset beside the pauses; nothing else that is
            // not a loop records one.
            let resets = (w.kind == baton_core::packet::WorkKind::Feature)
                .then(|| s.pause.as_ref()?.feature_interrupt.as_ref()?.resume_after())
                .flatten();
            let wait = survey_wait(w.call.verdict, w.class, degraded, resets, ctx.now, deadline);
            Piece {
                kind: w.kind,
                key: w.key.clone(),
                resume: w.shown_verdict(),
                wait,
                resets: match wait {
                    Wait::Until(t) => Some(t),
                    _ => None,
                },
                next: w
                    .item
                    .as_ref()
                    .and_then(|i| i.accept.clone())
                    .or_else(|| crate::view::row_next(w)),
            }
        });
    }
    Ok(All {
        pieces,
        notes: s.notes,
    })
}

/// A loop of the survey, decided as `baton wait <TICKET>` decides it: under its lock, released
/// when this returns.
fn a_loop(ctx: &Ctx, w: &Work, deadline: Option<Timestamp>) -> Result<Piece, CommandError> {
    let d = gather(ctx, &*ctx.store()?, Target::derive(ctx, OsStr::new(&w.key)))?.decision;
    let after = parse_ts(d.resume_after.as_deref());
    Ok(Piece {
        kind: w.kind,
        key: w.key.clone(),
        resume: w.shown_verdict(),
        wait: decide_wait(d.decision.verdict, d.mode, after, ctx.now, deadline),
        resets: after.filter(|t| *t > ctx.now),
        next: d.accept.or(d.decision.next),
    })
}

fn report_all(
    ctx: &Ctx,
    wait: Wait,
    all: &All,
    (started, now): (Timestamp, Timestamp),
    deadline: Option<Timestamp>,
) -> Report {
    let named = |p: &Piece| format!("{} {}", p.kind, esc(&p.key));
    let deciding = all.first(wait).map(named).unwrap_or_default();
    let headline = match wait {
        Wait::Ready => {
            let more = all.pieces.iter().filter(|p| p.wait == Wait::Ready).count() - 1;
            let more = if more > 0 {
                format!(" (and {more} more)")
            } else {
                String::new()
            };
            format!("work can resume now: {deciding}{more}")
        }
        Wait::Until(t) => format!(
            "the earliest rate limit resets at {}, in {}: {deciding}",
            ctx.shown(t),
            human_age(t.duration_since(now))
        ),
        Wait::HumanFirst => format!("a person must decide before the work resumes: {deciding}"),
        Wait::TakenOver => format!("another live session runs the work: {deciding}"),
        Wait::Nothing if all.pieces.is_empty() => {
            "nothing in this project to resume: no feature, loop, batch, run or ledger".into()
        }
        Wait::Nothing => "nothing to resume".into(),
    };
    let mut text = format!("{headline}\n");
    for p in &all.pieces {
        let mut line = format!("  {}: {}", named(p), p.wait.as_str());
        if let Some(t) = p.resets {
            line.push_str(&format!(", resets at {}", ctx.shown(t)));
            if let Some(max) = deadline.filter(|max| t > *max) {
                line.push_str(&format!(" (after the --max of {})", ctx.shown(max)));
            }
        }
        if let Some(next) = p.next.as_deref().filter(|_| p.wait != Wait::Nothing) {
            line.push_str(&format!(
                " · next: {}",
                baton_core::text::short_sessions(next)
            ));
        }
        text.push_str(&line);
        text.push('\n');
    }
    let json = AllJson {
        verdict: wait.as_str(),
        until: until(wait),
        waited_secs: now.duration_since(started).as_secs(),
        items: all
            .pieces
            .iter()
            .map(|p| PieceJson {
                kind: p.kind,
                key: &p.key,
                verdict: p.wait.as_str(),
                until: until(p.wait),
                resets_at: p.resets.map(format_ts),
                resume: &p.resume,
                next: p.next.as_deref(),
            })
            .collect(),
    };
    let mut report = Report::of(status_of(wait), &json, text.trim_end().to_string());
    // Unreadable files are warnings beside the answer, as in `baton resume`.
    for note in &all.notes {
        report = report.warn(note.trim_start_matches("warning: ").to_string());
    }
    report
}
