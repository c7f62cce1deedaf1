use std::path::{Path, PathBuf};

use clap::Args;
use serde_json::json;

use super::{gather, no_feature, shown};
use crate::output::Report;
use baton_core::feature::{ReviewNeeded, format_review_needed};
use baton_core::text::esc;
use baton_core::text::shell_quote;
use baton_core::time::format_ts;
use baton_ops::env::Ctx;
use baton_ops::error::{CommandError, ExitStatus};
use baton_ops::project::path_in_project;
use baton_store::feature::{
    FeatureFacts, REVIEW_NEEDED_CAP, REVIEW_NEEDED_FILE, clear_review_needed, lock_feature,
    read_feature_locked, write_review_needed,
};
use baton_store::read::read_capped;

/// Record that a delegate hit its cap and a person must look: writes REVIEW_NEEDED.md in the
/// active feature's directory (`--clear` removes it once handled).
///
/// The next session reads it as a timeout: escalate, or re-delegate with a tighter scope,
/// rather than re-run the task blindly.
#[derive(Debug, Args)]
pub struct ReviewNeededArgs {
    /// The task the capped delegate was working on, a `T-NN` id from the feature's TASKS.md.
    #[arg(long, value_name = "T-NN", required_unless_present = "clear")]
    task: Option<String>,
    /// Why a person must look: the cap that was hit and what is left undecided.
    #[arg(long, value_name = "TEXT", required_unless_present = "clear")]
    reason: Option<String>,
    /// The cap the delegate hit, as you would say it (`40 turns`, `30 minutes`).
    #[arg(long, value_name = "TEXT", conflicts_with = "clear")]
    cap: Option<String>,
    /// What the delegate got done before the cap, inline.
    #[arg(long, value_name = "TEXT", conflicts_with_all = ["clear", "partial_file"])]
    partial: Option<String>,
    /// A file inside the project holding what the delegate got done before the cap.
    #[arg(long, value_name = "PATH", conflicts_with = "clear")]
    partial_file: Option<PathBuf>,
    /// Replace a REVIEW_NEEDED.md that is already there, instead of refusing.
    #[arg(long, conflicts_with = "clear")]
    replace: bool,
    /// Remove the feature's REVIEW_NEEDED.md, once a person has handled it.
    #[arg(long, conflicts_with_all = ["task", "reason"])]
    clear: bool,
}

/// The feature directory a write goes to, or why there is none.
fn feature_dir(facts: Option<&FeatureFacts>) -> Result<PathBuf, CommandError> {
    let facts = facts.ok_or_else(no_feature)?;
    facts.dir.clone().ok_or_else(|| {
        let why: Vec<String> = facts
            .problems
            .iter()
            .map(|r| format!("{}: {}", r.rule, r.message))
            .collect();
        CommandError::new(
            ExitStatus::AskHuman,
            format!(
                "the active feature has no directory baton can use: {}",
                why.join("; ")
            ),
        )
        .hint("fix the pointer's `path` first; nothing was written")
    })
}

/// Refuses to overwrite a REVIEW_NEEDED.md that is there: it is a person's to handle.
fn refuse_existing(facts: &FeatureFacts) -> Result<(), CommandError> {
    let (Some(existing), Some(path)) = (&facts.review_needed, &facts.review_needed_path) else {
        return Ok(());
    };
    Err(CommandError::new(
        ExitStatus::Refused,
        format!(
            "{} is already there (task {}); it was left as it is",
            shown(path),
            esc(existing.task.as_deref().unwrap_or("?"))
        ),
    )
    .hint("handle it and run `baton continue review-needed --clear`, or pass `--replace` to overwrite it"))
}

pub fn cmd_review_needed(ctx: &Ctx, args: ReviewNeededArgs) -> Result<Report, CommandError> {
    let super::Gathered {
        layout,
        changes,
        facts,
    } = gather(ctx)?;
    let dir = feature_dir(facts.as_ref())?;
    if args.clear {
        let path = dir.join(REVIEW_NEEDED_FILE);
        // Nothing to clear takes no lock, so it creates nothing.
        let removed = std::fs::symlink_metadata(layout.root.join(&path)).is_ok() && {
            let lock = lock_feature(&layout, ctx.lock_wait)?;
            clear_review_needed(&layout, &lock, &dir)?
        };
        let text = if removed {
            format!("removed {}", shown(&path))
        } else {
            format!("no {} to clear; nothing changed", shown(&path))
        };
        return Ok(Report::ok(
            json!({ "cleared": removed, "path": path }),
            text,
        ));
    }
    let task = args.task.unwrap_or_default();
    let facts = facts.ok_or_else(no_feature)?;
    if let Some(list) = &facts.tasks
        && list.get(&task).is_none()
    {
        return Err(CommandError::usage(format!(
            "no task {} in {}",
            esc(&task),
            facts
                .tasks_path
                .as_deref()
                .unwrap_or(Path::new("TASKS.md"))
                .display()
        ))
        .hint("name the task the delegate was working on; nothing was written"));
    }
    let partial = match &args.partial_file {
        Some(raw) => {
            let path = path_in_project(&ctx.dir, &layout.root, raw, "--partial-file", false)?;
            let bytes = read_capped(&path, REVIEW_NEEDED_CAP / 2)?.unwrap_or_default();
            Some(String::from_utf8_lossy(&bytes).into_owned())
        }
        None => args.partial,
    };
    let review = ReviewNeeded {
        task: Some(task.clone()),
        by: ctx.session().map(String::from),
        cap: args.cap,
        written_at: Some(format_ts(ctx.now)),
        reason: args.reason,
        partial,
    };
    // Checked before the lock, so that a refusal creates nothing, and again under it.
    if !args.replace {
        refuse_existing(&facts)?;
    }
    let lock = lock_feature(&layout, ctx.lock_wait)?;
    let facts = read_feature_locked(&layout, &changes, ctx.now, &lock)?.ok_or_else(no_feature)?;
    let dir = feature_dir(Some(&facts))?;
    if !args.replace {
        refuse_existing(&facts)?;
    }
    let written = write_review_needed(&layout, &lock, &dir, &format_review_needed(&review))?;
    drop(lock);
    let mut report = Report::ok(
        json!({
            "written": written,
            "task": task,
            "by": review.by,
            "cap": review.cap,
            "written_at": review.written_at,
        }),
        format!(
            "wrote {} for {}\nnext: a person reviews it, then `baton continue review-needed --clear`",
            shell_quote(&shown(&written)),
            esc(&task)
        ),
    );
    if facts.is_degraded() {
        for r in &facts.problems {
            report = report.warn(format!("{}: {}", r.rule, r.message));
        }
    }
    for w in facts.warnings {
        report = report.warn(esc(&w));
    }
    Ok(report)
}
