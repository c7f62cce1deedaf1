use std::path::Path;

use clap::Args;
use serde_json::json;

use super::{HolderArgs, parse_target, pipeline_state_file, state_file_lines, token_note};
use crate::error::CommandError;
use crate::output::{Report, decision_json, render_decision};
use baton_core::decide::run_resume::RunDecision;
use baton_core::run_id::RunTarget;
use baton_core::time::human_age;
use baton_ops::env::Ctx;
use baton_ops::single_run::{self, ResumeRun};

/// Resume a single run: its checks, then what to restore.
///
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
    let done = single_run::resume(
        ctx,
        &*ctx.store()?,
        &ResumeRun {
            id,
            confirm_alignment: args.confirm_alignment,
            allow_staged: args.allow_staged,
            holder: args.holder.holder(),
        },
    )?;
    let (d, run, path, notes, token) = (
        &done.decision,
        &*done.run,
        &done.path,
        &done.notes,
        &done.token,
    );
    let text = render(d, run, path, notes);
    let mut json = decision_json(&d.decision);
    json["run_id"] = json!(done.id.to_string());
    json["checks"] = json!(d.checks);
    json["drift"] = json!(d.drift);
    json["feature"] = json!(run.feature);
    json["gap_secs"] = json!(d.gap_secs);
    json["restore"] = json!(d.restore);
    json["state_file"] = json!(path.display().to_string());
    json["pipeline_state_file"] = json!(pipeline_state_file(run, path).display().to_string());
    json["lock_acquired"] = json!(d.acquire);
    json["epoch"] = json!(run.lease.as_ref().filter(|_| d.acquire).map(|l| l.epoch));
    json["notes"] = json!(notes);
    json["token"] = json!(token);
    let mut report = Report::decision(&d.decision);
    report.json = json.as_object().cloned().unwrap_or_default();
    report.text = match token {
        Some(token) => format!("{text}{}\n", token_note(token)),
        None => text,
    };
    if let Some(w) = done.warning {
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
