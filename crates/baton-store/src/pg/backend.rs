//! The state store's PostgreSQL backend: what `FsStore` does with a state file, done with a
//! record on the server instead (`BATON_STORE=postgres://…`).
//!
//! - A lock is a session advisory lock on the server (`pg_advisory_lock`), one per state file
//!   scope and project: it serializes writers on every machine, and it dies with the
//!   connection, as an `flock` dies with its process.
//! - Each read remembers the record's revision; the write after it lands only if the revision
//!   is still that one (fencing in the database: a holder whose lock was lost is refused).
//! - Every time baton decides by is the server's clock.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::time::{Duration, Instant};

use jiff::Timestamp;

use super::config::{self, Settings};
use super::records::{Kind, Records};
use crate::StoreError;

pub struct Db {
    records: Records,
    settings: Settings,
    /// The revision each record had when this process last read it.
    revs: RefCell<HashMap<(Kind, String), Option<i64>>>,
    /// The server's clock when the connection was opened, for the first `now()`.
    opened_at: std::cell::Cell<Option<Timestamp>>,
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Db({}, project {})",
            self.settings.shown, self.records.project
        )
    }
}

/// Held until dropped: the advisory lock of one scope.
#[derive(Debug)]
pub struct DbLock {
    db: Rc<Db>,
    key: i64,
}

impl Drop for DbLock {
    fn drop(&mut self) {
        let _ = self.db.records.unlock(self.key);
    }
}

impl Db {
    /// Connects to the server `url` names, for `project`, and checks that its schema is the
    /// one this baton writes.
    pub fn open(
        url: &str,
        env: &dyn config::Surroundings,
        project: &str,
        host: &str,
    ) -> Result<Db, StoreError> {
        let settings = config::resolve(url, env).map_err(|message| StoreError::Db {
            action: "use",
            server: config::redact(url),
            message,
        })?;
        let mut client = super::connect(&settings)?;
        // One round trip: the server's clock and the schema's version.
        let (now, at) = match client.query_typed(
            "SELECT now(), coalesce(max(version), 0) FROM baton_schema_history",
            &[],
        ) {
            Ok(rows) => (
                Some(rows[0].get::<_, std::time::SystemTime>(0)),
                rows[0].get::<_, i32>(1),
            ),
            Err(e) if e.code() == Some(&postgres::error::SqlState::UNDEFINED_TABLE) => (None, 0),
            Err(e) => return Err(super::db_error(&settings, "use")(e)),
        };
        let latest = super::LATEST;
        if at != latest {
            return Err(StoreError::Db {
                action: "use",
                server: settings.shown.clone(),
                message: format!(
                    "its schema is at version {at}, and this baton writes version {latest}{}",
                    if at < latest {
                        ": run `baton store migrate`"
                    } else {
                        ": upgrade baton"
                    }
                ),
            });
        }
        Ok(Db {
            records: Records::new(client, settings.clone(), project, host),
            settings,
            revs: RefCell::new(HashMap::new()),
            opened_at: std::cell::Cell::new(now.and_then(|t| Timestamp::try_from(t).ok())),
        })
    }

    /// The server, named without its password.
    pub fn shown(&self) -> &str {
        &self.settings.shown
    }

    pub fn project(&self) -> &str {
        &self.records.project
    }

    /// The server's clock (the first call: as the connection was opened, with no round trip).
    pub fn now(&self) -> Result<Timestamp, StoreError> {
        match self.opened_at.take() {
            Some(t) => Ok(t),
            None => self.records.now(),
        }
    }

    /// Takes the lock of `scope` (a state file's name), waiting at most `wait`.
    pub fn lock(self: &Rc<Self>, scope: &str, wait: Duration) -> Result<DbLock, StoreError> {
        let key = self.records.lock_key(scope);
        let start = Instant::now();
        // Free, it takes one round trip; held, the server queues this caller and hands it the
        // lock the moment it is released, or gives up after `wait`.
        if self.records.try_lock(key)? || self.records.lock_within(key, wait)? {
            return Ok(DbLock {
                db: self.clone(),
                key,
            });
        }
        Err(StoreError::LockBusy {
            path: format!("{}#lock/{scope}", self.settings.shown).into(),
            holder: None,
            waited: start.elapsed(),
        })
    }

    /// A record's document, remembering its revision for the write after it.
    pub fn read(&self, kind: Kind, key: &str) -> Result<Option<(String, String)>, StoreError> {
        let record = self.records.read(kind, key)?;
        self.revs
            .borrow_mut()
            .insert((kind, key.to_string()), record.as_ref().map(|r| r.rev));
        Ok(record.map(|r| (r.doc, r.host)))
    }

    /// Every record of a kind: `(key, document, the host that wrote it last)`.
    pub fn list(&self, kind: Kind) -> Result<Vec<(String, String, String)>, StoreError> {
        Ok(self
            .records
            .list(kind)?
            .into_iter()
            .map(|(k, r)| {
                self.revs
                    .borrow_mut()
                    .insert((kind, k.clone()), Some(r.rev));
                (k, r.doc, r.host)
            })
            .collect())
    }

    /// Writes a document holding owner epoch `epoch`: on the revision this process read, or
    /// created if it read none; unread, it is written as it is (the caller holds the lock).
    pub fn write(&self, kind: Kind, key: &str, doc: &str, epoch: i64) -> Result<(), StoreError> {
        let read = self.revs.borrow().get(&(kind, key.to_string())).copied();
        let landed = match read {
            Some(rev) => self.records.write_if(kind, key, doc, epoch, rev)?,
            None => Some(self.records.upsert(kind, key, doc, epoch)?),
        };
        let Some(rev) = landed else {
            return Err(StoreError::ChangedUnderfoot {
                path: self.path(kind, key).into(),
            });
        };
        // The next write in this process follows this one.
        self.revs
            .borrow_mut()
            .insert((kind, key.to_string()), Some(rev));
        Ok(())
    }

    /// Moves a record to the archive under the file name `name` (`other` when the archive
    /// already holds that name); returns where it went, for the message.
    pub fn archive(
        &self,
        kind: Kind,
        key: &str,
        name: &str,
        other: &str,
    ) -> Result<String, StoreError> {
        let rev = match self
            .revs
            .borrow()
            .get(&(kind, key.to_string()))
            .copied()
            .flatten()
        {
            Some(rev) => rev,
            None => self
                .records
                .read(kind, key)?
                .map(|r| r.rev)
                .ok_or_else(|| {
                    StoreError::io("archive", self.path(kind, key))(
                        std::io::ErrorKind::NotFound.into(),
                    )
                })?,
        };
        let Some(name) = self.records.archive_if(kind, key, rev, name, other)? else {
            return Err(StoreError::ChangedUnderfoot {
                path: self.path(kind, key).into(),
            });
        };
        self.revs.borrow_mut().insert((kind, key.to_string()), None);
        Ok(format!("{}#archive/{name}", self.settings.shown))
    }

    pub fn remove(&self, kind: Kind, key: &str) -> Result<(), StoreError> {
        self.records.remove(kind, key)?;
        self.revs.borrow_mut().insert((kind, key.to_string()), None);
        Ok(())
    }

    pub fn append_journal(&self, target: &str, event: &str) -> Result<(), StoreError> {
        self.records.append_journal(target, event)
    }

    pub fn read_journal(&self, target: &str) -> Result<Vec<String>, StoreError> {
        self.records.read_journal(target)
    }

    pub fn journal_names(&self) -> Result<Vec<String>, StoreError> {
        self.records.journal_names()
    }

    /// How a record is named in messages: the server and the record, never a password.
    pub fn path(&self, kind: Kind, key: &str) -> String {
        format!("{}#{}/{key}", self.settings.shown, kind.as_str())
    }
}
