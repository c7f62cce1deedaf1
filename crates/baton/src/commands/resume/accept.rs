use std::ffi::OsString;

use clap::Args;

use crate::args::WriteFlags;
use crate::error::CommandError;
use crate::output::Report;
use crate::view::loop_report;
use baton_core::decide::loop_resume::Mode;
use baton_core::text::{esc, esc_join};
use baton_ops::env::Ctx;
use baton_ops::ticket_loop::{self, Accept, Acceptance, Governing, SetAside};

/// Accept a resume offer: take the loop over and print what governs it.
///
/// Accept a resume offer: take ownership (owner epoch + 1, `resume_count` + 1, status active)
/// and print every governing artifact the loop records (the Brief's text, then the Plan's files
/// and index; at tier plan both), so it is in context before the next worker spawns.
///
/// In `confirm` mode (partial work in the tree) one of `--discard` or `--commit` is required;
/// in `never` mode, `--force`. git runs outside the loop's lock: the loop is claimed first (so
/// no other session can accept it meanwhile), and the accept is finished once git is done.
#[derive(Debug, Args)]
pub struct AcceptArgs {
    /// The ticket id.
    ticket: OsString,
    /// Move the partial work into a git stash (recoverable with `git stash list`); the
    /// governing Brief and Plan and baton's own files stay where they are.
    #[arg(long, conflicts_with = "commit")]
    discard: bool,
    /// Commit the partial work on the loop's branch (which must be checked out).
    #[arg(long)]
    commit: bool,
    #[command(flatten)]
    flags: WriteFlags,
}

pub fn cmd_resume_accept(ctx: &Ctx, args: AcceptArgs) -> Result<Report, CommandError> {
    let set_aside = if args.discard {
        Some(SetAside::Discard)
    } else if args.commit {
        Some(SetAside::Commit)
    } else {
        None
    };
    let done = ticket_loop::accept(
        ctx,
        &*ctx.store()?,
        &Accept {
            ticket: &args.ticket,
            set_aside,
            flags: args.flags.ownership(),
        },
    )?;
    Ok(match done {
        Acceptance::Refused { decision, notes } => {
            Report::decision(&decision).text_before(&notes.join("\n"))
        }
        Acceptance::Owned { target, decision } => {
            let t = target.arg();
            Report::ok(
                serde_json::json!({ "verdict": "own", "reasons": decision.reasons, "next": decision.next }),
                format!(
                    "this session already owns {t}; nothing to accept\nnext: {}",
                    decision.next.as_deref().unwrap_or("carry on")
                ),
            )
        }
        Acceptance::Accepted(a) => {
            let (texts, artifacts): (Vec<String>, Vec<serde_json::Value>) =
                a.artifacts.iter().map(governing_artifact).unzip();
            let mut report = loop_report(&a.decision, &a.target, &a.path, &a.state, &a.message)
                .with("mode", a.mode.map(Mode::as_str))
                .with("artifacts", artifacts)
                .text_after(a.earlier_stash.as_deref().unwrap_or_default());
            for text in &texts {
                report = report.text_after(text);
            }
            report = report.text_before(&a.notes.join("\n"));
            for w in a.warnings {
                report = report.warn(w);
            }
            report
        }
    })
}

/// A Brief (whole, up to a cap) or a Plan (its files, and its index), as text and JSON.
fn governing_artifact(artifact: &Governing) -> (String, serde_json::Value) {
    match artifact {
        Governing::Refused { kind, path, why } => {
            let what = match kind {
                ticket_loop::ArtifactKind::Brief => "Brief",
                ticket_loop::ArtifactKind::Plan => "Plan",
            };
            (
                format!("warning: the recorded {what} is not read: {why}"),
                serde_json::json!({ "kind": kind.as_str(), "path": path, "refused": why }),
            )
        }
        Governing::Brief { path, text } => (
            format!(
                "\n--- governing Brief: {} ---\n{}\n--- end of Brief ---",
                esc(path),
                text.trim_end()
            ),
            serde_json::json!({ "kind": "brief", "path": path, "text": text }),
        ),
        Governing::BriefMissing { path } => (
            format!("warning: the recorded Brief {} is missing", esc(path)),
            serde_json::json!({ "kind": "brief", "path": path, "missing": true }),
        ),
        Governing::BriefUnreadable { path, error } => (
            format!("warning: cannot read the Brief: {error}"),
            serde_json::json!({ "kind": "brief", "path": path, "error": error }),
        ),
        Governing::Plan { path, files, index } => {
            let mut text = format!(
                "\n--- governing Plan: {} ---\nfiles: {}\n",
                esc(path),
                esc_join(files.iter().map(String::as_str))
            );
            if let Some(index) = index {
                text.push_str(&format!("{}\n", index.trim_end()));
            }
            text.push_str("--- end of Plan ---");
            (
                text,
                serde_json::json!({ "kind": "plan", "path": path, "files": files, "index": index }),
            )
        }
    }
}
