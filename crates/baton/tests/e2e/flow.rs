//! The whole product with each real client: `baton init <client>`; session 1 drives a ticket
//! loop through two phase transitions by running the shell calls the fake API sends; a 429
//! ends it and the hooks leave the loop interrupted with the class the evidence supports;
//! session 2 starts and the fake API finds the resume packet in the request it receives.

use std::process::Command;

use serde_json::Value;

use crate::clients::{Client, Harness, baton_bin};
use crate::fake_api::Reply;

/// `git <args>` in the project; it must succeed. Its stdout.
pub fn git(h: &Harness, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(&h.project)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `baton` run in the project as the user would run it, with the harness's HOME.
pub fn baton(h: &Harness, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(baton_bin())
        .args(args)
        .current_dir(&h.project)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &h.home)
        .env("CODEX_HOME", h.home.join(".codex"))
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

pub fn loop_state(h: &Harness) -> Value {
    let (code, out, err) = baton(h, &["--json", "loop", "show", "T-1"]);
    assert_eq!(code, 0, "{out}\n{err}");
    serde_json::from_str::<Value>(&out).unwrap()["state"].clone()
}

pub fn journal(h: &Harness) -> Vec<(String, Value)> {
    let (code, out, err) = baton(h, &["--json", "log", "T-1"]);
    assert_eq!(code, 0, "{out}\n{err}");
    let log: Value = serde_json::from_str(&out).unwrap();
    log["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["event"].as_str().unwrap().to_string(), e.clone()))
        .collect()
}

fn interrupted_and_resumed(client: Client, test: &str, reason: &str) {
    // No `$(...)` in any command: Gemini CLI refuses command substitution in its shell tool.
    let script = vec![
        Reply::Shell("baton loop init T-1".into()),
        Reply::Shell("baton loop set T-1 --phase skeptic --action spawned".into()),
        Reply::Shell("baton loop set T-1 --phase qa --action spawned".into()),
        Reply::RateLimit,
        Reply::Text("resumed".into()),
    ];
    let Some(h) = Harness::new(client, test, script) else {
        return;
    };
    let mut init = vec!["init", client.program()];
    if client == Client::Codex {
        init.push("--trust-project");
    }
    let (code, out, err) = baton(&h, &init);
    assert_eq!(code, 0, "baton init: {out}\n{err}");

    let first = h.run("work on ticket T-1");
    eprintln!(
        "{test}: session 1 {:?} after {:.1?}",
        first.code, first.elapsed
    );
    assert_ne!(
        first.code,
        Some(0),
        "a 429 ends session 1: {first}\n{}",
        h.api.summary()
    );
    let state = loop_state(&h);
    assert_eq!(
        state["last_phase"],
        "qa",
        "both transitions ran: {state}\n{first}\n{}",
        h.api.summary()
    );
    assert_eq!(state["status"], "interrupted", "{state}\n{first}");
    assert_eq!(state["interrupt_reason"], reason, "{state}\n{first}");
    let owner = state["session_id"].as_str().unwrap_or_default().to_string();
    assert!(
        !owner.is_empty(),
        "the tool calls found their session: {state}"
    );
    // Checkpoints (Gemini CLI asks for one before every model call) come only with a new
    // position; the transitions and the interrupt are all there, in order.
    let events = journal(&h);
    let transitions: Vec<&str> = events
        .iter()
        .map(|(e, _)| e.as_str())
        .filter(|e| *e != "checkpoint")
        .collect();
    assert_eq!(transitions, ["init", "set", "set", "interrupt"], "{first}");
    let checkpoints: Vec<String> = events
        .iter()
        .filter(|(e, _)| e == "checkpoint")
        .map(|(_, v)| v["position"].to_string())
        .collect();
    let mut distinct = checkpoints.clone();
    distinct.dedup();
    assert_eq!(checkpoints, distinct, "a checkpoint repeated a position");
    let seen_before = h.api.requests().len();

    let second = h.run("carry on");
    eprintln!(
        "{test}: session 2 {:?} after {:.1?}",
        second.code, second.elapsed
    );
    assert_eq!(second.code, Some(0), "{second}\n{}", h.api.summary());
    let later: Vec<String> = h.api.requests()[seen_before..]
        .iter()
        .filter(|r| r.main)
        .map(|r| r.body.clone())
        .collect();
    let packet = later
        .iter()
        .find(|body| body.contains("EXPECTED OUTCOME") && body.contains("T-1"))
        .unwrap_or_else(|| {
            panic!(
                "no request of session 2 carries the packet:\n{}",
                h.api.summary()
            )
        });
    assert!(packet.contains("baton resume accept"), "{packet}");
    assert!(packet.contains(reason), "{packet}");
}

#[test]
fn claude_loop_is_interrupted_by_stop_failure_and_resumed() {
    interrupted_and_resumed(
        Client::Claude,
        "claude_loop_is_interrupted_by_stop_failure_and_resumed",
        "rate_limit",
    );
}

#[test]
fn codex_loop_is_interrupted_by_the_open_turn_rule_and_resumed() {
    interrupted_and_resumed(
        Client::Codex,
        "codex_loop_is_interrupted_by_the_open_turn_rule_and_resumed",
        "rate_limit",
    );
}

#[test]
fn gemini_loop_is_interrupted_by_the_open_turn_rule_and_resumed() {
    interrupted_and_resumed(
        Client::Gemini,
        "gemini_loop_is_interrupted_by_the_open_turn_rule_and_resumed",
        "rate_limit",
    );
}
