use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use serde_json::json;

use crate::output::Report;
use baton_core::ledger::{Event, Line};
use baton_core::time::format_ts_ms;
use baton_ops::env::Ctx;
use baton_ops::error::{CommandError, ExitStatus};
use baton_ops::ledgers::Plan;
use baton_ops::ledgers::{declared_gates, run_declared};

/// Run a phase's declared exit gates and append each result to the ledger, with its evidence
/// verbatim: `phase <N>: gate <name> → PASS|FAIL (evidence: <cmd> → exit <code>: <last line>)`.
///
/// Gates are declared in `plans/<plan>/phase-<N>*.md`, in a fenced block with the info string
/// `gates`, one a line: `<name>: <command> → exit <code>`. Each runs through `sh -c` from the
/// project root, with BATON_PROJECT_ROOT, BATON_PLAN_DIR, BATON_PHASE and BATON_GATE set.
/// Prints `verdict: pass` or `verdict: fail`; both exit 0, since the result is recorded.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The plan directory.
    pub plan: PathBuf,
    /// The phase whose gates run, as its phase file names it (`phase-<N>*.md`).
    #[arg(long)]
    pub phase: String,
    /// Run only this gate.
    #[arg(long, value_name = "NAME")]
    pub gate: Option<String>,
    /// Seconds before a gate is killed and recorded as failed.
    #[arg(long, value_name = "SECS", default_value_t = 600, value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout: u64,
}

pub fn cmd_gate_run(ctx: &Ctx, args: RunArgs) -> Result<Report, CommandError> {
    let plan = Plan::resolve(ctx, &args.plan)?;
    if !plan.ledger.exists() {
        return Err(baton_ops::ledgers::missing(&plan));
    }
    // Another run's ledger is refused before any gate command runs.
    if let Some(refusal) = baton_ops::ledgers::refuse_foreign(&plan)? {
        return Ok(Report::decision(&refusal));
    }
    let (mut gates, bad) = declared_gates(&plan, &args.phase)?;
    if let Some(only) = &args.gate {
        gates.retain(|g| &g.name == only);
    }
    if gates.is_empty() {
        let mut err = CommandError::usage(format!(
            "no gates{} declared for phase {} in {}/phase-{}*.md or its plan.md",
            args.gate
                .as_deref()
                .map(|g| format!(" named {g}"))
                .unwrap_or_default(),
            args.phase,
            plan.rel,
            args.phase
        ));
        for line in &bad {
            err = err.hint(format!(
                "this line could not be read as a gate: {}",
                baton_core::text::esc(line)
            ));
        }
        return Err(err.hint("declare them in a ```gates block (`<name>: <command> → exit <code>`), or in plan.md under `## Phase N` as ``**Exit gate:** `<command>` → exit <code>``"));
    }
    // Every line must be recordable before any gate runs: a gate's side effects with no record
    // of them is what the ledger exists to prevent.
    for gate in &gates {
        let probe = Event::Gate {
            phase: args.phase.clone(),
            name: gate.name.clone(),
            pass: true,
            cmd: gate.command.clone(),
            result: "exit 0".into(),
        };
        let line = Line {
            event: probe,
            at: None,
        };
        if baton_core::ledger::parse_line(&baton_core::ledger::render_line(&line)).as_ref()
            != Ok(&line)
        {
            return Err(CommandError::usage(format!(
                "gate {} of phase {} cannot be recorded as declared (`{}`); nothing was run",
                gate.name, args.phase, gate.command
            ))
            .hint("a phase is letters, digits and dots; a command may not hold ` → exit`"));
        }
    }
    let timeout = Duration::from_secs(args.timeout);
    let (mut text, mut results, mut failed) = (String::new(), Vec::new(), false);

    for gate in &gates {
        let run = run_declared(&plan, &args.phase, gate, timeout)?;
        let pass = !run.timed_out && run.exit == Some(gate.expect_exit);
        failed |= !pass;
        let event = Event::Gate {
            phase: args.phase.clone(),
            name: gate.name.clone(),
            pass,
            cmd: gate.command.clone(),
            result: run.result_text(timeout),
        };
        let report = crate::view::appended(
            &plan,
            baton_ops::ledgers::append_line(
                &plan,
                &Line {
                    event,
                    at: Some(format_ts_ms(ctx.now)),
                },
            )?,
        );
        if report.status != ExitStatus::Success {
            return Ok(report);
        }
        text.push_str(&format!("{}\n", report.text));
        results.push(json!({ "gate": gate.name, "pass": pass, "exit": run.exit, "timed_out": run.timed_out, "expected": gate.expect_exit, "seconds": run.seconds }));
    }
    // A failed gate is a computed verdict, and it is recorded: exit 0, the verdict says so.
    text.push_str(if failed {
        "verdict: fail\n"
    } else {
        "verdict: pass\n"
    });
    let mut report = Report::new(
        ExitStatus::Success,
        json!({ "verdict": if failed { "fail" } else { "pass" }, "gates": results }),
        text,
    );
    report.warnings = bad
        .iter()
        .map(|line| {
            format!(
                "not a gate line baton can run: {}",
                baton_core::text::esc(line)
            )
        })
        .collect();
    Ok(report)
}
