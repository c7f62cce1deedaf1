use std::path::Path;

use clap::Args;
use serde_json::json;

use super::facts::sections_now;
use super::{
    HolderArgs, here, parse_target, pipeline_state_file, state_file_lines, take_lease, token_note,
};
use crate::output::{Report, decision_json, render_decision};
use baton_core::decide::run_resume::RunDecision;
use baton_core::model::SectionRecord;
use baton_core::run_id::RunTarget;
use baton_core::time::{format_ts, human_age};
use baton_ops::env::Ctx;
use baton_ops::error::CommandError;
use baton_ops::runs::decide_now;
use baton_store::{JournalTarget, LockScope, git};

/// Where the alignment sections live unless `run new --project-file` said otherwise.
pub const DEFAULT_PROJECT_FILE: &str = ".claude/PROJECT.md";

/// Resume a single run: four ordered checks (HEAD, staging, alignment, lock), the plan
/// staleness gate, then what to restore.
///
/// Verdicts: `replan` (HEAD moved, or the plan is over 24 hours old or gone), `critic` (one
/// plan-critic round first), `ratify` (hand the cached plan to the implementer: only with HEAD,
/// alignment and the lock unchanged and the plan at most 4 hours old), `blocked` (exit 3:
/// staged files, or the lock is held), `confirm` (exit 4: the alignment changed). A verdict that
/// proceeds takes the run lock. A `batch-*` id shows the batch instead.
#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// The run id: 16 lowercase hex digits, a legacy `YYYYMMDD-HHMMSS`, or `batch-<id>`.
    run_id: String,
    /// The user confirmed that the run still fits the changed GOALS, SCOPE or CONSTRAINTS:
    /// record the sections as they are now and go on.
    #[arg(long)]
    confirm_alignment: bool,
    /// The operator's escape hatch: go on although files are staged (their names and the time
    /// are recorded in the run as the operator's decision).
    #[arg(long)]
    allow_staged: bool,
    #[command(flatten)]
    holder: HolderArgs,
}

pub fn cmd_run_resume(ctx: &Ctx, args: ResumeArgs) -> Result<Report, CommandError> {
    let id = match parse_target(&args.run_id)? {
        RunTarget::Run(id) => id,
        RunTarget::Batch(raw) => return batch_resume(ctx, &raw),
    };
    let store = ctx.store()?;
    let root = store.layout().root.clone();
    // An unknown run in a project without state creates nothing, not even the lock's sidecar.
    if !store.exists()? && !super::import::default_source(&id).exists() {
        return Err(baton_ops::single_run::missing_run(&id));
    }
    // An import is checked before anything is created, so a refused one writes nothing, and is
    // built again under the lock from the source as it is then.
    let import = || {
        super::import::build_import(ctx, &*store, &id, None).map_err(|e| {
            if e.message.contains("no originating state") {
                baton_ops::single_run::missing_run(&id)
            } else {
                e
            }
        })
    };
    if store.read_run(&id)?.is_none() {
        import()?;
    }
    // git runs before the lock is taken: its status can start a user's fsmonitor hook.
    let mut repo = git::head_and_index(&root)?;
    // baton's own files are never the user's staged work, however they came to be staged.
    if let Some(state_dir) = store.layout().state_dir_in_tree() {
        repo.staged
            .retain(|p| !Path::new(p).starts_with(&state_dir));
    }
    let _guard = store.lock(LockScope::Runs)?;
    let mut notes = Vec::new();
    let mut imported = false;
    // An import stays in memory until the verdict lets the run go on: a refused or finished
    // resume writes nothing.
    let read = store.read_run(&id)?;
    let expect = baton_store::Expect::read(read.as_ref());
    let mut run = match read {
        Some(loaded) => {
            loaded.writable()?;
            loaded.state
        }
        None => {
            let run = import()?;
            imported = true;
            notes.push(format!(
                "note: imported {}",
                run.imported_from.as_deref().unwrap_or_default()
            ));
            run
        }
    };
    // autonomous-dev goes on recording completions beside the file it was imported from.
    let added = super::import::merge_completion_ledger(&mut run)?;
    if !added.is_empty() {
        notes.push(format!(
            "note: completed since the import, per the originating completion ledger: {}",
            baton_core::text::esc_join(added.iter().map(String::as_str))
        ));
    }
    if baton_core::model::run_is_finished(&run.status) {
        return Err(CommandError::usage(format!(
            "run {id} is {}: there is nothing to resume",
            run.status
        ))
        .hint("start a new run with `baton run new`"));
    }
    let (here, source) = here(ctx, &args.holder, true)?;
    if args.confirm_alignment && run.alignment.is_none() {
        // An imported run has no baseline: the user's confirmation makes one.
        run.alignment = Some(baton_core::model::AlignmentRecord {
            path: DEFAULT_PROJECT_FILE.into(),
            sections: Vec::new(),
            extra: Default::default(),
        });
    }
    let sections = match &run.alignment {
        Some(a) => Some(sections_now(&root, &a.path)?),
        None => None,
    };
    if args.confirm_alignment
        && let (Some(record), Some(now)) = (run.alignment.as_mut(), &sections)
    {
        let confirmed: Vec<SectionRecord> = now
            .iter()
            .map(|s| SectionRecord {
                name: s.name.clone(),
                sha256: s.sha256.clone(),
                text: s.text.clone(),
            })
            .collect();
        let realigned = record.sections != confirmed;
        record.sections = confirmed;
        if realigned {
            run.critic_owed = true;
            notes.push(
                "note: the alignment sections were re-recorded as the user confirmed them".into(),
            );
        }
    }
    let staged = repo.staged.clone();
    let (d, lease) = decide_now(ctx, &root, &run, repo, sections, &here, args.allow_staged)?;
    let mut token = None;
    let mut journal_warning = None;
    if d.acquire {
        let before = run.lease.clone();
        if args.allow_staged && !staged.is_empty() {
            // The operator's decision stays on record with what it let through.
            let decision = serde_json::json!({ "at": format_ts(ctx.now), "session": ctx.session, "files": staged });
            match run.extra.get_mut("staged_allowed") {
                Some(serde_json::Value::Array(list)) => list.push(decision),
                _ => {
                    run.extra.insert(
                        "staged_allowed".into(),
                        serde_json::Value::Array(vec![decision]),
                    );
                }
            }
        }
        token = take_lease(&mut run, &here, source, &lease, ctx.now);
        run.updated_at = Some(format_ts(ctx.now));
        store.write_run(&run, &expect)?;
        let mut events = Vec::new();
        if imported {
            events.push(super::import::import_event(ctx, &run));
        }
        let taken = before.as_ref().map(|l| l.epoch) != Some(run.lease_epoch);
        events.push(baton_ops::journal::event(
            ctx,
            "resume",
            Some(run.lease_epoch),
            json!({
                "verdict": d.decision.verdict,
                "lease_taken": taken,
                "from_session": before.as_ref().map(|l| l.session.clone()),
                "from_epoch": before.as_ref().map(|l| l.epoch),
                "allowed_staged": args.allow_staged && !staged.is_empty(),
                "agents_merged": added,
            }),
        ));
        journal_warning = baton_ops::journal::append(&*store, JournalTarget::Run(&id), &events);
    }
    let path = store.name(&baton_store::RecordKey::Run(id.clone()));
    let text = render(&d, &run, &path, &notes);
    let mut json = decision_json(&d.decision);
    json["run_id"] = json!(id.to_string());
    json["checks"] = json!(d.checks);
    json["drift"] = json!(d.drift);
    json["feature"] = json!(run.feature);
    json["gap_secs"] = json!(d.gap_secs);
    json["restore"] = json!(d.restore);
    json["state_file"] = json!(path.display().to_string());
    json["pipeline_state_file"] = json!(pipeline_state_file(&run, &path).display().to_string());
    json["lock_acquired"] = json!(d.acquire);
    json["epoch"] = json!(run.lease.as_ref().filter(|_| d.acquire).map(|l| l.epoch));
    json["notes"] = json!(notes);
    json["token"] = json!(token);
    let mut report = Report::decision(&d.decision);
    report.json = json.as_object().cloned().unwrap_or_default();
    report.text = match &token {
        Some(token) => format!("{text}{}\n", token_note(token)),
        None => text,
    };
    if let Some(w) = journal_warning {
        report = report.warn(w);
    }
    Ok(report)
}

fn render(
    d: &RunDecision,
    run: &baton_core::model::RunState,
    path: &Path,
    notes: &[String],
) -> String {
    let mut out = String::new();
    for note in notes {
        out.push_str(&format!("{note}\n"));
    }
    for (n, check) in d.checks.iter().enumerate() {
        out.push_str(&format!(
            "check {} {:<9} {}  {}\n",
            n + 1,
            check.check,
            if check.pass { "PASS" } else { "FAIL" },
            check.evidence
        ));
    }
    if let Some(gap) = d.gap_secs {
        out.push_str(&format!(
            "plan gap: {}\n",
            human_age(jiff::SignedDuration::from_secs(gap.max(0)))
        ));
    }
    out.push_str(&render_decision(&d.decision, None));
    // Whoever confirms a drift sees what they are confirming: the run's own feature, beside it.
    if !d.drift.is_empty() {
        out.push_str(&format!(
            "the run implements: {}\n",
            run.feature.as_deref().map_or_else(
                || "(no feature recorded)".into(),
                |f| baton_core::text::esc(f).into_owned()
            )
        ));
    }
    for drift in &d.drift {
        out.push_str(&format!("--- {} changed ---\n", drift.section));
        if let Some(diff) = &drift.diff {
            out.push_str(diff);
        }
    }
    let r = &d.restore;
    out.push_str(&format!(
        "completed agents (never re-dispatch): {}\n",
        if r.completed_agents.is_empty() {
            "none".to_string()
        } else {
            baton_core::text::esc_join(r.completed_agents.iter().map(String::as_str))
        }
    ));
    if let Some(last) = &r.last {
        out.push_str(&format!(
            "last completed: {}\n",
            baton_core::text::esc(last)
        ));
    }
    if let Some(step) = &r.next_step {
        out.push_str(&format!("next step: {}\n", baton_core::text::esc(step)));
    }
    if d.acquire
        && let Some(lease) = &run.lease
    {
        out.push_str(&format!(
            "run lock held (epoch {}); pass `--epoch {}` on later writes\n",
            lease.epoch, lease.epoch
        ));
    }
    out.push_str(&format!("{}\n", state_file_lines(run, path)));
    out
}

/// `batch-*` ids name the batch of the ticket loop: the batch picks the ticket, and that
/// ticket's own `baton resume` picks the phase.
fn batch_resume(ctx: &Ctx, raw: &str) -> Result<Report, CommandError> {
    let loaded = ctx
        .store()?
        .read_batch()?
        .ok_or_else(baton_ops::batch::missing_batch)?;
    let report = crate::view::batch(ctx, &loaded);
    let known = report
        .json
        .get("state")
        .and_then(|s| s.get("batch_id"))
        .and_then(|b| b.as_str())
        .map(String::from);
    if known.as_deref() != Some(raw) {
        return Err(CommandError::usage(format!(
            "no batch {raw} in this project{}",
            known
                .map(|b| format!(" (its batch is {b})"))
                .unwrap_or_default()
        ))
        .hint("see the project's batch with `baton batch show`"));
    }
    let next = report.json.get("next").cloned().unwrap_or_default();
    let reason = serde_json::json!([{ "rule": baton_core::Rule::RunBatchRouted, "message": format!("{raw} is a batch: the batch picks the ticket, the ticket's own `baton resume` picks the phase") }]);
    Ok(report
        .with("verdict", "batch")
        .with("reasons", reason)
        .with("next", next)
        .with("routed_from", raw.to_string())
        .text_before(&format!("{raw} is a batch: the batch picks the ticket, the ticket's own `baton resume` picks the phase")))
}
