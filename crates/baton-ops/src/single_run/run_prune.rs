//! `run prune`: the state of finished runs not written for a while is deleted. A run that is
//! active, or whose lock a live holder has, is never removed, however old: age is not liveness.

use std::path::PathBuf;

use jiff::SignedDuration;

use crate::env::Ctx;
use crate::error::OpError;
use crate::runs::{self, lease_state_of};
use baton_core::decide::lease::LeaseState;
use baton_core::run_id::RunId;
use baton_core::time::parse_ts;
use baton_store::LockScope;
use baton_store::StateStore;

/// What `run prune` is asked for.
#[derive(Debug, Clone, Copy)]
pub struct Prune {
    /// Only runs last written at least this long ago.
    pub older_than: SignedDuration,
    /// Say what would be removed, remove nothing.
    pub dry_run: bool,
}

/// One run `run prune` looked at and did not keep silently, in the order listed.
#[derive(Debug)]
pub enum PruneEntry {
    /// A run whose state could not be read: skipped.
    Unreadable { id: String, error: String },
    /// A finished run removed (or, on a dry run, that would be).
    Removed {
        path: PathBuf,
        status: String,
        updated_at: Option<String>,
    },
}

/// What `run prune` did.
#[derive(Debug)]
pub enum Pruned {
    /// The project has no state: nothing to look at.
    NoRuns,
    Done {
        entries: Vec<PruneEntry>,
        /// Runs kept: active, recent or locked.
        kept: usize,
    },
}

/// Deletes the state of finished runs (`complete` or `abandoned`) last written at least
/// `older_than` ago, under the runs' lock.
pub fn prune(ctx: &Ctx, store: &dyn StateStore, args: &Prune) -> Result<Pruned, OpError> {
    if !store.exists()? {
        return Ok(Pruned::NoRuns);
    }
    let _guard = store.lock(LockScope::Runs)?;
    let (here, _) = runs::here(ctx, None, None, false)?;
    let (mut entries, mut kept) = (Vec::new(), 0usize);
    for (id, loaded) in store.list_runs(None)? {
        let loaded = match loaded {
            Ok(l) => l,
            Err(e) => {
                entries.push(PruneEntry::Unreadable {
                    id,
                    error: e.to_string(),
                });
                continue;
            }
        };
        let run = &loaded.state;
        let old_enough = parse_ts(run.updated_at.as_deref())
            .is_some_and(|t| ctx.now.duration_since(t) >= args.older_than);
        let lock_live = matches!(
            lease_state_of(run, &here, ctx.now),
            LeaseState::Live(_) | LeaseState::Mine
        ) && run.lease.is_some();
        if !run.status.is_finished() || !old_enough || lock_live {
            kept += 1;
            continue;
        }
        let id = RunId::parse(&id).expect("listed runs have valid ids");
        if !args.dry_run {
            store.remove(&baton_store::RecordKey::Run(id), &loaded.expect())?;
        }
        entries.push(PruneEntry::Removed {
            path: loaded.path.clone(),
            status: run.status.to_string(),
            updated_at: run.updated_at.clone(),
        });
    }
    Ok(Pruned::Done { entries, kept })
}
