use std::ffi::OsString;

use baton_core::journal::JournalEvent;
use clap::Args;
use serde_json::{Value, json};

use super::{Applied, transition};
use crate::args::WriteFlags;
use crate::error::CommandError;
use crate::output::Report;
use baton_core::decide::loop_write::check_transition;
use baton_core::model::Phase;
use baton_core::text::esc;
use baton_core::{Decision, Reason};
use baton_ops::env::Ctx;

/// Record a phase transition and print its breadcrumb.
///
/// Ownership-gated: refused (exit 3) while another live session owns the loop, or when
/// `--epoch` is older than the file's. Refused while a retroactive Brief is owed and the action
/// is `engineer_spawned`.
#[derive(Debug, Args)]
pub struct SetArgs {
    /// The ticket id.
    ticket: OsString,
    /// The phase entered or left (`last_phase`): skeptic and qa are the Phase 6/6b loops, the
    /// engineer runs inside them, quality_gate is Phase 7, ci_loop and ci_wait Phase 10.
    #[arg(long, value_parser = Phase::NAMES)]
    phase: String,
    /// What happened (`last_phase_action`): spawned, returned, engineer_spawned,
    /// engineer_returned, rerun_pending, debugger_spawned, debugger_returned,
    /// fix_engineer_spawned, fix_engineer_returned, ci_poll_pending, cap_exceeded, timeout, or
    /// another action of your conductor's.
    #[arg(long)]
    action: String,
    /// The Skeptic/QA iteration now running.
    #[arg(long, value_name = "N")]
    iteration: Option<u64>,
    /// The iteration cap.
    #[arg(long, value_name = "N")]
    max_iterations: Option<u64>,
    /// Append an open finding to `findings_log` (repeatable): `{id, title, first_raised,
    /// status: "open"}`, its id a slug of the text.
    #[arg(long = "finding", value_name = "TEXT")]
    findings: Vec<String>,
    /// Move a finding to another status (repeatable): open, addressed, closed or deferred.
    #[arg(long = "finding-status", value_name = "ID=STATUS", value_parser = parse_finding_status)]
    finding_status: Vec<(String, String)>,
    /// Append a QA failure to `qa_failures_log` (repeatable).
    #[arg(long = "qa-failure", value_name = "TEXT")]
    qa_failures: Vec<String>,
    /// Record the engineer's summary of what it did.
    #[arg(long = "engineer-summary", value_name = "TEXT")]
    engineer_summary: Option<String>,
    #[command(flatten)]
    flags: WriteFlags,
}

pub fn cmd_loop_set(ctx: &Ctx, args: SetArgs) -> Result<Report, CommandError> {
    if args.action.trim().is_empty() {
        return Err(CommandError::usage("--action is empty")
            .hint("pass what happened, for example `--action returned`"));
    }
    transition(
        ctx,
        &args.ticket,
        &args.flags,
        JournalEvent::Set,
        |state, target| {
            check_transition(state, &args.phase, Some(&args.action), &target.arg())?;
            state.last_phase = Some(args.phase.clone());
            state.last_phase_action = Some(args.action.clone());
            // `loop_state.phase` names the loop that runs (skeptic or qa); the engineer's fix pass
            // and the later phases leave it alone, so a QA fix pass stays in 6b.
            if let Some(phase) = Phase::parse(&args.phase).filter(|p| p.is_loop()) {
                state.loop_state.phase = Some(phase.as_str().to_string());
            }
            if let Some(n) = args.iteration {
                state.loop_state.iteration = n;
            }
            if let Some(n) = args.max_iterations {
                state.loop_state.max_iterations = n;
            }
            let raised = state.loop_state.iteration;
            for text in &args.findings {
                // Ids stay unique, so `--finding-status` can reach every finding.
                let taken = |id: &str| {
                    state
                        .loop_state
                        .findings_log
                        .iter()
                        .any(|f| f.get("id").and_then(Value::as_str) == Some(id))
                };
                let base = slug(text);
                let id = (1..)
                    .map(|n| {
                        if n == 1 {
                            base.clone()
                        } else {
                            format!("{base}-{n}")
                        }
                    })
                    .find(|id| !taken(id))
                    .expect("an unused suffix exists");
                state.loop_state.findings_log.push(json!({
                    "id": id,
                    "title": text,
                    "first_raised": raised,
                    "status": "open",
                }));
            }
            for (id, status) in &args.finding_status {
                let entry = state
                    .loop_state
                    .findings_log
                    .iter_mut()
                    .filter_map(Value::as_object_mut)
                    .find(|f| f.get("id").and_then(Value::as_str) == Some(id.as_str()));
                match entry {
                    Some(f) => {
                        f.insert("status".into(), json!(status));
                    }
                    None => {
                        return Err(Decision::new(
                            baton_core::Verdict::Invalid,
                            Reason::new(
                                baton_core::Rule::LoopUnknownFinding,
                                format!("findings_log has no finding with id {:?}", esc(id)),
                            ),
                            Some(format!(
                                "list the findings with `baton loop show {} --json`",
                                target.arg()
                            )),
                        ));
                    }
                }
            }
            state
                .loop_state
                .qa_failures_log
                .extend(args.qa_failures.iter().cloned().map(Value::String));
            if let Some(summary) = &args.engineer_summary {
                state.loop_state.last_engineer_summary = Some(summary.clone());
            }
            state.touch(ctx.now);
            Ok(Applied {
                changed: true,
                message: state.breadcrumb(),
                next: None,
                warnings: Vec::new(),
            })
        },
    )
}

/// `ID=STATUS`, with a status of the originating findings_log.
fn parse_finding_status(raw: &str) -> Result<(String, String), String> {
    let (id, status) = raw
        .split_once('=')
        .ok_or_else(|| format!("{raw:?} is not ID=STATUS"))?;
    const STATUSES: [&str; 4] = ["open", "addressed", "closed", "deferred"];
    if id.is_empty() || !STATUSES.contains(&status) {
        return Err(format!(
            "{raw:?}: give a finding id and one of {}",
            STATUSES.join(", ")
        ));
    }
    Ok((id.to_string(), status.to_string()))
}

/// A finding's id: its text in lower case, words joined by `-`, at most 48 characters, as the
/// originating protocol's short slugs (`null-deref-user-service`).
fn slug(text: &str) -> String {
    let mut out = String::new();
    for word in text
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        if out.len() + word.len() + 1 > 48 {
            break;
        }
        if !out.is_empty() {
            out.push('-');
        }
        out.push_str(&word.to_ascii_lowercase());
    }
    if out.is_empty() {
        "finding".into()
    } else {
        out
    }
}
