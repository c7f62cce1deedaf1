//! The store conformance suite: one set of checks that every `StateStore` passes, run against
//! the file store in a temp project and against `PgStore` on a real, throwaway PostgreSQL
//! server. A check opens as many handles onto one project as it needs (two handles are two
//! processes, or two machines: their locks exclude each other and their fences see each
//! other's writes).

#[cfg(feature = "postgres")]
#[path = "support/pg_server.rs"]
#[allow(dead_code)]
mod pg_server;

use std::time::Duration;

use baton_core::model::{LoopState, LoopStatus, RunState};
use baton_core::run_id::RunId;
use baton_store::journal::JournalTarget;
use baton_store::read::Access;
use baton_store::{
    Expect, FileStore, Layout, LockScope, MemStore, RecordKey, StateStore, StoreError,
};
use jiff::Timestamp;
use serde_json::json;

/// Opens a new handle onto the one project a check works in.
type Open<'a> = &'a dyn Fn() -> Box<dyn StateStore>;

const NOW: &str = "2026-03-01T10:00:00Z";

fn now() -> Timestamp {
    NOW.parse().unwrap()
}

fn a_loop(session: &str, phase: &str) -> LoopState {
    serde_json::from_value(json!({
        "schema_version": 1,
        "session_id": session,
        "ticket_id": "PROJ-1",
        "loop_key": "PROJ-1",
        "status": "active",
        "last_updated": NOW,
        "loop_state": { "iteration": 1, "phase": phase },
    }))
    .unwrap()
}

fn a_run(id: &str) -> RunState {
    serde_json::from_value(json!({
        "schema_version": 1,
        "run_id": id,
        "status": "in_progress",
        "updated_at": NOW,
    }))
    .unwrap()
}

fn conflict(result: Result<impl std::fmt::Debug, StoreError>) -> String {
    match result {
        Err(e @ StoreError::Conflict { .. }) => e.to_string(),
        other => panic!("expected a conflict, got {other:?}"),
    }
}

/// A record read back is the record written, with the revision the write gave; a second
/// create, and a write on a revision that is not the record's, are conflicts that change
/// nothing.
fn read_write_and_expectations(open: Open) {
    let store = open();
    let _lock = store.lock(LockScope::Loop("PROJ-1")).unwrap();
    assert!(store.read_loop("PROJ-1").unwrap().is_none());
    assert!(!store.contains(&RecordKey::Loop("PROJ-1".into())).unwrap());

    let first = a_loop("A", "plan");
    let r1 = store.write_loop("PROJ-1", &first, &Expect::Absent).unwrap();
    let read = store.read_loop("PROJ-1").unwrap().unwrap();
    assert_eq!(read.state, first);
    assert_eq!(read.revision, r1);
    assert_eq!(read.access, Access::ReadWrite);
    assert_eq!(read.path, store.name(&RecordKey::Loop("PROJ-1".into())));
    assert!(store.contains(&RecordKey::Loop("PROJ-1".into())).unwrap());

    let message = conflict(store.write_loop("PROJ-1", &a_loop("B", "x"), &Expect::Absent));
    assert!(message.contains("nothing was written"), "{message}");

    let second = a_loop("A", "qa");
    let r2 = store.write_loop("PROJ-1", &second, &read.expect()).unwrap();
    assert_ne!(r1, r2);
    conflict(store.write_loop("PROJ-1", &a_loop("C", "y"), &Expect::Revision(r1)));
    let now_read = store.read_loop("PROJ-1").unwrap().unwrap();
    assert_eq!((now_read.state, now_read.revision), (second, r2));
}

/// Two handles (two processes, two machines): a write fenced on what one handle read is
/// refused once the other has written, whichever holds the lock.
fn a_fence_sees_another_writer(open: Open) {
    let (a, b) = (open(), open());
    let scope = LockScope::Loop("PROJ-1");
    let lock = a.lock(scope).unwrap();
    a.write_loop("PROJ-1", &a_loop("A", "plan"), &Expect::Absent)
        .unwrap();
    let read_by_a = a.read_loop("PROJ-1").unwrap().unwrap();
    // A loses its lock (a network cut, a lease taken over) before it writes again.
    drop(lock);
    let lock = b.lock(scope).unwrap();
    let read_by_b = b.read_loop("PROJ-1").unwrap().unwrap();
    assert_eq!(read_by_a.revision, read_by_b.revision);
    b.write_loop("PROJ-1", &a_loop("B", "impl"), &read_by_b.expect())
        .unwrap();
    drop(lock);
    let _lock = a.lock(scope).unwrap();
    conflict(a.write_loop("PROJ-1", &a_loop("A", "qa"), &read_by_a.expect()));
    assert_eq!(
        a.read_loop("PROJ-1")
            .unwrap()
            .unwrap()
            .state
            .session_id
            .as_deref(),
        Some("B")
    );
}

/// An archive moves the record away only from the revision its caller read; the record is
/// then absent, and a new one can be created.
fn archive(open: Open) {
    let store = open();
    let _lock = store.lock(LockScope::Loop("PROJ-1")).unwrap();
    let key = RecordKey::Loop("PROJ-1".into());
    let r1 = store
        .write_loop("PROJ-1", &a_loop("A", "plan"), &Expect::Absent)
        .unwrap();
    let r2 = store
        .write_loop(
            "PROJ-1",
            &a_loop("A", "done"),
            &Expect::Revision(r1.clone()),
        )
        .unwrap();
    conflict(store.archive(&key, &Expect::Revision(r1), now()));
    conflict(store.archive(&key, &Expect::Absent, now()));
    assert!(store.read_loop("PROJ-1").unwrap().is_some(), "kept");
    let to = store.archive(&key, &Expect::Revision(r2), now()).unwrap();
    let shown = to.display().to_string();
    assert!(
        shown.contains("loop-state-PROJ-1.20260301T100000Z"),
        "{shown}"
    );
    assert!(store.read_loop("PROJ-1").unwrap().is_none());
    // A second archive of the same second takes another name.
    let r3 = store
        .write_loop("PROJ-1", &a_loop("B", "plan"), &Expect::Absent)
        .unwrap();
    let again = store.archive(&key, &Expect::Revision(r3), now()).unwrap();
    assert_ne!(to, again);
}

/// A removal, like a write, names what it expects; removing what is absent is nothing.
fn remove(open: Open) {
    let store = open();
    let _lock = store.lock(LockScope::Feature).unwrap();
    store.remove(&RecordKey::Pause, &Expect::Absent).unwrap();
    let pauses =
        serde_json::from_value(json!({"marks": [{"paused_at": NOW, "session_id": "A"}]})).unwrap();
    let r1 = store.write_pause(&pauses, &Expect::Absent).unwrap();
    conflict(store.remove(&RecordKey::Pause, &Expect::Absent));
    let read = store.read_pause().unwrap().unwrap();
    assert_eq!(read.revision, r1);
    store.remove(&RecordKey::Pause, &read.expect()).unwrap();
    assert!(store.read_pause().unwrap().is_none());
    conflict(store.remove(&RecordKey::Pause, &read.expect()));
}

/// Listings are in key order, hold every record of their kind and nothing of another, and a
/// needle keeps only the records whose bytes contain it.
fn list(open: Open) {
    let store = open();
    let _lock = store.lock(LockScope::Batch).unwrap();
    for (key, session) in [
        ("PROJ-2", "S-two"),
        ("PROJ-10", "S-ten"),
        ("PROJ-1", "S-one"),
    ] {
        let mut state = a_loop(session, "plan");
        state.loop_key = Some(key.into());
        let _loop = store.lock(LockScope::Loop(key)).unwrap();
        store.write_loop(key, &state, &Expect::Absent).unwrap();
    }
    let batch = serde_json::from_value(json!({"batch_id": "b1", "status": "active"})).unwrap();
    store.write_batch(&batch, &Expect::Absent).unwrap();
    let keys: Vec<String> = store
        .scan_loops(None)
        .unwrap()
        .into_iter()
        .map(|s| s.key)
        .collect();
    assert_eq!(keys, ["PROJ-1", "PROJ-10", "PROJ-2"]);
    let ten = store.scan_loops(Some(b"S-ten")).unwrap();
    assert_eq!(ten.len(), 1);
    assert_eq!(ten[0].key, "PROJ-10");
    let loaded = ten[0].loaded.as_ref().unwrap();
    assert_eq!(loaded.state.session_id.as_deref(), Some("S-ten"));
    assert_eq!(loaded.path, store.name(&RecordKey::Loop("PROJ-10".into())));

    let (one, two) = (
        RunId::parse("bbbbbbbbbbbbbbbb").unwrap(),
        RunId::parse("aaaaaaaaaaaaaaaa").unwrap(),
    );
    let _runs = store.lock(LockScope::Runs).unwrap();
    store
        .write_run(&a_run(one.as_str()), &Expect::Absent)
        .unwrap();
    store
        .write_run(&a_run(two.as_str()), &Expect::Absent)
        .unwrap();
    let runs: Vec<String> = store
        .list_runs(None)
        .unwrap()
        .into_iter()
        .map(|(id, r)| {
            assert_eq!(r.unwrap().state.run_id, id);
            id
        })
        .collect();
    assert_eq!(runs, ["aaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbb"]);
    assert_eq!(
        store.read_run(&one).unwrap().unwrap().state.run_id,
        one.as_str()
    );
    assert!(store.list_runs(Some(b"no such bytes")).unwrap().is_empty());
}

/// A journal holds its events in the order appended, per target; an unknown target has an
/// empty one; the listing names every target that has one.
fn journal(open: Open) {
    let store = open();
    let run = RunId::parse("1111111111111111").unwrap();
    let _lock = store.lock(LockScope::Loop("PROJ-1")).unwrap();
    assert!(
        store
            .read_journal(JournalTarget::Loop("PROJ-1"))
            .unwrap()
            .events
            .is_empty()
    );
    for n in 1..=3 {
        store
            .append_journal(
                JournalTarget::Loop("PROJ-1"),
                &json!({"event": "set", "n": n}),
            )
            .unwrap();
    }
    let runs = store.lock(LockScope::Runs).unwrap();
    store
        .append_journal(JournalTarget::Run(&run), &json!({"event": "new"}))
        .unwrap();
    drop(runs);
    let journal = store.read_journal(JournalTarget::Loop("PROJ-1")).unwrap();
    let ns: Vec<i64> = journal
        .events
        .iter()
        .map(|e| e["n"].as_i64().unwrap())
        .collect();
    assert_eq!((ns, journal.skipped), (vec![1, 2, 3], 0));
    assert_eq!(
        store
            .read_journal(JournalTarget::Run(&run))
            .unwrap()
            .events
            .len(),
        1
    );
    assert!(
        store
            .read_journal(JournalTarget::Batch)
            .unwrap()
            .events
            .is_empty()
    );
    let all = store.list_journals().unwrap();
    assert_eq!(all.loops, ["PROJ-1"]);
    assert!(!all.batch);
    assert_eq!(all.runs, std::slice::from_ref(&run));
    // A key that is not a loop key never becomes a journal's name.
    assert!(
        store
            .append_journal(JournalTarget::Loop("../x"), &json!({}))
            .is_err()
    );
    assert!(
        store
            .journal_shown(JournalTarget::Run(&run))
            .unwrap()
            .display()
            .to_string()
            .contains("run-1111111111111111")
    );
}

/// A lock excludes every other handle until it is dropped, is given up after the wait bound
/// with `LockBusy`, and leaves every other scope free.
fn lock_and_lock_wait(open: Open) {
    let (a, b) = (open(), open());
    let held = a.lock(LockScope::Loop("PROJ-1")).unwrap();
    let started = std::time::Instant::now();
    match b.lock_for(LockScope::Loop("PROJ-1"), Duration::from_millis(300)) {
        Err(StoreError::LockBusy { .. }) => {}
        other => panic!("expected a busy lock, got {other:?}"),
    }
    assert!(started.elapsed() >= Duration::from_millis(250), "it waited");
    let other_scope = b.lock_for(LockScope::Loop("PROJ-2"), Duration::from_millis(300));
    assert!(other_scope.is_ok(), "{other_scope:?}");
    drop(other_scope);
    drop(held);
    b.lock_for(LockScope::Loop("PROJ-1"), Duration::from_millis(300))
        .expect("free once released");
}

/// A record written by a newer baton is read, never rewritten.
fn newer_schema_is_read_only(open: Open) {
    let store = open();
    let _lock = store.lock(LockScope::Loop("PROJ-1")).unwrap();
    let key = RecordKey::Loop("PROJ-1".into());
    let bytes = br#"{"schema_version": 99, "status": "active", "loop_key": "PROJ-1"}"#;
    store.write_raw(&key, bytes, &Expect::Absent).unwrap();
    let read = store.read_loop("PROJ-1").unwrap().unwrap();
    assert_eq!(read.access, Access::ReadOnly { found: 99 });
    assert!(matches!(
        read.writable(),
        Err(StoreError::NewerSchema { found: 99, .. })
    ));
    assert_eq!(read.state.status, LoopStatus::Active);
    assert_eq!(store.read_raw(&key).unwrap().unwrap().bytes, bytes);
}

/// A change made without the record's lock held: the strict in-memory store refuses it and
/// changes nothing (the files and a server cannot tell, and let it race).
fn a_change_without_its_lock_is_refused(store: &MemStore) {
    let key = RecordKey::Loop("PROJ-1".into());
    let unlocked = |r: Result<_, StoreError>| match r {
        Err(StoreError::Unlocked { .. }) => {}
        other => panic!("expected a refusal without the lock, got {other:?}"),
    };
    unlocked(
        store
            .write_loop("PROJ-1", &a_loop("A", "plan"), &Expect::Absent)
            .map(drop),
    );
    unlocked(store.append_journal(JournalTarget::Loop("PROJ-1"), &json!({})));
    // Another scope's lock is not this record's.
    let other = store.lock(LockScope::Loop("PROJ-2")).unwrap();
    unlocked(
        store
            .write_loop("PROJ-1", &a_loop("A", "plan"), &Expect::Absent)
            .map(drop),
    );
    drop(other);
    // Another handle's lock is not this one's.
    let b = store.handle();
    let held_by_b = b.lock(LockScope::Loop("PROJ-1")).unwrap();
    unlocked(
        store
            .write_loop("PROJ-1", &a_loop("A", "plan"), &Expect::Absent)
            .map(drop),
    );
    b.write_loop("PROJ-1", &a_loop("B", "plan"), &Expect::Absent)
        .unwrap();
    drop(held_by_b);
    let read = store.read_loop("PROJ-1").unwrap().unwrap();
    assert_eq!(read.state.session_id.as_deref(), Some("B"));
    let _lock = store.lock(LockScope::Loop("PROJ-1")).unwrap();
    unlocked(store.remove(&RecordKey::Pause, &Expect::Absent));
    unlocked(
        store
            .archive(&RecordKey::Batch, &Expect::Absent, now())
            .map(drop),
    );
    store.archive(&key, &read.expect(), now()).unwrap();
    assert!(store.read_loop("PROJ-1").unwrap().is_none());
}

/// A check: its name and its body.
type Check = (&'static str, fn(Open));

const CHECKS: &[Check] = &[
    ("read_write_and_expectations", read_write_and_expectations),
    ("a_fence_sees_another_writer", a_fence_sees_another_writer),
    ("archive", archive),
    ("remove", remove),
    ("list", list),
    ("journal", journal),
    ("lock_and_lock_wait", lock_and_lock_wait),
    ("newer_schema_is_read_only", newer_schema_is_read_only),
];

/// A project of its own for one check: a directory with a `.git` in it.
fn project() -> (tempfile::TempDir, Layout) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    let layout = Layout::discover(dir.path(), None).unwrap();
    (dir, layout)
}

fn run_all(store_name: &str, each: impl Fn(&str, fn(Open))) {
    for (name, check) in CHECKS {
        eprintln!("{store_name}: {name}");
        each(name, *check);
    }
}

#[test]
fn the_file_store_conforms() {
    run_all("file store", |_, check| {
        let (_dir, layout) = project();
        check(&|| Box::new(FileStore::new(layout.clone())));
    });
}

#[test]
fn the_strict_memory_store_conforms() {
    run_all("memory store", |_, check| {
        let (_dir, layout) = project();
        let store = MemStore::new(layout);
        check(&|| Box::new(store.handle()));
    });
    let (_dir, layout) = project();
    a_change_without_its_lock_is_refused(&MemStore::new(layout));
}

#[cfg(feature = "postgres")]
#[test]
fn the_postgres_store_conforms() {
    use baton_store::PgStore;
    use baton_store::pg::backend::Db;
    use baton_store::pg::config::{Process, resolve};
    use pg_server::PgServer;
    use std::rc::Rc;

    let Some(server) = PgServer::start("the_postgres_store_conforms") else {
        return;
    };
    let url = server.url();
    let settings = resolve(&url, &Process).unwrap();
    baton_store::pg::migrate(&mut baton_store::pg::connect(&settings).unwrap(), &settings).unwrap();
    run_all("postgres store", |name, check| {
        // Each check in a project of its own on the one server; its local files in a temp one.
        let (_dir, layout) = project();
        let project = format!("conformance/{name}");
        check(&|| {
            let db = Db::open(&url, &Process, &project, "test-host").unwrap();
            Box::new(PgStore::new(layout.clone(), Rc::new(db)))
        });
    });
}
