use clap::{ArgGroup, Args};
use serde_json::json;

use super::facts::{file_in_project, plan_now};
use super::{HolderArgs, here};
use crate::output::Report;
use baton_core::decide::run_resume::critic_recorded;
use baton_core::model::{Completion, PlanRecord, StepRecord};
use baton_core::time::format_ts;
use baton_core::{Decision, Reason};
use baton_ops::env::Ctx;
use baton_ops::error::CommandError;
use baton_ops::single_run::{OpenRun, open_for_write, require_holder};
use baton_store::{JournalTarget, git};

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

/// An agent, gate or step name: one line of text, and not a name the originating completion
/// ledger never counts (`""`, `unknown`).
fn check_name(value: Option<&String>, flag: &str) -> Result<(), CommandError> {
    let Some(value) = value else { return Ok(()) };
    let v = value.trim();
    if v.is_empty() || v.eq_ignore_ascii_case("unknown") || v.chars().any(char::is_control) {
        return Err(CommandError::usage(format!(
            "{flag} {:?} is not a name baton records",
            baton_core::text::esc(value)
        ))
        .hint("name it on one line, with no control characters, and not `unknown`; nothing was written"));
    }
    Ok(())
}

pub fn cmd_run_record(ctx: &Ctx, args: RecordArgs) -> Result<Report, CommandError> {
    check_name(args.agent.as_ref(), "--agent")?;
    check_name(args.gate.as_ref(), "--gate")?;
    check_name(args.step.as_ref(), "--step")?;
    let OpenRun {
        id,
        store,
        _guard,
        mut run,
        read,
    } = open_for_write(ctx, &args.run_id)?;
    let before = run.clone();
    let (here, _) = here(ctx, &args.holder, false)?;
    if let Err(d) = require_holder(&run, &here, &args.holder.holder(), ctx.now) {
        return Ok(Report::decision(&d));
    }
    let at = Some(format_ts(ctx.now));
    // A critic is recorded against the plan as it is now: one critic round per plan version.
    let root = store.layout().root.clone();
    let plan_sha = match &run.plan {
        Some(p) => super::facts::plan_now(
            &super::facts::plan_path_now(&root, &p.path),
            &run.policy.security_globs,
        )?
        .map(|now| now.sha256),
        None => None,
    };
    let critic_extra = |name: &str| {
        let mut extra = serde_json::Map::new();
        if name.contains("critic")
            && let Some(sha) = &plan_sha
        {
            extra.insert("plan_sha256".into(), sha.clone().into());
        }
        extra
    };
    // A critic may be recorded again for a new version of the plan, or when a confirmed drift
    // owes a new round.
    let new_plan_version = |run: &baton_core::model::RunState, name: &str| {
        name.contains("critic")
            && (run.critic_owed
                || plan_sha
                    .as_deref()
                    .is_some_and(|sha| !critic_recorded(run, sha)))
    };
    let message = if let Some(agent) = &args.agent {
        if run.completed_agents.iter().any(|c| &c.name == agent) && !new_plan_version(&run, agent) {
            let d = Decision::new(
                baton_core::Verdict::Refused,
                Reason::new(baton_core::Rule::RunAgentAlreadyComplete, format!("agent {agent} already has a completion entry in run {id}")),
                Some("completed agents are never re-dispatched; a deliberate second round needs its own name (for example `reviewer-2`)".into()),
            );
            return Ok(Report::decision(&d));
        }
        if agent.contains("critic") {
            run.critic_owed = false;
        }
        let extra = critic_extra(agent);
        run.completed_agents.push(Completion {
            name: agent.clone(),
            at,
            extra,
        });
        format!("agent {agent} completed")
    } else if let Some(plan) = &args.plan {
        let path = file_in_project(&ctx.dir, &root, plan, "--plan")?;
        let now = plan_now(&path, &run.policy.security_globs)?;
        let sha = now.as_ref().map(|p| p.sha256.clone());
        if sha.is_some() && run.plan.as_ref().and_then(|p| p.sha256.as_ref()) == sha.as_ref() {
            let d = Decision::new(
                baton_core::Verdict::Refused,
                Reason::new(
                    baton_core::Rule::RunPlanUnchanged,
                    format!(
                        "{} is the cached plan, byte for byte: a re-plan records the planner's new plan",
                        path.display()
                    ),
                ),
                Some("re-invoke the planner, then record the plan it writes".into()),
            );
            return Ok(Report::decision(&d));
        }
        run.plan = Some(PlanRecord {
            path: super::facts::recorded_plan_path(&root, &path),
            sha256: sha,
            mtime: now.as_ref().map(|p| format_ts(p.mtime)),
            extra: Default::default(),
        });
        // The new plan is made against today's HEAD; the alignment baseline stays as recorded,
        // so a drift since still needs the user's confirmation.
        run.base_commit = git::head_and_index(&root)?.head;
        run.critic_owed = false;
        format!(
            "new plan {} against HEAD {}",
            path.display(),
            run.base_commit.as_deref().unwrap_or("(none)")
        )
    } else if let Some(gate) = &args.gate {
        if gate.contains("critic") {
            run.critic_owed = false;
        }
        let extra = critic_extra(gate);
        run.hard_gates.push(Completion {
            name: gate.clone(),
            at,
            extra,
        });
        format!("hard gate {gate} passed")
    } else {
        let (step, status) = (
            args.step.clone().unwrap_or_default(),
            args.status.clone().unwrap_or_default(),
        );
        match run.steps.iter_mut().find(|s| s.name == step) {
            Some(existing) => {
                existing.status = status.clone();
                existing.at = at;
            }
            None => run.steps.push(StepRecord {
                name: step.clone(),
                status: status.clone(),
                at,
                extra: Default::default(),
            }),
        }
        format!("step {step}: {status}")
    };
    if let Some(lease) = run.lease.as_mut() {
        lease.heartbeat_at = format_ts(ctx.now);
    }
    run.updated_at = Some(format_ts(ctx.now));
    store.write_run(&run, &read)?;
    let journal_warning = baton_ops::journal::run_changed(&before, &run)
        .then(|| {
            let details = if let Some(agent) = &args.agent {
                json!({ "agent": agent })
            } else if args.plan.is_some() {
                json!({ "plan": run.plan.as_ref().map(|p| p.path.clone()), "base_commit": run.base_commit })
            } else if let Some(gate) = &args.gate {
                json!({ "gate": gate, "result": "pass" })
            } else {
                json!({ "step": args.step, "status": args.status })
            };
            let event = baton_ops::journal::event(ctx, "record", Some(run.lease_epoch), details);
            baton_ops::journal::append(&*store, JournalTarget::Run(&id), &[event])
        })
        .flatten();
    let report = Report::ok(
        json!({ "verdict": "ok", "run_id": id.to_string(), "recorded": message, "completed_agents": run.completed_agents }),
        format!("run {id}: {message}"),
    );
    Ok(match journal_warning {
        Some(w) => report.warn(w),
        None => report,
    })
}
