//! Rules of the seeds that were kept only in part: the owed critic round that clears, the
//! operator's escape hatch for staged files, no fresh start beside a resumable run, the feature
//! beside a drift, and the ledger's own discipline (committed with its phase, an event at every
//! gate, the baseline beside a failing test gate).

use serde_json::Value;

use crate::common::{TestEnv, rules};

const PLAN: &str = "docs/plan.md";
const PROJECT: &str = "## GOALS\n- g\n## SCOPE\n- s\n## CONSTRAINTS\n- c\n";

fn project(plan: &str, minutes_old: i64) -> TestEnv {
    let env = TestEnv::new();
    env.write(".claude/PROJECT.md", PROJECT);
    env.git(&["add", "."]);
    env.git(&["commit", "--quiet", "-m", "project"]);
    write_plan(&env, plan, minutes_old);
    env
}

fn write_plan(env: &TestEnv, plan: &str, minutes_old: i64) {
    env.write(PLAN, plan);
    env.set_age(PLAN, minutes_old);
}

fn new_run(env: &TestEnv, minute: i64, extra: &[&str]) -> String {
    let mut args = vec!["--json", "run", "new", "--plan", PLAN];
    args.extend_from_slice(extra);
    let out = env.baton("A", minute, &args);
    out.assert_code(0);
    out.json()["run_id"].as_str().unwrap().to_string()
}

#[test]
fn the_owed_critic_round_clears_once_per_plan_version() {
    let env = project("# Plan\n\n1. Edit hooks/guard.py.\n", 6 * 60);
    let id = new_run(&env, -6 * 60, &[]);
    let v = env.baton("A", 0, &["--json", "run", "resume", &id]).json();
    assert_eq!(v["verdict"], "critic", "{v}");
    env.baton("A", 1, &["run", "record", &id, "--agent", "plan-critic"])
        .assert_code(0);
    let v = env.baton("A", 2, &["--json", "run", "resume", &id]).json();
    assert_eq!(v["verdict"], "ratify", "the round is done: {v}");
    assert!(rules(&v).contains(&"run.critic-done".to_string()), "{v}");
    // A new version of the plan owes its own round, and may record it.
    write_plan(
        &env,
        "# Plan\n\n1. Edit hooks/guard.py and hooks/auth.py.\n",
        -3,
    );
    let v = env.baton("A", 3, &["--json", "run", "resume", &id]).json();
    assert_eq!(v["verdict"], "critic", "{v}");
    env.baton("A", 4, &["run", "record", &id, "--agent", "plan-critic"])
        .assert_code(0);
    let v = env.baton("A", 5, &["--json", "run", "resume", &id]).json();
    assert_eq!(v["verdict"], "ratify", "{v}");
    // The same version twice is still refused.
    env.baton("A", 6, &["run", "record", &id, "--agent", "plan-critic"])
        .assert_code(3);
}

#[test]
fn the_operators_escape_hatch_lets_staged_files_through_and_is_recorded() {
    let env = project("# Plan\n", 30);
    let id = new_run(&env, -30, &[]);
    env.write("wip.rs", "x\n");
    env.git(&["add", "wip.rs"]);
    let out = env.baton("A", 0, &["--json", "run", "resume", &id]);
    out.assert_code(3);
    assert!(
        out.json()["next"]
            .as_str()
            .unwrap()
            .contains("--allow-staged")
    );
    let out = env.baton("A", 1, &["--json", "run", "resume", &id, "--allow-staged"]);
    out.assert_code(0);
    assert_eq!(out.json()["verdict"], "ratify", "{}", out.stdout);
    let run = env.read_run(&id);
    assert_eq!(run["staged_allowed"][0]["files"][0], "wip.rs", "{run}");
    assert_eq!(run["staged_allowed"][0]["session"], "A", "{run}");
}

#[test]
fn no_fresh_start_beside_a_resumable_run_of_the_same_plan() {
    let env = project("# Plan\n", 30);
    let first = new_run(&env, -30, &[]);
    let out = env.baton("B", 0, &["--json", "run", "new", "--plan", PLAN]);
    out.assert_code(4);
    let v = out.json();
    assert!(v["reasons"].to_string().contains(&first), "{v}");
    let next = v["next"].as_str().unwrap();
    assert!(
        next.contains(&format!("baton run resume {first}")) && next.contains("--fresh"),
        "{v}"
    );
    assert_eq!(env.store().list_runs(None).unwrap().len(), 1);

    let second = new_run(&env, 1, &["--fresh"]);
    let old = env.read_run(&first);
    assert_eq!(old["status"], "abandoned", "{old}");
    assert_eq!(old["abandoned_for"]["run"], second, "{old}");

    // Another plan only gets a note.
    env.write("docs/other.md", "# Other\n");
    let out = env.baton("B", 2, &["run", "new", "--plan", "docs/other.md"]);
    out.assert_code(0);
    assert!(out.stderr.contains(&second), "{}", out.stderr);
}

#[test]
fn a_drift_is_shown_beside_the_feature_being_confirmed() {
    let env = project("# Plan\n", 30);
    let id = new_run(&env, -30, &["--feature", "rate limiter"]);
    env.write(
        ".claude/PROJECT.md",
        &PROJECT.replace("- s", "- s, and more"),
    );
    let out = env.baton("A", 0, &["run", "resume", &id]);
    out.assert_code(4);
    let feature = out
        .stdout
        .find("the run implements: rate limiter")
        .expect(&out.stdout);
    let diff = out.stdout.find("--- SCOPE changed ---").expect(&out.stdout);
    assert!(feature < diff, "{}", out.stdout);
    let v = env.baton("A", 0, &["--json", "run", "resume", &id]).json();
    assert_eq!(v["feature"], "rate limiter");
}

const LEDGER_PLAN: &str = "plans/x";

fn ledger_env() -> TestEnv {
    let env = TestEnv::new();
    env.write("plans/x/plan.md", "# Plan\n");
    env.write(
        "plans/x/phase-1.md",
        "```gates\ntests: printf 'exit 1: 2 failed, 40 passed\\n'; test -f fixed.txt → exit 0\n```\n",
    );
    env.git(&["add", "."]);
    env.git(&["commit", "--quiet", "-m", "plan"]);
    env.baton("s", 0, &["ledger", "init", LEDGER_PLAN])
        .assert_code(0);
    env
}

fn findings(v: &Value) -> Vec<String> {
    v["findings"]
        .as_array()
        .unwrap_or_else(|| panic!("{v}"))
        .iter()
        .map(|f| f["rule"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_ledger_is_committed_with_the_phase_it_records() {
    let env = ledger_env();
    let v = env
        .baton("s", 1, &["--json", "ledger", "check", LEDGER_PLAN])
        .json();
    assert!(
        findings(&v).contains(&"ledger.uncommitted".to_string()),
        "{v}"
    );
    assert!(
        v["findings"]
            .to_string()
            .contains("baton ledger commit plans/x"),
        "{v}"
    );
    let out = env.baton("s", 1, &["ledger", "derive", LEDGER_PLAN]);
    assert!(out.stderr.contains("ledger.uncommitted"), "{}", out.stderr);

    env.baton("s", 2, &["ledger", "start", LEDGER_PLAN, "--phase", "1"])
        .assert_code(0);
    env.write("work.txt", "phase 1\n");
    env.git(&["add", "work.txt"]);
    env.git(&["commit", "--quiet", "-m", "phase 1 work"]);
    env.baton("s", 3, &["gate", "run", LEDGER_PLAN, "--phase", "1"])
        .assert_code(0);
    let out = env.baton(
        "s",
        4,
        &[
            "--json",
            "ledger",
            "complete",
            LEDGER_PLAN,
            "--phase",
            "1",
            "--tests",
            "40/42",
            "--commit",
        ],
    );
    out.assert_code(0);
    assert!(out.json()["commit"].is_string(), "{}", out.stdout);
    assert!(
        env.git(&["status", "--porcelain", "plans/x/STATE.md"])
            .is_empty()
    );
    let v = env
        .baton("s", 5, &["--json", "ledger", "check", LEDGER_PLAN])
        .json();
    assert!(findings(&v).is_empty(), "{v}");
}

#[test]
fn a_complete_with_no_start_or_no_gate_line_is_reported() {
    let env = ledger_env();
    env.write("work.txt", "phase 1\n");
    env.git(&["add", "work.txt"]);
    env.git(&["commit", "--quiet", "-m", "phase 1 work"]);
    let head = env
        .git(&["rev-parse", "--short=7", "HEAD"])
        .trim()
        .to_string();
    let parent = env
        .git(&["rev-parse", "--short=7", "HEAD~1"])
        .trim()
        .to_string();
    env.baton(
        "s",
        1,
        &[
            "ledger",
            "complete",
            LEDGER_PLAN,
            "--phase",
            "1",
            "--commits",
            &format!("{parent}..{head}"),
            "--tests",
            "42/42",
        ],
    )
    .assert_code(0);
    let v = env
        .baton("s", 2, &["--json", "ledger", "check", LEDGER_PLAN])
        .json();
    let rules = findings(&v);
    assert!(
        rules.contains(&"ledger.complete-without-start".to_string()),
        "{v}"
    );
    assert!(
        rules.contains(&"ledger.complete-without-gate".to_string()),
        "{v}"
    );
    let text = env.baton("s", 2, &["ledger", "check", LEDGER_PLAN]);
    assert!(
        text.stdout
            .contains("finding: ledger.complete-without-gate"),
        "{}",
        text.stdout
    );
}

#[test]
fn a_failing_test_gate_is_shown_beside_the_baseline() {
    let env = ledger_env();
    env.baton(
        "s",
        1,
        &["ledger", "baseline", LEDGER_PLAN, "--tests", "40/42"],
    )
    .assert_code(0);
    env.baton("s", 1, &["ledger", "start", LEDGER_PLAN, "--phase", "1"])
        .assert_code(0);
    env.write("fixed.txt", "x\n");
    env.git(&["add", "-A"]);
    env.git(&["commit", "--quiet", "-m", "phase 1 work"]);
    env.baton("s", 2, &["gate", "run", LEDGER_PLAN, "--phase", "1"])
        .assert_code(0);
    env.baton(
        "s",
        3,
        &[
            "ledger",
            "complete",
            LEDGER_PLAN,
            "--phase",
            "1",
            "--tests",
            "40/42",
            "--commit",
        ],
    )
    .assert_code(0);
    // The fix is reverted: the gate fails now, with the same two failures as the baseline.
    env.git(&["rm", "--quiet", "fixed.txt"]);
    env.git(&["commit", "--quiet", "-m", "revert"]);
    let v = env
        .baton("s", 4, &["--json", "ledger", "derive", LEDGER_PLAN])
        .json();
    let row = &v["rows"][0];
    assert_eq!(row["verdict"], "CONTRADICTED", "{v}");
    let baseline = row["baseline"].as_str().unwrap_or_else(|| panic!("{v}"));
    assert!(baseline.contains("baseline 40/42"), "{v}");
    assert!(baseline.contains("within the baseline"), "{v}");
}

#[test]
fn a_confirmed_drift_owes_a_new_critic_round_even_after_one_for_the_same_plan() {
    let env = project("# Plan\n\n1. Edit hooks/guard.py.\n", 6 * 60);
    let id = new_run(&env, -6 * 60, &[]);
    env.baton("A", 1, &["run", "record", &id, "--agent", "plan-critic"])
        .assert_code(0);
    env.write(
        ".claude/PROJECT.md",
        &PROJECT.replace("- g", "- g, and more"),
    );
    let v = env
        .baton(
            "A",
            2,
            &["--json", "run", "resume", &id, "--confirm-alignment"],
        )
        .json();
    assert_eq!(v["verdict"], "critic", "{v}");
    env.baton("A", 3, &["run", "record", &id, "--agent", "plan-critic"])
        .assert_code(0);
    let v = env.baton("A", 4, &["--json", "run", "resume", &id]).json();
    assert_eq!(v["verdict"], "ratify", "{v}");
}

#[test]
fn a_fresh_start_never_takes_a_run_a_live_holder_works_on_nor_a_loop_before_its_reset() {
    let env = project("# Plan\n", 30);
    let first = new_run(&env, 0, &[]);
    let out = env.baton("B", 1, &["--json", "run", "new", "--plan", PLAN, "--fresh"]);
    out.assert_code(3);
    assert!(out.json()["reasons"].to_string().contains(&first));
    let run = env.read_run(&first);
    assert_eq!(run["status"], "active", "{run}");

    env.baton("A", 0, &["loop", "init", "PROJ-1"])
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
            "2h",
        ],
    )
    .assert_code(0);
    env.baton("B", 5, &["resume", "fresh", "PROJ-1"])
        .assert_code(3);
    assert!(env.has_loop("PROJ-1"));
}
