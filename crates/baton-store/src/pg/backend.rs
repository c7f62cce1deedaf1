//! The connection `PgStore` works through: one project on one server
//! (`BATON_STORE=postgres://…`), its locks, conditional writes and clock.
//!
//! - A lock is a session advisory lock on the server (`pg_advisory_lock`), one per state file
//!   scope and project: it serializes writers on every machine, and it dies with the
//!   connection, as an `flock` dies with its process.
//! - Each write names the revision its writer read and lands only if the record is still at
//!   it (fencing in the database: a holder whose lock was lost is refused).
//! - Every time baton decides by is the server's clock.

use std::rc::Rc;
use std::time::{Duration, Instant};

use jiff::Timestamp;

use super::config::{self, Settings};
use super::records::{Record, Records};
use crate::StoreError;
use crate::store::RecordKind;

pub struct Db {
    records: Records,
    settings: Settings,
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
    /// one this baton writes; locks wait the default `lock::DEFAULT_LOCK_WAIT`.
    pub fn open(
        url: &str,
        env: &dyn config::Surroundings,
        project: &str,
        host: &str,
    ) -> Result<Db, StoreError> {
        Self::open_within(url, env, project, host, crate::lock::DEFAULT_LOCK_WAIT)
    }

    /// As `open`, for locks that wait at most `lock_wait`. Every round trip then has a bound
    /// whatever the network does: the server gives up on a statement after `lock_wait` and a
    /// second (`statement_timeout`, which bounds a row lock's wait too), on a transaction left idle after
    /// `lock_wait` and `deadline::GRACE`, and this machine on an answer after that too (a
    /// lock's wait after its own wait and the grace): then the call fails with
    /// `StoreError::Unanswered`, naming the server.
    pub fn open_within(
        url: &str,
        env: &dyn config::Surroundings,
        project: &str,
        host: &str,
        lock_wait: Duration,
    ) -> Result<Db, StoreError> {
        let settings = config::resolve(url, env).map_err(|message| StoreError::Db {
            action: "use",
            server: config::redact(url),
            message,
        })?;
        let bound = lock_wait + super::deadline::GRACE;
        let ms = |d: Duration| d.as_millis().clamp(1, i32::MAX as u128).to_string();
        let statement_timeout = ms(lock_wait + Duration::from_secs(1));
        let mut session: Vec<(&str, String)> = config::SERVER_SOCKET
            .iter()
            .map(|(n, v)| (*n, v.to_string()))
            .collect();
        session.extend([
            ("statement_timeout", statement_timeout.clone()),
            ("idle_in_transaction_session_timeout", ms(bound)),
        ]);
        let (names, values) = super::setting_params(&session);
        let (mut client, dog) = super::connect_watched(&settings, bound)?;
        // One round trip: the server's clock and the schema's version, and the session's
        // settings.
        let (answer, fired) = dog.within(bound, || {
            client.query(
                &format!(
                    "SELECT now(), (SELECT coalesce(max(version), 0) FROM baton_schema_history), {}",
                    super::APPLY_SETTINGS
                ),
                &[&names, &values],
            )
        });
        if fired {
            return Err(StoreError::Unanswered {
                action: "use",
                server: settings.shown.clone(),
                waited: bound,
            });
        }
        let (now, at) = match answer {
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
            records: Records::new(client, settings.clone(), project, host).watched(
                dog,
                bound,
                statement_timeout,
            ),
            settings,
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

    /// The accounts' breakers (every project's on this server).
    pub fn breakers(&self) -> Result<Vec<baton_core::breaker::Breaker>, StoreError> {
        self.records.breakers()
    }

    /// Changes the breakers in one transaction holding their row.
    pub fn change_breakers(
        &self,
        change: &mut dyn FnMut(&mut Vec<baton_core::breaker::Breaker>) -> bool,
    ) -> Result<(), StoreError> {
        self.records.change_breakers(change)
    }

    pub fn breakers_shown(&self) -> String {
        self.records.breakers_shown()
    }

    /// A record: its document, revision and the host that wrote it last.
    pub fn read(&self, kind: RecordKind, key: &str) -> Result<Option<Record>, StoreError> {
        self.records.read(kind, key)
    }

    /// Every record of a kind, in key order.
    pub fn list(&self, kind: RecordKind) -> Result<Vec<(String, Record)>, StoreError> {
        self.records.list(kind)
    }

    /// Writes a document holding owner epoch `epoch` if the record is at revision `read`
    /// (`None`: only if there is none yet); the new revision, or `None` when it was not.
    pub fn write_if(
        &self,
        kind: RecordKind,
        key: &str,
        doc: &str,
        epoch: i64,
        read: Option<i64>,
    ) -> Result<Option<i64>, StoreError> {
        self.records.write_if(kind, key, doc, epoch, read)
    }

    /// `write_if` and the appends of `events` to the journal `target`, in one transaction.
    #[allow(clippy::too_many_arguments)]
    pub fn write_journaled_if(
        &self,
        kind: RecordKind,
        key: &str,
        doc: &str,
        epoch: i64,
        read: Option<i64>,
        target: &str,
        events: &[String],
    ) -> Result<Option<i64>, StoreError> {
        self.records
            .write_journaled_if(kind, key, doc, epoch, read, target, events)
    }

    /// Moves the record at revision `read` to the archive under the file name `name` (`other`
    /// when the archive already holds that name); where it went, or `None` when the record was
    /// not at that revision (nothing moved).
    pub fn archive_if(
        &self,
        kind: RecordKind,
        key: &str,
        read: i64,
        name: &str,
        other: &str,
    ) -> Result<Option<String>, StoreError> {
        Ok(self
            .records
            .archive_if(kind, key, read, name, other)?
            .map(|name| format!("{}#archive/{name}", self.settings.shown)))
    }

    /// `archive_if` with the journal events `events` makes of where the record went, in one
    /// transaction.
    #[allow(clippy::too_many_arguments)]
    pub fn archive_journaled_if(
        &self,
        kind: RecordKind,
        key: &str,
        read: i64,
        names: (&str, &str),
        target: &str,
        events: &dyn Fn(&str) -> Vec<String>,
    ) -> Result<Option<String>, StoreError> {
        let shown = |name: &str| format!("{}#archive/{name}", self.settings.shown);
        Ok(self
            .records
            .archive_journaled_if(kind, key, read, names, target, &|name| events(&shown(name)))?
            .map(|name| shown(&name)))
    }

    /// Deletes the record at revision `read`; whether it was.
    pub fn remove_if(&self, kind: RecordKind, key: &str, read: i64) -> Result<bool, StoreError> {
        self.records.remove_if(kind, key, read)
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
    pub fn path(&self, kind: RecordKind, key: &str) -> String {
        format!("{}#{}/{key}", self.settings.shown, kind.as_str())
    }
}
