use std::ffi::OsString;

use clap::Args;
use serde_json::Value;

use super::{Applied, WriteFlags, breadcrumb, transition};
use crate::context::Ctx;
use crate::error::CommandError;
use crate::output::Report;
use baton_core::decide::loop_write::check_transition;
use baton_core::model::Phase;
use baton_core::time::format_ts;

/// Record a phase transition and print its breadcrumb.
///
/// Ownership-gated: refused (exit 3) while another live session owns the loop, or when
/// `--epoch` is older than the file's. Refused while a retroactive Brief is owed and the action
/// is `engineer_spawned`.
#[derive(Debug, Args)]
pub struct SetArgs {
    /// The ticket id.
    ticket: OsString,
    /// The phase entered or left.
    #[arg(long, value_parser = ["skeptic", "qa", "engineer", "quality_gate"])]
    phase: String,
    /// What happened: spawned, returned, engineer_spawned, engineer_returned, rerun_pending,
    /// or another action of your conductor's.
    #[arg(long)]
    action: String,
    /// The Skeptic/QA iteration now running.
    #[arg(long, value_name = "N")]
    iteration: Option<u64>,
    /// The iteration cap.
    #[arg(long, value_name = "N")]
    max_iterations: Option<u64>,
    /// Append a finding to `findings_log` (repeatable).
    #[arg(long = "finding", value_name = "TEXT")]
    findings: Vec<String>,
    /// Append a QA failure to `qa_failures_log` (repeatable).
    #[arg(long = "qa-failure", value_name = "TEXT")]
    qa_failures: Vec<String>,
    /// Record the engineer's summary of what it did.
    #[arg(long = "engineer-summary", value_name = "TEXT")]
    engineer_summary: Option<String>,
    #[command(flatten)]
    flags: WriteFlags,
}

pub fn cmd_loop_set(ctx: &Ctx, args: SetArgs) -> Result<Report, CommandError> {
    if args.action.trim().is_empty() {
        return Err(CommandError::usage("--action is empty")
            .hint("pass what happened, for example `--action returned`"));
    }
    transition(ctx, &args.ticket, &args.flags, |state, target| {
        check_transition(state, &args.phase, Some(&args.action), &target.arg())?;
        state.last_phase = Some(args.phase.clone());
        state.last_phase_action = Some(args.action.clone());
        state.loop_state.phase = Phase::parse(&args.phase).map(|p| p.as_str().to_string());
        if let Some(n) = args.iteration {
            state.loop_state.iteration = n;
        }
        if let Some(n) = args.max_iterations {
            state.loop_state.max_iterations = n;
        }
        state
            .loop_state
            .findings_log
            .extend(args.findings.iter().cloned().map(Value::String));
        state
            .loop_state
            .qa_failures_log
            .extend(args.qa_failures.iter().cloned().map(Value::String));
        if let Some(summary) = &args.engineer_summary {
            state.loop_state.last_engineer_summary = Some(summary.clone());
        }
        state.last_updated = Some(format_ts(ctx.now));
        Ok(Applied {
            changed: true,
            message: breadcrumb(state),
            next: None,
            warnings: Vec::new(),
        })
    })
}
