//! The judge of "done" over a real repository: a phase claim judged by the gate results
//! recorded on the tree as it is, and the stop hook's call on it, with its guards.

mod support;
use support::git;

use std::path::Path;

use baton_core::Rule;
use baton_core::client::ClientGoal;
use baton_core::judge::{Judged, StopCall, Unverified};
use baton_core::ledger::{Event, Review};
use baton_ops::env::Ctx;
use baton_ops::judge::{AtStop, StopContext, at_stop, claim_phase};
use baton_ops::ledgers::{self, GateRunRequest, Plan};
use baton_store::{JournalTarget, MemStore};
use jiff::Timestamp;

/// A repository with plan `plans/auth`, whose phase 1 declares one gate: `ok.txt` exists.
fn project() -> (tempfile::TempDir, MemStore) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    git(root, &["init", "--quiet", "--initial-branch=main"]);
    std::fs::create_dir_all(root.join("plans/auth")).unwrap();
    std::fs::write(root.join("plans/auth/plan.md"), "# Auth\n## Phase 1\n").unwrap();
    std::fs::write(
        root.join("plans/auth/phase-1.md"),
        "# Phase 1\n```gates\nunit: test -f ok.txt → exit 0\n```\n",
    )
    .unwrap();
    std::fs::write(root.join("src.txt"), "one\n").unwrap();
    git(root, &["add", "-A"]);
    git(root, &["commit", "--quiet", "-m", "plan"]);
    let layout = baton_store::Layout::discover(root, None).unwrap();
    (dir, MemStore::new(layout))
}

fn session(dir: &Path, store: &MemStore, session: &str) -> Ctx {
    let now: Timestamp = "2026-03-01T10:00:00Z".parse().unwrap();
    Ctx::in_memory(dir.to_path_buf(), Some(session), now, store.handle())
}

/// Starts phase 1, commits work and claims the phase complete, as `ledger complete` does.
fn claim(ctx: &Ctx) -> Judged {
    let to = record_complete(ctx);
    let resolved = Plan::resolve(ctx, Path::new("plans/auth")).unwrap();
    let store = ctx.store().unwrap();
    let claimed = claim_phase(ctx, &resolved, "1", &to, &*store).unwrap();
    let events = store
        .read_journal(JournalTarget::Judge("plans/auth"))
        .unwrap()
        .events;
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["event"], "claimed");
    assert_eq!(events[0]["verdict"], claimed.judged.word());
    assert_eq!(claimed.warning, None);
    assert!(claimed.kept);
    claimed.judged
}

/// Starts phase 1, commits work and records the phase complete in the ledger; the last commit.
fn record_complete(ctx: &Ctx) -> String {
    let root = ctx.dir.clone();
    let plan = Path::new("plans/auth");
    assert!(matches!(
        ledgers::init(ctx, plan).unwrap(),
        ledgers::LedgerInit::Ready { .. }
    ));
    let base = git(&root, &["rev-parse", "--short", "HEAD"]);
    ledgers::append_event(
        ctx,
        plan,
        Event::Started {
            phase: "1".into(),
            base: base.clone(),
        },
    )
    .unwrap();
    std::fs::write(root.join("src.txt"), "two\n").unwrap();
    git(&root, &["commit", "--quiet", "-am", "work"]);
    let to = git(&root, &["rev-parse", "--short", "HEAD"]);
    ledgers::append_event(
        ctx,
        plan,
        Event::Complete {
            phase: "1".into(),
            from: base,
            to: to.clone(),
            tests: "1/1".into(),
            review: Review::Clean,
        },
    )
    .unwrap();
    to
}

fn gate_run(ctx: &Ctx) {
    let ran = ledgers::run_gates(
        ctx,
        &GateRunRequest {
            plan: Path::new("plans/auth"),
            phase: "1",
            only: None,
            timeout: std::time::Duration::from_secs(30),
        },
    )
    .unwrap();
    assert!(matches!(ran, ledgers::GatesRun::Ran { .. }));
}

fn verdict(ctx: &Ctx) -> Judged {
    let v = baton_ops::judge::verdicts(ctx, ctx.session().unwrap())
        .unwrap()
        .unwrap();
    assert_eq!(v.judged.len(), 1);
    v.judged[0].1.clone()
}

fn stop(ctx: &Ctx, again: bool) -> AtStop {
    stop_journaled(ctx, again).0
}

/// A stop, and the events it journaled (`<event> <verdict>`, with the rule when one).
fn stop_journaled(ctx: &Ctx, again: bool) -> (AtStop, Vec<String>) {
    stop_with(
        ctx,
        StopContext {
            again,
            ..StopContext::default()
        },
    )
}

/// A stop as the client describes it, and the events it journaled (`<event> <verdict>`, with
/// the rule when one; `claimed by goal` for a goal taken up).
fn stop_with(ctx: &Ctx, stop: StopContext) -> (AtStop, Vec<String>) {
    let mut events = Vec::new();
    let store = ctx.store().unwrap();
    let call = at_stop(
        ctx,
        ctx.session().unwrap(),
        &stop,
        &|| Ok(&*store),
        &mut |plan, e| {
            assert_eq!(plan, "plans/auth");
            let rule = e["rule"]
                .as_str()
                .or(e["by"].as_str())
                .map(|r| format!(" {r}"))
                .unwrap_or_default();
            events.push(format!(
                "{} {}{rule}",
                e["event"].as_str().unwrap(),
                e["verdict"].as_str().unwrap_or("by")
            ));
        },
    )
    .unwrap();
    (call, events)
}

#[test]
fn a_claim_is_verified_only_by_gates_that_passed_on_the_tree_as_it_is() {
    let (dir, store) = project();
    let root = dir.path();
    let a = session(root, &store, "A");
    let not_run = Judged::Unverified(Unverified::NotRun(vec!["unit".into()]));
    assert_eq!(claim(&a), not_run);
    // The gate fails on this tree.
    gate_run(&a);
    assert!(matches!(verdict(&a), Judged::Failed(l) if l.name == "unit"));
    // The failure was on another tree: the fix is unverified until the gate runs on it.
    std::fs::write(root.join("ok.txt"), "").unwrap();
    assert_eq!(verdict(&a), not_run);
    gate_run(&a);
    assert_eq!(verdict(&a), Judged::Verified);
    // The ledger's own lines are not the work: appending to it changes no verdict.
    gate_run(&a);
    assert_eq!(verdict(&a), Judged::Verified);
    // Any change to the tree, staged or not, takes the verification away.
    std::fs::write(root.join("src.txt"), "three\n").unwrap();
    assert_eq!(verdict(&a), not_run);
    git(root, &["checkout", "--quiet", "--", "src.txt"]);
    assert_eq!(verdict(&a), Judged::Verified);
    // Committing the ledger (and only the ledger) keeps the work as the gates saw it.
    git(root, &["add", "plans/auth/STATE.md"]);
    git(root, &["commit", "--quiet", "-m", "ledger"]);
    assert_eq!(verdict(&a), Judged::Verified);
    // A commit of work is another tree.
    git(root, &["add", "ok.txt"]);
    git(root, &["commit", "--quiet", "-m", "ok"]);
    assert_eq!(verdict(&a), not_run);
    gate_run(&a);
    assert_eq!(verdict(&a), Judged::Verified);
    // The claimed commits leave HEAD: a pass on the tree there does not verify them.
    let ledger = std::fs::read(root.join("plans/auth/STATE.md")).unwrap();
    git(root, &["reset", "--quiet", "--hard", "HEAD~3"]);
    std::fs::write(root.join("plans/auth/STATE.md"), ledger).unwrap();
    std::fs::write(root.join("ok.txt"), "").unwrap();
    gate_run(&a);
    assert_eq!(verdict(&a), Judged::Unverified(Unverified::CommitsOffHead));
}

#[test]
fn a_gate_line_the_session_writes_itself_proves_nothing() {
    let (dir, store) = project();
    let a = session(dir.path(), &store, "A");
    claim(&a);
    let tree = baton_ops::judge::tree_now(&a).unwrap().id();
    // Without a tree, and even naming the tree as it is: only `gate run` is evidence.
    for result in ["exit 0".to_string(), format!("exit 0 on tree {tree}")] {
        ledgers::append_event(
            &a,
            Path::new("plans/auth"),
            Event::Gate {
                phase: "1".into(),
                name: "unit".into(),
                pass: true,
                cmd: "test -f ok.txt".into(),
                result,
            },
        )
        .unwrap();
        assert_eq!(
            verdict(&a),
            Judged::Unverified(Unverified::NotRun(vec!["unit".into()]))
        );
    }
}

#[test]
fn a_gate_weakened_after_the_claim_verifies_nothing() {
    let (dir, store) = project();
    let a = session(dir.path(), &store, "A");
    claim(&a);
    std::fs::write(
        dir.path().join("plans/auth/phase-1.md"),
        "# Phase 1\n```gates\nunit: true → exit 0\n```\n",
    )
    .unwrap();
    gate_run(&a);
    assert!(matches!(
        verdict(&a),
        Judged::Unverified(Unverified::GatesChanged(_))
    ));
}

#[test]
fn commits_on_another_branch_are_never_taken_for_on_head() {
    let (dir, store) = project();
    let root = dir.path();
    git(root, &["branch", "other"]);
    let a = session(root, &store, "A");
    claim(&a);
    git(root, &["checkout", "--quiet", "other"]);
    // A refused stop here must not record this HEAD as one the claimed commits are on.
    assert!(matches!(
        stop(&a, false),
        AtStop::Judged(StopCall::Refuse { .. })
    ));
    std::fs::write(root.join("ok.txt"), "").unwrap();
    gate_run(&a);
    assert_eq!(verdict(&a), Judged::Unverified(Unverified::CommitsOffHead));
    assert!(matches!(
        stop(&a, false),
        AtStop::Judged(StopCall::Refuse { .. })
    ));
}

#[test]
fn a_stop_on_unverified_work_is_refused_then_handed_to_a_person() {
    let (dir, store) = project();
    let a = session(dir.path(), &store, "A");
    claim(&a);
    let (AtStop::Judged(StopCall::Refuse { reason }), journaled) = stop_journaled(&a, false) else {
        panic!("the stop is refused");
    };
    assert_eq!(journaled, ["refused unverified"]);
    assert!(
        reason.contains("`baton gate run plans/auth --phase 1`"),
        "{reason}"
    );
    // The client comes back at once on the same tree: let through, for a person.
    let (call, journaled) = stop_journaled(&a, true);
    assert!(matches!(
        call,
        AtStop::Judged(StopCall::HandOver {
            rule: Rule::JudgeUnchanged,
            ..
        })
    ));
    assert_eq!(journaled, ["handed-over unverified judge.unchanged"]);
    // Handed over, the claim is not refused again.
    assert_eq!(stop(&a, false), AtStop::Unjudged);
    let v = baton_ops::judge::verdicts(&a, "A").unwrap().unwrap();
    assert_eq!(
        v.judged[0].0.confirm.as_ref().map(|c| c.rule.as_str()),
        Some("judge.unchanged")
    );
}

#[test]
fn separate_stops_on_one_tree_are_refused_at_most_the_cap() {
    let (dir, store) = project();
    let a = session(dir.path(), &store, "A");
    claim(&a);
    for _ in 0..3 {
        assert!(matches!(
            stop(&a, false),
            AtStop::Judged(StopCall::Refuse { .. })
        ));
    }
    assert!(matches!(
        stop(&a, false),
        AtStop::Judged(StopCall::HandOver {
            rule: Rule::JudgeBlockCap,
            ..
        })
    ));
    // The project's setting sets the cap.
    let (dir, store) = project();
    std::fs::write(dir.path().join(".baton.toml"), "[judge]\nrefusals = 1\n").unwrap();
    let a = session(dir.path(), &store, "A");
    claim(&a);
    assert!(matches!(
        stop(&a, false),
        AtStop::Judged(StopCall::Refuse { .. })
    ));
    assert!(matches!(
        stop(&a, false),
        AtStop::Judged(StopCall::HandOver { .. })
    ));
}

#[test]
fn verified_work_passes_and_is_done_with() {
    let (dir, store) = project();
    let a = session(dir.path(), &store, "A");
    claim(&a);
    std::fs::write(dir.path().join("ok.txt"), "").unwrap();
    gate_run(&a);
    assert_eq!(
        stop_journaled(&a, false),
        (
            AtStop::Judged(StopCall::Pass),
            vec!["verified verified".to_string()]
        )
    );
    // Done with: the next stop has nothing to judge.
    assert!(
        baton_ops::judge::verdicts(&a, "A")
            .unwrap()
            .unwrap()
            .judged
            .is_empty()
    );
}

/// The condition `baton goal plans/auth --phase 1` prints.
const GOAL: &str = "Phase 1 of plans/auth is complete: after the last change to the files, the output of `baton verdict plans/auth --phase 1` starts with `verified:`. Nothing else meets this goal.";

fn with_goal(condition: &str, mark: &str) -> StopContext {
    StopContext {
        goal: Some(ClientGoal {
            condition: condition.into(),
            mark: mark.into(),
        }),
        ..StopContext::default()
    }
}

fn refused(call: AtStop) -> String {
    match call {
        AtStop::Judged(StopCall::Refuse { reason }) => reason,
        other => panic!("not refused: {other:?}"),
    }
}

/// A goal the session names is a claim of the work its `baton verdict` names: unverified while
/// nothing is recorded, then the recorded completion (whoever recorded it), judged as any
/// claim, and done with once verified.
#[test]
fn a_goal_that_names_a_phase_is_the_sessions_claim() {
    let (dir, store) = project();
    let root = dir.path();
    let a = session(root, &store, "A");
    // A goal that names no work of baton's is not its to judge, and leaves nothing behind.
    let other = with_goal("all tests pass", "x");
    assert_eq!(stop_with(&a, other).0, AtStop::Unjudged);
    assert!(baton_ops::judge::verdicts(&a, "A").unwrap().is_none());
    // Nor is one in plan mode, which is not taken up either.
    let planning = StopContext {
        plan_mode: true,
        ..with_goal(GOAL, "g1")
    };
    assert_eq!(stop_with(&a, planning), (AtStop::Unjudged, vec![]));
    assert!(baton_ops::judge::verdicts(&a, "A").unwrap().is_none());

    // Named, with nothing recorded: refused, and told how to record it.
    let (call, events) = stop_with(&a, with_goal(GOAL, "g1"));
    let reason = refused(call);
    assert!(
        reason.contains(
            "Phase 1 of plans/auth is the session's goal, but it is not recorded complete: finish it, record it with `baton ledger complete plans/auth --phase 1 --tests <passed>/<run>`, then run `baton gate run plans/auth --phase 1`."
        ),
        "{reason}"
    );
    assert_eq!(events, ["claimed unverified goal", "refused unverified"]);
    // The same goal is taken up once; its claim stands.
    let (call, events) = stop_with(&a, with_goal(GOAL, "g1"));
    refused(call);
    assert_eq!(events, ["refused unverified"]);

    // Recorded complete, by no session at all: the goal's claim is that completion now.
    let nobody = Ctx::in_memory(
        root.to_path_buf(),
        None,
        "2026-03-01T10:05:00Z".parse().unwrap(),
        store.handle(),
    );
    record_complete(&nobody);
    let reason = refused(stop_with(&a, with_goal(GOAL, "g1")).0);
    assert!(
        reason.contains(
            "Phase 1 of plans/auth is claimed complete, but gate unit has no result on this tree"
        ),
        "{reason}"
    );
    std::fs::write(root.join("ok.txt"), "").unwrap();
    gate_run(&a);
    let (call, events) = stop_with(&a, with_goal(GOAL, "g1"));
    assert_eq!(call, AtStop::Judged(StopCall::Pass));
    assert_eq!(events, ["verified verified"]);
    // Done with: the goal as it was taken up does not come back, a goal set anew does.
    std::fs::write(root.join("src.txt"), "changed after\n").unwrap();
    assert_eq!(
        stop_with(&a, with_goal(GOAL, "g1")),
        (AtStop::Unjudged, vec![])
    );
    let (call, events) = stop_with(&a, with_goal(GOAL, "g2"));
    refused(call);
    assert_eq!(events, ["claimed unverified goal", "refused unverified"]);
}

#[test]
fn the_guards_let_a_stop_through_unjudged() {
    let (dir, store) = project();
    let a = session(dir.path(), &store, "A");
    claim(&a);
    // Another session's stop: the claim is not its own.
    let b = session(dir.path(), &store, "B");
    assert_eq!(stop(&b, false), AtStop::Unjudged);
    for guard in [
        StopContext {
            plan_mode: true,
            ..StopContext::default()
        },
        StopContext {
            background: true,
            ..StopContext::default()
        },
        StopContext {
            interrupted: true,
            ..StopContext::default()
        },
    ] {
        assert_eq!(
            at_stop(
                &a,
                "A",
                &guard,
                &|| panic!("opened the store"),
                &mut |_, e| panic!("journaled {e}")
            )
            .unwrap(),
            AtStop::Unjudged,
            "{guard:?}"
        );
    }
    // Turned off for one run, and in the project's settings.
    let mut off = a.clone();
    off.settings.judge_off = true;
    assert_eq!(stop(&off, false), AtStop::Unjudged);
    std::fs::write(dir.path().join(".baton.toml"), "[judge]\nenabled = false\n").unwrap();
    assert_eq!(stop(&a, false), AtStop::Unjudged);
    // A setting that cannot be read is an error naming the file: the hook lets the stop
    // through and says why.
    std::fs::write(
        dir.path().join(".baton.toml"),
        "[judge]\nenabled = \"no\"\n",
    )
    .unwrap();
    let err = at_stop(
        &a,
        "A",
        &StopContext::default(),
        &|| panic!("opened the store"),
        &mut |_, _| {},
    )
    .unwrap_err();
    assert!(err.message.contains(".baton.toml"), "{}", err.message);
    // Nothing was refused through all of it.
    std::fs::remove_file(dir.path().join(".baton.toml")).unwrap();
    assert!(matches!(
        stop(&a, false),
        AtStop::Judged(StopCall::Refuse { .. })
    ));
}

#[test]
fn the_tree_id_sees_what_git_status_sees_and_nested_repositories_but_not_ledgers() {
    let (dir, store) = project();
    let root = dir.path();
    let a = session(root, &store, "A");
    let id = || baton_ops::judge::tree_now(&a).unwrap().id();
    let clean = id();
    assert_eq!(clean.len(), 7, "{clean}");
    // A ledger is bookkeeping; a file of the same name that is no ledger is work.
    ledgers::init(&a, Path::new("plans/auth")).unwrap();
    assert_eq!(id(), clean);
    std::fs::write(root.join("STATE.md"), "not a ledger\n").unwrap();
    let with_file = id();
    assert_ne!(with_file, clean);
    std::fs::write(root.join("STATE.md"), "not a ledger either\n").unwrap();
    assert_ne!(id(), with_file);
    std::fs::remove_file(root.join("STATE.md")).unwrap();
    assert_eq!(id(), clean);
    // A repository nested in the tree is what its own HEAD and changes are.
    let nested = root.join("vendor");
    std::fs::create_dir(&nested).unwrap();
    git(&nested, &["init", "--quiet"]);
    std::fs::write(nested.join("lib.txt"), "one\n").unwrap();
    let before = id();
    std::fs::write(nested.join("lib.txt"), "two\n").unwrap();
    assert_ne!(id(), before);
}

/// Claude Code's goal, read from its transcript backwards; after a long read, the next stop
/// reads only what the client wrote since (what it read before is not read again).
#[test]
fn a_claude_goal_is_read_once_from_the_end_of_its_transcript() {
    use baton_core::client::Client;
    use baton_ops::evidence::client_goal;
    use std::io::Write;
    let (dir, store) = project();
    let a = session(dir.path(), &store, "A");
    let files = baton_store::sessions::SessionFiles::new(&a.layout().unwrap(), "claude", "A");
    let path = dir.path().join("transcript.jsonl");
    let goal_line = |met: bool| {
        format!(
            "{{\"type\":\"attachment\",\"uuid\":\"u\",\"attachment\":{{\"type\":\"goal_status\",\"met\":{met},\"condition\":\"{GOAL}\"}}}}\n"
        )
    };
    let filler = format!(
        "{{\"type\":\"assistant\",\"message\":{{\"content\":\"{}\"}}}}\n",
        "x".repeat(1000)
    );
    let mut text = goal_line(false);
    for _ in 0..400 {
        text.push_str(&filler);
    }
    std::fs::write(&path, &text).unwrap();
    let read_from = |transcript: &Path| {
        client_goal(
            Client::Claude.def(),
            &a.settings,
            &a.dir,
            &files,
            "A",
            Some(transcript),
        )
        .unwrap()
    };
    let read = || read_from(&path);
    let first = read().expect("the goal");
    assert_eq!(first.condition, GOAL);
    assert!(files.goal_scan().is_some(), "a long read is kept");
    // The goal's line blanked where it was read: the next stop does not read it again.
    let blanked = text.replacen("goal_status", "xxxx_status", 1);
    std::fs::write(&path, &blanked).unwrap();
    assert_eq!(read(), Some(first.clone()));
    // Met, as the client writes it after its check: over.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    f.write_all(goal_line(true).as_bytes()).unwrap();
    assert_eq!(read(), None);
    // No transcript yet: no goal, and no error.
    assert_eq!(read_from(&dir.path().join("none.jsonl")), None);
}
