//! What a shell completes an argument with: the project's ticket ids, run ids and plan
//! directories, read from the store as it is. Nothing here writes, and nothing fails: what
//! cannot be read is simply not offered.

use std::path::Path;

use baton_store::StateStore;

use crate::env::Ctx;

/// The ticket ids of the project's loops (a loop that records none offers its key), in
/// natural order.
pub fn tickets(store: &dyn StateStore) -> Vec<String> {
    ids(store, |store| {
        let loops = store.scan_loops(None).unwrap_or_default();
        loops
            .into_iter()
            .map(|scanned| match scanned.loaded {
                Ok(loaded) => loaded.state.ticket_id.unwrap_or(scanned.key),
                Err(_) => scanned.key,
            })
            .collect()
    })
}

/// The ids of the project's single runs, in natural order.
pub fn runs(store: &dyn StateStore) -> Vec<String> {
    ids(store, |store| {
        let runs = store.list_runs(None).unwrap_or_default();
        runs.into_iter().map(|(id, _)| id).collect()
    })
}

/// The plan directories holding a ledger (`plans/…/STATE.md`), as paths from the working
/// directory when it is above them, else whole.
pub fn plans(ctx: &Ctx) -> Vec<String> {
    let Ok(layout) = ctx.layout() else {
        return Vec::new();
    };
    crate::survey::find_ledgers(&layout.root)
        .iter()
        .filter_map(|ledger| ledger.parent())
        .map(|plan| shown_from(plan, &ctx.dir))
        .collect()
}

/// What `read` finds in the project's store, when it has one, in natural order and once each.
fn ids(store: &dyn StateStore, read: impl Fn(&dyn StateStore) -> Vec<String>) -> Vec<String> {
    if !store.exists().unwrap_or(false) {
        return Vec::new();
    }
    let mut ids = read(store);
    ids.sort_by_cached_key(|id| baton_core::text::natural_key(id));
    ids.dedup();
    ids
}

fn shown_from(path: &Path, dir: &Path) -> String {
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    path.strip_prefix(&dir)
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned()
}
