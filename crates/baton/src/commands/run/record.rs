use clap::{ArgGroup, Args};
use serde_json::json;

use super::HolderArgs;
use crate::error::CommandError;
use crate::output::Report;
use baton_ops::env::Ctx;
use baton_ops::single_run::{self, Record, RecordWhat, Recorded};

/// Record a run's progress: an agent, a gate, a step or a new plan.
///
/// Record progress of a run: a completed agent, a passed hard gate, a step's status, or a new
/// plan. Only the run lock's holder may record; a completed agent is never recorded (or
/// dispatched) twice.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("what").required(true).args(["agent", "gate", "step", "plan"])))]
pub struct RecordArgs {
    /// The run id `baton run new` printed (16 hex digits, or a legacy `YYYYMMDD-HHMMSS`).
    run_id: String,
    /// An agent that completed.
    #[arg(long, value_name = "NAME")]
    agent: Option<String>,
    /// A hard gate that passed.
    #[arg(long, value_name = "NAME")]
    gate: Option<String>,
    /// A pipeline step, with `--status`.
    #[arg(long, value_name = "NAME", requires = "status")]
    step: Option<String>,
    /// The step's status: pending, in_progress (or running), done (or passed), skipped, failed.
    /// autonomous-dev's own names (running, passed) are taken as they are.
    #[arg(long, value_name = "S", value_parser = ["pending", "in_progress", "running", "done", "passed", "skipped", "failed"])]
    status: Option<String>,
    /// A new plan after a re-plan: the run is then measured against this plan, the current
    /// HEAD and the project's alignment as they are now.
    #[arg(long, value_name = "FILE")]
    plan: Option<std::path::PathBuf>,
    #[command(flatten)]
    holder: HolderArgs,
}

pub fn cmd_run_record(ctx: &Ctx, args: RecordArgs) -> Result<Report, CommandError> {
    // clap's group lets exactly one of them through.
    let what = if let Some(agent) = args.agent {
        RecordWhat::Agent(agent)
    } else if let Some(plan) = args.plan {
        RecordWhat::Plan(plan)
    } else if let Some(gate) = args.gate {
        RecordWhat::Gate(gate)
    } else {
        RecordWhat::Step {
            name: args.step.unwrap_or_default(),
            status: args.status.unwrap_or_default(),
        }
    };
    let done = single_run::record(
        ctx,
        &*ctx.store()?,
        &Record {
            run_id: &args.run_id,
            what,
            holder: args.holder.holder(),
        },
    )?;
    Ok(match done {
        Recorded::Refused(d) => Report::decision(&d),
        Recorded::Written {
            id,
            message,
            completed_agents,
            warning,
        } => {
            let report = Report::ok(
                json!({ "verdict": "ok", "run_id": id.to_string(), "recorded": message, "completed_agents": completed_agents }),
                format!("run {id}: {message}"),
            );
            match warning {
                Some(w) => report.warn(w),
                None => report,
            }
        }
    })
}
