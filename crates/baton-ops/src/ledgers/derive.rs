//! `ledger derive`: where a run really is, trusting nothing the ledger claims: the commits of
//! each phase claimed complete must still be on HEAD, and its declared gates must pass when
//! re-run.

use std::path::Path;
use std::time::Duration;

use super::{
    Appended, Plan, append_line, declared_gates, declared_phases, discipline, foreign, missing,
    run_declared,
};
use crate::env::Ctx;
use crate::error::OpError;
use baton_core::ledger::{
    DeriveFacts, Derived, Event, Line, PhaseFacts, decide_ledger, parse_ledger, phase_claims,
};
use baton_core::time::format_ts_ms;
use baton_core::{Decision, Reason, Rule};
use baton_store::{git, ledger};

/// What `ledger derive` is asked for.
#[derive(Debug, Clone, Copy)]
pub struct Derive<'a> {
    /// The plan directory, as given.
    pub plan: &'a Path,
    /// Append `phase <N>: resumed (...)` at the resume point.
    pub append: bool,
    /// Do not re-run gates (every claim is then at best STALE).
    pub no_gates: bool,
    /// How long a re-run gate may take before it is killed and counted as failed.
    pub timeout: Duration,
}

/// What `ledger derive` did.
#[derive(Debug)]
pub enum LedgerDerive {
    /// `append` on another run's ledger: nothing was re-run or written.
    Refused(Decision),
    Derived(Box<Derivation>),
}

/// The append `ledger derive --append` tried.
#[derive(Debug)]
pub enum DeriveAppend {
    /// The append's own outcome (which may be a refusal).
    Tried(Appended),
    /// Neither the ledger nor the phase files name a phase yet: nothing appended.
    NoPhase,
}

/// The position derived from git and the re-run gates.
#[derive(Debug)]
pub struct Derivation {
    pub plan: Plan,
    /// `resume` at the first phase not CONFIRMED, or `confirmed`; a reason a phase.
    pub decision: Decision,
    /// The rows, the resume point, the claimed position and whether the tree is dirty.
    pub derived: Derived,
    /// The first phase's base commit, as the ledger records it.
    pub first_base: Option<String>,
    /// `git log --oneline <base>..HEAD`, newest first.
    pub commits_since_base: Vec<String>,
    /// Lines of the ledger that do not parse.
    pub bad_lines: usize,
    /// The ledger's own discipline (rule, message).
    pub findings: Vec<(Rule, String)>,
    /// Another run's header, unrunnable gate lines, a base that is no commit, the findings,
    /// lines that do not parse.
    pub warnings: Vec<String>,
    /// `None` unless `append` was asked.
    pub append: Option<DeriveAppend>,
}

/// Re-derives a run's position. `progress(n, phases, phase)` is called before the gates of
/// each phase that declares some are re-run, and `done_gates()` once they all have been.
pub fn derive(
    ctx: &Ctx,
    args: &Derive,
    progress: &mut dyn FnMut(usize, usize, &str),
    done_gates: &mut dyn FnMut(),
) -> Result<LedgerDerive, OpError> {
    let plan = Plan::resolve(ctx, args.plan)?;
    let text = ledger::read(&plan.ledger)?.ok_or_else(|| missing(&plan))?;
    let l = parse_ledger(&text);
    let mut warnings = Vec::new();
    // Another run's record: never appended to, and its claims are not this plan's.
    let foreign_plan = l
        .plan
        .as_deref()
        .filter(|named| !plan.owns_header(named))
        .map(String::from);
    if let Some(named) = &foreign_plan {
        if args.append {
            return Ok(LedgerDerive::Refused(foreign(&plan, named)));
        }
        warnings.push(format!(
            "the header names {:?}: this is another run's record",
            baton_core::text::esc(named)
        ));
    }
    let timeout = args.timeout;
    let mut facts = DeriveFacts {
        declared: declared_phases(&plan)?,
        ..DeriveFacts::default()
    };
    let claimed: Vec<(String, String, String)> = phase_claims(&l)
        .into_iter()
        .filter_map(|(phase, complete, _)| match complete {
            Some(Event::Complete { from, to, .. }) => Some((phase, from.clone(), to.clone())),
            _ => None,
        })
        .collect();
    let tos: Vec<String> = claimed.iter().map(|(_, _, to)| to.clone()).collect();
    let reachable = git::reachable_from_head(&plan.root, &tos)?;
    // Both ends of every range, resolved in one git call: an unknown end, and a range whose
    // ends are one commit (`X..X`, or two names of it), are told apart without a call a phase.
    let ends: Vec<&str> = claimed
        .iter()
        .flat_map(|(_, from, to)| [from.as_str(), to.as_str()])
        .collect();
    let resolved = git::resolve_commits(&plan.root, &ends)?;
    // Gates can take minutes each: a terminal shows which phase's are running.
    let phases = claimed.len();
    for (n, (((phase, _from, _to), reachable), ends)) in claimed
        .into_iter()
        .zip(reachable)
        .zip(resolved.chunks(2))
        .enumerate()
    {
        let (from_sha, to_sha) = (&ends[0], &ends[1]);
        let commit_known = reachable || to_sha.is_some();
        let from_known = from_sha.is_some();
        let no_commits = (from_known && commit_known).then(|| from_sha == to_sha);
        // Unreadable gate lines count whether or not gates run: they are never dropped.
        let (declared, bad) = declared_gates(&plan, &phase)?;
        for line in &bad {
            warnings.push(format!(
                "phase {phase}: not a gate line baton can run: {}",
                baton_core::text::esc(line)
            ));
        }
        let unreadable_gates = bad.len();
        let gates = if args.no_gates {
            None
        } else {
            let mut runs = Vec::new();
            if !declared.is_empty() {
                progress(n + 1, phases, &phase);
            }
            for gate in &declared {
                let run = run_declared(&plan, &phase, gate, timeout)?;
                let pass = !run.timed_out && run.exit == Some(gate.expect_exit);
                runs.push((gate.name.clone(), pass, run.result_text(timeout)));
            }
            Some(runs)
        };
        facts.phases.insert(
            phase,
            PhaseFacts {
                commits_reachable: Some(reachable),
                commit_known: Some(commit_known),
                from_known: Some(from_known),
                no_commits,
                unreadable_gates,
                gates,
            },
        );
    }
    done_gates();
    // The ledger's own appends are not half-done work.
    let layout = ctx.layout()?;
    let state_dir = layout.state_dir_in_tree();
    let ledger_rel = plan
        .ledger
        .strip_prefix(&plan.root)
        .unwrap_or(&plan.ledger)
        .to_path_buf();
    let mut excluded = vec![ledger_rel.as_path()];
    excluded.extend(state_dir.as_deref());
    facts.tree_dirty = git::tree_dirty(&plan.root, &excluded)?;
    let first_base = l.events.iter().find_map(|(_, line)| match &line.event {
        Event::Started { base, .. } => Some(base.clone()),
        _ => None,
    });
    if let Some(base) = &first_base {
        if git::commit_exists(&plan.root, base)? {
            facts.commits_since_base = git::log_since(&plan.root, base)?;
        } else {
            warnings.push(format!(
                "the first phase's base {base} is not a commit of this repository"
            ));
        }
    }
    let d = decide_ledger(&l, &facts);
    // The ledger's own discipline (committed with its phase, an event at every gate), before
    // any `--append` adds a line of its own.
    let findings = discipline(&plan, &l)?;
    warnings.extend(
        findings
            .iter()
            .map(|(rule, message)| format!("{rule}: {message}")),
    );
    if !l.bad.is_empty() {
        warnings.push(format!(
            "{} lines of the ledger do not parse (see `baton ledger check`)",
            l.bad.len()
        ));
    }
    let next = d
        .resume_at
        .as_ref()
        .map(|p| format!("resume at phase {p}; redo nothing confirmed"));
    let append = if args.append {
        Some(
            match d
                .resume_at
                .clone()
                .or_else(|| d.rows.last().map(|r| r.phase.clone()))
            {
                Some(phase) => DeriveAppend::Tried(append_line(
                    ctx,
                    &plan,
                    &Line {
                        event: Event::Resumed {
                            phase,
                            confirmed: d.confirmed,
                        },
                        at: Some(format_ts_ms(ctx.at_write()?.now)),
                    },
                )?),
                None => DeriveAppend::NoPhase,
            },
        )
    } else {
        None
    };
    let reasons: Vec<Reason> = d
        .rows
        .iter()
        .map(|r| {
            Reason::new(
                r.rule,
                format!("phase {}: {} ({})", r.phase, r.verdict.as_str(), r.why),
            )
        })
        .collect();
    let decision = Decision {
        verdict: if d.resume_at.is_some() {
            baton_core::Verdict::Resume
        } else {
            baton_core::Verdict::Confirmed
        },
        reasons,
        next,
    };
    Ok(LedgerDerive::Derived(Box::new(Derivation {
        plan,
        decision,
        derived: d,
        first_base,
        commits_since_base: facts.commits_since_base,
        bad_lines: l.bad.len(),
        findings,
        warnings,
        append,
    })))
}
