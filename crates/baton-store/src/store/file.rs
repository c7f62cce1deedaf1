//! The file store: each record a JSON file under `.agentic/` (or `BATON_STATE_DIR`), in the
//! shapes the originating protocols write them. A lock is an `flock` on a sidecar under
//! `locks/`; a write is an atomic replace whose fence (the digest of the bytes the writer read)
//! is checked under that lock right before the rename.

use std::path::{Path, PathBuf};
use std::time::Duration;

use jiff::Timestamp;

use super::{
    Expect, Guard, Journals, Raw, RawListed, RecordKey, RecordKind, Revision, StateStore,
    archive_names,
};
use crate::journal::{Journal, JournalTarget};
use crate::layout::{
    BATCH_FILE, LEGACY_LOOP_FILE, Layout, LockScope, PAUSE_FILE, check_real_dir, make_dir,
};
use crate::lock::{DEFAULT_LOCK_WAIT, DirLock};
use crate::read::{STATE_FILE_CAP, read_state};
use crate::{StoreError, atomic};
use baton_core::key::key_from_file_name;
use baton_core::run_id::RunId;

#[derive(Debug, Clone)]
pub struct FileStore {
    pub layout: Layout,
    /// How long to wait for a lock before giving up.
    pub lock_wait: Duration,
    /// The machine's own directory, shared by its projects: the accounts' breakers are kept
    /// there (`crate::breakers`). The state directory until told otherwise.
    pub machine_dir: PathBuf,
}

impl FileStore {
    pub fn new(layout: Layout) -> FileStore {
        FileStore {
            machine_dir: layout.state_dir.clone(),
            layout,
            lock_wait: DEFAULT_LOCK_WAIT,
        }
    }

    /// The file a record lives in.
    pub fn path_of(&self, key: &RecordKey) -> PathBuf {
        match key {
            RecordKey::Loop(k) => self.layout.loop_file(k),
            RecordKey::LegacyLoop => self.layout.legacy_loop_file(),
            RecordKey::Batch => self.layout.batch_file(),
            RecordKey::Run(id) => self.layout.run_file(id),
            RecordKey::Pause => self.layout.pause_file(),
        }
    }

    /// The revision of the file now, `None` when there is none.
    fn current(&self, path: &Path) -> Result<Option<Revision>, StoreError> {
        Ok(read_state(path, STATE_FILE_CAP)?.map(|b| Revision::of_bytes(&b)))
    }

    /// Errors unless the file is what `expect` says.
    fn check(&self, path: &Path, expect: &Expect) -> Result<(), StoreError> {
        expect.check(path.to_path_buf(), self.current(path)?.as_ref())
    }

    /// Whether the directory a record lives in exists (checked to be a real one of ours).
    fn dir_exists(&self, key: &RecordKey) -> Result<bool, StoreError> {
        if !self.layout.check_state_dir()? {
            return Ok(false);
        }
        match key {
            RecordKey::Run(_) => check_real_dir(&self.layout.runs_dir()),
            _ => Ok(true),
        }
    }

    /// The bytes of a listed file when they contain `needle` (any file without one); `None`
    /// for a file without it. A file that vanished is an error, as a listed file that cannot
    /// be read is.
    fn read_mentioning(path: &Path, needle: Option<&[u8]>) -> Result<Option<Raw>, StoreError> {
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
        Ok(Some(Raw {
            revision: Revision::of_bytes(&bytes),
            bytes,
            writer: None,
        }))
    }

    fn list_loops(&self, needle: Option<&[u8]>) -> Result<Vec<RawListed>, StoreError> {
        let dir = &self.layout.state_dir;
        if !self.layout.check_state_dir()? {
            return Ok(Vec::new());
        }
        let entries = std::fs::read_dir(dir).map_err(StoreError::io("list", dir))?;
        let mut found = Vec::new();
        for entry in entries {
            let entry = entry.map_err(StoreError::io("list", dir))?;
            let name = entry.file_name();
            if let Some((target, _)) = atomic::temp_target(&name) {
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
            let raw = match Self::read_mentioning(&entry.path(), needle) {
                Ok(None) => continue,
                Ok(Some(raw)) => Ok(raw),
                Err(e) => Err(e),
            };
            found.push((RecordKey::Loop(key.to_string()), raw));
        }
        found.sort_by(|a, b| a.0.key().cmp(b.0.key()));
        Ok(found)
    }

    fn list_runs(&self, needle: Option<&[u8]>) -> Result<Vec<RawListed>, StoreError> {
        let dir = self.layout.runs_dir();
        if !check_real_dir(&dir)? {
            return Ok(Vec::new());
        }
        clear_run_temps(&self.layout, false);
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
            let raw = match Self::read_mentioning(&entry.path(), needle) {
                Ok(None) => continue,
                Ok(Some(raw)) => Ok(raw),
                Err(e) => Err(e),
            };
            found.push((RecordKey::Run(id), raw));
        }
        found.sort_by(|a, b| a.0.key().cmp(b.0.key()));
        Ok(found)
    }
}

impl StateStore for FileStore {
    fn layout(&self) -> &Layout {
        &self.layout
    }

    fn lock_wait(&self) -> Duration {
        self.lock_wait
    }

    fn lock_for(&self, scope: LockScope, wait: Duration) -> Result<Guard, StoreError> {
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
        let guard = DirLock::acquire(&path, wait)?;
        if scope == LockScope::Runs {
            clear_run_temps(&self.layout, true);
        }
        Ok(Guard::new(guard))
    }

    fn exists(&self) -> Result<bool, StoreError> {
        self.layout.check_state_dir()
    }

    fn name(&self, key: &RecordKey) -> PathBuf {
        self.path_of(key)
    }

    fn contains(&self, key: &RecordKey) -> Result<bool, StoreError> {
        Ok(std::fs::symlink_metadata(self.path_of(key)).is_ok())
    }

    fn read_raw(&self, key: &RecordKey) -> Result<Option<Raw>, StoreError> {
        if !self.dir_exists(key)? {
            return Ok(None);
        }
        Ok(
            read_state(&self.path_of(key), STATE_FILE_CAP)?.map(|bytes| Raw {
                revision: Revision::of_bytes(&bytes),
                bytes,
                writer: None,
            }),
        )
    }

    fn write_raw(
        &self,
        key: &RecordKey,
        bytes: &[u8],
        expect: &Expect,
    ) -> Result<Revision, StoreError> {
        if let RecordKey::Run(_) = key {
            let dir = self.layout.runs_dir();
            if !check_real_dir(&dir)? {
                make_dir(&dir)?;
            }
        }
        let path = self.path_of(key);
        atomic::replace_checked(&path, bytes, 0o600, &|| self.check(&path, expect))?;
        Ok(Revision::of_bytes(bytes))
    }

    fn archive(
        &self,
        key: &RecordKey,
        expect: &Expect,
        now: Timestamp,
    ) -> Result<PathBuf, StoreError> {
        let path = self.path_of(key);
        self.check(&path, expect)?;
        let (name, other) = archive_names(key, now);
        let dir = self.layout.archive_dir();
        if !check_real_dir(&dir)? {
            make_dir(&dir)?;
        }
        let mut target = dir.join(&name);
        if target.exists() {
            target = dir.join(other);
        }
        crate::faults::point("archive.rename")
            .and_then(|()| std::fs::rename(&path, &target))
            .map_err(StoreError::io("archive", &path))?;
        atomic::sync_dir(&dir)?;
        atomic::sync_dir(&self.layout.state_dir)?;
        Ok(target)
    }

    fn remove(&self, key: &RecordKey, expect: &Expect) -> Result<(), StoreError> {
        let path = self.path_of(key);
        self.check(&path, expect)?;
        if *expect == Expect::Absent {
            return Ok(());
        }
        let removed = match key {
            RecordKey::LegacyLoop => crate::faults::point("remove"),
            _ => Ok(()),
        }
        .and_then(|()| std::fs::remove_file(&path));
        removed.map_err(StoreError::io("remove", &path))?;
        atomic::sync_dir(path.parent().unwrap_or(&self.layout.state_dir))
    }

    fn list_raw(
        &self,
        kind: RecordKind,
        needle: Option<&[u8]>,
    ) -> Result<Vec<RawListed>, StoreError> {
        match kind {
            RecordKind::Loop => self.list_loops(needle),
            RecordKind::Run => self.list_runs(needle),
            other => Err(StoreError::Corrupt {
                path: self.layout.state_dir.clone(),
                detail: format!("a {} is a single record, not a list", other.as_str()),
            }),
        }
    }

    fn append_journal(
        &self,
        target: JournalTarget,
        event: &serde_json::Value,
    ) -> Result<(), StoreError> {
        crate::journal::append(&self.layout, target, event)
    }

    fn read_journal(&self, target: JournalTarget) -> Result<Journal, StoreError> {
        crate::journal::read(&self.layout, target)
    }

    fn list_journals(&self) -> Result<Journals, StoreError> {
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
        Ok(Journals::from_names(names))
    }

    fn journal_shown(&self, target: JournalTarget) -> Result<PathBuf, StoreError> {
        self.layout.journal_file(target)
    }

    fn shared_clock(&self) -> Result<Option<Timestamp>, StoreError> {
        Ok(None)
    }

    fn breakers(&self) -> Result<Vec<baton_core::breaker::Breaker>, StoreError> {
        crate::breakers::read(&self.machine_dir)
    }

    fn change_breakers(
        &self,
        change: &mut dyn FnMut(&mut Vec<baton_core::breaker::Breaker>) -> bool,
    ) -> Result<(), StoreError> {
        crate::breakers::change(&self.machine_dir, self.lock_wait, change)
    }

    fn breakers_shown(&self) -> PathBuf {
        crate::breakers::file(&self.machine_dir)
    }
}

/// Removes the temp files writers of runs killed mid-replace left in `runs/`. Every run is
/// written under the runs' lock, so while the caller holds it (`held`) or nobody does, each
/// such file is a dead writer's; never one another live writer is still writing.
fn clear_run_temps(layout: &Layout, held: bool) {
    let dir = layout.runs_dir();
    if !matches!(check_real_dir(&dir), Ok(true)) {
        return;
    }
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return;
    };
    let found: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| {
            atomic::temp_target(&e.file_name()).is_some_and(|(target, _)| {
                target
                    .strip_suffix(".json")
                    .is_some_and(|id| RunId::parse(id).is_ok())
            })
        })
        .map(|e| e.path())
        .collect();
    if found.is_empty() {
        return;
    }
    let lock = layout.lock_file(LockScope::Runs);
    // A writer creates the lock file before its temp file.
    let _free = match held {
        true => None,
        false if !lock.exists() => None,
        false => match DirLock::try_acquire(&lock) {
            Ok(Some(guard)) => Some(guard),
            _ => return,
        },
    };
    for path in found {
        let _ = std::fs::remove_file(path);
    }
}
