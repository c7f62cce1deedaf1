//! The loop and batch operations over the strict in-memory store (`MemStore`): each session
//! is a context with its own handle onto one store, so a change made without its lock, or
//! through a second store, is refused by the store itself. Each test runs in milliseconds: no
//! baton process, one `git init` for the project the operations read their branch from.

mod support;
use support::git;

use std::ffi::OsStr;
use std::path::Path;

use baton_core::journal::JournalEvent;
use baton_core::model::LoopState;
use baton_ops::env::Ctx;
use baton_ops::ticket_loop::{self, Applied, Init, Ownership, Transition};
use baton_store::journal::JournalTarget;
use baton_store::{MemStore, StateStore};
use jiff::Timestamp;

const T0: &str = "2026-03-01T10:00:00Z";

fn at(minutes: i64) -> Timestamp {
    T0.parse::<Timestamp>().unwrap() + jiff::SignedDuration::from_mins(minutes)
}

/// A git repository to be the project, and one store for every session in it.
fn project() -> (tempfile::TempDir, MemStore) {
    let dir = tempfile::tempdir().unwrap();
    let ok = std::process::Command::new("git")
        .args(["init", "--quiet", "--initial-branch=main"])
        .current_dir(dir.path())
        .status()
        .unwrap()
        .success();
    assert!(ok, "git init");
    let layout = baton_store::Layout::discover(dir.path(), None).unwrap();
    let store = MemStore::new(layout);
    (dir, store)
}

/// Session `session` at minute `minutes`, with a handle of its own onto `store`.
fn session(dir: &Path, store: &MemStore, session: &str, minutes: i64) -> Ctx {
    Ctx::in_memory(
        dir.to_path_buf(),
        Some(session),
        at(minutes),
        store.handle(),
    )
}

fn init(ctx: &Ctx, ticket: &str) -> Transition {
    ticket_loop::init(
        ctx,
        &*ctx.store().unwrap(),
        &Init {
            ticket: OsStr::new(ticket),
            phase: "skeptic",
            max_iterations: 5,
            base: None,
            flags: Ownership::default(),
        },
    )
    .unwrap()
}

/// `loop set T --phase <phase>`, as the write path runs it.
fn set_phase(ctx: &Ctx, ticket: &str, phase: &str, flags: &Ownership) -> Transition {
    let target = ticket_loop::Target::derive(ctx, OsStr::new(ticket));
    ticket_loop::transition(
        ctx,
        &*ctx.store().unwrap(),
        target,
        flags,
        JournalEvent::Set,
        |state, _| {
            state.last_phase = Some(phase.to_string());
            state.touch(ctx.now);
            Ok(Applied {
                changed: true,
                message: format!("phase {phase}"),
                next: None,
                warnings: Vec::new(),
            })
        },
    )
    .unwrap()
}

fn state(store: &MemStore, key: &str) -> LoopState {
    store.read_loop(key).unwrap().unwrap().state
}

fn events(store: &MemStore, key: &str) -> Vec<String> {
    store
        .read_journal(JournalTarget::Loop(key))
        .unwrap()
        .events
        .iter()
        .map(|e| e["event"].as_str().unwrap_or_default().to_string())
        .collect()
}

fn refused(t: &Transition) -> String {
    match t {
        Transition::Refused { decision, .. } => decision.verdict.to_string(),
        Transition::Written(w) => panic!("expected a refusal, got a write: {}", w.message),
    }
}

#[test]
fn a_session_records_its_own_loop_under_its_lock() {
    let (dir, store) = project();
    let a = session(dir.path(), &store, "A", 0);
    assert!(init(&a, "T-1").changed());
    let a = session(dir.path(), &store, "A", 1);
    assert!(set_phase(&a, "T-1", "qa", &Ownership::default()).changed());
    let s = state(&store, "T-1");
    assert_eq!(
        (s.session_id.as_deref(), s.last_phase.as_deref()),
        (Some("A"), Some("qa"))
    );
    assert_eq!(events(&store, "T-1"), ["init", "set"]);
}

#[test]
fn another_live_session_is_refused_and_nothing_changes() {
    let (dir, store) = project();
    init(&session(dir.path(), &store, "A", 0), "T-1");
    let before = store.read_loop("T-1").unwrap().unwrap();
    let b = session(dir.path(), &store, "B", 1);
    let verdict = refused(&set_phase(&b, "T-1", "qa", &Ownership::default()));
    assert_eq!(verdict, "refused");
    let after = store.read_loop("T-1").unwrap().unwrap();
    assert_eq!(after.revision, before.revision);
    assert_eq!(events(&store, "T-1"), ["init"]);
    // A second init by B is refused the same way.
    refused(&init(&b, "T-1"));
    assert_eq!(state(&store, "T-1").session_id.as_deref(), Some("A"));
}

#[test]
fn a_silent_owner_is_taken_over_and_its_old_epoch_is_fenced() {
    let (dir, store) = project();
    init(&session(dir.path(), &store, "A", 0), "T-1");
    let epoch = state(&store, "T-1").owner_epoch;
    // A has written nothing for 11 minutes: stale, so B takes the loop over.
    let b = session(dir.path(), &store, "B", 11);
    let taken = set_phase(&b, "T-1", "qa", &Ownership::default());
    assert!(taken.changed());
    let s = state(&store, "T-1");
    assert_eq!(s.session_id.as_deref(), Some("B"));
    assert!(s.owner_epoch > epoch, "{} after {epoch}", s.owner_epoch);
    assert_eq!(events(&store, "T-1"), ["init", "takeover", "set"]);
    // A comes back holding the epoch it was handed: fenced off, nothing changes.
    let a = session(dir.path(), &store, "A", 12);
    let fenced = Ownership {
        epoch: Some(epoch),
        ..Ownership::default()
    };
    refused(&set_phase(&a, "T-1", "fix", &fenced));
    assert_eq!(state(&store, "T-1").last_phase.as_deref(), Some("qa"));
}

#[test]
fn a_lock_held_by_another_process_stops_the_write_and_changes_nothing() {
    let (dir, store) = project();
    init(&session(dir.path(), &store, "A", 0), "T-1");
    let other = store.handle();
    let held = other.lock(baton_store::LockScope::Loop("T-1")).unwrap();
    let a = session(dir.path(), &store, "A", 1);
    let err = ticket_loop::transition(
        &a,
        &*a.store().unwrap(),
        ticket_loop::Target::derive(&a, OsStr::new("T-1")),
        &Ownership::default(),
        JournalEvent::Set,
        |_, _| unreachable!("the change is never applied without the lock"),
    )
    .unwrap_err();
    assert!(err.message.contains("locked"), "{}", err.message);
    // A lock another process holds is a gate, not a broken store.
    assert_eq!(err.kind, baton_ops::Kind::Refused);
    drop(held);
    assert_eq!(events(&store, "T-1"), ["init"]);
}

/// A failure hook's interrupt of everything a session owns, then the next session's survey:
/// every write is made under its lock, the loop is interrupted as a rate limit until the reset,
/// and the survey offers it to the next session.
#[test]
fn a_sessions_work_is_interrupted_by_a_rate_limit_and_surveyed_by_the_next() {
    let (dir, store) = project();
    let a = session(dir.path(), &store, "A", 0);
    init(&a, "T-1");
    let owned = baton_ops::owned::owned(&store, "A").unwrap();
    assert_eq!(owned.loops.len(), 1);
    let reset = at(300);
    let a = session(dir.path(), &store, "A", 1);
    let (done, result) = baton_ops::owned::interrupt_owned(
        &a,
        &*a.store().unwrap(),
        &owned,
        baton_core::model::InterruptReason::RateLimit,
        "429 until the reset",
        Some(reset),
    );
    result.unwrap();
    assert_eq!(done.tickets, ["T-1"], "{:?}", done.refused);
    let s = state(&store, "T-1");
    assert_eq!(s.status, baton_core::model::LoopStatus::Interrupted);
    assert_eq!(
        s.resume_after.as_deref(),
        Some(baton_core::time::format_ts(reset).as_str())
    );
    assert_eq!(events(&store, "T-1"), ["init", "interrupt"]);

    let b = session(dir.path(), &store, "B", 301);
    let survey = baton_ops::survey::survey(&b, &*b.store().unwrap()).unwrap();
    let row = survey
        .work
        .iter()
        .find(|w| w.key == "T-1")
        .expect("the loop is surveyed");
    assert_eq!(row.call.to_string(), "offer (automatic)", "{row:?}");
    let item = row.item.as_ref().unwrap();
    assert_eq!(item.accept.as_deref(), Some("baton resume accept T-1"));
}

fn start_batch(ctx: &Ctx, tickets: &[&str]) -> baton_ops::batch::BatchStart {
    let tickets: Vec<std::ffi::OsString> = tickets.iter().map(Into::into).collect();
    baton_ops::batch::start(
        ctx,
        &*ctx.store().unwrap(),
        &baton_ops::batch::Start {
            tickets: &tickets,
            mode: "sequential",
            force: false,
        },
    )
    .unwrap()
}

/// A batch is one session's: another live session's start is refused and changes nothing; a
/// silent owner's batch is replaced, the old one archived, every write under its lock.
#[test]
fn a_batch_is_one_sessions_until_its_owner_goes_silent() {
    use baton_ops::batch::BatchStart;
    let (dir, store) = project();
    let started = start_batch(&session(dir.path(), &store, "A", 0), &["T-1", "T-2"]);
    assert!(matches!(started, BatchStart::Started { .. }), "{started:?}");
    let before = store.read_batch().unwrap().unwrap();
    let refused = start_batch(&session(dir.path(), &store, "B", 1), &["T-3", "T-4"]);
    assert!(matches!(refused, BatchStart::Refused(_)), "{refused:?}");
    assert_eq!(
        store.read_batch().unwrap().unwrap().revision,
        before.revision
    );
    let replaced = start_batch(&session(dir.path(), &store, "B", 60), &["T-3", "T-4"]);
    assert!(
        matches!(replaced, BatchStart::Started { .. }),
        "{replaced:?}"
    );
    let now = store.read_batch().unwrap().unwrap().state;
    assert_eq!(now.session_id.as_deref(), Some("B"));
    assert_eq!(store.archived().len(), 1, "{:?}", store.archived());
}

/// A loop is addressed by the record it is, not by a ticket its key is derived back from: a
/// loop whose file key is not its ticket's own (another tool named the file) is interrupted
/// with the rest of its session's work.
#[test]
fn a_loop_under_a_key_its_ticket_would_not_give_is_interrupted_all_the_same() {
    let (dir, store) = project();
    let record: LoopState = serde_json::from_value(serde_json::json!({
        "schema_version": 1,
        "session_id": "A",
        "ticket_id": "PROJ-1",
        "loop_key": "proj-1-from-the-conductor",
        "status": "active",
        "last_updated": T0,
        "loop_state": {"iteration": 1, "phase": "qa"},
    }))
    .unwrap();
    {
        let _lock = store
            .lock(baton_store::LockScope::Loop("proj-1-from-the-conductor"))
            .unwrap();
        store
            .write_loop(
                "proj-1-from-the-conductor",
                &record,
                &baton_store::Expect::Absent,
            )
            .unwrap();
    }
    let owned = baton_ops::owned::owned(&store, "A").unwrap();
    let a = session(dir.path(), &store, "A", 1);
    let (done, result) = baton_ops::owned::interrupt_owned(
        &a,
        &*a.store().unwrap(),
        &owned,
        baton_core::model::InterruptReason::RateLimit,
        "429",
        None,
    );
    result.unwrap();
    assert_eq!(done.tickets, ["PROJ-1"], "{:?}", done.refused);
    assert_eq!(
        state(&store, "proj-1-from-the-conductor").status,
        baton_core::model::LoopStatus::Interrupted
    );
}

/// The per-turn refresh keeps a session's quiet loop live, leaves one written within the
/// coalescing window alone (no write), and leaves work the session paused as the pause left it.
#[test]
fn the_refresh_keeps_quiet_work_live_and_paused_work_as_it_is() {
    let (dir, store) = project();
    init(&session(dir.path(), &store, "A", 0), "T-1");
    init(&session(dir.path(), &store, "A", 0), "T-2");
    let t1_at_start = store.read_loop("T-1").unwrap().unwrap().revision;
    // Within the window: nothing is written.
    let owned = baton_ops::owned::owned(&store, "A").unwrap();
    let a = session(dir.path(), &store, "A", 0);
    let done = baton_ops::owned::refresh(&a, &*a.store().unwrap(), &owned, None);
    assert!(done.error.is_none(), "{:?}", done.error);
    assert_eq!(
        store.read_loop("T-1").unwrap().unwrap().revision,
        t1_at_start
    );
    // The session paused at minute 0, then went on with T-2 at minute 1: the pause covers
    // T-1 only. Six minutes later only T-2 is refreshed.
    set_phase(
        &session(dir.path(), &store, "A", 1),
        "T-2",
        "qa",
        &Ownership::default(),
    );
    let pauses: baton_core::model::Pauses = serde_json::from_value(serde_json::json!({
        "marks": [{"paused_at": T0, "session_id": "A"}]
    }))
    .unwrap();
    let owned = baton_ops::owned::owned(&store, "A").unwrap();
    let a = session(dir.path(), &store, "A", 7);
    let done = baton_ops::owned::refresh(&a, &*a.store().unwrap(), &owned, Some(&pauses));
    assert!(done.error.is_none(), "{:?}", done.error);
    assert_eq!(
        store.read_loop("T-1").unwrap().unwrap().revision,
        t1_at_start,
        "paused work is left as the pause left it"
    );
    assert_eq!(
        state(&store, "T-2").last_updated.as_deref(),
        Some(baton_core::time::format_ts(at(7)).as_str())
    );
}

/// A context opens its store once: every operation run with it, and every view made of it (a
/// clone with another session or clock), works on that one handle.
#[test]
fn a_context_and_its_views_share_one_store() {
    let (dir, store) = project();
    let a = session(dir.path(), &store, "A", 0);
    let first = a.store().unwrap();
    assert!(std::rc::Rc::ptr_eq(&first, &a.store().unwrap()));
    let mut view = a.clone();
    view.session = Some("B".into());
    view.now = at(5);
    assert!(std::rc::Rc::ptr_eq(&first, &view.store().unwrap()));
    // A command that retries after the server was out of reach connects again.
    view.reconnect_next_time();
    assert!(!std::rc::Rc::ptr_eq(&first, &a.store().unwrap()));
}

/// A run started by `ctx`'s session with its lease held for `holder`: its id.
fn new_run(ctx: &Ctx, holder: baton_ops::single_run::Holder) -> baton_core::run_id::RunId {
    let started = baton_ops::single_run::new_run(
        ctx,
        &*ctx.store().unwrap(),
        &baton_ops::single_run::NewRun {
            feature: Some("search"),
            plan: None,
            mode: None,
            project_file: ".claude/PROJECT.md",
            mid_gap: "critic",
            security_globs: &[],
            lease_ttl: 600,
            fresh: false,
            holder,
        },
    )
    .unwrap();
    match started {
        baton_ops::single_run::RunStart::Started(started) => started.id,
        other => panic!("{other:?}"),
    }
}

/// A single run's lease is its holder's: another session's release is refused while it is
/// live, the holder's own ends it, every write under the runs' lock.
#[test]
fn a_runs_lease_is_its_holders() {
    use baton_ops::single_run::{Holder, LeaseEnd, end_lease};
    let (dir, store) = project();
    let id = new_run(&session(dir.path(), &store, "A", 0), Holder::default()).to_string();
    let end = |who: &str, minutes: i64| {
        let ctx = session(dir.path(), &store, who, minutes);
        end_lease(
            &ctx,
            &*ctx.store().unwrap(),
            &id,
            &Holder::default(),
            None,
            false,
        )
        .unwrap()
    };
    let refused = end("B", 1);
    assert!(matches!(refused, LeaseEnd::Refused(_)), "{refused:?}");
    let ended = end("A", 2);
    assert!(matches!(ended, LeaseEnd::Ended { .. }), "{ended:?}");
    let run = store
        .read_run(&baton_core::run_id::RunId::parse(&id).unwrap())
        .unwrap()
        .unwrap()
        .state;
    assert!(run.lease.is_none(), "{run:?}");
}

/// A pause marks the session's work paused on purpose, under the pause's lock: the refresh
/// then leaves that work alone, and the survey tells the next session it was paused.
#[test]
fn a_paused_session_is_left_paused_and_the_next_session_is_told() {
    let (dir, store) = project();
    init(&session(dir.path(), &store, "A", 0), "T-1");
    let a = session(dir.path(), &store, "A", 1);
    baton_ops::continuation::pause(&a, &*a.store().unwrap(), Some("lunch".into())).unwrap();
    let pauses = store.read_pause().unwrap().unwrap().state;
    let before = store.read_loop("T-1").unwrap().unwrap().revision;
    let owned = baton_ops::owned::owned(&store, "A").unwrap();
    let later = session(dir.path(), &store, "A", 30);
    let done = baton_ops::owned::refresh(&later, &*later.store().unwrap(), &owned, Some(&pauses));
    assert!(done.error.is_none(), "{:?}", done.error);
    assert_eq!(store.read_loop("T-1").unwrap().unwrap().revision, before);
    let b = session(dir.path(), &store, "B", 31);
    let survey = baton_ops::survey::survey(&b, &*b.store().unwrap()).unwrap();
    let row = survey.work.iter().find(|w| w.key == "T-1").unwrap();
    // Offered to the next session as work paused on purpose, with the pause's reason.
    assert_eq!(
        row.class,
        Some(baton_core::decide::continuation::Class::Pause),
        "{row:?}"
    );
    let item = row.item.as_ref().unwrap();
    assert!(
        item.reasons
            .iter()
            .any(|r| r.message == "explicitly paused: lunch"),
        "{item:?}"
    );
}

/// A heartbeat keeps only its own session's active loop live, and only with the epoch it holds:
/// another session's beat, a beat on an interrupted loop and a beat with a stale epoch change
/// nothing.
#[test]
fn a_heartbeat_refreshes_only_the_owners_active_loop() {
    let (dir, store) = project();
    init(&session(dir.path(), &store, "A", 0), "T-1");
    let beat = |who: &str, minutes: i64, flags: &Ownership| {
        let ctx = session(dir.path(), &store, who, minutes);
        ticket_loop::heartbeat(
            &ctx,
            &*ctx.store().unwrap(),
            ticket_loop::Target::derive(&ctx, OsStr::new("T-1")),
            flags,
        )
        .unwrap()
    };
    let before = store.read_loop("T-1").unwrap().unwrap().revision;
    assert!(matches!(
        beat("B", 5, &Ownership::default()),
        ticket_loop::Heartbeat::Skipped { .. }
    ));
    let stale = Ownership {
        epoch: Some(state(&store, "T-1").owner_epoch + 1),
        ..Ownership::default()
    };
    assert!(matches!(
        beat("A", 5, &stale),
        ticket_loop::Heartbeat::Skipped { .. }
    ));
    assert_eq!(store.read_loop("T-1").unwrap().unwrap().revision, before);
    assert!(matches!(
        beat("A", 5, &Ownership::default()),
        ticket_loop::Heartbeat::Refreshed { .. }
    ));
    assert_eq!(
        state(&store, "T-1").last_updated.as_deref(),
        Some("2026-03-01T10:05:00Z")
    );
}

/// A session takes back its own loop that a rate limit interrupted, and only once the
/// recorded reset has passed; another session cannot take it back at all.
#[test]
fn a_rate_limited_loop_is_taken_back_by_its_own_session_after_the_reset() {
    let (dir, store) = project();
    init(&session(dir.path(), &store, "A", 0), "T-1");
    let a = session(dir.path(), &store, "A", 1);
    ticket_loop::interrupt(
        &a,
        &*a.store().unwrap(),
        ticket_loop::Target::derive(&a, OsStr::new("T-1")),
        baton_core::model::InterruptReason::RateLimit,
        Some(at(60)),
        &Ownership::default(),
    )
    .unwrap();
    let take = |who: &str, minutes: i64| {
        let ctx = session(dir.path(), &store, who, minutes);
        ticket_loop::take_back(&ctx, &*ctx.store().unwrap(), OsStr::new("T-1"), "prompt").unwrap()
    };
    assert!(matches!(take("A", 30), ticket_loop::TakeBack::NotYet { until } if until == at(60)));
    assert!(matches!(
        take("B", 61),
        ticket_loop::TakeBack::NotOwn { .. }
    ));
    assert_eq!(
        state(&store, "T-1").status,
        baton_core::model::LoopStatus::Interrupted
    );
    assert!(matches!(
        take("A", 61),
        ticket_loop::TakeBack::Taken {
            resume_count: 1,
            ..
        }
    ));
    let s = state(&store, "T-1");
    assert_eq!(s.status, baton_core::model::LoopStatus::Active);
    assert_eq!((s.interrupt_reason, s.resume_after), (None, None));
    assert_eq!(events(&store, "T-1"), ["init", "interrupt", "resume"]);
}

/// A session lifts only its own pause: another session's clear leaves the mark, the owner's
/// removes it, and a clear with nothing paused says so.
#[test]
fn a_pause_is_lifted_only_by_its_own_session() {
    use baton_ops::continuation::{Cleared, clear_pause, pause};
    let (dir, store) = project();
    init(&session(dir.path(), &store, "A", 0), "T-1");
    let a = session(dir.path(), &store, "A", 1);
    pause(&a, &*a.store().unwrap(), Some("lunch".into())).unwrap();
    let b = session(dir.path(), &store, "B", 2);
    let cleared = clear_pause(&b, &*b.store().unwrap()).unwrap();
    assert!(matches!(cleared, Cleared::NotThisSession), "{cleared:?}");
    assert!(store.read_pause().unwrap().is_some());
    let a = session(dir.path(), &store, "A", 3);
    let cleared = clear_pause(&a, &*a.store().unwrap()).unwrap();
    assert!(matches!(cleared, Cleared::Removed), "{cleared:?}");
    assert!(store.read_pause().unwrap().is_none());
    let cleared = clear_pause(&a, &*a.store().unwrap()).unwrap();
    assert!(matches!(cleared, Cleared::NoMark), "{cleared:?}");
}

fn accept(ctx: &Ctx, ticket: &str) -> ticket_loop::Acceptance {
    ticket_loop::accept(
        ctx,
        &*ctx.store().unwrap(),
        &ticket_loop::Accept {
            ticket: OsStr::new(ticket),
            set_aside: None,
            flags: Ownership::default(),
        },
    )
    .unwrap()
}

/// `resume accept` is refused while the owner is live and changes nothing; once the owner's
/// loop is interrupted, another session accepts it: the loop is that session's, at the next
/// epoch, active, and the journal records the takeover.
#[test]
fn a_loop_is_accepted_only_from_an_owner_no_longer_live() {
    let (dir, store) = project();
    init(&session(dir.path(), &store, "A", 0), "T-1");
    let epoch = state(&store, "T-1").owner_epoch;
    let before = store.read_loop("T-1").unwrap().unwrap().revision;
    let refused = accept(&session(dir.path(), &store, "B", 1), "T-1");
    assert!(
        matches!(&refused, ticket_loop::Acceptance::Refused { decision, .. } if decision.verdict == baton_core::Verdict::Refused),
        "{refused:?}"
    );
    assert_eq!(store.read_loop("T-1").unwrap().unwrap().revision, before);
    let a = session(dir.path(), &store, "A", 2);
    ticket_loop::interrupt(
        &a,
        &*a.store().unwrap(),
        ticket_loop::Target::derive(&a, OsStr::new("T-1")),
        baton_core::model::InterruptReason::SessionExpiry,
        None,
        &Ownership::default(),
    )
    .unwrap();
    let taken = accept(&session(dir.path(), &store, "B", 3), "T-1");
    assert!(
        matches!(&taken, ticket_loop::Acceptance::Accepted(_)),
        "{taken:?}"
    );
    let s = state(&store, "T-1");
    assert_eq!(s.session_id.as_deref(), Some("B"));
    assert_eq!(s.status, baton_core::model::LoopStatus::Active);
    assert!(s.owner_epoch > epoch, "{} after {epoch}", s.owner_epoch);
    assert_eq!(events(&store, "T-1"), ["init", "interrupt", "takeover"]);
}

/// A batch whose owner's session ended is interrupted: another session's ticket write is
/// refused and changes nothing until that session runs `batch resume`, which takes the batch;
/// its ticket writes then run.
#[test]
fn an_interrupted_batch_moves_for_another_session_only_after_its_resume() {
    use baton_core::journal::JournalEvent;
    use baton_ops::batch::{BatchUpdate, BatchWrite, update};
    let (dir, store) = project();
    start_batch(&session(dir.path(), &store, "A", 0), &["T-1", "T-2"]);
    let a = session(dir.path(), &store, "A", 1);
    let ended = baton_ops::batch::interrupt(
        &a,
        &*a.store().unwrap(),
        baton_core::model::InterruptReason::SessionExpiry,
    )
    .unwrap();
    assert!(matches!(ended, BatchUpdate::Written { .. }), "{ended:?}");
    let write = |kind: BatchWrite, event: JournalEvent| {
        let b = session(dir.path(), &store, "B", 2);
        update(
            &b,
            &*b.store().unwrap(),
            &Ownership::default(),
            kind,
            event,
            |_| Ok(("written".to_string(), serde_json::Value::Null)),
        )
        .unwrap()
    };
    let before = store.read_batch().unwrap().unwrap().revision;
    let refused = write(BatchWrite::Ticket, JournalEvent::Ticket);
    assert!(matches!(refused, BatchUpdate::Refused(_)), "{refused:?}");
    assert_eq!(store.read_batch().unwrap().unwrap().revision, before);
    let resumed = write(BatchWrite::Resume, JournalEvent::Resume);
    assert!(
        matches!(resumed, BatchUpdate::Written { .. }),
        "{resumed:?}"
    );
    let batch = store.read_batch().unwrap().unwrap().state;
    assert_eq!(batch.session_id.as_deref(), Some("B"));
    assert_eq!(batch.status.as_str(), "active");
    let ticket = write(BatchWrite::Ticket, JournalEvent::Ticket);
    assert!(matches!(ticket, BatchUpdate::Written { .. }), "{ticket:?}");
}

/// `resume fresh` never archives a loop a live session runs; once its owner has gone silent
/// the loop is archived (kept, not deleted) and the ticket is free for a new loop.
#[test]
fn a_fresh_start_archives_only_a_loop_no_session_runs() {
    use ticket_loop::Fresh;
    let (dir, store) = project();
    init(&session(dir.path(), &store, "A", 0), "T-1");
    let fresh = |minutes: i64| {
        let b = session(dir.path(), &store, "B", minutes);
        ticket_loop::fresh(
            &b,
            &*b.store().unwrap(),
            OsStr::new("T-1"),
            &Ownership::default(),
        )
        .unwrap()
        .outcome
    };
    let before = store.read_loop("T-1").unwrap().unwrap().revision;
    let refused = fresh(1);
    assert!(matches!(refused, Fresh::Refused(_)), "{refused:?}");
    assert_eq!(store.read_loop("T-1").unwrap().unwrap().revision, before);
    assert!(store.archived().is_empty());
    let archived = fresh(30);
    assert!(matches!(archived, Fresh::Archived { .. }), "{archived:?}");
    assert!(store.read_loop("T-1").unwrap().is_none());
    assert_eq!(store.archived().len(), 1, "{:?}", store.archived());
    assert!(init(&session(dir.path(), &store, "B", 31), "T-1").changed());
}

/// A process to hold a run's lease for, stopped when dropped.
struct Process(std::process::Child);

impl Process {
    fn start() -> Process {
        Process(
            std::process::Command::new("sleep")
                .arg("60")
                .spawn()
                .expect("sleep runs"),
        )
    }

    fn pid(&self) -> u32 {
        self.0.id()
    }

    fn stop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.stop();
    }
}

/// `run resume` is blocked while the lease's holder process runs, and changes nothing; once
/// that process is gone, another session's resume takes the lease over at the next epoch.
#[test]
fn a_run_is_resumed_by_another_session_only_once_its_holder_process_is_gone() {
    use baton_ops::single_run::{Holder, ResumeRun, resume};
    let (dir, store) = project();
    // The run's base is a commit: the resume's first check compares it with HEAD.
    git(
        dir.path(),
        &["commit", "--quiet", "--allow-empty", "-m", "base"],
    );
    // Its heartbeat stays fresh throughout: only the holder's process decides.
    let mut first = Process::start();
    let id = new_run(
        &session(dir.path(), &store, "A", 0),
        Holder {
            pid: Some(first.pid()),
            ..Holder::default()
        },
    );
    let second = Process::start();
    let resume_as_b = |minutes: i64| {
        let b = session(dir.path(), &store, "B", minutes);
        resume(
            &b,
            &*b.store().unwrap(),
            &ResumeRun {
                id: id.clone(),
                confirm_alignment: false,
                allow_staged: false,
                holder: Holder {
                    pid: Some(second.pid()),
                    ..Holder::default()
                },
            },
        )
        .unwrap()
    };
    let before = store.read_run(&id).unwrap().unwrap().revision;
    let blocked = resume_as_b(1);
    assert_eq!(blocked.decision.decision.verdict.to_string(), "blocked");
    assert!(!blocked.decision.acquire);
    assert_eq!(store.read_run(&id).unwrap().unwrap().revision, before);
    first.stop();
    let taken = resume_as_b(2);
    assert!(taken.decision.acquire, "{:?}", taken.decision.decision);
    let run = store.read_run(&id).unwrap().unwrap().state;
    let lease = run.lease.expect("the lease is B's");
    assert_eq!(lease.session.as_deref(), Some("B"));
    assert_eq!(run.lease_epoch, 2);
}

/// A plan ledger takes only its own plan's events: a line that is no event is invalid input
/// and writes nothing; a ledger whose header names another plan (copied from another run) is
/// refused, byte for byte as it was.
#[test]
fn a_ledger_takes_only_valid_events_of_its_own_plan() {
    use baton_ops::ledgers::Appended;
    use baton_ops::ledgers::append_raw;
    let (dir, store) = project();
    let a = session(dir.path(), &store, "A", 0);
    let plan = Path::new("plans/search");
    std::fs::create_dir_all(dir.path().join(plan)).unwrap();
    baton_ops::ledgers::init(&a, plan).unwrap();
    let ledger = dir.path().join(plan).join("STATE.md");
    let header = std::fs::read(&ledger).unwrap();
    let bad = append_raw(&a, plan, "phase 1: finished, trust me").unwrap_err();
    assert_eq!(bad.kind, baton_ops::Kind::Invalid, "{}", bad.message);
    assert_eq!(std::fs::read(&ledger).unwrap(), header);
    let written = append_raw(&a, plan, "phase 1: BLOCKED — waiting on review").unwrap();
    assert!(
        matches!(written.appended, Appended::Written { .. }),
        "{:?}",
        written.appended
    );
    let copied = "# run-state — plan: plans/billing\n";
    std::fs::write(&ledger, copied).unwrap();
    let refused = append_raw(&a, plan, "phase 1: BLOCKED — waiting on review").unwrap();
    assert!(
        matches!(refused.appended, Appended::Refused(_)),
        "{:?}",
        refused.appended
    );
    assert_eq!(std::fs::read_to_string(&ledger).unwrap(), copied);
}

/// A run's own holder resuming it: a staged file blocks it and a changed alignment section
/// asks a person first, each changing nothing; once the person confirms the alignment, the
/// resume goes on and takes the lock.
#[test]
fn a_run_resume_stops_at_staged_files_and_asks_about_a_changed_scope() {
    use baton_ops::single_run::{Holder, ResumeRun, resume};
    const PROJECT: &str = "# Project\n\n## GOALS\n\n- Resume runs.\n\n## SCOPE\n\n- The run protocol.\n\n## CONSTRAINTS\n\n- No daemon.\n";
    let (dir, store) = project();
    std::fs::create_dir_all(dir.path().join(".claude")).unwrap();
    std::fs::write(dir.path().join(".claude/PROJECT.md"), PROJECT).unwrap();
    git(dir.path(), &["add", "."]);
    git(dir.path(), &["commit", "--quiet", "-m", "alignment"]);
    // The holder is a process that runs throughout.
    let process = Process::start();
    let holder = Holder {
        pid: Some(process.pid()),
        ..Holder::default()
    };
    let id = new_run(&session(dir.path(), &store, "A", 0), holder.clone());
    let again = |confirm_alignment: bool| {
        let a = session(dir.path(), &store, "A", 1);
        resume(
            &a,
            &*a.store().unwrap(),
            &ResumeRun {
                id: id.clone(),
                confirm_alignment,
                allow_staged: false,
                holder: holder.clone(),
            },
        )
        .unwrap()
    };
    let rules = |r: &baton_ops::single_run::Resumed| -> Vec<String> {
        r.decision
            .decision
            .reasons
            .iter()
            .map(|reason| reason.rule.to_string())
            .collect()
    };
    let before = store.read_run(&id).unwrap().unwrap().revision;
    std::fs::write(dir.path().join("staged.rs"), "fn staged() {}\n").unwrap();
    git(dir.path(), &["add", "staged.rs"]);
    let blocked = again(false);
    assert_eq!(blocked.decision.decision.verdict.to_string(), "blocked");
    assert_eq!(rules(&blocked), ["run.staged-files"]);
    assert!(!blocked.decision.acquire);
    git(dir.path(), &["reset", "--quiet", "staged.rs"]);
    std::fs::write(
        dir.path().join(".claude/PROJECT.md"),
        PROJECT.replace("- The run protocol.", "- The web dashboard only."),
    )
    .unwrap();
    let asks = again(false);
    assert_eq!(asks.decision.decision.verdict.to_string(), "confirm");
    assert_eq!(rules(&asks), ["run.alignment-drift"]);
    assert_eq!(asks.decision.drift.len(), 1);
    assert_eq!(asks.decision.drift[0].section, "SCOPE");
    assert!(!asks.decision.acquire);
    assert_eq!(store.read_run(&id).unwrap().unwrap().revision, before);
    let confirmed = again(true);
    assert!(
        confirmed.decision.acquire,
        "{:?}",
        confirmed.decision.decision
    );
}

/// `gate run` records each declared gate's result, a failure as plainly as a pass; and when
/// the ledger names another plan it runs no gate at all: a gate's side effects with no record
/// of them are what the ledger exists to prevent.
#[test]
fn gates_run_only_where_their_results_can_be_recorded() {
    use baton_ops::ledgers::{GateRunRequest, GatesRun, init, run_gates};
    let (dir, store) = project();
    let a = session(dir.path(), &store, "A", 0);
    let plan = Path::new("plans/search");
    std::fs::create_dir_all(dir.path().join(plan)).unwrap();
    std::fs::write(
        dir.path().join(plan).join("phase-1.md"),
        "# Phase 1\n\n```gates\nbuilt: touch built → exit 0\nclean: false → exit 0\n```\n",
    )
    .unwrap();
    init(&a, plan).unwrap();
    let request = GateRunRequest {
        plan,
        phase: "1",
        only: None,
        timeout: std::time::Duration::from_secs(30),
    };
    let ran = run_gates(&a, &request).unwrap();
    let GatesRun::Ran {
        results, failed, ..
    } = ran
    else {
        panic!("{ran:?}");
    };
    assert!(failed);
    let passes: Vec<(&str, bool)> = results.iter().map(|r| (r.name.as_str(), r.pass)).collect();
    assert_eq!(passes, [("built", true), ("clean", false)]);
    let ledger = std::fs::read_to_string(dir.path().join(plan).join("STATE.md")).unwrap();
    assert!(ledger.contains("phase 1: gate built → PASS"), "{ledger}");
    assert!(ledger.contains("phase 1: gate clean → FAIL"), "{ledger}");
    // Another run's ledger in its place: refused before any gate runs.
    std::fs::remove_file(dir.path().join("built")).unwrap();
    let copied = "# run-state — plan: plans/billing\n";
    std::fs::write(dir.path().join(plan).join("STATE.md"), copied).unwrap();
    let refused = run_gates(&a, &request).unwrap();
    assert!(matches!(refused, GatesRun::Refused(_)), "{refused:?}");
    assert!(!dir.path().join("built").exists(), "no gate ran");
    assert_eq!(
        std::fs::read_to_string(dir.path().join(plan).join("STATE.md")).unwrap(),
        copied
    );
}

/// The sha of `HEAD` in `dir`, abbreviated as the ledger writes it.
fn short_head(dir: &Path) -> String {
    let out = std::process::Command::new("git")
        .args(["rev-parse", "--short=7", "HEAD"])
        .current_dir(dir)
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// Seed 003's "zero re-implementation of confirmed work": once a derive confirmed phase 1 and
/// resumed the run at phase 2, starting phase 1 again is refused and writes nothing, while
/// phase 2 starts.
#[test]
fn a_phase_a_derive_confirmed_is_not_started_again() {
    use baton_core::ledger::Event;
    use baton_ops::ledgers::{Appended, append_event, init};
    let (dir, store) = project();
    git(
        dir.path(),
        &["commit", "--quiet", "--allow-empty", "-m", "base"],
    );
    let base = short_head(dir.path());
    git(
        dir.path(),
        &["commit", "--quiet", "--allow-empty", "-m", "phase 1"],
    );
    let done = short_head(dir.path());
    let plan = Path::new("plans/search");
    std::fs::create_dir_all(dir.path().join(plan)).unwrap();
    for phase in ["1", "2"] {
        std::fs::write(
            dir.path().join(plan).join(format!("phase-{phase}.md")),
            format!("# Phase {phase}\n"),
        )
        .unwrap();
    }
    let a = session(dir.path(), &store, "A", 0);
    init(&a, plan).unwrap();
    let ledger = dir.path().join(plan).join("STATE.md");
    let mut text = std::fs::read_to_string(&ledger).unwrap();
    text.push_str(&format!(
        "phase 1: started (base {base})\nphase 1: complete (commits {base}..{done}, tests 3/3, review clean)\nphase 2: resumed (derived from ledger + gates, 1 phases confirmed)\n"
    ));
    std::fs::write(&ledger, &text).unwrap();
    let start = |phase: &str| {
        append_event(
            &a,
            plan,
            Event::Started {
                phase: phase.to_string(),
                base: done.clone(),
            },
        )
        .unwrap()
        .appended
    };
    let again = start("1");
    assert!(matches!(again, Appended::Refused(_)), "{again:?}");
    assert_eq!(std::fs::read_to_string(&ledger).unwrap(), text);
    let next = start("2");
    assert!(matches!(next, Appended::Written { .. }), "{next:?}");
}
