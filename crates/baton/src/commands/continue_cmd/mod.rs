//! `baton continue`: session continuation (docs/continuation.md). Reads the active feature
//! (pointer, `TASKS.md` markers, `REVIEW_NEEDED.md`, `HANDOVER.md`), sets the resume point in
//! one step across the pointer and `TASKS.md`, and writes or clears the cap artifact.
//!
//! `read_feature` is the only way the feature is read, so every call also completes a resume
//! point a killed `--set-resume-point` left half done.

pub mod resume_point;
pub mod review_needed;

use clap::{Args, Subcommand};
use serde_json::{Value, json};

use crate::error::{CommandError, ExitStatus};
use crate::output::Report;
use baton_core::text::{esc, esc_join};
use baton_ops::env::Ctx;
use baton_store::feature::{FeatureFacts, POINTER_PATH};

/// Session continuation: the active feature and the resume packet, and where the next session
/// starts (`--set-resume-point`).
///
/// With no option: the feature's pointer, what is wrong with it, its task markers, the task to
/// resume, uncommitted changes inside it and any REVIEW_NEEDED.md; then the resume packet for
/// every piece of interrupted work in the project, as `baton resume` prints it.
/// `--set-resume-point` moves the pointer's phase and the task markers together, so the next
/// session starts clean.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct ContinueArgs {
    /// Set the resume point: leave exactly one task `[~]` (the one to resume), put other
    /// in-progress tasks back to `[ ]`, mark `--done` tasks `[x]`, and move the pointer's phase
    /// (derived from the markers unless `--phase` is given). Both files change in one step,
    /// or neither does.
    #[arg(long)]
    pub set_resume_point: bool,
    #[command(flatten)]
    pub point: resume_point::ResumePointArgs,
    #[command(subcommand)]
    pub action: Option<ContinueAction>,
}

#[derive(Debug, Subcommand)]
pub enum ContinueAction {
    ReviewNeeded(review_needed::ReviewNeededArgs),
}

pub fn cmd_continue(ctx: &Ctx, args: ContinueArgs) -> Result<Report, CommandError> {
    match args.action {
        Some(ContinueAction::ReviewNeeded(a)) => review_needed::cmd_review_needed(ctx, a),
        None if args.set_resume_point => resume_point::cmd_set_resume_point(ctx, args.point),
        None => cmd_continue_report(ctx, args),
    }
}

pub use baton_ops::continuation::shown;

/// `baton continue`: the active feature's summary, then the resume packet for every piece of
/// interrupted work in the project (the same survey and packet as `baton resume` with no
/// argument).
pub fn cmd_continue_report(ctx: &Ctx, _args: ContinueArgs) -> Result<Report, CommandError> {
    let survey = baton_ops::survey::survey(ctx, &*ctx.store()?)?;
    let (packet, markdown) = crate::view::packet_of(&survey);
    let (summary, feature) = match &survey.feature {
        Some(facts) => feature_summary(facts)?,
        None => (
            format!("no active feature ({POINTER_PATH} does not exist)\n"),
            Value::Null,
        ),
    };
    let text = format!("{summary}\n{markdown}");
    Ok(
        crate::view::survey_report(&survey, &packet, &markdown, text)
            .with("feature", feature)
            .with("pointer_path", POINTER_PATH),
    )
}

/// A short summary of the active feature, in text and JSON.
fn feature_summary(facts: &FeatureFacts) -> Result<(String, Value), CommandError> {
    let mut text = String::new();
    let pointer_json = facts
        .pointer
        .as_ref()
        .map_or(Value::Null, |p| Value::Object(p.fields().clone()));
    match &facts.pointer {
        Some(p) => {
            let field = |v: Option<&str>| esc(v.unwrap_or("?")).into_owned();
            text.push_str(&format!(
                "feature: {} {:?} (phase {}, mode {}, branch {})\n",
                field(p.id()),
                field(p.title()),
                field(p.phase()),
                field(p.mode()),
                field(p.branch()),
            ));
            if p.is_terminal() {
                text.push_str("  the feature is finished: nothing to resume\n");
            }
        }
        None => text.push_str("feature: the pointer cannot be read\n"),
    }
    text.push_str(&format!("pointer: {}\n", shown(&facts.pointer_path)));
    if facts.is_degraded() {
        text.push_str("degraded: a human must fix the pointer before baton rewrites it\n");
        for r in &facts.problems {
            text.push_str(&(crate::output::reason_line(r) + "\n"));
        }
    }
    let resume = facts.resume_task();
    match (&facts.tasks, &facts.tasks_path) {
        (Some(list), Some(path)) => {
            let c = list.counts();
            text.push_str(&format!(
                "tasks: {} in {}: {} done, {} in progress, {} open ({} blocked)\n",
                c.total,
                shown(path),
                c.done,
                c.in_progress,
                c.open,
                c.blocked
            ));
            if let Some(t) = resume {
                text.push_str(&format!(
                    "resume task: {} {} ({})\n",
                    esc(&t.id),
                    esc(&t.title),
                    t.mark.as_box()
                ));
                if let Some(cp) = list.last_checkpoint_before(t.line) {
                    text.push_str(&format!("last checkpoint: {}\n", esc(&cp.text)));
                }
            }
        }
        (None, Some(path)) => text.push_str(&format!("tasks: none read from {}\n", shown(path))),
        _ => {}
    }
    if !facts.dirty.is_empty() {
        text.push_str(&format!(
            "uncommitted in the feature: {}\n",
            esc_join(facts.dirty.iter().map(String::as_str))
        ));
    }
    if let Some(in_scope) = facts.scope_dirty.as_ref().filter(|d| !d.is_empty()) {
        text.push_str(&format!(
            "uncommitted in the feature's scope: {}\n",
            esc_join(in_scope.iter().map(String::as_str))
        ));
    }
    if let (Some(r), Some(path)) = (&facts.review_needed, &facts.review_needed_path) {
        text.push_str(&format!(
            "review needed: {} (task {}): {}\n",
            shown(path),
            esc(r.task.as_deref().unwrap_or("?")),
            esc(r.headline())
        ));
    }
    if let Some(h) = &facts.handover {
        text.push_str(&format!("handover: {}\n", shown(h)));
    }
    let mut feature = serde_json::to_value(facts)
        .map_err(|e| CommandError::new(ExitStatus::Failure, format!("cannot serialize: {e}")))?;
    if let Value::Object(map) = &mut feature {
        map.insert("pointer".into(), pointer_json);
        map.insert("active".into(), facts.is_active().into());
        map.insert("degraded".into(), facts.is_degraded().into());
        map.insert(
            "counts".into(),
            json!(facts.tasks.as_ref().map(|l| l.counts())),
        );
        map.insert("resume_task".into(), json!(resume.map(|t| t.id.as_str())));
        // Warnings travel in the report's own `warnings`.
        map.remove("warnings");
    }
    Ok((text, feature))
}
