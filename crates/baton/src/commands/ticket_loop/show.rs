use std::ffi::OsString;

use clap::Args;
use serde_json::json;

use crate::error::CommandError;
use crate::output::Report;
use crate::view::state_json;
use baton_core::decide::loop_resume::{last_write, resume_after};
use baton_core::text::{esc, esc_or};
use baton_core::time::{is_live, parse_ts};
use baton_ops::env::Ctx;
use baton_ops::loops::legacy_key;
use baton_ops::ticket_loop::{Target, missing_loop};
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
    // A legacy file not yet adopted (a live session still writes it) is shown for its ticket.
    let (loaded, legacy) = match store.read_loop(&target.key)? {
        Some(loaded) => (loaded, false),
        None => match store.read_legacy_loop()? {
            Some(legacy) if legacy_key(&legacy.state) == target.key => (legacy, true),
            _ => return Err(missing_loop(&target).into()),
        },
    };
    if let Err(d) =
        baton_core::decide::loop_write::check_key_collision(&loaded.state, &target.raw, &target.key)
    {
        return Ok(Report::decision(&d));
    }
    let s = &loaded.state;
    let last = s.liveness(ctx.now);
    let liveness = format!(
        "{}, {}",
        if is_live(ctx.now, last) {
            "live"
        } else {
            "stale"
        },
        last_write(s, ctx.now)
    );
    let mut text = format!(
        "{} {}\n  file:     {}\n  status:   {}\n  owner:    {} (epoch {}, {liveness})\n",
        esc(s.ticket_id.as_deref().unwrap_or(&target.raw)),
        s.breadcrumb(),
        loaded.path.display(),
        s.status.as_str(),
        esc_or(s.owner(), "none"),
        s.owner_epoch,
    );
    if let Some(at) = &s.interrupted_at {
        text.push_str(&format!(
            "  interrupted: {} ({})\n",
            parse_ts(Some(at)).map_or_else(|| esc(at).into_owned(), |t| ctx.shown(t)),
            esc_or(s.interrupt_reason.as_deref(), "unknown")
        ));
    }
    if let Some(after) = resume_after(s) {
        text.push_str(&format!("  resume after: {}\n", ctx.shown(after)));
    }
    text.push_str(&format!(
        "  branch:   {} (base {})\n  tier:     {}{}\n",
        esc_or(s.branch.as_deref(), "unknown"),
        esc_or(s.base_branch.as_deref(), "unknown"),
        esc_or(s.promotion_tier.as_deref(), "none"),
        if s.brief_owed {
            " (a retroactive Brief is owed)"
        } else {
            ""
        },
    ));
    for (label, path) in [("brief", &s.brief_path), ("plan", &s.plan_path)] {
        if let Some(path) = path {
            text.push_str(&format!("  {label}:    {}\n", esc(path)));
        }
    }
    text.push_str(&format!(
        "  findings: {} ({} open), qa failures: {}, resumes: {}\n",
        s.loop_state.findings_log.len(),
        s.open_findings(),
        s.loop_state.qa_failures_log.len(),
        s.resume_count
    ));
    if legacy {
        text.push_str(
            "  note:     the legacy file, not adopted while its session writes it (`baton resume` adopts it once that session is quiet)\n",
        );
    }
    if let Some(work) = &s.discarded_work {
        text.push_str(&format!("  {}\n", work.describe()));
    }
    if let Access::ReadOnly { found } = loaded.access {
        text.push_str(&format!(
            "warning: schema_version {found} is newer than this baton knows; shown read-only\n"
        ));
    }
    if s.loop_key.as_deref().is_some_and(|k| k != target.key) {
        text.push_str(&format!(
            "warning: the file's loop_key {:?} disagrees with its name; the name ({}) wins\n",
            esc(s.loop_key.as_deref().unwrap_or_default()),
            target.key
        ));
    }
    Ok(Report::ok(
        json!({
            "key": target.key,
            "path": loaded.path.display().to_string(),
            "live": is_live(ctx.now, last),
            "read_only": loaded.access != Access::ReadWrite,
            "legacy": legacy,
            "state": state_json(s),
        }),
        text,
    ))
}
