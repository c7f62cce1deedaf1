//! A failure hook's first durable act is one record of the failure; what it implies for the
//! session's work is applied from that record, exactly once, by the hook while it lives and by
//! whatever reads the state next. Killed anywhere (the client kills a StopFailure hook after
//! about 0.1 s, and a busy machine may give it less), state and history still agree by the
//! next read, and a client that died with no hook heard is classed by the evidence it left.

use serde_json::Value;

use crate::common::{Holder, TestEnv, at, loop_key};
use crate::hooks::{fixture, run_hook};
use baton_store::JournalTarget;

const LOOPS: usize = 4;

/// A client payload from the fixtures, for session `session` in the test's project.
fn payload(
    env: &TestEnv,
    rel: &str,
    session: &str,
    transcript: Option<&std::path::Path>,
) -> Vec<u8> {
    let mut v: Value = serde_json::from_slice(&fixture(rel)).unwrap();
    v["session_id"] = session.into();
    v["cwd"] = env.repo.to_string_lossy().into_owned().into();
    if v.get("transcript_path").is_some() {
        v["transcript_path"] = transcript
            .map_or("/nonexistent/transcript.jsonl".into(), |t| {
                t.to_string_lossy().into_owned()
            })
            .into();
    }
    serde_json::to_vec(&v).unwrap()
}

/// `LOOPS` loops, `T-1`…, owned by session `s1`.
fn owned_loops(env: &TestEnv) {
    for i in 1..=LOOPS {
        env.baton("s1", 0, &["loop", "init", &format!("T-{i}")])
            .assert_code(0);
    }
}

/// Each loop's status and reason, and the names of its journal's events.
fn loops(env: &TestEnv) -> Vec<(String, String, Vec<String>)> {
    (1..=LOOPS)
        .map(|i| {
            let key = format!("T-{i}");
            let state = env.read_loop(&key);
            let events = env
                .journal(JournalTarget::Loop(&key))
                .iter()
                .map(|e| e["event"].as_str().unwrap_or_default().to_string())
                .collect();
            (
                state["status"].as_str().unwrap_or_default().to_string(),
                state["interrupt_reason"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                events,
            )
        })
        .collect()
}

fn all_interrupted_once(env: &TestEnv) {
    for (status, reason, events) in loops(env) {
        assert_eq!(status, "interrupted");
        assert_eq!(reason, "rate_limit");
        assert_eq!(events, ["init", "interrupt"], "exactly one interrupt event");
    }
}

/// Session `s1`'s loops, then its StopFailure hook at minute 1, killed at the fault point
/// `fault` (`BATON_FAULTS`), as the client kills it.
fn killed_failure_hook(env: &TestEnv, fault: &str) {
    owned_loops(env);
    let failure = payload(
        env,
        "claude-code-2.1.332/StopFailure.after-429.json",
        "s1",
        None,
    );
    let killed = run_hook(
        env,
        &["hook", "claude", "StopFailure"],
        &failure,
        &at(1),
        &[("BATON_FAULTS", fault.as_ref())],
    );
    assert_eq!(
        killed.code, -1,
        "the fault killed the hook: {}",
        killed.stderr
    );
}

#[test]
fn a_failure_hook_killed_right_after_its_record_is_applied_by_the_next_reader() {
    let env = TestEnv::new();
    // Killed right after the record is durable.
    killed_failure_hook(&env, "outbox.recorded=crash");
    assert_eq!(env.outbox().len(), 1, "one record, and nothing applied yet");
    // (Against a server the test reads nothing while a record is pending: it would read what
    // no command of baton's ever sees.)
    if !crate::common::pg_mode() {
        for (status, _, events) in loops(&env) {
            assert_eq!(status, "active");
            assert_eq!(events, ["init"]);
        }
    }
    // Any command reads the pending record first.
    let status = env.run(None, &at(2), &["--json", "status"]);
    status.assert_code(0);
    assert!(env.outbox().is_empty(), "applied and removed");
    all_interrupted_once(&env);
    // The interrupt is the failure's, stamped with the time the hook recorded it.
    assert_eq!(env.read_loop("T-1")["interrupted_at"], at(1));
    // Read again: nothing applied twice.
    env.run(None, &at(3), &["status"]).assert_code(0);
    all_interrupted_once(&env);
}

#[test]
fn a_failure_hook_killed_between_a_loops_state_and_its_event_leaves_both_by_the_next_read() {
    crate::files_only!("the server writes a state and its events in one transaction");
    let env = TestEnv::new();
    // The journal's appends, one per loop: the hook dies on the second, after its loop's
    // state was replaced.
    killed_failure_hook(&env, "append.write@2=crash");
    let torn = loops(&env);
    assert!(
        torn.iter()
            .any(|(status, _, events)| status == "interrupted" && events == &["init"]),
        "a state without its event, as a kill leaves it: {torn:?}"
    );
    assert_eq!(
        env.outbox().len(),
        1,
        "the record stays until all of it is applied"
    );
    env.run(None, &at(2), &["status"]).assert_code(0);
    assert!(env.outbox().is_empty());
    all_interrupted_once(&env);
}

#[test]
fn a_loop_interrupted_without_its_event_gets_it_back_at_the_next_read() {
    crate::files_only!("the server writes a state and its events in one transaction");
    let env = TestEnv::new();
    env.baton("s1", 0, &["loop", "init", "T-1"]).assert_code(0);
    // What a writer killed between the two files left on disk, with no record behind it (an
    // earlier baton's).
    let mut state = env.read_loop("T-1");
    state["status"] = "interrupted".into();
    state["interrupted_at"] = at(1).into();
    state["interrupt_reason"] = "rate_limit".into();
    env.write_loop("T-1", &state);
    env.run(None, &at(2), &["resume"]).assert_code(0);
    let events = env.journal(JournalTarget::Loop("T-1"));
    let last = events.last().unwrap();
    assert_eq!(last["event"], "interrupt", "{events:?}");
    assert_eq!(last["ts"], at(1));
    assert_eq!(last["reason"], "rate_limit");
    assert_eq!(last["restored"], true);
    env.run(None, &at(3), &["resume"]).assert_code(0);
    assert_eq!(env.journal(JournalTarget::Loop("T-1")).len(), events.len());
    // A loop another tool interrupted (no history at all) is not given one.
    assert!(env.has_record(&loop_key("T-1")));
}

/// A Claude Code session `s1` in a client process of its own (`CLAUDE_PID`) that started,
/// made the loops and opened a turn, naming its transcript (empty for now).
struct Session {
    client: Holder,
    transcript: std::path::PathBuf,
}

impl Session {
    fn start(env: &TestEnv) -> Session {
        let transcript = env.home().join("transcript.jsonl");
        std::fs::write(&transcript, "").unwrap();
        let session = Session {
            client: Holder::start(),
            transcript,
        };
        session.hook(env, "SessionStart", &at(0));
        owned_loops(env);
        session.hook(env, "UserPromptSubmit", &at(1));
        session
    }

    /// The hook `event` of this session from its client process, with the captured payload.
    fn hook(&self, env: &TestEnv, event: &str, now: &str) {
        let body = payload(
            env,
            &format!("claude-code-2.1.332/{event}.json"),
            "s1",
            Some(&self.transcript),
        );
        let pid = self.client.pid();
        run_hook(
            env,
            &["hook", "claude", event],
            &body,
            now,
            &[("CLAUDE_PID", pid.as_ref())],
        )
        .assert_code(0);
    }

    /// The API refused the turn, and the client wrote it down as Claude Code 2.1.332 does.
    fn rate_limited(&self) {
        let line = fixture("transcripts/claude-code-2.1.332.rate-limit-line.json");
        let line = String::from_utf8(line).unwrap();
        std::fs::write(&self.transcript, format!("{}\n", line.trim())).unwrap();
    }
}

#[test]
fn a_client_gone_with_a_rate_limited_transcript_is_classed_rate_limit_though_no_hook_ran() {
    let env = TestEnv::new();
    let mut session = Session::start(&env);
    // The client dies before its failure hook runs (or the machine gives that hook no time).
    session.rate_limited();
    // While the client lives, its turn is its own: nothing is decided for it.
    env.run(None, &at(2), &["status"]).assert_code(0);
    assert_eq!(env.read_loop("T-1")["status"], "active");
    session.client.kill();
    let status = env.run(None, &at(3), &["--json", "status"]);
    status.assert_code(0);
    all_interrupted_once(&env);
    let classes: Vec<Value> = status.json()["work"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["class"].clone())
        .collect();
    assert!(
        classes.iter().all(|c| c == "rate_limit"),
        "every loop classed by the transcript: {classes:?}\n{}",
        status.stdout
    );
    // Recorded once: the turn is closed, and a second reader records nothing more.
    env.run(None, &at(4), &["status"]).assert_code(0);
    all_interrupted_once(&env);
}

#[test]
fn a_client_gone_with_nothing_in_its_transcript_is_left_to_the_survey() {
    let env = TestEnv::new();
    let mut session = Session::start(&env);
    session.client.kill();
    env.run(None, &at(3), &["status"]).assert_code(0);
    for (status, _, events) in loops(&env) {
        assert_eq!(status, "active", "nothing says how the turn died");
        assert_eq!(events, ["init"]);
    }
    assert!(env.outbox().is_empty());
}

#[test]
fn a_session_resumed_in_a_new_process_first_hears_how_its_last_turn_died() {
    let env = TestEnv::new();
    let mut session = Session::start(&env);
    session.rate_limited();
    session.client.kill();
    // `claude --resume s1`: the same session in a new process, whose start closes the turn
    // the dead one left open, after reading how it died.
    session.client = Holder::start();
    session.hook(&env, "SessionStart", &at(3));
    all_interrupted_once(&env);
}

/// Claude Code's failure message names the reset to the minute (`resets 8:05am`); the
/// transcript's API-error line, written before the hook runs, holds it to the second. The loop
/// waits until the second, never a minute less.
#[test]
fn a_failure_hook_keeps_the_reset_to_the_second_that_the_transcript_holds() {
    let env = TestEnv::new();
    owned_loops(&env);
    let transcript = env.home().join("transcript.jsonl");
    let line = fixture("transcripts/claude-code-2.1.332.subscription-limit-line.json");
    std::fs::write(&transcript, [line.trim_ascii_end(), b"\n"].concat()).unwrap();
    let now = "2026-12-02T05:06:00Z";
    let failure = payload(
        &env,
        "claude-code-2.1.332/StopFailure.subscription-limit.json",
        "s1",
        Some(&transcript),
    );
    run_hook(&env, &["hook", "claude", "StopFailure"], &failure, now, &[]).assert_code(0);
    assert_eq!(env.read_loop("T-1")["resume_after"], "2026-12-02T08:05:47Z");
    // Without the transcript, the message's minute.
    let env = TestEnv::new();
    owned_loops(&env);
    let failure = payload(
        &env,
        "claude-code-2.1.332/StopFailure.subscription-limit.json",
        "s1",
        None,
    );
    run_hook(&env, &["hook", "claude", "StopFailure"], &failure, now, &[]).assert_code(0);
    assert_eq!(env.read_loop("T-1")["resume_after"], "2026-12-02T08:05:00Z");
}

/// Ctrl-C during a tool call, then exiting: the transcript records that a person stopped the
/// turn, and the next session is told the work was left (`left`), not that it crashed. With no
/// SessionEnd heard (the client killed), the next reader finds the same in the transcript.
#[test]
fn a_turn_a_person_stopped_is_told_as_left_not_crash() {
    let env = TestEnv::new();
    let session = Session::start(&env);
    let tail = fixture("transcripts/claude-code-2.1.332.user-interrupt-tail.jsonl");
    std::fs::write(&session.transcript, tail).unwrap();
    session.hook(&env, "SessionEnd", &at(2));
    let status = env.run(None, &at(3), &["--json", "status"]).json();
    for w in status["work"].as_array().unwrap() {
        assert_eq!(w["class"], "left", "{w}");
    }
    assert_eq!(env.read_loop("T-1")["interrupt_reason"], "session_expiry");

    let env = TestEnv::new();
    let mut session = Session::start(&env);
    let tail = fixture("transcripts/claude-code-2.1.332.user-interrupt-tail.jsonl");
    std::fs::write(&session.transcript, tail).unwrap();
    session.client.kill();
    let status = env.run(None, &at(3), &["--json", "status"]).json();
    for w in status["work"].as_array().unwrap() {
        assert_eq!(w["class"], "left", "{w}");
    }
}

/// SPEC §5: the failure hook's first durable act is one record, with a fixed number of syncs
/// whatever the session owns, and nothing before it that is not needed to write it. Seen from
/// outside (`strace`) with the hook stopped right after its record: the same two syncs (the
/// record, its directory) for 1 loop and for 20, and no loop's state or journal opened.
#[test]
fn the_failure_record_costs_the_same_syncs_whatever_the_session_owns_and_reads_no_state() {
    crate::files_only!("the file store's system calls");
    if std::process::Command::new("strace")
        .arg("-V")
        .output()
        .is_err()
    {
        crate::common::skipped("strace is not installed (apt-get install strace)");
        return;
    }
    let syncs_for = |loops: usize| {
        let env = TestEnv::new();
        // The session's start makes the outbox, as a real session's does.
        let start = payload(&env, "claude-code-2.1.332/SessionStart.json", "s1", None);
        run_hook(
            &env,
            &["hook", "claude", "SessionStart"],
            &start,
            &at(0),
            &[],
        )
        .assert_code(0);
        for i in 1..=loops {
            env.baton("s1", 0, &["loop", "init", &format!("T-{i}")])
                .assert_code(0);
        }
        let log = env.repo.with_file_name("strace.log");
        let body = payload(
            &env,
            "claude-code-2.1.332/StopFailure.after-429.json",
            "s1",
            None,
        );
        let mut traced = crate::common::like(&env.command(None, &at(1)), "strace");
        traced
            .args(["-f", "-qq", "-e", "signal=none", "-o"])
            .arg(&log)
            .args(["-e", "trace=openat,fsync,fdatasync"])
            .arg(env!("CARGO_BIN_EXE_baton"))
            .args(["hook", "claude", "StopFailure"])
            .env("BATON_FAULTS", "outbox.recorded=crash")
            .stdin(std::process::Stdio::piped());
        let mut child = traced.spawn().unwrap();
        use std::io::Write;
        child.stdin.take().unwrap().write_all(&body).unwrap();
        child.wait().unwrap();
        assert_eq!(env.outbox().len(), 1, "the record was written");
        let text = std::fs::read_to_string(&log).unwrap();
        for line in text.lines().filter(|l| l.contains("openat(")) {
            assert!(
                !line.contains("/loop-state-") && !line.contains("/journal/"),
                "read before the record: {line}"
            );
        }
        text.lines()
            .filter(|l| l.contains("fsync(") || l.contains("fdatasync("))
            .count()
    };
    assert_eq!(syncs_for(1), 2);
    assert_eq!(syncs_for(20), 2);
}
