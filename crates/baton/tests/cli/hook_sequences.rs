//! Whole hook sequences as the clients send them around a session's end: a pause from a tool
//! call survives the hooks that close the turn and the session, and a session the client
//! continues by itself after a usage limit (Claude Code's auto-continue) takes its own work
//! back, once, with nobody else resuming it too.

use std::io::Write;
use std::path::Path;
use std::process::Stdio;

use serde_json::Value;

use crate::common::{Run, TestEnv, at, to_run};

fn fixture(rel: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/clients")
        .join(rel);
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// A captured payload with its session id replaced by `session`.
fn payload(rel: &str, session: &str) -> Vec<u8> {
    let mut v = fixture(rel);
    v["session_id"] = session.into();
    serde_json::to_vec(&v).unwrap()
}

/// `baton hook <client> <event>` at `now`, with `payload` on stdin and `vars` in its
/// environment.
fn hook_env(
    env: &TestEnv,
    client: &str,
    event: &str,
    payload: &[u8],
    now: &str,
    vars: &[(&str, String)],
) -> Run {
    let mut cmd = env.command(None, now);
    cmd.args(["hook", client, event]);
    for (k, v) in vars {
        cmd.env(k, v);
    }
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let _ = child.stdin.take().unwrap().write_all(payload);
    let run = to_run(child.wait_with_output().unwrap());
    assert_eq!(run.code, 0, "{client} {event}: {}", run.stderr);
    assert_eq!(run.stderr, "", "{client} {event}");
    run
}

fn hook(env: &TestEnv, client: &str, event: &str, payload: &[u8], now: &str) -> Run {
    hook_env(env, client, event, payload, now, &[])
}

/// The class the next session's `baton resume --json` gives the loop for `ticket`.
fn class_of(env: &TestEnv, session: &str, minutes: i64, ticket: &str) -> String {
    let out = env.baton(session, minutes, &["--json", "resume"]);
    out.assert_code(0);
    let all = out.json();
    all["work"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["kind"] == "loop" && w["key"] == ticket)
        .unwrap_or_else(|| panic!("no loop {ticket} in {all}"))["class"]
        .as_str()
        .unwrap_or_else(|| panic!("no class for {ticket} in {all}"))
        .to_string()
}

fn loop_state(env: &TestEnv, ticket: &str) -> Value {
    let out = env.run(None, &at(120), &["--json", "loop", "show", ticket]);
    out.assert_code(0);
    out.json()["state"].clone()
}

/// One client's names for the events of a turn and a session.
struct Client {
    name: &'static str,
    dir: &'static str,
    prompt: &'static str,
    stop: &'static str,
    /// Sent during the turn and after it, before every model call (Gemini CLI), if any.
    precompress: Option<&'static str>,
}

const CLIENTS: [Client; 3] = [
    Client {
        name: "claude",
        dir: "claude-code-2.1.332",
        prompt: "UserPromptSubmit",
        stop: "Stop",
        precompress: None,
    },
    Client {
        name: "codex",
        dir: "codex-0.171.0",
        prompt: "UserPromptSubmit",
        stop: "Stop",
        precompress: None,
    },
    Client {
        name: "gemini",
        dir: "gemini-0.61.0",
        prompt: "BeforeAgent",
        stop: "AfterAgent",
        precompress: Some("PreCompress.1"),
    },
];

/// `baton pause` from a tool call, then the hooks that end that turn and the session: the
/// stop hook (with Gemini CLI's PreCompress around it) and the session end. The next session
/// is told `pause`, not `crash` or `left`.
#[test]
fn a_pause_from_a_tool_call_survives_the_turns_stop_and_the_sessions_end() {
    for c in &CLIENTS {
        let env = TestEnv::new();
        let session = format!("{}-session", c.name);
        let p = |event: &str| payload(&format!("{}/{event}.json", c.dir), &session);
        env.baton(&session, 0, &["loop", "init", "T-1"])
            .assert_code(0);
        hook(&env, c.name, "SessionStart", &p("SessionStart"), &at(1));
        hook(&env, c.name, c.prompt, &p(c.prompt), &at(2));
        if let Some(pre) = c.precompress {
            hook(&env, c.name, "PreCompress", &p(pre), &at(2));
        }
        env.baton(&session, 3, &["pause", "--reason", "stopping for today"])
            .assert_code(0);
        if let Some(pre) = c.precompress {
            hook(&env, c.name, "PreCompress", &p(pre), &at(4));
        }
        hook(&env, c.name, c.stop, &p(c.stop), &at(5));
        hook(&env, c.name, "SessionEnd", &p("SessionEnd"), &at(6));
        assert_eq!(
            class_of(&env, "next-session", 30, "T-1"),
            "pause",
            "{}: {}",
            c.name,
            loop_state(&env, "T-1")
        );
    }
}

const RESET_AT_12_05: &str = "Claude AI usage limit reached|1772366700";
const AUTO_CONTINUE: &str = "Your claude.ai usage limit has reset. Continue the task you were working on when the limit was reached; do not repeat work that is already complete.";
const AUTO_CONTINUE_EARLY: &str = "Your claude.ai usage is available again before the usage-limit reset. Continue the task you were working on when the limit was reached; do not repeat work that is already complete.";

/// A claude session S that owns T-1 and whose turn a usage limit ended at 12:03, resetting at
/// 12:05.
fn rate_limited(env: &TestEnv, session: &str, vars: &[(&str, String)]) {
    env.baton(session, 0, &["loop", "init", "T-1"])
        .assert_code(0);
    let p = |event: &str| payload(&format!("claude-code-2.1.332/{event}.json"), session);
    hook_env(
        env,
        "claude",
        "SessionStart",
        &p("SessionStart"),
        &at(1),
        vars,
    );
    hook_env(
        env,
        "claude",
        "UserPromptSubmit",
        &p("UserPromptSubmit"),
        &at(2),
        vars,
    );
    let mut failure: Value = serde_json::from_slice(&p("StopFailure.after-429")).unwrap();
    failure["last_assistant_message"] = RESET_AT_12_05.into();
    hook_env(
        env,
        "claude",
        "StopFailure",
        &serde_json::to_vec(&failure).unwrap(),
        &at(3),
        vars,
    );
    let t1 = loop_state(env, "T-1");
    assert_eq!(t1["status"], "interrupted");
    assert_eq!(t1["resume_after"], "2026-03-01T12:05:00Z");
}

fn prompt(session: &str, text: &str) -> Vec<u8> {
    let mut v = fixture("claude-code-2.1.332/UserPromptSubmit.json");
    v["session_id"] = session.into();
    v["prompt"] = text.into();
    serde_json::to_vec(&v).unwrap()
}

fn resume_events(env: &TestEnv, ticket: &str) -> Vec<Value> {
    let out = env.run(None, &at(120), &["--json", "log", ticket]);
    out.assert_code(0);
    out.json()["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["event"] == "resume" || e["event"] == "takeover")
        .cloned()
        .collect()
}

/// Claude Code continues the session by itself once the limit resets: the continued turn's
/// prompt hook takes the loop back as the same session, with no note and no human step; the
/// session's writes go through; the journal says who resumed it and how; a second waker (a
/// `resume accept` from another session) is refused.
#[test]
fn the_clients_own_auto_continue_takes_its_loop_back_once() {
    let env = TestEnv::new();
    rate_limited(&env, "S", &[]);
    let said = hook(
        &env,
        "claude",
        "UserPromptSubmit",
        &prompt("S", AUTO_CONTINUE),
        &at(6),
    );
    assert_eq!(
        said.stdout, "",
        "no note: the work is the session's own again"
    );
    let t1 = loop_state(&env, "T-1");
    assert_eq!(t1["status"], "active");
    assert_eq!(t1["session_id"], "S");
    assert!(t1["interrupt_reason"].is_null(), "{t1}");
    let events = resume_events(&env, "T-1");
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["event"], "resume");
    assert_eq!(events[0]["session"], "S");
    assert_eq!(events[0]["how"], "auto-continue");
    assert_eq!(events[0]["interrupt_reason"], "rate_limit");
    // The session's own writes go on.
    env.set_phase("S", 7, "T-1", "qa", "spawned").assert_code(0);
    // Another session, or a supervisor's relaunch, finds the loop live and owned.
    let second = env.baton("other", 8, &["resume", "accept", "T-1"]);
    second.assert_code(3);
    let packet = env.baton("other", 8, &["--json", "resume", "T-1"]).json();
    assert_eq!(packet["verdict"], "live", "{packet}");
    assert_eq!(resume_events(&env, "T-1").len(), 1);
}

/// Before the recorded reset nothing is taken back: the prompt is told when the limit resets,
/// and the first prompt after it takes the loop back (a person typing again counts the same).
#[test]
fn a_prompt_before_the_reset_takes_nothing_back() {
    let env = TestEnv::new();
    rate_limited(&env, "S", &[]);
    let early = hook(
        &env,
        "claude",
        "UserPromptSubmit",
        &prompt("S", "go on"),
        &at(4),
    );
    assert!(
        early.stdout.contains("resets at 2026-03-01T12:05:00Z"),
        "{}",
        early.stdout
    );
    assert_eq!(loop_state(&env, "T-1")["status"], "interrupted");
    env.set_phase("S", 4, "T-1", "qa", "spawned").assert_code(3);
    let later = hook(
        &env,
        "claude",
        "UserPromptSubmit",
        &prompt("S", "go on"),
        &at(6),
    );
    assert_eq!(later.stdout, "");
    assert_eq!(loop_state(&env, "T-1")["status"], "active");
    assert_eq!(resume_events(&env, "T-1")[0]["how"], "prompt");
}

/// Claude Code continues early when the usage comes back before the limit's reset ("…available
/// again before the usage-limit reset…"): the client's own word outranks the recorded reset, and
/// the session gets its work back at once instead of being told to wait.
#[test]
fn an_early_auto_continue_takes_its_loop_back_before_the_recorded_reset() {
    let env = TestEnv::new();
    rate_limited(&env, "S", &[]);
    let said = hook(
        &env,
        "claude",
        "UserPromptSubmit",
        &prompt("S", AUTO_CONTINUE_EARLY),
        &at(4),
    );
    assert_eq!(
        said.stdout, "",
        "no wait: the client says the usage is back"
    );
    assert_eq!(loop_state(&env, "T-1")["status"], "active");
    assert_eq!(resume_events(&env, "T-1")[0]["how"], "auto-continue-early");
    env.set_phase("S", 4, "T-1", "qa", "spawned").assert_code(0);
}

/// A prompt from another client process than the one that started the session (the same id
/// resumed elsewhere) takes nothing back: it is told how to, as any other session would be.
#[test]
fn another_client_process_of_the_same_session_takes_nothing_back() {
    let mut first = std::process::Command::new("sleep")
        .arg("60")
        .spawn()
        .unwrap();
    let mut second = std::process::Command::new("sleep")
        .arg("60")
        .spawn()
        .unwrap();
    let env = TestEnv::new();
    rate_limited(&env, "S", &[("CLAUDE_PID", first.id().to_string())]);
    let said = hook_env(
        &env,
        "claude",
        "UserPromptSubmit",
        &prompt("S", AUTO_CONTINUE),
        &at(6),
        &[("CLAUDE_PID", second.id().to_string())],
    );
    assert!(
        said.stdout.contains("`baton resume accept T-1`"),
        "{}",
        said.stdout
    );
    assert_eq!(loop_state(&env, "T-1")["status"], "interrupted");
    assert!(resume_events(&env, "T-1").is_empty());
    let _ = first.kill();
    let _ = second.kill();
    let _ = (first.wait(), second.wait());
}

/// Another session's prompt never takes a loop back, whatever its prompt says.
#[test]
fn another_session_never_takes_the_loop_back() {
    let env = TestEnv::new();
    rate_limited(&env, "S", &[]);
    hook(
        &env,
        "claude",
        "UserPromptSubmit",
        &prompt("X", AUTO_CONTINUE),
        &at(6),
    );
    assert_eq!(loop_state(&env, "T-1")["status"], "interrupted");
    assert_eq!(loop_state(&env, "T-1")["session_id"], "S");
}

fn feature_row(all: &Value) -> &Value {
    all["work"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["kind"] == "feature")
        .unwrap_or_else(|| panic!("no feature in {all}"))
}

/// Seed 004 work (the active feature, no ticket loop): a rate limit that ends the turn of the
/// session on it is recorded on the feature, so the next session classes it `rate_limit` and
/// `baton wait` waits for its reset.
#[test]
fn a_rate_limit_on_the_active_feature_is_recorded_and_waited_for() {
    use crate::continuation_files::{POINTER, TASKS_PATH, feature_setup};
    let env = TestEnv::new();
    feature_setup(&env);
    env.set_age(POINTER, 10);
    env.set_age(TASKS_PATH, 10);
    let p = |event: &str| payload(&format!("claude-code-2.1.332/{event}.json"), "S");
    hook(&env, "claude", "SessionStart", &p("SessionStart"), &at(0));
    hook(
        &env,
        "claude",
        "UserPromptSubmit",
        &p("UserPromptSubmit"),
        &at(1),
    );
    let mut failure: Value = serde_json::from_slice(&p("StopFailure.after-429")).unwrap();
    failure["last_assistant_message"] = RESET_AT_12_05.into();
    hook(
        &env,
        "claude",
        "StopFailure",
        &serde_json::to_vec(&failure).unwrap(),
        &at(3),
    );
    let all = env.baton("next", 4, &["--json", "resume"]).json();
    let feature = feature_row(&all);
    assert_eq!(feature["class"], "rate_limit", "{all}");
    let md = all["packet_markdown"].as_str().unwrap();
    assert!(md.contains("2026-03-01T12:05:00Z"), "{md}");
    let wait = env.baton("next", 4, &["--json", "wait"]);
    wait.assert_code(0);
    let wait = wait.json();
    assert_eq!(wait["verdict"], "wait", "{wait}");
    assert_eq!(wait["until"], "2026-03-01T12:05:00Z", "{wait}");
    let after = env.baton("next", 6, &["--json", "wait"]).json();
    assert_eq!(after["verdict"], "ready", "{after}");
    // The feature written since (the next session went on with it): no longer that interrupt.
    env.set_age(TASKS_PATH, -7);
    let all = env.baton("next", 8, &["--json", "resume"]).json();
    assert_ne!(feature_row(&all)["class"], "rate_limit", "{all}");
}

/// A session that owns a loop of its own is not the one on the feature: its rate limit is the
/// loop's, and the feature is left as it was.
#[test]
fn a_rate_limit_of_a_session_with_its_own_loop_is_not_the_features() {
    use crate::continuation_files::{POINTER, TASKS_PATH, feature_setup};
    let env = TestEnv::new();
    feature_setup(&env);
    env.set_age(POINTER, 10);
    env.set_age(TASKS_PATH, 10);
    rate_limited(&env, "S", &[]);
    let all = env.baton("next", 4, &["--json", "resume"]).json();
    assert_ne!(feature_row(&all)["class"], "rate_limit", "{all}");
}

/// A headless session (`claude -p`, `codex exec`, `gemini -p`) returns after its turn with the
/// loop mid-way: the turn closed, then the session ended. That is not an unexpected end, so
/// nothing calls it a crash: the next session's `resume`, its packet, `status` and the
/// timeline say the session ended between turns with the work unfinished (`left`), and the
/// tree is clean.
#[test]
fn a_headless_session_that_ended_between_turns_is_not_a_crash() {
    for c in &CLIENTS {
        let env = TestEnv::new();
        let session = format!("{}-headless", c.name);
        let p = |event: &str| payload(&format!("{}/{event}.json", c.dir), &session);
        env.baton(&session, 0, &["loop", "init", "T-1"])
            .assert_code(0);
        hook(&env, c.name, "SessionStart", &p("SessionStart"), &at(1));
        hook(&env, c.name, c.prompt, &p(c.prompt), &at(2));
        hook(&env, c.name, c.stop, &p(c.stop), &at(3));
        hook(&env, c.name, "SessionEnd", &p("SessionEnd"), &at(3));
        assert_eq!(
            loop_state(&env, "T-1")["interrupt_reason"],
            "session_expiry"
        );

        let all = env.baton("next", 30, &["--json", "resume"]);
        all.assert_code(0);
        let all = all.json();
        assert_eq!(
            class_of(&env, "next", 30, "T-1"),
            "left",
            "{}: {all}",
            c.name
        );
        let md = all["packet_markdown"].as_str().unwrap();
        assert!(
            md.contains(
                "the session ended between turns with the work unfinished; the tree is clean"
            ),
            "{}: {md}",
            c.name
        );
        assert!(!md.contains("crash"), "{}: {md}", c.name);
        let text = env.baton("next", 30, &["resume"]);
        assert!(
            !text.stdout.contains("crash"),
            "{}: {}",
            c.name,
            text.stdout
        );
        let status = env.baton("next", 30, &["status"]);
        status.assert_code(0);
        assert!(
            status.stdout.contains("left"),
            "{}: {}",
            c.name,
            status.stdout
        );
        assert!(
            !status.stdout.contains("crash"),
            "{}: {}",
            c.name,
            status.stdout
        );
        let page = env.baton("next", 30, &["status", "--html", "--out", "timeline.html"]);
        page.assert_code(0);
        let html = std::fs::read_to_string(env.repo.join("timeline.html")).unwrap();
        assert!(
            html.contains("left: the session ended between turns"),
            "{}: the timeline's interrupt",
            c.name
        );
        assert!(!html.contains("crash: session_expiry"), "{}", c.name);
    }
}
