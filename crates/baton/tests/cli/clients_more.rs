//! The clients built from their published references rather than from captured runs (Cursor):
//! `baton init` writes their hook files and `--remove` takes out only baton's entries; a
//! session start hands over the packet in the client's own shape; a turn refreshes what the
//! session owns; the client's failure signal interrupts it with the reason the payload
//! supports.

use serde_json::Value;

use crate::common::{Run, T0, TestEnv, at, to_run};
use crate::hooks::{fixture, run_hook};

fn init(env: &TestEnv, args: &[&str]) -> Run {
    let mut cmd = env.command(None, T0);
    cmd.arg("init").args(args);
    to_run(cmd.output().unwrap())
}

/// The session of Cursor's reference payloads (their `conversation_id`).
const CURSOR_SESSION: &str = "0f1c6a2e-4b7d-4e36-9a51-7d2c8e5b1f03";

fn cursor(env: &TestEnv, event: &str, file: &str, minutes: i64) -> Run {
    let payload = fixture(&format!("cursor-reference/{file}"));
    let out = run_hook(env, &["hook", "cursor", event], &payload, &at(minutes), &[]);
    out.assert_code(0);
    assert_eq!(out.stderr, "", "{file}");
    out
}

fn loop_state(env: &TestEnv, ticket: &str) -> Value {
    let out = env.run(None, &at(60), &["--json", "loop", "show", ticket]);
    out.assert_code(0);
    out.json()["state"].clone()
}

/// T-1, owned by `session`, and T-2, left interrupted by another session.
fn two_loops(env: &TestEnv, session: &str) {
    env.baton(session, 0, &["loop", "init", "T-1"])
        .assert_code(0);
    env.baton("earlier-session", 0, &["loop", "init", "T-2"])
        .assert_code(0);
    env.baton(
        "earlier-session",
        1,
        &["loop", "interrupt", "T-2", "--reason", "rate_limit"],
    )
    .assert_code(0);
}

const CURSOR_USER_HOOKS: &str = r#"{
  "version": 1,
  "hooks": {
    "stop": [
      {
        "command": "./notify.sh",
        "loop_limit": 3
      }
    ],
    "afterFileEdit": [
      {
        "command": "prettier --write"
      }
    ]
  }
}
"#;

#[test]
fn cursor_init_merges_flat_entries_and_remove_takes_out_only_batons() {
    let env = TestEnv::new();
    let path = env.repo.join(".cursor/hooks.json");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, CURSOR_USER_HOOKS).unwrap();
    init(&env, &["cursor"]).assert_code(0);
    let text = std::fs::read_to_string(&path).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["version"], 1);
    assert_eq!(v["hooks"]["stop"][0]["command"], "./notify.sh");
    assert_eq!(v["hooks"]["stop"][0]["loop_limit"], 3);
    assert_eq!(
        v["hooks"]["afterFileEdit"][0]["command"],
        "prettier --write"
    );
    for event in ["sessionStart", "beforeSubmitPrompt", "stop", "sessionEnd"] {
        let entries = v["hooks"][event].as_array().unwrap();
        let mine = entries.last().unwrap();
        let command = mine["command"].as_str().unwrap();
        assert!(
            command.ends_with(&format!(" hook cursor {event}")),
            "{event}: {command}"
        );
        // A flat command entry: no group around it, no `type`, no timeout.
        assert_eq!(mine.as_object().unwrap().len(), 1, "{event}: {mine}");
    }
    let agents = std::fs::read_to_string(env.repo.join("AGENTS.md")).unwrap();
    assert!(agents.contains("baton"), "{agents}");
    // Again: nothing changes.
    let again = init(&env, &["--json", "cursor"]);
    again.assert_code(0);
    assert_eq!(again.json()["changed"], false);
    init(&env, &["cursor", "--remove"]).assert_code(0);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), CURSOR_USER_HOOKS);
    assert!(!env.repo.join("AGENTS.md").exists());

    // baton's entries edited away from the bytes it wrote: `--remove` still takes out only
    // them.
    init(&env, &["cursor"]).assert_code(0);
    let edited = std::fs::read_to_string(&path)
        .unwrap()
        .replace("prettier --write", "prettier --check");
    std::fs::write(&path, &edited).unwrap();
    init(&env, &["cursor", "--remove"]).assert_code(0);
    let left: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let commands: Vec<&str> = left["hooks"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|entries| entries.as_array().unwrap())
        .map(|e| e["command"].as_str().unwrap())
        .collect();
    assert_eq!(commands, ["./notify.sh", "prettier --check"]);
}

#[test]
fn cursor_init_in_a_fresh_project_and_invalid_json_refused() {
    let env = TestEnv::new();
    init(&env, &["cursor"]).assert_code(0);
    let path = env.repo.join(".cursor/hooks.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["version"], 1);
    init(&env, &["cursor", "--remove"]).assert_code(0);
    assert!(!env.repo.join(".cursor").exists());

    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, "{\n  \"version\": 1,\n  \"hooks\": {\n").unwrap();
    let before = env.snapshot();
    let run = init(&env, &["cursor"]);
    run.assert_code(2);
    assert!(
        run.stderr.contains(&path.display().to_string()),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("is not valid JSON"), "{}", run.stderr);
    assert!(run.stderr.contains("hint: fix the file"), "{}", run.stderr);
    assert_eq!(env.snapshot(), before);
    assert!(!env.repo.join("AGENTS.md").exists());
}

#[test]
fn cursor_session_start_hands_over_the_packet_in_cursors_shape() {
    let env = TestEnv::new();
    // Nothing resumable: nothing printed.
    let out = cursor(&env, "sessionStart", "sessionStart.json", 0);
    assert_eq!(out.stdout, "");
    two_loops(&env, CURSOR_SESSION);
    let out = cursor(&env, "sessionStart", "sessionStart.json", 5);
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["continue"], true);
    let context = v["additional_context"].as_str().unwrap();
    assert!(context.contains("T-2"), "{context}");
    assert!(context.contains("rate_limit"), "{context}");
    assert!(v.get("hookSpecificOutput").is_none(), "{v}");
}

#[test]
fn cursor_turn_refreshes_and_a_stopped_turn_is_no_interrupt() {
    let env = TestEnv::new();
    two_loops(&env, CURSOR_SESSION);
    cursor(&env, "sessionStart", "sessionStart.json", 2);
    let open = cursor(&env, "beforeSubmitPrompt", "beforeSubmitPrompt.json", 3);
    assert_eq!(open.stdout, "");
    let stop = cursor(&env, "stop", "stop.json", 5);
    // Never a `followup_message`: baton submits nothing.
    assert_eq!(stop.stdout, "");
    let t1 = loop_state(&env, "T-1");
    assert_eq!(t1["status"], "active");
    assert_eq!(t1["last_updated"], at(5));
    // The user stopped the next turn: a turn's end, not an interrupt.
    cursor(&env, "beforeSubmitPrompt", "beforeSubmitPrompt.json", 70);
    let aborted = cursor(&env, "stop", "stop.aborted.json", 72);
    assert_eq!(aborted.stdout, "");
    let t1 = loop_state(&env, "T-1");
    assert_eq!(t1["status"], "active");
    assert_eq!(t1["last_updated"], at(72));
}

#[test]
fn cursor_stop_with_an_error_interrupts_the_owned_loop() {
    let env = TestEnv::new();
    two_loops(&env, CURSOR_SESSION);
    cursor(&env, "sessionStart", "sessionStart.json", 2);
    cursor(&env, "beforeSubmitPrompt", "beforeSubmitPrompt.json", 3);
    let out = cursor(&env, "stop", "stop.error.json", 4);
    assert_eq!(out.stdout, "");
    let t1 = loop_state(&env, "T-1");
    assert_eq!(t1["status"], "interrupted");
    // The reference's stop names no error: a failure of unknown class, never a rate limit.
    assert_eq!(t1["interrupt_reason"], "unknown");
    // The other session's loop is not touched.
    assert_eq!(loop_state(&env, "T-2")["interrupted_at"], at(1));
    // The session's next prompt takes its own work back, as any client's does, with no note.
    let next = cursor(&env, "beforeSubmitPrompt", "beforeSubmitPrompt.json", 6);
    assert_eq!(next.stdout, "");
    let t1 = loop_state(&env, "T-1");
    assert_eq!(t1["status"], "active");
    assert_eq!(t1["session_id"], CURSOR_SESSION);
}

/// A note after a failure (work another process must take back) reaches Cursor's user as
/// `beforeSubmitPrompt`'s `user_message`, with the prompt let through.
#[test]
fn cursor_prompt_output_lets_the_prompt_through() {
    use baton_core::client::Client;
    let out: Value = serde_json::from_str(
        &Client::Cursor
            .def()
            .turn_context("beforeSubmitPrompt", "note"),
    )
    .unwrap();
    assert_eq!(out["continue"], true);
    assert_eq!(out["user_message"], "note");
}
