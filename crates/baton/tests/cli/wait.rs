//! `baton wait`: when interrupted work can resume, and a sleep until then that a takeover or a
//! person's decision ends early.

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::{TestEnv, at, to_run};

/// T-1 interrupted by a rate limit that resets an hour after minute 1.
fn rate_limited(env: &TestEnv) {
    env.baton("A", 0, &["loop", "init", "T-1"]).assert_code(0);
    env.baton(
        "A",
        1,
        &[
            "loop",
            "interrupt",
            "T-1",
            "--reason",
            "rate_limit",
            "--resume-after",
            "1h",
        ],
    )
    .assert_code(0);
}

#[test]
fn it_says_when_and_sleeps_until_then_on_the_fake_clock() {
    let env = TestEnv::new();
    rate_limited(&env);
    let said = env.baton("C", 2, &["--json", "wait", "T-1"]);
    said.assert_code(0);
    let j = said.json();
    assert_eq!(j["verdict"], "wait");
    assert_eq!(j["until"], "2026-03-01T13:01:00Z");

    let slept = env.baton("C", 2, &["--json", "wait", "T-1", "--sleep"]);
    slept.assert_code(0);
    let j = slept.json();
    assert_eq!(j["verdict"], "ready");
    assert_eq!(j["waited_secs"], 59 * 60);
    assert_eq!(j["next"], "baton resume accept T-1");
}

#[test]
fn a_reset_beyond_max_is_for_a_person() {
    let env = TestEnv::new();
    rate_limited(&env);
    let out = env.baton("C", 2, &["wait", "T-1", "--sleep", "--max", "30m"]);
    out.assert_code(4);
    assert!(out.stdout.contains("wait.beyond-max"), "{}", out.stdout);
    // Within the allowance, the same wait ends in time.
    env.baton("C", 2, &["wait", "T-1", "--sleep", "--max", "2h"])
        .assert_code(0);
}

#[test]
fn a_live_owner_or_partial_work_ends_the_wait() {
    let env = TestEnv::new();
    env.baton("A", 0, &["loop", "init", "T-1"]).assert_code(0);
    // Another session wrote a minute ago: not ours to resume.
    env.baton("C", 1, &["wait", "T-1", "--sleep"])
        .assert_code(3);
    // Interrupted with partial work in the tree: a person chooses.
    env.baton(
        "A",
        2,
        &["loop", "interrupt", "T-1", "--reason", "rate_limit"],
    )
    .assert_code(0);
    env.write("half-done.rs", "// partial\n");
    env.baton("C", 3, &["wait", "T-1", "--sleep"])
        .assert_code(4);
    // Nothing to resume is nothing to wait for.
    env.baton("C", 3, &["wait", "NOPE-1"]).assert_code(0);
}

/// `ticket` interrupted at minute 1 by a rate limit that resets `after` later.
fn limited(env: &TestEnv, ticket: &str, after: &str) {
    env.baton("A", 0, &["loop", "init", ticket]).assert_code(0);
    env.baton(
        "A",
        1,
        &[
            "loop",
            "interrupt",
            ticket,
            "--reason",
            "rate_limit",
            "--resume-after",
            after,
        ],
    )
    .assert_code(0);
}

/// Each item of a no-ticket wait: (kind, key, verdict, until).
fn items(j: &serde_json::Value) -> Vec<(String, String, String, Option<String>)> {
    j["items"]
        .as_array()
        .unwrap_or_else(|| panic!("no items: {j}"))
        .iter()
        .map(|i| {
            (
                i["kind"].as_str().unwrap().to_string(),
                i["key"].as_str().unwrap().to_string(),
                i["verdict"].as_str().unwrap().to_string(),
                i["until"].as_str().map(str::to_string),
            )
        })
        .collect()
}

fn item(
    kind: &str,
    key: &str,
    verdict: &str,
    until: Option<&str>,
) -> (String, String, String, Option<String>) {
    (
        kind.into(),
        key.into(),
        verdict.into(),
        until.map(str::to_string),
    )
}

#[test]
fn without_a_ticket_and_without_work_there_is_nothing_to_wait_for() {
    let env = TestEnv::new();
    let out = env.baton("C", 0, &["--json", "wait"]);
    out.assert_code(0);
    let j = out.json();
    assert_eq!(j["verdict"], "nothing");
    assert_eq!(j["until"], serde_json::Value::Null);
    assert_eq!(j["waited_secs"], 0);
    assert_eq!(j["items"], serde_json::json!([]));
    let text = env.baton("C", 0, &["wait"]);
    text.assert_code(0);
    assert!(
        text.stdout.starts_with("nothing in this project to resume"),
        "{}",
        text.stdout
    );
}

#[test]
fn without_a_ticket_the_earliest_reset_decides() {
    let env = TestEnv::new();
    limited(&env, "T-1", "2h");
    limited(&env, "T-2", "1h");
    let out = env.baton("C", 2, &["--json", "wait"]);
    out.assert_code(0);
    let j = out.json();
    assert_eq!(j["verdict"], "wait");
    assert_eq!(j["until"], "2026-03-01T13:01:00Z");
    assert_eq!(
        items(&j),
        [
            item("loop", "T-1", "wait", Some("2026-03-01T14:01:00Z")),
            item("loop", "T-2", "wait", Some("2026-03-01T13:01:00Z")),
        ]
    );
    // The text: a headline naming the earliest, then one line per piece of work.
    let text = env.baton("C", 2, &["wait"]);
    text.assert_code(0);
    let lines: Vec<&str> = text.stdout.lines().collect();
    assert_eq!(
        lines,
        [
            "the earliest rate limit resets at 2026-03-01 13:01:00 UTC, in 59m: loop T-2",
            "  loop T-1: wait, resets at 2026-03-01 14:01:00 UTC · next: baton resume accept T-1",
            "  loop T-2: wait, resets at 2026-03-01 13:01:00 UTC · next: baton resume accept T-2",
        ],
        "{}",
        text.stdout
    );
    // Text shows the machine's zone and names it; `--json` keeps UTC.
    let paris = to_run(
        env.command(Some("C"), &at(2))
            .env("TZ", "Europe/Paris")
            .arg("wait")
            .output()
            .unwrap(),
    );
    assert!(
        paris
            .stdout
            .starts_with("the earliest rate limit resets at 2026-03-01 14:01:00 CET, in 59m"),
        "{}",
        paris.stdout
    );
}

#[test]
fn without_a_ticket_one_ready_piece_is_enough() {
    let env = TestEnv::new();
    limited(&env, "T-1", "1h");
    limited(&env, "T-2", "2m");
    let out = env.baton("C", 5, &["--json", "wait"]);
    out.assert_code(0);
    let j = out.json();
    assert_eq!(j["verdict"], "ready");
    assert_eq!(j["until"], serde_json::Value::Null);
    assert_eq!(
        items(&j),
        [
            item("loop", "T-1", "wait", Some("2026-03-01T13:01:00Z")),
            item("loop", "T-2", "ready", None),
        ]
    );
}

#[test]
fn without_a_ticket_a_loop_live_elsewhere_is_taken_over() {
    let env = TestEnv::new();
    env.baton("A", 0, &["loop", "init", "T-1"]).assert_code(0);
    let out = env.baton("C", 1, &["--json", "wait"]);
    out.assert_code(3);
    let j = out.json();
    assert_eq!(j["verdict"], "taken_over");
    assert_eq!(items(&j), [item("loop", "T-1", "taken_over", None)]);
    // The session that runs it is ready to go on.
    env.baton("A", 1, &["wait"]).assert_code(0);
}

#[test]
fn without_a_ticket_it_sleeps_until_the_earliest_reset() {
    let env = TestEnv::new();
    limited(&env, "T-1", "2h");
    limited(&env, "T-2", "1h");
    let out = env.baton("C", 2, &["--json", "wait", "--sleep"]);
    out.assert_code(0);
    let j = out.json();
    assert_eq!(j["verdict"], "ready");
    assert_eq!(j["waited_secs"], 59 * 60);
    assert_eq!(
        items(&j),
        [
            item("loop", "T-1", "wait", Some("2026-03-01T14:01:00Z")),
            item("loop", "T-2", "ready", None),
        ]
    );
}

/// Work that is not a loop counts by what `baton resume` says of it: a ledger left mid-phase is
/// ready (its derive re-runs the gates), one written within ten minutes is someone else's.
#[test]
fn without_a_ticket_a_ledger_counts_by_its_survey_verdict() {
    let env = TestEnv::new();
    env.write(
        "plans/p/STATE.md",
        &format!(
            "# run-state — plan: plans/p\nphase 1: started (base abc1234) @ {}\n",
            crate::common::at(0)
        ),
    );
    env.git(&["add", "."]);
    env.git(&["commit", "--quiet", "-m", "plan"]);
    let live = env.baton("C", 1, &["--json", "wait"]);
    live.assert_code(3);
    assert_eq!(
        items(&live.json()),
        [item("ledger", "plans/p", "taken_over", None)]
    );
    let stale = env.baton("C", 60, &["--json", "wait"]);
    stale.assert_code(0);
    let j = stale.json();
    assert_eq!(j["verdict"], "ready");
    assert_eq!(
        j["items"][0]["next"],
        "baton ledger derive plans/p --append"
    );
}

/// On the real clock: the wait sleeps until the reset, and a takeover meanwhile ends it with
/// exit 3.
#[test]
fn a_real_wait_sleeps_and_a_takeover_ends_it() {
    let env = TestEnv::new();
    let now = jiff::Timestamp::now().to_string();
    let real = |session: &str, args: &[&str]| {
        let mut cmd = env.command(Some(session), &now);
        cmd.env_remove("BATON_NOW").args(args);
        cmd
    };
    to_run(real("A", &["loop", "init", "T-1"]).output().unwrap()).assert_code(0);
    let interrupt = [
        "loop",
        "interrupt",
        "T-1",
        "--reason",
        "rate_limit",
        "--resume-after",
        "2s",
    ];
    to_run(real("A", &interrupt).output().unwrap()).assert_code(0);
    let started = Instant::now();
    to_run(real("C", &["wait", "T-1", "--sleep"]).output().unwrap()).assert_code(0);
    assert!(
        started.elapsed() >= Duration::from_millis(500),
        "{:?}",
        started.elapsed()
    );

    to_run(real("A", &["loop", "init", "T-2"]).output().unwrap()).assert_code(0);
    let interrupt = [
        "loop",
        "interrupt",
        "T-2",
        "--reason",
        "rate_limit",
        "--resume-after",
        "1h",
    ];
    to_run(real("A", &interrupt).output().unwrap()).assert_code(0);
    let waiting = real("C", &["wait", "T-2", "--sleep"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    to_run(
        real("B", &["resume", "accept", "T-2", "--force"])
            .output()
            .unwrap(),
    )
    .assert_code(0);
    let out = to_run(waiting.wait_with_output().unwrap());
    out.assert_code(3);
    assert!(started.elapsed() < Duration::from_secs(30));
}
