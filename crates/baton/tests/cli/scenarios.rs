//! The ticket-loop protocol end to end, in temp git repositories with a fixed clock.

use serde_json::json;

use baton_store::RecordKey;

use crate::common::{TestEnv, at, loop_key};

fn init_qa_returned(env: &TestEnv, session: &str) {
    env.baton(session, 0, &["loop", "init", "PROJ-1"])
        .assert_code(0);
    env.baton(
        session,
        0,
        &[
            "loop",
            "set",
            "PROJ-1",
            "--phase",
            "qa",
            "--action",
            "returned",
            "--iteration",
            "2",
        ],
    )
    .assert_code(0);
}

#[test]
fn stale_loop_is_offered_live_loop_is_not_and_refuses_foreign_writes() {
    let env = TestEnv::new();
    init_qa_returned(&env, "A");

    let offer = env.baton("B", 12, &["--json", "resume", "PROJ-1"]);
    offer.assert_code(0);
    let v = offer.json();
    assert_eq!(v["verdict"], "offer");
    assert_eq!(v["mode"], "automatic");
    assert_eq!(v["reasons"][0]["rule"], "loop.stale-active");
    assert!(
        v["next"]
            .as_str()
            .unwrap()
            .contains("baton resume accept PROJ-1")
    );

    let live = env.baton("B", 5, &["--json", "resume", "PROJ-1"]);
    live.assert_code(0);
    assert_eq!(live.json()["verdict"], "live");

    let before = env.snapshot();
    let refused = env.set_phase("B", 5, "PROJ-1", "qa", "spawned");
    refused.assert_code(3);
    assert!(
        refused.stdout.contains("session A"),
        "names the owner: {}",
        refused.stdout
    );
    assert!(refused.stdout.contains("gate.foreign-live-owner"));
    assert_eq!(env.snapshot(), before, "a refused write changes nothing");

    let own = env.baton("A", 6, &["--json", "resume", "PROJ-1"]);
    assert_eq!(own.json()["verdict"], "own");
}

#[test]
fn text_output_is_one_read_for_an_agent() {
    let env = TestEnv::new();
    init_qa_returned(&env, "A");
    let out = env.baton("B", 12, &["resume", "PROJ-1"]);
    out.assert_code(0);
    let first = out.stdout.lines().next().unwrap();
    assert_eq!(first, "verdict: offer (automatic)");
    assert!(out.stdout.contains("\nnext: `baton resume accept PROJ-1`"));
}

#[test]
fn breadcrumb_on_every_transition() {
    let env = TestEnv::new();
    let init = env.baton("A", 0, &["loop", "init", "PROJ-1"]);
    assert!(
        init.stdout.contains("[phase: 6 skeptic · iteration 1/5]"),
        "{}",
        init.stdout
    );
    let set = env.baton(
        "A",
        1,
        &[
            "loop",
            "set",
            "PROJ-1",
            "--phase",
            "qa",
            "--action",
            "returned",
            "--iteration",
            "2",
        ],
    );
    assert_eq!(
        set.stdout.lines().next().unwrap(),
        "[phase: 6b qa · iteration 2/5 · returned]"
    );
    let gate = env.set_phase("A", 2, "PROJ-1", "quality_gate", "engineer_returned");
    assert!(
        gate.stdout.starts_with("[phase: 7 quality gate"),
        "{}",
        gate.stdout
    );
}

#[test]
fn other_tickets_get_one_informational_line_and_no_offer() {
    let env = TestEnv::new();
    init_qa_returned(&env, "A");
    env.baton(
        "A",
        1,
        &["loop", "interrupt", "PROJ-1", "--reason", "rate_limit"],
    )
    .assert_code(0);

    let out = env.baton("B", 2, &["--json", "resume", "PROJ-2"]);
    out.assert_code(0);
    let v = out.json();
    assert_eq!(v["verdict"], "none");
    assert!(v["mode"].is_null());
    assert!(
        v["others"]
            .as_str()
            .unwrap()
            .contains("PROJ-1 (interrupted")
    );

    let text = env.baton("B", 2, &["resume", "PROJ-2"]);
    let info: Vec<_> = text
        .stdout
        .lines()
        .filter(|l| l.contains("PROJ-1"))
        .collect();
    assert_eq!(info.len(), 1, "one line: {}", text.stdout);
    assert!(info[0].starts_with("info: "));
    assert!(!text.stdout.contains("resume accept PROJ-1"));
}

#[test]
fn interrupt_keeps_last_updated_and_rate_limit_carries_resume_after() {
    let env = TestEnv::new();
    init_qa_returned(&env, "A");
    env.baton(
        "A",
        1,
        &[
            "loop",
            "interrupt",
            "PROJ-1",
            "--reason",
            "rate_limit",
            "--resume-after",
            "30m",
        ],
    )
    .assert_code(0);
    let state = env.read_loop("PROJ-1");
    assert_eq!(state["status"], "interrupted");
    assert_eq!(state["last_updated"], at(0));
    assert_eq!(state["interrupted_at"], at(1));
    assert_eq!(state["interrupt_reason"], "rate_limit");

    let early = env.baton("B", 2, &["--json", "resume", "PROJ-1"]).json();
    assert_eq!(
        early["verdict"], "offer",
        "an interrupt is never live, even 1 minute later"
    );
    assert_eq!(early["resume_after"], at(31));
    assert!(early["next"].as_str().unwrap().starts_with("wait until"));
    // The interrupt released the loop, but a rate-limited one waits for its reset: another
    // session takes it only then (or with `--force`), its own session at any time.
    let early = env.baton("B", 2, &["resume", "accept", "PROJ-1"]);
    early.assert_code(3);
    assert!(
        early.stdout.contains("loop.waits-for-reset"),
        "{}",
        early.stdout
    );
    env.baton("B", 31, &["resume", "accept", "PROJ-1"])
        .assert_code(0);
}

#[test]
fn legacy_state_is_adopted_onto_its_keyed_file() {
    let env = TestEnv::new();
    let legacy = json!({
        "session_id": "old-session", "ticket_id": "PROJ-7", "status": "interrupted",
        "last_phase": "qa", "last_phase_action": "returned",
        "loop_state": { "phase": "qa", "iteration": 3, "max_iterations": 5, "custom": "kept" },
        "last_updated": at(-60), "originating_field": [1, 2],
    });
    env.write_legacy_loop(&legacy);
    let out = env.baton("B", 0, &["--json", "resume", "PROJ-7"]);
    out.assert_code(0);
    assert_eq!(out.json()["verdict"], "offer");
    assert!(
        !env.has_record(&RecordKey::LegacyLoop),
        "legacy file removed"
    );
    let keyed = env.read_loop("PROJ-7");
    assert_eq!(keyed["loop_key"], "PROJ-7");
    assert_eq!(keyed["originating_field"], json!([1, 2]));
    assert_eq!(keyed["loop_state"]["custom"], "kept");
    assert_eq!(keyed["loop_state"]["iteration"], 3);
}

#[test]
fn a_crash_between_adoption_steps_is_finished_by_the_next_run() {
    let env = TestEnv::new();
    let legacy = json!({
        "schema_version": 1, "session_id": null, "ticket_id": "PROJ-8", "status": "active",
        "last_phase": "skeptic", "last_updated": at(-60),
    });
    env.write_legacy_loop(&legacy);
    // The crash: the keyed file was written, the legacy file not yet removed.
    let mut keyed = legacy.clone();
    keyed["loop_key"] = json!("PROJ-8");
    env.write_loop("PROJ-8", &keyed);

    let out = env.baton("B", 0, &["resume", "PROJ-8"]);
    out.assert_code(0);
    assert!(out.stdout.contains("finished adopting"), "{}", out.stdout);
    assert!(!env.has_record(&RecordKey::LegacyLoop));
    assert_eq!(env.read_loop("PROJ-8")["loop_key"], "PROJ-8");
}

#[test]
fn a_resumable_keyed_file_wins_over_a_different_legacy_one() {
    let env = TestEnv::new();
    init_qa_returned(&env, "A");
    env.baton("A", 1, &["loop", "interrupt", "PROJ-1"])
        .assert_code(0);
    let keyed_before = env.record_bytes(&loop_key("PROJ-1")).unwrap();
    env.write_legacy_loop(&json!({ "ticket_id": "PROJ-1", "status": "interrupted", "last_phase": "skeptic", "session_id": "old" }),
    );
    let out = env.baton("B", 2, &["resume", "PROJ-1"]);
    out.assert_code(0);
    assert!(out.stdout.contains("wins over legacy"), "{}", out.stdout);
    assert_eq!(env.record_bytes(&loop_key("PROJ-1")).unwrap(), keyed_before);
    assert!(!env.has_record(&RecordKey::LegacyLoop));
    let archived = env.archived();
    assert_eq!(
        archived.len(),
        1,
        "the legacy file is archived, never deleted"
    );
}

#[test]
fn null_owner_needs_force_and_the_takeover_fences_the_old_epoch() {
    let env = TestEnv::new();
    env.write_loop("PROJ-1", &json!({ "schema_version": 1, "session_id": null, "ticket_id": "PROJ-1", "loop_key": "PROJ-1",
                 "status": "active", "last_phase": "qa", "last_updated": at(0), "owner_epoch": 0 }),
    );
    let before = env.snapshot();
    let refused = env.set_phase("B", 1, "PROJ-1", "qa", "spawned");
    refused.assert_code(3);
    assert!(refused.stdout.contains("gate.null-owner") && refused.stdout.contains("--force"));
    assert_eq!(env.snapshot(), before);

    let forced = env.baton(
        "B",
        1,
        &[
            "--json", "loop", "set", "PROJ-1", "--phase", "qa", "--action", "spawned", "--force",
        ],
    );
    forced.assert_code(0);
    assert_eq!(forced.json()["epoch"], 1);
    assert_eq!(forced.json()["reasons"][0]["rule"], "gate.forced-takeover");
    let state = env.read_loop("PROJ-1");
    assert_eq!(
        (state["session_id"].as_str(), state["owner_epoch"].as_u64()),
        (Some("B"), Some(1))
    );

    // A writer still holding epoch 0 is refused although the timestamps look fresh.
    let stale = env.baton(
        "B",
        2,
        &[
            "loop", "set", "PROJ-1", "--phase", "qa", "--action", "returned", "--epoch", "0",
        ],
    );
    stale.assert_code(3);
    assert!(stale.stdout.contains("gate.stale-epoch"));
    env.baton(
        "B",
        2,
        &[
            "loop", "set", "PROJ-1", "--phase", "qa", "--action", "returned", "--epoch", "1",
        ],
    )
    .assert_code(0);
}

#[test]
fn mid_engineer_with_a_dirty_tree_needs_a_human_choice_and_discard_keeps_the_work() {
    let env = TestEnv::new();
    env.baton("A", 0, &["loop", "init", "PROJ-1"])
        .assert_code(0);
    env.set_phase("A", 1, "PROJ-1", "qa", "engineer_spawned")
        .assert_code(0);
    env.write("src/partial.rs", "fn half_done() {}\n");
    env.write("README.md", "# test project\nedited\n");

    let check = env.baton("B", 20, &["--json", "resume", "PROJ-1"]).json();
    assert_eq!(
        (check["verdict"].as_str(), check["mode"].as_str()),
        (Some("offer"), Some("confirm"))
    );

    let before = env.snapshot();
    let ask = env.baton("B", 20, &["resume", "accept", "PROJ-1"]);
    ask.assert_code(4);
    assert!(ask.stdout.contains("--discard") && ask.stdout.contains("--commit"));
    assert_eq!(env.snapshot(), before);

    let accepted = env.baton(
        "B",
        20,
        &["--json", "resume", "accept", "PROJ-1", "--discard"],
    );
    accepted.assert_code(0);
    let v = accepted.json();
    assert_eq!(v["verdict"], "accepted");
    assert_eq!(v["epoch"], 1);
    assert!(
        env.git(&["stash", "list"])
            .contains("partial work of PROJ-1")
    );
    assert!(!env.repo.join("src/partial.rs").exists());
    let stashed = env.git(&[
        "stash",
        "show",
        "--include-untracked",
        "--name-only",
        "stash@{0}",
    ]);
    assert!(
        stashed.contains("src/partial.rs") && stashed.contains("README.md"),
        "{stashed}"
    );
    assert!(
        !stashed.contains(".agentic"),
        "baton's own state is never stashed: {stashed}"
    );
    let state = env.read_loop("PROJ-1");
    assert_eq!(
        (state["status"].as_str(), state["resume_count"].as_u64()),
        (Some("active"), Some(1))
    );
}

#[test]
fn commit_keeps_the_partial_work_on_the_branch() {
    let env = TestEnv::new();
    env.baton("A", 0, &["loop", "init", "PROJ-1"])
        .assert_code(0);
    env.set_phase("A", 1, "PROJ-1", "qa", "engineer_spawned")
        .assert_code(0);
    env.write("src/partial.rs", "fn half_done() {}\n");
    env.baton("B", 20, &["resume", "accept", "PROJ-1", "--commit"])
        .assert_code(0);
    assert!(
        env.git(&["log", "--format=%s", "-1"])
            .contains("wip(PROJ-1)")
    );
    assert_eq!(
        env.git(&["status", "--porcelain", "--", ".", ":(exclude).agentic"]),
        ""
    );
}

#[test]
fn mid_engineer_with_a_clean_tree_is_respawned() {
    let env = TestEnv::new();
    env.baton("A", 0, &["loop", "init", "PROJ-1"])
        .assert_code(0);
    env.set_phase("A", 1, "PROJ-1", "qa", "engineer_spawned")
        .assert_code(0);
    let v = env.baton("B", 20, &["--json", "resume", "PROJ-1"]).json();
    assert_eq!(v["mode"], "respawn");
}

#[test]
fn accepting_prints_the_governing_brief_and_flags_lost_work() {
    let env = TestEnv::new();
    env.write("docs/brief.md", "# Brief\nGoal: fix the login bug.\n");
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
            "brief",
            "--brief",
            "docs/brief.md",
        ],
    )
    .assert_code(0);
    env.baton(
        "A",
        1,
        &[
            "loop",
            "set",
            "PROJ-1",
            "--phase",
            "quality_gate",
            "--action",
            "engineer_returned",
            "--engineer-summary",
            "fixed it",
        ],
    )
    .assert_code(0);
    env.git(&["add", "docs"]);
    env.git(&["commit", "--quiet", "-m", "brief"]);
    env.git(&["checkout", "--quiet", "-b", "feature"]);
    env.baton("A", 2, &["loop", "interrupt", "PROJ-1"])
        .assert_code(0);
    // The branch has no commits beyond main, yet the state claims engineer output.
    let out = env.baton("B", 3, &["resume", "accept", "PROJ-1"]);
    out.assert_code(0);
    assert!(
        out.stdout.contains("Goal: fix the login bug."),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("loop.lost-work"), "{}", out.stdout);

    let path = env.read_loop("PROJ-1")["brief_path"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(std::path::Path::new(&path).is_absolute());
}

#[test]
fn raising_the_tier_without_a_brief_blocks_the_next_engineer_spawn() {
    let env = TestEnv::new();
    env.baton("A", 0, &["loop", "init", "PROJ-1"])
        .assert_code(0);
    env.set_phase("A", 1, "PROJ-1", "qa", "engineer_spawned")
        .assert_code(0);
    let raised = env.baton("A", 2, &["loop", "artifact", "PROJ-1", "--tier", "brief"]);
    raised.assert_code(0);
    assert!(raised.stdout.contains("loop.brief-owed"));
    // The in-flight engineer may still return.
    env.set_phase("A", 3, "PROJ-1", "qa", "engineer_returned")
        .assert_code(0);
    let before = env.snapshot();
    let refused = env.set_phase("A", 4, "PROJ-1", "qa", "engineer_spawned");
    refused.assert_code(3);
    assert!(
        refused.stdout.contains("retroactive Brief"),
        "{}",
        refused.stdout
    );
    assert_eq!(env.snapshot(), before);

    env.write("brief.md", "# Brief\n");
    env.baton(
        "A",
        5,
        &[
            "loop", "artifact", "PROJ-1", "--tier", "brief", "--brief", "brief.md",
        ],
    )
    .assert_code(0);
    env.set_phase("A", 6, "PROJ-1", "qa", "engineer_spawned")
        .assert_code(0);
}

#[test]
fn a_second_batch_against_a_live_foreign_batch_is_refused_but_a_single_ticket_proceeds() {
    let env = TestEnv::new();
    let started = env.baton("A", 0, &["--json", "batch", "start", "PROJ-1", "PROJ-2"]);
    started.assert_code(0);
    let batch_id = started.json()["batch_id"].as_str().unwrap().to_string();
    assert!(
        batch_id.starts_with("PROJ-batch-20260301T120000Z-"),
        "{batch_id}"
    );
    let state = env.read_batch();
    assert_eq!(state["tickets"].as_array().unwrap().len(), 2);
    assert_eq!(state["replan_log"], json!([]));

    let before = env.snapshot();
    let second = env.baton("B", 3, &["batch", "start", "PROJ-3", "PROJ-4"]);
    second.assert_code(3);
    assert!(
        second.stdout.contains("Another batch session is active"),
        "{}",
        second.stdout
    );
    assert_eq!(env.snapshot(), before);

    let single = env.baton("B", 3, &["loop", "init", "PROJ-9"]);
    single.assert_code(0);
    assert!(
        single.stdout.contains("batch.foreign-active-warning"),
        "{}",
        single.stdout
    );
    assert!(env.has_loop("PROJ-9"));

    let lone = env.baton("B", 3, &["batch", "start", "PROJ-5"]);
    lone.assert_code(2);

    // The batch picks the ticket; finished tickets are skipped.
    env.baton(
        "A",
        4,
        &[
            "batch",
            "ticket",
            "PROJ-1",
            "--status",
            "complete",
            "--replan",
            "split PROJ-2",
        ],
    )
    .assert_code(0);
    let show = env.baton("A", 5, &["--json", "batch", "show"]).json();
    assert!(
        show["next"]
            .as_str()
            .unwrap()
            .contains("baton resume PROJ-2")
    );
    let entry = &show["state"]["replan_log"][0];
    assert_eq!(entry["detail"], "split PROJ-2");
    assert_eq!(entry["action"], "re_sequence");
    assert_eq!(entry["ticket_id"], "PROJ-1");

    // Once the foreign batch is stale, a new one may start; the old one is archived.
    env.baton("B", 30, &["batch", "start", "PROJ-3", "PROJ-4"])
        .assert_code(0);
    assert_eq!(env.archived().len(), 1);
}

#[test]
fn key_collisions_are_refused_never_shared() {
    let env = TestEnv::new();
    env.baton("A", 0, &["loop", "init", "PROJ-1"])
        .assert_code(0);
    let before = env.snapshot();
    for args in [
        vec!["loop", "init", "PROJ/1"],
        vec![
            "loop", "set", "PROJ/1", "--phase", "qa", "--action", "spawned",
        ],
        vec!["resume", "PROJ/1"],
    ] {
        let out = env.baton("A", 1, &args);
        out.assert_code(3);
        assert!(
            out.stdout.contains("loop.key-collision"),
            "{args:?}: {}",
            out.stdout
        );
    }
    assert_eq!(env.snapshot(), before);
}

#[test]
fn loop_key_prints_the_derivation() {
    let env = TestEnv::new();
    let out = env
        .baton("A", 0, &["--json", "loop", "key", "team/PROJ 12"])
        .json();
    assert_eq!(out["key"], "team-PROJ-12");
    assert_eq!(out["file"], "loop-state-team-PROJ-12.json");
    let session = env.run(Some("d44d7af5-c943"), &at(0), &["loop", "key"]);
    assert_eq!(session.stdout.trim(), "session-d44d7af5-c943");
    let nosid = env
        .run(None, &at(0), &["--json", "loop", "key", "///"])
        .json();
    assert!(nosid["key"].as_str().unwrap().starts_with("session-nosid-"));
    assert_eq!(
        nosid["key"].as_str().unwrap().len(),
        "session-nosid-".len() + 8
    );
}

#[test]
fn finished_loops_are_archived_by_the_resume_check_and_fresh_archives_on_request() {
    let env = TestEnv::new();
    init_qa_returned(&env, "A");
    env.baton(
        "A",
        1,
        &["loop", "finish", "PROJ-1", "--status", "complete"],
    )
    .assert_code(0);
    // A live session may hold a finished loop: another session leaves it in place.
    let early = env.baton("B", 2, &["resume", "PROJ-1"]);
    assert!(early.stdout.contains("left in place"), "{}", early.stdout);
    assert!(env.has_loop("PROJ-1"));
    // Its own session archives it at once.
    let v = env.baton("A", 2, &["--json", "resume", "PROJ-1"]).json();
    assert_eq!(v["verdict"], "none");
    assert!(
        v["archived"]
            .as_str()
            .unwrap()
            .contains("archive/loop-state-PROJ-1.")
    );
    assert!(!env.has_loop("PROJ-1"));

    init_qa_returned(&env, "A");
    env.baton("A", 1, &["loop", "interrupt", "PROJ-1"])
        .assert_code(0);
    env.baton("B", 2, &["resume", "fresh", "PROJ-1"])
        .assert_code(0);
    assert!(!env.has_loop("PROJ-1"));
    env.baton("B", 2, &["loop", "init", "PROJ-1"])
        .assert_code(0);
}

#[test]
fn init_on_a_resumable_loop_points_at_resume() {
    let env = TestEnv::new();
    init_qa_returned(&env, "A");
    let out = env.baton("B", 30, &["loop", "init", "PROJ-1"]);
    out.assert_code(4);
    assert!(out.stdout.contains("baton resume PROJ-1"));
    let live = env.baton("B", 1, &["loop", "init", "PROJ-1"]);
    live.assert_code(3);
}

#[test]
fn heartbeat_refreshes_only_an_owned_active_loop() {
    let env = TestEnv::new();
    init_qa_returned(&env, "A");
    let foreign = env.baton("B", 3, &["--json", "loop", "heartbeat", "PROJ-1"]);
    foreign.assert_code(0);
    assert_eq!(foreign.json()["refreshed"], false);
    assert_eq!(env.read_loop("PROJ-1")["last_updated"], at(0));

    env.baton("A", 4, &["loop", "heartbeat", "PROJ-1"])
        .assert_code(0);
    assert_eq!(env.read_loop("PROJ-1")["last_updated"], at(4));

    env.baton("A", 5, &["loop", "interrupt", "PROJ-1"])
        .assert_code(0);
    env.baton("A", 6, &["loop", "heartbeat", "PROJ-1"])
        .assert_code(0);
    assert_eq!(
        env.read_loop("PROJ-1")["last_updated"],
        at(4),
        "no heartbeat for an interrupted loop"
    );
    env.baton("A", 6, &["loop", "heartbeat", "NOPE-1"])
        .assert_code(0);
}

#[test]
fn unknown_fields_survive_every_rewrite() {
    let env = TestEnv::new();
    env.baton("A", 0, &["loop", "init", "PROJ-1"])
        .assert_code(0);
    let mut state = env.read_loop("PROJ-1");
    state["their_field"] = json!({ "nested": true });
    state["loop_state"]["their_inner"] = json!(7);
    env.write_loop("PROJ-1", &state);
    env.set_phase("A", 1, "PROJ-1", "qa", "returned")
        .assert_code(0);
    let after = env.read_loop("PROJ-1");
    assert_eq!(after["their_field"], json!({ "nested": true }));
    assert_eq!(after["loop_state"]["their_inner"], 7);
}

#[test]
fn session_id_resolution_and_the_state_dir_override() {
    crate::files_only!("the state directory override moves files");
    let env = TestEnv::new();
    let out = env
        .command(None, &at(0))
        .env("CLAUDE_CODE_SESSION_ID", "claude-1")
        .args(["loop", "init", "PROJ-1"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(env.read_loop("PROJ-1")["session_id"], "claude-1");
    // BATON_SESSION wins over CLAUDE_CODE_SESSION_ID, and --session over both.
    let out = env
        .command(Some("baton-1"), &at(0))
        .env("CLAUDE_CODE_SESSION_ID", "claude-1")
        .args(["--session", "flag-1", "--json", "resume", "PROJ-1"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["verdict"], "live", "flag-1 is not claude-1");

    let custom = env.repo.join("custom-state");
    let out = env
        .command(Some("A"), &at(0))
        .env("BATON_STATE_DIR", "custom-state")
        .args(["loop", "init", "PROJ-2"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(custom.join("loop-state-PROJ-2.json").exists());

    // -C runs from another directory.
    let elsewhere = tempfile::tempdir().unwrap();
    let out = env
        .command(Some("A"), &at(1))
        .current_dir(elsewhere.path())
        .arg("-C")
        .arg(env.repo.join("README.md").parent().unwrap())
        .args(["--json", "resume", "PROJ-1"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["verdict"], "live");
}

#[test]
fn json_is_exactly_one_object_for_every_outcome() {
    let env = TestEnv::new();
    init_qa_returned(&env, "A");
    for (session, args, code) in [
        ("A", vec!["--json", "loop", "show", "PROJ-1"], 0),
        (
            "B",
            vec![
                "--json", "loop", "set", "PROJ-1", "--phase", "qa", "--action", "spawned",
            ],
            3,
        ),
        (
            "B",
            vec![
                "--json", "loop", "set", "NOPE", "--phase", "qa", "--action", "spawned",
            ],
            2,
        ),
        ("B", vec!["--json", "resume"], 0),
        ("B", vec!["--json", "schema"], 0),
    ] {
        let out = env.baton(session, 1, &args);
        out.assert_code(code);
        let v = out.json();
        assert!(v.is_object(), "{args:?}");
        if code == 3 {
            assert_eq!(v["verdict"], "refused");
            assert!(v["reasons"].is_array() && v["next"].is_string());
        }
        if code == 2 {
            assert_eq!(v["error"]["kind"], "usage");
        }
    }
}

#[test]
fn schema_describes_loop_and_batch_state() {
    let env = TestEnv::new();
    let v = env.baton("A", 0, &["schema"]);
    v.assert_code(0);
    let schemas: serde_json::Value = serde_json::from_str(&v.stdout).unwrap();
    assert!(schemas["loop-state"]["properties"]["owner_epoch"].is_object());
    assert!(schemas["batch-state"]["properties"]["replan_log"].is_object());
}

#[test]
fn demo_teaches_the_loop_in_one_screen() {
    let env = TestEnv::new();
    let out = env.baton("A", 0, &["demo"]);
    out.assert_code(0);
    // The verdict with its class, then the packet, as the next session's first call sees them.
    assert!(
        out.stdout
            .contains("loop PROJ-1: offer (automatic) · rate_limit"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("# Resume packet"), "{}", out.stdout);
    assert!(out.stdout.contains("resumed PROJ-1"));
    assert!(out.stdout.contains("(exit 3)"));
    assert!(out.stdout.lines().count() < 70, "fits a screen or two");
    // It ends on the next step a new user takes: installing baton into their client.
    let tail: Vec<&str> = out.stdout.lines().rev().take(3).collect();
    assert!(
        tail.iter().any(|l| l.contains("`baton init <client>`")),
        "{}",
        out.stdout
    );
}

#[test]
fn demo_keeps_to_its_own_files_whatever_store_is_set() {
    let env = TestEnv::new();
    // A server that is not there: the demo never asks it.
    let out = env
        .command(Some("A"), &at(0))
        .env("BATON_STORE", "postgres://nobody@127.0.0.1:1/none")
        .arg("demo")
        .output()
        .unwrap();
    let out = crate::common::to_run(out);
    out.assert_code(0);
    assert!(out.stdout.contains("resumed PROJ-1"), "{}", out.stdout);
}

#[test]
fn the_resume_scan_removes_temp_files_of_killed_writers() {
    crate::files_only!("a test of the file store itself");
    let env = TestEnv::new();
    init_qa_returned(&env, "A");
    let orphan = env.state_dir().join(".loop-state-PROJ-1.json.tmp-999-abcd");
    std::fs::write(&orphan, b"{\"half").unwrap();
    env.baton("B", 1, &["resume", "PROJ-1"]).assert_code(0);
    assert!(!orphan.exists());
    assert!(env.has_loop("PROJ-1"));
}
