use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use serde_json::json;

use crate::error::{CommandError, ExitStatus};
use crate::output::Report;
use baton_ops::env::Ctx;
use baton_ops::ledgers::{GateResult, GateRunRequest, GatesRun, run_gates};

/// Run a phase's exit gates and append each result to the ledger.
///
/// Run a phase's declared exit gates and append each result to the ledger, with its evidence
/// verbatim: `phase <N>: gate <name> → PASS|FAIL (evidence: <cmd> → exit <code>: <last line>)`.
///
/// Gates are declared in `plans/<plan>/phase-<N>*.md`, in a fenced block with the info string
/// `gates`, one a line: `<name>: <command> → exit <code>`. Each runs through `sh -c` from the
/// project root, with BATON_PROJECT_ROOT, BATON_PLAN_DIR, BATON_PHASE and BATON_GATE set.
/// Prints `verdict: pass` or `verdict: fail`; both exit 0, since the result is recorded.
///
/// With `--ticket` (or `--run`), the project's own gates (`[judge.gates]` in `.baton.toml`, each
/// expected to exit 0) run for that ticket's loop (or that single run) instead, recorded as the
/// judge's evidence for it (neither has a ledger), with BATON_TICKET (or BATON_RUN_ID) set.
///
/// Each result is recorded with the tree it ran on, which is what the judge of "done" verifies
/// claims by (docs/judge.md).
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The plan directory.
    #[arg(required_unless_present_any = ["ticket", "run"])]
    pub plan: Option<PathBuf>,
    /// The phase whose gates run, as its phase file names it (`phase-<N>*.md`).
    #[arg(long, requires = "plan")]
    pub phase: Option<String>,
    /// Run the project's gates for this ticket's loop instead of a plan's phase.
    #[arg(long, value_name = "TICKET", conflicts_with_all = ["plan", "phase", "run"])]
    pub ticket: Option<std::ffi::OsString>,
    /// Run the project's gates for this single run instead (its id, as `baton run new` printed).
    #[arg(long, value_name = "RUN_ID", conflicts_with_all = ["plan", "phase"])]
    pub run: Option<String>,
    /// Run only this gate.
    #[arg(long, value_name = "NAME")]
    pub gate: Option<String>,
    /// How long a gate may run before it is killed and recorded as failed (`90s`, `10m`; a bare
    /// number is seconds).
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = crate::args::duration_of_at_least(1))]
    pub timeout: Duration,
}

pub fn cmd_gate_run(ctx: &Ctx, args: RunArgs) -> Result<Report, CommandError> {
    let timeout = args.timeout;
    if let Some(ticket) = &args.ticket {
        let target = baton_ops::ticket_loop::Target::derive(ctx, ticket);
        let ran = baton_ops::judge::run_loop_gates(
            ctx,
            &target.raw,
            &target.key,
            args.gate.as_deref(),
            timeout,
        )?;
        return Ok(gates_report(&ran, ran.iter().any(|g| !g.pass), &[]));
    }
    if let Some(raw) = &args.run {
        let id = baton_core::run_id::RunId::parse(raw).map_err(|e| {
            CommandError::usage(format!("--run {raw:?}: {e}"))
                .hint("pass the id `baton run new` printed")
        })?;
        let ran = baton_ops::judge::run_run_gates(ctx, id.as_str(), args.gate.as_deref(), timeout)?;
        return Ok(gates_report(&ran, ran.iter().any(|g| !g.pass), &[]));
    }
    let (Some(plan), Some(phase)) = (&args.plan, &args.phase) else {
        return Err(
            CommandError::usage("a plan's gates run for one phase: pass `--phase N`")
                .hint("or `--ticket T` for the project's gates of a ticket's loop"),
        );
    };
    let (results, failed, unreadable) = match run_gates(
        ctx,
        &GateRunRequest {
            plan,
            phase,
            only: args.gate.as_deref(),
            timeout,
        },
    )? {
        GatesRun::Refused(d) => return Ok(Report::decision(&d)),
        GatesRun::Ran {
            results,
            failed,
            unreadable,
        } => (results, failed, unreadable),
    };
    Ok(gates_report(&results, failed, &unreadable))
}

/// What running gates did: each line recorded, the verdict, and a warning for each gate line
/// that could not be read and each gate that changed the tree it ran on.
fn gates_report(results: &[GateResult], failed: bool, unreadable: &[String]) -> Report {
    let mut text = String::new();
    let mut gates = Vec::new();
    for r in results {
        text.push_str(&format!("{}\n", r.line));
        gates.push(json!({ "gate": r.name, "pass": r.pass, "exit": r.exit, "timed_out": r.timed_out, "expected": r.expected, "seconds": r.seconds }));
    }
    // A failed gate is a computed verdict, and it is recorded: exit 0, the verdict says so.
    text.push_str(if failed {
        "verdict: fail\n"
    } else {
        "verdict: pass\n"
    });
    let mut report = Report::new(
        ExitStatus::Success,
        json!({ "verdict": if failed { "fail" } else { "pass" }, "gates": gates }),
        text,
    );
    report.warnings = unreadable
        .iter()
        .map(|line| {
            format!(
                "not a gate line baton can run: {}",
                baton_core::text::esc(line)
            )
        })
        .collect();
    for r in results.iter().filter(|r| r.changed_tree) {
        report.warnings.push(format!(
            "gate {} changed the tree it ran on: its result holds for the tree before it, so no claim is verified by it; keep what it writes out of the tree (a .gitignore entry)",
            baton_core::text::esc(&r.name)
        ));
    }
    report
}
