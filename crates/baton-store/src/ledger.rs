//! Appending to a plan ledger so that concurrent sessions never tear or interleave a line, and
//! a line reported written survives a crash.

use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;

use crate::StoreError;
use crate::read::read_capped;

/// The largest ledger read whole (about a million events).
pub const LEDGER_CAP: u64 = 128 * 1024 * 1024;

/// Why an append did not happen.
#[derive(Debug)]
pub enum AppendError {
    /// The first line names another plan: another run's record.
    ForeignPlan {
        found: String,
    },
    NoHeader,
    Store(StoreError),
}

impl From<StoreError> for AppendError {
    fn from(e: StoreError) -> AppendError {
        AppendError::Store(e)
    }
}

/// Appends one line: under an exclusive `flock` on the ledger itself, after checking the header
/// with `header_ok`, sealing a torn tail (a last line without its newline, left by a writer
/// killed mid-write) with a newline, the whole line in one `write`, then `fdatasync` before
/// success is reported. Returns whether a torn tail was sealed, and the ledger's length after
/// the line.
pub fn append(
    path: &Path,
    line: &str,
    header_ok: impl Fn(&str) -> Result<(), AppendError>,
) -> Result<LedgerAppend, AppendError> {
    let mut locked = crate::append::open_locked(path, None)?;
    let mut head = vec![0u8; 4096.min(locked.len as usize)];
    locked
        .file
        .read_exact_at(&mut head, 0)
        .map_err(StoreError::io("read", path))?;
    let first = String::from_utf8_lossy(&head);
    header_ok(first.lines().next().unwrap_or_default())?;
    let sealed = locked.append_line(path, line)?;
    Ok(LedgerAppend {
        sealed,
        len: locked.len,
    })
}

/// What an append did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LedgerAppend {
    /// A torn tail was sealed with a newline first.
    pub sealed: bool,
    /// The ledger's length in bytes right after the line, read under its lock: a later length
    /// means someone appended since.
    pub len: u64,
}

/// Creates a ledger with its header, refusing to replace one that exists.
pub fn create(path: &Path, header: &str) -> Result<(), StoreError> {
    let mut file = File::options()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(StoreError::io("create", path))?;
    file.write_all(format!("{header}\n").as_bytes())
        .map_err(StoreError::io("write", path))?;
    file.sync_all().map_err(StoreError::io("fsync", path))?;
    if let Some(dir) = path.parent() {
        crate::atomic::sync_dir(dir)?;
    }
    Ok(())
}

/// The whole ledger as text (invalid UTF-8 replaced), or `None` when there is none.
pub fn read(path: &Path) -> Result<Option<String>, StoreError> {
    // Valid UTF-8 (the usual case) is taken as it is, without the copy a lossy read makes.
    Ok(read_capped(path, LEDGER_CAP)?.map(|b| {
        String::from_utf8(b).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
    }))
}

/// The first 4 KiB of a ledger (enough for its header), or `None` when there is none.
pub fn read_head(path: &Path) -> Result<Option<String>, StoreError> {
    // Non-blocking and only a regular file: a FIFO where a ledger should be must not hang.
    let file = match File::options()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
    {
        Ok(f) if f.metadata().is_ok_and(|m| !m.is_file()) => {
            return Err(StoreError::NotRegular { path: path.into() });
        }
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(StoreError::Symlink { path: path.into() });
        }
        Err(e) => return Err(StoreError::io("open", path)(e)),
    };
    let mut head = Vec::new();
    file.take(4096)
        .read_to_end(&mut head)
        .map_err(StoreError::io("read", path))?;
    Ok(Some(String::from_utf8_lossy(&head).into_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_torn_tail_is_sealed_before_the_next_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("STATE.md");
        create(&p, "# run-state — plan: plans/x").unwrap();
        std::fs::OpenOptions::new()
            .append(true)
            .open(&p)
            .unwrap()
            .write_all(b"phase 1: star")
            .unwrap();
        let first = append(&p, "phase 1: started (base abc1234)", |_| Ok(())).unwrap();
        assert!(first.sealed);
        let second = append(&p, "phase 1: BLOCKED — x", |_| Ok(())).unwrap();
        assert!(!second.sealed);
        let text = std::fs::read_to_string(&p).unwrap();
        assert_eq!(
            text,
            "# run-state — plan: plans/x\nphase 1: star\nphase 1: started (base abc1234)\nphase 1: BLOCKED — x\n"
        );
        // The length after each line, as read under the lock.
        assert_eq!(second.len, text.len() as u64);
        assert_eq!(
            first.len,
            (text.len() - "phase 1: BLOCKED — x\n".len()) as u64
        );
    }

    #[test]
    fn the_header_check_can_refuse_and_nothing_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("STATE.md");
        create(&p, "# run-state — plan: plans/other").unwrap();
        let before = std::fs::read(&p).unwrap();
        let r = append(&p, "phase 1: BLOCKED — x", |h| {
            Err(AppendError::ForeignPlan { found: h.into() })
        });
        assert!(matches!(r, Err(AppendError::ForeignPlan { .. })));
        assert_eq!(std::fs::read(&p).unwrap(), before);
        assert!(create(&p, "again").is_err(), "never replaces a ledger");
    }
}
