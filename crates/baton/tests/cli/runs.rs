//! `baton run`: the single-run resume protocol (docs/single-run.md) end to end. The four ordered
//! checks (HEAD, staging, alignment, lock), the plan staleness gate, the restoration, the run
//! lock as a lease held for a real process, hostile ids and imports, pruning and file modes.
//!
//! A plan's age is its mtime against `BATON_NOW`, so each plan's mtime is set relative to `T0`
//! and its run is started at the plan's time. Wherever two sessions contend for the lock, each
//! names its holder process (`--pid`, or `CLAUDE_PID`), so that no agent process among the test
//! runner's ancestors can stand in for both.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use serde_json::{Value, json};

use crate::common::{Holder, Run, TestEnv, at, named, pg_mode, rules, run_key, to_run};

pub const PROJECT: &str = "\
# Project

## GOALS

- Make interrupted runs resumable.

## SCOPE

- In scope: the single-run resume protocol.
- Out of scope: the web dashboard.

## CONSTRAINTS

- No daemon.
";

const PLAN: &str = "docs/plan.md";
const SAFE_PLAN: &str =
    "# Plan\n\n1. Edit src/run.rs and tests/run.rs.\n2. Update docs/single-run.md.\n";
const SENSITIVE_PLAN: &str =
    "# Plan\n\n1. Edit hooks/guard.py to check the run id.\n2. Update src/run.rs.\n";

const LOCK_MESSAGE: &str =
    "Another /implement is active on run_id {id}; wait for it to complete or use a fresh run_id.";

/// A project with the alignment file committed.
fn project() -> TestEnv {
    let env = TestEnv::new();
    env.write(".claude/PROJECT.md", PROJECT);
    env.git(&["add", "."]);
    env.git(&["commit", "--quiet", "-m", "alignment"]);
    env
}

/// Writes the plan and sets its mtime `minutes_old` minutes before `T0`.
fn write_plan(env: &TestEnv, text: &str, minutes_old: i64) {
    env.write(PLAN, text);
    env.set_age(PLAN, minutes_old);
}

/// `baton run new` as `session` at `T0 + minute`; returns the run id and the JSON answer.
fn new_run(env: &TestEnv, session: &str, minute: i64, extra: &[&str]) -> (String, Value) {
    let mut args = vec!["--json", "run", "new"];
    args.extend_from_slice(extra);
    let out = env.baton(session, minute, &args);
    out.assert_code(0);
    let json = out.json();
    let id = json["run_id"].as_str().expect("run_id").to_string();
    assert_eq!(id.len(), 16, "{json}");
    assert!(
        id.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
        "{id}"
    );
    (id, json)
}

/// A run planned against `PLAN`, written `minutes_old` before `T0` and started at that time.
fn planned_run(env: &TestEnv, plan: &str, minutes_old: i64, extra: &[&str]) -> String {
    write_plan(env, plan, minutes_old);
    let mut args = vec!["--plan", PLAN];
    args.extend_from_slice(extra);
    new_run(env, "A", -minutes_old, &args).0
}

fn head(env: &TestEnv) -> String {
    env.git(&["rev-parse", "HEAD"]).trim().to_string()
}

fn run_file(env: &TestEnv, id: &str) -> PathBuf {
    env.state_dir().join("runs").join(format!("{id}.json"))
}

fn resume(env: &TestEnv, session: &str, minute: i64, id: &str, extra: &[&str]) -> Run {
    let mut args = vec!["--json", "run", "resume", id];
    args.extend_from_slice(extra);
    env.baton(session, minute, &args)
}

#[track_caller]
fn assert_checks(out: &Value, expected: [bool; 4]) {
    let checks = out["checks"].as_array().unwrap_or_else(|| panic!("{out}"));
    let names: Vec<&str> = checks
        .iter()
        .map(|c| c["check"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["head", "staging", "alignment", "lock"], "{out}");
    let passes: Vec<bool> = checks
        .iter()
        .map(|c| c["pass"].as_bool().unwrap())
        .collect();
    assert_eq!(passes, expected, "{out}");
    for c in checks {
        assert!(
            c["evidence"].as_str().is_some_and(|e| !e.is_empty()),
            "every check carries its evidence: {out}"
        );
    }
}

// 1. HEAD check

#[test]
fn a_commit_after_run_new_means_replan_even_for_the_same_session() {
    let env = project();
    let id = planned_run(&env, SAFE_PLAN, 30, &[]);
    let base = head(&env);
    assert_eq!(env.read_run(&id)["base_commit"], base);
    env.write("src/new.rs", "fn new() {}\n");
    env.git(&["add", "."]);
    env.git(&["commit", "--quiet", "-m", "someone else's work"]);

    let out = resume(&env, "A", 0, &id, &[]);
    out.assert_code(0);
    let out = out.json();
    assert_eq!(out["verdict"], "replan", "{out}");
    assert_eq!(rules(&out)[0], "run.head-moved", "{out}");
    assert_checks(&out, [false, true, true, true]);
    assert!(
        out["checks"][0]["evidence"]
            .as_str()
            .unwrap()
            .contains(&base[..12]),
        "the evidence names the recorded base commit: {out}"
    );
    assert_eq!(out["lock_acquired"], true, "{out}");
    // Even with a 30-minute-old plan and nothing else changed: never ratify after HEAD moved.
    let text = env.baton("A", 1, &["run", "resume", &id]);
    text.assert_code(0);
    assert!(
        text.stdout.contains("check 1 head      FAIL"),
        "{}",
        text.stdout
    );
    assert!(text.stdout.contains("verdict: replan"), "{}", text.stdout);
    assert!(!text.stdout.contains("ratify"), "{}", text.stdout);
}

// 2. Staging check

#[test]
fn a_staged_file_blocks_with_the_three_options() {
    let env = project();
    let id = planned_run(&env, SAFE_PLAN, 30, &[]);
    env.write("src/staged.rs", "fn staged() {}\n");
    env.git(&["add", "src/staged.rs"]);
    let before = env.snapshot();

    let out = resume(&env, "A", 0, &id, &[]);
    out.assert_code(3);
    let json = out.json();
    assert_eq!(json["verdict"], "blocked", "{json}");
    assert_eq!(rules(&json), ["run.staged-files"], "{json}");
    assert_checks(&json, [true, false, true, true]);
    assert!(
        json["checks"][1]["evidence"]
            .as_str()
            .unwrap()
            .contains("src/staged.rs"),
        "{json}"
    );
    let next = json["next"].as_str().unwrap();
    for option in [
        "commit the staged files and restart",
        "unstage them",
        "operator escape hatch",
    ] {
        assert!(next.contains(option), "next names {option:?}: {next}");
    }
    assert_eq!(json["lock_acquired"], false, "{json}");
    assert_eq!(env.snapshot(), before, "a blocked resume changes nothing");

    let text = env.baton("A", 0, &["run", "resume", &id]);
    text.assert_code(3);
    assert!(text.stdout.contains("verdict: blocked"), "{}", text.stdout);
    assert!(
        text.stdout.contains("operator escape hatch"),
        "{}",
        text.stdout
    );
    assert_eq!(env.snapshot(), before);
}

// 3. Alignment check

#[test]
fn an_edited_scope_asks_for_confirmation_with_a_diff_then_confirm_alignment_proceeds() {
    let env = project();
    let id = planned_run(&env, SAFE_PLAN, 30, &[]);
    env.write(
        ".claude/PROJECT.md",
        &PROJECT.replace(
            "- In scope: the single-run resume protocol.",
            "- In scope: the web dashboard only.",
        ),
    );
    let before = env.snapshot();

    let out = resume(&env, "A", 0, &id, &[]);
    out.assert_code(4);
    let json = out.json();
    assert_eq!(json["verdict"], "confirm", "{json}");
    assert_eq!(rules(&json), ["run.alignment-drift"], "{json}");
    assert!(
        json["reasons"][0]["message"]
            .as_str()
            .unwrap()
            .contains("SCOPE"),
        "{json}"
    );
    assert_checks(&json, [true, true, false, true]);
    let drift = json["drift"].as_array().unwrap();
    assert_eq!(drift.len(), 1, "only SCOPE changed: {json}");
    assert_eq!(drift[0]["section"], "SCOPE", "{json}");
    let diff = drift[0]["diff"].as_str().unwrap();
    assert!(
        diff.contains("- - In scope: the single-run resume protocol."),
        "the diff shows the old line: {diff}"
    );
    assert!(
        diff.contains("+ - In scope: the web dashboard only."),
        "the diff shows the new line: {diff}"
    );
    assert!(
        json["next"]
            .as_str()
            .unwrap()
            .contains(&format!("baton run resume {id} --confirm-alignment")),
        "{json}"
    );
    assert_eq!(json["lock_acquired"], false, "{json}");
    assert_eq!(env.snapshot(), before, "a confirm changes nothing");

    let text = env.baton("A", 0, &["run", "resume", &id]);
    text.assert_code(4);
    assert!(
        text.stdout.contains("--- SCOPE changed ---"),
        "{}",
        text.stdout
    );
    assert!(
        text.stdout
            .contains("+ - In scope: the web dashboard only.")
    );
    assert_eq!(env.snapshot(), before);

    let confirmed = resume(&env, "A", 1, &id, &["--confirm-alignment"]);
    confirmed.assert_code(0);
    let confirmed = confirmed.json();
    // The plan was validated against the old SCOPE: never ratified as it is, a critic round is
    // owed, and stays owed until one is recorded.
    assert_eq!(confirmed["verdict"], "critic", "{confirmed}");
    assert_eq!(rules(&confirmed), ["run.critic-owed"], "{confirmed}");
    assert_eq!(confirmed["lock_acquired"], true, "{confirmed}");
    let again = resume(&env, "A", 2, &id, &[]);
    again.assert_code(0);
    assert_eq!(
        again.json()["verdict"],
        "critic",
        "the confirmed sections are the baseline, the critic is still owed: {}",
        again.stdout
    );
    env.baton("A", 2, &["run", "record", &id, "--agent", "plan-critic"])
        .assert_code(0);
    let after_critic = resume(&env, "A", 3, &id, &[]);
    assert_eq!(
        after_critic.json()["verdict"],
        "ratify",
        "{}",
        after_critic.stdout
    );
    let scope = env.read_run(&id)["alignment"]["sections"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "SCOPE")
        .cloned()
        .unwrap();
    assert!(
        scope["text"]
            .as_str()
            .unwrap()
            .contains("the web dashboard only"),
        "{scope}"
    );
}

// 4. The staleness gate and the restoration

#[test]
fn a_plan_over_24_hours_old_means_replan() {
    let env = project();
    // It names a security-sensitive path too: over 24 hours a critic round is not enough.
    let id = planned_run(&env, SENSITIVE_PLAN, 25 * 60, &[]);
    let out = resume(&env, "A", 0, &id, &[]);
    out.assert_code(0);
    let out = out.json();
    assert_eq!(out["verdict"], "replan", "{out}");
    assert_eq!(rules(&out), ["run.gap-over-24h"], "{out}");
    assert_checks(&out, [true, true, true, true]);
    assert_eq!(out["gap_secs"], 25 * 3600, "{out}");
}

#[test]
fn a_plan_5_hours_old_naming_a_hook_needs_a_critic_round() {
    let env = project();
    let id = planned_run(&env, SENSITIVE_PLAN, 5 * 60, &[]);
    let out = resume(&env, "A", 0, &id, &[]);
    out.assert_code(0);
    let out = out.json();
    assert_eq!(out["verdict"], "critic", "{out}");
    assert_eq!(rules(&out), ["run.gap-security"], "{out}");
    assert!(
        out["reasons"][0]["message"]
            .as_str()
            .unwrap()
            .contains("hooks/guard.py"),
        "{out}"
    );
}

#[test]
fn a_plan_5_hours_old_naming_nothing_sensitive_is_not_ratified() {
    let env = project();
    let id = planned_run(&env, SAFE_PLAN, 5 * 60, &[]);
    let out = resume(&env, "A", 0, &id, &[]);
    out.assert_code(0);
    let out = out.json();
    assert_eq!(out["verdict"], "critic", "{out}");
    assert_eq!(rules(&out), ["run.gap-unsanctioned"], "{out}");

    let env = project();
    let id = planned_run(&env, SAFE_PLAN, 5 * 60, &["--mid-gap", "replan"]);
    let out = resume(&env, "A", 0, &id, &[]);
    out.assert_code(0);
    let out = out.json();
    assert_eq!(out["verdict"], "replan", "{out}");
    assert_eq!(rules(&out), ["run.gap-unsanctioned"], "{out}");
}

#[test]
fn a_30_minute_old_plan_with_nothing_changed_is_ratified_and_the_run_restored() {
    let env = project();
    let id = planned_run(&env, SENSITIVE_PLAN, 30, &[]);
    for agent in ["researcher", "planner"] {
        env.baton("A", -25, &["run", "record", &id, "--agent", agent])
            .assert_code(0);
    }
    env.baton(
        "A",
        -20,
        &[
            "run",
            "record",
            &id,
            "--step",
            "implement",
            "--status",
            "pending",
        ],
    )
    .assert_code(0);

    let out = resume(&env, "A", 0, &id, &[]);
    out.assert_code(0);
    let json = out.json();
    assert_eq!(json["verdict"], "ratify", "{json}");
    assert_eq!(rules(&json), ["run.ratify"], "{json}");
    assert_checks(&json, [true, true, true, true]);
    assert_eq!(json["gap_secs"], 30 * 60, "{json}");
    assert_eq!(
        json["restore"],
        json!({
            "completed_agents": ["researcher", "planner"],
            "last": "agent planner",
            "next_step": "implement (pending)",
        }),
        "{json}"
    );
    let state_file = json["state_file"].as_str().unwrap();
    if pg_mode() {
        assert!(
            state_file.ends_with(&named(&format!("runs/{id}.json"))),
            "{json}"
        );
    } else {
        assert_eq!(
            Path::new(state_file).canonicalize().unwrap(),
            run_file(&env, &id).canonicalize().unwrap(),
            "{json}"
        );
    }
    assert_eq!(json["lock_acquired"], true, "{json}");
    assert_eq!(json["epoch"], 1, "the same holder keeps its epoch: {json}");

    let text = env.baton("A", 1, &["run", "resume", &id]);
    text.assert_code(0);
    let lines: Vec<&str> = text.stdout.lines().collect();
    assert!(lines.contains(&"verdict: ratify"), "{}", text.stdout);
    assert!(
        lines.contains(&"completed agents (never re-dispatch): researcher, planner"),
        "{}",
        text.stdout
    );
    assert!(
        lines.contains(&"next step: implement (pending)"),
        "{}",
        text.stdout
    );
    let line = format!("PIPELINE_STATE_FILE={state_file}");
    assert!(
        lines.contains(&line.as_str()),
        "{line:?} in:\n{}",
        text.stdout
    );
}

// 5. The run lock as a lease

#[test]
fn a_killed_holder_is_taken_over_with_the_next_epoch() {
    let env = project();
    write_plan(&env, SAFE_PLAN, 30);
    let mut holder = Holder::start();
    let (id, created) = new_run(&env, "A", -30, &["--plan", PLAN, "--pid", &holder.pid()]);
    assert_eq!(created["epoch"], 1, "{created}");
    let file = env.read_run(&id);
    assert_eq!(
        file["lease"]["pid"].as_u64(),
        Some(u64::from(holder.0.id()))
    );
    assert_eq!(file["lease"]["pid_source"], "flag");

    // The heartbeat is fresh throughout: only the process decides.
    let other = Holder::start();
    let blocked = resume(&env, "B", -29, &id, &["--pid", &other.pid()]);
    blocked.assert_code(3);
    assert_eq!(blocked.json()["verdict"], "blocked", "{}", blocked.stdout);

    holder.kill();
    let out = resume(&env, "B", -29, &id, &["--pid", &other.pid()]);
    out.assert_code(0);
    let json = out.json();
    assert_ne!(json["verdict"], "blocked", "{json}");
    assert_eq!(json["verdict"], "ratify", "{json}");
    assert_checks(&json, [true, true, true, true]);
    assert!(
        json["checks"][3]["evidence"]
            .as_str()
            .unwrap()
            .contains("stale"),
        "{json}"
    );
    assert_eq!(json["lock_acquired"], true, "{json}");
    assert_eq!(json["epoch"], 2, "{json}");
    let file = env.read_run(&id);
    assert_eq!(file["lease_epoch"], 2, "{file}");
    assert_eq!(file["lease"]["epoch"], 2, "{file}");
    assert_eq!(file["lease"]["session"], "B", "{file}");
    assert_eq!(file["lease"]["pid"].as_u64(), Some(u64::from(other.0.id())));
}

#[test]
fn a_live_holder_blocks_another_session_with_the_protocols_message() {
    let env = project();
    let holder = Holder::start();
    // The holder named by `CLAUDE_PID`, as Claude Code sets it.
    let mut cmd = env.command(Some("A"), &at(0));
    cmd.env("CLAUDE_PID", holder.pid())
        .args(["--json", "run", "new"]);
    let created = to_run(cmd.output().unwrap());
    created.assert_code(0);
    let created = created.json();
    let id = created["run_id"].as_str().unwrap().to_string();
    assert_eq!(
        created["lease"]["pid"].as_u64(),
        Some(u64::from(holder.0.id())),
        "{created}"
    );
    assert_eq!(created["lease"]["pid_source"], "CLAUDE_PID", "{created}");
    let before = env.snapshot();
    let message = LOCK_MESSAGE.replace("{id}", &id);

    let other = Holder::start();
    // Within the TTL, so that only the running holder process keeps the lease live.
    let out = resume(&env, "B", 5, &id, &["--pid", &other.pid()]);
    out.assert_code(3);
    let json = out.json();
    assert_eq!(json["verdict"], "blocked", "{json}");
    assert_eq!(json["reasons"][0]["rule"], "run.lock-held", "{json}");
    assert_eq!(json["reasons"][0]["message"], message.as_str(), "{json}");
    assert_checks(&json, [true, true, true, false]);
    assert_eq!(json["lock_acquired"], false, "{json}");
    assert_eq!(env.snapshot(), before, "a blocked resume changes nothing");

    // Without a pid of its own, and in text.
    let text = env.baton("B", 5, &["run", "resume", &id]);
    text.assert_code(3);
    assert!(
        text.stdout.contains(&format!("run.lock-held: {message}")),
        "{}",
        text.stdout
    );
    assert_eq!(env.snapshot(), before);
    assert_eq!(env.read_run(&id)["lease"]["session"], "A");
}

#[test]
fn a_holder_on_another_host_blocks_while_its_heartbeat_is_fresh_and_is_taken_over_after_the_ttl() {
    let env = project();
    let (id, _) = new_run(&env, "A", 0, &[]);
    let mut file = env.read_run(&id);
    file["lease"]["host"] = json!("elsewhere");
    file["lease"]["pid"] = json!(1);
    file["lease"]["pid_start"] = json!(1);
    env.write_run(&id, &file);
    let before = env.snapshot();

    let me = Holder::start();
    let out = resume(&env, "B", 9, &id, &["--pid", &me.pid()]);
    out.assert_code(3);
    let json = out.json();
    assert_eq!(json["verdict"], "blocked", "{json}");
    assert_eq!(
        json["reasons"][0]["message"],
        LOCK_MESSAGE.replace("{id}", &id).as_str(),
        "{json}"
    );
    assert_eq!(env.snapshot(), before);

    let out = resume(&env, "B", 11, &id, &["--pid", &me.pid()]);
    out.assert_code(0);
    let json = out.json();
    assert_eq!(json["lock_acquired"], true, "{json}");
    assert_eq!(json["epoch"], 2, "{json}");
    assert!(
        json["checks"][3]["evidence"]
            .as_str()
            .unwrap()
            .contains("TTL"),
        "{json}"
    );
    let after = env.read_run(&id);
    assert_eq!(after["lease_epoch"], 2, "{after}");
    assert_eq!(after["lease"]["epoch"], 2, "{after}");
    assert_eq!(after["lease"]["session"], "B", "{after}");
    assert_ne!(after["lease"]["host"], "elsewhere", "{after}");
}

#[test]
fn after_a_takeover_the_old_holder_cannot_record() {
    let env = project();
    let mut old = Holder::start();
    let old_pid = old.pid();
    let (id, _) = new_run(&env, "A", 0, &["--pid", &old_pid]);
    env.baton(
        "A",
        1,
        &[
            "run",
            "record",
            &id,
            "--agent",
            "researcher",
            "--pid",
            &old_pid,
            "--epoch",
            "1",
        ],
    )
    .assert_code(0);
    old.kill();
    let new = Holder::start();
    let taken = resume(&env, "B", 2, &id, &["--pid", &new.pid()]);
    taken.assert_code(0);
    assert_eq!(taken.json()["epoch"], 2, "{}", taken.stdout);
    let before = env.snapshot();

    let out = env.baton(
        "A",
        3,
        &[
            "--json", "run", "record", &id, "--agent", "planner", "--pid", &old_pid,
        ],
    );
    out.assert_code(3);
    let json = out.json();
    assert_eq!(json["verdict"], "refused", "{json}");
    assert_eq!(json["reasons"][0]["rule"], "run.lock-held", "{json}");
    assert_eq!(env.snapshot(), before);

    let out = env.baton(
        "A",
        3,
        &[
            "--json", "run", "record", &id, "--agent", "planner", "--pid", &old_pid, "--epoch", "1",
        ],
    );
    out.assert_code(3);
    let json = out.json();
    assert_eq!(json["verdict"], "refused", "{json}");
    assert_eq!(json["reasons"][0]["rule"], "run.stale-epoch", "{json}");
    assert_eq!(env.snapshot(), before);

    // The old holder's step and gate writes are refused the same way.
    for what in [
        &["--gate", "tests"][..],
        &["--step", "implement", "--status", "done"][..],
    ] {
        let mut args = vec!["run", "record", &id];
        args.extend_from_slice(what);
        args.extend_from_slice(&["--epoch", "1"]);
        env.baton("A", 3, &args).assert_code(3);
    }
    assert_eq!(env.snapshot(), before);

    // Nor can it release or finish the run; its heartbeat does nothing.
    for args in [
        &["run", "release", &id, "--pid", &old_pid][..],
        &["run", "release", &id, "--pid", &old_pid, "--epoch", "1"][..],
        &["run", "finish", &id, "--pid", &old_pid][..],
        &["run", "finish", &id, "--pid", &old_pid, "--epoch", "1"][..],
    ] {
        env.baton("A", 3, args).assert_code(3);
        assert_eq!(env.snapshot(), before, "{args:?}");
    }
    let beat = env.baton(
        "A",
        3,
        &[
            "--json",
            "run",
            "heartbeat",
            &id,
            "--pid",
            &old_pid,
            "--epoch",
            "1",
        ],
    );
    beat.assert_code(0);
    assert_eq!(beat.json()["refreshed"], false, "{}", beat.stdout);
    assert_eq!(env.snapshot(), before);

    // The new holder writes with its epoch.
    env.baton(
        "B",
        4,
        &[
            "run",
            "record",
            &id,
            "--agent",
            "planner",
            "--pid",
            &new.pid(),
            "--epoch",
            "2",
        ],
    )
    .assert_code(0);
    let file = env.read_run(&id);
    let agents: Vec<&str> = file["completed_agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(agents, ["researcher", "planner"], "{file}");
}

fn race_trials() -> usize {
    match std::env::var("BATON_RACE_TRIALS") {
        Ok(raw) => raw
            .parse()
            .unwrap_or_else(|_| panic!("BATON_RACE_TRIALS={raw:?} is not a number")),
        Err(_) => 20,
    }
}

/// `command`, wrapped in a shell that waits for one line on stdin before it `exec`s it, with
/// the same environment and directory.
fn behind_barrier(inner: &Command) -> Command {
    crate::common::in_shell(inner, "read go", inner.get_args())
}

#[test]
fn sessions_racing_for_a_free_run_lock_make_exactly_one_holder() {
    let trials = race_trials();
    let started = Instant::now();
    // One agent process per contender, so that no two contenders share a holder.
    let contenders = crate::races::racers();
    let holders: Vec<Holder> = (0..contenders).map(|_| Holder::start()).collect();
    for trial in 0..trials {
        let barrier = trial % 2 == 0;
        let label = format!(
            "trial {}/{trials} ({})",
            trial + 1,
            if barrier { "barrier" } else { "as they start" }
        );
        let env = TestEnv::new();
        let (id, _) = new_run(&env, "creator", 0, &[]);
        env.baton("creator", 0, &["run", "release", &id])
            .assert_code(0);
        let released = env.read_run(&id);
        assert_eq!(released["lease"], Value::Null, "{label}: {released}");
        assert_eq!(released["lease_epoch"], 1, "{label}: {released}");

        let mut children: Vec<(String, Child)> = holders
            .iter()
            .enumerate()
            .map(|(n, holder)| {
                let session = format!("s{n}");
                let mut inner = env.command(Some(&session), &at(1));
                inner.args(["--json", "run", "resume", &id, "--pid", &holder.pid()]);
                let mut cmd = if barrier {
                    behind_barrier(&inner)
                } else {
                    inner
                };
                let child = cmd
                    .stdin(if barrier {
                        Stdio::piped()
                    } else {
                        Stdio::null()
                    })
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .expect("spawn a contender");
                (session, child)
            })
            .collect();
        if barrier {
            for (_, child) in &mut children {
                let mut stdin = child.stdin.take().unwrap();
                stdin.write_all(b"go\n").unwrap();
            }
        }
        let runs: Vec<(String, Run)> = children
            .into_iter()
            .map(|(s, c)| (s, to_run(c.wait_with_output().unwrap())))
            .collect();
        let describe = || {
            runs.iter()
                .map(|(s, r)| {
                    format!(
                        "  {s}: exit {} {}{}",
                        r.code,
                        r.stdout.trim(),
                        r.stderr.trim()
                    )
                })
                .collect::<Vec<_>>()
                .join("\n")
        };
        let winners: Vec<&(String, Run)> = runs.iter().filter(|(_, r)| r.code == 0).collect();
        let losers = runs.iter().filter(|(_, r)| r.code == 3).count();
        assert!(
            winners.len() == 1 && losers == contenders - 1,
            "{label}: {} holders, {losers} refused:\n{}",
            winners.len(),
            describe()
        );
        for (session, run) in runs.iter().filter(|(_, r)| r.code == 3) {
            let json = run.json();
            assert_eq!(json["verdict"], "blocked", "{label} {session}: {json}");
            assert_eq!(
                json["reasons"][0]["rule"], "run.lock-held",
                "{label}: {json}"
            );
        }
        let (winner, run) = winners[0];
        let json = run.json();
        assert_eq!(json["lock_acquired"], true, "{label}: {json}");
        assert_eq!(json["epoch"], 2, "{label}: {json}");
        let after = env.read_run(&id);
        assert_eq!(
            after["lease"]["session"],
            winner.as_str(),
            "{label}: {after}"
        );
        assert_eq!(after["lease_epoch"], 2, "{label}: {after}");
        assert_eq!(after["lease"]["epoch"], 2, "{label}: {after}");
    }
    eprintln!(
        "{trials} trials of {contenders} contenders in {:.1?}",
        started.elapsed()
    );
}

// 6. Hostile input

#[test]
fn run_ids_off_the_allowlist_are_invalid_input_and_create_nothing() {
    let env = TestEnv::new();
    let bad = [
        "../../etc/passwd",
        "ABCDEF0123456789",
        "0123456789abcde",
        "0123456789abcdef0",
        "batch-",
    ];
    for id in bad {
        let commands: [&[&str]; 8] = [
            &["run", "resume", id],
            &["run", "record", id, "--agent", "planner"],
            &["run", "show", id],
            &["run", "heartbeat", id],
            &["run", "release", id],
            &["run", "finish", id],
            &["run", "import", id],
            &["run", "resume", id, "--confirm-alignment"],
        ];
        for args in commands {
            let out = env.baton("A", 0, args);
            out.assert_code(2);
            assert!(
                out.stderr.contains(&format!("{id:?} is not a run id")),
                "{args:?} names the id: {}",
                out.stderr
            );
            assert!(
                !env.state_dir().exists(),
                "{args:?} created {}",
                env.state_dir().display()
            );
        }
        let out = env.baton("A", 0, &["--json", "run", "resume", id]);
        out.assert_code(2);
        let json = out.json();
        assert!(
            json["error"]["message"].as_str().unwrap().contains(id),
            "{json}"
        );
    }
    assert!(!env.state_dir().exists());
    assert!(!Path::new("/etc/passwd.json").exists());
}

/// A directory outside the project standing in for `/tmp`, and the originating file's path.
fn pipeline_dir(id: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join(format!("pipeline_state_{id}.json"));
    (dir, file)
}

fn with_pipeline_dir(env: &TestEnv, dir: &Path, session: &str, args: &[&str]) -> Run {
    let mut cmd = env.command(Some(session), &at(0));
    cmd.env("BATON_PIPELINE_STATE_DIR", dir).args(args);
    let out = cmd.output().unwrap();
    to_run(out)
}

const IMPORT_ID: &str = "00c0ffee0badf00d";

/// An originating pipeline state file, planned at `base`.
fn originating(base: &str) -> Value {
    json!({
        "run_id": IMPORT_ID,
        "PIPELINE_BASE_COMMIT": base,
        "plan_file": PLAN,
        "completed_agents": ["researcher", {"agent": "planner", "completed_at": "2026-03-01T11:40:00Z"}],
        "session_id": "old-session",
        "custom_pipeline_field": {"nested": [1, 2, 3], "keep": true},
    })
}

#[test]
fn a_symlinked_originating_file_is_refused_and_nothing_is_written() {
    let env = project();
    let (dir, file) = pipeline_dir(IMPORT_ID);
    let real = dir.path().join("real.json");
    std::fs::write(
        &real,
        serde_json::to_vec(&originating(&head(&env))).unwrap(),
    )
    .unwrap();
    std::os::unix::fs::symlink(&real, &file).unwrap();

    for args in [
        &["run", "resume", IMPORT_ID][..],
        &["run", "import", IMPORT_ID][..],
    ] {
        let out = with_pipeline_dir(&env, dir.path(), "B", args);
        out.assert_code(1);
        assert!(
            out.stderr.contains(&file.display().to_string())
                && out.stderr.contains("symbolic link"),
            "{args:?} names the file: {}",
            out.stderr
        );
        assert!(env.snapshot().is_empty(), "{:?}", env.snapshot());
        assert!(!env.has_record(&run_key(IMPORT_ID)));
    }
}

#[test]
fn an_originating_file_owned_by_another_user_is_refused_and_nothing_is_written() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        crate::common::skipped("chown to another user needs root");
        return;
    }
    let env = project();
    let (dir, file) = pipeline_dir(IMPORT_ID);
    std::fs::write(
        &file,
        serde_json::to_vec(&originating(&head(&env))).unwrap(),
    )
    .unwrap();
    std::os::unix::fs::chown(&file, Some(65534), Some(65534)).unwrap();

    for args in [
        &["run", "resume", IMPORT_ID][..],
        &["run", "import", IMPORT_ID][..],
    ] {
        let out = with_pipeline_dir(&env, dir.path(), "B", args);
        out.assert_code(1);
        assert!(
            out.stderr.contains(&file.display().to_string()) && out.stderr.contains("65534"),
            "{args:?} names the file and its owner: {}",
            out.stderr
        );
        assert!(env.snapshot().is_empty(), "{:?}", env.snapshot());
        assert!(!env.has_record(&run_key(IMPORT_ID)));
    }
}

#[test]
fn a_valid_originating_file_is_imported_by_resume_keeping_every_field() {
    let env = project();
    write_plan(&env, SAFE_PLAN, 30);
    // Planned one commit ago, so that check 1 fails and proves the base commit was mapped; the
    // imported run's unknown alignment is confirmed, or it would be asked about first (exit 4).
    let base = env.git(&["rev-parse", "HEAD~1"]).trim().to_string();
    let (dir, file) = pipeline_dir(IMPORT_ID);
    let original = originating(&base);
    std::fs::write(&file, serde_json::to_vec_pretty(&original).unwrap()).unwrap();
    let source_before = std::fs::read(&file).unwrap();
    assert!(!env.has_record(&run_key(IMPORT_ID)));

    let out = with_pipeline_dir(
        &env,
        dir.path(),
        "B",
        &["--json", "run", "resume", IMPORT_ID, "--confirm-alignment"],
    );
    out.assert_code(0);
    let json = out.json();
    assert!(
        json["notes"][0]
            .as_str()
            .is_some_and(|n| n.contains("imported") && n.contains(&file.display().to_string())),
        "{json}"
    );
    assert_eq!(json["verdict"], "replan", "{json}");
    assert_eq!(rules(&json), ["run.head-moved"], "{json}");
    assert!(
        json["checks"][0]["evidence"]
            .as_str()
            .unwrap()
            .contains(&format!("base_commit {}", &base[..12])),
        "PIPELINE_BASE_COMMIT mapped: {json}"
    );
    assert_eq!(json["gap_secs"], 30 * 60, "plan_file mapped: {json}");
    assert_eq!(
        json["restore"]["completed_agents"],
        json!(["researcher", "planner"]),
        "{json}"
    );
    assert_eq!(json["restore"]["last"], "agent planner", "{json}");
    assert_eq!(json["lock_acquired"], true, "{json}");
    assert_eq!(json["epoch"], 1, "{json}");

    let run = env.read_run(IMPORT_ID);
    assert_eq!(run["run_id"], IMPORT_ID);
    assert_eq!(run["status"], "active", "{run}");
    assert_eq!(run["base_commit"], base, "{run}");
    assert_eq!(
        run["plan"]["path"], PLAN,
        "recorded relative to the root: {run}"
    );
    let agents: Vec<&str> = run["completed_agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(agents, ["researcher", "planner"], "{run}");
    assert_eq!(
        run["completed_agents"][1]["at"], "2026-03-01T11:40:00Z",
        "{run}"
    );
    assert_eq!(run["imported_from"], file.display().to_string(), "{run}");
    // Unknown fields survive, the original names of the mapped ones included.
    assert_eq!(
        run["custom_pipeline_field"], original["custom_pipeline_field"],
        "{run}"
    );
    assert_eq!(run["session_id"], "old-session", "{run}");
    assert_eq!(run["PIPELINE_BASE_COMMIT"], base, "{run}");
    assert_eq!(run["plan_file"], PLAN, "{run}");
    assert_eq!(run["lease"]["session"], "B", "{run}");
    assert_eq!(
        std::fs::read(&file).unwrap(),
        source_before,
        "the source is never rewritten"
    );

    // Later resumes read .agentic/runs, not the source: it may be gone.
    std::fs::remove_file(&file).unwrap();
    let again = with_pipeline_dir(
        &env,
        dir.path(),
        "B",
        &["--json", "run", "resume", IMPORT_ID],
    );
    again.assert_code(0);
    assert_eq!(again.json()["notes"], json!([]), "{}", again.stdout);
    assert_eq!(
        env.read_run(IMPORT_ID)["custom_pipeline_field"],
        original["custom_pipeline_field"],
        "unknown fields survive a rewrite too"
    );
}

#[test]
fn an_import_keeps_the_fields_that_share_a_name_with_batons_own() {
    let env = project();
    let (dir, file) = pipeline_dir(IMPORT_ID);
    let original = json!({
        "PIPELINE_BASE_COMMIT": head(&env),
        "status": "in_progress-MARK-status",
        "steps": {"STEP 5": "done-MARK-steps", "STEP 8": "pending"},
        "hard_gates": ["tests-green-MARK-gates"],
        "completed_agents": [
            {"agent": "planner", "completed_at": "2026-03-01T11:40:00Z", "prompt_sha": "MARK-prompt"}
        ],
    });
    std::fs::write(&file, serde_json::to_vec(&original).unwrap()).unwrap();
    with_pipeline_dir(&env, dir.path(), "B", &["run", "import", IMPORT_ID]).assert_code(0);
    let text = String::from_utf8(env.record_bytes(&run_key(IMPORT_ID)).unwrap()).unwrap();
    for mark in ["MARK-status", "MARK-steps", "MARK-gates", "MARK-prompt"] {
        assert!(
            text.contains(mark),
            "the originating value with {mark} was dropped by the import:\n{text}"
        );
    }
}

#[test]
fn a_symlinked_run_file_is_refused_and_left_alone() {
    crate::files_only!("a test of the file store itself");
    let env = project();
    let (id, _) = new_run(&env, "A", 0, &[]);
    let path = run_file(&env, &id);
    let real = env.repo.join("elsewhere.json");
    std::fs::rename(&path, &real).unwrap();
    std::os::unix::fs::symlink(&real, &path).unwrap();
    let real_before = std::fs::read(&real).unwrap();
    let before = env.snapshot();
    for args in [
        &["run", "resume", &id][..],
        &["run", "record", &id, "--agent", "planner"][..],
        &["run", "release", &id][..],
        &["run", "finish", &id][..],
    ] {
        let out = env.baton("A", 1, args);
        out.assert_code(1);
        assert!(
            out.stderr
                .contains(&format!("{id}.json is a symbolic link")),
            "{args:?}: {}",
            out.stderr
        );
        assert_eq!(env.snapshot(), before, "{args:?}");
        assert_eq!(std::fs::read(&real).unwrap(), real_before, "{args:?}");
    }
}

// 7. Prune

#[test]
fn prune_removes_only_finished_runs_older_than_the_threshold() {
    let env = project();
    let three_days = -3 * 24 * 60;
    let (finished_old, _) = new_run(&env, "A", three_days, &[]);
    env.baton("A", three_days, &["run", "finish", &finished_old])
        .assert_code(0);
    let (abandoned_old, _) = new_run(&env, "A", three_days, &[]);
    env.baton(
        "A",
        three_days,
        &["run", "finish", &abandoned_old, "--status", "abandoned"],
    )
    .assert_code(0);
    // Active, never written again, its lease long past the TTL: old, but not finished.
    let (active_old, _) = new_run(&env, "A", three_days, &[]);
    // Active with its lock released: still not finished.
    let (released_old, _) = new_run(&env, "A", three_days, &[]);
    env.baton("A", three_days, &["run", "release", &released_old])
        .assert_code(0);
    // Finished an hour ago: newer than the threshold.
    let (finished_new, _) = new_run(&env, "A", -60, &[]);
    env.baton("A", -60, &["run", "finish", &finished_new])
        .assert_code(0);
    for id in [&finished_old, &abandoned_old] {
        assert_ne!(env.read_run(id)["status"], "active");
    }

    // How the output names a run: its file, or the server's record of it.
    let shown = |id: &str| match pg_mode() {
        true => named(&format!("runs/{id}.json")),
        false => run_file(&env, id)
            .canonicalize()
            .unwrap()
            .display()
            .to_string(),
    };
    let before = env.snapshot();
    let dry = env.baton("Z", 0, &["run", "prune", "--older-than", "1d", "--dry-run"]);
    dry.assert_code(0);
    for id in [&finished_old, &abandoned_old] {
        assert!(
            dry.stdout
                .lines()
                .any(|l| l.starts_with("would remove ") && l.contains(&shown(id))),
            "{}",
            dry.stdout
        );
    }
    assert!(!dry.stdout.contains("removed "), "{}", dry.stdout);
    assert_eq!(env.snapshot(), before, "--dry-run removes nothing");

    let mut want: Vec<String> = [&finished_old, &abandoned_old]
        .iter()
        .map(|id| shown(id))
        .collect();
    want.sort();
    let out = env.baton("Z", 0, &["--json", "run", "prune", "--older-than", "1d"]);
    out.assert_code(0);
    let json = out.json();
    let mut removed: Vec<String> = json["removed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap().to_string())
        .collect();
    removed.sort();
    assert_eq!(removed.len(), want.len(), "{json}");
    for (removed, want) in removed.iter().zip(&want) {
        assert!(removed.ends_with(want.as_str()), "{json}");
    }
    assert_eq!(json["kept"], 3, "{json}");
    for id in [&finished_old, &abandoned_old] {
        assert!(!env.has_record(&run_key(id)), "{id} was not removed");
    }
    for id in [&active_old, &released_old, &finished_new] {
        assert!(env.has_record(&run_key(id)), "{id} was removed");
    }

    // Text names the path; a year later the active runs are still kept.
    let (finished_again, _) = new_run(&env, "A", three_days, &[]);
    env.baton("A", three_days, &["run", "finish", &finished_again])
        .assert_code(0);
    let name = shown(&finished_again);
    let text = env.baton("Z", 365 * 24 * 60, &["run", "prune", "--older-than", "1d"]);
    text.assert_code(0);
    assert!(
        text.stdout
            .lines()
            .any(|l| l.starts_with("removed ") && l.contains(&name)),
        "{}",
        text.stdout
    );
    assert!(!env.has_record(&run_key(&finished_again)));
    assert!(env.has_record(&run_key(&active_old)));
    assert!(env.has_record(&run_key(&released_old)));
}

// 8. File modes

/// `baton` under `umask 000`, so that the modes are baton's own choice, not the umask's.
fn under_open_umask(inner: &Command, args: &[&str]) -> Run {
    to_run(
        crate::common::in_shell(inner, "umask 000", args)
            .output()
            .unwrap(),
    )
}

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path)
        .unwrap()
        .permissions()
        .mode()
        & 0o777
}

#[test]
fn the_runs_directory_is_0700_and_a_run_file_0600() {
    crate::files_only!("a test of the files' modes");
    let env = project();
    let as_a = |minute: i64| env.command(Some("A"), &at(minute));
    let out = under_open_umask(&as_a(0), &["--json", "run", "new"]);
    out.assert_code(0);
    let id = out.json()["run_id"].as_str().unwrap().to_string();
    let dir = env.state_dir().join("runs");
    assert_eq!(mode(&dir), 0o700, "{}", dir.display());
    assert_eq!(mode(&run_file(&env, &id)), 0o600);

    // Every rewrite keeps the mode.
    under_open_umask(&as_a(1), &["run", "record", &id, "--agent", "planner"]).assert_code(0);
    assert_eq!(mode(&run_file(&env, &id)), 0o600);
    under_open_umask(&as_a(2), &["run", "resume", &id]).assert_code(0);
    assert_eq!(mode(&run_file(&env, &id)), 0o600);

    // An imported run too.
    let (pdir, file) = pipeline_dir(IMPORT_ID);
    std::fs::write(
        &file,
        serde_json::to_vec(&originating(&head(&env))).unwrap(),
    )
    .unwrap();
    let mut import = as_a(3);
    import.env("BATON_PIPELINE_STATE_DIR", pdir.path());
    under_open_umask(&import, &["run", "import", IMPORT_ID]).assert_code(0);
    assert_eq!(mode(&run_file(&env, IMPORT_ID)), 0o600);
    assert_eq!(mode(&dir), 0o700);
}

#[test]
fn an_imported_run_without_an_alignment_baseline_asks_before_it_ratifies() {
    let env = project();
    write_plan(&env, SAFE_PLAN, 30);
    let (dir, file) = pipeline_dir(IMPORT_ID);
    std::fs::write(
        &file,
        serde_json::to_vec(&originating(&head(&env))).unwrap(),
    )
    .unwrap();
    let out = with_pipeline_dir(
        &env,
        dir.path(),
        "B",
        &["--json", "run", "resume", IMPORT_ID],
    );
    out.assert_code(4);
    let json = out.json();
    assert_eq!(json["verdict"], "confirm", "{json}");
    assert_eq!(rules(&json), ["run.alignment-unknown"], "{json}");
    let confirmed = with_pipeline_dir(
        &env,
        dir.path(),
        "B",
        &["--json", "run", "resume", IMPORT_ID, "--confirm-alignment"],
    );
    confirmed.assert_code(0);
    assert_eq!(
        confirmed.json()["verdict"],
        "critic",
        "{}",
        confirmed.stdout
    );
    with_pipeline_dir(
        &env,
        dir.path(),
        "B",
        &["run", "record", IMPORT_ID, "--agent", "plan-critic"],
    )
    .assert_code(0);
    let again = with_pipeline_dir(
        &env,
        dir.path(),
        "B",
        &["--json", "run", "resume", IMPORT_ID],
    );
    assert_eq!(
        again.json()["verdict"],
        "ratify",
        "the confirmed alignment is the baseline now"
    );
}

#[test]
fn after_a_replan_the_new_plan_is_recorded_and_can_be_ratified() {
    let env = project();
    let id = planned_run(&env, SAFE_PLAN, 30, &[]);
    env.write("src/lib.rs", "// moved on\n");
    env.git(&["add", "."]);
    env.git(&["commit", "--quiet", "-m", "moved"]);
    assert_eq!(resume(&env, "A", 0, &id, &[]).json()["verdict"], "replan");
    env.write("docs/plan2.md", "# Plan, again\n");
    env.set_age("docs/plan2.md", 0);
    env.baton("A", 0, &["run", "record", &id, "--plan", "docs/plan2.md"])
        .assert_code(0);
    let out = resume(&env, "A", 1, &id, &[]);
    out.assert_code(0);
    assert_eq!(out.json()["verdict"], "ratify", "{}", out.stdout);
}

#[test]
fn a_finished_run_has_nothing_to_resume() {
    let env = project();
    let id = planned_run(&env, SAFE_PLAN, 30, &[]);
    env.baton("A", 0, &["run", "finish", &id]).assert_code(0);
    let out = env.baton("A", 1, &["run", "resume", &id]);
    out.assert_code(2);
    assert!(out.stderr.contains("nothing to resume"), "{}", out.stderr);
}

// Regressions, each named after the defect it pins.

#[test]
fn a_holder_resuming_in_a_new_process_moves_the_lease_so_no_second_agent_gets_it() {
    let env = project();
    let mut first = Holder::start();
    let id = planned_run(&env, SAFE_PLAN, 30, &["--pid", &first.pid()]);
    first.kill();
    let second = Holder::start();
    assert_eq!(
        resume(&env, "A", 0, &id, &["--pid", &second.pid()]).json()["verdict"],
        "ratify"
    );
    let third = Holder::start();
    let other = resume(&env, "B", 1, &id, &["--pid", &third.pid()]);
    other.assert_code(3);
    assert_eq!(rules(&other.json()), ["run.lock-held"], "{}", other.stdout);
}

#[test]
fn the_holder_is_never_batons_own_pid_nor_a_pid_that_does_not_exist() {
    let env = project();
    write_plan(&env, SAFE_PLAN, 30);
    let out = env
        .command(Some("A"), &at(-30))
        .args(["run", "new", "--plan", PLAN, "--pid", "4294967294"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    // `sh -c 'exec baton … --pid $$'` names baton's own process.
    let own = Command::new("sh")
        .current_dir(&env.repo)
        .env("BATON_NOW", at(-30))
        .env("BATON_SESSION", "A")
        .args([
            "-c",
            &format!(
                "exec {} run new --plan {PLAN} --pid $$",
                env!("CARGO_BIN_EXE_baton")
            ),
        ])
        .output()
        .unwrap();
    assert_eq!(
        own.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&own.stderr)
    );
    assert!(String::from_utf8_lossy(&own.stderr).contains("baton's own process"));
    assert!(!env.state_dir().join("runs").exists());
    assert!(env.store().list_runs(None).unwrap().is_empty());
}

#[test]
fn a_caller_with_no_session_and_no_pid_keeps_its_lock_by_its_token_never_by_its_epoch() {
    let env = project();
    write_plan(&env, SAFE_PLAN, 30);
    let out = env.run(None, &at(-30), &["--json", "run", "new", "--plan", PLAN]);
    out.assert_code(0);
    let v = out.json();
    let id = v["run_id"].as_str().unwrap().to_string();
    let token = v["token"]
        .as_str()
        .expect("a token for an anonymous holder")
        .to_string();
    assert_eq!(token.len(), 32);
    // Only its hash is stored.
    let state = String::from_utf8(env.record_bytes(&run_key(&id)).unwrap()).unwrap();
    assert!(!state.contains(&token));
    // The epoch is public (`run show` prints it): it proves nothing.
    let show = env.run(None, &at(-29), &["run", "show", &id]);
    assert!(show.stdout.contains("epoch 1"), "{}", show.stdout);
    env.run(
        None,
        &at(-29),
        &["run", "record", &id, "--agent", "planner", "--epoch", "1"],
    )
    .assert_code(3);
    env.baton(
        "B",
        -29,
        &["run", "record", &id, "--agent", "planner", "--epoch", "1"],
    )
    .assert_code(3);
    let out = env.baton("B", -29, &["run", "resume", &id, "--epoch", "1"]);
    out.assert_code(3);
    // The token proves it, as a flag or from the environment.
    env.run(
        None,
        &at(-29),
        &[
            "run", "record", &id, "--agent", "planner", "--token", &token,
        ],
    )
    .assert_code(0);
    let out = env
        .command(None, &at(-28))
        .env("BATON_LEASE_TOKEN", &token)
        .args(["run", "release", &id, "--epoch", "1"])
        .output()
        .unwrap();
    crate::common::to_run(out).assert_code(0);
}

#[test]
fn a_lease_ttl_below_a_minute_is_invalid_input() {
    let env = project();
    write_plan(&env, SAFE_PLAN, 30);
    for ttl in ["0", "59", "59s", "ten minutes"] {
        let out = env.baton("A", 0, &["run", "new", "--plan", PLAN, "--lease-ttl", ttl]);
        out.assert_code(2);
        assert!(out.stderr.contains("--lease-ttl"), "{}", out.stderr);
    }
    assert!(!env.state_dir().join("runs").exists());
    assert!(env.store().list_runs(None).unwrap().is_empty());
    // The one duration syntax: `2m` is 120 seconds.
    let out = env.baton(
        "A",
        0,
        &["--json", "run", "new", "--plan", PLAN, "--lease-ttl", "2m"],
    );
    out.assert_code(0);
    let id = out.json()["run_id"].as_str().unwrap().to_string();
    let run = env.baton("A", 0, &["--json", "run", "show", &id]).json();
    assert_eq!(run["state"]["policy"]["lease_ttl_secs"], 120, "{run}");
}

#[test]
fn recording_the_cached_plan_again_is_not_a_replan() {
    let env = project();
    let id = planned_run(&env, SAFE_PLAN, 30, &[]);
    let out = env.baton("A", 0, &["--json", "run", "record", &id, "--plan", PLAN]);
    out.assert_code(3);
    assert_eq!(rules(&out.json()), ["run.plan-unchanged"]);
}

#[test]
fn resume_of_an_unknown_run_creates_nothing() {
    let env = project();
    env.baton("A", 0, &["run", "resume", "0123456789abcdef"])
        .assert_code(2);
    assert!(!env.state_dir().exists());
}

#[test]
fn an_import_that_asks_first_writes_nothing() {
    let env = project();
    write_plan(&env, SAFE_PLAN, 30);
    let (dir, file) = pipeline_dir(IMPORT_ID);
    std::fs::write(
        &file,
        serde_json::to_vec(&originating(&head(&env))).unwrap(),
    )
    .unwrap();
    with_pipeline_dir(&env, dir.path(), "B", &["run", "resume", IMPORT_ID]).assert_code(4);
    assert!(!env.has_record(&run_key(IMPORT_ID)));
}

#[test]
fn another_holders_stale_lock_is_ended_only_with_force() {
    let env = project();
    let id = planned_run(&env, SAFE_PLAN, 30, &[]);
    let before = env.snapshot();
    env.baton("B", 15, &["run", "finish", &id, "--status", "abandoned"])
        .assert_code(3);
    env.baton("B", 15, &["run", "release", &id]).assert_code(3);
    assert_eq!(env.snapshot(), before);
    env.baton(
        "B",
        15,
        &["run", "finish", &id, "--status", "abandoned", "--force"],
    )
    .assert_code(0);
}

#[test]
fn a_run_file_naming_another_run_is_refused() {
    let env = project();
    let a = planned_run(&env, SAFE_PLAN, 30, &[]);
    let (b, _) = new_run(&env, "A", 0, &[]);
    let mut state = env.read_run(&a);
    state["run_id"] = json!(b);
    env.write_run(&a, &state);
    let before = env.snapshot();
    let out = env.baton("A", 1, &["run", "resume", &a]);
    out.assert_code(1);
    assert!(
        out.stderr.contains(&format!("names run \"{b}\"")),
        "{}",
        out.stderr
    );
    assert_eq!(env.snapshot(), before);
}

#[test]
fn a_batch_id_must_name_the_projects_batch() {
    let env = project();
    env.baton("A", 0, &["batch", "start", "T-1", "T-2"])
        .assert_code(0);
    env.baton("A", 0, &["run", "resume", "batch-nonexistent"])
        .assert_code(2);
}

#[test]
fn a_plan_re_touched_without_a_change_keeps_its_age() {
    let env = project();
    let id = planned_run(&env, SAFE_PLAN, 25 * 60, &[]);
    env.set_age(PLAN, 10);
    let out = resume(&env, "A", 0, &id, &[]);
    assert_eq!(out.json()["verdict"], "replan", "{}", out.stdout);
}

/// Regression: an unfinished run was shown as `(finished)` in `status`, `resume --json` and the
/// packet, because the row kept the qualifier a finished run's row starts with. The field is
/// read where each shows it.
#[test]
fn an_unfinished_run_is_never_labelled_finished() {
    let env = project();
    let (id, _) = new_run(&env, "A", 0, &[]);
    let status = env.baton("A", 1, &["status"]);
    status.assert_code(0);
    assert!(!status.stdout.contains("finished"), "{}", status.stdout);
    let resumed = env.baton("B", 90, &["--json", "resume"]).json();
    let row = resumed["work"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["key"] == id.as_str())
        .unwrap()
        .clone();
    assert!(row["detail"].is_null(), "{row}");
    for item in resumed["packet"]["items"].as_array().unwrap() {
        let verdict = item["verdict"].as_str().unwrap();
        assert!(!verdict.contains("finished"), "{item}");
    }
    // A finished run is still told as finished.
    env.baton("A", 2, &["run", "finish", &id, "--status", "complete"])
        .assert_code(0);
    let row = env.baton("A", 3, &["--json", "status"]).json()["work"][0].clone();
    assert_eq!(row["verdict"], "none", "{row}");
}
