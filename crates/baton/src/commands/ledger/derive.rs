use std::path::PathBuf;

use clap::Args;
use serde_json::json;

use crate::error::CommandError;
use crate::output::{Progress, Report};
use baton_core::ledger::PhaseVerdict;
use baton_core::text::esc;
use baton_ops::env::Ctx;
use baton_ops::ledgers::{self, Derive, DeriveAppend, LedgerDerive};

/// Re-derive where a run really is, trusting nothing the ledger claims.
///
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
    /// How long a re-run gate may run before it is killed and counted as failed (`90s`, `10m`; a
    /// bare number is seconds).
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = crate::args::duration_of_at_least(1))]
    pub timeout: std::time::Duration,
}

pub fn cmd_ledger_derive(ctx: &Ctx, args: DeriveArgs) -> Result<Report, CommandError> {
    // Gates can take minutes each: a terminal shows which phase's are running.
    let progress = std::cell::RefCell::new(Progress::new("re-running gates, phase"));
    let done = ledgers::derive(
        ctx,
        &Derive {
            plan: &args.plan,
            append: args.append,
            no_gates: args.no_gates,
            timeout: args.timeout,
        },
        &mut |n, phases, phase| {
            progress
                .borrow_mut()
                .update_now(n, phases, &format!("({})", esc(phase)))
        },
        &mut || progress.borrow_mut().finish(),
    )?;
    let x = match done {
        LedgerDerive::Refused(d) => return Ok(Report::decision(&d)),
        LedgerDerive::Derived(x) => x,
    };
    let d = &x.derived;
    let mut out = String::new();
    if let Some(claimed) = &d.claimed {
        out.push_str(&format!("ledger claims: {claimed}\n"));
    }
    if let Some(base) = &x.first_base {
        out.push_str(&format!(
            "git: {} commits since {base}{}\n",
            x.commits_since_base.len(),
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
    match &d.resume_at {
        Some(p) => out.push_str(&format!(
            "resume at phase {p} ({} phases confirmed; nothing confirmed is redone)\n",
            d.confirmed
        )),
        None => out.push_str(&format!("every phase is confirmed ({})\n", d.confirmed)),
    }
    let mut appended = None;
    match x.append {
        Some(DeriveAppend::Tried(done)) => {
            let report = crate::view::appended(&x.plan, done);
            if report.status != crate::error::ExitStatus::Success {
                return Ok(report);
            }
            out.push_str(&format!("appended: {}\n", report.text));
            appended = Some(report.text);
        }
        Some(DeriveAppend::NoPhase) => {
            out.push_str("nothing appended: the ledger and the phase files name no phase yet\n")
        }
        None => {}
    }
    let mut json = crate::output::decision_json(&x.decision);
    json["rows"] = json!(d.rows);
    json["resume_at"] = json!(d.resume_at);
    json["confirmed"] = json!(d.confirmed);
    json["claimed"] = json!(d.claimed);
    json["tree_dirty"] = json!(d.tree_dirty);
    json["commits_since_base"] = json!(x.commits_since_base);
    json["bad_lines"] = json!(x.bad_lines);
    json["appended"] = json!(appended);
    json["findings"] = json!(
        x.findings
            .iter()
            .map(|(rule, message)| json!({"rule": rule, "message": message}))
            .collect::<Vec<_>>()
    );
    let mut report = Report::ok(json, out);
    report.warnings = x.warnings;
    Ok(report)
}
