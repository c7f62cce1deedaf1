//! The append of one ledger event: a structured writer's event or a raw line, trimmed, checked
//! against the repository (its commits, a phase's range, a test count) and written.

use std::path::Path;

use super::{Appended, Plan, append_line, missing, refuse_foreign};
use crate::env::Ctx;
use crate::error::OpError;
use baton_core::ledger::{Event, Line, parse_line};
use baton_core::time::format_ts_ms;
use baton_core::{Decision, Reason};
use baton_store::git;

/// What an append of one event did, and the plan whose ledger it was.
#[derive(Debug)]
pub struct EventAppend {
    pub plan: Plan,
    pub appended: Appended,
}

/// Appends `event` to the ledger of `plan`, its values trimmed, its commits checked and the
/// time stamped; another run's ledger is refused (`Appended::Refused`) before anything else.
pub fn append_event(ctx: &Ctx, plan: &Path, event: Event) -> Result<EventAppend, OpError> {
    let plan = Plan::resolve(ctx, plan)?;
    // Another run's ledger is refused before anything else is looked at.
    if let Some(refusal) = refuse_foreign(&plan)? {
        return Ok(EventAppend {
            plan,
            appended: Appended::Refused(refusal),
        });
    }
    let event = trimmed(event);
    check_event(&plan, &event)?;
    if let Event::Started { phase, .. } = &event
        && let Some(refusal) = confirmed_by_derive(&plan, phase)?
    {
        return Ok(EventAppend {
            plan,
            appended: Appended::Refused(refusal),
        });
    }
    let appended = append_line(
        ctx,
        &plan,
        &Line {
            event,
            at: Some(format_ts_ms(ctx.now)),
        },
    )?;
    Ok(EventAppend { plan, appended })
}

/// Appends one raw line after validating it against the grammar and the checks every
/// structured writer's event passes too.
pub fn append_raw(ctx: &Ctx, plan: &Path, raw: &str) -> Result<EventAppend, OpError> {
    let plan = Plan::resolve(ctx, plan)?;
    // Another run's ledger is refused before anything else is looked at.
    if let Some(refusal) = refuse_foreign(&plan)? {
        return Ok(EventAppend {
            plan,
            appended: Appended::Refused(refusal),
        });
    }
    let line = parse_line(raw).map_err(|e| {
        OpError::usage(format!(
            "not a ledger event: {e}: {:?}",
            baton_core::text::esc(raw)
        ))
        .hint("see `baton ledger --help` for the writers, or docs/ledger.md for the grammar; nothing was written")
    })?;
    // A raw line passes the writers' checks too.
    check_event(&plan, &line.event)?;
    let appended = append_line(ctx, &plan, &line)?;
    Ok(EventAppend { plan, appended })
}

/// Seed 003's "zero re-implementation of confirmed work": a `started` of a phase the ledger's
/// last `resumed` line (a derive's) confirmed complete is refused. Confirmed are the phases the
/// ledger claimed complete before that line and that come before its resume point in the plan's
/// order (the derive resumes at the first phase it did not confirm); a phase with any event of
/// its own after the line is the run's business again.
fn confirmed_by_derive(plan: &Plan, phase: &str) -> Result<Option<Decision>, OpError> {
    let Some(text) = baton_store::ledger::read(&plan.ledger)? else {
        return Ok(None);
    };
    let events: Vec<Event> = text
        .lines()
        .filter_map(|l| parse_line(l).ok())
        .map(|l| l.event)
        .collect();
    let Some(at) = events
        .iter()
        .rposition(|e| matches!(e, Event::Resumed { .. }))
    else {
        return Ok(None);
    };
    let Event::Resumed {
        phase: resume_at, ..
    } = &events[at]
    else {
        return Ok(None);
    };
    if resume_at == phase || events[at + 1..].iter().any(|e| e.phase() == Some(phase)) {
        return Ok(None);
    }
    let claimed = events[..at]
        .iter()
        .any(|e| matches!(e, Event::Complete { phase: p, .. } if p == phase));
    let order = super::declared_phases(plan)?;
    let index = |p: &str| order.iter().position(|o| o == p);
    let before = matches!((index(phase), index(resume_at)), (Some(p), Some(r)) if p < r);
    if !(claimed && before) {
        return Ok(None);
    }
    Ok(Some(Decision::new(
        baton_core::Verdict::Refused,
        Reason::new(
            baton_core::Rule::LedgerStartConfirmed,
            format!(
                "the last derive confirmed phase {phase} complete and resumes the run at phase {resume_at}"
            ),
        ),
        Some(format!(
            "start phase {resume_at}: `baton ledger start {} --phase {resume_at}`; nothing confirmed is redone (if phase {phase}'s work must change, that is a new phase of the plan)",
            plan.ledger_arg()
        )),
    )))
}

/// HEAD's short id, the default of a `--base` or `--sha`.
pub fn short_head(ctx: &Ctx) -> Result<String, OpError> {
    let root = ctx.layout()?.root;
    let head = git::head_and_index(&root)?.head.ok_or_else(|| {
        OpError::usage("the repository has no commit yet").hint("pass the commit explicitly")
    })?;
    Ok(head[..7].to_string())
}

/// What every append checks beyond the grammar, for the structured writers and a raw line
/// alike: commits that exist, a range that holds a commit, a test count that adds up, and text
/// free of control characters (STATE.md stays a text file that git diffs by line).
pub fn check_event(plan: &Plan, event: &Event) -> Result<(), OpError> {
    let rendered = baton_core::ledger::render_line(&Line {
        event: event.clone(),
        at: None,
    });
    if rendered.chars().any(char::is_control) {
        return Err(OpError::usage(format!(
            "the event holds control characters: {:?}",
            baton_core::text::esc(&rendered)
        ))
        .hint("write it as plain text on one line; nothing was written"));
    }
    if let Event::Complete { tests, .. } | Event::Baseline { tests, .. } = event {
        check_tests(tests)?;
    }
    let commits: Vec<&String> = match event {
        Event::Started { base, .. } => vec![base],
        Event::Complete { from, to, .. } => vec![from, to],
        Event::Baseline { sha, .. } => vec![sha],
        _ => Vec::new(),
    };
    for commit in &commits {
        if !git::commit_exists(&plan.root, commit)? {
            return Err(
                OpError::usage(format!("{commit} is not a commit of this repository"))
                    .hint("pass a commit id that `git rev-parse` knows; nothing was written"),
            );
        }
    }
    // An empty range claims no committed work; a one-commit phase is `<parent>..<commit>`.
    if let Event::Complete { from, to, .. } = event
        && git::commits_beyond(&plan.root, from, to)? == Some(0)
    {
        return Err(OpError::usage(format!(
            "the phase's range {from}..{to} holds no commit: a phase is complete with its work committed"
        ))
        .hint("commit the phase's work first; a phase of one commit is `--commits <its parent>..<it>`; nothing was written"));
    }
    Ok(())
}

/// `--tests X/Y` with X at most Y: more tests passing than ran is a typo, not a record.
fn check_tests(tests: &str) -> Result<(), OpError> {
    if let Some((x, y)) = tests.split_once('/')
        && let (Ok(x), Ok(y)) = (x.trim().parse::<u64>(), y.trim().parse::<u64>())
        && x > y
    {
        return Err(OpError::usage(format!(
            "--tests {tests}: {x} passing of {y} run is more than ran"
        ))
        .hint("pass tests passing over tests run, like `41/42`; nothing was written"));
    }
    Ok(())
}

/// The base of the last `started` event of a phase.
pub fn started_base(plan: &Plan, phase: &str) -> Result<String, OpError> {
    let text = baton_store::ledger::read(&plan.ledger)?.ok_or_else(|| missing(plan))?;
    baton_core::ledger::parse_ledger(&text)
        .events
        .iter()
        .rev()
        .find_map(|(_, l)| match &l.event {
            Event::Started { phase: p, base } if p == phase => Some(base.clone()),
            _ => None,
        })
        .ok_or_else(|| {
            OpError::usage(format!(
                "phase {phase} has no `started` event to take its base from"
            ))
            .hint("pass `--commits <a>..<b>`")
        })
}

/// The event with every free-text value trimmed, as the grammar reads it back.
fn trimmed(event: Event) -> Event {
    let t = |s: String| s.trim().to_string();
    match event {
        Event::Started { phase, base } => Event::Started {
            phase: t(phase),
            base: t(base),
        },
        Event::Gate {
            phase,
            name,
            pass,
            cmd,
            result,
        } => Event::Gate {
            phase: t(phase),
            name: t(name),
            pass,
            cmd: t(cmd),
            result: t(result),
        },
        Event::Complete {
            phase,
            from,
            to,
            tests,
            review,
        } => Event::Complete {
            phase: t(phase),
            from: t(from),
            to: t(to),
            tests: t(tests),
            review,
        },
        Event::Parked {
            phase,
            finding,
            ruling,
        } => Event::Parked {
            phase: t(phase),
            finding: t(finding),
            ruling: t(ruling),
        },
        Event::Blocked { phase, reason } => Event::Blocked {
            phase: t(phase),
            reason: t(reason),
        },
        Event::Resumed { phase, confirmed } => Event::Resumed {
            phase: t(phase),
            confirmed,
        },
        Event::AgentDied { phase } => Event::AgentDied { phase: t(phase) },
        Event::Waiver { phase, rule, who } => Event::Waiver {
            phase: t(phase),
            rule: t(rule),
            who: t(who),
        },
        Event::Baseline { tests, sha } => Event::Baseline {
            tests: t(tests),
            sha: t(sha),
        },
        Event::Env { from, to, reason } => Event::Env {
            from: t(from),
            to: t(to),
            reason: t(reason),
        },
        Event::Finish { step, outcome } => Event::Finish {
            step: t(step),
            outcome,
        },
    }
}
