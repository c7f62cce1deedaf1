//! The state store: the only way commands reach the files. A trait, so that a backend for
//! fleets of machines (PostgreSQL, with the lock as a transaction) can replace the files
//! without touching a decision.

use std::path::{Path, PathBuf};
use std::time::Duration;

use jiff::Timestamp;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::journal::{Journal, JournalTarget};
use crate::layout::{
    BATCH_FILE, LEGACY_LOOP_FILE, Layout, LockScope, PAUSE_FILE, check_real_dir, make_dir,
};
use crate::lock::{DEFAULT_LOCK_WAIT, DirLock};
use crate::pg::backend::{Db, DbLock};
use crate::pg::records::Kind;
use crate::read::{Access, STATE_FILE_CAP, parse_state, read_state};
use crate::{StoreError, atomic};
use baton_core::key::key_from_file_name;
use baton_core::model::{BatchState, LoopState, Pauses, RunState, SCHEMA_VERSION};
use baton_core::run_id::RunId;
use std::rc::Rc;

/// A state read from the store, with where it came from and whether it may be rewritten.
#[derive(Debug, Clone)]
pub struct Loaded<T> {
    pub state: T,
    pub path: PathBuf,
    pub access: Access,
    /// The machine that wrote it last, when the store records one (PostgreSQL); `None` for a
    /// file, which this machine wrote.
    pub writer: Option<String>,
}

impl<T> Loaded<T> {
    /// Errors unless this baton may rewrite the file.
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
}

/// A record found by a listing: its key and its state, or why it could not be read.
pub type Listed<T> = (String, Result<Loaded<T>, StoreError>);

/// A run found by a listing: its id and its state, or why it could not be read.
pub type ListedRun = (String, Result<Loaded<RunState>, StoreError>);

/// One keyed loop file found by a scan; an unreadable one is reported, never fatal.
#[derive(Debug)]
pub struct Scanned {
    pub key: String,
    pub loaded: Result<Loaded<LoopState>, StoreError>,
}

pub trait StateStore {
    /// Held for the whole of a read-check-write.
    type Guard;

    /// Takes the exclusive lock of one state file, creating the store if it does not exist
    /// yet. Gives up with `StoreError::LockBusy` after the store's wait bound.
    fn lock(&self, scope: LockScope) -> Result<Self::Guard, StoreError>;
    /// Whether the store exists; queries on a missing store create nothing.
    fn exists(&self) -> Result<bool, StoreError>;

    fn read_loop(&self, key: &str) -> Result<Option<Loaded<LoopState>>, StoreError>;
    fn write_loop(&self, key: &str, state: &LoopState) -> Result<(), StoreError>;
    /// Moves a loop out of the way, keeping it; returns where it went.
    fn archive_loop(&self, key: &str, now: Timestamp) -> Result<PathBuf, StoreError>;
    /// Every keyed loop, in key order. Called under the lock; it also removes the temp files
    /// of writers killed mid-replace.
    fn scan_loops(&self) -> Result<Vec<Scanned>, StoreError>;

    fn read_legacy_loop(&self) -> Result<Option<Loaded<LoopState>>, StoreError>;
    fn remove_legacy_loop(&self) -> Result<(), StoreError>;
    fn archive_legacy_loop(&self, now: Timestamp) -> Result<PathBuf, StoreError>;

    fn read_batch(&self) -> Result<Option<Loaded<BatchState>>, StoreError>;
    fn write_batch(&self, state: &BatchState) -> Result<(), StoreError>;
    fn archive_batch(&self, now: Timestamp) -> Result<PathBuf, StoreError>;

    fn read_run(&self, id: &RunId) -> Result<Option<Loaded<RunState>>, StoreError>;
    fn write_run(&self, state: &RunState) -> Result<(), StoreError>;
    /// Every run, in id order; an unreadable one is reported, never fatal.
    fn list_runs(&self) -> Result<Vec<ListedRun>, StoreError>;
    /// Deletes a run's state: only `baton run prune` calls it, for finished runs.
    fn remove_run(&self, id: &RunId) -> Result<(), StoreError>;

    fn read_pause(&self) -> Result<Option<Loaded<Pauses>>, StoreError>;
    fn write_pause(&self, pauses: &Pauses) -> Result<(), StoreError>;
    fn remove_pause(&self) -> Result<(), StoreError>;

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
}

/// The files under `.agentic/`, or with `db` the same state as records on a PostgreSQL server
/// (`BATON_STORE`): loops, the batch, runs, pause marks and the journal go there; everything
/// else (sessions, ledgers, locks of local files) stays in the project.
#[derive(Debug, Clone)]
pub struct FsStore {
    pub layout: Layout,
    /// How long to wait for a lock before giving up.
    pub lock_wait: Duration,
    pub db: Option<Rc<Db>>,
}

/// A state file's lock, held until dropped: an `flock`, or the server's advisory lock.
#[derive(Debug)]
pub enum Guard {
    File(DirLock),
    Db(DbLock),
}

impl FsStore {
    pub fn new(layout: Layout) -> FsStore {
        FsStore {
            layout,
            lock_wait: DEFAULT_LOCK_WAIT,
            db: None,
        }
    }

    /// The record a state file's path stands for in the database.
    fn record_of(&self, path: &Path) -> Option<(Kind, String)> {
        let name = path.file_name()?.to_str()?;
        let parent = path.parent()?;
        if parent == self.layout.runs_dir() {
            return Some((Kind::Run, name.strip_suffix(".json")?.to_string()));
        }
        if parent != self.layout.state_dir {
            return None;
        }
        Some(match name {
            n if n == LEGACY_LOOP_FILE => (Kind::LegacyLoop, String::new()),
            n if n == BATCH_FILE => (Kind::Batch, String::new()),
            n if n == PAUSE_FILE => (Kind::Pause, String::new()),
            n => (Kind::Loop, key_from_file_name(n)?.to_string()),
        })
    }

    /// `db` and the record for `path`; `None` for the file store.
    fn in_db(&self, path: &Path) -> Option<(&Rc<Db>, Kind, String)> {
        let db = self.db.as_ref()?;
        let (kind, key) = self.record_of(path)?;
        Some((db, kind, key))
    }

    /// How messages name the state `path` stands for: the file, or the server's record.
    pub fn shown(&self, path: &Path) -> PathBuf {
        match self.in_db(path) {
            Some((db, kind, key)) => PathBuf::from(db.path(kind, &key)),
            None => path.to_path_buf(),
        }
    }

    /// Whether the state `path` stands for exists: a look at the file (no read, no lock), or
    /// a query for the record.
    pub fn holds(&self, path: &Path) -> Result<bool, StoreError> {
        match self.in_db(path) {
            Some((db, kind, key)) => Ok(db.read(kind, &key)?.is_some()),
            None => Ok(std::fs::symlink_metadata(path).is_ok()),
        }
    }

    /// How messages name a journal: its file, or the server's record of it.
    pub fn journal_shown(&self, target: JournalTarget) -> Result<PathBuf, StoreError> {
        match &self.db {
            Some(db) => Ok(PathBuf::from(format!(
                "{}#journal/{}",
                db.shown(),
                journal_name(&self.layout, target)?
            ))),
            None => self.layout.journal_file(target),
        }
    }

    /// The records of a kind whose documents contain `needle`, parsed as `Loaded`.
    fn db_list<T: DeserializeOwned>(
        &self,
        db: &Db,
        kind: Kind,
        needle: Option<&[u8]>,
    ) -> Result<Vec<Listed<T>>, StoreError> {
        let mut out = Vec::new();
        for (key, doc, host) in db.list(kind)? {
            if let Some(needle) = needle
                && !doc
                    .as_bytes()
                    .windows(needle.len().max(1))
                    .any(|w| w == needle)
            {
                continue;
            }
            let path = PathBuf::from(db.path(kind, &key));
            let loaded = parse_state(&path, doc.as_bytes()).map(|(state, access)| Loaded {
                state,
                path,
                access,
                writer: Some(host),
            });
            out.push((key, loaded));
        }
        Ok(out)
    }

    /// `scan_loops`, keeping only the files whose bytes contain `needle` (a session id), so
    /// that a hook finding what its session owns parses only those. An unreadable file is
    /// kept, as in `scan_loops`.
    pub fn scan_loops_mentioning(&self, needle: Option<&[u8]>) -> Result<Vec<Scanned>, StoreError> {
        if let Some(db) = &self.db {
            return Ok(self
                .db_list(db, Kind::Loop, needle)?
                .into_iter()
                .map(|(key, loaded)| Scanned { key, loaded })
                .collect());
        }
        let dir = &self.layout.state_dir;
        if !self.layout.check_state_dir()? {
            return Ok(Vec::new());
        }
        let entries = std::fs::read_dir(dir).map_err(StoreError::io("list", dir))?;
        let mut found = Vec::new();
        for entry in entries {
            let entry = entry.map_err(StoreError::io("list", dir))?;
            let name = entry.file_name();
            if let Some(target) = orphan_temp_target(&name) {
                // Every replace writes its temp file under the lock of the file it replaces: a
                // temp file whose lock is free belongs to a writer that was killed mid-write.
                let scope = match target {
                    t if t == LEGACY_LOOP_FILE => Some(LockScope::LegacyLoop),
                    t if t == PAUSE_FILE => Some(LockScope::Feature),
                    t if t == BATCH_FILE => Some(LockScope::Batch),
                    t => key_from_file_name(t).map(LockScope::Loop),
                };
                if let Some(scope) = scope {
                    // A writer creates its lock file before its temp file.
                    let lock = self.layout.lock_file(scope);
                    if !lock.exists() || matches!(DirLock::try_acquire(&lock), Ok(Some(_))) {
                        let _ = std::fs::remove_file(entry.path());
                    }
                }
                continue;
            }
            let Some(key) = name.to_str().and_then(key_from_file_name) else {
                continue;
            };
            let path = entry.path();
            let loaded = match self.read_mentioning(&path, needle) {
                Ok(None) => continue,
                Ok(Some(loaded)) => Ok(loaded),
                Err(e) => Err(e),
            };
            found.push(Scanned {
                key: key.to_string(),
                loaded,
            });
        }
        found.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(found)
    }

    /// `list_runs`, keeping only the runs whose bytes contain `needle`.
    pub fn list_runs_mentioning(
        &self,
        needle: Option<&[u8]>,
    ) -> Result<Vec<ListedRun>, StoreError> {
        if let Some(db) = &self.db {
            return self.db_list(db, Kind::Run, needle);
        }
        let dir = self.layout.runs_dir();
        if !check_real_dir(&dir)? {
            return Ok(Vec::new());
        }
        let mut found = Vec::new();
        for entry in std::fs::read_dir(&dir).map_err(StoreError::io("list", &dir))? {
            let entry = entry.map_err(StoreError::io("list", &dir))?;
            let name = entry.file_name();
            let Some(id) = name
                .to_str()
                .and_then(|n| n.strip_suffix(".json"))
                .and_then(|n| RunId::parse(n).ok())
            else {
                continue;
            };
            let path = entry.path();
            let loaded = match self.read_mentioning(&path, needle) {
                Ok(None) => continue,
                Ok(Some(loaded)) => Ok(loaded),
                Err(e) => Err(e),
            };
            found.push((id.to_string(), loaded));
        }
        found.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(found)
    }

    /// A state file that contains `needle` (any file without one), parsed; `None` for a file
    /// without it. A file that vanished is an error, as a listed file that cannot be read is.
    fn read_mentioning<T: DeserializeOwned>(
        &self,
        path: &Path,
        needle: Option<&[u8]>,
    ) -> Result<Option<Loaded<T>>, StoreError> {
        let Some(bytes) = read_state(path, STATE_FILE_CAP)? else {
            return Err(StoreError::io("read", path)(
                std::io::ErrorKind::NotFound.into(),
            ));
        };
        if let Some(needle) = needle
            && !bytes.windows(needle.len().max(1)).any(|w| w == needle)
        {
            return Ok(None);
        }
        let (state, access) = parse_state(path, &bytes)?;
        Ok(Some(Loaded {
            state,
            path: path.into(),
            access,
            writer: None,
        }))
    }

    fn read<T: DeserializeOwned>(&self, path: &Path) -> Result<Option<Loaded<T>>, StoreError> {
        if let Some((db, kind, key)) = self.in_db(path) {
            let Some((doc, host)) = db.read(kind, &key)? else {
                return Ok(None);
            };
            let shown = PathBuf::from(db.path(kind, &key));
            let (state, access) = parse_state(&shown, doc.as_bytes())?;
            return Ok(Some(Loaded {
                state,
                path: shown,
                access,
                writer: Some(host),
            }));
        }
        if !self.layout.check_state_dir()? {
            return Ok(None);
        }
        let Some(bytes) = read_state(path, STATE_FILE_CAP)? else {
            return Ok(None);
        };
        let (state, access) = parse_state(path, &bytes)?;
        Ok(Some(Loaded {
            state,
            path: path.into(),
            access,
            writer: None,
        }))
    }

    fn write<T: Serialize>(&self, path: &Path, state: &T) -> Result<(), StoreError> {
        let mut bytes = serde_json::to_vec_pretty(state).map_err(|e| StoreError::Corrupt {
            path: path.into(),
            detail: format!("cannot serialize: {e}"),
        })?;
        bytes.push(b'\n');
        // A file baton could not read back would stop every later command on it.
        if bytes.len() as u64 > STATE_FILE_CAP {
            return Err(StoreError::TooLargeToWrite {
                path: path.into(),
                size: bytes.len() as u64,
                cap: STATE_FILE_CAP,
            });
        }
        if let Some((db, kind, key)) = self.in_db(path) {
            let doc = String::from_utf8(bytes).map_err(|e| StoreError::Corrupt {
                path: path.into(),
                detail: e.to_string(),
            })?;
            return db.write(kind, &key, &doc, crate::pg::transfer::epoch_of(&doc));
        }
        atomic::replace(path, &bytes)
    }

    fn archive(&self, path: &Path, stem: &str, now: Timestamp) -> Result<PathBuf, StoreError> {
        let stamp = now.strftime("%Y%m%dT%H%M%SZ");
        let name = format!("{stem}.{stamp}.json");
        let other = || format!("{stem}.{stamp}-{}.json", crate::random_hex(2));
        if let Some((db, kind, key)) = self.in_db(path) {
            // Named as the file store names it, so that an export gives the same files.
            return db.archive(kind, &key, &name, &other()).map(PathBuf::from);
        }
        let dir = self.layout.archive_dir();
        if !check_real_dir(&dir)? {
            make_dir(&dir)?;
        }
        let mut target = dir.join(&name);
        if target.exists() {
            target = dir.join(other());
        }
        crate::faults::point("archive.rename")
            .and_then(|()| std::fs::rename(path, &target))
            .map_err(StoreError::io("archive", path))?;
        atomic::sync_dir(&dir)?;
        atomic::sync_dir(&self.layout.state_dir)?;
        Ok(target)
    }
}

impl StateStore for FsStore {
    type Guard = Guard;

    fn lock(&self, scope: LockScope) -> Result<Guard, StoreError> {
        if let Some(db) = &self.db {
            let path = self.layout.lock_file(scope);
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            return db.lock(&name, self.lock_wait).map(Guard::Db);
        }
        self.layout.ensure_state_dir()?;
        // Every write takes a lock: the ignore file is there whoever made the directory (one
        // failed exclusive create when it already is).
        self.layout.ensure_ignore_file()?;
        let path = self.layout.lock_file(scope);
        if let Some(dir) = path.parent()
            && !check_real_dir(dir)?
        {
            make_dir(dir)?;
        }
        DirLock::acquire(&path, self.lock_wait).map(Guard::File)
    }

    fn exists(&self) -> Result<bool, StoreError> {
        if self.db.is_some() {
            return Ok(true);
        }
        self.layout.check_state_dir()
    }

    fn read_loop(&self, key: &str) -> Result<Option<Loaded<LoopState>>, StoreError> {
        self.read(&self.layout.loop_file(key))
    }

    fn write_loop(&self, key: &str, state: &LoopState) -> Result<(), StoreError> {
        self.write(&self.layout.loop_file(key), state)
    }

    fn archive_loop(&self, key: &str, now: Timestamp) -> Result<PathBuf, StoreError> {
        self.archive(
            &self.layout.loop_file(key),
            &format!("loop-state-{key}"),
            now,
        )
    }

    fn scan_loops(&self) -> Result<Vec<Scanned>, StoreError> {
        self.scan_loops_mentioning(None)
    }

    fn read_legacy_loop(&self) -> Result<Option<Loaded<LoopState>>, StoreError> {
        self.read(&self.layout.legacy_loop_file())
    }

    fn remove_legacy_loop(&self) -> Result<(), StoreError> {
        if let Some(db) = &self.db {
            return db.remove(Kind::LegacyLoop, "");
        }
        let path = self.layout.legacy_loop_file();
        crate::faults::point("remove")
            .and_then(|()| std::fs::remove_file(&path))
            .map_err(StoreError::io("remove", &path))?;
        atomic::sync_dir(&self.layout.state_dir)
    }

    fn archive_legacy_loop(&self, now: Timestamp) -> Result<PathBuf, StoreError> {
        self.archive(&self.layout.legacy_loop_file(), "loop-state.legacy", now)
    }

    fn read_batch(&self) -> Result<Option<Loaded<BatchState>>, StoreError> {
        self.read(&self.layout.batch_file())
    }

    fn write_batch(&self, state: &BatchState) -> Result<(), StoreError> {
        self.write(&self.layout.batch_file(), state)
    }

    fn archive_batch(&self, now: Timestamp) -> Result<PathBuf, StoreError> {
        self.archive(&self.layout.batch_file(), "batch-state", now)
    }

    fn read_run(&self, id: &RunId) -> Result<Option<Loaded<RunState>>, StoreError> {
        if self.db.is_none() && !check_real_dir(&self.layout.runs_dir())? {
            return Ok(None);
        }
        let loaded: Option<Loaded<RunState>> = self.read(&self.layout.run_file(id))?;
        // A file that names another run would be written back over that run's file.
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

    fn write_run(&self, state: &RunState) -> Result<(), StoreError> {
        let id = RunId::parse(&state.run_id).map_err(|e| StoreError::Corrupt {
            path: self.layout.runs_dir(),
            detail: e.to_string(),
        })?;
        let dir = self.layout.runs_dir();
        if self.db.is_none() && !check_real_dir(&dir)? {
            make_dir(&dir)?;
        }
        self.write(&self.layout.run_file(&id), state)
    }

    fn list_runs(&self) -> Result<Vec<ListedRun>, StoreError> {
        self.list_runs_mentioning(None)
    }

    fn remove_run(&self, id: &RunId) -> Result<(), StoreError> {
        if let Some(db) = &self.db {
            return db.remove(Kind::Run, id.as_str());
        }
        let path = self.layout.run_file(id);
        std::fs::remove_file(&path).map_err(StoreError::io("remove", &path))?;
        atomic::sync_dir(&self.layout.runs_dir())
    }

    fn read_pause(&self) -> Result<Option<Loaded<Pauses>>, StoreError> {
        self.read(&self.layout.pause_file())
    }

    fn write_pause(&self, pauses: &Pauses) -> Result<(), StoreError> {
        self.write(&self.layout.pause_file(), pauses)
    }

    fn remove_pause(&self) -> Result<(), StoreError> {
        if let Some(db) = &self.db {
            return db.remove(Kind::Pause, "");
        }
        let path = self.layout.pause_file();
        match std::fs::remove_file(&path) {
            Ok(()) => atomic::sync_dir(&self.layout.state_dir),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(StoreError::io("remove", &path)(e)),
        }
    }

    fn append_journal(
        &self,
        target: JournalTarget,
        event: &serde_json::Value,
    ) -> Result<(), StoreError> {
        if let Some(db) = &self.db {
            let line = serde_json::to_string(event).map_err(|e| StoreError::Corrupt {
                path: PathBuf::from(db.shown()),
                detail: format!("cannot serialize an event: {e}"),
            })?;
            return db.append_journal(&journal_name(&self.layout, target)?, &line);
        }
        crate::journal::append(&self.layout, target, event)
    }

    fn read_journal(&self, target: JournalTarget) -> Result<Journal, StoreError> {
        if let Some(db) = &self.db {
            let lines = db.read_journal(&journal_name(&self.layout, target)?)?;
            let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
            let (events, skipped) = crate::journal::parse(text.as_bytes());
            return Ok(Journal {
                events,
                skipped,
                truncated: false,
            });
        }
        crate::journal::read(&self.layout, target)
    }
}

impl FsStore {
    /// Every journal kept, its state present or not (the journal outlives what it describes):
    /// the loop keys, whether the batch has one, and the run ids, each sorted. Files whose
    /// names no target would give are left out.
    pub fn list_journals(&self) -> Result<Journals, StoreError> {
        let names = match &self.db {
            Some(db) => db.journal_names()?,
            None => {
                let dir = self.layout.journal_dir();
                let entries = match std::fs::read_dir(&dir) {
                    Ok(entries) => entries,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        return Ok(Journals::default());
                    }
                    Err(e) => return Err(StoreError::io("list", &dir)(e)),
                };
                let mut names = Vec::new();
                for entry in entries {
                    let entry = entry.map_err(StoreError::io("list", &dir))?;
                    if let Some(name) = entry
                        .file_name()
                        .to_str()
                        .and_then(|n| n.strip_suffix(".jsonl"))
                    {
                        names.push(name.to_string());
                    }
                }
                names.sort();
                names
            }
        };
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
        Ok(out)
    }
}

/// What `FsStore::list_journals` finds.
#[derive(Debug, Default)]
pub struct Journals {
    pub loops: Vec<String>,
    pub batch: bool,
    pub runs: Vec<RunId>,
}

/// A journal's name in the database: its file's name without `.jsonl` (`loop-<KEY>`, `batch`,
/// `run-<ID>`), as `baton store import` names it.
fn journal_name(layout: &Layout, target: JournalTarget) -> Result<String, StoreError> {
    let path = layout.journal_file(target)?;
    Ok(path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_suffix(".jsonl"))
        .unwrap_or_default()
        .to_string())
}

/// The file a temp file `.<name>.tmp-<pid>-<hex>` (as `atomic::replace` names them) was to
/// replace.
fn orphan_temp_target(name: &std::ffi::OsStr) -> Option<&str> {
    let rest = name.to_str()?.strip_prefix('.')?;
    rest.rfind(".tmp-").map(|at| &rest[..at])
}
