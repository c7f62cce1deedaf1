//! The one exclusive lock under which every read-check-write of a state directory runs.
//!
//! It is an `flock` on a sidecar file that is never deleted: deleting a lock file while another
//! process waits on it lets two processes hold "the" lock at once. The lock dies with the
//! process holding it, so a crash never leaves it stuck.

use std::fs::File;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use crate::StoreError;

/// Held until dropped.
#[derive(Debug)]
pub struct DirLock {
    _file: File,
}

impl DirLock {
    pub fn acquire(path: &Path) -> Result<DirLock, StoreError> {
        let file = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(path)
            .map_err(|e| {
                if e.raw_os_error() == Some(libc::ELOOP) {
                    StoreError::Symlink { path: path.into() }
                } else {
                    StoreError::io("open lock file", path)(e)
                }
            })?;
        file.lock().map_err(StoreError::io("lock", path))?;
        Ok(DirLock { _file: file })
    }
}
