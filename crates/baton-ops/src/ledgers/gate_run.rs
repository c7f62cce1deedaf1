//! `gate run`: a phase's declared exit gates run one after another, each result appended to
//! the ledger with its evidence verbatim.

use std::path::Path;
use std::time::Duration;

use super::{Appended, Plan, append_line, declared_gates, missing, refuse_foreign, run_declared};
use crate::env::Ctx;
use crate::error::OpError;
use baton_core::Decision;
use baton_core::ledger::{Event, Line};
use baton_core::time::format_ts_ms;

/// Which gates of which phase run, and for how long each may.
#[derive(Debug)]
pub struct GateRunRequest<'a> {
    /// The plan directory, as the caller named it.
    pub plan: &'a Path,
    pub phase: &'a str,
    /// Run only the gate of this name.
    pub only: Option<&'a str>,
    /// How long before a gate is killed and recorded as failed.
    pub timeout: Duration,
}

/// One gate run and recorded.
#[derive(Debug)]
pub struct GateResult {
    pub name: String,
    pub pass: bool,
    /// `None` when it was killed by a signal or the timeout.
    pub exit: Option<i32>,
    pub timed_out: bool,
    pub expected: i32,
    pub seconds: f64,
    /// The ledger line written for it.
    pub line: String,
    /// The gate changed the tree it ran on (it wrote a file git sees): its result holds for
    /// the tree before it, which no claim is judged on any more.
    pub changed_tree: bool,
}

/// What running a phase's gates did.
#[derive(Debug)]
pub enum GatesRun {
    /// The ledger names another plan (found before any gate ran, or by an append): nothing
    /// more was run or written.
    Refused(Decision),
    /// Every gate ran and its line was appended, in order.
    Ran {
        results: Vec<GateResult>,
        /// Whether any gate failed: a computed verdict, recorded like a pass.
        failed: bool,
        /// The lines of the phase's gate declarations that could not be read as a gate.
        unreadable: Vec<String>,
    },
}

/// Runs a phase's declared gates (or the one named) from the project root and appends each
/// result to the ledger. Every line must be recordable before any gate runs: a gate's side
/// effects with no record of them is what the ledger exists to prevent.
pub fn run_gates(ctx: &Ctx, request: &GateRunRequest) -> Result<GatesRun, OpError> {
    let phase = request.phase;
    let plan = Plan::resolve(ctx, request.plan)?;
    if !plan.ledger.exists() {
        return Err(missing(&plan));
    }
    // Another run's ledger is refused before any gate command runs.
    if let Some(refusal) = refuse_foreign(&plan)? {
        return Ok(GatesRun::Refused(refusal));
    }
    let (mut gates, bad) = declared_gates(&plan, phase)?;
    if let Some(only) = request.only {
        gates.retain(|g| g.name == only);
    }
    if gates.is_empty() {
        let mut err = OpError::usage(format!(
            "no gates{} declared for phase {} in {}/phase-{}*.md or its plan.md",
            request
                .only
                .map(|g| format!(" named {g}"))
                .unwrap_or_default(),
            phase,
            plan.rel,
            phase
        ));
        for line in &bad {
            err = err.hint(format!(
                "this line could not be read as a gate: {}",
                baton_core::text::esc(line)
            ));
        }
        return Err(err.hint("declare them in a ```gates block (`<name>: <command> → exit <code>`), or in plan.md under `## Phase N` as ``**Exit gate:** `<command>` → exit <code>``"));
    }
    for gate in &gates {
        let probe = Event::Gate {
            phase: phase.to_string(),
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
            return Err(OpError::usage(format!(
                "gate {} of phase {} cannot be recorded as declared (`{}`); nothing was run",
                gate.name, phase, gate.command
            ))
            .hint("a phase is letters, digits and dots; a command may not hold ` → exit`"));
        }
    }
    let timeout = request.timeout;
    let (mut results, mut failed) = (Vec::new(), false);
    for gate in &gates {
        // The tree the gate runs on, taken before it runs: a gate that changes the tree (a
        // formatter) proves something only about the tree it was given.
        let tree = crate::judge::tree_now(ctx).ok();
        let run = run_declared(&plan, phase, gate, timeout)?;
        let pass = !run.timed_out && run.exit == Some(gate.expect_exit);
        failed |= !pass;
        let changed_tree = tree.as_ref().is_some_and(|before| {
            crate::judge::tree_now(ctx).is_ok_and(|after| after.id() != before.id())
        });
        let result = match &tree {
            Some(tree) => baton_core::judge::result_on_tree(
                &run.status_text(timeout),
                &tree.id(),
                &run.last_line,
            ),
            None => run.result_text(timeout),
        };
        let event = Event::Gate {
            phase: phase.to_string(),
            name: gate.name.clone(),
            pass,
            cmd: gate.command.clone(),
            result: result.clone(),
        };
        let line = match append_line(
            ctx,
            &plan,
            &Line {
                event,
                // The gate may have run for minutes: the line is stamped when it is written.
                at: Some(format_ts_ms(ctx.at_write()?.now)),
            },
        )? {
            Appended::Refused(d) => return Ok(GatesRun::Refused(d)),
            Appended::Written { text, .. } => text,
        };
        // The judge's evidence: what ran, on which tree (a hint beside the ledger, whose lines
        // anyone can write).
        if let Some(tree) = &tree {
            let evidence = baton_core::judge::GateResult {
                phase: phase.to_string(),
                name: gate.name.clone(),
                cmd: gate.command.clone(),
                pass,
                result,
                tree: tree.id(),
                at: format_ts_ms(ctx.now),
            };
            if let Ok(layout) = ctx.layout() {
                let _ =
                    baton_store::sessions::record_gate_evidence(&layout, &plan.rel, &[evidence]);
            }
        }
        results.push(GateResult {
            name: gate.name.clone(),
            pass,
            exit: run.exit,
            timed_out: run.timed_out,
            expected: gate.expect_exit,
            seconds: run.seconds,
            line,
            changed_tree,
        });
    }
    Ok(GatesRun::Ran {
        results,
        failed,
        unreadable: bad,
    })
}
