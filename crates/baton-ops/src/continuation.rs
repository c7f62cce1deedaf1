//! The session-continuation protocol's own writes: the explicit pause mark (`.agentic/pause.json`,
//! one mark per session) that tells the next session to resume, not recover.

use std::path::PathBuf;

use crate::env::Ctx;
use crate::error::CommandError;
use baton_core::model::{PauseMark, Pauses};
use baton_core::time::format_ts;
use baton_store::{Expect, LockScope, RecordKey, git};

/// A pause recorded.
#[derive(Debug)]
pub struct Paused {
    pub mark: PauseMark,
    /// How messages name the pause record.
    pub path: PathBuf,
    /// The tree held uncommitted changes: the next session reports the pause as unclean.
    pub tree_dirty: bool,
}

/// What lifting this session's pause did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cleared {
    /// There is no pause mark at all.
    NoMark,
    /// There are marks, none of this session's.
    NotThisSession,
    Removed,
}

/// Marks this session's work paused at `ctx.now` for `reason`; a later pause of the same
/// session replaces its earlier mark.
pub fn pause(ctx: &Ctx, reason: Option<String>) -> Result<Paused, CommandError> {
    let store = ctx.store()?;
    let mark = PauseMark {
        paused_at: format_ts(ctx.now),
        session_id: ctx.session.clone(),
        reason,
        extra: Default::default(),
    };
    // Asked before the lock: git status can start a user's fsmonitor hook.
    let excluded: Vec<PathBuf> = store.layout().state_dir_in_tree().into_iter().collect();
    let refs: Vec<&std::path::Path> = excluded.iter().map(|p| p.as_path()).collect();
    let tree_dirty = git::tree_dirty(&store.layout().root, &refs)?;
    let _guard = store.lock(LockScope::Feature)?;
    let old = store.read_pause()?;
    let mut pauses = match &old {
        Some(old) => {
            old.writable()?;
            old.state.clone()
        }
        None => Pauses::default(),
    };
    pauses.set(mark.clone());
    store.write_pause(&pauses, &Expect::read(old.as_ref()))?;
    Ok(Paused {
        mark,
        path: store.name(&RecordKey::Pause),
        tree_dirty,
    })
}

/// Removes this session's pause mark (the record itself with the last mark).
pub fn clear_pause(ctx: &Ctx) -> Result<Cleared, CommandError> {
    let store = ctx.store()?;
    if !store.exists()? {
        return Ok(Cleared::NoMark);
    }
    let _guard = store.lock(LockScope::Feature)?;
    let Some(loaded) = store.read_pause()? else {
        return Ok(Cleared::NoMark);
    };
    loaded.writable()?;
    let mut pauses = loaded.state.clone();
    let had = pauses.clear(ctx.session());
    if pauses.marks.is_empty() {
        store.remove(&RecordKey::Pause, &loaded.expect())?;
    } else if had {
        store.write_pause(&pauses, &loaded.expect())?;
    }
    Ok(if had {
        Cleared::Removed
    } else {
        Cleared::NotThisSession
    })
}
