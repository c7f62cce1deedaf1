//! Compatibility with the files the originating ticket loop (DinoStack's `/implement-ticket`
//! and its Stop hook) writes: each state file here is written by the test exactly in that
//! project's documented shape, then read, resumed and written back by baton.

use serde_json::{Value, json};

use crate::common::{TestEnv, at};

/// A loop-state as the originating conductor writes it (its "Full P2 schema"), keyed by the
/// seed's file name, with the liveness field its write contract sets (`updated_at`).
fn dinostack_loop(session: &str, status: &str, phase: &str, action: &str, minute: i64) -> Value {
    json!({
        "schema_version": 1,
        "session_id": session,
        "ticket_id": "ABC-123",
        "branch": "abc-123",
        "repo": "acme/app",
        "base_branch": "main",
        "status": status,
        "interrupted_at": null,
        "interrupt_reason": null,
        "last_phase": phase,
        "last_phase_action": action,
        "loop_state": {
            "phase": "skeptic",
            "iteration": 1,
            "max_iterations": 3,
            "findings_log": [],
            "qa_failures_log": [],
            "last_engineer_summary": null,
            "termination_reason": null
        },
        "last_updated": at(minute),
    })
}

/// What the originating Stop hook does to an active loop: `interrupted`, `interrupted_at` as
/// JavaScript's `toISOString()` writes it, reason `unknown`, nothing else touched.
fn stop_hook_interrupt(state: &mut Value, minute: i64) {
    state["status"] = json!("interrupted");
    state["interrupted_at"] = json!(at(minute).replace('Z', ".000Z"));
    state["interrupt_reason"] = json!("unknown");
}

/// A batch-state as the originating conductor writes it (its `batch-state.json` schema), with
/// one `replan_log` entry in its `{ts, action, ticket_id, detail}` shape.
fn dinostack_batch(session: Option<&str>, status: &str, minute: i64) -> Value {
    json!({
        "schema_version": 1,
        "session_id": session,
        "batch_id": "ABC-batch-2026-03-01T11:00:00Z-1a2b",
        "status": status,
        "created_at": at(minute - 60),
        "updated_at": at(minute),
        "last_updated_phase": "phase-6",
        "interrupted_at": null,
        "interrupt_reason": null,
        "paused_at": null,
        "pause_reason": null,
        "wallclock_cap_min": 90,
        "wallclock_started_at": at(minute - 60),
        "tickets": [
            {"ticket_id": "ABC-121", "status": "skipped_already_merged", "cluster_id": "c1",
             "depends_on": [], "started_at": null, "ended_at": null, "branch": null,
             "pr_number": null, "last_summary": null},
            {"ticket_id": "ABC-122", "status": "complete", "cluster_id": "c1", "depends_on": [],
             "started_at": at(minute - 50), "ended_at": at(minute - 20), "branch": "abc-122",
             "pr_number": 41, "last_summary": "done"},
            {"ticket_id": "ABC-123", "status": "pending", "cluster_id": "c2",
             "depends_on": ["ABC-122"], "started_at": null, "ended_at": null, "branch": null,
             "pr_number": null, "last_summary": null}
        ],
        "replan_log": [
            {"ts": at(minute - 40), "action": "drop_merged", "ticket_id": "ABC-121",
             "detail": "merged elsewhere in #40"}
        ],
        "resume_invocation_hint": "/implement-ticket"
    })
}

#[test]
fn a_batch_state_as_dinostack_writes_it_loads_and_keeps_its_shape() {
    let env = TestEnv::new();
    let original = dinostack_batch(Some("A"), "active", 0);
    env.write_batch(&original);

    let show = env.baton("A", 1, &["--json", "batch", "show"]);
    show.assert_code(0);
    assert!(
        show.json()["next"].as_str().unwrap().contains("ABC-123"),
        "{}",
        show.stdout
    );

    env.baton(
        "A",
        2,
        &[
            "batch",
            "ticket",
            "ABC-123",
            "--status",
            "blocked",
            "--summary",
            "waits on the API team",
            "--replan",
            "blocked on the API",
        ],
    )
    .assert_code(0);
    let after = env.read_batch();
    // Every field the originating schema has survives, with its value where baton did not
    // change it.
    for key in [
        "batch_id",
        "created_at",
        "last_updated_phase",
        "wallclock_cap_min",
        "wallclock_started_at",
        "resume_invocation_hint",
        "paused_at",
    ] {
        assert_eq!(after[key], original[key], "{key} survives");
    }
    assert_eq!(after["tickets"][1], original["tickets"][1]);
    assert_eq!(after["tickets"][2]["status"], "blocked");
    assert_eq!(after["tickets"][2]["last_summary"], "waits on the API team");
    assert_eq!(after["tickets"][2]["ended_at"], at(2));
    assert_eq!(after["tickets"][2]["cluster_id"], "c2");
    // replan_log is append-only and every entry is in the originating shape.
    let log = after["replan_log"].as_array().unwrap();
    assert_eq!(log[0], original["replan_log"][0]);
    assert_eq!(
        log[1],
        json!({"ts": at(2), "action": "re_sequence", "ticket_id": "ABC-123", "detail": "blocked on the API"})
    );
    assert_eq!(after["updated_at"], at(2));

    // Only blocked tickets left: the next step says so instead of naming a ticket to run.
    let show = env.baton("A", 3, &["batch", "show"]);
    assert!(
        show.stdout
            .contains("only blocked tickets are left (ABC-123)")
    );
}

#[test]
fn baton_writes_only_the_originating_status_enums() {
    let env = TestEnv::new();
    env.baton("A", 0, &["batch", "start", "ABC-1", "ABC-2"])
        .assert_code(0);
    let batch = env.read_batch();
    assert_eq!(batch["status"], "active");
    assert_eq!(batch["wallclock_started_at"], at(0));
    assert_eq!(batch["interrupt_reason"], Value::Null);
    assert_eq!(batch["tickets"][0]["status"], "pending");

    for status in [
        "in_progress",
        "blocked",
        "skipped_already_merged",
        "complete",
    ] {
        env.baton("A", 1, &["batch", "ticket", "ABC-1", "--status", status])
            .assert_code(0);
    }
    for bad in ["stalled", "skipped"] {
        env.baton("A", 1, &["batch", "ticket", "ABC-1", "--status", bad])
            .assert_code(2);
    }
    env.baton("A", 2, &["batch", "finish", "--status", "abandoned"])
        .assert_code(2);
    env.baton("A", 2, &["batch", "finish", "--status", "stalled"])
        .assert_code(0);
    assert_eq!(env.read_batch()["status"], "stalled");

    // Findings are objects with a status, as the originating findings_log holds them.
    env.baton("A", 3, &["loop", "init", "ABC-3"]).assert_code(0);
    env.baton(
        "A",
        4,
        &[
            "loop",
            "set",
            "ABC-3",
            "--phase",
            "skeptic",
            "--action",
            "returned",
            "--finding",
            "Null deref in user service",
        ],
    )
    .assert_code(0);
    let findings = &env.read_loop("ABC-3")["loop_state"]["findings_log"];
    assert_eq!(
        findings[0],
        json!({"id": "null-deref-in-user-service", "title": "Null deref in user service",
               "first_raised": 1, "status": "open"})
    );
    env.baton(
        "A",
        5,
        &[
            "loop",
            "set",
            "ABC-3",
            "--phase",
            "engineer",
            "--action",
            "returned",
            "--finding-status",
            "null-deref-in-user-service=addressed",
        ],
    )
    .assert_code(0);
    let state = env.read_loop("ABC-3");
    assert_eq!(
        state["loop_state"]["findings_log"][0]["status"],
        "addressed"
    );
}

#[test]
fn loop_state_phase_names_the_loop_and_a_qa_fix_pass_stays_6b() {
    let env = TestEnv::new();
    env.baton("A", 0, &["loop", "init", "ABC-1", "--phase", "qa"])
        .assert_code(0);
    let out = env.set_phase("A", 1, "ABC-1", "engineer", "spawned");
    out.assert_code(0);
    assert!(
        out.stdout.starts_with("[phase: 6b engineer"),
        "{}",
        out.stdout
    );
    let state = env.read_loop("ABC-1");
    assert_eq!(state["last_phase"], "engineer");
    assert_eq!(state["loop_state"]["phase"], "qa");
    env.set_phase("A", 2, "ABC-1", "quality_gate", "engineer_spawned")
        .assert_code(0);
    let state = env.read_loop("ABC-1");
    assert_eq!(state["last_phase"], "quality_gate");
    assert_eq!(state["loop_state"]["phase"], "qa");
    env.set_phase("A", 3, "ABC-1", "ci_loop", "ci_poll_pending")
        .assert_code(0);
    assert_eq!(env.read_loop("ABC-1")["loop_state"]["phase"], "qa");
}

/// A repository whose `origin` is a bare clone, with `origin/HEAD` pointing at `main`.
fn with_origin(env: &TestEnv) {
    let origin = env.repo.parent().unwrap().join("origin.git");
    env.git(&[
        "clone",
        "--quiet",
        "--bare",
        env.repo.to_str().unwrap(),
        origin.to_str().unwrap(),
    ]);
    env.git(&["remote", "add", "origin", origin.to_str().unwrap()]);
    env.git(&["fetch", "--quiet", "origin"]);
    env.git(&["remote", "set-head", "origin", "main"]);
}

#[test]
fn base_branch_is_recorded_as_a_branch_name_and_compared_with_origin() {
    let env = TestEnv::new();
    with_origin(&env);
    env.git(&["switch", "--quiet", "-c", "abc-1"]);
    env.baton("A", 0, &["loop", "init", "ABC-1"]).assert_code(0);
    let state = env.read_loop("ABC-1");
    assert_eq!(state["base_branch"], "main", "never origin/main");
    assert_eq!(state["branch"], "abc-1");

    // The engineer committed on the branch; local main was then fast-forwarded to it (a local
    // merge), but origin/main was not. Against origin/main the work is there.
    env.write("src.rs", "fn main() {}\n");
    env.git(&["add", "."]);
    env.git(&["commit", "--quiet", "-m", "engineer output"]);
    env.git(&["branch", "--quiet", "-f", "main", "abc-1"]);
    env.set_phase("A", 1, "ABC-1", "quality_gate", "engineer_returned")
        .assert_code(0);
    env.baton("A", 2, &["loop", "interrupt", "ABC-1"])
        .assert_code(0);
    let out = env.baton("B", 20, &["--json", "resume", "accept", "ABC-1"]);
    out.assert_code(0);
    let rules: Vec<String> = out.json()["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["rule"].as_str().unwrap().to_string())
        .collect();
    assert!(!rules.contains(&"loop.lost-work".to_string()), "{rules:?}");
}

#[test]
fn liveness_in_updated_at_is_read_as_written() {
    let env = TestEnv::new();
    let mut state = dinostack_loop("A", "active", "skeptic", "spawned", 0);
    state.as_object_mut().unwrap().remove("last_updated");
    state["updated_at"] = json!(at(8));
    env.write_loop("ABC-123", &state);

    let out = env.baton("B", 10, &["--json", "resume", "ABC-123"]);
    out.assert_code(0);
    assert_eq!(out.json()["verdict"], "live", "{}", out.stdout);
    env.set_phase("B", 10, "ABC-123", "skeptic", "returned")
        .assert_code(3);

    // The newer of the two wins, whichever it is.
    state["last_updated"] = json!(at(2));
    env.write_loop("ABC-123", &state);
    let out = env.baton("B", 10, &["--json", "resume", "ABC-123"]);
    assert_eq!(out.json()["verdict"], "live");

    // The owner's writes keep both fields in step.
    env.set_phase("A", 11, "ABC-123", "skeptic", "returned")
        .assert_code(0);
    let after = env.read_loop("ABC-123");
    assert_eq!(
        (&after["last_updated"], &after["updated_at"]),
        (&json!(at(11)), &json!(at(11)))
    );
}

#[test]
fn every_row_of_the_resume_entry_table_has_its_mode() {
    let rows: [(&str, &str, &str); 16] = [
        ("skeptic", "spawned", "respawn"),
        ("skeptic", "returned", "automatic"),
        ("engineer", "spawned", "respawn"),
        ("engineer", "returned", "automatic"),
        ("qa", "spawned", "respawn"),
        ("qa", "returned", "automatic"),
        ("quality_gate", "engineer_spawned", "respawn"),
        ("quality_gate", "engineer_returned", "automatic"),
        ("quality_gate", "rerun_pending", "automatic"),
        ("quality_gate", "debugger_spawned", "respawn"),
        ("quality_gate", "debugger_returned", "automatic"),
        ("ci_wait", "timeout", "automatic"),
        ("ci_loop", "fix_engineer_spawned", "respawn"),
        ("ci_loop", "fix_engineer_returned", "automatic"),
        ("ci_loop", "ci_poll_pending", "automatic"),
        ("ci_loop", "cap_exceeded", "never"),
    ];
    let env = TestEnv::new();
    // The ticket's branch, with the engineer's committed work on it.
    env.git(&["switch", "--quiet", "-c", "abc-123"]);
    env.write("greet.js", "work\n");
    env.git(&["add", "greet.js"]);
    env.git(&["commit", "--quiet", "-m", "engineer output"]);
    for (phase, action, mode) in rows {
        let mut state = dinostack_loop("A", "active", phase, action, 0);
        stop_hook_interrupt(&mut state, 1);
        env.write_loop("ABC-123", &state);
        let out = env.baton("B", 5, &["--json", "resume", "ABC-123"]);
        out.assert_code(0);
        let v = out.json();
        assert_eq!(
            (v["verdict"].as_str(), v["mode"].as_str()),
            (Some("offer"), Some(mode)),
            "{phase}/{action}: {}",
            out.stdout
        );
    }
    // The CI phases are recordable too.
    env.baton("A", 10, &["resume", "fresh", "ABC-123"])
        .assert_code(0);
    env.baton("A", 11, &["loop", "init", "ABC-123"])
        .assert_code(0);
    for (phase, action) in [("ci_loop", "fix_engineer_spawned"), ("ci_wait", "timeout")] {
        let out = env.set_phase("A", 12, "ABC-123", phase, action);
        out.assert_code(0);
        assert!(out.stdout.starts_with("[phase: 10 ci"), "{}", out.stdout);
    }
}
