//! OpenCode (1.18.33) as a client: `baton init opencode` writes baton's plugin module (and
//! takes out only its own), and the hooks the plugin calls read OpenCode's bus events as the
//! plugin passes them (`properties`, plus `cwd` and `at`): a tool call owns its loop through
//! the session the plugin's `shell.env` gives it; a 429 that outlasts the retries interrupts
//! as a rate limit and the `session.idle` after it does not undo that; a retry that waits past
//! `FAR_RETRY_MS` interrupts as a rate limit until the retry, and OpenCode going ahead with it
//! takes the work back; the packet is plain text for a system message.

use serde_json::{Value, json};

use crate::common::{Run, TestEnv, at, to_run};
use crate::hooks::{fixture, run_hook};

const DIR: &str = "opencode-1.18.33";
const SESSION: &str = "ses_dc916c030ffeM4kBB2jupueqWO";

/// A captured event's `properties` as baton's plugin passes them, for `session`, seen at
/// `now` (epoch milliseconds).
fn properties(name: &str, session: &str, now_ms: i64) -> Value {
    let event: Value = serde_json::from_slice(&fixture(&format!("{DIR}/{name}"))).unwrap();
    let mut p = event["properties"].clone();
    p["sessionID"] = json!(session);
    p["cwd"] = json!("/nonexistent");
    p["at"] = json!(now_ms);
    p
}

fn ms(now: &str) -> i64 {
    now.parse::<jiff::Timestamp>().unwrap().as_millisecond()
}

/// `baton hook opencode <event>` as the plugin runs it: in the project, with OpenCode's pid.
fn hook(env: &TestEnv, event: &str, payload: &Value, now: &str) -> Run {
    let pid = std::process::id().to_string();
    run_hook(
        env,
        &["hook", "opencode", event],
        payload.to_string().as_bytes(),
        now,
        &[("OPENCODE_PID", std::ffi::OsStr::new(&pid))],
    )
}

/// A tool call of session `session`: `BATON_OPENCODE_SESSION` set by the plugin, no
/// `BATON_SESSION`.
fn tool_call(env: &TestEnv, session: &str, now: &str, args: &[&str]) -> Run {
    let mut cmd = env.command(None, now);
    cmd.env("BATON_OPENCODE_SESSION", session)
        .env("OPENCODE_PID", std::process::id().to_string())
        .env("OPENCODE", "1")
        .args(args);
    to_run(cmd.output().unwrap())
}

fn init(env: &TestEnv, args: &[&str]) -> Run {
    let mut cmd = env.command(None, &at(0));
    cmd.arg("init").arg("opencode").args(args);
    to_run(cmd.output().unwrap())
}

fn loop_state(env: &TestEnv, ticket: &str) -> Value {
    let out = env.run(None, &at(600), &["--json", "loop", "show", ticket]);
    out.assert_code(0);
    out.json()["state"].clone()
}

#[test]
fn init_writes_batons_plugin_and_remove_takes_only_it() {
    let env = TestEnv::new();
    env.write(
        ".opencode/plugins/mine.js",
        "export const Mine = async () => ({});\n",
    );
    env.write("AGENTS.md", "# Agents\n\nRun the tests.\n");
    let out = init(&env, &["--json"]);
    out.assert_code(0);
    let plugin = env.repo.join(".opencode/plugins/baton.js");
    let text = std::fs::read_to_string(&plugin).unwrap();
    assert!(text.starts_with("// baton's plugin for OpenCode"), "{text}");
    assert!(text.contains("const BATON = "), "{text}");
    for event in [
        "session.start",
        "chat.message",
        "session.status",
        "session.error",
        "session.idle",
    ] {
        assert!(text.contains(&format!("\"{event}\"")), "{event}");
    }
    assert!(text.contains("BATON_OPENCODE_SESSION"), "{text}");
    let agents = std::fs::read_to_string(env.repo.join("AGENTS.md")).unwrap();
    assert!(agents.starts_with("# Agents\n\nRun the tests.\n") && agents.contains("baton"));
    let notes = out.json().to_string();
    assert!(notes.contains("opencode --pure"), "{notes}");
    // Again: nothing changes.
    let again = init(&env, &["--json"]);
    again.assert_code(0);
    assert_eq!(again.json()["changed"], false);

    init(&env, &["--remove"]).assert_code(0);
    assert!(!plugin.exists());
    assert!(env.repo.join(".opencode/plugins/mine.js").is_file());
    assert_eq!(
        std::fs::read_to_string(env.repo.join("AGENTS.md")).unwrap(),
        "# Agents\n\nRun the tests.\n"
    );
}

#[test]
fn a_plugin_of_the_same_name_that_is_not_batons_is_refused_and_kept() {
    let env = TestEnv::new();
    let theirs = "export const Baton = async () => ({});\n";
    env.write(".opencode/plugins/baton.js", theirs);
    let before = env.snapshot();
    let out = init(&env, &[]);
    out.assert_code(2);
    assert!(
        out.stderr.contains(".opencode/plugins/baton.js"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("baton did not write"), "{}", out.stderr);
    assert!(out.stderr.contains("move it aside"), "{}", out.stderr);
    assert_eq!(env.snapshot(), before);
    init(&env, &["--remove"]).assert_code(0);
    assert_eq!(
        std::fs::read_to_string(env.repo.join(".opencode/plugins/baton.js")).unwrap(),
        theirs
    );
}

#[test]
fn a_user_install_goes_into_the_opencode_config_dir() {
    let env = TestEnv::new();
    init(&env, &["--user"]).assert_code(0);
    let dir = env.home().join(".config/opencode");
    assert!(dir.join("plugins/baton.js").is_file());
    assert!(dir.join("AGENTS.md").is_file());
    assert!(!env.repo.join(".opencode").exists());
    init(&env, &["--user", "--remove"]).assert_code(0);
    assert!(!dir.join("plugins/baton.js").exists());
    // `XDG_CONFIG_HOME` moves it.
    let elsewhere = env.home().join("xdg");
    let mut cmd = env.command(None, &at(0));
    cmd.env("XDG_CONFIG_HOME", &elsewhere)
        .args(["init", "opencode", "--user"]);
    to_run(cmd.output().unwrap()).assert_code(0);
    assert!(elsewhere.join("opencode/plugins/baton.js").is_file());
}

#[test]
fn a_429_past_the_retries_interrupts_as_a_rate_limit_and_the_idle_after_it_keeps_that() {
    let env = TestEnv::new();
    tool_call(&env, SESSION, &at(0), &["loop", "init", "T-1"]).assert_code(0);
    assert_eq!(loop_state(&env, "T-1")["session_id"], SESSION);
    let now = at(1);
    let start =
        json!({"sessionID": SESSION, "source": "startup", "cwd": "/nonexistent", "at": ms(&now)});
    let out = hook(&env, "session.start", &start, &now);
    out.assert_code(0);
    let prompt = json!({"sessionID": SESSION, "prompt": "go on", "at": ms(&now)});
    hook(&env, "chat.message", &prompt, &now).assert_code(0);
    let now = at(2);
    let error = properties("session.error.after-429.json", SESSION, ms(&now));
    let out = hook(&env, "session.error", &error, &now);
    out.assert_code(0);
    assert_eq!(out.stderr, "");
    let state = loop_state(&env, "T-1");
    assert_eq!(state["status"], "interrupted", "{state}");
    assert_eq!(state["interrupt_reason"], "rate_limit", "{state}");
    // The message's "try again in 1s".
    assert_eq!(state["resume_after"], "2026-03-01T12:02:01Z", "{state}");
    // OpenCode reports the session idle after the error, twice: the interrupt stays.
    for _ in 0..2 {
        let idle = properties("session.idle.after-429.json", SESSION, ms(&now));
        hook(&env, "session.idle", &idle, &at(3)).assert_code(0);
    }
    let state = loop_state(&env, "T-1");
    assert_eq!(state["status"], "interrupted", "{state}");
}

/// A captured OpenCode 2.0.15 event's `data` as baton's plugin passes it from `setup`: for
/// `session`, seen at `now_ms`, marked as sent from 2.x's shared server.
fn data_v2(name: &str, session: &str, now_ms: i64) -> Value {
    let event: Value =
        serde_json::from_slice(&fixture(&format!("opencode-2.0.15/{name}"))).unwrap();
    let mut d = event["data"].clone();
    d["sessionID"] = json!(session);
    d["cwd"] = json!("/nonexistent");
    d["at"] = json!(now_ms);
    d["shared_server"] = json!(true);
    d
}

/// OpenCode 2.x fails a turn with `session.execution.failed`: a quota error at once, a rate
/// limit after its retries; both interrupt the session's work as a rate limit. Its server runs
/// every session, so no process is recorded for the session, even with `OPENCODE_PID` in the
/// environment.
#[test]
fn opencode_2s_failed_execution_interrupts_as_a_rate_limit_and_names_no_process() {
    for fixture_name in [
        "session.execution.failed.quota.json",
        "session.execution.failed.rate-limit.json",
    ] {
        let env = TestEnv::new();
        tool_call(&env, SESSION, &at(0), &["loop", "init", "T-1"]).assert_code(0);
        let now = at(1);
        let start = json!({"sessionID": SESSION, "source": "startup", "cwd": "/nonexistent",
            "at": ms(&now), "shared_server": true});
        hook(&env, "session.start", &start, &now).assert_code(0);
        let record: Value = serde_json::from_slice(
            &std::fs::read(
                env.repo
                    .join(format!(".agentic/sessions/opencode-{SESSION}.json")),
            )
            .unwrap(),
        )
        .unwrap();
        assert!(record.get("client_pid").is_none(), "{record}");
        let now = at(2);
        let failed = data_v2(fixture_name, SESSION, ms(&now));
        let out = hook(&env, "session.execution.failed", &failed, &now);
        out.assert_code(0);
        assert_eq!(out.stderr, "", "{fixture_name}");
        let state = loop_state(&env, "T-1");
        assert_eq!(state["status"], "interrupted", "{fixture_name}: {state}");
        assert_eq!(
            state["interrupt_reason"], "rate_limit",
            "{fixture_name}: {state}"
        );
    }
}

#[test]
fn a_far_off_retry_interrupts_until_it_and_the_retry_going_ahead_takes_the_work_back() {
    let env = TestEnv::new();
    tool_call(&env, SESSION, &at(0), &["loop", "init", "T-1"]).assert_code(0);
    let now = at(1);
    let start = json!({"sessionID": SESSION, "source": "startup", "at": ms(&now)});
    hook(&env, "session.start", &start, &now).assert_code(0);
    hook(
        &env,
        "chat.message",
        &json!({"sessionID": SESSION, "at": ms(&now)}),
        &now,
    )
    .assert_code(0);
    // A throttle's retry, a minute off: nothing changes.
    let before = env.snapshot();
    let mut near = properties("session.status.retry.json", SESSION, ms(&now));
    near["status"]["next"] = json!(ms(&now) + 60_000);
    let out = hook(&env, "session.status", &near, &now);
    out.assert_code(0);
    assert_eq!(env.snapshot(), before);
    // A limit's: an hour off (retry-after: 3600).
    let mut far = properties(
        "session.status.retry.retry-after-3600.json",
        SESSION,
        ms(&now),
    );
    far["status"]["next"] = json!(ms(&at(61)));
    let out = hook(&env, "session.status", &far, &now);
    out.assert_code(0);
    assert_eq!(out.stderr, "");
    let state = loop_state(&env, "T-1");
    assert_eq!(state["status"], "interrupted", "{state}");
    assert_eq!(state["interrupt_reason"], "rate_limit", "{state}");
    assert_eq!(state["resume_after"], at(61), "{state}");
    // Another session sees it stopped by a limit until then.
    let out = env.run(Some("other"), &at(2), &["--json", "resume", "T-1"]);
    out.assert_code(0);
    assert!(out.stdout.contains(&at(61)), "{}", out.stdout);
    // The wait ends and OpenCode tries again: the session has its work back.
    let busy = properties("session.status.busy.json", SESSION, ms(&at(61)));
    let out = hook(&env, "session.status", &busy, &at(61));
    out.assert_code(0);
    let state = loop_state(&env, "T-1");
    assert_eq!(state["status"], "active", "{state}\n{}", out.stderr);
    assert_eq!(state["session_id"], SESSION, "{state}");
}

#[test]
fn the_packet_is_plain_text_for_a_system_message() {
    let env = TestEnv::new();
    let now = at(0);
    let start = json!({"sessionID": SESSION, "source": "resume", "at": ms(&now)});
    let out = hook(&env, "session.start", &start, &now);
    out.assert_code(0);
    assert_eq!(out.stdout, "");
    env.baton("earlier-session", 0, &["loop", "init", "T-2"])
        .assert_code(0);
    env.baton(
        "earlier-session",
        1,
        &["loop", "interrupt", "T-2", "--reason", "rate_limit"],
    )
    .assert_code(0);
    let out = hook(&env, "session.start", &start, &at(2));
    out.assert_code(0);
    assert!(
        out.stdout.contains("T-2") && out.stdout.contains("rate_limit"),
        "{}",
        out.stdout
    );
    assert!(
        serde_json::from_str::<Value>(&out.stdout).is_err(),
        "{}",
        out.stdout
    );
}

#[test]
fn a_tool_call_without_the_plugins_session_is_refused_and_records_nothing() {
    let env = TestEnv::new();
    let before = env.snapshot();
    let mut cmd = env.command(None, &at(0));
    cmd.env("OPENCODE_PID", std::process::id().to_string())
        .env("OPENCODE", "1")
        .args(["loop", "init", "T-1"]);
    let out = to_run(cmd.output().unwrap());
    out.assert_code(2);
    assert!(out.stderr.contains("no session id"), "{}", out.stderr);
    assert!(out.stderr.contains("baton init opencode"), "{}", out.stderr);
    assert_eq!(env.snapshot(), before);
    // With the plugin's variable, the same call owns its loop.
    tool_call(&env, SESSION, &at(0), &["loop", "init", "T-1"]).assert_code(0);
    assert_eq!(loop_state(&env, "T-1")["session_id"], SESSION);
}
