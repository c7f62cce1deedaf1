use baton_store::LockScope;
use clap::Args;
use serde_json::json;

use super::{HolderArgs, here, parse_run_id, require_holder};
use crate::output::Report;
use baton_core::time::format_ts;
use baton_ops::env::Ctx;
use baton_ops::error::CommandError;

/// Refresh the run lock's heartbeat, when this caller holds it; anything else is a no-op that
/// exits 0, so a per-turn hook can call it blindly.
#[derive(Debug, Args)]
pub struct HeartbeatArgs {
    /// The run id `baton run new` printed (16 hex digits, or a legacy `YYYYMMDD-HHMMSS`).
    run_id: String,
    #[command(flatten)]
    holder: HolderArgs,
}

pub fn cmd_run_heartbeat(ctx: &Ctx, args: HeartbeatArgs) -> Result<Report, CommandError> {
    heartbeat(ctx, &args.run_id, &args.holder)
}

/// Refreshes the lease of a run this caller holds; anything else is a no-op.
pub fn heartbeat(ctx: &Ctx, run_id: &str, holder: &HolderArgs) -> Result<Report, CommandError> {
    let id = parse_run_id(run_id)?;
    let store = ctx.store()?;
    let noop = |why: String| {
        Ok(Report::ok(
            json!({ "refreshed": false, "run_id": id.to_string(), "why": why }),
            format!("no heartbeat: {why}"),
        ))
    };
    if !store.exists()? {
        return noop("no state directory".into());
    }
    let _guard = store.lock(LockScope::Runs)?;
    let Some(mut loaded) = store.read_run(&id)? else {
        return noop(format!("no run {id}"));
    };
    let (here, _) = here(ctx, holder, false)?;
    if let Err(d) = require_holder(&loaded.state, &here, holder, ctx.now) {
        return noop(
            d.reasons
                .first()
                .map(|r| r.message.clone())
                .unwrap_or_default(),
        );
    }
    loaded.writable()?;
    if let Some(lease) = loaded.state.lease.as_mut() {
        lease.heartbeat_at = format_ts(ctx.now);
    }
    store.write_run(&loaded.state, &loaded.expect())?;
    Ok(Report::ok(
        json!({ "refreshed": true, "run_id": id.to_string() }),
        format!("heartbeat: run {id} at {}", format_ts(ctx.now)),
    ))
}
