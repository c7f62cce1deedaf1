//! The state store: the only way operations reach loops, the batch, runs, pause marks and
//! their journals. One trait, two implementations: the files under `.agentic/` (`FileStore`,
//! an `flock` and an atomic replace) and records on a PostgreSQL server (`PgStore`, an advisory
//! lock and one conditional statement). Nothing above the trait knows which one runs. A third,
//! `MemStore`, holds records in memory for the operations' own tests, and refuses a change made
//! without its lock.
//!
//! Records are named by kind and key (`RecordKey`), never by a path. Every read gives the
//! record's `Revision`; every write, archive and removal states what it expects to find
//! (`Expect::Absent` or `Expect::Revision`), and gets `StoreError::Conflict` with nothing
//! changed when the record is not that. The lock serializes baton's own writers; the fence
//! catches everything else (a holder whose lock was lost, another program editing a file, a
//! process that never read what it writes).

pub mod file;
pub mod memory;

use std::path::PathBuf;
use std::time::Duration;

use jiff::Timestamp;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::StoreError;
use crate::journal::{Journal, JournalTarget};
use crate::layout::{Layout, LockScope};
use crate::read::{Access, STATE_FILE_CAP, parse_state};
use baton_core::model::{BatchState, LoopState, Pauses, RunState, SCHEMA_VERSION};
use baton_core::run_id::RunId;

pub use file::FileStore;
pub use memory::MemStore;

/// What a piece of state is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RecordKind {
    Loop,
    Batch,
    Run,
    Pause,
    LegacyLoop,
}

impl RecordKind {
    /// The kind's name in the database and in messages.
    pub fn as_str(self) -> &'static str {
        match self {
            RecordKind::Loop => "loop",
            RecordKind::Batch => "batch",
            RecordKind::Run => "run",
            RecordKind::Pause => "pause",
            RecordKind::LegacyLoop => "legacy_loop",
        }
    }
}

/// One record: its kind, and for a loop or a run its key.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum RecordKey {
    /// One ticket's loop, by its LOOP_KEY (sanitized: it becomes a file name).
    Loop(String),
    /// The single-file loop state of older installs (`loop-state.json`).
    LegacyLoop,
    Batch,
    Run(RunId),
    Pause,
}

impl RecordKey {
    pub fn kind(&self) -> RecordKind {
        match self {
            RecordKey::Loop(_) => RecordKind::Loop,
            RecordKey::LegacyLoop => RecordKind::LegacyLoop,
            RecordKey::Batch => RecordKind::Batch,
            RecordKey::Run(_) => RecordKind::Run,
            RecordKey::Pause => RecordKind::Pause,
        }
    }

    /// The key within the kind: the loop key or the run id, empty for a singleton.
    pub fn key(&self) -> &str {
        match self {
            RecordKey::Loop(key) => key,
            RecordKey::Run(id) => id.as_str(),
            _ => "",
        }
    }

    /// The lock a read-check-write of this record runs under.
    pub fn lock_scope(&self) -> LockScope<'_> {
        match self {
            RecordKey::Loop(key) => LockScope::Loop(key),
            RecordKey::LegacyLoop => LockScope::LegacyLoop,
            RecordKey::Batch => LockScope::Batch,
            RecordKey::Run(_) => LockScope::Runs,
            RecordKey::Pause => LockScope::Feature,
        }
    }

    /// The stem of the record's archived name (`loop-state-<KEY>.<stamp>.json`): the same in
    /// both stores, so that an export gives the files the file store would have.
    fn archive_stem(&self) -> String {
        match self {
            RecordKey::Loop(key) => format!("loop-state-{key}"),
            RecordKey::LegacyLoop => "loop-state.legacy".into(),
            RecordKey::Batch => "batch-state".into(),
            RecordKey::Run(id) => format!("run-{id}"),
            RecordKey::Pause => "pause".into(),
        }
    }
}

/// Which version of a record a read saw: a digest of a file's bytes, or a row's revision
/// number. Opaque above the store; only equality means anything.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Revision(Rev);

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Rev {
    Digest([u8; 32]),
    Row(i64),
}

impl Revision {
    /// The revision of a file holding `bytes`.
    pub fn of_bytes(bytes: &[u8]) -> Revision {
        use sha2::Digest;
        Revision(Rev::Digest(sha2::Sha256::digest(bytes).into()))
    }

    /// The revision of a database row.
    pub fn row(rev: i64) -> Revision {
        Revision(Rev::Row(rev))
    }

    /// The row revision this stands for; `None` for a file's.
    pub fn as_row(&self) -> Option<i64> {
        match self.0 {
            Rev::Row(rev) => Some(rev),
            Rev::Digest(_) => None,
        }
    }
}

impl std::fmt::Display for Revision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Rev::Digest(d) => {
                write!(f, "sha256:")?;
                d[..6].iter().try_for_each(|b| write!(f, "{b:02x}"))
            }
            Rev::Row(rev) => write!(f, "revision {rev}"),
        }
    }
}

/// What a write states it expects to find: no record, or the revision it read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expect {
    Absent,
    Revision(Revision),
}

impl Expect {
    /// What a writer that read `read` expects: that revision, or no record if it read none.
    pub fn read<T>(read: Option<&Versioned<T>>) -> Expect {
        match read {
            Some(v) => Expect::Revision(v.revision.clone()),
            None => Expect::Absent,
        }
    }

    /// Errors unless `found` (the record's revision now, `None`: absent) is what was expected.
    pub fn check(&self, name: PathBuf, found: Option<&Revision>) -> Result<(), StoreError> {
        let holds = match (self, found) {
            (Expect::Absent, None) => true,
            (Expect::Revision(want), Some(got)) => want == got,
            _ => false,
        };
        if holds {
            return Ok(());
        }
        Err(StoreError::Conflict {
            path: name,
            expected: self.to_string(),
            found: found.map_or_else(|| "no record".to_string(), Revision::to_string),
        })
    }
}

impl std::fmt::Display for Expect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Expect::Absent => write!(f, "no record"),
            Expect::Revision(rev) => write!(f, "{rev}"),
        }
    }
}

/// A record's bytes as the store holds them, with the revision they are.
#[derive(Debug, Clone)]
pub struct Raw {
    pub bytes: Vec<u8>,
    pub revision: Revision,
    /// The machine that wrote it last, when the store records one (PostgreSQL); `None` for a
    /// file, which this machine wrote.
    pub writer: Option<String>,
}

/// A record found by a raw listing: its key and its bytes, or why they could not be read.
pub type RawListed = (RecordKey, Result<Raw, StoreError>);

/// A state read from the store: the state, the revision a write after it expects, how
/// messages name it, and whether this baton may rewrite it.
#[derive(Debug, Clone)]
pub struct Versioned<T> {
    pub state: T,
    pub revision: Revision,
    /// How messages name the record: its file, or the server's record.
    pub path: PathBuf,
    pub access: Access,
    pub writer: Option<String>,
}

impl<T> Versioned<T> {
    /// Errors unless this baton may rewrite the record.
    pub fn writable(&self) -> Result<(), StoreError> {
        match self.access {
            Access::ReadWrite => Ok(()),
            Access::ReadOnly { found } => Err(StoreError::NewerSchema {
                path: self.path.clone(),
                found,
                known: SCHEMA_VERSION,
            }),
        }
    }

    /// What a write over this read expects.
    pub fn expect(&self) -> Expect {
        Expect::Revision(self.revision.clone())
    }
}

/// A record found by a listing: its key and its state, or why it could not be read.
pub type Listed<T> = (String, Result<Versioned<T>, StoreError>);

/// A run found by a listing: its id and its state, or why it could not be read.
pub type ListedRun = Listed<RunState>;

/// One keyed loop found by a scan; an unreadable one is reported, never fatal.
#[derive(Debug)]
pub struct Scanned {
    pub key: String,
    pub loaded: Result<Versioned<LoopState>, StoreError>,
}

/// A lock of the store, held until dropped: an `flock`, or the server's advisory lock.
pub struct Guard {
    _held: Box<dyn std::any::Any>,
}

impl Guard {
    pub fn new(held: impl std::any::Any) -> Guard {
        Guard {
            _held: Box::new(held),
        }
    }
}

impl std::fmt::Debug for Guard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Guard")
    }
}

/// Every journal a store keeps, its state present or not (the journal outlives what it
/// describes): the loop keys, whether the batch has one, and the run ids, each sorted.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Journals {
    pub loops: Vec<String>,
    pub batch: bool,
    pub runs: Vec<RunId>,
}

impl Journals {
    /// Sorts journal names (`loop-<KEY>`, `batch`, `run-<ID>`) into targets; names no target
    /// would give are left out.
    pub fn from_names(names: impl IntoIterator<Item = String>) -> Journals {
        let mut out = Journals::default();
        for name in names {
            if name == "batch" {
                out.batch = true;
            } else if let Some(key) = name.strip_prefix("loop-") {
                if !key.is_empty() && baton_core::key::sanitize(key.as_bytes()) == key {
                    out.loops.push(key.to_string());
                }
            } else if let Some(id) = name.strip_prefix("run-").and_then(|i| RunId::parse(i).ok()) {
                out.runs.push(id);
            }
        }
        out.loops.sort();
        out.runs.sort_by(|a, b| a.as_str().cmp(b.as_str()));
        out
    }
}

/// A journal's name in a store: `loop-<KEY>`, `batch` or `run-<ID>` (its file's name without
/// `.jsonl`). Only an allowlisted key becomes a name.
pub fn journal_name(target: JournalTarget) -> Result<String, StoreError> {
    let file = Layout {
        root: PathBuf::new(),
        state_dir: PathBuf::new(),
    }
    .journal_file(target)?;
    Ok(file
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_suffix(".jsonl"))
        .unwrap_or_default()
        .to_string())
}

/// What every store does. The first group is what an implementation provides; the typed reads
/// and writes below it are built on those, the same for every store.
pub trait StateStore {
    /// The project's local files, which stay beside every store (sessions, ledgers, the
    /// supervisor's files, the lock sidecars of local files).
    fn layout(&self) -> &Layout;
    /// How long `lock` waits for a lock before giving up (`BATON_LOCK_WAIT`).
    fn lock_wait(&self) -> Duration;
    /// Takes the exclusive lock of one scope, creating the store if it does not exist yet.
    /// Gives up with `StoreError::LockBusy` after `wait`.
    fn lock_for(&self, scope: LockScope, wait: Duration) -> Result<Guard, StoreError>;
    /// `lock_for` with the store's own wait bound.
    fn lock(&self, scope: LockScope) -> Result<Guard, StoreError> {
        self.lock_for(scope, self.lock_wait())
    }
    /// Whether the store exists; queries on a missing store create nothing.
    fn exists(&self) -> Result<bool, StoreError>;
    /// How messages name a record: its file, or the server and the record.
    fn name(&self, key: &RecordKey) -> PathBuf;
    /// Whether a record exists: a look (no read, no lock), or one query.
    fn contains(&self, key: &RecordKey) -> Result<bool, StoreError>;
    /// A record's bytes and revision; `None` when there is none.
    fn read_raw(&self, key: &RecordKey) -> Result<Option<Raw>, StoreError>;
    /// Writes a record's bytes if it is what `expect` says, atomically; gives the new revision.
    fn write_raw(
        &self,
        key: &RecordKey,
        bytes: &[u8],
        expect: &Expect,
    ) -> Result<Revision, StoreError>;
    /// Moves a record out of the way, keeping it, if it is at the revision `expect` names;
    /// returns where it went.
    fn archive(
        &self,
        key: &RecordKey,
        expect: &Expect,
        now: Timestamp,
    ) -> Result<PathBuf, StoreError>;
    /// Deletes a record if it is what `expect` says (absent: nothing to do).
    fn remove(&self, key: &RecordKey, expect: &Expect) -> Result<(), StoreError>;
    /// Every record of a loop or run kind whose bytes contain `needle` (every one without a
    /// needle), in key order, each with its key; one that cannot be read is listed with why.
    /// A file store also removes the temp files of writers killed mid-replace here.
    fn list_raw(
        &self,
        kind: RecordKind,
        needle: Option<&[u8]>,
    ) -> Result<Vec<RawListed>, StoreError>;

    /// Writes a record as `write_raw` does and appends `events` to `target`'s journal, as one
    /// change where the store can make it one: on a server, one transaction (the write and its
    /// events land together or not at all). The file store writes, then appends: its journal
    /// is an append-only file of its own, and an append that fails leaves the write standing.
    /// `Err`: the write was refused or failed. `Ok`: the new revision, and how the appends
    /// went (an error there is a warning, never an undo).
    fn write_raw_journaled(
        &self,
        key: &RecordKey,
        bytes: &[u8],
        expect: &Expect,
        target: JournalTarget,
        events: &[serde_json::Value],
    ) -> Result<(Revision, Result<(), StoreError>), StoreError> {
        let revision = self.write_raw(key, bytes, expect)?;
        let appended = events
            .iter()
            .try_for_each(|event| self.append_journal(target, event));
        Ok((revision, appended))
    }
    /// Archives a record as `archive` does and appends the events `events` makes of where it
    /// went to `target`'s journal, as one change where the store can make it one (as
    /// `write_raw_journaled`).
    fn archive_journaled(
        &self,
        key: &RecordKey,
        expect: &Expect,
        now: Timestamp,
        target: JournalTarget,
        events: &dyn Fn(&std::path::Path) -> Vec<serde_json::Value>,
    ) -> Result<(PathBuf, Result<(), StoreError>), StoreError> {
        let to = self.archive(key, expect, now)?;
        let appended = events(&to)
            .iter()
            .try_for_each(|event| self.append_journal(target, event));
        Ok((to, appended))
    }
    /// Appends one event to a target's journal. Called under the lock of the state the event
    /// describes, right after that state's write: the journal never runs ahead of the state.
    fn append_journal(
        &self,
        target: JournalTarget,
        event: &serde_json::Value,
    ) -> Result<(), StoreError>;
    /// A target's journal, oldest first; lines that are not JSON objects are skipped and
    /// counted, never an error. A target with no journal has an empty one.
    fn read_journal(&self, target: JournalTarget) -> Result<Journal, StoreError>;
    /// Whether a write and its events land together or not at all
    /// (`write_raw_journaled` is one transaction): then no writer killed between them can
    /// leave a state without its event, and nothing needs looking for one.
    fn journal_in_step(&self) -> bool {
        false
    }
    /// Every journal kept.
    fn list_journals(&self) -> Result<Journals, StoreError>;
    /// How messages name a journal.
    fn journal_shown(&self, target: JournalTarget) -> Result<PathBuf, StoreError>;
    /// The clock every decision reads when machines share the store (the server's); `None`:
    /// this machine's clock is the only one.
    fn shared_clock(&self) -> Result<Option<Timestamp>, StoreError>;
    /// The accounts' breakers (SPEC section 11): this machine's with the files (every project
    /// on it shares them), the fleet's on a server (every project on it shares them).
    fn breakers(&self) -> Result<Vec<baton_core::breaker::Breaker>, StoreError>;
    /// Runs `change` on the breakers under the store's exclusive lock of them and keeps them
    /// when it says they changed: on a server, one transaction holding their row.
    fn change_breakers(
        &self,
        change: &mut dyn FnMut(&mut Vec<baton_core::breaker::Breaker>) -> bool,
    ) -> Result<(), StoreError>;
    /// How messages name where the breakers are kept.
    fn breakers_shown(&self) -> PathBuf;

    fn read_loop(&self, key: &str) -> Result<Option<Versioned<LoopState>>, StoreError> {
        read_as(self, &RecordKey::Loop(key.to_string()))
    }
    fn write_loop(
        &self,
        key: &str,
        state: &LoopState,
        expect: &Expect,
    ) -> Result<Revision, StoreError> {
        write_as(self, &RecordKey::Loop(key.to_string()), state, expect)
    }
    /// `write_loop` with its journal events, as `write_raw_journaled`.
    fn write_loop_journaled(
        &self,
        key: &str,
        state: &LoopState,
        expect: &Expect,
        events: &[serde_json::Value],
    ) -> Result<(Revision, Result<(), StoreError>), StoreError> {
        let record = RecordKey::Loop(key.to_string());
        let bytes = serialize_as(self, &record, state)?;
        self.write_raw_journaled(&record, &bytes, expect, JournalTarget::Loop(key), events)
    }
    fn archive_loop(
        &self,
        key: &str,
        expect: &Expect,
        now: Timestamp,
    ) -> Result<PathBuf, StoreError> {
        self.archive(&RecordKey::Loop(key.to_string()), expect, now)
    }
    /// Every keyed loop whose bytes contain `needle` (a session id: a hook finding what its
    /// session owns parses only those), in key order. Called under a lock.
    fn scan_loops(&self, needle: Option<&[u8]>) -> Result<Vec<Scanned>, StoreError> {
        Ok(list_as(self, RecordKind::Loop, needle)?
            .into_iter()
            .map(|(key, loaded)| Scanned { key, loaded })
            .collect())
    }

    fn read_legacy_loop(&self) -> Result<Option<Versioned<LoopState>>, StoreError> {
        read_as(self, &RecordKey::LegacyLoop)
    }

    fn read_batch(&self) -> Result<Option<Versioned<BatchState>>, StoreError> {
        read_as(self, &RecordKey::Batch)
    }
    fn write_batch(&self, state: &BatchState, expect: &Expect) -> Result<Revision, StoreError> {
        write_as(self, &RecordKey::Batch, state, expect)
    }

    /// `write_batch` with its journal events, as `write_raw_journaled`.
    fn write_batch_journaled(
        &self,
        state: &BatchState,
        expect: &Expect,
        events: &[serde_json::Value],
    ) -> Result<(Revision, Result<(), StoreError>), StoreError> {
        let bytes = serialize_as(self, &RecordKey::Batch, state)?;
        self.write_raw_journaled(
            &RecordKey::Batch,
            &bytes,
            expect,
            JournalTarget::Batch,
            events,
        )
    }

    fn read_run(&self, id: &RunId) -> Result<Option<Versioned<RunState>>, StoreError> {
        let loaded: Option<Versioned<RunState>> = read_as(self, &RecordKey::Run(id.clone()))?;
        // A record that names another run would be written back over that run's record.
        if let Some(l) = &loaded
            && l.state.run_id != id.as_str()
        {
            return Err(StoreError::Corrupt {
                path: l.path.clone(),
                detail: format!("it names run {:?}, not {id}", l.state.run_id),
            });
        }
        Ok(loaded)
    }
    fn write_run(&self, state: &RunState, expect: &Expect) -> Result<Revision, StoreError> {
        let id = RunId::parse(&state.run_id).map_err(|e| StoreError::Corrupt {
            path: self.layout().runs_dir(),
            detail: e.to_string(),
        })?;
        write_as(self, &RecordKey::Run(id), state, expect)
    }
    /// `write_run` with its journal events, as `write_raw_journaled`.
    fn write_run_journaled(
        &self,
        state: &RunState,
        expect: &Expect,
        events: &[serde_json::Value],
    ) -> Result<(Revision, Result<(), StoreError>), StoreError> {
        let id = RunId::parse(&state.run_id).map_err(|e| StoreError::Corrupt {
            path: self.layout().runs_dir(),
            detail: e.to_string(),
        })?;
        let record = RecordKey::Run(id.clone());
        let bytes = serialize_as(self, &record, state)?;
        self.write_raw_journaled(&record, &bytes, expect, JournalTarget::Run(&id), events)
    }
    /// Every run whose bytes contain `needle`, in id order; an unreadable one is reported.
    fn list_runs(&self, needle: Option<&[u8]>) -> Result<Vec<ListedRun>, StoreError> {
        list_as(self, RecordKind::Run, needle)
    }

    fn read_pause(&self) -> Result<Option<Versioned<Pauses>>, StoreError> {
        read_as(self, &RecordKey::Pause)
    }
    fn write_pause(&self, pauses: &Pauses, expect: &Expect) -> Result<Revision, StoreError> {
        write_as(self, &RecordKey::Pause, pauses, expect)
    }
}

/// A record parsed as `T`.
fn read_as<S: StateStore + ?Sized, T: DeserializeOwned>(
    store: &S,
    key: &RecordKey,
) -> Result<Option<Versioned<T>>, StoreError> {
    let Some(raw) = store.read_raw(key)? else {
        return Ok(None);
    };
    parse_raw(store.name(key), raw).map(Some)
}

fn parse_raw<T: DeserializeOwned>(path: PathBuf, raw: Raw) -> Result<Versioned<T>, StoreError> {
    let (state, access) = parse_state(&path, &raw.bytes)?;
    Ok(Versioned {
        state,
        revision: raw.revision,
        path,
        access,
        writer: raw.writer,
    })
}

fn list_as<S: StateStore + ?Sized, T: DeserializeOwned>(
    store: &S,
    kind: RecordKind,
    needle: Option<&[u8]>,
) -> Result<Vec<Listed<T>>, StoreError> {
    Ok(store
        .list_raw(kind, needle)?
        .into_iter()
        .map(|(key, raw)| {
            let loaded = raw.and_then(|raw| parse_raw(store.name(&key), raw));
            (key.key().to_string(), loaded)
        })
        .collect())
}

/// A state serialized as baton writes it (pretty JSON and a newline), within the cap baton
/// reads back: a record baton could not read would stop every later command on it.
fn write_as<S: StateStore + ?Sized, T: Serialize>(
    store: &S,
    key: &RecordKey,
    state: &T,
    expect: &Expect,
) -> Result<Revision, StoreError> {
    let bytes = serialize_as(store, key, state)?;
    store.write_raw(key, &bytes, expect)
}

/// The bytes `write_as` writes.
fn serialize_as<S: StateStore + ?Sized, T: Serialize>(
    store: &S,
    key: &RecordKey,
    state: &T,
) -> Result<Vec<u8>, StoreError> {
    let mut bytes = serde_json::to_vec_pretty(state).map_err(|e| StoreError::Corrupt {
        path: store.name(key),
        detail: format!("cannot serialize: {e}"),
    })?;
    bytes.push(b'\n');
    if bytes.len() as u64 > STATE_FILE_CAP {
        return Err(StoreError::TooLargeToWrite {
            path: store.name(key),
            size: bytes.len() as u64,
            cap: STATE_FILE_CAP,
        });
    }
    Ok(bytes)
}

/// The archived name of a record: `<stem>.<UTC stamp>.json`, and a second form with a random
/// suffix for when the archive already holds the first.
pub(crate) fn archive_names(key: &RecordKey, now: Timestamp) -> (String, String) {
    let stem = key.archive_stem();
    let stamp = now.strftime("%Y%m%dT%H%M%SZ");
    (
        format!("{stem}.{stamp}.json"),
        format!("{stem}.{stamp}-{}.json", crate::random_hex(2)),
    )
}
