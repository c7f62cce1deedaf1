//! The journal: one append-only JSON Lines file per loop, per run and for the batch, under
//! `<state dir>/journal/`, so that the history of a piece of work outlives its state file
//! (which is replaced on every write, archived or pruned).
//!
//! Appends follow the ledger's discipline (`crate::append`): a line is written whole in one
//! `write` under an exclusive lock, after a torn tail is sealed. Readers skip and count every
//! line that is not a JSON object, wherever it is, so a torn tail or a line of garbage never
//! stops `baton log`, and no other command reads a journal at all.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::StoreError;
use crate::layout::{Layout, check_real_dir, make_dir};
use baton_core::key::sanitize;
use baton_core::run_id::RunId;

/// The journal directory, beside the state it describes.
pub const JOURNAL_DIR: &str = "journal";

/// How much of a journal is read: its last 8 MiB (tens of thousands of events). A longer
/// history is read from its tail, and the answer says it was truncated.
pub const JOURNAL_READ_CAP: u64 = 8 * 1024 * 1024;

/// Whose history a journal holds. Only allowlisted names become paths: a loop key that
/// sanitizing leaves unchanged, and a parsed run id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JournalTarget<'a> {
    /// One ticket's loop, by its LOOP_KEY.
    Loop(&'a str),
    /// The project's batch.
    Batch,
    Run(&'a RunId),
    /// The judge's history of the claims on a piece of work (`Claim::evidence_key`: the plan
    /// directory, or `loop/<KEY>`): each claim with its verdict, each refused stop, each claim
    /// handed to a person.
    Judge(&'a str),
    /// The guard of shared checkouts: each command it refused, each refused command a person
    /// let through once (`baton guard allow`), and each time it was turned off.
    Guard,
}

/// What a read found: the events in file order, how many lines were skipped because they were
/// not JSON objects (a torn tail, garbage), and whether only the tail of a long journal was
/// read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Journal {
    pub events: Vec<Value>,
    pub skipped: usize,
    pub truncated: bool,
}

impl Layout {
    pub fn journal_dir(&self) -> PathBuf {
        self.state_dir.join(JOURNAL_DIR)
    }

    /// `journal/loop-<KEY>.jsonl`, `journal/batch.jsonl`, `journal/run-<RUN_ID>.jsonl`,
    /// `journal/judge-<digest of the work's key>.jsonl` or `journal/guard.jsonl`.
    pub fn journal_file(&self, target: JournalTarget) -> Result<PathBuf, StoreError> {
        let name = match target {
            JournalTarget::Loop(key) => {
                // Keys come from `loop_key`, which only ever gives sanitized ones; anything else
                // never reaches a path.
                if key.is_empty() || sanitize(key.as_bytes()) != key {
                    return Err(StoreError::io("name a journal in", self.journal_dir())(
                        std::io::Error::new(
                            std::io::ErrorKind::InvalidInput,
                            format!("{key:?} is not a loop key"),
                        ),
                    ));
                }
                format!("loop-{key}.jsonl")
            }
            JournalTarget::Batch => "batch.jsonl".into(),
            JournalTarget::Run(id) => format!("run-{id}.jsonl"),
            JournalTarget::Judge(work) => {
                format!("judge-{}.jsonl", &crate::sha256_hex(work.as_bytes())[..16])
            }
            JournalTarget::Guard => "guard.jsonl".into(),
        };
        Ok(self.journal_dir().join(name))
    }
}

/// Appends one event as one line, creating the directory (0700) and the file (0600) on first
/// use.
pub fn append(layout: &Layout, target: JournalTarget, event: &Value) -> Result<(), StoreError> {
    let path = layout.journal_file(target)?;
    let line = serde_json::to_string(event).map_err(|e| StoreError::Corrupt {
        path: path.clone(),
        detail: format!("cannot serialize an event: {e}"),
    })?;
    let dir = layout.journal_dir();
    if !check_real_dir(&dir)? {
        make_dir(&dir)?;
        crate::atomic::sync_dir(&layout.state_dir)?;
    }
    let mut locked = crate::append::open_locked(&path, Some(0o600))?;
    let created = locked.len == 0;
    locked.append_line(&path, &line)?;
    if created {
        // A new file's name must survive a power cut as well as its first line.
        crate::atomic::sync_dir(&dir)?;
    }
    Ok(())
}

/// Reads a journal (its last `JOURNAL_READ_CAP` bytes); a missing one is an empty history.
pub fn read(layout: &Layout, target: JournalTarget) -> Result<Journal, StoreError> {
    let path = layout.journal_file(target)?;
    if !check_real_dir(&layout.state_dir)? || !check_real_dir(&layout.journal_dir())? {
        return Ok(Journal::default());
    }
    read_file(&path, JOURNAL_READ_CAP)
}

fn read_file(path: &Path, cap: u64) -> Result<Journal, StoreError> {
    let io = |op: &'static str| StoreError::io(op, path);
    let mut file = match File::options()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
    {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Journal::default()),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(StoreError::Symlink { path: path.into() });
        }
        Err(e) => return Err(io("open")(e)),
    };
    let meta = file.metadata().map_err(io("stat"))?;
    if !meta.is_file() {
        return Err(StoreError::NotRegular { path: path.into() });
    }
    // A shared lock: a line being appended is read whole or not at all.
    file.lock_shared().map_err(io("lock"))?;
    let len = file.metadata().map_err(io("stat"))?.len();
    let truncated = len > cap;
    if truncated {
        file.seek(SeekFrom::Start(len - cap)).map_err(io("seek"))?;
    }
    let mut bytes = Vec::with_capacity(len.min(cap) as usize);
    file.take(cap).read_to_end(&mut bytes).map_err(io("read"))?;
    let mut body = &bytes[..];
    if truncated {
        // The read began inside a line: that piece is not an event of its own.
        body = match body.iter().position(|&b| b == b'\n') {
            Some(at) => &body[at + 1..],
            None => &[],
        };
    }
    let (events, skipped) = parse(body);
    Ok(Journal {
        events,
        skipped,
        truncated,
    })
}

/// The events of a journal's bytes, and how many non-empty lines were not JSON objects.
pub fn parse(bytes: &[u8]) -> (Vec<Value>, usize) {
    let mut events = Vec::new();
    let mut skipped = 0;
    for line in bytes.split(|&b| b == b'\n') {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<Value>(line) {
            Ok(v @ Value::Object(_)) => events.push(v),
            _ => skipped += 1,
        }
    }
    (events, skipped)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::io::Write;

    fn layout(dir: &Path) -> Layout {
        Layout {
            root: dir.into(),
            state_dir: dir.join(".agentic"),
        }
    }

    #[test]
    fn appends_read_back_in_order_and_a_torn_tail_is_sealed_and_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let l = layout(dir.path());
        std::fs::create_dir_all(&l.state_dir).unwrap();
        let t = JournalTarget::Loop("PROJ-1");
        assert_eq!(read(&l, t).unwrap(), Journal::default(), "missing is empty");
        append(&l, t, &json!({"event": "init"})).unwrap();
        let path = l.journal_file(t).unwrap();
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(br#"{"event": "se"#)
            .unwrap();
        let torn = read(&l, t).unwrap();
        assert_eq!((torn.events.len(), torn.skipped), (1, 1));
        append(&l, t, &json!({"event": "set"})).unwrap();
        let after = read(&l, t).unwrap();
        let names: Vec<&str> = after
            .events
            .iter()
            .map(|e| e["event"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["init", "set"], "the next line is whole");
        assert_eq!(after.skipped, 1);
    }

    #[test]
    fn only_the_tail_of_a_long_journal_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("j.jsonl");
        let mut text = String::new();
        for i in 0..100 {
            text.push_str(&format!("{{\"n\":{i}}}\n"));
        }
        std::fs::write(&p, &text).unwrap();
        let j = read_file(&p, 100).unwrap();
        assert!(j.truncated);
        assert_eq!(j.skipped, 0, "the cut line is dropped, not counted");
        assert_eq!(j.events.last().unwrap()["n"], 99);
        assert!(j.events.len() < 100);
    }

    #[test]
    fn only_allowlisted_names_become_paths() {
        let l = layout(Path::new("/p"));
        assert!(l.journal_file(JournalTarget::Loop("../x")).is_err());
        assert!(l.journal_file(JournalTarget::Loop("")).is_err());
        assert_eq!(
            l.journal_file(JournalTarget::Batch).unwrap(),
            Path::new("/p/.agentic/journal/batch.jsonl")
        );
    }

    proptest::proptest! {
        /// Any bytes give events and a count, never a panic.
        #[test]
        fn parse_never_panics(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..512)) {
            let _ = parse(&bytes);
        }
    }
}
