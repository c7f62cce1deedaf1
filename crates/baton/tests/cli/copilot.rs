//! GitHub Copilot CLI (1.0.102) as a client: `baton init copilot` writes a hook file of
//! baton's own, the hooks read its camelCase payloads (no event name in them), the packet goes
//! out as `{"additionalContext": …}`, a session that ends in error with a turn open is classed
//! from the session's `events.jsonl`, and a tool call finds its session by
//! `COPILOT_AGENT_SESSION_ID`.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{Run, TestEnv, at, to_run};
use crate::hooks::{fixture, run_hook};

const DIR: &str = "copilot-1.0.102";

fn payload(name: &str) -> Vec<u8> {
    fixture(&format!("{DIR}/{name}"))
}

fn session_of(payload: &[u8]) -> String {
    let v: Value = serde_json::from_slice(payload).unwrap();
    v["sessionId"].as_str().unwrap().to_string()
}

fn hook(env: &TestEnv, event: &str, payload: &[u8], now: &str) -> Run {
    run_hook(env, &["hook", "copilot", event], payload, now, &[])
}

fn init(env: &TestEnv, args: &[&str]) -> Run {
    let mut cmd = env.command(None, &at(0));
    cmd.arg("init").arg("copilot").args(args);
    to_run(cmd.output().unwrap())
}

fn loop_state(env: &TestEnv, ticket: &str) -> Value {
    let out = env.run(None, &at(60), &["--json", "loop", "show", ticket]);
    out.assert_code(0);
    out.json()["state"].clone()
}

/// The captured tail of the events of a session whose retries on a 429 ran out, where
/// Copilot CLI keeps it: `<copilot home>/session-state/<session>/events.jsonl`.
fn put_transcript(home: &Path, session: &str) -> PathBuf {
    let dir = home.join("session-state").join(session);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("events.jsonl");
    std::fs::write(
        &path,
        fixture("transcripts/copilot-1.0.102.rate-limit-tail.jsonl"),
    )
    .unwrap();
    path
}

fn events(v: &Value) -> Vec<String> {
    v["hooks"].as_object().unwrap().keys().cloned().collect()
}

#[test]
fn init_writes_a_hook_file_of_batons_own_and_remove_takes_only_it() {
    let env = TestEnv::new();
    let mine = r#"{"version":1,"hooks":{"sessionStart":[{"type":"command","bash":"./mine.sh","timeoutSec":5}]}}"#;
    env.write(".github/hooks/mine.json", mine);
    env.write("AGENTS.md", "# Agents\n\nRun the tests.\n");
    let out = init(&env, &["--json"]);
    out.assert_code(0);
    let report = out.json();
    let notes = report.to_string();
    assert!(notes.contains("trusted folder"), "{notes}");
    assert!(notes.contains("--trust-folder"), "{notes}");
    let path = env.repo.join(".github/hooks/baton.json");
    let written: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(written["version"], 1);
    assert_eq!(
        events(&written),
        [
            "sessionStart",
            "userPromptSubmitted",
            "agentStop",
            "sessionEnd",
            "preToolUse"
        ]
    );
    for (event, handlers) in written["hooks"].as_object().unwrap() {
        let [handler] = handlers.as_array().unwrap().as_slice() else {
            panic!("{event}: {handlers}");
        };
        assert_eq!(handler["type"], "command");
        assert_eq!(handler["timeoutSec"], 30);
        let bash = handler["bash"].as_str().unwrap();
        assert!(
            bash.ends_with(&format!("baton hook copilot {event}")),
            "{bash}"
        );
    }
    let agents = std::fs::read_to_string(env.repo.join("AGENTS.md")).unwrap();
    assert!(
        agents.starts_with("# Agents\n\nRun the tests.\n"),
        "{agents}"
    );
    assert!(agents.contains("baton"), "{agents}");
    // Again: nothing changes.
    let again = init(&env, &["--json"]);
    again.assert_code(0);
    assert_eq!(again.json()["changed"], false);

    init(&env, &["--remove"]).assert_code(0);
    assert!(!path.exists());
    assert_eq!(
        std::fs::read_to_string(env.repo.join(".github/hooks/mine.json")).unwrap(),
        mine
    );
    assert_eq!(
        std::fs::read_to_string(env.repo.join("AGENTS.md")).unwrap(),
        "# Agents\n\nRun the tests.\n"
    );
}

#[test]
fn a_user_install_goes_into_the_copilot_home() {
    let env = TestEnv::new();
    init(&env, &["--user"]).assert_code(0);
    let home = env.home().join(".copilot");
    assert!(home.join("hooks/baton.json").is_file());
    assert!(home.join("copilot-instructions.md").is_file());
    assert!(!env.repo.join(".github").exists());
    init(&env, &["--user", "--remove"]).assert_code(0);
    assert!(!home.join("hooks/baton.json").exists());
    assert!(!home.join("copilot-instructions.md").exists());
    // `COPILOT_HOME` moves it.
    let elsewhere = env.home().join("cp");
    let mut cmd = env.command(None, &at(0));
    cmd.env("COPILOT_HOME", &elsewhere)
        .args(["init", "copilot", "--user"]);
    to_run(cmd.output().unwrap()).assert_code(0);
    assert!(elsewhere.join("hooks/baton.json").is_file());
}

#[test]
fn a_session_start_hands_over_the_packet_as_additional_context() {
    let env = TestEnv::new();
    let start = payload("sessionStart.json");
    // Nothing resumable: nothing printed.
    let out = hook(&env, "sessionStart", &start, &at(0));
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
    for file in ["sessionStart.json", "sessionStart.resume.json"] {
        let out = hook(&env, "sessionStart", &payload(file), &at(2));
        out.assert_code(0);
        assert_eq!(out.stderr, "", "{file}");
        let injected: Value = serde_json::from_str(&out.stdout).unwrap();
        let context = injected["additionalContext"].as_str().unwrap();
        assert!(context.contains("T-2"), "{file}: {context}");
        assert!(context.contains("rate_limit"), "{file}: {context}");
        assert_eq!(injected.as_object().unwrap().len(), 1, "{injected}");
    }
}

#[test]
fn a_turn_refreshes_what_the_session_owns() {
    let env = TestEnv::new();
    let prompt = payload("userPromptSubmitted.json");
    let session = session_of(&prompt);
    env.baton(&session, 0, &["loop", "init", "T-1"])
        .assert_code(0);
    let out = hook(&env, "userPromptSubmitted", &prompt, &at(5));
    out.assert_code(0);
    assert_eq!(out.stdout, "");
    let turn = env
        .state_dir()
        .join("sessions")
        .join(format!("copilot-{session}.turn"));
    assert!(turn.exists());
    let out = hook(&env, "agentStop", &payload("agentStop.json"), &at(5));
    out.assert_code(0);
    assert_eq!(out.stdout, "");
    assert!(!turn.exists());
    let t1 = loop_state(&env, "T-1");
    assert_eq!(t1["last_updated"], at(5));
    assert_eq!(t1["status"], "active");
    // Each retry's errorOccurred changes nothing.
    let before = env.snapshot();
    let out = hook(
        &env,
        "errorOccurred",
        &payload("errorOccurred.after-429.json"),
        &at(6),
    );
    out.assert_code(0);
    assert_eq!((out.stdout.as_str(), out.stderr.as_str()), ("", ""));
    assert_eq!(env.snapshot(), before);
}

/// The 429 run: a tool call made the loop the session's, the prompt opened a turn, the
/// retries ran out and the session ended with `reason: "error"`; its events say rate limit.
#[test]
fn a_session_ending_in_error_after_a_429_interrupts_its_loop_as_rate_limit() {
    let end = payload("sessionEnd.after-429.json");
    let session = session_of(&end);
    let prompt: Vec<u8> = {
        let mut v: Value = serde_json::from_slice(&payload("userPromptSubmitted.json")).unwrap();
        v["sessionId"] = session.clone().into();
        serde_json::to_vec(&v).unwrap()
    };
    // (where the transcript is, COPILOT_HOME, the reason wanted)
    let cases: [(&str, bool, &str); 3] = [
        ("home", false, "rate_limit"),
        ("copilot-home", true, "rate_limit"),
        ("none", false, "unknown"),
    ];
    for (where_, copilot_home, want) in cases {
        let env = TestEnv::new();
        let tool = env
            .command(None, &at(0))
            .env("COPILOT_AGENT_SESSION_ID", &session)
            .args(["--json", "loop", "init", "T-1"])
            .output()
            .unwrap();
        to_run(tool).assert_code(0);
        assert_eq!(loop_state(&env, "T-1")["session_id"], session.as_str());
        let elsewhere = env.home().join("elsewhere");
        match where_ {
            "home" => drop(put_transcript(&env.home().join(".copilot"), &session)),
            "copilot-home" => drop(put_transcript(&elsewhere, &session)),
            _ => {}
        }
        let vars: Vec<(&str, &std::ffi::OsStr)> = if copilot_home {
            vec![("COPILOT_HOME", elsewhere.as_os_str())]
        } else {
            vec![]
        };
        run_hook(
            &env,
            &["hook", "copilot", "userPromptSubmitted"],
            &prompt,
            &at(1),
            &vars,
        )
        .assert_code(0);
        let out = run_hook(
            &env,
            &["hook", "copilot", "sessionEnd"],
            &end,
            &at(2),
            &vars,
        );
        out.assert_code(0);
        assert_eq!(out.stderr, "", "{where_}");
        let t1 = loop_state(&env, "T-1");
        assert_eq!(t1["status"], "interrupted", "{where_}");
        assert_eq!(t1["interrupt_reason"], want, "{where_}");
    }
}

#[test]
fn a_session_that_ends_between_turns_left_its_work_unfinished() {
    let env = TestEnv::new();
    let end = payload("sessionEnd.json");
    let session = session_of(&end);
    env.baton(&session, 0, &["loop", "init", "T-1"])
        .assert_code(0);
    hook(&env, "sessionEnd", &end, &at(1)).assert_code(0);
    let t1 = loop_state(&env, "T-1");
    assert_eq!(t1["interrupt_reason"], "session_expiry");
}
