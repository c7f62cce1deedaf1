//! The files of `baton supervise`, under `<state dir>/supervise/` (ignored by git):
//!
//! - `<pid>-<start>.jsonl`, one per running supervisor, named by its process: the hooks of
//!   the agent it runs append what they saw (a session started, a turn failed, a session
//!   ended), one JSON object per line, and the supervisor reads them after each run. A hook
//!   finds it by its own ancestors: the agent runs under the supervisor, and environment
//!   variables do not reach every client's hooks.
//! - `all.lock` and `work-<KEY>.lock`: the claims that keep one supervisor per piece of work,
//!   as `flock`s, so a supervisor that dies gives its claims up at once.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::StoreError;
use crate::layout::{Layout, check_real_dir};
use crate::process::{self, ProcessId};
use crate::sessions::ensure_dir;

pub const SUPERVISE_DIR: &str = "supervise";

/// The supervisor's directory.
pub fn dir(layout: &Layout) -> PathBuf {
    layout.state_dir.join(SUPERVISE_DIR)
}

/// The log the hooks of a supervised agent append to.
pub fn log_path(layout: &Layout, (pid, start): ProcessId) -> PathBuf {
    dir(layout).join(format!("{pid}-{start}.jsonl"))
}

/// Refuses a log that is not a regular file (a FIFO, a device planted in its place).
fn regular(file: &File, path: &Path) -> Result<(), StoreError> {
    let meta = file.metadata().map_err(StoreError::io("stat", path))?;
    if meta.is_file() {
        Ok(())
    } else {
        Err(StoreError::NotRegular { path: path.into() })
    }
}

/// Creates the log of the supervisor `me` (empty), and its directory.
pub fn create_log(layout: &Layout, me: ProcessId) -> Result<PathBuf, StoreError> {
    layout.ensure_state_dir()?;
    layout.ensure_ignore_file()?;
    ensure_dir(&dir(layout))?;
    let path = log_path(layout, me);
    File::options()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(&path)
        .map_err(StoreError::io("create", &path))
        .and_then(|file| regular(&file, &path))?;
    Ok(path)
}

/// Appends `line` to the log of the supervisor this process runs under, if any: the nearest
/// ancestor with a log in this project. `Ok(false)` when none supervises it. Costs one `stat`
/// in a project that was never supervised.
pub fn note_to_supervisor(layout: &Layout, line: &Value) -> Result<bool, StoreError> {
    if !check_real_dir(&dir(layout)).unwrap_or(false) {
        return Ok(false);
    }
    for ancestor in process::ancestors() {
        let path = log_path(layout, ancestor);
        let opened = File::options()
            .append(true)
            // Non-blocking: a FIFO planted as a log must not hang the hook writing to it.
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(&path);
        match opened {
            Ok(mut file) => {
                regular(&file, &path)?;
                // One write of one whole line: appends from several hooks never interleave.
                let text = format!("{line}\n");
                file.write_all(text.as_bytes())
                    .map_err(StoreError::io("append", &path))?;
                return Ok(true);
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(StoreError::io("open", &path)(e)),
        }
    }
    Ok(false)
}

/// The JSON objects appended to `path` after byte `from`, and the offset of its end. Read once
/// the agent has ended, when its hooks have too: a line that is not a JSON object (a torn tail
/// included) is skipped, and never joins the next attempt's first line.
pub fn read_log(path: &Path, from: u64) -> Result<(Vec<Value>, u64), StoreError> {
    let mut file = File::options()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(StoreError::io("open", path))?;
    regular(&file, path)?;
    file.seek(SeekFrom::Start(from))
        .map_err(StoreError::io("seek", path))?;
    let mut bytes = Vec::new();
    file.take(16 * 1024 * 1024)
        .read_to_end(&mut bytes)
        .map_err(StoreError::io("read", path))?;
    let events = bytes
        .split(|&b| b == b'\n')
        .filter_map(|line| serde_json::from_slice::<Value>(line).ok())
        .filter(Value::is_object)
        .collect();
    Ok((events, from + bytes.len() as u64))
}

/// A supervisor's claim on its work, held until dropped.
#[derive(Debug)]
pub struct Claim {
    files: Vec<File>,
}

/// Who holds a claim that was refused: the supervisor's pid, as it wrote it.
#[derive(Debug)]
pub struct Busy {
    pub path: PathBuf,
    pub holder: Option<u32>,
}

/// Claims the whole project (`key` = `None`: no other supervisor may run in it) or one piece
/// of work by its key (other supervisors may carry other work, none may claim the project).
pub fn claim(layout: &Layout, key: Option<&str>) -> Result<Result<Claim, Busy>, StoreError> {
    ensure_dir(&dir(layout))?;
    let all = dir(layout).join("all.lock");
    let mut files = Vec::new();
    match key {
        None => match lock(&all, true)? {
            Ok(f) => files.push(f),
            Err(busy) => return Ok(Err(busy)),
        },
        Some(key) => {
            match lock(&all, false)? {
                Ok(f) => files.push(f),
                Err(busy) => return Ok(Err(busy)),
            }
            match claim_more(layout, key)? {
                Ok(f) => files.push(f),
                Err(busy) => return Ok(Err(busy)),
            }
        }
    }
    Ok(Ok(Claim { files }))
}

/// Adds one piece of work, by its key, to a claim.
pub fn claim_more(layout: &Layout, key: &str) -> Result<Result<File, Busy>, StoreError> {
    let name = format!("work-{}.lock", baton_core::key::sanitize(key.as_bytes()));
    lock(&dir(layout).join(name), true)
}

impl Claim {
    pub fn add(&mut self, file: File) {
        self.files.push(file);
    }
}

fn lock(path: &Path, exclusive: bool) -> Result<Result<File, Busy>, StoreError> {
    let file = crate::lock::open(path)?;
    let got = if exclusive {
        file.try_lock()
    } else {
        file.try_lock_shared()
    };
    match got {
        Ok(()) => {
            // Every holder, shared ones too, names itself for whoever is refused; one write of
            // one width, so no name is ever half replaced.
            use std::os::unix::fs::FileExt;
            let _ = file.write_all_at(format!("{:<10}\n", std::process::id()).as_bytes(), 0);
            Ok(Ok(file))
        }
        Err(std::fs::TryLockError::WouldBlock) => Ok(Err(Busy {
            path: path.into(),
            holder: crate::lock::holder_pid(path),
        })),
        Err(std::fs::TryLockError::Error(e)) => Err(StoreError::io("lock", path)(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_reads_objects_from_an_offset_and_skips_a_torn_tail() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("log.jsonl");
        std::fs::write(&path, "{\"a\":1}\nnot json\n{\"b\":2}\n{\"c\":").unwrap();
        let (events, at) = read_log(&path, 0).unwrap();
        assert_eq!(events.len(), 2);
        assert_eq!(at, 30, "the torn tail is read past");
        let mut f = File::options().append(true).open(&path).unwrap();
        f.write_all(b"\n{\"d\":4}\n").unwrap();
        let (events, _) = read_log(&path, at).unwrap();
        assert_eq!(
            events,
            [serde_json::json!({"d": 4})],
            "the next line is whole"
        );
    }

    #[test]
    fn one_supervisor_per_project_or_per_piece_of_work() {
        let tmp = tempfile::tempdir().unwrap();
        let layout = Layout {
            root: tmp.path().into(),
            state_dir: tmp.path().join(".agentic"),
        };
        std::fs::create_dir(&layout.state_dir).unwrap();
        let whole = claim(&layout, None).unwrap().unwrap();
        assert!(claim(&layout, None).unwrap().is_err());
        assert!(claim(&layout, Some("T-1")).unwrap().is_err());
        drop(whole);
        let t1 = claim(&layout, Some("T-1")).unwrap().unwrap();
        let busy = claim(&layout, Some("T-1")).unwrap().unwrap_err();
        assert_eq!(busy.holder, Some(std::process::id()));
        assert!(claim(&layout, None).unwrap().is_err(), "work is claimed");
        let mut t2 = claim(&layout, Some("T-2")).unwrap().unwrap();
        assert!(claim_more(&layout, "T-1").unwrap().is_err());
        drop(t1);
        t2.add(claim_more(&layout, "T-1").unwrap().unwrap());
        assert!(claim(&layout, Some("T-1")).unwrap().is_err());
    }
}
