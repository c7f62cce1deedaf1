use std::ffi::OsStr;

use serde_json::Value;

use crate::error::{CommandError, ExitStatus};
use crate::output::{Report, decision_json, render_decision};
use baton_core::Reason;
use baton_core::decide::loop_resume::last_write;
use baton_core::decide::loop_write::check_key_collision;
use baton_core::text::esc_or;
use baton_ops::env::Ctx;
use baton_ops::ticket_loop::gather;
use baton_ops::ticket_loop::{Ownership, Target, may_replace};

pub fn cmd_resume_check(ctx: &Ctx, ticket: &OsStr) -> Result<Report, CommandError> {
    let store = ctx.store()?;
    let g = gather(ctx, &*store, Target::derive(ctx, ticket))?;
    let notes = g.notes.join("\n");
    if let Some(loaded) = &g.loaded {
        loaded.writable()?;
        if let Err(d) = check_key_collision(&loaded.state, &g.target.raw, &g.target.key) {
            return Ok(Report::decision(&d).text_before(&notes));
        }
    }
    let mut d = g.decision.clone();
    let mut archived = None;
    let mut left_in_place = None;
    if let Some(loaded) = g.loaded.as_ref().filter(|_| d.archive && !g.held_legacy) {
        match may_replace(ctx, &loaded.state, &Ownership::default(), &g.target) {
            Ok(()) => {
                archived = Some(store.archive_loop(&g.target.key, &loaded.expect(), ctx.now)?)
            }
            Err(refusal) => {
                // A finished loop that the gate protects is left in place, and the next step is
                // one that will not be refused.
                let t = g.target.arg();
                left_in_place = refusal.reasons.first().map(|r| r.message.clone());
                let (message, next) = if refusal.rules() == ["gate.null-owner"] {
                    (
                        "it records no owner session (legacy state): it is left in place"
                            .to_string(),
                        format!(
                            "if no other session uses it, archive it with `baton resume fresh {t} --force`, then `baton loop init {t}`"
                        ),
                    )
                } else {
                    let owner = esc_or(loaded.state.owner(), "(no session id)");
                    (
                        format!(
                            "session {owner} finished this loop and still holds it ({}): it is left in place",
                            last_write(&loaded.state, ctx.now)
                        ),
                        format!(
                            "leave it to session {owner}; a new loop for {t} can start once that session's last write is 10 minutes old"
                        ),
                    )
                };
                d.decision
                    .reasons
                    .push(Reason::new(baton_core::Rule::LoopTerminalHeld, message));
                d.decision.next = Some(next);
            }
        }
    }
    let mut text = render_decision(&d.decision, d.mode.map(|m| m.as_str()));
    if let Some(loaded) = &g.loaded
        && d.decision.verdict != "none"
    {
        text.push_str(&format!(
            "loop: {} {}\n",
            g.target.shown(),
            loaded.state.breadcrumb()
        ));
    }
    if let Some(after) = &d.resume_after {
        let shown = baton_core::time::parse_ts(Some(after)).map_or_else(
            || baton_core::text::esc(after).into_owned(),
            |t| ctx.shown(t),
        );
        text.push_str(&format!("resume after: {shown}\n"));
    }
    if let Some(to) = &archived {
        text.push_str(&format!("archived: {}\n", to.display()));
    }
    if let Some(why) = &left_in_place {
        text.push_str(&format!("left in place: {why}\n"));
    }
    if let Some(work) = g
        .loaded
        .as_ref()
        .and_then(|l| l.state.discarded_work.as_ref())
    {
        text.push_str(&format!("{}\n", work.describe()));
    }
    if let Some(others) = &d.others {
        text.push_str(&format!("info: {others}\n"));
    }
    let report = Report::new(ExitStatus::Success, decision_json(&d.decision), text)
        .with("mode", d.mode.map(|m| m.as_str()))
        .with("ticket", g.target.raw.clone())
        .with("key", g.target.key.clone())
        .with("resume_after", d.resume_after.clone())
        .with(
            "archived",
            archived.as_ref().map(|p| p.display().to_string()),
        )
        .with("left_in_place", left_in_place)
        .with("legacy_held", g.held_legacy)
        .with("others", d.others.clone())
        .with("notes", g.notes.clone())
        .with(
            "state",
            g.loaded
                .as_ref()
                .filter(|_| d.decision.verdict != "none" || archived.is_none())
                .map_or(Value::Null, |l| crate::view::state_json(&l.state)),
        );
    Ok(report.text_before(&notes))
}
