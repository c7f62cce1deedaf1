//! baton with the real Copilot CLI (1.0.102): `baton init copilot` in the project; a run whose
//! tool call starts a ticket loop, then a 429 on every attempt of the next model call (Copilot
//! CLI retries five times, firing `errorOccurred` each time, then ends the session with
//! `reason: "error"`): the loop is interrupted as a rate limit, from the session's
//! `events.jsonl`, and owned by Copilot's session; a second run's request carries the packet.

use crate::clients::{Client, Harness};
use crate::fake_api::Reply;
use crate::flow::{baton, journal, loop_state};

#[test]
fn copilot_loop_is_interrupted_by_a_429_and_resumed() {
    let test = "copilot_loop_is_interrupted_by_a_429_and_resumed";
    let mut script = vec![Reply::Shell("baton loop init T-1".into())];
    // The first attempt and its five retries.
    script.extend(std::iter::repeat_n(Reply::RateLimit, 6));
    let Some(h) = Harness::new(Client::Copilot, test, script) else {
        return;
    };
    let (code, out, err) = baton(&h, &["init", "copilot"]);
    assert_eq!(code, 0, "baton init: {out}\n{err}");
    assert!(err.contains("trusted folder"), "{err}");

    let first = h.run("work on ticket T-1");
    eprintln!(
        "{test}: session 1 {:?} after {:.1?}",
        first.code, first.elapsed
    );
    assert_eq!(
        first.code,
        Some(1),
        "a 429 ends the run: {first}\n{}",
        h.api.summary()
    );
    assert_eq!(
        h.api.remaining(),
        0,
        "every retry was answered 429: {first}"
    );
    // `-p` names the session it ran on stderr: `Resume     copilot --resume=<id>`.
    let session = first
        .stderr
        .split("--resume=")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no session named: {first}"))
        .to_string();
    let state = loop_state(&h);
    assert_eq!(state["status"], "interrupted", "{state}\n{first}");
    assert_eq!(state["interrupt_reason"], "rate_limit", "{state}\n{first}");
    assert_eq!(state["session_id"], session.as_str(), "{state}");
    let events: Vec<String> = journal(&h).into_iter().map(|(e, _)| e).collect();
    assert_eq!(events, ["init", "interrupt"], "{first}");

    let seen_before = h.api.requests().len();
    let second = h.run("carry on");
    assert_eq!(second.code, Some(0), "{second}\n{}", h.api.summary());
    let packet = h.api.requests()[seen_before..]
        .iter()
        .filter(|r| r.main)
        .any(|r| r.body.contains("EXPECTED OUTCOME") && r.body.contains("T-1"));
    assert!(
        packet,
        "no request of session 2 carries the packet:\n{}",
        h.api.summary()
    );
}
