//! The journal and `baton log`: every change of a loop, the batch or a run is appended to its
//! history under the lock of its write; refused writes, repeats and heartbeats are not history;
//! a torn tail never breaks a reader or the next writer.

use std::io::Write;
use std::path::PathBuf;

use serde_json::Value;

use baton_store::JournalTarget;

use crate::common::{TestEnv, at, named};

fn journal_file(env: &TestEnv, name: &str) -> PathBuf {
    env.state_dir().join("journal").join(name)
}

/// The `event` names of a `baton --json log` answer, in order.
fn names(log: &Value) -> Vec<String> {
    log["events"]
        .as_array()
        .unwrap_or_else(|| panic!("no events: {log}"))
        .iter()
        .map(|e| e["event"].as_str().unwrap().to_string())
        .collect()
}

fn log_json(env: &TestEnv, target: &str) -> Value {
    let out = env.run(None, &at(60), &["--json", "log", target]);
    out.assert_code(0);
    out.json()
}

/// The acceptance script: session A starts the loop and moves it, a rate limit interrupts it,
/// session B accepts the resume later, moves it on and finishes it.
pub(crate) fn scripted_history(env: &TestEnv) {
    env.baton("A", 0, &["loop", "init", "PROJ-1"])
        .assert_code(0);
    env.set_phase("A", 1, "PROJ-1", "skeptic", "spawned")
        .assert_code(0);
    env.baton(
        "A",
        2,
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
    env.baton(
        "A",
        3,
        &["loop", "interrupt", "PROJ-1", "--reason", "rate_limit"],
    )
    .assert_code(0);
    env.baton("B", 30, &["resume", "accept", "PROJ-1"])
        .assert_code(0);
    env.baton(
        "B",
        31,
        &[
            "loop", "set", "PROJ-1", "--phase", "skeptic", "--action", "spawned", "--epoch", "1",
        ],
    )
    .assert_code(0);
    env.baton(
        "B",
        40,
        &[
            "loop", "finish", "PROJ-1", "--status", "complete", "--epoch", "1",
        ],
    )
    .assert_code(0);
}

#[test]
fn log_of_a_loop_lists_every_step_in_order_with_both_epochs_of_the_takeover() {
    let env = TestEnv::new();
    scripted_history(&env);

    let text = env.run(None, &at(60), &["log", "PROJ-1"]);
    text.assert_code(0);
    assert_eq!(text.stderr, "", "nothing to warn about");
    let lines: Vec<&str> = text.stdout.lines().collect();
    let expected = [
        ("2026-03-01 12:00:00 UTC  init  ", "(session A, epoch 0)"),
        (
            "2026-03-01 12:01:00 UTC  set  skeptic/none (iteration 1) -> skeptic/spawned (iteration 1)",
            "(session A, epoch 0)",
        ),
        (
            "2026-03-01 12:02:00 UTC  set  skeptic/spawned (iteration 1) -> qa/returned (iteration 2)",
            "(session A, epoch 0)",
        ),
        (
            "2026-03-01 12:03:00 UTC  interrupt  reason=rate_limit",
            "(session A, epoch 0)",
        ),
        (
            "2026-03-01 12:30:00 UTC  takeover  session A (epoch 0) -> session B (epoch 1)  mode=automatic",
            "interrupt_reason=rate_limit",
        ),
        (
            "2026-03-01 12:31:00 UTC  set  qa/returned (iteration 2) -> skeptic/spawned (iteration 2)",
            "(session B, epoch 1)",
        ),
        (
            "2026-03-01 12:40:00 UTC  finish  status=complete",
            "(session B, epoch 1)",
        ),
    ];
    assert_eq!(lines.len(), expected.len(), "{}", text.stdout);
    for (line, (start, end)) in lines.iter().zip(expected) {
        assert!(
            line.starts_with(start) && line.ends_with(end),
            "{line:?} should start with {start:?} and end with {end:?}\n{}",
            text.stdout
        );
    }

    let v = log_json(&env, "PROJ-1");
    assert_eq!(v["target"], "PROJ-1");
    assert_eq!(v["kind"], "loop");
    assert_eq!(v["skipped"], 0);
    assert_eq!(
        names(&v),
        [
            "init",
            "set",
            "set",
            "interrupt",
            "takeover",
            "set",
            "finish"
        ]
    );
    let takeover = &v["events"][4];
    assert_eq!(takeover["ts"], "2026-03-01T12:30:00Z");
    assert_eq!(takeover["session"], "B");
    assert_eq!(takeover["from_session"], "A");
    assert_eq!(takeover["from_epoch"], 0);
    assert_eq!(takeover["to_session"], "B");
    assert_eq!(takeover["to_epoch"], 1);
    assert_eq!(takeover["epoch"], 1);
    assert_eq!(takeover["mode"], "automatic");
    assert_eq!(v["events"][3]["reason"], "rate_limit");
    assert_eq!(v["events"][2]["to"]["iteration"], 2);
    assert_eq!(v["events"][6]["status"], "complete");

    let last = env.run(None, &at(60), &["--json", "log", "PROJ-1", "--limit", "2"]);
    assert_eq!(names(&last.json()), ["set", "finish"]);
}

#[test]
fn the_journal_outlives_the_state_it_describes() {
    let env = TestEnv::new();
    scripted_history(&env);
    // A finished loop is archived by the next check; a fresh start archives the old one.
    env.baton("C", 50, &["resume", "PROJ-1"]).assert_code(0);
    env.baton("C", 51, &["loop", "init", "PROJ-1"])
        .assert_code(0);
    let v = log_json(&env, "PROJ-1");
    let got = names(&v);
    assert_eq!(got.len(), 8, "{v}");
    assert_eq!(got[7], "init", "the new loop continues the history: {v}");
    assert_eq!(v["events"][7]["session"], "C");
}

#[test]
fn a_torn_tail_is_skipped_by_log_and_sealed_by_the_next_write() {
    crate::files_only!("a torn tail of a journal file");
    let env = TestEnv::new();
    env.baton("A", 0, &["loop", "init", "PROJ-1"])
        .assert_code(0);
    let file = journal_file(&env, "loop-PROJ-1.jsonl");
    std::fs::OpenOptions::new()
        .append(true)
        .open(&file)
        .unwrap()
        .write_all(br#"{"ts":"2026-03-01T12:00:30Z","event":"se"#)
        .unwrap();

    let torn = env.run(None, &at(1), &["log", "PROJ-1"]);
    torn.assert_code(0);
    assert_eq!(torn.stdout.lines().count(), 1, "{}", torn.stdout);
    assert!(
        torn.stderr.contains("warning: 1 line(s) of") && torn.stderr.contains("skipped"),
        "the skipped line is a warning on stderr: {}",
        torn.stderr
    );
    let json = env.run(None, &at(1), &["--json", "log", "PROJ-1"]).json();
    assert_eq!(json["skipped"], 1);
    assert!(
        json["warnings"].as_array().is_some_and(|w| w.len() == 1),
        "{json}"
    );

    env.set_phase("A", 2, "PROJ-1", "qa", "spawned")
        .assert_code(0);
    let v = log_json(&env, "PROJ-1");
    assert_eq!(
        names(&v),
        ["init", "set"],
        "the set after the torn tail is whole: {v}"
    );
    assert_eq!(v["skipped"], 1);
    let bytes = std::fs::read(&file).unwrap();
    assert!(bytes.ends_with(b"\n"));
    assert_eq!(
        bytes
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .count(),
        3,
        "init, the sealed fragment, set"
    );
}

#[test]
fn heartbeats_repeats_and_refused_writes_add_no_event() {
    let env = TestEnv::new();
    env.baton("A", 0, &["loop", "init", "PROJ-1"])
        .assert_code(0);
    env.set_phase("A", 1, "PROJ-1", "qa", "spawned")
        .assert_code(0);
    let journal = || env.journal(JournalTarget::Loop("PROJ-1"));
    let before = journal();

    let beat = env.baton("A", 2, &["--json", "loop", "heartbeat", "PROJ-1"]);
    beat.assert_code(0);
    assert_eq!(beat.json()["refreshed"], true);
    // The same transition again only refreshes the loop's liveness.
    env.set_phase("A", 3, "PROJ-1", "qa", "spawned")
        .assert_code(0);
    // Another session, while A is live: refused by the ownership gate.
    env.set_phase("B", 4, "PROJ-1", "qa", "returned")
        .assert_code(3);
    // A stale epoch: refused as well.
    env.baton(
        "A",
        5,
        &[
            "loop", "set", "PROJ-1", "--phase", "qa", "--action", "returned", "--epoch", "7",
        ],
    )
    .assert_code(3);
    assert_eq!(
        journal(),
        before,
        "no event for a heartbeat, a repeat or a refusal"
    );
}

#[test]
fn a_stale_loop_taken_over_by_a_write_journals_the_takeover() {
    let env = TestEnv::new();
    env.baton("A", 0, &["loop", "init", "PROJ-1"])
        .assert_code(0);
    env.set_phase("B", 20, "PROJ-1", "qa", "spawned")
        .assert_code(0);
    let v = log_json(&env, "PROJ-1");
    assert_eq!(names(&v), ["init", "takeover", "set"], "{v}");
    assert_eq!(v["events"][1]["from_session"], "A");
    assert_eq!(v["events"][1]["from_epoch"], 0);
    assert_eq!(v["events"][1]["to_session"], "B");
    assert_eq!(v["events"][1]["to_epoch"], 1);
    assert_eq!(v["events"][2]["epoch"], 1);
}

#[test]
fn batch_and_run_journals_hold_their_events() {
    let env = TestEnv::new();
    env.baton("A", 0, &["batch", "start", "PROJ-1", "PROJ-2"])
        .assert_code(0);
    env.baton(
        "A",
        1,
        &["batch", "ticket", "PROJ-1", "--status", "in_progress"],
    )
    .assert_code(0);
    // Another session finds the batch stale and resumes it.
    env.baton("B", 30, &["batch", "resume"]).assert_code(0);
    env.baton("B", 31, &["batch", "finish", "--status", "complete"])
        .assert_code(0);
    let v = log_json(&env, "batch");
    assert_eq!(v["kind"], "batch");
    assert_eq!(
        names(&v),
        ["start", "ticket", "takeover", "resume", "finish"],
        "{v}"
    );
    assert_eq!(v["events"][1]["ticket"], "PROJ-1");
    assert_eq!(v["events"][2]["from_session"], "A");
    assert_eq!(v["events"][2]["to_epoch"], 1);

    let new = env.baton("A", 0, &["--json", "run", "new", "--feature", "journal"]);
    new.assert_code(0);
    let id = new.json()["run_id"].as_str().unwrap().to_string();
    env.baton("A", 1, &["run", "record", &id, "--agent", "planner"])
        .assert_code(0);
    // A completed agent is never recorded twice: refused, no event.
    env.baton("A", 2, &["run", "record", &id, "--agent", "planner"])
        .assert_code(3);
    env.baton("A", 3, &["run", "heartbeat", &id]).assert_code(0);
    env.baton("A", 4, &["run", "release", &id]).assert_code(0);
    env.baton("A", 5, &["run", "release", &id]).assert_code(0);
    env.baton("A", 6, &["run", "resume", &id]).assert_code(0);
    env.baton("A", 7, &["run", "finish", &id]).assert_code(0);
    let v = log_json(&env, &id);
    assert_eq!(v["kind"], "run");
    assert_eq!(
        names(&v),
        ["new", "record", "release", "resume", "finish"],
        "{v}"
    );
    assert_eq!(v["events"][0]["feature"], "journal");
    assert_eq!(v["events"][1]["agent"], "planner");
    assert_eq!(v["events"][3]["lease_taken"], true);
    assert_eq!(v["events"][3]["epoch"], 2);
    assert_eq!(v["events"][4]["status"], "complete");
    let text = env.run(None, &at(60), &["log", &id]);
    assert!(
        text.stdout
            .lines()
            .nth(1)
            .is_some_and(|l| l.starts_with("2026-03-01 12:01:00 UTC  record  agent=planner")),
        "{}",
        text.stdout
    );

    // Pruning a finished run leaves its history.
    env.baton("A", 8, &["run", "prune"]).assert_code(0);
    assert_eq!(names(&log_json(&env, &id)).len(), 5);
}

#[test]
fn log_of_a_ledger_lists_its_events_in_file_order() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.repo.join("plans/p")).unwrap();
    env.baton("s", 0, &["ledger", "init", "plans/p"])
        .assert_code(0);
    env.baton("s", 1, &["ledger", "start", "plans/p", "--phase", "1"])
        .assert_code(0);
    env.baton(
        "s",
        2,
        &[
            "ledger",
            "block",
            "plans/p",
            "--phase",
            "1",
            "--reason",
            "waiting on review",
        ],
    )
    .assert_code(0);
    let ledger = env.repo.join("plans/p/STATE.md");
    std::fs::OpenOptions::new()
        .append(true)
        .open(&ledger)
        .unwrap()
        .write_all(b"not a ledger line\n")
        .unwrap();

    for target in ["plans/p", "plans/p/STATE.md"] {
        let out = env.run(None, &at(3), &["--json", "log", target]);
        out.assert_code(0);
        let v = out.json();
        assert_eq!(v["kind"], "ledger");
        assert_eq!(names(&v), ["started", "blocked"], "{v}");
        assert_eq!(v["skipped"], 1);
        assert_eq!(v["events"][0]["line"], 2);
    }
    let text = env.run(None, &at(3), &["log", "plans/p"]);
    text.assert_code(0);
    let lines: Vec<&str> = text.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{}", text.stdout);
    assert!(
        lines[0].starts_with("2026-03-01 12:01:00 UTC  started  phase 1: started"),
        "{}",
        text.stdout
    );
    assert!(
        lines[1].contains("  blocked  phase 1: BLOCKED — waiting on review"),
        "{}",
        text.stdout
    );
    assert!(
        text.stderr.contains("warning: 1 line(s)"),
        "{}",
        text.stderr
    );
}

#[test]
fn log_of_a_target_without_history_is_an_empty_answer() {
    let env = TestEnv::new();
    let out = env.run(None, &at(0), &["log", "PROJ-404"]);
    out.assert_code(0);
    assert_eq!(out.stdout.trim(), "no history for PROJ-404 (loop PROJ-404)");
    let v = env.run(None, &at(0), &["--json", "log", "batch"]).json();
    assert_eq!(v["events"], serde_json::json!([]));
    assert!(!env.state_dir().exists(), "a query creates nothing");

    // Neither a ticket nor a session: no key, so no loop can be named.
    env.run(None, &at(0), &["log", ""]).assert_code(2);
}

#[test]
fn log_escapes_what_it_read_from_a_journal() {
    let env = TestEnv::new();
    env.baton("A", 0, &["loop", "init", "PROJ-1"])
        .assert_code(0);
    let hostile: Value = serde_json::from_str(
        "{\"ts\":\"x\\nverdict: ok\",\"event\":\"set\\u001b[31m\",\"session\":\"A\\nnext: rm\"}",
    )
    .unwrap();
    env.store()
        .append_journal(JournalTarget::Loop("PROJ-1"), &hostile)
        .unwrap();
    let out = env.run(None, &at(1), &["log", "PROJ-1"]);
    out.assert_code(0);
    assert_eq!(out.stdout.lines().count(), 2, "{}", out.stdout);
    assert!(!out.stdout.contains('\u{1b}'), "{:?}", out.stdout);
    assert!(
        !out.stdout
            .lines()
            .any(|l| l.starts_with("verdict:") || l.starts_with("next:"))
    );
}

#[test]
fn legacy_adoption_and_a_fresh_start_are_in_the_history() {
    let env = TestEnv::new();
    let legacy = serde_json::json!({
        "schema_version": 1, "session_id": "X", "ticket_id": "PROJ-7", "status": "interrupted",
        "last_phase": "qa", "last_phase_action": "returned", "last_updated": at(-60),
        "loop_state": { "iteration": 3 },
    });
    env.write_legacy_loop(&legacy);
    env.baton("B", 0, &["resume", "PROJ-7"]).assert_code(0);
    env.baton("B", 1, &["resume", "fresh", "PROJ-7"])
        .assert_code(0);
    let v = log_json(&env, "PROJ-7");
    assert_eq!(names(&v), ["adopt", "fresh"], "{v}");
    assert_eq!(v["events"][0]["from"], "loop-state.json");
    assert_eq!(v["events"][0]["owner"], "X");
    assert_eq!(v["events"][0]["session"], "B", "who adopted it");
    assert!(
        v["events"][1]["archived"]
            .as_str()
            .is_some_and(|a| a.contains(&named("archive/loop-state-PROJ-7."))),
        "{v}"
    );
    let text = env.run(None, &at(2), &["log", "PROJ-7"]);
    assert!(
        text.stdout
            .lines()
            .nth(1)
            .is_some_and(|l| l.starts_with("2026-03-01 12:01:00 UTC  fresh  archived=")),
        "{}",
        text.stdout
    );
}

#[test]
fn a_journal_that_cannot_be_appended_to_leaves_the_write_done_with_a_warning() {
    crate::files_only!("a test of the journal file");
    let env = TestEnv::new();
    env.baton("A", 0, &["loop", "init", "PROJ-1"])
        .assert_code(0);
    // Something not a directory where the journals live.
    let dir = env.state_dir().join("journal");
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::write(&dir, b"in the way\n").unwrap();

    let out = env.set_phase("A", 1, "PROJ-1", "qa", "spawned");
    out.assert_code(0);
    assert_eq!(
        env.read_loop("PROJ-1")["last_phase_action"],
        "spawned",
        "the state is the truth: its write stands"
    );
    assert!(
        out.stderr
            .contains("warning: the state was written, but its journal")
            && out.stderr.contains("loop-PROJ-1.jsonl"),
        "the warning names the journal: {}",
        out.stderr
    );
    assert!(
        !out.stdout.contains("journal"),
        "stdout is the report: {}",
        out.stdout
    );
    let json = env
        .baton(
            "A",
            2,
            &[
                "--json", "loop", "set", "PROJ-1", "--phase", "qa", "--action", "returned",
            ],
        )
        .json();
    assert!(
        json["warnings"].as_array().is_some_and(|w| w
            .iter()
            .any(|w| w.as_str().unwrap().contains("loop-PROJ-1.jsonl"))),
        "{json}"
    );
    // `log` says what is wrong, naming the path, and exits 1.
    let log = env.run(None, &at(3), &["log", "PROJ-1"]);
    log.assert_code(1);
    assert!(log.stderr.contains("journal"), "{}", log.stderr);
}
