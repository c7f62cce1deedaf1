//! A session's failures, recorded on this machine before anything they imply is applied:
//! `.agentic/outbox/<nanoseconds>-<pid>-<hex>.json`, one file each, in the order recorded.
//!
//! A client's failure hook has about 0.1 s before the client kills it (Claude Code's
//! StopFailure), and on a busy machine a process may not even be scheduled in that time. So the
//! hook's first durable act is this one record (a fixed number of syncs, whatever the session
//! owns), and what it implies for each loop, lease, batch and feature is applied from it
//! afterwards: with the file store by the hook itself while it lives, with a PostgreSQL store by
//! a process of its own that outlives the hook (one round trip across a network can take the
//! whole window); in both cases by whatever command or hook of this project reads the state
//! next, which applies every entry here first.
//!
//! Each file is applied once: whoever applies it holds its `flock` from the read to the
//! removal, and checks under the lock that the file is still linked (another applier may have
//! removed it in the meantime). An applier killed between the server's commit and the removal
//! leaves the file, and the next one applies it again; what it applies (the interrupt of what a
//! session still owns and has active) finds nothing left to change and writes nothing.

use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::StoreError;
use crate::layout::{Layout, check_real_dir};

pub const OUTBOX_DIR: &str = "outbox";

/// One failure recorded here, to be applied to the store it names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pending {
    /// The server it is for, as shown (no password), and the project's name there when it was
    /// set (`BATON_PROJECT`; else the repository's, which every command of the clone shares);
    /// no server for the file store. An entry is applied only to that store.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    pub client: String,
    pub session: String,
    /// The client's event that recorded it (`StopFailure`, `SessionEnd`).
    pub event: String,
    /// A session end: the session's active batch is interrupted too.
    pub end: bool,
    pub reason: String,
    pub evidence: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume_after: Option<String>,
    /// What the limit said, as the client passed it (its first KiB): which window of the
    /// account it closes (`baton_core::breaker::window_of`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// When the hook ran, by this machine's clock.
    pub at: String,
    /// The failure's time by its evidence, when a reader found it rather than a hook (a
    /// transcript's last write): work written after it is not this failure's, and stays as it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<String>,
}

fn dir(layout: &Layout) -> PathBuf {
    layout.state_dir.join(OUTBOX_DIR)
}

/// Makes the outbox directory when it is missing, its name synced: a session's start does it,
/// so that a failure's record later costs its own two syncs and no more.
pub fn ensure(layout: &Layout) -> Result<(), StoreError> {
    let dir = dir(layout);
    if !check_real_dir(&dir)? {
        crate::sessions::ensure_dir(&dir)?;
        // A new directory's name must survive a power cut as well as the records in it.
        crate::atomic::sync_dir(&layout.state_dir)?;
    }
    Ok(())
}

/// Writes `pending` as a new file of the outbox, synced (file and directory) before returning:
/// once the hook has returned, the record survives the machine's crash. Two syncs (one more
/// when the directory has to be made, which a session's start does beforehand); nothing is
/// read first.
pub fn record(layout: &Layout, pending: &Pending) -> Result<PathBuf, StoreError> {
    ensure(layout)?;
    let dir = dir(layout);
    // Named by this machine's clock in nanoseconds, fixed width: entries sort in the order they
    // were recorded (a failure before the session end that follows it in the same second).
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let path = dir.join(format!(
        "{nanos:020}-{:010}-{:08x}.json",
        std::process::id(),
        rand_u32()
    ));
    let mut bytes = serde_json::to_vec(pending).map_err(|e| StoreError::Corrupt {
        path: path.clone(),
        detail: format!("cannot serialize: {e}"),
    })?;
    bytes.push(b'\n');
    crate::atomic::replace(&path, &bytes)?;
    // The crash harness kills a hook here: the record is durable and nothing of it applied.
    crate::faults::point("outbox.recorded").map_err(StoreError::io("record", &path))?;
    Ok(path)
}

fn rand_u32() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default(),
    );
    h.finish() as u32
}

/// Whether the outbox holds anything at all: an entry, or a temp file a killed hook left (one
/// directory read).
pub fn anything(layout: &Layout) -> bool {
    let dir = dir(layout);
    matches!(check_real_dir(&dir), Ok(true))
        && std::fs::read_dir(&dir).is_ok_and(|mut entries| {
            entries.any(|e| e.is_ok_and(|e| e.file_name() != ".gitignore"))
        })
}

/// Removes the temp files of hooks killed while they recorded an entry (never one a live
/// writer may still be writing: `sessions::clear_orphans_in`).
pub fn clear_orphans(layout: &Layout) {
    crate::sessions::clear_orphans_in(&dir(layout));
}

/// The outbox's entries, oldest first (their names start with the time they were recorded).
/// An outbox that is missing, or is not a directory of baton's own, holds none.
pub fn pending(layout: &Layout) -> Vec<PathBuf> {
    let dir = dir(layout);
    if !matches!(check_real_dir(&dir), Ok(true)) {
        return Vec::new();
    }
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            !name.starts_with('.') && name.ends_with(".json")
        })
        .map(|e| e.path())
        .collect();
    found.sort();
    found
}

/// An entry held for applying: its lock is held until this is dropped.
pub struct Claim {
    file: std::fs::File,
    pub path: PathBuf,
    pub pending: Pending,
}

/// Claims the entry at `path`: waits up to `wait` for its lock, then reads it; `None` when
/// another applier removed it first. An entry that is not a regular file of this user's, or
/// cannot be parsed, is an error naming it (and is left where it is for a person to look at).
pub fn claim(path: &Path, wait: Duration) -> Result<Option<Claim>, StoreError> {
    let file = match std::fs::File::options()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
    {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(StoreError::io("open", path)(e)),
    };
    let meta = file.metadata().map_err(StoreError::io("stat", path))?;
    if !meta.is_file() {
        return Err(StoreError::NotRegular { path: path.into() });
    }
    crate::read::refuse_foreign(&meta, path)?;
    let deadline = Instant::now() + wait;
    loop {
        match file.try_lock() {
            Ok(()) => break,
            Err(std::fs::TryLockError::WouldBlock) => {}
            Err(std::fs::TryLockError::Error(e)) => return Err(StoreError::io("lock", path)(e)),
        }
        if Instant::now() >= deadline {
            return Err(StoreError::LockBusy {
                path: path.into(),
                holder: None,
                waited: wait,
            });
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    // Applied and removed by whoever held the lock before.
    let linked = file
        .metadata()
        .map(|m| m.nlink() > 0)
        .map_err(StoreError::io("stat", path))?;
    if !linked {
        return Ok(None);
    }
    let mut bytes = Vec::new();
    (&file)
        .take(crate::read::STATE_FILE_CAP)
        .read_to_end(&mut bytes)
        .map_err(StoreError::io("read", path))?;
    let pending = serde_json::from_slice(&bytes).map_err(|e| StoreError::Corrupt {
        path: path.into(),
        detail: format!("not an outbox entry: {e}"),
    })?;
    Ok(Some(Claim {
        file,
        path: path.into(),
        pending,
    }))
}

impl Claim {
    /// The entry was applied: it is removed (and the removal synced) before its lock goes.
    pub fn done(self) -> Result<(), StoreError> {
        std::fs::remove_file(&self.path).map_err(StoreError::io("remove", &self.path))?;
        if let Some(parent) = self.path.parent()
            && let Ok(d) = std::fs::File::open(parent)
        {
            let _ = d.sync_all();
        }
        drop(self.file);
        Ok(())
    }
}
