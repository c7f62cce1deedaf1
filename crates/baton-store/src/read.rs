//! Reading state files: never through a symlink, never more than a cap, typed on the way in.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use serde::de::DeserializeOwned;

use crate::StoreError;
use baton_core::model::SCHEMA_VERSION;

/// No state file baton writes comes near this; anything larger is not one.
pub const STATE_FILE_CAP: u64 = 4 * 1024 * 1024;

/// The bytes of `path`, or `None` when it does not exist. Refuses a symlink (`O_NOFOLLOW`), a
/// non-regular file and a file over `cap`.
pub fn read_capped(path: &Path, cap: u64) -> Result<Option<Vec<u8>>, StoreError> {
    read_checked(path, cap, None, false)
}

/// The bytes of a file the user or the project names (the project's `.baton.toml`, a root
/// certificate, a password file), or `None` when it does not exist. A symlink is followed (a
/// dotfile manager links such files), but what it reaches must be a regular file of at most
/// `cap` bytes: a device such as `/dev/zero` or a FIFO is refused at once, never read.
pub fn read_named(path: &Path, cap: u64) -> Result<Option<Vec<u8>>, StoreError> {
    read_checked(path, cap, None, true)
}

/// The bytes of a state file: `read_capped`, and a file another user owns is refused
/// (`StoreError::ForeignFile`), root included, since a file planted by another user is how a
/// run is steered. Checked on the opened file, at the cost of no extra system call.
pub fn read_state(path: &Path, cap: u64) -> Result<Option<Vec<u8>>, StoreError> {
    read_checked(path, cap, Some(foreign_file), false)
}

/// Reads a file that this user owns: another user's file in a shared directory such as `/tmp`
/// could be planted to steer a run.
pub fn read_owned(path: &Path, cap: u64) -> Result<Option<Vec<u8>>, StoreError> {
    read_checked(path, cap, Some(not_owned), false)
}

/// How a read names a file another user owns.
type Foreign = fn(&Path, u32, u32) -> StoreError;

fn foreign_file(path: &Path, owner: u32, me: u32) -> StoreError {
    StoreError::ForeignFile {
        path: path.into(),
        owner,
        me,
    }
}

fn not_owned(path: &Path, owner: u32, me: u32) -> StoreError {
    StoreError::NotOwned {
        path: path.into(),
        owner,
        me,
    }
}

/// The effective uid, asked once per process.
pub fn euid() -> u32 {
    static EUID: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    // SAFETY: geteuid has no preconditions and cannot fail.
    *EUID.get_or_init(|| unsafe { libc::geteuid() })
}

/// Refuses a state file another user owns, from the metadata of the opened file (`fstat`, not
/// the path, so that a swap between the open and the check cannot slip through).
pub fn refuse_foreign(meta: &std::fs::Metadata, path: &Path) -> Result<(), StoreError> {
    use std::os::unix::fs::MetadataExt;
    if meta.uid() != euid() {
        return Err(foreign_file(path, meta.uid(), euid()));
    }
    Ok(())
}

/// `read_capped`, and with `foreign` also refuses a file another user owns, checked on the
/// opened file so that a swap between the check and the read cannot slip through.
fn read_checked(
    path: &Path,
    cap: u64,
    foreign: Option<Foreign>,
    follow: bool,
) -> Result<Option<Vec<u8>>, StoreError> {
    use std::os::unix::fs::MetadataExt;
    // Non-blocking: opening a FIFO for reading would otherwise wait for a writer for ever.
    let nofollow = if follow { 0 } else { libc::O_NOFOLLOW };
    let file = match File::options()
        .read(true)
        .custom_flags(nofollow | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
    {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if !follow && e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(StoreError::Symlink { path: path.into() });
        }
        Err(e) => return Err(StoreError::io("open", path)(e)),
    };
    let meta = file.metadata().map_err(StoreError::io("stat", path))?;
    if !meta.is_file() {
        return Err(StoreError::NotRegular { path: path.into() });
    }
    if let Some(foreign) = foreign
        && meta.uid() != euid()
    {
        return Err(foreign(path, meta.uid(), euid()));
    }
    if meta.len() > cap {
        return Err(StoreError::TooLarge {
            path: path.into(),
            size: meta.len(),
            cap,
        });
    }
    let bytes = read_sized(file, meta.len(), cap).map_err(StoreError::io("read", path))?;
    if bytes.len() as u64 > cap {
        return Err(StoreError::TooLarge {
            path: path.into(),
            size: bytes.len() as u64,
            cap,
        });
    }
    Ok(Some(bytes))
}

/// The bytes of an open file whose `fstat` gave `len`, at most `cap + 1` of them. A read that
/// returns exactly `len` bytes, asked for one more, has met the end: the usual state file
/// costs one `read`, not a second one to see the end. Anything else (the file grew or shrank
/// since the stat, a short read from a network file system) reads on to the end as before.
fn read_sized(file: File, len: u64, cap: u64) -> std::io::Result<Vec<u8>> {
    let mut file = file.take(cap + 1);
    let mut bytes = vec![0; len as usize + 1];
    let first = loop {
        match file.read(&mut bytes) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            other => break other?,
        }
    };
    bytes.truncate(first);
    if first as u64 != len {
        file.read_to_end(&mut bytes)?;
    }
    Ok(bytes)
}

/// How a state file may be used after reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    ReadWrite,
    /// Written by a newer baton: shown, never rewritten.
    ReadOnly {
        found: u64,
    },
}

/// Parses a state file, checking `schema_version` before the typed parse so that a file of a
/// newer schema gets the upgrade message rather than a confusing field error.
pub fn parse_state<T: DeserializeOwned>(
    path: &Path,
    bytes: &[u8],
) -> Result<(T, Access), StoreError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(StoreError::Empty { path: path.into() });
    }
    let corrupt = |e: serde_json::Error| StoreError::Corrupt {
        path: path.into(),
        detail: e.to_string(),
    };
    let version = |v: Option<&serde_json::Value>| match v {
        None | Some(serde_json::Value::Null) => Ok(1),
        Some(v) => v.as_u64().ok_or_else(|| StoreError::Corrupt {
            path: path.into(),
            detail: format!("schema_version is {v}, not a number"),
        }),
    };
    let access = |found: u64| {
        if found > u64::from(SCHEMA_VERSION) {
            Access::ReadOnly { found }
        } else {
            Access::ReadWrite
        }
    };
    // The common case, straight from the bytes: the version alone (the parser skips every other
    // field without building it), then the state.
    #[derive(serde::Deserialize)]
    struct Version {
        #[serde(default)]
        schema_version: Option<serde_json::Value>,
    }
    if let Ok(v) = serde_json::from_slice::<Version>(bytes)
        && let Ok(state) = serde_json::from_slice::<T>(bytes)
    {
        return Ok((state, access(version(v.schema_version.as_ref())?)));
    }
    // Anything else goes through a JSON tree, as other tools' readers take it: a key written
    // twice keeps its last value, a newer schema is told as one, and an error names what is
    // wrong.
    let value: serde_json::Value = serde_json::from_slice(bytes).map_err(corrupt)?;
    let access = access(version(value.get("schema_version"))?);
    let state = serde_json::from_value(value).map_err(|e| match access {
        Access::ReadOnly { found } => StoreError::NewerSchema {
            path: path.into(),
            found,
            known: SCHEMA_VERSION,
        },
        Access::ReadWrite => corrupt(e),
    })?;
    Ok((state, access))
}

#[cfg(test)]
mod tests {
    use super::*;
    use baton_core::model::LoopState;

    #[test]
    fn a_file_that_changed_size_since_its_stat_is_read_whole_up_to_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.json");
        std::fs::write(&p, b"0123456789").unwrap();
        let open = || File::open(&p).unwrap();
        // As the stat said, grown since, shrunk since, and grown past the cap.
        assert_eq!(read_sized(open(), 10, 100).unwrap(), b"0123456789");
        assert_eq!(read_sized(open(), 3, 100).unwrap(), b"0123456789");
        assert_eq!(read_sized(open(), 20, 100).unwrap(), b"0123456789");
        assert_eq!(read_sized(open(), 3, 5).unwrap(), b"012345");
        assert_eq!(read_sized(open(), 0, 100).unwrap(), b"0123456789");
    }

    #[test]
    fn hostile_files_are_named_errors() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.json");
        assert!(read_capped(&p, 10).unwrap().is_none());
        std::fs::write(&p, vec![b' '; 11]).unwrap();
        assert!(matches!(
            read_capped(&p, 10),
            Err(StoreError::TooLarge { .. })
        ));
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&p, &link).unwrap();
        assert!(matches!(
            read_capped(&link, 100),
            Err(StoreError::Symlink { .. })
        ));
        assert!(matches!(
            read_capped(dir.path(), 100),
            Err(StoreError::NotRegular { .. })
        ));
        // A named file may be a link, but never to a device or a FIFO.
        assert_eq!(read_named(&link, 100).unwrap().unwrap().len(), 11);
        let zero = dir.path().join("zero");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        assert!(matches!(
            read_named(&zero, 100),
            Err(StoreError::NotRegular { .. })
        ));
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(matches!(
            read_named(&fifo, 100),
            Err(StoreError::NotRegular { .. })
        ));
        assert!(matches!(
            read_state(&fifo, 100),
            Err(StoreError::NotRegular { .. })
        ));

        assert!(matches!(
            parse_state::<LoopState>(&p, b""),
            Err(StoreError::Empty { .. })
        ));
        assert!(matches!(
            parse_state::<LoopState>(&p, b"{\"status\":\"act"),
            Err(StoreError::Corrupt { .. })
        ));
        let (_, access) =
            parse_state::<LoopState>(&p, br#"{"schema_version":99,"status":"active"}"#).unwrap();
        assert_eq!(access, Access::ReadOnly { found: 99 });
        assert!(matches!(
            parse_state::<LoopState>(&p, br#"{"schema_version":99,"status":7}"#),
            Err(StoreError::NewerSchema { found: 99, .. })
        ));
        // A version that is no number, and bytes that are no object, are named as such.
        let bad = parse_state::<LoopState>(&p, br#"{"schema_version":"two"}"#).unwrap_err();
        assert!(bad.to_string().contains("not a number"), "{bad}");
        // A key written twice keeps its last value, as a JSON tree reads it.
        let (twice, _) = parse_state::<LoopState>(
            &p,
            br#"{"status":"active","status":"interrupted","loop_state":{"iteration":1}}"#,
        )
        .unwrap();
        assert_eq!(twice.status.as_str(), "interrupted");
        let text = parse_state::<LoopState>(&p, br#""a string""#).unwrap_err();
        assert!(
            matches!(&text, StoreError::Corrupt { detail, .. } if detail.contains("LoopState")),
            "{text}"
        );
    }

    #[test]
    fn a_state_file_another_user_owns_is_refused_even_to_root() {
        if euid() != 0 {
            // Past the harness's capture, so that the log of a passing run shows it.
            use std::io::Write;
            let _ = std::io::stderr()
                .write_all(b"test skipped: giving a file to another user needs root\n");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.json");
        std::fs::write(&p, b"{}").unwrap();
        assert!(read_state(&p, 10).unwrap().is_some());
        std::os::unix::fs::chown(&p, Some(65533), None).unwrap();
        assert!(matches!(
            read_state(&p, 10),
            Err(StoreError::ForeignFile {
                owner: 65533,
                me: 0,
                ..
            })
        ));
        assert!(matches!(
            read_owned(&p, 10),
            Err(StoreError::NotOwned { owner: 65533, .. })
        ));
        assert!(read_capped(&p, 10).unwrap().is_some());
    }

    proptest::proptest! {
        /// Any bytes at all give a state or a named error, never a panic.
        #[test]
        fn parse_never_panics(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..512)) {
            let _ = parse_state::<LoopState>(Path::new("x.json"), &bytes);
        }

        /// Truncating a valid file anywhere is always detected.
        #[test]
        fn every_truncation_is_an_error(cut in 0usize..200) {
            let full = br#"{"schema_version":1,"session_id":"A","ticket_id":"PROJ-1","status":"active","loop_state":{"iteration":2}}"#;
            let cut = cut.min(full.len() - 1);
            proptest::prop_assert!(parse_state::<LoopState>(Path::new("x.json"), &full[..cut]).is_err());
        }
    }
}
