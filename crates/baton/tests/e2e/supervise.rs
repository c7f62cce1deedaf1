//! `baton supervise` with each real client: the fake API answers the task's model requests with
//! 429s (saying when to try again), supervise waits each out and relaunches the client in its
//! resume form, the session-start hook hands the model the packet, and the agent takes the loop
//! back and finishes it, with no human input. A crash is not retried.

use std::time::Duration;

use serde_json::Value;

use crate::clients::{Client, Harness};
use crate::fake_api::Reply;
use crate::flow::{baton, git, journal, loop_state};

const SUPERVISE_TIMEOUT: Duration = Duration::from_secs(300);

/// `baton init <client>` and a commit of what it wrote, so the tree is clean and an
/// interrupted loop resumes in automatic mode.
fn installed(h: &Harness) {
    let mut init = vec!["init", h.client.program()];
    if h.client == Client::Codex {
        init.push("--trust-project");
    }
    let (code, out, err) = baton(h, &init);
    assert_eq!(code, 0, "baton init: {out}\n{err}");
    for args in [
        &["add", "."][..],
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.invalid",
            "commit",
            "-qm",
            "baton hooks",
        ][..],
    ] {
        git(h, args);
    }
}

/// The harness for `script`, with baton's hooks installed and committed, and the outcome of
/// `baton supervise --backoff 1s,2s` on the task, which must end with exit 0.
fn supervised_to_the_end(
    client: Client,
    test: &str,
    script: Vec<Reply>,
) -> Option<(Harness, crate::clients::Outcome)> {
    let h = Harness::new(client, test, script)?;
    installed(&h);
    let run = h.supervise(
        &["--backoff", "1s,2s"],
        &h.task_args("work on ticket T-1"),
        SUPERVISE_TIMEOUT,
    );
    eprintln!("{test}: supervise {:?} after {:.1?}", run.code, run.elapsed);
    assert_eq!(run.code, Some(0), "{run}\n{}", h.api.summary());
    Some((h, run))
}

fn carried_through_rate_limits(client: Client, test: &str) {
    // OpenCode retries a 429 five times by itself before its run ends.
    let attempts = if client == Client::OpenCode { 6 } else { 1 };
    let mut script = vec![
        Reply::Shell("baton loop init T-1".into()),
        Reply::Shell("baton loop set T-1 --phase skeptic --action spawned".into()),
    ];
    // The rate limit ends the first run, and is still on at the first relaunch.
    script.extend(std::iter::repeat_n(Reply::RateLimitFor(1), 2 * attempts));
    script.extend([
        Reply::Shell("baton resume accept T-1".into()),
        Reply::Shell("baton loop set T-1 --phase qa --action spawned".into()),
        Reply::Shell("baton loop finish T-1 --status complete".into()),
        Reply::Text("finished".into()),
    ]);
    let Some((h, run)) = supervised_to_the_end(client, test, script) else {
        return;
    };
    assert!(
        run.stdout.contains("the work is finished"),
        "{run}\n{}",
        h.api.summary()
    );
    let state = loop_state(&h);
    assert_eq!(state["status"], "complete", "{state}");
    assert_eq!(state["last_phase"], "qa", "{state}");

    // The journal tells the whole story, in order. (Codex's rate limit names no reset time:
    // supervise records its backoff on the loop, a second `interrupt` event.)
    let events = journal(&h);
    let names: Vec<&str> = events
        .iter()
        .map(|(e, _)| e.as_str())
        .filter(|e| *e != "checkpoint")
        .collect();
    assert_eq!(names[..2], ["init", "set"], "{run}");
    // The rate limit is recorded. Claude Code does not wait for its StopFailure hook, so on a
    // busy machine the hook's `interrupt` can land after the supervisor's next attempt.
    let interrupt = names.iter().position(|e| *e == "interrupt");
    assert!(
        interrupt.is_some_and(|i| i < names.len() - 1),
        "{names:?}\n{run}"
    );
    let story: Vec<&str> = names
        .iter()
        .copied()
        .filter(|e| *e != "interrupt")
        .collect();
    // OpenCode's relaunch runs the same session (`--session`), whose first prompt takes its
    // work back (`resume`) before the supervisor records the attempt; the others' agent takes
    // it over with `baton resume accept`.
    let expected: &[&str] = if client == Client::OpenCode {
        &[
            "init",
            "set",
            "supervise.attempt",
            "supervise.wait",
            "supervise.relaunch",
            "resume",
            "supervise.attempt",
            "supervise.wait",
            "supervise.relaunch",
            "resume",
            "set",
            "finish",
            "supervise.attempt",
            "supervise.stop",
        ]
    } else {
        &[
            "init",
            "set",
            "supervise.attempt",
            "supervise.wait",
            "supervise.relaunch",
            "supervise.attempt",
            "supervise.wait",
            "supervise.relaunch",
            "takeover",
            "set",
            "finish",
            "supervise.attempt",
            "supervise.stop",
        ]
    };
    assert_eq!(story, expected, "{run}");
    let interrupt = &events.iter().find(|(e, _)| e == "interrupt").unwrap().1;
    assert_eq!(interrupt["reason"], "rate_limit", "{interrupt}");
    // Each wait is for the reset the 429 named (a second), or the short backoff when the
    // client does not pass the message on: never the loop protocol's default minute.
    for (_, wait) in events.iter().filter(|(e, _)| e == "supervise.wait") {
        let until: jiff::Timestamp = wait["until"].as_str().unwrap().parse().unwrap();
        let ts: jiff::Timestamp = wait["ts"].as_str().unwrap().parse().unwrap();
        let secs = until.duration_since(ts).as_secs_f64();
        assert!(secs <= 5.0, "waited {secs}s: {wait}");
        // Claude Code and Gemini CLI pass the 429's message on; Codex does not.
        let why = wait["why"].as_str().unwrap();
        let named = why.contains("resets at") || why.contains("has reset");
        assert_eq!(named, client != Client::Codex, "{wait}");
    }
    // The relaunched session's model request carried the packet for the loop.
    let packet = h
        .api
        .main_requests()
        .iter()
        .any(|r| r.body.contains("EXPECTED OUTCOME") && r.body.contains("T-1"));
    assert!(
        packet,
        "no request carries the packet:\n{}",
        h.api.summary()
    );
    let relaunch: Vec<Value> = events
        .iter()
        .filter(|(e, v)| e == "supervise.attempt" && v["attempt"] != 1)
        .map(|(_, v)| v["command"].clone())
        .collect();
    assert_eq!(relaunch.len(), 2, "{relaunch:?}");
    let resume_word = match client {
        Client::Claude => "--resume",
        Client::Codex => "resume",
        Client::Gemini => "-r",
        Client::Copilot => "--resume=",
        Client::OpenCode => "--session",
    };
    assert!(
        relaunch
            .iter()
            .all(|c| c.as_array().unwrap().iter().any(|w| w == resume_word)),
        "{relaunch:?}"
    );
    // Each relaunch names the session that stopped, by its id (Gemini CLI too, never
    // `latest`), so two supervisors in one project never resume each other's.
    let first_session = events
        .iter()
        .find(|(e, v)| e == "supervise.attempt" && v["attempt"] == 1)
        .map(|(_, v)| v["session"].clone())
        .unwrap();
    assert!(first_session.is_string(), "{first_session}");
    for command in &relaunch {
        let words = command.as_array().unwrap();
        let at = words.iter().position(|w| w == resume_word).unwrap();
        assert_eq!(words[at + 1], first_session, "{command}");
    }
}

#[test]
fn claude_is_carried_through_rate_limits_to_the_finish() {
    carried_through_rate_limits(
        Client::Claude,
        "claude_is_carried_through_rate_limits_to_the_finish",
    );
}

#[test]
fn codex_is_carried_through_rate_limits_to_the_finish() {
    carried_through_rate_limits(
        Client::Codex,
        "codex_is_carried_through_rate_limits_to_the_finish",
    );
}

#[test]
fn opencode_is_carried_through_rate_limits_to_the_finish() {
    carried_through_rate_limits(
        Client::OpenCode,
        "opencode_is_carried_through_rate_limits_to_the_finish",
    );
}

#[test]
fn gemini_is_carried_through_rate_limits_to_the_finish() {
    carried_through_rate_limits(
        Client::Gemini,
        "gemini_is_carried_through_rate_limits_to_the_finish",
    );
}

/// The agent's own tool call kills its client with SIGKILL mid-phase: supervise stops, says
/// why, and does not relaunch.
fn crash_is_not_retried(client: Client, test: &str) {
    let script = vec![
        Reply::Shell("baton loop init T-1".into()),
        // The shell's parent is the client process that runs the tool call.
        Reply::Shell("kill -9 $PPID".into()),
        Reply::Text("never reached".into()),
    ];
    let Some(h) = Harness::new(client, test, script) else {
        return;
    };
    installed(&h);
    let run = h.supervise(&[], &h.task_args("work on ticket T-1"), SUPERVISE_TIMEOUT);
    eprintln!("{test}: supervise {:?} after {:.1?}", run.code, run.elapsed);
    assert_eq!(run.code, Some(4), "{run}\n{}", h.api.summary());
    let launches = run.stderr.matches("baton supervise: attempt").count();
    assert_eq!(launches, 1, "relaunched after a crash: {run}");
    let state = loop_state(&h);
    assert_eq!(state["status"], "interrupted", "{state}");
    assert_ne!(state["interrupt_reason"], "rate_limit", "{state}");
    let (_, stop) = journal(&h).last().unwrap().clone();
    assert_eq!(stop["event"], "supervise.stop", "{stop}");
    assert_eq!(stop["status"], 4, "{stop}");
}

#[test]
fn claude_crash_is_not_retried() {
    crash_is_not_retried(Client::Claude, "claude_crash_is_not_retried");
}

#[test]
fn codex_crash_is_not_retried() {
    crash_is_not_retried(Client::Codex, "codex_crash_is_not_retried");
}

#[test]
fn gemini_crash_is_not_retried() {
    crash_is_not_retried(Client::Gemini, "gemini_crash_is_not_retried");
}

/// The task's first model requests are refused: the session owns nothing yet, and supervise
/// hears of the rate limit from the hooks alone, then relaunches the session, which does the
/// whole task.
fn limited_from_the_first_request(client: Client, test: &str) {
    let script = vec![
        Reply::RateLimitFor(1),
        Reply::RateLimitFor(1),
        Reply::Shell("baton loop init T-1".into()),
        Reply::Shell("baton loop set T-1 --phase skeptic --action spawned".into()),
        Reply::Shell("baton loop set T-1 --phase qa --action spawned".into()),
        Reply::Shell("baton loop finish T-1 --status complete".into()),
        Reply::Text("finished".into()),
    ];
    let Some((h, run)) = supervised_to_the_end(client, test, script) else {
        return;
    };
    assert_eq!(
        run.stderr.matches("baton supervise: attempt").count(),
        3,
        "{run}"
    );
    let state = loop_state(&h);
    assert_eq!(state["status"], "complete", "{state}");
    // The relaunched session still has the task (Gemini CLI keeps no trace of a prompt whose
    // request was refused, so the relaunch prompt repeats it).
    let later = h.api.main_requests();
    assert!(
        later.last().unwrap().body.contains("work on ticket T-1"),
        "{}",
        h.api.summary()
    );
}

#[test]
fn claude_limited_from_the_first_request() {
    limited_from_the_first_request(Client::Claude, "claude_limited_from_the_first_request");
}

#[test]
fn codex_limited_from_the_first_request() {
    limited_from_the_first_request(Client::Codex, "codex_limited_from_the_first_request");
}

#[test]
fn gemini_limited_from_the_first_request() {
    limited_from_the_first_request(Client::Gemini, "gemini_limited_from_the_first_request");
}
