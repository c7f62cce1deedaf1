use baton_store::LockScope;
use clap::Args;
use serde_json::json;

use super::{HolderArgs, here, lease_state_of};
use crate::args::parse_when;
use crate::output::Report;
use baton_core::decide::lease::LeaseState;
use baton_core::model::run_is_finished;
use baton_core::run_id::RunId;
use baton_core::text::esc;
use baton_core::time::parse_ts;
use baton_ops::env::Ctx;
use baton_ops::error::CommandError;

/// Delete the state of finished runs (`complete` or `abandoned`) not written for a while, and
/// say each file removed. A run that is active, or whose lock a live holder has, is never
/// removed, however old: age is not liveness.
#[derive(Debug, Args)]
pub struct PruneArgs {
    /// Only runs finished at least this long ago (`30d`, `12h`).
    #[arg(long, value_name = "AGE", default_value = "7d")]
    older_than: String,
    /// Say what would be removed, remove nothing.
    #[arg(long)]
    dry_run: bool,
}

pub fn cmd_run_prune(ctx: &Ctx, args: PruneArgs) -> Result<Report, CommandError> {
    let horizon = parse_when(jiff::Timestamp::UNIX_EPOCH, &args.older_than)
        .map_err(|_| {
            CommandError::usage(format!("--older-than {:?} is not an age", args.older_than))
                .hint("pass an age such as `7d` or `12h`")
        })?
        .duration_since(jiff::Timestamp::UNIX_EPOCH);
    let store = ctx.store()?;
    if !store.exists()? {
        return Ok(Report::ok(
            json!({ "removed": [], "dry_run": args.dry_run }),
            "no runs in this project",
        ));
    }
    let _guard = store.lock(LockScope::Runs)?;
    let (here, _) = here(ctx, &HolderArgs::default(), false)?;
    let (mut removed, mut kept, mut lines) = (Vec::new(), 0usize, String::new());
    for (id, loaded) in store.list_runs(None)? {
        let loaded = match loaded {
            Ok(l) => l,
            Err(e) => {
                lines.push_str(&format!("skipped unreadable {id}: {e}\n"));
                continue;
            }
        };
        let run = &loaded.state;
        let old_enough = parse_ts(run.updated_at.as_deref())
            .is_some_and(|t| ctx.now.duration_since(t) >= horizon);
        let lock_live = matches!(
            lease_state_of(run, &here, ctx.now),
            LeaseState::Live(_) | LeaseState::Mine
        ) && run.lease.is_some();
        if !run_is_finished(&run.status) || !old_enough || lock_live {
            kept += 1;
            continue;
        }
        let id = RunId::parse(&id).expect("listed runs have valid ids");
        if !args.dry_run {
            store.remove(&baton_store::RecordKey::Run(id), &loaded.expect())?;
        }
        lines.push_str(&format!(
            "{} {} ({}, last written {})\n",
            if args.dry_run {
                "would remove"
            } else {
                "removed"
            },
            loaded.path.display(),
            esc(&run.status),
            run.updated_at
                .as_deref()
                .map_or("at no recorded time".into(), esc)
        ));
        removed.push(loaded.path.display().to_string());
    }
    lines.push_str(&format!(
        "{} {}, {kept} kept (active, recent or locked)\n",
        removed.len(),
        if args.dry_run {
            "would be removed"
        } else {
            "removed"
        }
    ));
    Ok(Report::ok(
        json!({ "removed": removed, "kept": kept, "dry_run": args.dry_run }),
        lines,
    ))
}
