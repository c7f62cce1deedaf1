//! The plan ledger against ClauKit's own documented shapes (its run-state schema and planning
//! references): parenthesized timestamps, exit gates in `plan.md`, and ledgers that claim more
//! than git and the gates can show. Nothing a ledger claims is trusted.

use serde_json::Value;

use crate::common::TestEnv;

const PLAN: &str = "plans/greet";

/// A repository with ClauKit's `plans/greet/plan.md` (its resume fixture's shape: an em-dash
/// phase heading and an `**Exit gate:**` line per phase), committed, and a ledger header.
fn clau_kit_env(exit_gates: &str) -> TestEnv {
    let env = TestEnv::new();
    env.write(
        "plans/greet/plan.md",
        &format!("# Plan: greet\n\n## Phase 1 — greet()\n\nWrite greet.\n\n{exit_gates}\n\n## Phase 2 — farewell()\n\n**Exit gate:** `true` → exit 0\n"),
    );
    env.git(&["add", "."]);
    env.git(&["commit", "--quiet", "-m", "plan"]);
    env.baton("s", 0, &["ledger", "init", PLAN]).assert_code(0);
    env
}

fn sha(env: &TestEnv, rev: &str) -> String {
    env.git(&["rev-parse", "--short=7", rev]).trim().to_string()
}

/// Commits a file, as a phase's work.
fn commit(env: &TestEnv, file: &str) {
    env.write(file, "work\n");
    env.git(&["add", file]);
    env.git(&["commit", "--quiet", "-m", file]);
}

fn append(env: &TestEnv, lines: &[String]) {
    let path = env.repo.join(PLAN).join("STATE.md");
    let mut text = std::fs::read_to_string(&path).unwrap();
    for line in lines {
        text.push_str(line);
        text.push('\n');
    }
    std::fs::write(&path, text).unwrap();
}

fn row<'a>(derived: &'a Value, phase: &str) -> &'a Value {
    derived["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["phase"] == phase)
        .unwrap_or_else(|| panic!("no row for phase {phase}: {derived}"))
}

#[test]
fn parenthesized_timestamps_and_plan_md_exit_gates_confirm_a_finished_phase() {
    let env = clau_kit_env("**Exit gate:** `node -e \"process.exit(0)\" || true` → exit 0");
    let base = sha(&env, "HEAD");
    commit(&env, "greet.js");
    let head = sha(&env, "HEAD");
    // ClauKit's documented timestamp: an ISO-8601 suffix in parentheses.
    append(
        &env,
        &[
            format!("phase 1: started (base {base}) (2026-01-01T09:00:00Z)"),
            "phase 1: gate exit-gate → PASS (evidence: node -e ... → exit 0) (2026-01-01T09:10:00Z)"
                .to_string(),
            format!(
                "phase 1: complete (commits {base}..{head}, tests 1/1, review clean) (2026-01-01T09:20:00Z)"
            ),
        ],
    );
    let check = env.baton("s", 1, &["--json", "ledger", "check", PLAN]);
    assert_eq!(
        check.json()["bad"],
        Value::Array(vec![]),
        "{}",
        check.stdout
    );
    let out = env.baton("s", 1, &["--json", "ledger", "derive", PLAN]);
    out.assert_code(0);
    let d = out.json();
    let one = row(&d, "1");
    assert_eq!(one["verdict"], "CONFIRMED", "{d}");
    assert_eq!(one["gates"], "exit-gate PASS", "{d}");
    assert_eq!(d["resume_at"], "2");

    // `gate run` runs the plan.md gate of a phase and records it.
    let out = env.baton("s", 2, &["gate", "run", PLAN, "--phase", "2"]);
    out.assert_code(0);
    assert!(
        crate::common::without_trees(&out.stdout)
            .contains("phase 2: gate exit-gate → PASS (evidence: true → exit 0)"),
        "{}",
        out.stdout
    );
}

#[test]
fn gates_baton_cannot_read_are_findings_and_never_confirm() {
    // A tilde fence is read; an expectation that is not an exit code is not a gate baton can
    // re-run, so the phase cannot be confirmed by it.
    let env = clau_kit_env("**Exit gate:** `npm test -- claims.test.js` → 12 pass, 0 fail");
    env.write(
        "plans/greet/phase-1-greet.md",
        "~~~gates\nlint: true → exit 0\n~~~\n",
    );
    let base = sha(&env, "HEAD");
    commit(&env, "greet.js");
    let head = sha(&env, "HEAD");
    append(
        &env,
        &[
            format!("phase 1: started (base {base})"),
            format!("phase 1: complete (commits {base}..{head}, tests 1/1, review clean)"),
        ],
    );
    let out = env.baton("s", 1, &["--json", "ledger", "derive", PLAN]);
    let d = out.json();
    let one = row(&d, "1");
    assert_eq!(one["gates"], "lint PASS", "the tilde fence is read: {d}");
    assert_eq!(
        (&one["verdict"], &one["rule"]),
        (
            &Value::from("STALE"),
            &Value::from("ledger.gate-unreadable")
        ),
        "{d}"
    );
    let warnings = d["warnings"].to_string();
    assert!(warnings.contains("12 pass, 0 fail"), "{d}");
    let text = env.baton("s", 1, &["ledger", "derive", PLAN]);
    assert!(
        text.stderr.contains("not a gate line baton can run"),
        "{}",
        text.stderr
    );
}

#[test]
fn a_phase_claiming_no_commits_is_never_confirmed_by_a_gate_on_uncommitted_files() {
    let env = clau_kit_env("**Exit gate:** `test -f greet.js` → exit 0");
    let base = sha(&env, "HEAD");
    // The work exists only as an untracked file; the gate passes on it.
    env.write("greet.js", "work\n");
    let out = env.baton(
        "s",
        1,
        &[
            "ledger",
            "complete",
            PLAN,
            "--phase",
            "1",
            "--commits",
            &format!("{base}..{base}"),
            "--tests",
            "1/1",
        ],
    );
    out.assert_code(2);
    assert!(out.stderr.contains("holds no commit"), "{}", out.stderr);
    // ClauKit's own resume fixture writes such a line by hand.
    append(
        &env,
        &[
            format!("phase 1: started (base {base})"),
            format!("phase 1: complete (commits {base}..{base}, tests 1/1, review clean)"),
        ],
    );
    let d = env
        .baton("s", 2, &["--json", "ledger", "derive", PLAN])
        .json();
    let one = row(&d, "1");
    assert_eq!(one["gates"], "exit-gate PASS");
    assert_eq!(
        (&one["verdict"], &one["rule"]),
        (&Value::from("STALE"), &Value::from("ledger.no-commits")),
        "{d}"
    );
    assert_eq!(d["resume_at"], "1");
}

#[test]
fn an_unknown_start_commit_contradicts_like_an_unknown_end() {
    let env = clau_kit_env("**Exit gate:** `true` → exit 0");
    commit(&env, "greet.js");
    let head = sha(&env, "HEAD");
    append(
        &env,
        &[
            "phase 1: started (base deadbee)".to_string(),
            format!("phase 1: complete (commits deadbee..{head}, tests 1/1, review clean)"),
        ],
    );
    let d = env
        .baton("s", 1, &["--json", "ledger", "derive", PLAN])
        .json();
    let one = row(&d, "1");
    assert_eq!(
        (&one["verdict"], &one["rule"]),
        (
            &Value::from("CONTRADICTED"),
            &Value::from("ledger.unknown-commit")
        ),
        "{d}"
    );
    assert!(one["why"].as_str().unwrap().contains("deadbee"));
}

#[test]
fn gate_output_with_control_bytes_is_written_escaped() {
    let env = clau_kit_env("**Exit gate:** `printf 'ok \\033[32mgreen\\033[0m\\001\\n'` → exit 0");
    let out = env.baton("s", 1, &["gate", "run", PLAN, "--phase", "1"]);
    out.assert_code(0);
    let ledger = std::fs::read(env.repo.join(PLAN).join("STATE.md")).unwrap();
    assert!(
        ledger.iter().all(|&b| b == b'\n' || !b.is_ascii_control()),
        "{}",
        String::from_utf8_lossy(&ledger)
    );
    assert!(
        String::from_utf8_lossy(&ledger).contains(r"ok \u{1b}[32mgreen"),
        "{}",
        String::from_utf8_lossy(&ledger)
    );
}

#[test]
fn values_outside_their_range_are_invalid_and_write_nothing() {
    let env = clau_kit_env("**Exit gate:** `true` → exit 0");
    let base = sha(&env, "HEAD");
    commit(&env, "greet.js");
    let head = sha(&env, "HEAD");
    let ledger = env.repo.join(PLAN).join("STATE.md");
    let before = std::fs::read(&ledger).unwrap();
    for args in [
        vec![
            "ledger",
            "complete",
            PLAN,
            "--phase",
            "1",
            "--commits",
            &format!("{base}..{head}"),
            "--tests",
            "43/42",
        ],
        vec!["ledger", "baseline", PLAN, "--tests", "5/4"],
        vec!["gate", "run", PLAN, "--phase", "1", "--timeout", "0"],
        vec!["ledger", "derive", PLAN, "--timeout", "0"],
    ] {
        let out = env.baton("s", 1, &args);
        out.assert_code(2);
        assert_eq!(std::fs::read(&ledger).unwrap(), before, "{args:?}");
    }
    env.write("plan.md", "# plan\n");
    env.git(&["add", "plan.md"]);
    env.git(&["commit", "--quiet", "-m", "plan"]);
    let out = env.baton("A", 0, &["--json", "run", "new", "--plan", "plan.md"]);
    let id = out.json()["run_id"].as_str().unwrap().to_string();
    let out = env.baton(
        "A",
        1,
        &[
            "run",
            "record",
            &id,
            "--step",
            "plan",
            "--status",
            "finished-ish",
        ],
    );
    out.assert_code(2);
    env.baton(
        "A",
        1,
        &["run", "record", &id, "--step", "plan", "--status", "passed"],
    )
    .assert_code(0);
}

#[test]
fn warnings_go_to_stderr_or_the_json_object_never_into_stdout() {
    let env = TestEnv::new();
    env.write(".gitignore", "plans/\n");
    env.git(&["add", ".gitignore"]);
    env.git(&["commit", "--quiet", "-m", "ignore plans"]);
    std::fs::create_dir_all(env.repo.join(PLAN)).unwrap();
    let out = env.baton("s", 0, &["ledger", "init", PLAN]);
    out.assert_code(0);
    assert!(!out.stdout.contains("git ignores"), "{}", out.stdout);
    assert!(
        out.stderr.contains("warning: git ignores"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("!plans/**/STATE.md"), "{}", out.stderr);
    let out = env.baton("s", 0, &["--json", "ledger", "check", PLAN]);
    assert!(
        out.json()["warnings"][0]
            .as_str()
            .unwrap()
            .contains("git ignores")
    );
    assert!(out.stderr.is_empty());

    env.write(
        "plans/greet/phase-1.md",
        "```gates\nnot a gate line\nok: true → exit 0\n```\n",
    );
    let out = env.baton("s", 1, &["gate", "run", PLAN, "--phase", "1"]);
    out.assert_code(0);
    assert!(!out.stdout.contains("not a gate line"), "{}", out.stdout);
    assert!(
        out.stderr
            .contains("warning: not a gate line baton can run"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_gate_passing_on_uncommitted_files_does_not_confirm() {
    let env = clau_kit_env("**Exit gate:** `test -f greet.txt` → exit 0");
    let base = sha(&env, "HEAD");
    commit(&env, "unrelated.txt");
    let head = sha(&env, "HEAD");
    env.write("greet.txt", "only on disk\n");
    append(
        &env,
        &[
            format!("phase 1: started (base {base})"),
            format!("phase 1: complete (commits {base}..{head}, tests 1/1, review clean)"),
        ],
    );
    let d = env
        .baton("s", 1, &["--json", "ledger", "derive", PLAN])
        .json();
    let one = row(&d, "1");
    assert_eq!(
        (&one["verdict"], &one["rule"]),
        (&Value::from("STALE"), &Value::from("ledger.dirty-tree")),
        "{d}"
    );
}

#[test]
fn every_append_passes_the_same_checks_and_stays_text() {
    let env = clau_kit_env("**Exit gate:** `true` → exit 0");
    let base = sha(&env, "HEAD");
    let full = env.git(&["rev-parse", "HEAD"]).trim().to_string();
    let ledger = env.repo.join(PLAN).join("STATE.md");
    let before = std::fs::read(&ledger).unwrap();
    for line in [
        format!("phase 1: complete (commits {base}..{base}, tests 1/1, review clean)"),
        format!("phase 1: complete (commits {base}..{full}, tests 1/1, review clean)"),
        "baseline: 43/42 (0000000)".to_string(),
    ] {
        env.baton("s", 1, &["ledger", "append", PLAN, &line])
            .assert_code(2);
    }
    env.baton(
        "s",
        1,
        &[
            "ledger",
            "gate",
            PLAN,
            "--phase",
            "1",
            "--name",
            "t",
            "--pass",
            "--cmd",
            "printf '\x1b[31m'",
            "--result",
            "ok",
        ],
    )
    .assert_code(2);
    assert_eq!(std::fs::read(&ledger).unwrap(), before);

    // A fence meant as gates but not read as one is a finding, never dropped in silence.
    env.write(
        "plans/greet/phase-1.md",
        "```GATES\nlint: true → exit 0\n```\n",
    );
    let out = env.baton("s", 2, &["gate", "run", PLAN, "--phase", "1"]);
    assert!(
        out.stderr.contains("info string `gates` alone"),
        "{}",
        out.stderr
    );
}
