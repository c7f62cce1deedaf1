use std::ffi::OsString;
use std::path::Path;

use clap::Args;

use super::gather;
use crate::commands::ticket_loop::{WriteFlags, breadcrumb, loop_report, owner_record, writer};
use crate::context::Ctx;
use crate::error::CommandError;
use crate::output::Report;
use baton_core::decide::loop_resume::Mode;
use baton_core::decide::loop_write::{ASK, REFUSED, check_key_collision};
use baton_core::decide::ownership::{GateOutcome, gate};
use baton_core::model::{LoopState, LoopStatus};
use baton_core::time::format_ts;
use baton_core::{Decision, Reason};
use baton_store::read::read_capped;
use baton_store::{StateStore, git};

/// Accept a resume offer: take ownership (owner epoch + 1, `resume_count` + 1, status active)
/// and print the governing Brief or Plan, so it is in context before the next worker spawns.
///
/// In `confirm` mode (partial work in the tree) one of `--discard` or `--commit` is required;
/// in `never` mode, `--force`.
#[derive(Debug, Args)]
pub struct AcceptArgs {
    /// The ticket id.
    ticket: OsString,
    /// Move the partial work into a git stash (recoverable with `git stash list`).
    #[arg(long, conflicts_with = "commit")]
    discard: bool,
    /// Commit the partial work on the current branch.
    #[arg(long)]
    commit: bool,
    #[command(flatten)]
    flags: WriteFlags,
}

/// The largest governing artifact printed in full.
const ARTIFACT_CAP: u64 = 64 * 1024;

pub fn cmd_resume_accept(ctx: &Ctx, args: AcceptArgs) -> Result<Report, CommandError> {
    let g = gather(ctx, &args.ticket)?;
    let notes = g.notes.join("\n");
    let t = g.target.arg();
    let Some(loaded) = &g.loaded else {
        return Err(
            CommandError::usage(format!("no loop-state for {t}: nothing to resume")).hint(format!(
                "check for other tickets with `baton resume`, or start with `baton loop init {t}`"
            )),
        );
    };
    loaded.writable()?;
    if let Err(d) = check_key_collision(&loaded.state, &g.target.raw, &g.target.key) {
        return Ok(Report::decision(&d).text_before(&notes));
    }
    let offer = &g.decision;
    let refuse = |verdict, rule, message: String, next: String| {
        Ok(Report::decision(&Decision::new(
            verdict,
            Reason::new(rule, message),
            Some(next),
        ))
        .text_before(&notes))
    };
    match (offer.decision.verdict, offer.mode) {
        ("offer", Some(_)) => {}
        ("own", _) => {
            return Ok(Report::ok(
                serde_json::json!({ "verdict": "own", "reasons": offer.decision.reasons, "next": offer.decision.next }),
                format!(
                    "this session already owns {t}; nothing to accept\nnext: carry on from {}",
                    breadcrumb(&loaded.state)
                ),
            ));
        }
        ("live", _) => {
            let mut d = offer.decision.clone();
            d.verdict = REFUSED;
            return Ok(Report::decision(&d).text_before(&notes));
        }
        _ => {
            return Err(CommandError::usage(format!(
                "the loop for {t} is {}: nothing to resume",
                loaded.state.status.as_str()
            ))
            .hint(format!("start a new loop with `baton loop init {t}`")));
        }
    }
    let mode = offer.mode.unwrap_or(Mode::Never);
    if mode == Mode::Confirm && !args.discard && !args.commit {
        return refuse(
            ASK,
            "loop.confirm-needs-choice",
            format!("the tree holds partial work of {t}; a human chooses what happens to it"),
            format!(
                "ask the human, then `baton resume accept {t} --discard` (kept in `git stash`) or `baton resume accept {t} --commit`"
            ),
        );
    }
    if mode == Mode::Never && !args.flags.force {
        return refuse(
            ASK,
            "loop.never-needs-force",
            format!(
                "no resume rule covers the loop for {t} ({})",
                loaded.state.position()
            ),
            format!(
                "ask the human; resume anyway with `baton resume accept {t} --force`, or start over with `baton resume fresh {t}`"
            ),
        );
    }
    let mut reasons = offer.decision.reasons.clone();
    let record = owner_record(&loaded.state);
    if let GateOutcome::Refused(d) = gate(
        record,
        writer(ctx, &args.flags),
        ctx.now,
        &g.target.file_name(),
    ) {
        return Ok(Report::decision(&d).text_before(&notes));
    }
    let layout = &g.store.layout;
    let state_dir = layout.state_dir_in_tree();
    if args.discard || args.commit {
        let dirty = git::tree_status(&layout.root, state_dir.as_deref())?.dirty;
        if dirty && args.discard {
            let msg = format!(
                "baton: partial work of {} set aside on resume at {}",
                g.target.raw,
                format_ts(ctx.now)
            );
            let stash = git::stash_push(&layout.root, &msg, state_dir.as_deref())?;
            reasons.push(Reason::new("loop.partial-work-stashed", format!("the partial work is in stash {stash} (`git stash list`; restore with `git stash apply {stash}`)")));
        } else if dirty {
            let msg = format!(
                "wip({}): partial engineer work kept on resume",
                g.target.raw
            );
            let commit = git::commit_all(&layout.root, &msg, state_dir.as_deref())?;
            reasons.push(Reason::new(
                "loop.partial-work-committed",
                format!("the partial work is committed as {commit}"),
            ));
        }
    }
    let mut state = loaded.state.clone();
    state.session_id = ctx.session.clone();
    state.owner_epoch += 1;
    state.resume_count += 1;
    state.status = LoopStatus::Active;
    state.interrupted_at = None;
    state.interrupt_reason = None;
    state.resume_after = None;
    state.last_updated = Some(format_ts(ctx.now));
    g.store.write_loop(&g.target.key, &state)?;
    let lost = lost_work(layout.root.as_path(), &state);
    let epoch = state.owner_epoch;
    let pos = state.position();
    let next = if lost.is_some() {
        format!(
            "before spawning anything, find the lost work (`git log --all`, `git stash list`, `git reflog`); then continue from {pos}; pass `--epoch {epoch}` on later writes"
        )
    } else if mode == Mode::Respawn || (mode == Mode::Confirm && args.discard) {
        format!("spawn the in-flight worker again ({pos}); pass `--epoch {epoch}` on later writes")
    } else {
        format!("continue from {pos}; pass `--epoch {epoch}` on later writes")
    };
    reasons.extend(lost);
    let decision = Decision {
        verdict: "accepted",
        reasons,
        next: Some(next),
    };
    let message = format!(
        "resumed {} {} (resume #{}, owner epoch {})",
        g.target.raw,
        breadcrumb(&state),
        state.resume_count,
        state.owner_epoch
    );
    let (artifact_text, artifact) = governing_artifact(&state);
    Ok(
        loop_report(&decision, &g.target, &loaded.path, &state, &message)
            .with("mode", mode.as_str())
            .with("artifact", artifact)
            .text_after(&artifact_text)
            .text_before(&notes),
    )
}

/// A branch with no commits beyond its base while the state claims engineer output or open
/// findings: the work was lost somewhere, and re-spawning blindly would hide it.
fn lost_work(root: &Path, state: &LoopState) -> Option<Reason> {
    let base = state.base_branch.as_deref()?;
    let claims_output = matches!(
        state.last_phase_action.as_deref(),
        Some("engineer_returned" | "rerun_pending")
    ) || state
        .loop_state
        .last_engineer_summary
        .as_deref()
        .is_some_and(|s| !s.is_empty());
    let open_findings = !state.loop_state.findings_log.is_empty();
    if !claims_output && !open_findings {
        return None;
    }
    if git::commits_beyond(root, base).ok()?? != 0 {
        return None;
    }
    let claim = if claims_output {
        "engineer output"
    } else {
        "open findings"
    };
    Some(Reason::new(
        "loop.lost-work",
        format!(
            "the state claims {claim}, but the branch has no commits beyond {base}: the work may be lost; find it before re-spawning anything"
        ),
    ))
}

/// The Brief (whole, up to a cap) or the Plan (its files, and its index), as text and JSON.
fn governing_artifact(state: &LoopState) -> (String, serde_json::Value) {
    if let Some(brief) = &state.brief_path {
        return match read_capped(Path::new(brief), ARTIFACT_CAP) {
            Ok(Some(bytes)) => {
                let body = String::from_utf8_lossy(&bytes).into_owned();
                (
                    format!(
                        "\n--- governing Brief: {brief} ---\n{}\n--- end of Brief ---",
                        body.trim_end()
                    ),
                    serde_json::json!({ "kind": "brief", "path": brief, "text": body }),
                )
            }
            Ok(None) => (
                format!("warning: the recorded Brief {brief} is missing"),
                serde_json::json!({ "kind": "brief", "path": brief, "missing": true }),
            ),
            Err(e) => (
                format!("warning: cannot read the Brief: {e}"),
                serde_json::json!({ "kind": "brief", "path": brief, "error": e.to_string() }),
            ),
        };
    }
    if let Some(plan) = &state.plan_path {
        let mut files: Vec<String> = std::fs::read_dir(plan)
            .map(|rd| {
                rd.filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        files.sort();
        let index = ["PLAN.md", "README.md", "plan.md"]
            .into_iter()
            .find(|f| files.iter().any(|x| x == f));
        let mut text = format!(
            "\n--- governing Plan: {plan} ---\nfiles: {}\n",
            files.join(", ")
        );
        if let Some(index) = index
            && let Ok(Some(bytes)) = read_capped(&Path::new(plan).join(index), ARTIFACT_CAP)
        {
            text.push_str(&format!("{}\n", String::from_utf8_lossy(&bytes).trim_end()));
        }
        text.push_str("--- end of Plan ---");
        return (
            text,
            serde_json::json!({ "kind": "plan", "path": plan, "files": files }),
        );
    }
    (String::new(), serde_json::Value::Null)
}
