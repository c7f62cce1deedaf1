//! A strict store held in memory, for tests of the operations above the trait: every handle
//! `MemStore::handle` gives shares one set of records, journals and locks (as processes share
//! a directory, or machines a server), and it refuses what the other stores would let race. A
//! write, an archive, a removal or a journal append by a handle that does not hold the
//! record's lock is `StoreError::Unlocked`; a write that does not state the revision it read
//! is a `Conflict`, as everywhere. Nothing touches the disk, so an operation's test runs in
//! microseconds.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use jiff::Timestamp;

use super::{Expect, Guard, Journals, Raw, RawListed, RecordKey, RecordKind, Revision, StateStore};
use crate::StoreError;
use crate::journal::{Journal, JournalTarget};
use crate::layout::{Layout, LockScope};
use baton_core::run_id::RunId;

#[derive(Default)]
struct Records {
    /// By kind and key: the bytes and their row revision.
    records: BTreeMap<(RecordKind, String), (Vec<u8>, i64)>,
    /// The last revision given: revisions are never reused, as a server's rows are not.
    last: i64,
    journals: BTreeMap<String, Vec<serde_json::Value>>,
    breakers: Vec<baton_core::breaker::Breaker>,
    archived: BTreeMap<String, Vec<u8>>,
    /// Each held lock's scope, with the handle that holds it.
    held: HashMap<String, u64>,
    handles: u64,
}

struct Shared {
    records: Mutex<Records>,
    freed: Condvar,
}

/// One handle onto a shared in-memory store. A clone is the same handle (one process's, whose
/// locks it holds); `handle` gives another.
#[derive(Clone)]
pub struct MemStore {
    layout: Layout,
    shared: Arc<Shared>,
    /// This handle, as the lock table knows it.
    id: u64,
    /// How long `lock` waits (`BATON_LOCK_WAIT` for the other stores).
    pub lock_wait: Duration,
}

/// A lock of a `MemStore`, released when dropped.
struct Held {
    shared: Arc<Shared>,
    scope: String,
}

impl Drop for Held {
    fn drop(&mut self) {
        let mut records = lock(&self.shared);
        records.held.remove(&self.scope);
        drop(records);
        self.shared.freed.notify_all();
    }
}

fn lock(shared: &Shared) -> MutexGuard<'_, Records> {
    // A test that panicked while holding the table leaves it as it was: still usable.
    shared
        .records
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl MemStore {
    /// An empty store for the project at `layout` (whose directories are named in messages
    /// and hold the files that stay local, as beside every store).
    pub fn new(layout: Layout) -> MemStore {
        let shared = Arc::new(Shared {
            records: Mutex::new(Records::default()),
            freed: Condvar::new(),
        });
        MemStore::on(layout, shared)
    }

    fn on(layout: Layout, shared: Arc<Shared>) -> MemStore {
        let id = {
            let mut records = lock(&shared);
            records.handles += 1;
            records.handles
        };
        MemStore {
            layout,
            shared,
            id,
            lock_wait: Duration::from_secs(2),
        }
    }

    /// Another handle onto the same records: another process, or another machine.
    pub fn handle(&self) -> MemStore {
        MemStore::on(self.layout.clone(), Arc::clone(&self.shared))
    }

    /// The names of the records archived so far, in order.
    pub fn archived(&self) -> Vec<String> {
        lock(&self.shared).archived.keys().cloned().collect()
    }

    fn scope_name(&self, scope: LockScope) -> String {
        self.layout
            .lock_file(scope)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    /// Errors unless this handle holds `scope`.
    fn holding(
        &self,
        records: &Records,
        scope: LockScope,
        name: PathBuf,
    ) -> Result<(), StoreError> {
        match records.held.get(&self.scope_name(scope)) {
            Some(holder) if *holder == self.id => Ok(()),
            _ => Err(StoreError::Unlocked { path: name }),
        }
    }

    fn slot(key: &RecordKey) -> (RecordKind, String) {
        (key.kind(), key.key().to_string())
    }

    /// Checks the lock and the expectation of a change to `key`, under the table's mutex.
    fn changing<'a>(
        &self,
        records: &'a mut Records,
        key: &RecordKey,
        expect: &Expect,
    ) -> Result<&'a mut Records, StoreError> {
        self.holding(records, key.lock_scope(), self.name(key))?;
        let found = records
            .records
            .get(&Self::slot(key))
            .map(|(_, rev)| Revision::row(*rev));
        expect.check(self.name(key), found.as_ref())?;
        Ok(records)
    }

    /// The lock a journal's appends are made under: its state's. A plan's judge history has no
    /// state of its own to lock (its appends are whole lines, as the file store's are).
    fn journal_scope(target: JournalTarget) -> Option<LockScope> {
        match target {
            JournalTarget::Loop(key) => Some(LockScope::Loop(key)),
            JournalTarget::Batch => Some(LockScope::Batch),
            JournalTarget::Run(_) => Some(LockScope::Runs),
            JournalTarget::Judge(_) | JournalTarget::Guard => None,
        }
    }
}

impl StateStore for MemStore {
    fn layout(&self) -> &Layout {
        &self.layout
    }

    fn lock_wait(&self) -> Duration {
        self.lock_wait
    }

    fn lock_for(&self, scope: LockScope, wait: Duration) -> Result<Guard, StoreError> {
        let name = self.scope_name(scope);
        let deadline = Instant::now() + wait;
        let mut records = lock(&self.shared);
        while records.held.contains_key(&name) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(StoreError::LockBusy {
                    path: self.layout.lock_file(scope),
                    holder: None,
                    waited: wait,
                });
            }
            records = self
                .shared
                .freed
                .wait_timeout(records, left)
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .0;
        }
        records.held.insert(name.clone(), self.id);
        Ok(Guard::new(Held {
            shared: Arc::clone(&self.shared),
            scope: name,
        }))
    }

    fn exists(&self) -> Result<bool, StoreError> {
        Ok(true)
    }

    fn name(&self, key: &RecordKey) -> PathBuf {
        let (kind, key) = Self::slot(key);
        PathBuf::from(format!("memory:{}/{key}", kind.as_str()))
    }

    fn contains(&self, key: &RecordKey) -> Result<bool, StoreError> {
        Ok(lock(&self.shared).records.contains_key(&Self::slot(key)))
    }

    fn read_raw(&self, key: &RecordKey) -> Result<Option<Raw>, StoreError> {
        Ok(lock(&self.shared)
            .records
            .get(&Self::slot(key))
            .map(|(bytes, rev)| Raw {
                bytes: bytes.clone(),
                revision: Revision::row(*rev),
                writer: None,
            }))
    }

    fn write_raw(
        &self,
        key: &RecordKey,
        bytes: &[u8],
        expect: &Expect,
    ) -> Result<Revision, StoreError> {
        let mut table = lock(&self.shared);
        let records = self.changing(&mut table, key, expect)?;
        records.last += 1;
        let rev = records.last;
        records
            .records
            .insert(Self::slot(key), (bytes.to_vec(), rev));
        Ok(Revision::row(rev))
    }

    fn archive(
        &self,
        key: &RecordKey,
        expect: &Expect,
        now: Timestamp,
    ) -> Result<PathBuf, StoreError> {
        let mut table = lock(&self.shared);
        let records = self.changing(&mut table, key, expect)?;
        let (bytes, _) =
            records
                .records
                .remove(&Self::slot(key))
                .ok_or_else(|| StoreError::Conflict {
                    path: self.name(key),
                    expected: expect.to_string(),
                    found: "no record".into(),
                })?;
        let (first, second) = super::archive_names(key, now);
        let name = if records.archived.contains_key(&first) {
            second
        } else {
            first
        };
        records.archived.insert(name.clone(), bytes);
        Ok(PathBuf::from(format!("memory:archive/{name}")))
    }

    fn remove(&self, key: &RecordKey, expect: &Expect) -> Result<(), StoreError> {
        let mut table = lock(&self.shared);
        let records = self.changing(&mut table, key, expect)?;
        records.records.remove(&Self::slot(key));
        Ok(())
    }

    fn list_raw(
        &self,
        kind: RecordKind,
        needle: Option<&[u8]>,
    ) -> Result<Vec<RawListed>, StoreError> {
        let records = lock(&self.shared);
        let contains = |bytes: &[u8]| {
            needle.is_none_or(|n| n.is_empty() || bytes.windows(n.len()).any(|w| w == n))
        };
        Ok(records
            .records
            .iter()
            .filter(|((k, _), (bytes, _))| *k == kind && contains(bytes))
            .filter_map(|((_, key), (bytes, rev))| {
                let key = match kind {
                    RecordKind::Loop => RecordKey::Loop(key.clone()),
                    RecordKind::Run => RecordKey::Run(RunId::parse(key).ok()?),
                    _ => return None,
                };
                let raw = Raw {
                    bytes: bytes.clone(),
                    revision: Revision::row(*rev),
                    writer: None,
                };
                Some((key, Ok(raw)))
            })
            .collect())
    }

    fn append_journal(
        &self,
        target: JournalTarget,
        event: &serde_json::Value,
    ) -> Result<(), StoreError> {
        let name = super::journal_name(target)?;
        let mut records = lock(&self.shared);
        if let Some(scope) = Self::journal_scope(target) {
            self.holding(&records, scope, self.journal_shown(target)?)?;
        }
        records
            .journals
            .entry(name)
            .or_default()
            .push(event.clone());
        Ok(())
    }

    fn read_journal(&self, target: JournalTarget) -> Result<Journal, StoreError> {
        let name = super::journal_name(target)?;
        let events = lock(&self.shared)
            .journals
            .get(&name)
            .cloned()
            .unwrap_or_default();
        Ok(Journal {
            events,
            skipped: 0,
            truncated: false,
        })
    }

    fn list_journals(&self) -> Result<Journals, StoreError> {
        let names: Vec<String> = lock(&self.shared).journals.keys().cloned().collect();
        Ok(Journals::from_names(names))
    }

    fn journal_shown(&self, target: JournalTarget) -> Result<PathBuf, StoreError> {
        Ok(PathBuf::from(format!(
            "memory:journal/{}",
            super::journal_name(target)?
        )))
    }

    fn shared_clock(&self) -> Result<Option<Timestamp>, StoreError> {
        Ok(None)
    }

    fn breakers(&self) -> Result<Vec<baton_core::breaker::Breaker>, StoreError> {
        Ok(lock(&self.shared).breakers.clone())
    }

    fn change_breakers(
        &self,
        change: &mut dyn FnMut(&mut Vec<baton_core::breaker::Breaker>) -> bool,
    ) -> Result<(), StoreError> {
        let mut records = lock(&self.shared);
        let mut book = records.breakers.clone();
        if change(&mut book) {
            records.breakers = book;
        }
        Ok(())
    }

    fn breakers_shown(&self) -> PathBuf {
        PathBuf::from("memory#breakers")
    }
}
