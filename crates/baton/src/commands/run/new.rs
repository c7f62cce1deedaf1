use std::path::PathBuf;

use clap::Args;
use serde_json::{Map, json};

use super::facts::{file_in_project, plan_now, recorded_plan_path, sections_now};
use super::{HolderArgs, here, state_file_line, take_lease, token_note};
use crate::output::Report;
use baton_core::decide::lease::LeaseState;
use baton_core::model::run_is_finished;
use baton_core::model::{
    AlignmentRecord, PlanRecord, RunPolicy, RunState, SCHEMA_VERSION, SectionRecord,
};
use baton_core::run_id::RunId;
use baton_core::time::format_ts;
use baton_core::{Decision, Reason};
use baton_ops::env::Ctx;
use baton_ops::error::CommandError;
use baton_store::{Expect, JournalTarget, LockScope, RecordKey, git, random_hex};

/// Start a single run: print a new run id and record what it is planned against (HEAD, the
/// plan, the project's alignment sections), holding the run lock.
#[derive(Debug, Args)]
pub struct NewArgs {
    /// What the run implements.
    #[arg(long, value_name = "TEXT")]
    feature: Option<String>,
    /// The pre-validated plan file.
    #[arg(long, value_name = "FILE")]
    plan: Option<PathBuf>,
    /// The pipeline mode, as your conductor names it.
    #[arg(long)]
    mode: Option<String>,
    /// The project file with the GOALS, SCOPE and CONSTRAINTS sections.
    #[arg(long, value_name = "PATH", default_value = ".claude/PROJECT.md")]
    project_file: String,
    /// The verdict for a plan over 4 and at most 24 hours old that names no security-sensitive
    /// path: one critic round, or a full re-plan.
    #[arg(long, value_name = "VERDICT", default_value = "critic", value_parser = ["critic", "replan"])]
    mid_gap: String,
    /// A security-sensitive path glob (repeatable; replaces the default list).
    #[arg(long = "security-glob", value_name = "GLOB")]
    security_globs: Vec<String>,
    /// Seconds without a heartbeat after which the run lock is stale (at least 60: a shorter
    /// one would let a live holder's lock go stale between two turns).
    #[arg(long, value_name = "SECS", default_value_t = 600, value_parser = clap::value_parser!(u64).range(60..))]
    lease_ttl: u64,
    /// Start over although a run of the same plan can be resumed: that run is marked abandoned,
    /// naming this one.
    #[arg(long)]
    fresh: bool,
    #[command(flatten)]
    holder: HolderArgs,
}

pub fn cmd_run_new(ctx: &Ctx, args: NewArgs) -> Result<Report, CommandError> {
    let store = ctx.store()?;
    let root = store.layout().root.clone();
    if args.project_file.starts_with('/') || args.project_file.split('/').any(|c| c == "..") {
        return Err(CommandError::usage(format!(
            "--project-file {} must be a path inside the project",
            args.project_file
        ))
        .hint("pass it relative to the project root, like `.claude/PROJECT.md`"));
    }
    let plan_path = args
        .plan
        .as_deref()
        .map(|p| file_in_project(&ctx.dir, &root, p, "--plan"))
        .transpose()?;
    let mut policy = RunPolicy {
        mid_gap: args.mid_gap,
        lease_ttl_secs: args.lease_ttl,
        ..RunPolicy::default()
    };
    if !args.security_globs.is_empty() {
        policy.security_globs = args.security_globs;
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
    let sections = sections_now(&root, &args.project_file)?
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
        status: "active".into(),
        created_at: Some(now.clone()),
        updated_at: Some(now),
        feature: args.feature,
        mode: args.mode,
        base_commit: repo.head.clone(),
        branch: repo.branch,
        plan,
        alignment: Some(AlignmentRecord {
            path: args.project_file,
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
    let (here, source) = here(ctx, &args.holder, true)?;
    let token = take_lease(&mut run, &here, source, &LeaseState::Free, ctx.now);
    let _guard = store.lock(LockScope::Runs)?;
    // No fresh start beside a resumable run of the same plan: resuming it is the default, a
    // fresh start a deliberate choice that abandons it.
    let mut same_plan = Vec::new();
    let mut others = Vec::new();
    for (other_id, loaded) in store.list_runs(None)? {
        let Ok(loaded) = loaded else { continue };
        if run_is_finished(&loaded.state.status) {
            continue;
        }
        let other_plan = loaded
            .state
            .plan
            .as_ref()
            .map(|p| super::facts::plan_path_now(&root, &p.path));
        let mine = run
            .plan
            .as_ref()
            .map(|p| super::facts::plan_path_now(&root, &p.path));
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
            |(other_id, other)| match super::lease_state_of(&other.state, &here, ctx.now) {
                baton_core::decide::lease::LeaseState::Live(why) => Some((other_id.clone(), why)),
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
        return Ok(Report::decision(&d));
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
        return Ok(Report::decision(&d));
    }
    let mut abandoned = Vec::new();
    let mut journal_warnings = Vec::new();
    for (other_id, read) in same_plan {
        let mut other = read.state.clone();
        other.status = "abandoned".into();
        other.updated_at = Some(format_ts(ctx.now));
        other.extra.insert(
            "abandoned_for".into(),
            json!({ "run": id.to_string(), "at": format_ts(ctx.now) }),
        );
        other.lease = None;
        store.write_run(&other, &read.expect())?;
        if let Ok(other_run) = RunId::parse(&other_id) {
            let event = baton_ops::journal::event(
                ctx,
                "finish",
                Some(other.lease_epoch),
                json!({ "status": "abandoned", "replaced_by": id.to_string() }),
            );
            journal_warnings.extend(baton_ops::journal::append(
                &*store,
                JournalTarget::Run(&other_run),
                &[event],
            ));
        }
        abandoned.push(other_id);
    }
    if !abandoned.is_empty() {
        run.extra.insert("replaces".into(), json!(abandoned));
    }
    store.write_run(&run, &Expect::Absent)?;
    let event = baton_ops::journal::event(
        ctx,
        "new",
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
    journal_warnings.extend(baton_ops::journal::append(
        &*store,
        JournalTarget::Run(&id),
        &[event],
    ));
    let path = store.name(&RecordKey::Run(id.clone()));
    // stdout is the run id alone, so that `RUN=$(baton run new …)` captures just it.
    let mut report = Report::ok(
        json!({ "run_id": id.to_string(), "state_file": path.display().to_string(), "epoch": run.lease_epoch, "lease": run.lease }),
        id.to_string(),
    )
    .note(state_file_line(&path))
    .note(format!(
        "run lock held for {} (epoch {}); pass `--epoch {}` on later writes",
        holder_text(&run),
        run.lease_epoch,
        run.lease_epoch
    ));
    if let Some(token) = &token {
        report = report.note(token_note(token)).with("token", token.clone());
    }
    if run
        .alignment
        .as_ref()
        .is_some_and(|a| a.sections.iter().all(|s| s.sha256.is_none()))
    {
        report = report.warn(format!(
            "no `## GOALS`, `## SCOPE` or `## CONSTRAINTS` heading found in {}: the alignment check cannot see a drift (pass `--project-file` to name the right file)",
            run.alignment.as_ref().map(|a| a.path.as_str()).unwrap_or_default()
        ));
    }
    if !abandoned.is_empty() {
        report = report.note(format!(
            "note: a fresh start: run {} of this plan is marked abandoned",
            abandoned.join(", ")
        ));
    }
    if !others.is_empty() {
        report = report.note(format!(
            "note: other runs are open in this project (another plan): {}",
            others.join(", ")
        ));
    }
    for w in journal_warnings {
        report = report.warn(w);
    }
    if repo.head.is_none() {
        report = report
            .warn("the repository has no commit yet, so `baton run resume` will ask for a re-plan");
    }
    Ok(report)
}

/// `session S, pid P (CLAUDE_PID)`.
pub fn holder_text(run: &RunState) -> String {
    let Some(lease) = &run.lease else {
        return "nobody".into();
    };
    let session = lease
        .session
        .as_deref()
        .map_or_else(|| "no session".into(), |s| format!("session {s}"));
    match lease.pid {
        Some(pid) => format!("{session}, pid {pid} ({})", lease.pid_source),
        None => format!("{session}, no holder process known: the heartbeat alone decides"),
    }
}
