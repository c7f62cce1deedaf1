//! baton with the real OpenCode (1.18.33): `baton init opencode` writes baton's plugin into the
//! project; a run's tool calls drive a ticket loop through two phases (the loop owned by
//! OpenCode's own session id, which the plugin gives the tool calls); then a 429 on every
//! attempt of the next model call (OpenCode retries five times, then reports `session.error`
//! with status 429 and exits 1): the loop is interrupted as a rate limit, and a second run's
//! request carries the packet as a system message. A plan's limit an hour away, which OpenCode
//! waits out in its process, interrupts the loop at once with the retry as its reset.

use serde_json::Value;

use crate::clients::{Client, Harness};
use crate::fake_api::Reply;
use crate::flow::{baton, journal, loop_state};

#[test]
fn opencode_loop_is_interrupted_by_a_429_and_resumed() {
    let test = "opencode_loop_is_interrupted_by_a_429_and_resumed";
    let mut script = vec![
        Reply::Shell("baton loop init T-1".into()),
        Reply::Shell("baton loop set T-1 --phase skeptic --action spawned".into()),
        Reply::Shell("baton loop set T-1 --phase qa --action spawned".into()),
    ];
    // The first attempt and its five retries.
    script.extend(std::iter::repeat_n(Reply::RateLimit, 6));
    script.push(Reply::Text("resumed".into()));
    let Some(h) = Harness::new(Client::OpenCode, test, script) else {
        return;
    };
    let (code, out, err) = baton(&h, &["init", "opencode"]);
    assert_eq!(code, 0, "baton init: {out}\n{err}");
    assert!(
        h.read(".opencode/plugins/baton.js")
            .contains("\"hook\", \"opencode\""),
        "{out}\n{err}"
    );

    let first = h.run_args(&[
        "run".into(),
        "--format".into(),
        "json".into(),
        "work on ticket T-1".into(),
    ]);
    eprintln!(
        "{test}: session 1 {:?} after {:.1?}",
        first.code, first.elapsed
    );
    assert_eq!(
        first.code,
        Some(1),
        "a 429 that outlasts the retries ends the run: {first}\n{}",
        h.api.summary()
    );
    // `--format json` prints each part with the session it belongs to.
    let session = first
        .stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find_map(|v| v["sessionID"].as_str().map(str::to_string))
        .unwrap_or_else(|| panic!("no session named: {first}"));
    let state = loop_state(&h);
    assert_eq!(state["last_phase"], "qa", "{state}\n{first}");
    assert_eq!(state["status"], "interrupted", "{state}\n{first}");
    assert_eq!(state["interrupt_reason"], "rate_limit", "{state}\n{first}");
    assert_eq!(state["session_id"], session.as_str(), "{state}\n{first}");
    let events: Vec<String> = journal(&h).into_iter().map(|(e, _)| e).collect();
    assert_eq!(events, ["init", "set", "set", "interrupt"], "{first}");

    let seen_before = h.api.requests().len();
    let second = h.run("carry on");
    eprintln!(
        "{test}: session 2 {:?} after {:.1?}",
        second.code, second.elapsed
    );
    assert_eq!(second.code, Some(0), "{second}\n{}", h.api.summary());
    let packet = packet_request(&h, seen_before).unwrap_or_else(|| {
        panic!(
            "no request of session 2 carries the packet:\n{}",
            h.api.summary()
        )
    });
    // In a system message, not the user's.
    let system = system_text(&packet);
    assert!(system.contains("EXPECTED OUTCOME"), "{packet}");
    assert!(system.contains("baton resume accept"), "{packet}");
}

#[test]
fn opencode_waiting_out_a_limit_an_hour_away_leaves_the_loop_interrupted_until_then() {
    let test = "opencode_waiting_out_a_limit_an_hour_away_leaves_the_loop_interrupted_until_then";
    let script = vec![
        Reply::Shell("baton loop init T-1".into()),
        Reply::PlanLimit(3600),
    ];
    let Some(h) = Harness::new(Client::OpenCode, test, script) else {
        return;
    };
    let (code, out, err) = baton(&h, &["init", "opencode"]);
    assert_eq!(code, 0, "baton init: {out}\n{err}");
    let before = jiff::Timestamp::now();
    let mut child = h.spawn_args(&["run".into(), "work on ticket T-1".into()]);
    // A bound against a hang, not a timing: on a busy machine OpenCode's tool call and its next
    // request have taken over 90 s.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(180);
    let state = loop {
        let (code, out, _) = baton(&h, &["--json", "loop", "show", "T-1"]);
        if code == 0 {
            let state = serde_json::from_str::<Value>(&out).unwrap()["state"].clone();
            if state["status"] == "interrupted" {
                break state;
            }
        }
        if std::time::Instant::now() >= deadline {
            // SAFETY: kill(2) on the process group `spawn_args` made; no memory is involved.
            unsafe {
                libc::kill(-(child.id() as i32), libc::SIGKILL);
            }
            let _ = child.wait();
            panic!("no interrupt while OpenCode waits:\n{}", h.api.summary());
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    // OpenCode is still waiting for the retry: nothing ended the process.
    let waiting = child.try_wait().unwrap().is_none();
    // SAFETY: kill(2) on the process group `spawn_args` made; no memory is involved.
    unsafe {
        libc::kill(-(child.id() as i32), libc::SIGKILL);
    }
    let _ = child.wait();
    assert!(waiting, "OpenCode ended instead of waiting");
    assert_eq!(state["interrupt_reason"], "rate_limit", "{state}");
    let reset: jiff::Timestamp = state["resume_after"]
        .as_str()
        .unwrap_or_else(|| panic!("no resume_after: {state}"))
        .parse()
        .unwrap();
    let ahead = reset.duration_since(before).as_secs();
    assert!(
        (3590..=3700).contains(&ahead),
        "reset {ahead}s ahead: {state}"
    );
    assert_eq!(h.api.remaining(), 0, "{}", h.api.summary());
}

/// The system messages of a request body to the fake API (OpenAI's chat format), as one text.
pub fn system_text(body: &str) -> String {
    let body: Value = serde_json::from_str(body).unwrap();
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "system")
        .map(|m| m["content"].to_string())
        .collect()
}

/// The body of the first main request after the first `since` that carries the packet for
/// T-1.
pub fn packet_request(h: &Harness, since: usize) -> Option<String> {
    h.api.requests()[since..]
        .iter()
        .filter(|r| r.main)
        .map(|r| r.body.clone())
        .find(|body| body.contains("EXPECTED OUTCOME") && body.contains("T-1"))
}
