//! Races: many processes contend on one gate at the same moment, and exactly one wins, in every
//! trial (docs/reliability.md, the race harness).
//!
//! Each trial builds a fresh project whose loop was last written 30 minutes ago (stale: the
//! liveness window is 10 minutes), then starts `BATON_RACERS` (default 16; `scripts/long-tests.sh`
//! runs 32) `baton` processes with as many session ids against it. The first to get the loop's lock takes the loop over and makes it live again, so every
//! later one must be refused by the ownership gate (exit 3). A gate evaluated outside the lock,
//! or a lock that does not exclude, lets two of them win.
//!
//! The other gates race the same way: batch starts against the batch limit, and accepts of a
//! ticket whose only state is a legacy `loop-state.json`, which exactly one must adopt.
//!
//! Even trials hold every process at a barrier (a shell waiting on its stdin) until all are
//! started, then release them together; odd trials let them race as they start. The number of
//! trials is `BATON_RACE_TRIALS` (default 20; `scripts/long-tests.sh` runs 500).

use std::io::Write;
use std::process::{Child, Command, Stdio};

use serde_json::Value;

use baton_store::{RecordKey, RecordKind};

use crate::common::{Run, TestEnv, at, to_run};

const TICKET: &str = "PROJ-1";
/// Minutes after the owner's last write when the contenders arrive: well past the window.
const STALE_MINUTE: i64 = 30;

/// How many processes race in each trial: `BATON_RACERS`, default 16.
pub(crate) fn racers() -> usize {
    match std::env::var("BATON_RACERS") {
        Ok(raw) => raw
            .parse()
            .unwrap_or_else(|_| panic!("BATON_RACERS={raw:?} is not a number")),
        Err(_) => 16,
    }
}

fn trials() -> usize {
    match std::env::var("BATON_RACE_TRIALS") {
        Ok(raw) => raw
            .parse()
            .unwrap_or_else(|_| panic!("BATON_RACE_TRIALS={raw:?} is not a number")),
        Err(_) => 20,
    }
}

/// A project with one loop, owned by session `owner` and last written at minute 0, and the
/// file as it was before the race.
fn stale_loop() -> (TestEnv, Value) {
    let env = TestEnv::new();
    env.baton("owner", 0, &["loop", "init", TICKET])
        .assert_code(0);
    env.baton(
        "owner",
        0,
        &[
            "loop",
            "set",
            TICKET,
            "--phase",
            "qa",
            "--action",
            "returned",
            "--iteration",
            "2",
        ],
    )
    .assert_code(0);
    let before = env.read_loop(TICKET);
    (env, before)
}

/// `baton` as `session`, wrapped in a shell that waits for one line on stdin before it `exec`s
/// baton: the barrier. The wrapper gets exactly the hermetic environment of `env.command`, and
/// the arguments travel as argv, never spliced into the script.
fn behind_barrier(env: &TestEnv, session: &str, args: &[&str]) -> Command {
    // On EOF (the test gave up before releasing) `read` fails and baton never runs.
    crate::common::in_shell(
        &env.command(Some(session), &at(STALE_MINUTE)),
        "read go",
        args,
    )
}

/// Starts all contenders, then waits for all; returns each session id with how its run ended.
fn race(env: &TestEnv, args: &[&str], barrier: bool) -> Vec<(String, Run)> {
    let sessions: Vec<String> = (0..racers()).map(|n| format!("s{n}")).collect();
    let mut children: Vec<Child> = sessions
        .iter()
        .map(|session| {
            let mut cmd = if barrier {
                behind_barrier(env, session, args)
            } else {
                let mut cmd = env.command(Some(session), &at(STALE_MINUTE));
                cmd.args(args);
                cmd
            };
            cmd.stdin(if barrier {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn a contender")
        })
        .collect();
    if barrier {
        // Release them as close together as one loop of writes allows; dropping each stdin
        // right after also means no contender can wait forever.
        for child in &mut children {
            let mut stdin = child.stdin.take().expect("piped stdin");
            stdin.write_all(b"go\n").expect("release a contender");
        }
    }
    sessions
        .into_iter()
        .zip(children)
        .map(|(session, child)| (session, to_run(child.wait_with_output().unwrap())))
        .collect()
}

/// Every contender's outcome, for a failure message.
fn describe(runs: &[(String, Run)]) -> String {
    runs.iter()
        .map(|(session, run)| {
            format!(
                "  {session}: exit {}\n    stdout: {}\n    stderr: {}",
                run.code,
                run.stdout.trim(),
                run.stderr.trim()
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Exactly one contender exited 0 and every other one 3 (refused by a gate, with the
/// `refused` verdict); returns the winner's session id and output.
fn single_winner<'a>(runs: &'a [(String, Run)], trial: &str) -> (&'a str, &'a Run) {
    let winners: Vec<_> = runs.iter().filter(|(_, run)| run.code == 0).collect();
    let losers_ok = runs
        .iter()
        .filter(|(_, run)| run.code != 0)
        .all(|(_, run)| run.code == 3);
    assert!(
        winners.len() == 1 && losers_ok,
        "{trial}: {} contenders exited 0 (want exactly 1, the others 3):\n{}",
        winners.len(),
        describe(runs)
    );
    for (session, run) in runs.iter().filter(|(_, run)| run.code == 3) {
        assert_eq!(
            run.json()["verdict"],
            "refused",
            "{trial}: loser {session} exited 3 without a refusal:\n{}",
            describe(runs)
        );
    }
    let (session, run) = winners[0];
    (session.as_str(), run)
}

/// The loop file after the race: owned by the winner, one epoch past the old owner's, and no
/// file left behind but the lock sidecar, the journal and the loop itself (no contender was
/// killed). The journal tells the same story: exactly one takeover, to the winner.
fn assert_taken_over_once(env: &TestEnv, before: &Value, winner: &str, trial: &str) -> Value {
    let after = env.read_loop(TICKET);
    assert_eq!(after["session_id"], winner, "{trial}: owner on disk");
    let epoch = |v: &Value| {
        v["owner_epoch"]
            .as_u64()
            .unwrap_or_else(|| panic!("{trial}: owner_epoch is {}", v["owner_epoch"]))
    };
    assert_eq!(
        epoch(&after),
        epoch(before) + 1,
        "{trial}: owner_epoch must move exactly once"
    );
    assert_eq!(after["status"], "active", "{trial}");
    assert_eq!(after["last_updated"], at(STALE_MINUTE), "{trial}");
    // The store holds the loop and its journal, and nothing else.
    let loops: Vec<String> = env
        .store()
        .list_raw(RecordKind::Loop, None)
        .unwrap()
        .into_iter()
        .map(|(key, _)| key.key().to_string())
        .collect();
    assert_eq!(loops, [TICKET], "{trial}: loops in the store");
    let journals = env.store().list_journals().unwrap();
    assert_eq!(journals.loops, [TICKET], "{trial}: journals in the store");
    if !crate::common::pg_mode() {
        // In files, no temp file of a killed writer either.
        let mut names: Vec<String> = std::fs::read_dir(env.state_dir())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        let want = [".gitignore", "journal", "locks", "loop-state-PROJ-1.json"];
        assert_eq!(names, want, "{trial}: files in the state directory");
    }
    let journal = env.run(None, &at(STALE_MINUTE), &["--json", "log", TICKET]);
    let journal = journal.json();
    let takeovers: Vec<&Value> = journal["events"]
        .as_array()
        .unwrap_or_else(|| panic!("{trial}: no journal: {journal}"))
        .iter()
        .filter(|e| e["event"] == "takeover")
        .collect();
    assert_eq!(
        takeovers.len(),
        1,
        "{trial}: one takeover in the journal: {journal}"
    );
    assert_eq!(takeovers[0]["to_session"], winner, "{trial}: {journal}");
    assert_eq!(
        takeovers[0]["to_epoch"], after["owner_epoch"],
        "{trial}: {journal}"
    );
    assert_eq!(journal["skipped"], 0, "{trial}: {journal}");
    after
}

fn trial_label(trial: usize, trials: usize, barrier: bool) -> String {
    let start = if barrier {
        "released together from a barrier"
    } else {
        "racing as they start"
    };
    format!(
        "trial {}/{trials} ({} processes {start})",
        trial + 1,
        racers()
    )
}

#[test]
fn racing_resume_accepts_on_one_stale_loop_make_exactly_one_owner() {
    let trials = trials();
    for trial in 0..trials {
        let barrier = trial % 2 == 0;
        let label = trial_label(trial, trials, barrier);
        let (env, before) = stale_loop();
        let runs = race(&env, &["--json", "resume", "accept", TICKET], barrier);
        let (winner, run) = single_winner(&runs, &label);
        let out = run.json();
        assert_eq!(out["verdict"], "accepted", "{label}: {out}");
        assert_eq!(out["owner"], winner, "{label}: {out}");
        let after = assert_taken_over_once(&env, &before, winner, &label);
        assert_eq!(
            after["resume_count"].as_u64(),
            before["resume_count"].as_u64().map(|n| n + 1),
            "{label}: resume_count must move exactly once"
        );
        assert_eq!(out["epoch"], after["owner_epoch"], "{label}: {out}");
    }
    eprintln!(
        "{trials} trials of {} racers: exactly one winner in each",
        racers()
    );
}

#[test]
fn racing_loop_sets_on_one_stale_loop_make_exactly_one_takeover() {
    let trials = trials();
    for trial in 0..trials {
        let barrier = trial % 2 == 0;
        let label = trial_label(trial, trials, barrier);
        let (env, before) = stale_loop();
        let runs = race(
            &env,
            &[
                "--json", "loop", "set", TICKET, "--phase", "qa", "--action", "spawned",
            ],
            barrier,
        );
        let (winner, run) = single_winner(&runs, &label);
        let out = run.json();
        assert_eq!(out["verdict"], "ok", "{label}: {out}");
        assert_eq!(out["owner"], winner, "{label}: {out}");
        let rules: Vec<&str> = out["reasons"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| r["rule"].as_str())
            .collect();
        assert!(
            rules.contains(&"gate.stale-takeover"),
            "{label}: the winner must report the takeover: {out}"
        );
        let after = assert_taken_over_once(&env, &before, winner, &label);
        assert_eq!(after["last_phase_action"], "spawned", "{label}");
        assert_eq!(
            after["resume_count"], before["resume_count"],
            "{label}: a takeover by `loop set` is not a resume"
        );
        assert_eq!(out["epoch"], after["owner_epoch"], "{label}: {out}");
    }
    eprintln!(
        "{trials} trials of {} racers: exactly one winner in each",
        racers()
    );
}

/// The batch limit: one active batch per project. Every racer starts a batch of its own on a
/// project without one; exactly one starts it and every other is refused.
#[test]
fn racing_batch_starts_make_exactly_one_active_batch() {
    let trials = trials();
    for trial in 0..trials {
        let barrier = trial % 2 == 0;
        let label = trial_label(trial, trials, barrier);
        let env = TestEnv::new();
        let runs = race(
            &env,
            &["--json", "batch", "start", "PROJ-1", "PROJ-2"],
            barrier,
        );
        let (winner, _) = single_winner(&runs, &label);
        for (_, run) in runs.iter().filter(|(_, run)| run.code == 3) {
            assert!(
                run.stdout.contains("Another batch session is active"),
                "{label}: {}",
                describe(&runs)
            );
        }
        let batch = env.read_batch();
        assert_eq!(batch["session_id"], winner, "{label}: {batch}");
        assert_eq!(batch["status"], "active", "{label}: {batch}");
    }
    eprintln!(
        "{trials} trials of {} racers: exactly one winner in each",
        racers()
    );
}

/// Legacy adoption: a ticket whose only state is the unkeyed `loop-state.json` of the
/// originating projects. Every racer accepts it; exactly one adopts it onto its keyed file and
/// takes it over, the legacy file is gone, and the journal holds one adoption.
#[test]
fn racing_accepts_of_a_legacy_loop_adopt_it_exactly_once() {
    let trials = trials();
    for trial in 0..trials {
        let barrier = trial % 2 == 0;
        let label = trial_label(trial, trials, barrier);
        let env = TestEnv::new();
        let legacy = serde_json::json!({
            "schema_version": 1, "session_id": "X", "ticket_id": TICKET, "status": "interrupted",
            "last_phase": "qa", "last_phase_action": "returned", "last_updated": at(-60),
            "loop_state": { "phase": "qa", "iteration": 3, "max_iterations": 5 },
        });
        env.write_legacy_loop(&legacy);
        let runs = race(&env, &["--json", "resume", "accept", TICKET], barrier);
        let (winner, _) = single_winner(&runs, &label);
        assert!(
            !env.has_record(&RecordKey::LegacyLoop),
            "{label}: the legacy file is still there"
        );
        let keyed = env.read_loop(TICKET);
        assert_eq!(keyed["session_id"], winner, "{label}: {keyed}");
        assert_eq!(keyed["loop_state"]["iteration"], 3, "{label}: {keyed}");
        let journal = env.run(None, &at(STALE_MINUTE), &["--json", "log", TICKET]);
        let journal = journal.json();
        let count = |name: &str| {
            journal["events"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|e| e["event"] == name)
                .count()
        };
        assert_eq!(count("adopt"), 1, "{label}: one adoption: {journal}");
        assert_eq!(count("takeover"), 1, "{label}: one takeover: {journal}");
    }
    eprintln!(
        "{trials} trials of {} racers: exactly one winner in each",
        racers()
    );
}
