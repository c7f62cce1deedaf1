//! The exclusive locks under which every read-check-write of a state file runs.
//!
//! Each lock is an `flock` on a sidecar file under `.agentic/locks/` that is never deleted:
//! deleting a lock file while another process waits on it lets two processes hold "the" lock
//! at once. A lock dies with the process holding it, so a crash never leaves it stuck.
//!
//! There is one lock per state file (per ticket's loop, the batch, the legacy loop file), so
//! sessions working on different tickets never wait for each other. Nobody waits for ever
//! either: a lock not had within the wait bound is an error that names the holder's pid, which
//! every holder writes into the sidecar once it has the lock.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;
use std::time::{Duration, Instant};

use crate::{StoreError, faults};

/// How long a command waits for a lock by default. Locks are held for milliseconds (no git,
/// no user hook ever runs under one), so a wait this long means a holder is stuck.
pub const DEFAULT_LOCK_WAIT: Duration = Duration::from_secs(5);

/// Held until dropped.
#[derive(Debug)]
pub struct DirLock {
    _file: File,
}

impl DirLock {
    /// Takes the lock on `path`, waiting at most `wait`.
    ///
    /// The wait is a blocking `flock` on a helper thread, so the lock passes to a waiter the
    /// moment it is released (polling would leave it idle between polls). When the bound passes
    /// first, the thread is left blocked: if it ever gets the lock it finds nobody waiting and
    /// drops it at once, and the process exiting releases it in any case.
    pub fn acquire(path: &Path, wait: Duration) -> Result<DirLock, StoreError> {
        let file = open(path)?;
        let file = match faults::point("lock.flock")
            .map_err(std::fs::TryLockError::Error)
            .and_then(|()| file.try_lock())
        {
            Ok(()) => file,
            Err(std::fs::TryLockError::Error(e)) => return Err(StoreError::io("lock", path)(e)),
            Err(std::fs::TryLockError::WouldBlock) => {
                let start = Instant::now();
                let (tx, rx) = std::sync::mpsc::sync_channel(1);
                std::thread::spawn(move || {
                    let locked = file.lock().map(|()| file);
                    let _ = tx.send(locked);
                });
                match rx.recv_timeout(wait) {
                    Ok(locked) => locked.map_err(StoreError::io("lock", path))?,
                    Err(_) => {
                        return Err(StoreError::LockBusy {
                            path: path.into(),
                            holder: holder_pid(path),
                            waited: start.elapsed(),
                        });
                    }
                }
            }
        };
        // Name the holder for anyone who waits in vain. Every holder writes the same width, so
        // one write replaces the last holder's pid whole, with no truncation. A failure here
        // costs only that name.
        let _ = file.write_all_at(format!("{:<10}\n", std::process::id()).as_bytes(), 0);
        Ok(DirLock { _file: file })
    }

    /// Takes the lock on `path` only if nobody holds it.
    pub fn try_acquire(path: &Path) -> Result<Option<DirLock>, StoreError> {
        let file = open(path)?;
        match file.try_lock() {
            Ok(()) => Ok(Some(DirLock { _file: file })),
            Err(std::fs::TryLockError::WouldBlock) => Ok(None),
            Err(std::fs::TryLockError::Error(e)) => Err(StoreError::io("lock", path)(e)),
        }
    }
}

/// Opens (creating) a lock sidecar: never through a symlink, never inherited by a child.
pub(crate) fn open(path: &Path) -> Result<File, StoreError> {
    faults::point("lock.open")
        .and_then(|()| {
            File::options()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                .open(path)
        })
        .map_err(|e| {
            if e.raw_os_error() == Some(libc::ELOOP) {
                StoreError::Symlink { path: path.into() }
            } else {
                StoreError::io("open lock file", path)(e)
            }
        })
}

/// The pid the current holder wrote into the sidecar.
pub(crate) fn holder_pid(path: &Path) -> Option<u32> {
    let mut text = String::new();
    open(path).ok()?.take(32).read_to_string(&mut text).ok()?;
    text.lines().next()?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_lock_times_out_naming_its_holder() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.lock");
        let held = DirLock::acquire(&path, DEFAULT_LOCK_WAIT).unwrap();
        match DirLock::acquire(&path, Duration::from_millis(30)) {
            Err(StoreError::LockBusy { holder, .. }) => {
                assert_eq!(holder, Some(std::process::id()))
            }
            other => panic!("{other:?}"),
        }
        assert!(DirLock::try_acquire(&path).unwrap().is_none());
        drop(held);
        assert!(DirLock::try_acquire(&path).unwrap().is_some());
    }
}
