//! The clients built from their published references rather than from captured runs (Cursor,
//! Antigravity CLI):
//! `baton init` writes their hook files and `--remove` takes out only baton's entries; a
//! session start hands over the packet in the client's own shape; a turn refreshes what the
//! session owns; the client's failure signal interrupts it with the reason the payload
//! supports; Antigravity's hooks file, which one parse error disables whole, is never written
//! over an unparsable one.

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

/// The session of Antigravity's reference payloads (their `conversationId`).
const AGY_SESSION: &str = "ec33ebf9-0cba-4100-8142-c61503f6c587";

fn agy(env: &TestEnv, event: &str, file: &str, minutes: i64) -> Run {
    let payload = fixture(&format!("antigravity-reference/{file}"));
    let out = run_hook(
        env,
        &["hook", "antigravity", event],
        &payload,
        &at(minutes),
        &[],
    );
    out.assert_code(0);
    assert_eq!(out.stderr, "", "{file}");
    out
}

/// Named hooks of the user's, as Antigravity reads them: one for a tool event (groups) and
/// one for `Stop` (a flat array of handlers).
const AGY_USER_HOOKS: &str = r#"{
  "shell-audit": {
    "PreToolUse": [
      {
        "matcher": "run_command",
        "hooks": [
          {
            "type": "command",
            "command": "./scripts/audit-command.sh",
            "timeout": 5
          }
        ]
      }
    ]
  },
  "lint-on-stop": {
    "Stop": [
      {
        "command": "make lint"
      }
    ]
  }
}
"#;

#[test]
fn antigravity_init_adds_one_named_hook_and_remove_takes_out_only_it() {
    let env = TestEnv::new();
    let path = env.repo.join(".agents/hooks.json");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, AGY_USER_HOOKS).unwrap();
    init(&env, &["antigravity"]).assert_code(0);
    let text = std::fs::read_to_string(&path).unwrap();
    // Strict JSON, every timeout a whole number: anything else drops the whole file.
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["lint-on-stop"]["Stop"][0]["command"], "make lint");
    assert_eq!(
        v["shell-audit"]["PreToolUse"][0]["hooks"][0]["command"],
        "./scripts/audit-command.sh"
    );
    for event in ["PreInvocation", "Stop"] {
        let handler = &v["baton"][event][0];
        assert_eq!(handler["type"], "command", "{event}");
        assert!(handler["timeout"].is_u64(), "{event}: {handler}");
        let command = handler["command"].as_str().unwrap();
        assert!(
            command.ends_with(&format!(" hook antigravity {event}")),
            "{event}: {command}"
        );
    }
    assert_eq!(v.as_object().unwrap().len(), 3, "{v}");
    let agents = std::fs::read_to_string(env.repo.join("AGENTS.md")).unwrap();
    assert!(agents.contains("baton"), "{agents}");
    let again = init(&env, &["--json", "antigravity"]);
    again.assert_code(0);
    assert_eq!(again.json()["changed"], false);
    init(&env, &["antigravity", "--remove"]).assert_code(0);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), AGY_USER_HOOKS);
    assert!(!env.repo.join("AGENTS.md").exists());

    // The user's hooks changed after the install: `--remove` takes out baton's hook alone.
    init(&env, &["antigravity"]).assert_code(0);
    let edited = std::fs::read_to_string(&path)
        .unwrap()
        .replace("make lint", "make check");
    std::fs::write(&path, &edited).unwrap();
    init(&env, &["antigravity", "--remove"]).assert_code(0);
    let left: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(left["lint-on-stop"]["Stop"][0]["command"], "make check");
    assert!(left.get("baton").is_none(), "{left}");
    assert_eq!(left.as_object().unwrap().len(), 2);

    // A fresh project: the file is created, and goes on `--remove`.
    let fresh = TestEnv::new();
    init(&fresh, &["antigravity"]).assert_code(0);
    let created = fresh.repo.join(".agents/hooks.json");
    serde_json::from_str::<Value>(&std::fs::read_to_string(&created).unwrap()).unwrap();
    init(&fresh, &["antigravity", "--remove"]).assert_code(0);
    assert!(!fresh.repo.join(".agents").exists());
}

#[test]
fn antigravity_init_refuses_a_hooks_file_it_cannot_parse_and_changes_nothing() {
    for bad in [
        "{\n  \"mine\": {\n",
        "{\n  // a comment\n  \"mine\": {\"Stop\": [{\"command\": \"x\"}]}\n}\n",
        "{\"mine\": {\"Stop\": [{\"command\": \"x\"},]}}\n",
    ] {
        let env = TestEnv::new();
        let path = env.repo.join(".agents/hooks.json");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, bad).unwrap();
        let before = env.snapshot();
        let run = init(&env, &["antigravity"]);
        run.assert_code(2);
        assert!(
            run.stderr.contains(&path.display().to_string()),
            "{}",
            run.stderr
        );
        assert!(run.stderr.contains("is not valid JSON"), "{}", run.stderr);
        assert!(run.stderr.contains("hint: fix the file"), "{}", run.stderr);
        assert_eq!(env.snapshot(), before, "{bad}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), bad);
        assert!(!env.repo.join("AGENTS.md").exists());
        // `--remove` refuses the same way.
        init(&env, &["antigravity", "--remove"]).assert_code(2);
        assert_eq!(env.snapshot(), before, "{bad}");
    }
}

#[test]
fn antigravity_user_install_goes_to_the_shared_config() {
    let env = TestEnv::new();
    init(&env, &["antigravity", "--user"]).assert_code(0);
    let path = env.home().join(".gemini/config/hooks.json");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert!(v["baton"]["Stop"].is_array(), "{v}");
    assert!(
        std::fs::read_to_string(env.home().join(".gemini/GEMINI.md"))
            .unwrap()
            .contains("baton")
    );
    init(&env, &["antigravity", "--user", "--remove"]).assert_code(0);
    assert!(!path.exists());
}

#[test]
fn antigravity_first_invocation_hands_over_the_packet_as_an_injected_step() {
    let env = TestEnv::new();
    let out = agy(&env, "PreInvocation", "PreInvocation.first.json", 0);
    assert_eq!(out.stdout, "");
    two_loops(&env, AGY_SESSION);
    let out = agy(&env, "PreInvocation", "PreInvocation.first.json", 5);
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    let steps = v["injectSteps"].as_array().unwrap();
    assert_eq!(steps.len(), 1);
    let context = steps[0]["ephemeralMessage"].as_str().unwrap();
    assert!(context.contains("T-2"), "{context}");
    assert!(context.contains("rate_limit"), "{context}");
    // A later invocation opens a turn and prints nothing.
    let later = agy(&env, "PreInvocation", "PreInvocation.json", 6);
    assert_eq!(later.stdout, "");
}

#[test]
fn antigravity_turn_refreshes_what_the_session_owns() {
    let env = TestEnv::new();
    two_loops(&env, AGY_SESSION);
    agy(&env, "PreInvocation", "PreInvocation.first.json", 2);
    agy(&env, "PreInvocation", "PreInvocation.json", 3);
    let stop = agy(&env, "Stop", "Stop.json", 5);
    // Never a decision: baton does not hold the agent at its stop.
    assert_eq!(stop.stdout, "");
    let t1 = loop_state(&env, "T-1");
    assert_eq!(t1["status"], "active");
    assert_eq!(t1["last_updated"], at(5));
}

#[test]
fn antigravity_stop_with_an_error_interrupts_with_the_class_it_names() {
    // (payload, reason, reset: the error's `Please retry in 31.5s.` after minute 4)
    for (file, reason, reset) in [
        (
            "Stop.error-429.json",
            "rate_limit",
            Some("2026-03-01T12:04:31Z"),
        ),
        ("Stop.error.json", "unknown", None),
    ] {
        let env = TestEnv::new();
        two_loops(&env, AGY_SESSION);
        agy(&env, "PreInvocation", "PreInvocation.first.json", 2);
        agy(&env, "PreInvocation", "PreInvocation.json", 3);
        let out = agy(&env, "Stop", file, 4);
        assert_eq!(out.stdout, "", "{file}");
        let t1 = loop_state(&env, "T-1");
        assert_eq!(t1["status"], "interrupted", "{file}");
        assert_eq!(t1["interrupt_reason"], reason, "{file}: {t1}");
        assert_eq!(t1["resume_after"].as_str(), reset, "{file}: {t1}");
        assert_eq!(loop_state(&env, "T-2")["interrupted_at"], at(1), "{file}");
    }
}
