//! `baton wait`: when interrupted work can resume, and a sleep until then that a takeover or a
//! person's decision ends early.

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::{TestEnv, to_run};

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
