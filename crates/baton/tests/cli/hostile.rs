//! Hostile input: each case gets the exit code of the contract, a message naming the file or
//! argument and the fix, and changes nothing on disk.

use serde_json::json;

use crate::common::{TestEnv, at};

/// A live loop of session A, and a snapshot of the state directory.
fn setup() -> TestEnv {
    let env = TestEnv::new();
    env.baton("A", 0, &["loop", "init", "PROJ-1"])
        .assert_code(0);
    env
}

#[track_caller]
fn assert_refused_unchanged(env: &TestEnv, args: &[&str], code: i32, names: &str, fix: &str) {
    let before = env.snapshot();
    let out = env.baton("A", 1, args);
    out.assert_code(code);
    assert!(
        out.stderr.contains(names),
        "names {names:?}: {}",
        out.stderr
    );
    assert!(
        out.stderr.contains("hint: ") && out.stderr.contains(fix),
        "the fix {fix:?}: {}",
        out.stderr
    );
    assert_eq!(
        env.snapshot(),
        before,
        "{args:?} changed the state directory"
    );
}

const SET: &[&str] = &[
    "loop", "set", "PROJ-1", "--phase", "qa", "--action", "returned",
];

#[test]
fn a_symlinked_state_file_is_refused() {
    crate::files_only!("a test of the file store itself");
    let env = setup();
    let real = env.repo.join("elsewhere.json");
    std::fs::rename(env.loop_file("PROJ-1"), &real).unwrap();
    std::os::unix::fs::symlink(&real, env.loop_file("PROJ-1")).unwrap();
    let real_before = std::fs::read(&real).unwrap();
    assert_refused_unchanged(
        &env,
        SET,
        1,
        "loop-state-PROJ-1.json is a symbolic link",
        "replace the link",
    );
    assert_refused_unchanged(
        &env,
        &["resume", "PROJ-1"],
        1,
        "symbolic link",
        "replace the link",
    );
    assert_eq!(std::fs::read(&real).unwrap(), real_before);
}

#[test]
fn a_symlinked_state_directory_is_refused() {
    crate::files_only!("a test of the file store itself");
    let env = TestEnv::new();
    let real = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(real.path(), env.state_dir()).unwrap();
    let out = env.baton("A", 0, &["loop", "init", "PROJ-1"]);
    out.assert_code(1);
    assert!(
        out.stderr.contains(".agentic is a symbolic link"),
        "{}",
        out.stderr
    );
    assert_eq!(
        std::fs::read_dir(real.path()).unwrap().count(),
        0,
        "nothing written through the link"
    );
}

#[test]
fn truncated_empty_and_oversized_files_are_refused() {
    crate::files_only!("a test of the file store itself");
    for (content, says) in [
        (
            b"{\"schema_version\": 1, \"status\": \"act".to_vec(),
            "not valid state JSON",
        ),
        (Vec::new(), "is empty"),
        (vec![b' '; 5 * 1024 * 1024], "over the"),
    ] {
        let env = setup();
        std::fs::write(env.loop_file("PROJ-1"), &content).unwrap();
        assert_refused_unchanged(&env, SET, 1, says, "move it aside");
        assert_refused_unchanged(
            &env,
            &["resume", "PROJ-1"],
            1,
            "loop-state-PROJ-1.json",
            "move it aside",
        );
    }
}

#[test]
fn an_unreadable_candidate_never_stops_the_scan() {
    crate::files_only!("a test of the file store itself");
    let env = setup();
    std::fs::write(env.loop_file("BROKEN-1"), b"{").unwrap();
    let out = env.baton("B", 30, &["resume", "PROJ-1"]);
    out.assert_code(0);
    assert!(
        out.stdout.contains("skipped an unreadable candidate")
            && out.stdout.contains("loop-state-BROKEN-1.json"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("verdict: offer"));
}

#[test]
fn a_newer_schema_is_read_only() {
    let env = setup();
    let mut state = env.read_loop("PROJ-1");
    state["schema_version"] = json!(99);
    env.write_loop("PROJ-1", &state);
    assert_refused_unchanged(&env, SET, 1, "schema_version 99", "upgrade baton");
    let show = env.baton("A", 1, &["loop", "show", "PROJ-1"]);
    show.assert_code(0);
    assert!(show.stdout.contains("read-only"), "{}", show.stdout);
}

#[test]
fn a_plan_outside_the_project_is_refused() {
    let env = setup();
    let outside = tempfile::tempdir().unwrap();
    let plan = outside.path().to_str().unwrap().to_string();
    assert_refused_unchanged(
        &env,
        &[
            "loop", "artifact", "PROJ-1", "--tier", "plan", "--plan", &plan,
        ],
        2,
        "outside the project root",
        "inside the project",
    );
    assert_refused_unchanged(
        &env,
        &[
            "loop", "artifact", "PROJ-1", "--tier", "plan", "--plan", "../",
        ],
        2,
        "outside the project root",
        "inside the project",
    );
    assert_refused_unchanged(
        &env,
        &[
            "loop",
            "artifact",
            "PROJ-1",
            "--tier",
            "brief",
            "--brief",
            "missing.md",
        ],
        2,
        "--brief missing.md",
        "existing file",
    );
}

#[test]
fn ticket_ids_never_become_paths() {
    let env = setup();
    let out = env.baton("A", 1, &["--json", "loop", "init", "../../etc/passwd"]);
    out.assert_code(0);
    assert_eq!(out.json()["key"], "etc-passwd");
    assert!(env.has_loop("etc-passwd"));
}

#[test]
fn a_bad_clock_or_a_missing_repository_is_a_usage_error() {
    let env = setup();
    let out = env.run(Some("A"), "yesterday", &["resume", "PROJ-1"]);
    out.assert_code(2);
    assert!(out.stderr.contains("BATON_NOW") && out.stderr.contains("hint:"));

    let nowhere = tempfile::tempdir().unwrap();
    let out = env
        .command(Some("A"), &at(0))
        .current_dir(nowhere.path())
        .args(["loop", "init", "PROJ-1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("not inside a git repository") && stderr.contains("-C"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_dir(nowhere.path()).unwrap().count(), 0);
}

#[test]
fn unknown_loops_and_bad_arguments_are_usage_errors() {
    let env = setup();
    assert_refused_unchanged(
        &env,
        &[
            "loop", "set", "NOPE-1", "--phase", "qa", "--action", "returned",
        ],
        2,
        "no loop-state for NOPE-1",
        "baton loop init NOPE-1",
    );
    let out = env.set_phase("A", 1, "PROJ-1", "warp", "x");
    out.assert_code(2);
    assert!(out.stderr.contains("--phase"));
}

#[test]
fn queries_and_refusals_on_a_project_without_state_create_nothing() {
    let env = TestEnv::new();
    env.baton("A", 0, &["resume", "PROJ-1"]).assert_code(0);
    env.baton("A", 0, &["resume"]).assert_code(0);
    env.baton("A", 0, &["resume", "accept", "PROJ-1"])
        .assert_code(2);
    env.set_phase("A", 0, "PROJ-1", "qa", "returned")
        .assert_code(2);
    env.baton("A", 0, &["loop", "heartbeat", "PROJ-1"])
        .assert_code(0);
    env.baton(
        "A",
        0,
        &["batch", "ticket", "PROJ-1", "--status", "complete"],
    )
    .assert_code(2);
    env.baton("A", 0, &["loop", "show", "PROJ-1"])
        .assert_code(2);
    assert!(!env.state_dir().exists(), "no state directory was created");
}
