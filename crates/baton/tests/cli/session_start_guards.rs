//! What a session starting with no ticket is handed, in the ticket-loop seed's words: "Key
//! match is the primary guard, never freshness - other tickets' resumable loops get one
//! informational line and no prompt, because offering the most recently written file would
//! hand you another ticket's live state during any CI wait." And the session-start list stays
//! one read whatever the amount of state.

use std::ffi::OsStr;
use std::path::Path;

use serde_json::{Value, json};

use crate::common::{Holder, Run, TestEnv, at, hook_context, rules};
use crate::hooks::run_hook;

fn start_payload(session: &str, source: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/clients/claude-code-2.1.332/SessionStart.json");
    let mut v: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    v["session_id"] = session.into();
    v["source"] = source.into();
    serde_json::to_vec(&v).unwrap()
}

/// Claude Code's SessionStart hook for `session` at `now`, with `CLAUDE_PID` naming `client`
/// when given (the client process the hook records for the session).
fn session_start(env: &TestEnv, session: &str, now: &str, client: Option<&Holder>) -> Run {
    let pid = client.map(Holder::pid);
    let vars: Vec<(&str, &OsStr)> = pid
        .as_deref()
        .map(|p| ("CLAUDE_PID", OsStr::new(p)))
        .into_iter()
        .collect();
    let out = run_hook(
        env,
        &["hook", "claude", "SessionStart"],
        &start_payload(session, "startup"),
        now,
        &vars,
    );
    out.assert_code(0);
    out
}

/// Session A is in a long CI wait on T-7 (its last write 30 minutes ago, nothing interrupted):
/// a session starting next is not told to take T-7 over. It hears of it in one line with no
/// accept command; a session started for T-7 asks by key and is offered it.
#[test]
fn another_tickets_quiet_loop_is_one_informational_line_and_no_prompt() {
    let env = TestEnv::new();
    env.baton("A", 1, &["loop", "init", "T-7"]).assert_code(0);

    // The SessionStart hook of session B says nothing is B's to resume, with one line for
    // T-7 and no accept command.
    let context = hook_context(&session_start(&env, "B", &at(31), None));
    assert!(
        context.contains("Nothing here is this session's to resume"),
        "{context}"
    );
    assert_eq!(
        context.lines().filter(|l| l.contains("T-7")).count(),
        1,
        "{context}"
    );
    assert!(!context.contains("Accept:"), "{context}");

    let text = env.baton("B", 31, &["resume"]);
    text.assert_code(0);
    let lines: Vec<&str> = text.stdout.lines().filter(|l| l.contains("T-7")).collect();
    assert!(lines.iter().any(|l| l.contains("quiet")), "{}", text.stdout);
    assert!(text.stdout.contains("not offered here"), "{}", text.stdout);
    assert!(
        !text.stdout.contains("resume accept"),
        "no accept command: {}",
        text.stdout
    );

    let json = env.baton("B", 31, &["--json", "resume"]);
    json.assert_code(0);
    let all = json.json();
    assert_eq!(all["verdict"], "none", "{all}");
    assert!(all["packet"]["items"].as_array().unwrap().is_empty());
    let aside = all["packet"]["not_offered"].as_array().unwrap();
    assert_eq!(aside.len(), 1, "{all}");
    assert!(aside[0].as_str().unwrap().starts_with("loop T-7:"), "{all}");
    let row = &all["work"][0];
    assert_eq!(row["key"], "T-7");
    assert_eq!(row["verdict"], "quiet");

    // `baton wait` with no target does not wait for another session's quiet loop: it is
    // nothing of this session's.
    let wait = env.baton("B", 31, &["--json", "wait"]);
    wait.assert_code(0);
    assert_eq!(wait.json()["verdict"], "nothing", "{}", wait.stdout);

    // The ticket this session was started for: the key match offers it.
    let by_key = env.baton("B", 31, &["--json", "resume", "T-7"]).json();
    assert_eq!(by_key["verdict"], "offer", "{by_key}");
    assert!(
        by_key["next"]
            .as_str()
            .unwrap()
            .contains("`baton resume accept T-7`"),
        "{by_key}"
    );
}

/// Beside a quiet loop of another session, work whose evidence says it was interrupted is
/// offered with its accept command, and the quiet loop is one line of the packet's context.
#[test]
fn interrupted_work_is_offered_and_quiet_work_stays_an_aside_in_the_packet() {
    let env = TestEnv::new();
    env.baton("A", 0, &["loop", "init", "T-7"]).assert_code(0);
    env.baton("C", 0, &["loop", "init", "T-8"]).assert_code(0);
    env.baton(
        "C",
        2,
        &["loop", "interrupt", "T-8", "--reason", "session_expiry"],
    )
    .assert_code(0);
    let context = hook_context(&session_start(&env, "B", &at(30), None));
    assert!(
        context.contains("`baton resume accept T-8`"),
        "the interrupted loop is offered: {context}"
    );
    assert!(
        !context.contains("baton resume accept T-7"),
        "the quiet loop is not: {context}"
    );
    let aside: Vec<&str> = context
        .lines()
        .filter(|l| l.contains("Not offered here") && l.contains("T-7"))
        .collect();
    assert_eq!(aside.len(), 1, "one informational line: {context}");
}

/// A client killed before any hook ran leaves its loop active: once the process its hook
/// recorded is gone from this machine, that is the evidence, and the loop is offered. While
/// that process still runs, the loop stays quiet.
#[test]
fn a_quiet_loop_whose_owner_process_is_gone_is_offered() {
    let env = TestEnv::new();
    let mut client = Holder::start();
    session_start(&env, "A", &at(0), Some(&client));
    env.baton("A", 1, &["loop", "init", "T-9"]).assert_code(0);

    let running = env.baton("B", 30, &["--json", "resume"]);
    let all = running.json();
    assert_eq!(all["work"][0]["verdict"], "quiet", "{all}");
    let line = all["packet"]["not_offered"][0].as_str().unwrap();
    assert!(line.contains("still runs"), "{line}");

    client.kill();
    let gone = env.baton("B", 30, &["--json", "resume"]);
    let all = gone.json();
    assert_eq!(all["verdict"], "resume", "{all}");
    let item = &all["packet"]["items"][0];
    assert_eq!(item["key"], "T-9");
    assert_eq!(item["class"], "crash");
    assert!(
        rules(item).contains(&"resume.owner-gone".to_string()),
        "{item}"
    );
    assert_eq!(item["accept"], "baton resume accept T-9");
}

/// A batch another session is quiet on (active, no write for 30 minutes, nothing says it was
/// interrupted) is information too: `baton batch resume` is not handed to whoever starts next.
#[test]
fn another_sessions_quiet_batch_is_not_offered() {
    let env = TestEnv::new();
    env.baton("A", 0, &["batch", "start", "T-1", "T-2"])
        .assert_code(0);
    let all = env.baton("B", 30, &["--json", "resume"]).json();
    assert_eq!(all["verdict"], "none", "{all}");
    let aside = all["packet"]["not_offered"].as_array().unwrap();
    assert!(
        aside[0].as_str().unwrap().contains("`baton batch resume`"),
        "{all}"
    );
    // Interrupted (as the originating stop hook marks it), it is offered.
    let mut batch = env.read_batch();
    batch["status"] = "interrupted".into();
    env.write_batch(&batch);
    let all = env.baton("B", 32, &["--json", "resume"]).json();
    assert_eq!(all["packet"]["items"][0]["kind"], "batch", "{all}");
}

/// "The text is bounded like the packet": 1,000 interrupted loops give one read, the most
/// urgent first, keys in natural order, and a count of what is left to `baton status`.
#[test]
fn the_session_start_list_is_one_read_with_a_thousand_interrupted_loops() {
    let env = TestEnv::new();
    for n in 1..=1000 {
        let key = format!("T-{n}");
        env.write_loop(
            &key,
            &json!({
                "schema_version": 1, "session_id": "A", "ticket_id": key,
                "status": "interrupted", "interrupt_reason": "unknown", "interrupted_at": at(1),
                "last_phase": "qa", "last_phase_action": "spawned",
                "loop_state": {"phase": "qa", "iteration": 1, "max_iterations": 3},
                "last_updated": at(0), "owner_epoch": 1
            }),
        );
    }
    let text = env.baton("B", 30, &["resume"]);
    text.assert_code(0);
    let chars = text.stdout.chars().count();
    assert!(chars < 15_000, "{chars} characters");
    assert!(
        text.stdout.contains(" more: `baton status` lists them"),
        "{}",
        text.stdout
    );
    let keys: Vec<&str> = text
        .stdout
        .lines()
        .filter_map(|l| l.strip_prefix("loop "))
        .filter_map(|l| l.split(':').next())
        .take(3)
        .collect();
    assert_eq!(keys, ["T-1", "T-2", "T-3"], "{}", text.stdout);
    let json = env.baton("B", 30, &["--json", "resume"]);
    json.assert_code(0);
    assert!(json.stdout.len() < 60_000, "{} bytes", json.stdout.len());
    let all = json.json();
    let rows = all["work"].as_array().unwrap();
    assert_eq!(all["work_more"].as_u64().unwrap() + rows.len() as u64, 1000);
    assert_eq!(rows[1]["key"], "T-2");
    let items = all["packet"]["items"].as_array().unwrap();
    assert_eq!(items[1]["key"], "T-2", "the packet in natural order too");
}
