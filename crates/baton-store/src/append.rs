//! The append discipline shared by every append-only file baton keeps (plan ledgers and the
//! journal): an exclusive `flock` on the file itself, a torn tail sealed with a newline, the
//! whole line in one `write` with `O_APPEND`, and `fdatasync` before success is reported.
//!
//! Split in two steps so that a caller can look at the locked file between them (the ledger
//! checks its header there).

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;

use crate::{StoreError, faults};

/// An append-only file opened for one append, under its exclusive lock (released on drop).
pub struct Locked {
    pub file: File,
    /// The file's length when the lock was taken: nobody else appends while it is held.
    pub len: u64,
}

/// Opens `path` for appending through no link (`O_NOFOLLOW`), creating it with `create` as
/// its mode when given, takes its exclusive lock and refuses anything but a regular file.
pub fn open_locked(path: &Path, create: Option<u32>) -> Result<Locked, StoreError> {
    let io = |op: &'static str| StoreError::io(op, path);
    let mut options = File::options();
    options
        .read(true)
        .append(true)
        // Non-blocking: a FIFO planted here is refused below, never waited on.
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC);
    if let Some(mode) = create {
        options.create(true).mode(mode);
    }
    let file = faults::point("append.open")
        .and_then(|()| options.open(path))
        .map_err(|e| {
            if e.raw_os_error() == Some(libc::ELOOP) {
                StoreError::Symlink { path: path.into() }
            } else {
                io("open")(e)
            }
        })?;
    faults::point("append.flock")
        .and_then(|()| file.lock())
        .map_err(io("lock"))?;
    let meta = file.metadata().map_err(io("stat"))?;
    if !meta.is_file() {
        return Err(StoreError::NotRegular { path: path.into() });
    }
    // Another user's ledger or journal could have been planted to steer a run.
    crate::read::refuse_foreign(&meta, path)?;
    Ok(Locked {
        file,
        len: meta.len(),
    })
}

impl Locked {
    /// Appends `line` and its newline, sealing a torn tail first (a last line without its
    /// newline, left by a writer killed mid-write, would otherwise swallow this line), and
    /// makes it durable. Returns whether a torn tail was sealed.
    pub fn append_line(&mut self, path: &Path, line: &str) -> Result<bool, StoreError> {
        let io = |op: &'static str| StoreError::io(op, path);
        let mut sealed = false;
        let mut buf = Vec::with_capacity(line.len() + 2);
        if self.len > 0 {
            let mut last = [0u8; 1];
            faults::point("append.read_tail")
                .and_then(|()| self.file.read_exact_at(&mut last, self.len - 1))
                .map_err(io("read"))?;
            if last[0] != b'\n' {
                buf.push(b'\n');
                sealed = true;
            }
        }
        buf.extend_from_slice(line.as_bytes());
        buf.push(b'\n');
        // One write: O_APPEND puts it at the end as one piece, and the lock keeps other writers
        // out.
        let written = faults::write("append.write", &mut self.file, &buf).and_then(|written| {
            if written == buf.len() {
                return Ok(());
            }
            // A short write to a regular file means the disk is nearly full; finish the line
            // or fail.
            self.file.write_all(&buf[written..])
        });
        let synced = written.map_err(io("append to")).and_then(|()| {
            faults::point("append.fdatasync")
                .and_then(|()| self.file.sync_data())
                .map_err(io("fdatasync"))
        });
        if let Err(e) = synced {
            // A failed write may have left part of the line, and after a failed fdatasync
            // nobody can say what the disk holds: cut the file back to where it was (the lock
            // keeps everyone else out), so that it holds what it held before the command.
            let _ = self.file.set_len(self.len);
            return Err(e);
        }
        self.len += buf.len() as u64;
        Ok(sealed)
    }
}
