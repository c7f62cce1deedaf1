use std::ffi::OsStr;

use serde_json::{Value, json};

use super::gather;
use crate::commands::ticket_loop::{WriteFlags, adopt_legacy, breadcrumb, may_replace};
use crate::context::Ctx;
use crate::error::{CommandError, ExitStatus};
use crate::output::{Report, decision_json, render_decision, shell_quote};
use baton_core::decide::loop_resume::{ResumeFacts, decide_loop_resume};
use baton_core::decide::loop_write::check_key_collision;
use baton_store::{StateStore, git};

pub fn cmd_resume_check(ctx: &Ctx, ticket: &OsStr) -> Result<Report, CommandError> {
    let g = gather(ctx, ticket)?;
    let notes = g.notes.join("\n");
    if let Some(loaded) = &g.loaded {
        loaded.writable()?;
        if let Err(d) = check_key_collision(&loaded.state, &g.target.raw, &g.target.key) {
            return Ok(Report::decision(&d).text_before(&notes));
        }
    }
    let d = &g.decision;
    let mut archived = None;
    let mut kept = None;
    if let Some(loaded) = g.loaded.as_ref().filter(|_| d.archive) {
        match may_replace(ctx, &loaded.state, &WriteFlags::default(), &g.target) {
            Ok(()) => archived = Some(g.store.archive_loop(&g.target.key, ctx.now)?),
            Err(refusal) => kept = refusal.reasons.first().map(|r| r.message.clone()),
        }
    }
    let mut text = render_decision(&d.decision, d.mode.map(|m| m.as_str()));
    if let Some(loaded) = &g.loaded
        && d.decision.verdict != "none"
    {
        text.push_str(&format!(
            "loop: {} {}\n",
            g.target.raw,
            breadcrumb(&loaded.state)
        ));
    }
    if let Some(after) = &d.resume_after {
        text.push_str(&format!("resume after: {after}\n"));
    }
    if let Some(to) = &archived {
        text.push_str(&format!("archived: {}\n", to.display()));
    }
    if let Some(why) = &kept {
        text.push_str(&format!("left in place: {why}\n"));
    }
    if let Some(others) = &d.others {
        text.push_str(&format!("info: {others}\n"));
    }
    let report = Report::new(ExitStatus::Success, decision_json(&d.decision), text)
        .with("mode", d.mode.map(|m| m.as_str()))
        .with("ticket", g.target.raw.clone())
        .with("key", g.target.key.clone())
        .with("resume_after", d.resume_after.clone())
        .with("archived", archived.map(|p| p.display().to_string()))
        .with("others", d.others.clone())
        .with("notes", g.notes.clone())
        .with(
            "state",
            g.loaded
                .as_ref()
                .filter(|_| d.decision.verdict != "none")
                .map_or(Value::Null, |l| {
                    crate::commands::ticket_loop::state_json(&l.state)
                }),
        );
    Ok(report.text_before(&notes))
}

/// `baton resume` with no ticket: every loop in the project and its verdict, read-only.
pub fn cmd_resume_all(ctx: &Ctx) -> Result<Report, CommandError> {
    let store = ctx.store()?;
    if !store.exists()? {
        return Ok(Report::ok(
            json!({ "loops": [], "notes": [] }),
            "no loops in this project",
        ));
    }
    let _guard = store.lock()?;
    let mut notes = adopt_legacy(&store, ctx)?;
    let layout = &store.layout;
    let mut dirty = None;
    let mut rows = Vec::new();
    let mut text = String::new();
    for scanned in store.scan_loops()? {
        let loaded = match scanned.loaded {
            Ok(l) => l,
            Err(e) => {
                notes.push(format!("warning: skipped an unreadable candidate: {e}"));
                continue;
            }
        };
        let ticket = loaded
            .state
            .ticket_id
            .clone()
            .unwrap_or_else(|| scanned.key.clone());
        if dirty.is_none() && baton_core::decide::loop_resume::is_resumable(&loaded.state, ctx.now)
        {
            dirty = Some(
                git::tree_status(&layout.root, layout.state_dir_in_tree().as_deref())
                    .ok()
                    .map(|t| t.dirty),
            );
        }
        let arg = shell_quote(&ticket);
        let d = decide_loop_resume(&ResumeFacts {
            ticket_arg: &arg,
            state: Some(&loaded.state),
            me: ctx.session(),
            now: ctx.now,
            tree_dirty: dirty.flatten(),
            others: &[],
        });
        let mode = d
            .mode
            .map(|m| format!(" ({})", m.as_str()))
            .unwrap_or_default();
        let verdict = if d.archive {
            "none (finished)"
        } else {
            d.decision.verdict
        };
        text.push_str(&format!(
            "{}: {verdict}{mode} {}\n",
            scanned.key,
            breadcrumb(&loaded.state)
        ));
        if let Some(next) = &d.decision.next
            && d.decision.verdict == "offer"
        {
            text.push_str(&format!("  next: {next}\n"));
        }
        let mut row = decision_json(&d.decision);
        row["key"] = json!(scanned.key);
        row["ticket"] = json!(ticket);
        row["mode"] = json!(d.mode.map(|m| m.as_str()));
        rows.push(row);
    }
    if rows.is_empty() {
        text.push_str("no loops in this project\n");
    }
    Ok(Report::ok(json!({ "loops": rows, "notes": notes }), text).text_before(&notes.join("\n")))
}
