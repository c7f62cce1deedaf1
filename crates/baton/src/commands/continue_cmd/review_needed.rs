use std::path::PathBuf;

use clap::Args;
use serde_json::json;

use super::shown;
use crate::error::CommandError;
use crate::output::Report;
use baton_core::text::{esc, shell_quote};
use baton_ops::continuation::{self, Partial, ReviewCleared, ReviewMarked, ReviewRequest};
use baton_ops::env::Ctx;

/// Record that a person must look (REVIEW_NEEDED.md), or clear it.
///
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

pub fn cmd_review_needed(ctx: &Ctx, args: ReviewNeededArgs) -> Result<Report, CommandError> {
    if args.clear {
        let ReviewCleared { path, removed } = continuation::clear_review_needed(ctx)?;
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
    let partial = match args.partial_file {
        Some(path) => Some(Partial::File(path)),
        None => args.partial.map(Partial::Inline),
    };
    let ReviewMarked {
        written,
        review,
        problems,
        warnings,
    } = continuation::mark_review_needed(
        ctx,
        ReviewRequest {
            task: args.task.unwrap_or_default(),
            reason: args.reason,
            cap: args.cap,
            partial,
            replace: args.replace,
        },
    )?;
    let task = review.task.clone().unwrap_or_default();
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
    for r in &problems {
        report = report.warn(format!("{}: {}", r.rule, r.message));
    }
    for w in warnings {
        report = report.warn(esc(&w));
    }
    Ok(report)
}
