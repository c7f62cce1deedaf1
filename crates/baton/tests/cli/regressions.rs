//! Regression tests, each named after the defect it pins.

use serde_json::json;

use baton_store::RecordKey;

use crate::common::{TestEnv, at, loop_key, named};

#[test]
fn json_holds_for_command_line_errors_and_every_exit_code() {
    let env = TestEnv::new();
    for args in [
        vec!["--json", "loop", "set"],
        vec!["--json", "frobnicate"],
        vec![
            "--json", "loop", "set", "P", "--phase", "bogus", "--action", "x",
        ],
    ] {
        let out = env.baton("A", 0, &args);
        out.assert_code(2);
        assert_eq!(out.json()["error"]["kind"], "usage", "{args:?}");
    }
    env.baton("A", 0, &["loop", "init", "PROJ-1"])
        .assert_code(0);
    env.set_phase("A", 1, "PROJ-1", "qa", "engineer_spawned")
        .assert_code(0);
    env.write("wip.txt", "half\n");
    let ask = env.baton("B", 30, &["--json", "resume", "accept", "PROJ-1"]);
    ask.assert_code(4);
    assert_eq!(ask.json()["verdict"], "ask");
    env.set_record_bytes(&loop_key("PROJ-1"), b"{");
    let broken = env.baton("B", 30, &["--json", "loop", "show", "PROJ-1"]);
    broken.assert_code(1);
    assert!(
        broken.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains(&named("loop-state-PROJ-1.json"))
    );
}

#[test]
fn a_huge_resume_after_is_a_usage_error_not_a_panic() {
    let env = TestEnv::new();
    env.baton("A", 0, &["loop", "init", "PROJ-1"])
        .assert_code(0);
    let out = env.baton(
        "A",
        1,
        &[
            "loop",
            "interrupt",
            "PROJ-1",
            "--resume-after",
            "99999999999999d",
        ],
    );
    out.assert_code(2);
    assert!(out.stderr.contains("--resume-after"));
}

#[test]
fn resume_fresh_never_moves_a_newer_schema_file() {
    let env = TestEnv::new();
    env.baton("A", 0, &["loop", "init", "PROJ-1"])
        .assert_code(0);
    let mut state = env.read_loop("PROJ-1");
    state["schema_version"] = json!(99);
    env.write_loop("PROJ-1", &state);
    let before = env.snapshot();
    env.baton("A", 30, &["resume", "fresh", "PROJ-1"])
        .assert_code(1);
    assert_eq!(env.snapshot(), before);
}

#[test]
fn a_refused_commit_leaves_the_index_as_it_was() {
    let env = TestEnv::new();
    env.baton("A", 0, &["loop", "init", "PROJ-1"])
        .assert_code(0);
    env.set_phase("A", 1, "PROJ-1", "qa", "engineer_spawned")
        .assert_code(0);
    env.write("README.md", "# changed\n");
    env.write("new.txt", "untracked\n");
    let hook = env.repo.join(".git/hooks/pre-commit");
    std::fs::write(
        &hook,
        "#!/bin/sh\necho 'lint failed: fix new.txt'\nexit 1\n",
    )
    .unwrap();
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let status_before = env.git(&["status", "--porcelain"]);
    let before = env.snapshot();
    let out = env.baton("B", 30, &["resume", "accept", "PROJ-1", "--commit"]);
    out.assert_code(1);
    assert!(
        out.stderr.contains("lint failed"),
        "the hook's words reach the user: {}",
        out.stderr
    );
    assert_eq!(
        env.git(&["status", "--porcelain"]),
        status_before,
        "staging untouched"
    );
    assert_eq!(env.snapshot(), before);
}

#[test]
fn a_brief_on_record_pays_for_a_later_raise_to_plan() {
    let env = TestEnv::new();
    env.write("brief.md", "# Brief\n");
    env.write("plan/PLAN.md", "# Plan\n");
    env.baton("A", 0, &["loop", "init", "PROJ-1"])
        .assert_code(0);
    env.baton(
        "A",
        1,
        &[
            "loop", "artifact", "PROJ-1", "--tier", "brief", "--brief", "brief.md",
        ],
    )
    .assert_code(0);
    let raised = env.baton(
        "A",
        2,
        &[
            "loop", "artifact", "PROJ-1", "--tier", "plan", "--plan", "plan",
        ],
    );
    raised.assert_code(0);
    assert!(!raised.stdout.contains("brief-owed"), "{}", raised.stdout);
    env.set_phase("A", 3, "PROJ-1", "qa", "engineer_spawned")
        .assert_code(0);
}

#[test]
fn the_engineer_phase_spawn_is_an_engineer_spawn_for_the_escalation_guard() {
    let env = TestEnv::new();
    env.baton("A", 0, &["loop", "init", "PROJ-1"])
        .assert_code(0);
    env.baton("A", 1, &["loop", "artifact", "PROJ-1", "--tier", "brief"])
        .assert_code(0);
    env.set_phase("A", 2, "PROJ-1", "engineer", "spawned")
        .assert_code(3);
}

#[test]
fn an_interrupted_legacy_loop_beats_a_finished_keyed_one() {
    let env = TestEnv::new();
    env.baton("A", 0, &["loop", "init", "PROJ-7"])
        .assert_code(0);
    env.baton(
        "A",
        0,
        &["loop", "finish", "PROJ-7", "--status", "complete"],
    )
    .assert_code(0);
    env.write_legacy_loop(&json!({ "session_id": "old", "ticket_id": "PROJ-7", "status": "interrupted", "last_phase": "qa", "last_phase_action": "returned" }),
    );
    let v = env.baton("B", 30, &["--json", "resume", "PROJ-7"]).json();
    assert_eq!(v["verdict"], "offer");
    assert_eq!(env.read_loop("PROJ-7")["session_id"], "old");
    assert!(!env.has_record(&RecordKey::LegacyLoop));
    assert_eq!(env.archived().len(), 1, "the finished loop is archived");
}

#[test]
fn a_live_sessions_finished_loop_is_not_archived_by_another_session() {
    let env = TestEnv::new();
    env.baton("A", 0, &["loop", "init", "PROJ-1"])
        .assert_code(0);
    env.baton("A", 1, &["loop", "finish", "PROJ-1", "--status", "stalled"])
        .assert_code(0);
    let before = env.snapshot();
    env.baton("B", 1, &["loop", "init", "PROJ-1"])
        .assert_code(3);
    env.baton("B", 1, &["resume", "fresh", "PROJ-1"])
        .assert_code(3);
    assert_eq!(env.snapshot(), before);
    env.baton("B", 12, &["loop", "init", "PROJ-1"])
        .assert_code(0);
}

#[test]
fn ownerless_state_is_not_archived_without_force() {
    let env = TestEnv::new();
    env.write_loop("PROJ-1", &json!({ "session_id": null, "ticket_id": "PROJ-1", "status": "interrupted", "last_phase": "qa" }));
    env.baton("B", 0, &["resume", "fresh", "PROJ-1"])
        .assert_code(3);
    env.baton("B", 0, &["resume", "fresh", "PROJ-1", "--force"])
        .assert_code(0);
}

#[test]
fn a_timestamp_without_an_offset_is_read_as_utc_not_as_stale() {
    let env = TestEnv::new();
    env.write_loop("PROJ-1", &json!({ "session_id": "A", "ticket_id": "PROJ-1", "status": "active", "last_phase": "qa", "last_updated": "2026-03-01T12:00:00.123456" }),
    );
    assert_eq!(
        env.baton("B", 1, &["--json", "resume", "PROJ-1"]).json()["verdict"],
        "live"
    );
    env.set_phase("B", 1, "PROJ-1", "qa", "spawned")
        .assert_code(3);
}

#[test]
fn a_far_future_timestamp_does_not_stay_live_for_ever() {
    let env = TestEnv::new();
    env.write_loop("PROJ-1", &json!({ "session_id": "A", "ticket_id": "PROJ-1", "status": "active", "last_phase": "qa", "last_phase_action": "returned", "last_updated": "2099-01-01T00:00:00Z" }),
    );
    assert_eq!(
        env.baton("B", 1, &["--json", "resume", "PROJ-1"]).json()["verdict"],
        "offer"
    );
}

#[test]
fn loop_show_refuses_a_colliding_ticket() {
    let env = TestEnv::new();
    env.baton("A", 0, &["loop", "init", "PROJ-1"])
        .assert_code(0);
    env.baton("A", 0, &["loop", "show", "PROJ/1"])
        .assert_code(3);
}

#[test]
fn init_on_this_sessions_own_quiet_loop_is_not_a_resume() {
    let env = TestEnv::new();
    env.baton("A", 0, &["loop", "init", "PROJ-1"])
        .assert_code(0);
    let out = env.baton("A", 30, &["loop", "init", "PROJ-1"]);
    out.assert_code(0);
    assert!(
        out.stdout.contains("already runs in this session"),
        "{}",
        out.stdout
    );
}

#[test]
fn batch_start_refuses_tickets_sharing_a_key_and_creates_nothing_when_refused() {
    let env = TestEnv::new();
    let out = env.baton("A", 0, &["batch", "start", "PROJ/1", "PROJ-1"]);
    out.assert_code(2);
    assert!(
        out.stderr.contains("share the key PROJ-1"),
        "{}",
        out.stderr
    );
    env.baton("A", 0, &["batch", "start", "T-1", "T-1"])
        .assert_code(2);
    env.baton("A", 0, &["batch", "start", "X-1"]).assert_code(2);
    assert!(!env.state_dir().exists());
}

#[test]
fn never_mode_needs_force_to_accept() {
    let env = TestEnv::new();
    env.baton("A", 0, &["loop", "init", "PROJ-1"])
        .assert_code(0);
    env.set_phase("A", 1, "PROJ-1", "quality_gate", "spawned")
        .assert_code(0);
    let check = env.baton("B", 30, &["--json", "resume", "PROJ-1"]).json();
    assert_eq!(check["mode"], "never");
    let before = env.snapshot();
    env.baton("B", 30, &["resume", "accept", "PROJ-1"])
        .assert_code(4);
    assert_eq!(env.snapshot(), before);
    env.baton("B", 30, &["resume", "accept", "PROJ-1", "--force"])
        .assert_code(0);
}

#[test]
fn the_literal_null_session_is_no_session() {
    let env = TestEnv::new();
    env.run(Some("null"), &at(0), &["loop", "init", "PROJ-1"])
        .assert_code(0);
    assert!(env.read_loop("PROJ-1")["session_id"].is_null());
}

#[test]
fn every_transition_prints_its_breadcrumb() {
    let env = TestEnv::new();
    env.baton("A", 0, &["loop", "init", "PROJ-1"])
        .assert_code(0);
    for args in [
        vec!["loop", "artifact", "PROJ-1", "--tier", "none"],
        vec!["loop", "interrupt", "PROJ-1"],
    ] {
        let out = env.baton("A", 1, &args);
        assert!(
            out.stdout.starts_with("[phase: "),
            "{args:?}: {}",
            out.stdout
        );
    }
}

#[test]
fn a_second_interrupt_can_say_when_the_rate_limit_resets() {
    let env = TestEnv::new();
    env.baton("A", 0, &["loop", "init", "PROJ-1"])
        .assert_code(0);
    env.baton(
        "A",
        1,
        &["loop", "interrupt", "PROJ-1", "--reason", "rate_limit"],
    )
    .assert_code(0);
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
            "1h",
        ],
    )
    .assert_code(0);
    let state = env.read_loop("PROJ-1");
    assert_eq!(state["resume_after"], at(61));
    assert_eq!(state["interrupted_at"], at(1));
}

/// `sh -c 'V=$(baton ARGS…); printf "[%s]" "$V"'` in `env`: what a shell capturing the
/// command's stdout gets.
fn captured(env: &TestEnv, session: Option<&str>, args: &[&str]) -> (String, String) {
    let inner = env.command(session, &at(1));
    let out = crate::common::like(&inner, "sh")
        .arg("-c")
        .arg(r#"prog=$1; shift; V=$("$prog" "$@") || exit $?; printf '[%s]' "$V""#)
        .arg("sh")
        .arg(inner.get_program())
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn loop_key_note_goes_to_stderr_so_command_substitution_gets_the_key_alone() {
    let env = TestEnv::new();
    let (value, stderr) = captured(&env, None, &["loop", "key", ""]);
    let key = value
        .strip_prefix('[')
        .and_then(|v| v.strip_suffix(']'))
        .unwrap();
    assert!(
        key.starts_with("session-nosid-") && !key.contains('\n'),
        "KEY=$(baton loop key \"\") holds the key alone: {value:?}"
    );
    assert!(
        stderr.contains("random"),
        "the note about the random key is on stderr: {stderr:?}"
    );
}

#[test]
fn ledger_torn_tail_note_goes_to_stderr_so_command_substitution_gets_the_line_alone() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.repo.join("plans/p")).unwrap();
    env.baton("s", 0, &["ledger", "init", "plans/p"])
        .assert_code(0);
    let ledger = env.repo.join("plans/p/STATE.md");
    let mut text = std::fs::read_to_string(&ledger).unwrap();
    text.push_str("phase 1: star");
    std::fs::write(&ledger, text).unwrap();

    let (value, stderr) = captured(
        &env,
        Some("s"),
        &["ledger", "start", "plans/p", "--phase", "1"],
    );
    assert!(
        value.starts_with("[phase 1: started (base ") && !value.contains('\n'),
        "LINE=$(baton ledger start …) holds the appended line alone: {value:?}"
    );
    assert!(
        stderr.contains("sealed with a newline"),
        "the note about the sealed tail is on stderr: {stderr:?}"
    );
    let json = env.baton(
        "s",
        2,
        &[
            "--json", "ledger", "block", "plans/p", "--phase", "1", "--reason", "x",
        ],
    );
    json.assert_code(0);
    assert_eq!(json.json()["sealed_torn_tail"], false);
}

/// A loop started with no ticket is keyed by its session; another session is offered it by that
/// key, and the offered accept command works (the empty ticket would name its own session's).
#[test]
fn a_ticketless_loop_is_offered_by_its_key_and_the_offer_works() {
    let env = TestEnv::new();
    let out = env.baton("S1", 0, &["loop", "init", ""]);
    out.assert_code(0);
    assert!(
        out.stdout.contains("started the loop for session-S1"),
        "{}",
        out.stdout
    );
    let out = env.baton("S1", 1, &["loop", "interrupt", "", "--reason", "unknown"]);
    out.assert_code(0);
    assert!(
        out.stdout.contains("`baton resume session-S1`"),
        "{}",
        out.stdout
    );
    let all = env.baton("S2", 2, &["--json", "resume"]).json();
    let items = all["packet"]["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{all}");
    assert_eq!(
        items[0]["accept"], "baton resume accept session-S1",
        "{all}"
    );
    let out = env.baton("S2", 3, &["resume", "accept", "session-S1"]);
    out.assert_code(0);
    let state = env
        .baton("S2", 3, &["--json", "loop", "show", "session-S1"])
        .json();
    assert_eq!(state["state"]["session_id"], "S2", "{state}");
    assert_eq!(state["key"], "session-S1", "{state}");
}

/// One duration syntax everywhere, and a bad value is named by its own option.
#[test]
fn every_duration_option_reads_one_syntax_and_names_itself_when_bad() {
    let env = TestEnv::new();
    env.baton("A", 0, &["loop", "init", "T-1"]).assert_code(0);
    // `1h30m` where only `90m` was read before.
    let out = env.baton(
        "A",
        1,
        &[
            "loop",
            "interrupt",
            "T-1",
            "--reason",
            "rate_limit",
            "--resume-after",
            "1h30m",
        ],
    );
    out.assert_code(0);
    let state = env.baton("A", 2, &["--json", "loop", "show", "T-1"]).json();
    assert_eq!(state["state"]["resume_after"], at(91), "{state}");
    // A bad `wait --max` is reported as `--max`, not as another option.
    let out = env.baton("B", 2, &["wait", "T-1", "--max", "soon"]);
    out.assert_code(2);
    assert!(out.stderr.contains("--max \"soon\""), "{}", out.stderr);
    assert!(!out.stderr.contains("--resume-after"), "{}", out.stderr);
    // `status --interval` takes the same syntax as `supervise --backoff`.
    for bad in [
        &["status", "--watch", "--interval", "5x"][..],
        &["run", "prune", "--older-than", "5x"][..],
    ] {
        let out = env.baton("B", 2, bad);
        out.assert_code(2);
        assert!(out.stderr.contains("5x"), "{}", out.stderr);
    }
    env.baton(
        "B",
        2,
        &["run", "prune", "--older-than", "1d 12h", "--dry-run"],
    )
    .assert_code(0);
}
