//! A hook's stdin, as each client sends it: Claude Code, Codex and Gemini CLI.

use baton_core::client::{Action, Client, TranscriptEnd};
use baton_core::hook::{HookEvent, interrupt_for, parse_payload};
use serde_json::Value;

/// The events a hook may be installed for, across the clients.
const EVENTS: [&str; 12] = [
    "SessionStart",
    "UserPromptSubmit",
    "Stop",
    "StopFailure",
    "SessionEnd",
    "PreCompact",
    "PreToolUse",
    "BeforeAgent",
    "AfterAgent",
    "PreCompress",
    "BeforeModel",
    "Notification",
];

/// The first byte picks the client; the rest is the payload. The hook is taken to be installed
/// for the event the payload names (so the fuzzer reaches every action), and for one fixed
/// event besides.
pub fn hook_stdin(data: &[u8]) {
    let (which, bytes) = crate::split_selector(data, Client::ALL.len() as u8);
    let client = Client::ALL[usize::from(which)];
    let named = serde_json::from_slice::<Value>(bytes)
        .ok()
        .and_then(|v| v.get("hook_event_name")?.as_str().map(str::to_string));
    let fixed = EVENTS[bytes.len() % EVENTS.len()];
    for expected in named.as_deref().into_iter().chain([fixed]) {
        match parse_payload(client, expected, bytes) {
            Ok(event) => check_event(client, expected, &event),
            // Every refusal is one line on stderr.
            Err(e) => assert!(!e.to_string().contains('\n'), "{e}"),
        }
    }
}

fn normalized(name: &str) -> String {
    name.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

fn check_event(client: Client, expected: &str, event: &HookEvent) {
    assert_eq!(event.client, client);
    assert!(!event.session_id.is_empty(), "an event without a session");
    assert_eq!(normalized(&event.event), normalized(expected));
    for turn_open in [false, true] {
        for transcript in [
            TranscriptEnd::RateLimit { resets: None },
            TranscriptEnd::Unknown,
        ] {
            let interrupt = interrupt_for(&event.action, turn_open, transcript);
            match &event.action {
                Action::Failure { .. } | Action::SessionEnd { terminal: true, .. } => {
                    let i = interrupt.expect("a failure or a terminal end interrupts");
                    assert!(
                        ["rate_limit", "session_expiry", "unknown"].contains(&i.reason.as_str())
                    );
                    assert!(!i.evidence.contains('\n'), "{}", i.evidence);
                }
                _ => assert!(interrupt.is_none(), "{:?} interrupted", event.action),
            }
        }
    }
    if let Action::SessionStart { source } = &event.action {
        // What a session-start hook prints is JSON carrying the context as given.
        let out: Value = serde_json::from_str(&client.def().session_start_output(source))
            .expect("the session-start output is JSON");
        assert_eq!(
            out.pointer("/hookSpecificOutput/additionalContext")
                .and_then(Value::as_str),
            Some(source.as_str())
        );
    }
}
