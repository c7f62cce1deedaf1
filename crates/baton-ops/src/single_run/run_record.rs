//! `run record`: the run lock's holder records progress (a completed agent, a passed hard gate,
//! a step's status, or a new plan).

use baton_core::journal::JournalEvent;
use std::path::PathBuf;

use serde_json::json;

use super::{Holder, OpenRun, open_for_write, require_holder};
use crate::env::Ctx;
use crate::error::OpError;
use crate::journal;
use crate::run_facts::{file_in_project, plan_now, plan_path_now, recorded_plan_path};
use crate::runs;
use baton_core::decide::run_resume::critic_recorded;
use baton_core::model::{Completion, PlanRecord, StepRecord};
use baton_core::run_id::RunId;
use baton_core::time::format_ts;
use baton_core::{Decision, Reason};
use baton_store::{StateStore, git};

/// What one `run record` records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordWhat {
    /// An agent that completed.
    Agent(String),
    /// A hard gate that passed.
    Gate(String),
    /// A pipeline step's status (autonomous-dev's own names taken as they are).
    Step { name: String, status: String },
    /// A new plan after a re-plan, as given.
    Plan(PathBuf),
}

/// What `run record` is asked for.
#[derive(Debug, Clone)]
pub struct Record<'a> {
    pub run_id: &'a str,
    pub what: RecordWhat,
    pub holder: Holder,
}

/// What `run record` did.
#[derive(Debug)]
pub enum Recorded {
    /// Not the lock's holder, an agent already complete, or a plan that did not change:
    /// nothing changed.
    Refused(Decision),
    Written {
        id: RunId,
        /// What was recorded (`agent A completed`, `hard gate G passed`, ...).
        message: String,
        completed_agents: Vec<Completion>,
        /// The journal's, if its append failed: the record stands.
        warning: Option<String>,
    },
}

/// An agent, gate or step name: one line of text, and not a name the originating completion
/// ledger never counts (`""`, `unknown`).
fn check_name(value: Option<&String>, flag: &str) -> Result<(), OpError> {
    let Some(value) = value else { return Ok(()) };
    let v = value.trim();
    if v.is_empty() || v.eq_ignore_ascii_case("unknown") || v.chars().any(char::is_control) {
        return Err(OpError::usage(format!(
            "{flag} {:?} is not a name baton records",
            baton_core::text::esc(value)
        ))
        .hint("name it on one line, with no control characters, and not `unknown`; nothing was written"));
    }
    Ok(())
}

/// Records progress of a run. Only the run lock's holder may record; a completed agent is never
/// recorded twice (a critic may be, for a new version of the plan or a drift that owes a round).
pub fn record(ctx: &Ctx, store: &dyn StateStore, args: &Record) -> Result<Recorded, OpError> {
    match &args.what {
        RecordWhat::Agent(name) => check_name(Some(name), "--agent")?,
        RecordWhat::Gate(name) => check_name(Some(name), "--gate")?,
        RecordWhat::Step { name, .. } => check_name(Some(name), "--step")?,
        RecordWhat::Plan(_) => {}
    }
    let OpenRun {
        id,
        _guard,
        mut run,
        read,
    } = open_for_write(store, args.run_id)?;
    let before = run.clone();
    let (here, _) = runs::here(ctx, args.holder.pid, args.holder.token.as_deref(), false)?;
    if let Err(d) = require_holder(&run, &here, &args.holder, ctx.now) {
        return Ok(Recorded::Refused(d));
    }
    let at = Some(format_ts(ctx.now));
    // A critic is recorded against the plan as it is now: one critic round per plan version.
    let root = store.layout().root.clone();
    let plan_sha = match &run.plan {
        Some(p) => plan_now(&plan_path_now(&root, &p.path), &run.policy.security_globs)?
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
    let message = if let RecordWhat::Agent(agent) = &args.what {
        if run.completed_agents.iter().any(|c| &c.name == agent) && !new_plan_version(&run, agent) {
            let d = Decision::new(
                baton_core::Verdict::Refused,
                Reason::new(baton_core::Rule::RunAgentAlreadyComplete, format!("agent {agent} already has a completion entry in run {id}")),
                Some("completed agents are never re-dispatched; a deliberate second round needs its own name (for example `reviewer-2`)".into()),
            );
            return Ok(Recorded::Refused(d));
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
    } else if let RecordWhat::Plan(plan) = &args.what {
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
            return Ok(Recorded::Refused(d));
        }
        run.plan = Some(PlanRecord {
            path: recorded_plan_path(&root, &path),
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
    } else if let RecordWhat::Gate(gate) = &args.what {
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
        let (step, status) = match &args.what {
            RecordWhat::Step { name, status } => (name.clone(), status.clone()),
            _ => unreachable!("the other kinds are matched above"),
        };
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
    let events: Vec<serde_json::Value> = journal::run_changed(&before, &run)
        .then(|| {
            let details = match &args.what {
                RecordWhat::Agent(agent) => json!({ "agent": agent }),
                RecordWhat::Plan(_) => {
                    json!({ "plan": run.plan.as_ref().map(|p| p.path.clone()), "base_commit": run.base_commit })
                }
                RecordWhat::Gate(gate) => json!({ "gate": gate, "result": "pass" }),
                RecordWhat::Step { name, status } => json!({ "step": name, "status": status }),
            };
            journal::event(ctx, JournalEvent::Record, Some(run.lease_epoch), details)
        })
        .into_iter()
        .collect();
    // The write and its event: one transaction on a server.
    let journal_warning = journal::write_run(store, &run, &read, &events)?;
    Ok(Recorded::Written {
        id,
        message,
        completed_agents: run.completed_agents,
        warning: journal_warning,
    })
}
