//! Two guards a resuming session relies on, from the originating protocols' words.
//!
//! autonomous-dev's run lock (seed 002) is held while its process lives: "If a concurrent
//! process holds the lock, BLOCK". A holder that is still running keeps the lock however long it
//! went without a heartbeat (a long test suite inside one tool call sends none); only its death
//! frees the lock.
//!
//! The ticket loop (seed 000): "On resume, the conductor re-reads the Brief or Plan before
//! spawning the next worker. This ensures the governing artifact is always in context". With
//! both a Brief and a Plan recorded, an accept prints both.

use serde_json::Value;

use crate::common::{Holder, TestEnv};
use crate::runs::PROJECT;

const PLAN: &str = "docs/plan.md";

#[test]
fn a_running_holder_keeps_its_run_lock_past_the_heartbeat_ttl_and_loses_it_when_it_dies() {
    let env = TestEnv::new();
    env.write(".claude/PROJECT.md", PROJECT);
    env.write(PLAN, "# Plan\n\n1. Edit src/run.rs.\n");
    env.git(&["add", "."]);
    env.git(&["commit", "--quiet", "-m", "alignment and plan"]);
    env.set_age(PLAN, 0);

    let mut holder = Holder::start();
    let created = env.baton(
        "A",
        0,
        &[
            "--json",
            "run",
            "new",
            "--plan",
            PLAN,
            "--pid",
            &holder.pid(),
        ],
    );
    created.assert_code(0);
    let id = created.json()["run_id"].as_str().unwrap().to_string();
    let before = env.snapshot();

    // 25 minutes without a heartbeat, past the 10-minute TTL, while the holder still runs (a
    // long tool call): a second coordinator is blocked.
    let other = Holder::start();
    let out = env.baton(
        "B",
        25,
        &["--json", "run", "resume", &id, "--pid", &other.pid()],
    );
    out.assert_code(3);
    let json = out.json();
    assert_eq!(json["verdict"], "blocked", "{json}");
    assert_eq!(json["reasons"][0]["rule"], "run.lock-held", "{json}");
    assert_eq!(
        json["reasons"][0]["message"],
        format!(
            "Another /implement is active on run_id {id}; wait for it to complete or use a fresh run_id."
        )
        .as_str(),
        "{json}"
    );
    assert_eq!(json["lock_acquired"], false, "{json}");
    let evidence = lock_evidence(&json);
    assert!(
        evidence.contains(&format!("pid {} is still running", holder.pid()))
            && evidence.contains("25m ago")
            && evidence.contains("10m TTL"),
        "the evidence says the process decided, and how old the heartbeat is: {evidence}"
    );
    assert_eq!(env.snapshot(), before, "a blocked resume changes nothing");

    // Releasing it for the holder is refused too, even with `--force`: the lock is live.
    for extra in [&[][..], &["--force"][..]] {
        let mut args = vec!["--json", "run", "release", &id];
        args.extend_from_slice(extra);
        let out = env.baton("B", 25, &args);
        out.assert_code(3);
        assert_eq!(
            out.json()["reasons"][0]["rule"],
            "run.lock-held",
            "{}",
            out.stdout
        );
    }
    assert_eq!(env.snapshot(), before);

    // The holder itself is still the holder, and its heartbeat refreshes the lease.
    let beat = env.baton(
        "A",
        26,
        &["--json", "run", "heartbeat", &id, "--pid", &holder.pid()],
    );
    beat.assert_code(0);
    assert_eq!(
        env.read_run(&id)["lease"]["heartbeat_at"],
        crate::common::at(26).as_str(),
        "{}",
        beat.stdout
    );

    // The holder's process dies: the lock is taken over with the next epoch.
    holder.kill();
    let out = env.baton(
        "B",
        27,
        &["--json", "run", "resume", &id, "--pid", &other.pid()],
    );
    out.assert_code(0);
    let json = out.json();
    assert_eq!(json["lock_acquired"], true, "{json}");
    assert_eq!(json["epoch"], 2, "{json}");
    assert!(lock_evidence(&json).contains("gone"), "{json}");
    let file = env.read_run(&id);
    assert_eq!(file["lease"]["session"], "B", "{file}");
    assert_eq!(file["lease"]["pid"].as_u64(), Some(u64::from(other.0.id())));
}

/// The lock check's evidence in a `run resume --json` answer.
#[track_caller]
fn lock_evidence(json: &Value) -> String {
    json["checks"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["check"] == "lock"))
        .and_then(|c| c["evidence"].as_str())
        .unwrap_or_else(|| panic!("no lock check: {json}"))
        .to_string()
}

#[test]
fn accepting_a_plan_tier_loop_prints_both_the_brief_and_the_plan() {
    let env = TestEnv::new();
    env.write(
        "docs/brief.md",
        "# Brief\nGoal: make the login survive a restart.\n",
    );
    env.write(
        "plans/login/PLAN.md",
        "# Plan\n1. Unit one: persist the session.\n",
    );
    env.write("plans/login/unit-2.md", "# Unit two\n");
    env.git(&["add", "."]);
    env.git(&["commit", "--quiet", "-m", "brief and plan"]);
    env.baton("A", 0, &["loop", "init", "PROJ-1"])
        .assert_code(0);
    env.baton(
        "A",
        0,
        &[
            "loop",
            "artifact",
            "PROJ-1",
            "--tier",
            "plan",
            "--brief",
            "docs/brief.md",
            "--plan",
            "plans/login",
        ],
    )
    .assert_code(0);
    env.set_phase("A", 1, "PROJ-1", "qa", "spawned")
        .assert_code(0);
    env.baton("A", 2, &["loop", "interrupt", "PROJ-1"])
        .assert_code(0);

    let out = env.baton("B", 3, &["resume", "accept", "PROJ-1"]);
    out.assert_code(0);
    for expected in [
        "--- governing Brief:",
        "Goal: make the login survive a restart.",
        "--- governing Plan:",
        "PLAN.md",
        "unit-2.md",
        "1. Unit one: persist the session.",
    ] {
        assert!(
            out.stdout.contains(expected),
            "{expected:?} missing:\n{}",
            out.stdout
        );
    }
    let brief_at = out.stdout.find("--- governing Brief:").unwrap();
    let plan_at = out.stdout.find("--- governing Plan:").unwrap();
    assert!(brief_at < plan_at, "the Brief first:\n{}", out.stdout);

    // The same, under --json, from a third session.
    env.baton("B", 4, &["loop", "interrupt", "PROJ-1"])
        .assert_code(0);
    let out = env.baton("C", 5, &["--json", "resume", "accept", "PROJ-1"]);
    out.assert_code(0);
    let json = out.json();
    let artifacts = json["artifacts"]
        .as_array()
        .unwrap_or_else(|| panic!("no artifacts: {json}"));
    assert_eq!(artifacts.len(), 2, "{json}");
    assert_eq!(artifacts[0]["kind"], "brief", "{json}");
    assert!(
        artifacts[0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("Goal: make the login survive a restart.")),
        "{json}"
    );
    assert_eq!(artifacts[1]["kind"], "plan", "{json}");
    assert_eq!(
        artifacts[1]["files"],
        serde_json::json!(["PLAN.md", "unit-2.md"]),
        "{json}"
    );
    assert!(
        artifacts[1]["index"]
            .as_str()
            .is_some_and(|t| t.contains("1. Unit one: persist the session.")),
        "{json}"
    );
}
