//! The PostgreSQL store: loops, the batch, runs, pause marks and journals as records of one
//! project on a server every machine of a fleet shares (`BATON_STORE=postgres://…`). A lock is
//! the server's advisory lock; a write is one statement that lands only on the revision its
//! writer read; every time is the server's. Everything else (sessions, ledgers, the supervisor's
//! files) stays in the project's files, as `layout` names them.

use std::path::PathBuf;
use std::rc::Rc;
use std::time::Duration;

use jiff::Timestamp;

use super::backend::Db;
use crate::StoreError;
use crate::journal::{Journal, JournalTarget};
use crate::layout::{Layout, LockScope};
use crate::lock::DEFAULT_LOCK_WAIT;
use crate::store::{
    Expect, Guard, Journals, Raw, RawListed, RecordKey, RecordKind, Revision, StateStore,
    archive_names, journal_name,
};

#[derive(Debug, Clone)]
pub struct PgStore {
    pub layout: Layout,
    pub db: Rc<Db>,
    /// How long to wait for a lock before giving up.
    pub lock_wait: Duration,
}

impl PgStore {
    /// A record's bytes as the text the server keeps.
    fn doc<'a>(&self, key: &RecordKey, bytes: &'a [u8]) -> Result<&'a str, StoreError> {
        std::str::from_utf8(bytes).map_err(|e| StoreError::Corrupt {
            path: self.name(key),
            detail: e.to_string(),
        })
    }

    pub fn new(layout: Layout, db: Rc<Db>) -> PgStore {
        PgStore {
            layout,
            db,
            lock_wait: DEFAULT_LOCK_WAIT,
        }
    }

    /// The row revision `expect` names: `Ok(None)` for absent; a file's revision can never
    /// match a row, so it is a conflict.
    fn expected_row(&self, key: &RecordKey, expect: &Expect) -> Result<Option<i64>, StoreError> {
        match expect {
            Expect::Absent => Ok(None),
            Expect::Revision(rev) => match rev.as_row() {
                Some(row) => Ok(Some(row)),
                None => Err(self.conflict(key, expect)),
            },
        }
    }

    /// The conflict a refused write reports, with what the record is now.
    fn conflict(&self, key: &RecordKey, expect: &Expect) -> StoreError {
        let found = match self.db.read(key.kind(), key.key()) {
            Ok(Some(r)) => Some(Revision::row(r.rev)),
            _ => None,
        };
        match expect.check(self.name(key), found.as_ref()) {
            Err(e) => e,
            // It changed back meanwhile; still, the statement did not land.
            Ok(()) => StoreError::Conflict {
                path: self.name(key),
                expected: expect.to_string(),
                found: "a record written meanwhile".into(),
            },
        }
    }
}

impl StateStore for PgStore {
    fn layout(&self) -> &Layout {
        &self.layout
    }

    fn lock_wait(&self) -> Duration {
        self.lock_wait
    }

    fn lock_for(&self, scope: LockScope, wait: Duration) -> Result<Guard, StoreError> {
        let path = self.layout.lock_file(scope);
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        self.db.lock(&name, wait).map(Guard::new)
    }

    fn exists(&self) -> Result<bool, StoreError> {
        Ok(true)
    }

    fn name(&self, key: &RecordKey) -> PathBuf {
        PathBuf::from(self.db.path(key.kind(), key.key()))
    }

    fn contains(&self, key: &RecordKey) -> Result<bool, StoreError> {
        Ok(self.db.read(key.kind(), key.key())?.is_some())
    }

    fn read_raw(&self, key: &RecordKey) -> Result<Option<Raw>, StoreError> {
        Ok(self.db.read(key.kind(), key.key())?.map(|r| Raw {
            bytes: r.doc.into_bytes(),
            revision: Revision::row(r.rev),
            writer: Some(r.host),
        }))
    }

    fn write_raw(
        &self,
        key: &RecordKey,
        bytes: &[u8],
        expect: &Expect,
    ) -> Result<Revision, StoreError> {
        let doc = self.doc(key, bytes)?;
        let read = self.expected_row(key, expect)?;
        let epoch = super::transfer::epoch_of(doc);
        match self.db.write_if(key.kind(), key.key(), doc, epoch, read)? {
            Some(rev) => Ok(Revision::row(rev)),
            None => Err(self.conflict(key, expect)),
        }
    }

    /// One transaction: the conditional write and its events land together or not at all.
    fn write_raw_journaled(
        &self,
        key: &RecordKey,
        bytes: &[u8],
        expect: &Expect,
        target: JournalTarget,
        events: &[serde_json::Value],
    ) -> Result<(Revision, Result<(), StoreError>), StoreError> {
        if events.is_empty() {
            return Ok((self.write_raw(key, bytes, expect)?, Ok(())));
        }
        let doc = self.doc(key, bytes)?;
        let lines = events
            .iter()
            .map(serde_json::to_string)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| StoreError::Corrupt {
                path: PathBuf::from(self.db.shown()),
                detail: format!("cannot serialize an event: {e}"),
            })?;
        let target = journal_name(target)?;
        let read = self.expected_row(key, expect)?;
        let epoch = super::transfer::epoch_of(doc);
        match self.db.write_journaled_if(
            key.kind(),
            key.key(),
            doc,
            epoch,
            read,
            &target,
            &lines,
        )? {
            Some(rev) => Ok((Revision::row(rev), Ok(()))),
            None => Err(self.conflict(key, expect)),
        }
    }

    fn archive(
        &self,
        key: &RecordKey,
        expect: &Expect,
        now: Timestamp,
    ) -> Result<PathBuf, StoreError> {
        let Some(read) = self.expected_row(key, expect)? else {
            return Err(self.conflict(key, expect));
        };
        // Named as the file store names it, so that an export gives the same files.
        let (name, other) = archive_names(key, now);
        match self
            .db
            .archive_if(key.kind(), key.key(), read, &name, &other)?
        {
            Some(to) => Ok(PathBuf::from(to)),
            None => Err(self.conflict(key, expect)),
        }
    }

    fn archive_journaled(
        &self,
        key: &RecordKey,
        expect: &Expect,
        now: Timestamp,
        target: JournalTarget,
        events: &dyn Fn(&std::path::Path) -> Vec<serde_json::Value>,
    ) -> Result<(PathBuf, Result<(), StoreError>), StoreError> {
        let Some(read) = self.expected_row(key, expect)? else {
            return Err(self.conflict(key, expect));
        };
        let (name, other) = archive_names(key, now);
        let target = journal_name(target)?;
        // An event is a JSON object, which always serializes.
        let lines = |to: &str| {
            events(std::path::Path::new(to))
                .iter()
                .filter_map(|e| serde_json::to_string(e).ok())
                .collect()
        };
        match self.db.archive_journaled_if(
            key.kind(),
            key.key(),
            read,
            (&name, &other),
            &target,
            &lines,
        )? {
            Some(to) => Ok((PathBuf::from(to), Ok(()))),
            None => Err(self.conflict(key, expect)),
        }
    }

    fn remove(&self, key: &RecordKey, expect: &Expect) -> Result<(), StoreError> {
        match self.expected_row(key, expect)? {
            None if !self.contains(key)? => Ok(()),
            None => Err(self.conflict(key, expect)),
            Some(read) if self.db.remove_if(key.kind(), key.key(), read)? => Ok(()),
            Some(_) => Err(self.conflict(key, expect)),
        }
    }

    fn list_raw(
        &self,
        kind: RecordKind,
        needle: Option<&[u8]>,
    ) -> Result<Vec<RawListed>, StoreError> {
        let mut out = Vec::new();
        for (key, record) in self.db.list(kind)? {
            if let Some(needle) = needle
                && !record
                    .doc
                    .as_bytes()
                    .windows(needle.len().max(1))
                    .any(|w| w == needle)
            {
                continue;
            }
            let key = match kind {
                RecordKind::Loop => RecordKey::Loop(key),
                RecordKind::Run => match baton_core::run_id::RunId::parse(&key) {
                    Ok(id) => RecordKey::Run(id),
                    // Only baton writes the server's rows, and only parsed ids.
                    Err(_) => continue,
                },
                RecordKind::Batch => RecordKey::Batch,
                RecordKind::Pause => RecordKey::Pause,
                RecordKind::LegacyLoop => RecordKey::LegacyLoop,
            };
            out.push((
                key,
                Ok(Raw {
                    bytes: record.doc.into_bytes(),
                    revision: Revision::row(record.rev),
                    writer: Some(record.host),
                }),
            ));
        }
        Ok(out)
    }

    fn append_journal(
        &self,
        target: JournalTarget,
        event: &serde_json::Value,
    ) -> Result<(), StoreError> {
        let line = serde_json::to_string(event).map_err(|e| StoreError::Corrupt {
            path: PathBuf::from(self.db.shown()),
            detail: format!("cannot serialize an event: {e}"),
        })?;
        self.db.append_journal(&journal_name(target)?, &line)
    }

    fn journal_in_step(&self) -> bool {
        true
    }

    fn read_journal(&self, target: JournalTarget) -> Result<Journal, StoreError> {
        let lines = self.db.read_journal(&journal_name(target)?)?;
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        let (events, skipped) = crate::journal::parse(text.as_bytes());
        Ok(Journal {
            events,
            skipped,
            truncated: false,
        })
    }

    fn list_journals(&self) -> Result<Journals, StoreError> {
        Ok(Journals::from_names(self.db.journal_names()?))
    }

    fn journal_shown(&self, target: JournalTarget) -> Result<PathBuf, StoreError> {
        Ok(PathBuf::from(format!(
            "{}#journal/{}",
            self.db.shown(),
            journal_name(target)?
        )))
    }

    fn shared_clock(&self) -> Result<Option<Timestamp>, StoreError> {
        self.db.now().map(Some)
    }

    fn breakers(&self) -> Result<Vec<baton_core::breaker::Breaker>, StoreError> {
        self.db.breakers()
    }

    fn change_breakers(
        &self,
        change: &mut dyn FnMut(&mut Vec<baton_core::breaker::Breaker>) -> bool,
    ) -> Result<(), StoreError> {
        self.db.change_breakers(change)
    }

    fn breakers_shown(&self) -> PathBuf {
        PathBuf::from(self.db.breakers_shown())
    }
}
