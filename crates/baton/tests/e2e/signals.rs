//! A plan's limit with each real client, the fake API sending it as the provider does (see
//! `Reply::PlanLimit`): the hooks leave the loop interrupted as a rate limit with the reset the
//! client's own evidence states as its `resume_after`. Claude Code (logged in as a subscriber)
//! says `You've hit your 5-hour limit · resets <time> (<zone>)` in its StopFailure; Codex
//! records `usage_limit_exceeded` with the window's `resets_at` in its rollout; Gemini CLI
//! writes the RetryInfo delay into its error report.

use jiff::{SignedDuration, Timestamp};

use crate::clients::{Client, Harness};
use crate::fake_api::Reply;
use crate::flow::{baton, loop_state};

fn plan_limit_keeps_its_reset(client: Client, test: &str, secs: u64) {
    let script = vec![
        Reply::Shell("baton loop init T-1".into()),
        Reply::PlanLimit(secs),
    ];
    let Some(mut h) = Harness::new(client, test, script) else {
        return;
    };
    h.subscription = true;
    let mut init = vec!["init", client.program()];
    if client == Client::Codex {
        init.push("--trust-project");
    }
    let (code, out, err) = baton(&h, &init);
    assert_eq!(code, 0, "baton init: {out}\n{err}");
    let before = Timestamp::now();
    let run = h.run("work on ticket T-1");
    let after = Timestamp::now();
    assert_ne!(run.code, Some(0), "the limit ends the run: {run}");
    let state = loop_state(&h);
    assert_eq!(state["status"], "interrupted", "{state}\n{run}");
    assert_eq!(state["interrupt_reason"], "rate_limit", "{state}\n{run}");
    let reset: Timestamp = state["resume_after"]
        .as_str()
        .unwrap_or_else(|| panic!("no resume_after: {state}\n{run}"))
        .parse()
        .unwrap();
    let secs = SignedDuration::from_secs(secs as i64);
    // Claude Code's text names the minute, not the second.
    let earliest = before + secs - SignedDuration::from_secs(61);
    let latest = after + secs + SignedDuration::from_secs(1);
    assert!(
        earliest <= reset && reset <= latest,
        "{reset} not within {earliest}..{latest}\n{run}"
    );
}

#[test]
fn claude_subscription_limit_keeps_its_reset() {
    plan_limit_keeps_its_reset(
        Client::Claude,
        "claude_subscription_limit_keeps_its_reset",
        3 * 3600,
    );
}

#[test]
fn codex_usage_limit_keeps_its_reset() {
    plan_limit_keeps_its_reset(Client::Codex, "codex_usage_limit_keeps_its_reset", 3 * 3600);
}

#[test]
fn gemini_quota_retry_delay_keeps_its_reset() {
    // Over five minutes, so that Gemini CLI gives up at once instead of retrying.
    plan_limit_keeps_its_reset(
        Client::Gemini,
        "gemini_quota_retry_delay_keeps_its_reset",
        400,
    );
}
