use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use serde_json::json;

use super::{Plan, append_line, missing};
use crate::commands::gate::{declared_gates, run_declared};
use crate::context::Ctx;
use crate::error::CommandError;
use crate::output::Report;
use baton_core::ledger::{
    DeriveFacts, Event, Line, PhaseFacts, decide_ledger, parse_ledger, phase_claims,
};
use baton_core::time::format_ts;
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
    #[arg(long, value_name = "SECS", default_value_t = 600)]
    pub timeout: u64,
}

pub fn cmd_ledger_derive(ctx: &Ctx, args: DeriveArgs) -> Result<Report, CommandError> {
    let plan = Plan::resolve(ctx, &args.plan)?;
    let text = ledger::read(&plan.ledger)?.ok_or_else(|| missing(&plan))?;
    let l = parse_ledger(&text);
    let mut facts = DeriveFacts::default();
    let claimed: Vec<(String, String)> = phase_claims(&l)
        .into_iter()
        .filter_map(|(phase, complete, _)| match complete {
            Some(Event::Complete { to, .. }) => Some((phase, to.clone())),
            _ => None,
        })
        .collect();
    let tos: Vec<String> = claimed.iter().map(|(_, to)| to.clone()).collect();
    let reachable = git::reachable_from_head(&plan.root, &tos)?;
    for ((phase, _), reachable) in claimed.into_iter().zip(reachable) {
        let gates = if args.no_gates {
            None
        } else {
            let (declared, _) = declared_gates(&plan, &phase)?;
            let mut runs = Vec::new();
            for gate in &declared {
                let run = run_declared(&plan, &phase, gate, Duration::from_secs(args.timeout))?;
                let pass = !run.timed_out && run.exit == Some(gate.expect_exit);
                runs.push((
                    gate.name.clone(),
                    pass,
                    run.result_text(Duration::from_secs(args.timeout)),
                ));
            }
            Some(runs)
        };
        facts.phases.insert(
            phase,
            PhaseFacts {
                commits_reachable: Some(reachable),
                gates,
            },
        );
    }
    let layout = ctx.layout()?;
    facts.tree_dirty = git::tree_status(&plan.root, layout.state_dir_in_tree().as_deref())?.dirty;
    let first_base = l.events.iter().find_map(|(_, line)| match &line.event {
        Event::Started { base, .. } => Some(base.clone()),
        _ => None,
    });
    if let Some(base) = &first_base {
        facts.commits_since_base = git::log_since(&plan.root, base)?;
    }
    let d = decide_ledger(&l, &facts);
    let mut out = String::new();
    if let Some(claimed) = &d.claimed {
        out.push_str(&format!("ledger claims: {claimed}\n"));
    }
    if !l.bad.is_empty() {
        out.push_str(&format!(
            "warning: {} lines of the ledger do not parse (see `baton ledger check`)\n",
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
        if !row.why.is_empty() && row.verdict != baton_core::ledger::PhaseVerdict::Open {
            out.push_str(&format!("    {}\n", row.why));
        }
    }
    match &d.resume_at {
        Some(p) => out.push_str(&format!(
            "resume at phase {p} ({} phases confirmed; nothing confirmed is redone)\n",
            d.confirmed
        )),
        None => out.push_str(&format!("every phase is confirmed ({})\n", d.confirmed)),
    }
    let mut appended = None;
    if args.append {
        let phase = d
            .resume_at
            .clone()
            .or_else(|| d.rows.last().map(|r| r.phase.clone()));
        if let Some(phase) = phase {
            let report = append_line(
                &plan,
                &Line {
                    event: Event::Resumed {
                        phase,
                        confirmed: d.confirmed,
                    },
                    at: Some(format_ts(ctx.now)),
                },
            )?;
            if report.status != crate::error::ExitStatus::Success {
                return Ok(report);
            }
            out.push_str(&format!("appended: {}\n", report.text));
            appended = Some(report.text);
        } else {
            out.push_str("nothing appended: the ledger names no phase yet\n");
        }
    }
    Ok(Report::ok(
        json!({ "rows": d.rows, "resume_at": d.resume_at, "confirmed": d.confirmed, "claimed": d.claimed, "tree_dirty": d.tree_dirty, "commits_since_base": facts.commits_since_base, "bad_lines": l.bad.len(), "appended": appended }),
        out,
    ))
}
