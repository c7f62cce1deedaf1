//! What a session keeps while it is between two pieces of its own work: its batch stays live
//! while it takes turns before the next ticket's loop exists (seed 000, batch-state
//! coexistence), and after a compaction its plan ledger is its own to re-derive, not another
//! session's live work (seed 003: "after context compaction … what STATE.md + git say happened
//! is the record").

use std::path::Path;

use serde_json::Value;

use crate::common::{TestEnv, at, hook_context};
use crate::hooks::run_hook;

const A: &str = "5ba716a7-9ce8-4b0f-8d6e-35de294ea197";
const B: &str = "0d3c1f52-7a41-4e0b-9b6e-2f8a4c5d6e7f";

/// A captured Claude Code payload with its session id replaced by `session`.
fn claude(event: &str, session: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/clients/claude-code-2.1.332")
        .join(format!("{event}.json"));
    let mut v: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    v["session_id"] = session.into();
    v
}

fn hook(env: &TestEnv, event: &str, payload: &Value, now: &str) -> crate::common::Run {
    let bytes = serde_json::to_vec(payload).unwrap();
    let out = run_hook(env, &["hook", "claude", event], &bytes, now, &[]);
    out.assert_code(0);
    out
}

/// "Another batch session is active…": the owner finished ticket 1 and keeps taking turns on
/// its way to ticket 2, whose loop does not exist yet. Its per-turn hook keeps the batch live,
/// so 13 minutes after ticket 1's last write a second session's batch is refused and its single
/// ticket is warned, rather than the first session's batch being archived.
#[test]
fn a_batch_stays_live_while_its_owner_takes_turns_between_tickets() {
    let env = TestEnv::new();
    env.baton(A, 0, &["batch", "start", "PROJ-1", "PROJ-2"])
        .assert_code(0);
    env.baton(A, 0, &["loop", "init", "PROJ-1"]).assert_code(0);
    env.baton(A, 1, &["loop", "finish", "PROJ-1", "--status", "complete"])
        .assert_code(0);
    env.baton(A, 1, &["batch", "ticket", "PROJ-1", "--status", "complete"])
        .assert_code(0);
    let stop = claude("Stop", A);
    for minute in [4, 8, 12] {
        hook(&env, "Stop", &stop, &at(minute));
    }
    let batch = env.read_batch();
    assert_eq!(batch["status"], "active", "{batch}");
    assert_eq!(batch["session_id"], A, "{batch}");
    assert_eq!(batch["updated_at"], at(12), "{batch}");

    let out = env.baton(B, 13, &["batch", "start", "PROJ-7", "PROJ-8"]);
    out.assert_code(3);
    assert!(
        out.stdout.contains("Another batch session is active"),
        "{}",
        out.stdout
    );
    assert_eq!(env.read_batch()["session_id"], A, "the batch is still A's");
    assert!(env.archived().is_empty(), "{:?}", env.archived());

    let out = env.baton(B, 13, &["loop", "init", "PROJ-9"]);
    out.assert_code(0);
    let said = format!("{}{}", out.stdout, out.stderr);
    // Text names the owner by its short id; `--json` has it whole.
    assert!(
        said.contains("is active in this project") && said.contains(&A[..8]),
        "{said}"
    );
    assert!(!said.contains(A), "{said}");
    let json = env.baton(B, 13, &["--json", "loop", "init", "PROJ-10"]);
    assert!(json.stdout.contains(A), "{}", json.stdout);
}

/// A paused batch is left as the pause left it: the per-turn refresh does not write it.
#[test]
fn a_paused_batch_is_not_refreshed_by_its_owners_turns() {
    let env = TestEnv::new();
    env.baton(A, 0, &["batch", "start", "PROJ-1", "PROJ-2"])
        .assert_code(0);
    env.baton(A, 1, &["pause"]).assert_code(0);
    let before = env.read_batch();
    hook(&env, "Stop", &claude("Stop", A), &at(4));
    assert_eq!(env.read_batch(), before);
}

/// A session that appended to a plan ledger and was compacted hears of that ledger at its
/// session start, with the re-derive that makes STATE.md + git the record; another session
/// still leaves it alone.
#[test]
fn a_compacted_session_is_handed_its_own_recent_ledger() {
    let env = TestEnv::new();
    env.write("plans/auth/phase-1.md", "# Phase 1\n");
    env.write("plans/auth/phase-2.md", "# Phase 2\n");
    env.baton(A, 0, &["ledger", "init", "plans/auth"])
        .assert_code(0);
    env.run(
        None,
        &at(0),
        &[
            "ledger",
            "start",
            "plans/auth",
            "--phase",
            "1",
            "--session",
            A,
        ],
    )
    .assert_code(0);

    let mut compact = claude("SessionStart", A);
    compact["source"] = "compact".into();
    let said = hook_context(&hook(&env, "SessionStart", &compact, &at(2)));
    assert!(said.contains("plans/auth"), "{said}");
    assert!(
        said.contains("baton ledger derive plans/auth --append"),
        "{said}"
    );

    // Another session: the ledger was written 2 minutes ago by a live session, hands off.
    let mut other = claude("SessionStart", B);
    other["source"] = "startup".into();
    let said = hook_context(&hook(&env, "SessionStart", &other, &at(2)));
    assert!(!said.contains("plans/auth"), "{said}");
    // It shows whose it is.
    let seen = env.baton(B, 2, &["--json", "resume"]).json();
    let ledger = ledger_work(&seen);
    assert_eq!(
        (
            &ledger["verdict"],
            &ledger["owner"]["session"],
            &ledger["owner"]["mine"]
        ),
        (&"live".into(), &A.into(), &false.into()),
        "{seen}"
    );
    let seen = env.baton(A, 2, &["--json", "resume"]).json();
    let ledger = ledger_work(&seen);
    assert_eq!(
        (&ledger["verdict"], &ledger["owner"]["mine"]),
        (&"own".into(), &true.into()),
        "{seen}"
    );
}

fn ledger_work(survey: &Value) -> Value {
    survey["work"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["kind"] == "ledger")
        .unwrap_or_else(|| panic!("no ledger: {survey}"))
        .clone()
}

/// A line appended after this session's (by hand, or by a writer with no session) makes the
/// ledger nobody's known work again: within the window it stays live, hands off, as it would be
/// with no writer recorded at all.
#[test]
fn a_ledger_appended_to_since_is_not_handed_back() {
    let env = TestEnv::new();
    env.write("plans/auth/phase-1.md", "# Phase 1\n");
    env.baton(A, 0, &["ledger", "init", "plans/auth"])
        .assert_code(0);
    env.baton(A, 0, &["ledger", "start", "plans/auth", "--phase", "1"])
        .assert_code(0);
    env.run(
        None,
        &at(1),
        &[
            "ledger",
            "append",
            "plans/auth",
            "phase 1: BLOCKED — waiting on review @ 2026-03-01T12:01:00Z",
        ],
    )
    .assert_code(0);
    let mut compact = claude("SessionStart", A);
    compact["source"] = "compact".into();
    let said = hook_context(&hook(&env, "SessionStart", &compact, &at(2)));
    assert!(!said.contains("plans/auth"), "{said}");
    let seen = env.baton(A, 2, &["--json", "resume"]).json();
    let ledger = ledger_work(&seen);
    assert_eq!(
        (&ledger["verdict"], &ledger["owner"]["session"]),
        (&"live".into(), &Value::Null),
        "{seen}"
    );
}

/// A session that ends with its batch active leaves the batch interrupted (the originating
/// protocol's mark on exit, with a fresh timestamp), so the next session is offered it at once
/// and takes it over with `batch resume`, rather than finding it live for 10 more minutes.
#[test]
fn a_session_end_interrupts_the_batch_it_owns() {
    let env = TestEnv::new();
    env.baton(A, 0, &["batch", "start", "PROJ-1", "PROJ-2"])
        .assert_code(0);
    let mut end = claude("SessionEnd", A);
    end["reason"] = "logout".into();
    hook(&env, "SessionEnd", &end, &at(2));
    let batch = env.read_batch();
    assert_eq!(
        (
            &batch["status"],
            &batch["interrupt_reason"],
            &batch["interrupted_at"],
            &batch["updated_at"]
        ),
        (
            &"interrupted".into(),
            &"session_expiry".into(),
            &at(2).into(),
            &at(2).into()
        ),
        "{batch}"
    );
    let events: Vec<Value> = env.journal(baton_store::JournalTarget::Batch);
    assert_eq!(events.last().unwrap()["event"], "interrupt", "{events:?}");

    let out = env.baton(B, 3, &["--json", "batch", "resume"]);
    out.assert_code(0);
    assert_eq!(env.read_batch()["session_id"], B);
}

/// A session end that is no end (`resume`) leaves the batch as it is; a paused batch keeps its
/// pause as the record of how it stopped.
#[test]
fn a_session_end_leaves_a_paused_batch_and_a_resumed_session_alone() {
    let env = TestEnv::new();
    env.baton(A, 0, &["batch", "start", "PROJ-1", "PROJ-2"])
        .assert_code(0);
    let mut end = claude("SessionEnd", A);
    end["reason"] = "resume".into();
    hook(&env, "SessionEnd", &end, &at(1));
    assert_eq!(env.read_batch()["status"], "active");
    env.baton(A, 2, &["pause"]).assert_code(0);
    let before = env.read_batch();
    end["reason"] = "logout".into();
    hook(&env, "SessionEnd", &end, &at(3));
    assert_eq!(env.read_batch(), before);
}

/// A session that paused its batch with a ticket's loop active, then ended: the loop's
/// interrupt is no sign of life for the batch, so the pause still covers it and the next
/// session is offered it as paused (not shown a quiet batch it may not take).
#[test]
fn a_paused_batch_stays_paused_when_its_session_ends_with_a_loop_active() {
    let env = TestEnv::new();
    env.baton(A, 0, &["batch", "start", "PROJ-1", "PROJ-2"])
        .assert_code(0);
    env.baton(A, 1, &["loop", "init", "PROJ-1"]).assert_code(0);
    env.baton(A, 2, &["pause", "--reason", "end of day"])
        .assert_code(0);
    let mut end = claude("SessionEnd", A);
    end["reason"] = "logout".into();
    hook(&env, "SessionEnd", &end, &at(3));
    let all = env.baton(B, 30, &["--json", "resume"]).json();
    let batch = all["packet"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["kind"] == "batch")
        .unwrap_or_else(|| panic!("the batch is offered: {all}"));
    assert_eq!(batch["class"], "pause", "{batch}");
    assert_eq!(batch["accept"], "baton batch resume", "{batch}");
}

/// A plan ledger another session was appending to through baton, quiet for 25 minutes with
/// nothing saying that session stopped, may be its CI wait: one informational line, no
/// derive handed over. A ledger nobody recorded writing is derived as before.
#[test]
fn another_sessions_quiet_ledger_is_not_handed_over() {
    let env = TestEnv::new();
    env.write("plans/auth/plan.md", "# Plan\n");
    env.baton(A, 0, &["ledger", "init", "plans/auth"])
        .assert_code(0);
    env.baton(A, 0, &["ledger", "start", "plans/auth", "--phase", "1"])
        .assert_code(0);
    let all = env.baton(B, 25, &["--json", "resume"]).json();
    assert_eq!(all["verdict"], "none", "{all}");
    let row = all["work"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["kind"] == "ledger")
        .unwrap();
    assert_eq!(row["verdict"], "quiet", "{row}");
    let aside = all["packet"]["not_offered"][0].as_str().unwrap();
    assert!(
        aside.starts_with("ledger plans/auth: a session started for it asks with `baton ledger derive plans/auth --append`"),
        "{aside}"
    );
    assert!(aside.ends_with("(resume.quiet-aside)"), "{aside}");
    // Its own session, back later, is offered it.
    let own = env.baton(A, 25, &["--json", "resume"]).json();
    assert_eq!(own["packet"]["items"][0]["kind"], "ledger", "{own}");
    // Appended by hand since (no session recorded): the run-state protocol's own resume.
    let text = std::fs::read_to_string(env.repo.join("plans/auth/STATE.md")).unwrap();
    env.write(
        "plans/auth/STATE.md",
        &format!("{text}phase 1: gate lint → PASS (evidence: cargo clippy → exit 0)\n"),
    );
    let all = env.baton(B, 25, &["--json", "resume"]).json();
    assert_eq!(all["packet"]["items"][0]["verdict"], "derive", "{all}");
}

/// Seed 004's first step and seed 000's "before reading AGENTS.md": a session back from a
/// compaction is handed its own active loop, run and batch, where each stands, as well as its
/// ledger; another session starting is handed none of them (they are live and not its own).
#[test]
fn a_compacted_session_is_handed_its_own_loop_run_and_batch() {
    let env = TestEnv::new();
    env.baton(A, 0, &["batch", "start", "PROJ-1", "PROJ-2"])
        .assert_code(0);
    env.baton(A, 0, &["loop", "init", "PROJ-1"]).assert_code(0);
    env.set_phase(A, 1, "PROJ-1", "qa", "spawned")
        .assert_code(0);
    let run = env.baton(A, 1, &["run", "new"]);
    run.assert_code(0);
    let run_id = run.stdout.trim().to_string();

    let mut compact = claude("SessionStart", A);
    compact["source"] = "compact".into();
    let said = hook_context(&hook(&env, "SessionStart", &compact, &at(2)));
    for own in ["PROJ-1", "qa iteration 1", run_id.as_str(), "batch"] {
        assert!(said.contains(own), "{own}: {said}");
    }
    assert!(
        said.contains("not from what the session remembers"),
        "{said}"
    );

    let mut other = claude("SessionStart", B);
    other["source"] = "startup".into();
    let said = hook_context(&hook(&env, "SessionStart", &other, &at(2)));
    assert!(
        !said.contains("PROJ-1") && !said.contains(&run_id),
        "{said}"
    );
}
