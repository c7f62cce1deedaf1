//! `run new`: a single run starts, planned against HEAD, its plan and the project's alignment
//! sections, its run lock held.

use baton_core::journal::JournalEvent;
use std::path::{Path, PathBuf};

use serde_json::{Map, json};

use super::Holder;
use crate::env::Ctx;
use crate::error::OpError;
use crate::journal;
use crate::run_facts::{
    file_in_project, plan_now, plan_path_now, recorded_plan_path, sections_now,
};
use crate::runs::{self, lease_state_of};
use baton_core::decide::lease::LeaseState;
use baton_core::model::{
    AlignmentRecord, PlanRecord, RunPolicy, RunState, RunStatus, SCHEMA_VERSION, SectionRecord,
};
use baton_core::run_id::RunId;
use baton_core::time::format_ts;
use baton_core::{Decision, Reason};
use baton_store::{Expect, LockScope, RecordKey, StateStore, git, random_hex};

/// What `run new` is asked for.
#[derive(Debug, Clone)]
pub struct NewRun<'a> {
    /// What the run implements.
    pub feature: Option<&'a str>,
    /// The pre-validated plan file, as given.
    pub plan: Option<&'a Path>,
    /// The pipeline mode, as the conductor names it.
    pub mode: Option<&'a str>,
    /// The project file with the alignment sections, relative to the project root.
    pub project_file: &'a str,
    /// `critic` or `replan`: the verdict for a plan of a middling age.
    pub mid_gap: &'a str,
    /// Security-sensitive path globs; empty: the default list.
    pub security_globs: &'a [String],
    pub lease_ttl: u64,
    /// Start over beside a resumable run of the same plan, which is then abandoned.
    pub fresh: bool,
    pub holder: Holder,
}

/// What `run new` did.
#[derive(Debug)]
pub enum RunStart {
    /// A run of the same plan is in progress (refused), or can be resumed (a human chooses):
    /// nothing changed.
    Refused(Decision),
    Started(Box<Started>),
}

/// A run that started, its lock held by this caller.
#[derive(Debug)]
pub struct Started {
    pub id: RunId,
    pub run: RunState,
    /// How messages name baton's record of the run.
    pub path: PathBuf,
    /// A lease token for a holder with neither a session nor a process, shown only now.
    pub token: Option<String>,
    /// Runs of the same plan marked abandoned for this one (`fresh`).
    pub abandoned: Vec<String>,
    /// Other open runs in the project, of another plan.
    pub others: Vec<String>,
    /// The repository has no commit yet.
    pub no_head: bool,
    /// The journal's warnings: the run stands.
    pub warnings: Vec<String>,
}

/// Starts a single run: a new run id, what it is planned against, and its run lock. No fresh
/// start beside a resumable run of the same plan unless `fresh` says so (that run is then
/// abandoned, naming this one); never beside one a live holder works on.
pub fn new_run(ctx: &Ctx, store: &dyn StateStore, args: &NewRun) -> Result<RunStart, OpError> {
    let root = store.layout().root.clone();
    if args.project_file.starts_with('/') || args.project_file.split('/').any(|c| c == "..") {
        return Err(OpError::usage(format!(
            "--project-file {} must be a path inside the project",
            args.project_file
        ))
        .hint("pass it relative to the project root, like `.claude/PROJECT.md`"));
    }
    let plan_path = args
        .plan
        .map(|p| file_in_project(&ctx.dir, &root, p, "--plan"))
        .transpose()?;
    let mut policy = RunPolicy {
        mid_gap: args.mid_gap.to_string(),
        lease_ttl_secs: args.lease_ttl,
        ..RunPolicy::default()
    };
    if !args.security_globs.is_empty() {
        policy.security_globs = args.security_globs.to_vec();
    }
    let plan = match &plan_path {
        Some(path) => {
            let now = plan_now(path, &policy.security_globs)?;
            Some(PlanRecord {
                path: recorded_plan_path(&root, path),
                sha256: now.as_ref().map(|p| p.sha256.clone()),
                mtime: now.as_ref().map(|p| format_ts(p.mtime)),
                extra: Map::new(),
            })
        }
        None => None,
    };
    let sections = sections_now(&root, args.project_file)?
        .into_iter()
        .map(|s| SectionRecord {
            name: s.name,
            sha256: s.sha256,
            text: s.text,
        })
        .collect();
    let repo = git::head_and_index(&root)?;
    let id = RunId::parse(&random_hex(8)).expect("16 lowercase hex digits");
    let now = format_ts(ctx.now);
    let mut run = RunState {
        schema_version: SCHEMA_VERSION,
        run_id: id.to_string(),
        status: RunStatus::Active,
        created_at: Some(now.clone()),
        updated_at: Some(now),
        feature: args.feature.map(String::from),
        mode: args.mode.map(String::from),
        base_commit: repo.head.clone(),
        branch: repo.branch,
        plan,
        alignment: Some(AlignmentRecord {
            path: args.project_file.to_string(),
            sections,
            extra: Map::new(),
        }),
        policy,
        steps: Vec::new(),
        completed_agents: Vec::new(),
        hard_gates: Vec::new(),
        lease: None,
        lease_epoch: 0,
        critic_owed: false,
        imported_from: None,
        extra: Map::new(),
    };
    let (here, source) = runs::here(ctx, args.holder.pid, args.holder.token.as_deref(), true)?;
    let token = super::take_lease(&mut run, &here, source, &LeaseState::Free, ctx.now);
    let _guard = store.lock(LockScope::Runs)?;
    // No fresh start beside a resumable run of the same plan: resuming it is the default, a
    // fresh start a deliberate choice that abandons it.
    let mut same_plan = Vec::new();
    let mut others = Vec::new();
    for (other_id, loaded) in store.list_runs(None)? {
        let Ok(loaded) = loaded else { continue };
        if loaded.state.status.is_finished() {
            continue;
        }
        let other_plan = loaded
            .state
            .plan
            .as_ref()
            .map(|p| plan_path_now(&root, &p.path));
        let mine = run.plan.as_ref().map(|p| plan_path_now(&root, &p.path));
        if other_plan.is_some() && other_plan == mine {
            same_plan.push((other_id, loaded));
        } else {
            others.push(other_id);
        }
    }
    // A run of this plan that a live holder is working on is nobody else's to resume or abandon.
    let busy: Vec<(String, String)> = same_plan
        .iter()
        .filter_map(
            |(other_id, other)| match lease_state_of(&other.state, &here, ctx.now) {
                LeaseState::Live(why) => Some((other_id.clone(), why)),
                _ => None,
            },
        )
        .collect();
    if let Some((busy_id, why)) = busy.first() {
        let d = Decision::new(
            baton_core::Verdict::Refused,
            Reason::new(
                baton_core::Rule::RunSamePlanInProgress,
                format!("run {busy_id} of this plan is in progress: {why}"),
            ),
            Some(format!(
                "leave it to its holder (`baton run show {busy_id}`), or start a run of another plan"
            )),
        );
        return Ok(RunStart::Refused(d));
    }
    if !same_plan.is_empty() && !args.fresh {
        let ids: Vec<&str> = same_plan.iter().map(|(i, _)| i.as_str()).collect();
        let d = Decision::new(
            baton_core::Verdict::Ask,
            Reason::new(
                baton_core::Rule::RunResumableSamePlan,
                format!(
                    "run {} of this plan can be resumed: a fresh start beside it would redo its work",
                    ids.join(", ")
                ),
            ),
            Some(format!(
                "ask the human: resume it (`baton run resume {}`), or start over (`baton run new --fresh …`, which marks it abandoned)",
                ids[0]
            )),
        );
        return Ok(RunStart::Refused(d));
    }
    let mut abandoned = Vec::new();
    let mut journal_warnings = Vec::new();
    for (other_id, read) in same_plan {
        let mut other = read.state.clone();
        other.status = RunStatus::Abandoned;
        other.updated_at = Some(format_ts(ctx.now));
        other.extra.insert(
            "abandoned_for".into(),
            json!({ "run": id.to_string(), "at": format_ts(ctx.now) }),
        );
        other.lease = None;
        // The abandoned run and its `finish` event: one transaction on a server.
        let events: Vec<serde_json::Value> = RunId::parse(&other_id)
            .is_ok()
            .then(|| {
                journal::event(
                    ctx,
                    JournalEvent::Finish,
                    Some(other.lease_epoch),
                    json!({ "status": "abandoned", "replaced_by": id.to_string() }),
                )
            })
            .into_iter()
            .collect();
        journal_warnings.extend(journal::write_run(store, &other, &read.expect(), &events)?);
        abandoned.push(other_id);
    }
    if !abandoned.is_empty() {
        run.extra.insert("replaces".into(), json!(abandoned));
    }
    let event = journal::event(
        ctx,
        JournalEvent::New,
        Some(run.lease_epoch),
        json!({
            "feature": run.feature,
            "mode": run.mode,
            "plan": run.plan.as_ref().map(|p| p.path.clone()),
            "base_commit": run.base_commit,
            "branch": run.branch,
            "holder_pid": run.lease.as_ref().and_then(|l| l.pid),
            "replaces": abandoned,
        }),
    );
    journal_warnings.extend(journal::write_run(store, &run, &Expect::Absent, &[event])?);
    let path = store.name(&RecordKey::Run(id.clone()));
    Ok(RunStart::Started(Box::new(Started {
        id,
        no_head: repo.head.is_none(),
        run,
        path,
        token,
        abandoned,
        others,
        warnings: journal_warnings,
    })))
}
