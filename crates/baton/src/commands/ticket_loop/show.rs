use std::ffi::OsString;

use clap::Args;
use serde_json::json;

use super::{Target, breadcrumb, missing_loop, state_json};
use crate::context::Ctx;
use crate::error::CommandError;
use crate::output::Report;
use baton_core::time::{age, human_age, is_live, parse_ts};
use baton_store::StateStore;
use baton_store::read::Access;

/// Show a ticket's loop state.
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// The ticket id.
    ticket: OsString,
}

pub fn cmd_loop_show(ctx: &Ctx, args: ShowArgs) -> Result<Report, CommandError> {
    let store = ctx.store()?;
    let target = Target::derive(ctx, &args.ticket);
    let loaded = store
        .read_loop(&target.key)?
        .ok_or_else(|| missing_loop(&target))?;
    if let Err(d) =
        baton_core::decide::loop_write::check_key_collision(&loaded.state, &target.raw, &target.key)
    {
        return Ok(Report::decision(&d));
    }
    let s = &loaded.state;
    let last = parse_ts(s.last_updated.as_deref());
    let liveness = match last {
        Some(t) if is_live(ctx.now, last) => {
            format!("live, last write {} ago", human_age(age(ctx.now, t)))
        }
        Some(t) => format!("stale, last write {} ago", human_age(age(ctx.now, t))),
        None => "stale, never written".into(),
    };
    let mut text = format!(
        "{} {}\n  file:     {}\n  status:   {}\n  owner:    {} (epoch {}, {liveness})\n",
        s.ticket_id.as_deref().unwrap_or(&target.raw),
        breadcrumb(s),
        loaded.path.display(),
        s.status.as_str(),
        s.owner().unwrap_or("none"),
        s.owner_epoch,
    );
    if let Some(at) = &s.interrupted_at {
        text.push_str(&format!(
            "  interrupted: {at} ({})\n",
            s.interrupt_reason.as_deref().unwrap_or("unknown")
        ));
    }
    if let Some(after) = &s.resume_after {
        text.push_str(&format!("  resume after: {after}\n"));
    }
    text.push_str(&format!(
        "  branch:   {} (base {})\n  tier:     {}{}\n",
        s.branch.as_deref().unwrap_or("?"),
        s.base_branch.as_deref().unwrap_or("?"),
        s.promotion_tier.as_deref().unwrap_or("none"),
        if s.brief_owed {
            " (a retroactive Brief is owed)"
        } else {
            ""
        },
    ));
    for (label, path) in [("brief", &s.brief_path), ("plan", &s.plan_path)] {
        if let Some(path) = path {
            text.push_str(&format!("  {label}:    {path}\n"));
        }
    }
    text.push_str(&format!(
        "  findings: {}, qa failures: {}, resumes: {}\n",
        s.loop_state.findings_log.len(),
        s.loop_state.qa_failures_log.len(),
        s.resume_count
    ));
    if let Access::ReadOnly { found } = loaded.access {
        text.push_str(&format!(
            "warning: schema_version {found} is newer than this baton knows; shown read-only\n"
        ));
    }
    if s.loop_key.as_deref().is_some_and(|k| k != target.key) {
        text.push_str(&format!(
            "warning: the file's loop_key {:?} disagrees with its name; the name ({}) wins\n",
            s.loop_key.as_deref().unwrap_or_default(),
            target.key
        ));
    }
    Ok(Report::ok(
        json!({
            "key": target.key,
            "path": loaded.path.display().to_string(),
            "live": is_live(ctx.now, last),
            "read_only": loaded.access != Access::ReadWrite,
            "state": state_json(s),
        }),
        text,
    ))
}
