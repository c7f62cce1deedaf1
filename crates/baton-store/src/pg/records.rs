//! The PostgreSQL store's records: read a piece of state with its revision, write it only if
//! the revision is still the one read, append to a journal; every time is the server's.
//!
//! Each write is one statement whose condition the server checks (`WHERE rev = $read`), so two
//! machines racing on one record get exactly one winner, whatever their clocks say. A write
//! that records journal events sends it and the events in one transaction
//! (`write_journaled_if`): the record and its history land together or not at all.

use std::cell::RefCell;
use std::time::Duration;

use jiff::Timestamp;
use postgres::Client;
use postgres::types::{ToSql, Type};

use super::config::Settings;
use crate::StoreError;

/// What a piece of state is: the kinds of `baton_state`.
pub use crate::store::RecordKind as Kind;

/// A statement's parameter: every one baton sends is text or a bigint.
enum Param<'a> {
    Text(&'a str),
    Int(i64),
}

/// Parameters typed here (text or bigint) rather than asked of the server first.
fn typed<'a>(params: &'a [Param<'a>]) -> Vec<(&'a (dyn ToSql + Sync), Type)> {
    params
        .iter()
        .map(|p| match p {
            Param::Text(t) => (t as &(dyn ToSql + Sync), Type::TEXT),
            Param::Int(i) => (i as &(dyn ToSql + Sync), Type::INT8),
        })
        .collect()
}

/// Moves a record at a revision to the archive under a file name (or the other one, when the
/// archive holds the first): `$1` project, `$2` kind, `$3` key, `$4` revision, `$5` and `$6`
/// the names; returns the name it took, no row when the record was not at that revision.
const ARCHIVE_MOVE: &str = "WITH gone AS (DELETE FROM baton_state \
       WHERE project = $1 AND kind = $2 AND key = $3 AND rev = $4 RETURNING doc), \
     taken AS (SELECT EXISTS (SELECT 1 FROM baton_archive \
       WHERE project = $1 AND key = $5) AS yes) \
     INSERT INTO baton_archive (project, kind, key, doc) \
     SELECT $1, 'file', CASE WHEN taken.yes THEN $6 ELSE $5 END, gone.doc \
     FROM gone, taken RETURNING key";

const JOURNAL_INSERT: &str =
    "INSERT INTO baton_journal (project, target, event) VALUES ($1, $2, $3)";

/// A piece of state as the server holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// The JSON document, byte for byte as written.
    pub doc: String,
    /// How many times it was written: what a conditional write names.
    pub rev: i64,
    pub epoch: i64,
    /// The server's clock at the last write.
    pub written_at: Timestamp,
    /// The machine that wrote it last.
    pub host: String,
}

/// One project's state on one server, through one connection.
pub struct Records {
    client: RefCell<Client>,
    settings: Settings,
    /// The project's name, the same on every machine.
    pub project: String,
    /// This machine, recorded with every write.
    pub host: String,
    /// What bounds each round trip, and the bound of one that waits for no lock.
    watch: Option<(super::deadline::Watchdog, Duration)>,
    /// The session's own statement timeout, which a lock's wait restores (`None`: the
    /// server's default).
    statement_timeout: Option<String>,
}

fn ts(t: std::time::SystemTime) -> Timestamp {
    Timestamp::try_from(t).unwrap_or(Timestamp::UNIX_EPOCH)
}

impl Records {
    pub fn new(client: Client, settings: Settings, project: &str, host: &str) -> Records {
        Records {
            client: RefCell::new(client),
            settings,
            project: project.into(),
            host: host.into(),
            watch: None,
            statement_timeout: None,
        }
    }

    /// The same, each round trip given up on after `bound` (a lock's, after its wait and
    /// `deadline::GRACE`) by `dog`, which watches `client`'s socket; the session's statement
    /// timeout is `statement_timeout` (ms).
    pub fn watched(
        mut self,
        dog: super::deadline::Watchdog,
        bound: Duration,
        statement_timeout: String,
    ) -> Records {
        self.watch = Some((dog, bound));
        self.statement_timeout = Some(statement_timeout);
        self
    }

    /// `call` on the connection, within `bound` (`None`: the connection's own), as `action`.
    fn call<T>(
        &self,
        action: &'static str,
        bound: Option<Duration>,
        call: impl FnOnce(&mut Client) -> Result<T, postgres::Error>,
    ) -> Result<T, StoreError> {
        self.guarded(action, bound, |client| {
            call(client).map_err(self.err(action))
        })
    }

    /// `call`, for a body that names its own errors.
    fn guarded<T>(
        &self,
        action: &'static str,
        bound: Option<Duration>,
        call: impl FnOnce(&mut Client) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut client = self.client.borrow_mut();
        let Some((dog, own)) = &self.watch else {
            return call(&mut client);
        };
        let waited = bound.unwrap_or(*own);
        let (out, fired) = dog.within(waited, || call(&mut client));
        if fired {
            return Err(StoreError::Unanswered {
                action,
                server: self.settings.shown.clone(),
                waited,
            });
        }
        out
    }

    fn err(&self, action: &'static str) -> impl FnOnce(postgres::Error) -> StoreError {
        super::db_error(&self.settings, action)
    }

    /// Runs `body` in one transaction, committed when it returns `Ok`, given the project and
    /// this machine's name.
    pub fn in_transaction<T>(
        &self,
        body: impl FnOnce(&mut postgres::Transaction<'_>, &str, &str) -> Result<T, postgres::Error>,
    ) -> Result<T, StoreError> {
        self.call("write to", None, |client| {
            let mut tx = client.transaction()?;
            let out = body(&mut tx, &self.project, &self.host)?;
            tx.commit()?;
            Ok(out)
        })
    }

    /// The accounts' breakers, as the server keeps them for every project.
    pub fn breakers(&self) -> Result<Vec<baton_core::breaker::Breaker>, StoreError> {
        let rows = self.run(
            "read the breakers from",
            "SELECT doc FROM baton_breakers WHERE id = 1",
            &[],
        )?;
        Ok(self.book_of(rows.first()))
    }

    /// The breakers a row holds: none when there is no row, or when its document is not
    /// breakers (`crate::breakers`: the next change writes over it).
    fn book_of(&self, row: Option<&postgres::Row>) -> Vec<baton_core::breaker::Breaker> {
        let shown = self.breakers_shown();
        row.and_then(|row| {
            crate::breakers::parse(
                row.get::<_, &str>(0).as_bytes(),
                std::path::Path::new(&shown),
            )
            .ok()
        })
        .unwrap_or_default()
    }

    /// Runs `change` on the breakers with their row locked (`FOR UPDATE`) and writes them
    /// back in the same transaction when it says they changed.
    pub fn change_breakers(
        &self,
        change: &mut dyn FnMut(&mut Vec<baton_core::breaker::Breaker>) -> bool,
    ) -> Result<(), StoreError> {
        self.guarded("write the breakers to", None, |client| {
            let err = || super::db_error(&self.settings, "write the breakers to");
            let mut tx = client.transaction().map_err(err())?;
            // The row is made first if it is missing: a missing row cannot be locked, and two
            // changes would each read none.
            tx.execute(
                "INSERT INTO baton_breakers (id, doc) VALUES (1, '{\"breakers\":[]}') \
                 ON CONFLICT (id) DO NOTHING",
                &[],
            )
            .map_err(err())?;
            let rows = tx
                .query(
                    "SELECT doc FROM baton_breakers WHERE id = 1 FOR UPDATE",
                    &[],
                )
                .map_err(err())?;
            let mut book = self.book_of(rows.first());
            if !change(&mut book) {
                return Ok(());
            }
            let doc = crate::breakers::render(&book);
            tx.execute(
                "UPDATE baton_breakers SET doc = $1, host = $2, written_at = now() WHERE id = 1",
                &[&doc, &self.host],
            )
            .map_err(err())?;
            tx.commit().map_err(err())
        })
    }

    /// How messages name the breakers on the server.
    pub fn breakers_shown(&self) -> String {
        format!("{}#breakers", self.settings.shown)
    }

    /// The server's clock: what every age is measured by, never this machine's.
    pub fn now(&self) -> Result<Timestamp, StoreError> {
        let rows = self.run("read the clock of", "SELECT now()", &[])?;
        Ok(ts(rows[0].get(0)))
    }

    /// One statement in one round trip: parsed, bound and run together, its parameters typed
    /// here (text or bigint) rather than asked of the server first.
    fn run(
        &self,
        action: &'static str,
        sql: &str,
        params: &[Param<'_>],
    ) -> Result<Vec<postgres::Row>, StoreError> {
        let typed = typed(params);
        self.call(action, None, |client| client.query_typed(sql, &typed))
    }

    fn record(r: &postgres::Row, at: usize) -> Record {
        Record {
            doc: r.get(at),
            rev: r.get(at + 1),
            epoch: r.get(at + 2),
            written_at: ts(r.get(at + 3)),
            host: r.get(at + 4),
        }
    }

    pub fn read(&self, kind: Kind, key: &str) -> Result<Option<Record>, StoreError> {
        let rows = self.run(
            "read from",
            "SELECT doc, rev, epoch, written_at, host FROM baton_state \
             WHERE project = $1 AND kind = $2 AND key = $3",
            &[
                Param::Text(&self.project),
                Param::Text(kind.as_str()),
                Param::Text(key),
            ],
        )?;
        Ok(rows.first().map(|r| Self::record(r, 0)))
    }

    /// Every record of a kind, in key order.
    pub fn list(&self, kind: Kind) -> Result<Vec<(String, Record)>, StoreError> {
        let rows = self.run(
            "list from",
            "SELECT key, doc, rev, epoch, written_at, host FROM baton_state \
             WHERE project = $1 AND kind = $2 ORDER BY key",
            &[Param::Text(&self.project), Param::Text(kind.as_str())],
        )?;
        Ok(rows
            .iter()
            .map(|r| (r.get(0), Self::record(r, 1)))
            .collect())
    }

    /// The statement of a write and its parameters: an insert when `read` is `None` (nothing
    /// there yet), else an update fenced on revision `read`; either returns the new revision.
    fn write_statement<'a>(
        &'a self,
        kind: Kind,
        key: &'a str,
        doc: &'a str,
        epoch: i64,
        read: Option<i64>,
    ) -> (&'static str, Vec<Param<'a>>) {
        let mut params = vec![
            Param::Text(&self.project),
            Param::Text(kind.as_str()),
            Param::Text(key),
            Param::Text(doc),
            Param::Int(epoch),
            Param::Text(&self.host),
        ];
        let sql = match read {
            None => {
                "INSERT INTO baton_state (project, kind, key, doc, epoch, host) \
                 VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING RETURNING rev"
            }
            Some(rev) => {
                params.push(Param::Int(rev));
                "UPDATE baton_state SET doc = $4, epoch = $5, host = $6, rev = rev + 1, \
                 written_at = now() \
                 WHERE project = $1 AND kind = $2 AND key = $3 AND rev = $7 RETURNING rev"
            }
        };
        (sql, params)
    }

    fn journal_params<'a>(&'a self, target: &'a str, event: &'a str) -> [Param<'a>; 3] {
        [
            Param::Text(&self.project),
            Param::Text(target),
            Param::Text(event),
        ]
    }

    /// Writes `doc` (holding owner epoch `epoch`) if the record is still at revision `read`
    /// (`None`: only if there is no record yet), and gives its new revision. `Ok(None)`:
    /// someone wrote first, and nothing was written. The server stamps the time.
    pub fn write_if(
        &self,
        kind: Kind,
        key: &str,
        doc: &str,
        epoch: i64,
        read: Option<i64>,
    ) -> Result<Option<i64>, StoreError> {
        let (sql, params) = self.write_statement(kind, key, doc, epoch, read);
        self.lost_before(kind, key, crate::faults::point("pg.write.before"))?;
        let rows = self.run("write to", sql, &params)?;
        // One statement commits as it runs: a connection lost now lost only the answer.
        self.lost_after(kind, key, crate::faults::point("pg.write.after-commit"))?;
        Ok(rows.first().map(|r| r.get(0)))
    }

    /// `write_if` and the appends of `events` to the journal `target` in one transaction: the
    /// record and its history land together, or neither does. `Ok(None)`: the record was not
    /// at revision `read`, and nothing was written or appended.
    #[allow(clippy::too_many_arguments)]
    pub fn write_journaled_if(
        &self,
        kind: Kind,
        key: &str,
        doc: &str,
        epoch: i64,
        read: Option<i64>,
        target: &str,
        events: &[String],
    ) -> Result<Option<i64>, StoreError> {
        self.guarded("write to", None, |client| {
            let err = || super::db_error(&self.settings, "write to");
            self.lost_before(kind, key, crate::faults::point("pg.write.before"))?;
            let mut tx = client.transaction().map_err(err())?;
            let (sql, params) = self.write_statement(kind, key, doc, epoch, read);
            let rows = tx.query_typed(sql, &typed(&params)).map_err(err())?;
            let Some(rev) = rows.first().map(|r| r.get::<_, i64>(0)) else {
                // Refused by the fence: the transaction is rolled back as it is dropped.
                return Ok(None);
            };
            for event in events {
                let params = self.journal_params(target, event);
                tx.query_typed(JOURNAL_INSERT, &typed(&params))
                    .map_err(err())?;
            }
            // A connection lost here: the server rolls the transaction back.
            self.lost_before(kind, key, crate::faults::point("pg.write.before-commit"))?;
            tx.commit().map_err(|e| self.commit_failed(kind, key, e))?;
            self.lost_after(kind, key, crate::faults::point("pg.write.after-commit"))?;
            Ok(Some(rev))
        })
    }

    /// A connection lost before anything was committed: nothing was written.
    fn lost_before(
        &self,
        kind: Kind,
        key: &str,
        lost: std::io::Result<()>,
    ) -> Result<(), StoreError> {
        lost.map_err(|e| StoreError::WriteLost {
            path: self.path(kind, key).into(),
            server: self.settings.shown.clone(),
            message: e.to_string(),
        })
    }

    /// A connection lost after the commit was sent: the write landed or it did not.
    fn lost_after(
        &self,
        kind: Kind,
        key: &str,
        lost: std::io::Result<()>,
    ) -> Result<(), StoreError> {
        lost.map_err(|e| self.unknown(kind, key, e.to_string()))
    }

    /// A commit that failed: refused by the server (nothing landed), or with no answer (it
    /// may have).
    fn commit_failed(&self, kind: Kind, key: &str, e: postgres::Error) -> StoreError {
        if e.as_db_error().is_some() {
            return super::db_error(&self.settings, "write to")(e);
        }
        self.unknown(kind, key, super::with_causes(&e))
    }

    fn unknown(&self, kind: Kind, key: &str, message: String) -> StoreError {
        let check = match kind {
            Kind::Loop if !key.is_empty() => format!("baton loop show {key}"),
            Kind::Run => format!("baton run show {key}"),
            Kind::Batch => "baton batch show".to_string(),
            _ => "baton status".to_string(),
        };
        StoreError::CommitUnknown {
            path: self.path(kind, key).into(),
            server: self.settings.shown.clone(),
            message,
            check,
        }
    }

    /// How a record is named in messages: the server and the record.
    pub fn path(&self, kind: Kind, key: &str) -> String {
        format!("{}#{}/{key}", self.settings.shown, kind.as_str())
    }

    /// Deletes a record (a finished run, a legacy file adopted, pause marks lifted) if it is
    /// still at revision `read`; whether it was.
    pub fn remove_if(&self, kind: Kind, key: &str, read: i64) -> Result<bool, StoreError> {
        let rows = self.run(
            "delete from",
            "DELETE FROM baton_state WHERE project = $1 AND kind = $2 AND key = $3 AND rev = $4 \
             RETURNING rev",
            &[
                Param::Text(&self.project),
                Param::Text(kind.as_str()),
                Param::Text(key),
                Param::Int(read),
            ],
        )?;
        Ok(!rows.is_empty())
    }

    /// The advisory lock key of a scope in this project: the first 8 bytes of a SHA-256 of
    /// both, the same on every machine.
    pub fn lock_key(&self, scope: &str) -> i64 {
        use sha2::{Digest, Sha256};
        let digest = Sha256::digest(format!("baton/{}/{scope}", self.project).as_bytes());
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(&digest[..8]);
        i64::from_be_bytes(bytes)
    }

    /// Takes the advisory lock `key` if nobody holds it.
    pub fn try_lock(&self, key: i64) -> Result<bool, StoreError> {
        let rows = self.run(
            "lock on",
            "SELECT pg_try_advisory_lock($1)",
            &[Param::Int(key)],
        )?;
        Ok(rows[0].get(0))
    }

    /// Waits for the advisory lock `key` at most `wait`: `Ok(false)` if it is still held then.
    pub fn lock_within(&self, key: i64, wait: Duration) -> Result<bool, StoreError> {
        let ms = wait.as_millis().clamp(1, i32::MAX as u128).to_string();
        // The statement may take the whole wait: the session's statement timeout is raised
        // past it for this one statement.
        let statement_ms = (wait + super::deadline::GRACE / 2)
            .as_millis()
            .clamp(1, i32::MAX as u128)
            .to_string();
        self.run(
            "lock on",
            "SELECT set_config('lock_timeout', $1, false), set_config('statement_timeout', $2, false)",
            &[Param::Text(&ms), Param::Text(&statement_ms)],
        )?;
        let taken = self.call(
            "lock on",
            Some(wait + super::deadline::GRACE),
            |client| match client.query_typed(
                "SELECT pg_advisory_lock($1)",
                &[(&key as &(dyn ToSql + Sync), Type::INT8)],
            ) {
                Ok(_) => Ok(true),
                Err(e) if e.code() == Some(&postgres::error::SqlState::LOCK_NOT_AVAILABLE) => {
                    Ok(false)
                }
                Err(e) => Err(e),
            },
        );
        // Back to the session's own timeouts.
        let reset = match &self.statement_timeout {
            Some(own) => self.run(
                "lock on",
                "SELECT set_config('lock_timeout', \
                   (SELECT reset_val FROM pg_settings WHERE name = 'lock_timeout'), false), \
                 set_config('statement_timeout', $1, false)",
                &[Param::Text(own)],
            ),
            None => self.run(
                "lock on",
                "SELECT set_config(name, reset_val, false) FROM pg_settings \
                 WHERE name IN ('lock_timeout', 'statement_timeout')",
                &[],
            ),
        };
        let taken = taken?;
        reset.map(|_| taken)
    }

    pub fn unlock(&self, key: i64) -> Result<(), StoreError> {
        self.run(
            "unlock on",
            "SELECT pg_advisory_unlock($1)",
            &[Param::Int(key)],
        )?;
        Ok(())
    }

    /// Moves the record at revision `read` to the archive as the file `name` (`other` when
    /// the archive holds that name already), in one statement; the name it took, or `None`
    /// if the record was written meanwhile (nothing moved).
    pub fn archive_if(
        &self,
        kind: Kind,
        key: &str,
        read: i64,
        name: &str,
        other: &str,
    ) -> Result<Option<String>, StoreError> {
        let rows = self.run(
            "archive in",
            ARCHIVE_MOVE,
            &self.archive_params(kind, key, read, name, other),
        )?;
        Ok(rows.first().map(|r| r.get(0)))
    }

    /// `archive_if` and the journal events `events` makes of the name the record took, in one
    /// transaction: both land, or neither.
    #[allow(clippy::too_many_arguments)]
    pub fn archive_journaled_if(
        &self,
        kind: Kind,
        key: &str,
        read: i64,
        (name, other): (&str, &str),
        target: &str,
        events: &dyn Fn(&str) -> Vec<String>,
    ) -> Result<Option<String>, StoreError> {
        self.guarded("archive in", None, |client| {
            let err = || super::db_error(&self.settings, "archive in");
            self.lost_before(kind, key, crate::faults::point("pg.write.before"))?;
            let mut tx = client.transaction().map_err(err())?;
            let params = self.archive_params(kind, key, read, name, other);
            let rows = tx
                .query_typed(ARCHIVE_MOVE, &typed(&params))
                .map_err(err())?;
            let Some(taken) = rows.first().map(|r| r.get::<_, String>(0)) else {
                // Written meanwhile: the transaction is rolled back as it is dropped.
                return Ok(None);
            };
            for event in events(&taken) {
                let params = self.journal_params(target, &event);
                tx.query_typed(JOURNAL_INSERT, &typed(&params))
                    .map_err(err())?;
            }
            self.lost_before(kind, key, crate::faults::point("pg.write.before-commit"))?;
            tx.commit().map_err(|e| self.commit_failed(kind, key, e))?;
            self.lost_after(kind, key, crate::faults::point("pg.write.after-commit"))?;
            Ok(Some(taken))
        })
    }

    fn archive_params<'a>(
        &'a self,
        kind: Kind,
        key: &'a str,
        read: i64,
        name: &'a str,
        other: &'a str,
    ) -> [Param<'a>; 6] {
        [
            Param::Text(&self.project),
            Param::Text(kind.as_str()),
            Param::Text(key),
            Param::Int(read),
            Param::Text(name),
            Param::Text(other),
        ]
    }

    /// Appends one event to a target's journal (`loop-<KEY>`, `batch`, `run-<ID>`).
    pub fn append_journal(&self, target: &str, event: &str) -> Result<(), StoreError> {
        self.run(
            "append to",
            JOURNAL_INSERT,
            &self.journal_params(target, event),
        )?;
        Ok(())
    }

    /// The names of every journal of the project (`loop-<KEY>`, `batch`, `run-<ID>`), sorted.
    pub fn journal_names(&self) -> Result<Vec<String>, StoreError> {
        let rows = self.run(
            "read from",
            "SELECT DISTINCT target FROM baton_journal WHERE project = $1 ORDER BY target",
            &[Param::Text(&self.project)],
        )?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    /// A target's journal, oldest first.
    pub fn read_journal(&self, target: &str) -> Result<Vec<String>, StoreError> {
        let rows = self.run(
            "read from",
            "SELECT event FROM baton_journal WHERE project = $1 AND target = $2 ORDER BY seq",
            &[Param::Text(&self.project), Param::Text(target)],
        )?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }
}
