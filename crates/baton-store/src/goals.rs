//! The goal tables agent clients keep in SQLite files of their own (Codex's `goals_1.sqlite`),
//! read only: opened read-only, never created, never locked for long.

use std::path::Path;

use crate::error::StoreError;

/// A session's goal as its client's table keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoalRow {
    pub id: String,
    pub objective: String,
    pub status: String,
}

/// The row of `thread_goals` for `thread` in the SQLite file `db` (`thread_id`, `goal_id`,
/// `objective`, `status`); `None` when the file or the row is not there.
pub fn thread_goal(db: &Path, thread: &str) -> Result<Option<GoalRow>, StoreError> {
    use rusqlite::{Connection, OpenFlags, OptionalExtension};
    let meta = match std::fs::metadata(db) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(StoreError::io("stat", db)(e)),
    };
    if !meta.is_file() {
        return Err(StoreError::NotRegular { path: db.into() });
    }
    let failed = |e: rusqlite::Error| StoreError::ClientDb {
        path: db.into(),
        detail: e.to_string(),
    };
    let conn = Connection::open_with_flags(
        db,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(failed)?;
    // The client may be writing it: wait briefly for its lock, never long.
    conn.busy_timeout(std::time::Duration::from_millis(200))
        .map_err(failed)?;
    conn.query_row(
        "SELECT goal_id, objective, status FROM thread_goals WHERE thread_id = ?1",
        [thread],
        |row| {
            Ok(GoalRow {
                id: row.get(0)?,
                objective: row.get(1)?,
                status: row.get(2)?,
            })
        },
    )
    .optional()
    .map_err(failed)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A table in the shape Codex 0.171.0 creates (migration `1 thread goals`).
    fn codex_db(path: &Path) -> rusqlite::Connection {
        let conn = rusqlite::Connection::open(path).unwrap();
        conn.execute_batch(
            "PRAGMA journal_mode=WAL;
             CREATE TABLE thread_goals (
                thread_id TEXT PRIMARY KEY NOT NULL,
                goal_id TEXT NOT NULL,
                objective TEXT NOT NULL,
                status TEXT NOT NULL CHECK(status IN ('active','paused','blocked','usage_limited','budget_limited','complete')),
                token_budget INTEGER,
                tokens_used INTEGER NOT NULL DEFAULT 0,
                time_used_seconds INTEGER NOT NULL DEFAULT 0,
                created_at_ms INTEGER NOT NULL,
                updated_at_ms INTEGER NOT NULL
             );
             INSERT INTO thread_goals (thread_id, goal_id, objective, status, created_at_ms, updated_at_ms)
             VALUES ('01a2478f-db9d-75e0-822e-4f446cf1b224', '49c27f40', 'make hello.txt contain hi', 'complete', 1796496940121, 1796496940356);",
        )
        .unwrap();
        conn
    }

    #[test]
    fn a_threads_goal_is_read_and_nothing_else_is_made() {
        let tmp = tempfile::tempdir().unwrap();
        let db = tmp.path().join("goals_1.sqlite");
        assert_eq!(thread_goal(&db, "x").unwrap(), None);
        assert!(!db.exists(), "reading created the file");
        // Read while the client holds it open, in WAL mode.
        let _client = codex_db(&db);
        assert_eq!(
            thread_goal(&db, "01a2478f-db9d-75e0-822e-4f446cf1b224").unwrap(),
            Some(GoalRow {
                id: "49c27f40".into(),
                objective: "make hello.txt contain hi".into(),
                status: "complete".into(),
            })
        );
        assert_eq!(thread_goal(&db, "other").unwrap(), None);
        // Not a goal table: an error naming the file.
        let other = tmp.path().join("other.sqlite");
        std::fs::write(
            &other,
            "not sqlite at all, but long enough to be read as a header..",
        )
        .unwrap();
        let err = thread_goal(&other, "x").unwrap_err().to_string();
        assert!(err.contains("other.sqlite"), "{err}");
        assert!(thread_goal(tmp.path(), "x").is_err());
    }
}
