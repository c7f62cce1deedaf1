//! Crash-safe replace: a reader sees the old file or the new one, never a torn one, and a
//! transition reported done survives a power cut.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use crate::{StoreError, faults};

/// Writes `bytes` to a temp file in the same directory (mode 0600), fsyncs it, renames it over
/// `path` and fsyncs the directory. On any error the old file is untouched and the temp file
/// removed. Never truncates in place.
pub fn replace(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    replace_with_mode(path, bytes, 0o600)
}

/// `replace`, with the new file created with `mode` (before the umask) instead of 0600: for a
/// project file baton rewrites (a feature pointer, a `TASKS.md`), which should keep the mode the
/// project gave it rather than become private to baton's user.
pub fn replace_with_mode(path: &Path, bytes: &[u8], mode: u32) -> Result<(), StoreError> {
    replace_checked(path, bytes, mode, &|| Ok(()))
}

/// `replace_with_mode`, calling `check` once the new bytes are durable in the temp file and
/// right before the rename: an error there (the file is no longer what the writer read) removes
/// the temp file and leaves the old state in place.
pub fn replace_checked(
    path: &Path,
    bytes: &[u8],
    mode: u32,
    check: &dyn Fn() -> Result<(), StoreError>,
) -> Result<(), StoreError> {
    replace_inner(path, bytes, mode, check, true)
}

/// `replace` without the fsyncs, for a hint whose loss costs nothing (a session's turn mark,
/// its process map, a ledger's last writer): still a whole file or none, and still never
/// through a symlink planted at `path`, since the rename replaces the link itself.
pub fn replace_hint(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    replace_inner(path, bytes, 0o600, &|| Ok(()), false)
}

/// The name of a temp file `replace` writes beside `path`: `.<name>.tmp-<pid>-<hex>`, so that
/// whoever finds one left behind knows the file and the writer it belonged to.
fn temp_name(name: &str) -> String {
    format!(
        ".{name}.tmp-{}-{}",
        std::process::id(),
        crate::random_hex(4)
    )
}

/// The file and the writer's pid of a temp file `replace` names (`.<name>.tmp-<pid>-<hex>`).
pub fn temp_target(name: &std::ffi::OsStr) -> Option<(&str, u32)> {
    let rest = name.to_str()?.strip_prefix('.')?;
    let at = rest.rfind(".tmp-")?;
    let pid = rest[at + 5..].split('-').next()?.parse().ok()?;
    Some((&rest[..at], pid))
}

fn replace_inner(
    path: &Path,
    bytes: &[u8],
    mode: u32,
    check: &dyn Fn() -> Result<(), StoreError>,
    sync: bool,
) -> Result<(), StoreError> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(temp_name(&name));
    let result = write_synced(&tmp, path, bytes, mode, sync)
        .and_then(|()| check())
        .and_then(|()| {
            faults::point("atomic.rename")
                .and_then(|()| std::fs::rename(&tmp, path))
                .map_err(StoreError::io("rename into place", path))
        });
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
        return result;
    }
    if sync { sync_dir(dir) } else { Ok(()) }
}

/// Writes `bytes` into the new file `tmp`, beside `path`, which an error names: the temp file
/// is baton's business, and never exists when the directory refuses it.
fn write_synced(
    tmp: &Path,
    path: &Path,
    bytes: &[u8],
    mode: u32,
    sync: bool,
) -> Result<(), StoreError> {
    let mut file = faults::point("atomic.create")
        .and_then(|()| {
            OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(mode)
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                .open(tmp)
        })
        .map_err(StoreError::io("write", path))?;
    let mut rest = bytes;
    while !rest.is_empty() {
        match faults::write("atomic.write", &mut file, rest) {
            Ok(0) => {
                let e = std::io::Error::from(std::io::ErrorKind::WriteZero);
                return Err(StoreError::io("write", tmp)(e));
            }
            Ok(n) => rest = &rest[n..],
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(StoreError::io("write", tmp)(e)),
        }
    }
    if !sync {
        return Ok(());
    }
    faults::point("atomic.fsync")
        .and_then(|()| file.sync_all())
        .map_err(StoreError::io("fsync", tmp))
}

/// Makes a rename or an unlink in `dir` durable.
pub fn sync_dir(dir: &Path) -> Result<(), StoreError> {
    faults::point("dir.fsync")
        .and_then(|()| File::open(dir))
        .and_then(|d| d.sync_all())
        .map_err(StoreError::io("fsync directory", dir))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replace_swaps_content_and_leaves_no_temp_files() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("state.json");
        replace(&p, b"one").unwrap();
        replace(&p, b"two").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["state.json"]);
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }

    #[test]
    fn a_hint_replaces_a_planted_link_and_never_writes_through_it() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside");
        std::fs::write(&outside, b"keep").unwrap();
        let p = dir.path().join("x.turn");
        std::os::unix::fs::symlink(&outside, &p).unwrap();
        replace_hint(&p, b"mark").unwrap();
        assert_eq!(std::fs::read(&outside).unwrap(), b"keep");
        assert!(std::fs::symlink_metadata(&p).unwrap().is_file());
        assert_eq!(std::fs::read(&p).unwrap(), b"mark");
        assert_eq!(
            temp_target(std::ffi::OsStr::new(".x.turn.tmp-123-ab12")),
            Some(("x.turn", 123))
        );
        assert_eq!(temp_target(std::ffi::OsStr::new(".x.turn")), None);
    }

    /// A failed rename (here: the target is a non-empty directory) leaves the old state alone.
    #[test]
    fn a_failed_replace_keeps_the_old_state() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("state.json");
        std::fs::create_dir(&p).unwrap();
        std::fs::write(p.join("inside"), b"old").unwrap();
        assert!(replace(&p, b"new").is_err());
        assert_eq!(std::fs::read(p.join("inside")).unwrap(), b"old");
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "temp file cleaned up"
        );
    }
}
