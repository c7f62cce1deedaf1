//! `baton gate`: running the exit gates a plan's phase files declare (docs/ledger.md).

mod run;

use std::time::Duration;

use clap::Subcommand;

use crate::commands::ledger::Plan;
use crate::output::Report;
use baton_core::ledger::gates::{GateDecl, is_phase_file, parse_gates, parse_plan_gates};
use baton_ops::env::Ctx;
use baton_ops::error::CommandError;
use baton_store::gate::{GateRun, run_gate};

pub use run::RunArgs;

/// Run the exit gates declared in a plan's phase files.
#[derive(Debug, Subcommand)]
pub enum GateCommand {
    Run(RunArgs),
}

pub fn dispatch(ctx: &Ctx, cmd: GateCommand) -> Result<Report, CommandError> {
    match cmd {
        GateCommand::Run(args) => run::cmd_gate_run(ctx, args),
    }
}

/// The gates declared for `phase` in `plans/<plan>/phase-<N>*.md`, and the lines of their
/// `gates` blocks that do not parse.
pub fn declared_gates(
    plan: &Plan,
    phase: &str,
) -> Result<(Vec<GateDecl>, Vec<String>), CommandError> {
    let mut files: Vec<_> = plan
        .file_names()?
        .into_iter()
        .filter(|name| is_phase_file(name, phase))
        .collect();
    files.sort();
    let (mut gates, mut bad) = (Vec::new(), Vec::new());
    for name in files {
        let path = plan.dir.join(&name);
        let text = baton_store::read::read_capped(&path, 4 * 1024 * 1024)?.unwrap_or_default();
        let (g, b) = parse_gates(&String::from_utf8_lossy(&text));
        gates.extend(g);
        bad.extend(b.into_iter().map(|line| format!("{name}: {line}")));
    }
    // ClauKit declares a phase's exit gates in plan.md, under the phase's heading.
    let plan_md = plan.dir.join("plan.md");
    if let Some(text) = baton_store::read::read_capped(&plan_md, 4 * 1024 * 1024)? {
        let (g, b) = parse_plan_gates(&String::from_utf8_lossy(&text), phase);
        gates.extend(g);
        bad.extend(b.into_iter().map(|line| format!("plan.md: {line}")));
    }
    Ok((gates, bad))
}

/// Runs one declared gate from the project root, handing it the plan, phase and gate names as
/// environment variables.
pub fn run_declared(
    plan: &Plan,
    phase: &str,
    gate: &GateDecl,
    timeout: Duration,
) -> Result<GateRun, CommandError> {
    let root = plan.root.to_string_lossy().into_owned();
    let env = [
        ("BATON_PROJECT_ROOT", root.as_str()),
        ("BATON_PLAN_DIR", plan.rel.as_str()),
        ("BATON_PHASE", phase),
        ("BATON_GATE", gate.name.as_str()),
    ];
    Ok(run_gate(&gate.command, &plan.root, &env, timeout)?)
}
