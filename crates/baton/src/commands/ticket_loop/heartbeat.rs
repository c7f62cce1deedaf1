use std::ffi::OsString;

use clap::Args;
use serde_json::json;

use crate::args::WriteFlags;
use crate::error::CommandError;
use crate::output::Report;
use baton_ops::env::Ctx;
use baton_ops::ticket_loop::Heartbeat;

/// Refresh `last_updated` of a loop this session owns and is running.
///
/// Anything else (another owner, not active, no such loop, an older `--epoch`) is a no-op that
/// exits 0, so a per-turn hook can call it blindly.
#[derive(Debug, Args)]
pub struct HeartbeatArgs {
    /// The ticket id.
    ticket: OsString,
    #[command(flatten)]
    flags: WriteFlags,
}

pub fn cmd_loop_heartbeat(ctx: &Ctx, args: HeartbeatArgs) -> Result<Report, CommandError> {
    let target = baton_ops::ticket_loop::Target::derive(ctx, &args.ticket);
    let done =
        baton_ops::ticket_loop::heartbeat(ctx, &*ctx.store()?, target, &args.flags.ownership())?;
    Ok(render_heartbeat(ctx, done))
}

/// What a heartbeat did, as a command prints it.
pub fn render_heartbeat(ctx: &Ctx, done: Heartbeat) -> Report {
    match done {
        Heartbeat::Skipped { key, why } => Report::ok(
            json!({ "refreshed": false, "key": key, "why": why }),
            format!("no heartbeat: {why}"),
        ),
        Heartbeat::Refreshed {
            target,
            last_updated,
            warning,
        } => {
            let report = Report::ok(
                json!({ "refreshed": true, "key": target.key, "last_updated": last_updated }),
                format!("heartbeat: {} at {}", target.shown(), ctx.shown(ctx.now)),
            );
            match warning {
                Some(w) => report.warn(w),
                None => report,
            }
        }
    }
}
