use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use serde_json::json;

use crate::output::{Progress, Report};
use baton_core::ledger::PhaseVerdict;
use baton_core::ledger::{
    DeriveFacts, Event, Line, PhaseFacts, decide_ledger, parse_ledger, phase_claims,
};
use baton_core::text::esc;
use baton_core::time::format_ts_ms;
use baton_core::{Decision, Reason};
use baton_ops::env::Ctx;
use baton_ops::error::CommandError;
use baton_ops::ledgers::declared_phases;
use baton_ops::ledgers::{Plan, declared_gates, foreign, missing, run_declared};
use baton_store::{git, ledger};

/// Re-derive where a run really is, trusting nothing the ledger claims: the commits of each
/// phase claimed complete must still be on HEAD, and its declared gates must pass when re-run.
///
/// Prints `phase · ledger claim · gate re-run · verdict` with CONFIRMED, STALE (neither
/// confirmed nor refuted), CONTRADICTED (re-opened) or OPEN (never claimed complete), and the
/// resume point: the first phase not CONFIRMED. Nothing CONFIRMED is redone.
#[derive(Debug, Args)]
pub struct DeriveArgs {
    /// The plan directory.
    pub plan: PathBuf,
    /// Append `phase <N>: resumed (derived from ledger + gates, <K> phases confirmed)`.
    #[arg(long)]
    pub append: bool,
    /// Do not re-run gates (every claim is then at best STALE).
    #[arg(long)]
    pub no_gates: bool,
    /// Seconds before a re-run gate is killed and counted as failed.
    #[arg(long, value_name = "SECS", default_value_t = 600, value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout: u64,
}

pub fn cmd_ledger_derive(ctx: &Ctx, args: DeriveArgs) -> Result<Report, CommandError> {
    let plan = Plan::resolve(ctx, &args.plan)?;
    let text = ledger::read(&plan.ledger)?.ok_or_else(|| missing(&plan))?;
    let l = parse_ledger(&text);
    let mut out = String::new();
    let mut warnings = Vec::new();
    // Another run's record: never appended to, and its claims are not this plan's.
    let foreign_plan = l
        .plan
        .as_deref()
        .filter(|named| !plan.owns_header(named))
        .map(String::from);
    if let Some(named) = &foreign_plan {
        if args.append {
            return Ok(Report::decision(&foreign(&plan, named)));
        }
        warnings.push(format!(
            "the header names {:?}: this is another run's record",
            baton_core::text::esc(named)
        ));
    }
    let timeout = Duration::from_secs(args.timeout);
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
    let mut progress = Progress::new("re-running gates, phase");
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
                progress.update_now(n + 1, phases, &format!("({})", esc(&phase)));
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
    progress.finish();
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
    let findings = baton_ops::ledgers::discipline(&plan, &l)?;
    warnings.extend(
        findings
            .iter()
            .map(|(rule, message)| format!("{rule}: {message}")),
    );
    if let Some(claimed) = &d.claimed {
        out.push_str(&format!("ledger claims: {claimed}\n"));
    }
    if !l.bad.is_empty() {
        warnings.push(format!(
            "{} lines of the ledger do not parse (see `baton ledger check`)",
            l.bad.len()
        ));
    }
    if let Some(base) = &first_base {
        out.push_str(&format!(
            "git: {} commits since {base}{}\n",
            facts.commits_since_base.len(),
            if d.tree_dirty {
                "; the tree has uncommitted changes"
            } else {
                "; the tree is clean"
            }
        ));
    }
    out.push_str("phase · ledger claim · gate re-run · verdict\n");
    for row in &d.rows {
        out.push_str(&format!(
            "{} · {} · {} · {}\n",
            row.phase,
            row.claim,
            row.gates,
            row.verdict.as_str()
        ));
        if row.verdict != PhaseVerdict::Open {
            out.push_str(&format!("    {}\n", row.why));
        }
    }
    let next = match &d.resume_at {
        Some(p) => {
            out.push_str(&format!(
                "resume at phase {p} ({} phases confirmed; nothing confirmed is redone)\n",
                d.confirmed
            ));
            Some(format!("resume at phase {p}; redo nothing confirmed"))
        }
        None => {
            out.push_str(&format!("every phase is confirmed ({})\n", d.confirmed));
            None
        }
    };
    let mut appended = None;
    if args.append {
        match d
            .resume_at
            .clone()
            .or_else(|| d.rows.last().map(|r| r.phase.clone()))
        {
            Some(phase) => {
                let report = crate::view::appended(
                    &plan,
                    baton_ops::ledgers::append_line(
                        &plan,
                        &Line {
                            event: Event::Resumed {
                                phase,
                                confirmed: d.confirmed,
                            },
                            at: Some(format_ts_ms(ctx.now)),
                        },
                    )?,
                );
                if report.status != baton_ops::error::ExitStatus::Success {
                    return Ok(report);
                }
                out.push_str(&format!("appended: {}\n", report.text));
                appended = Some(report.text);
            }
            None => {
                out.push_str("nothing appended: the ledger and the phase files name no phase yet\n")
            }
        }
    }
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
    let mut json = crate::output::decision_json(&decision);
    json["rows"] = json!(d.rows);
    json["resume_at"] = json!(d.resume_at);
    json["confirmed"] = json!(d.confirmed);
    json["claimed"] = json!(d.claimed);
    json["tree_dirty"] = json!(d.tree_dirty);
    json["commits_since_base"] = json!(facts.commits_since_base);
    json["bad_lines"] = json!(l.bad.len());
    json["appended"] = json!(appended);
    json["findings"] = json!(
        findings
            .iter()
            .map(|(rule, message)| json!({"rule": rule, "message": message}))
            .collect::<Vec<_>>()
    );
    let mut report = Report::ok(json, out);
    report.warnings = warnings;
    Ok(report)
}
