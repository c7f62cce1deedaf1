//! What an agent client's hook payload means to baton: one parser per client over one set of
//! actions, and the evidence of a rate limit in a client's transcript.
//!
//! The payload shapes are those the clients send on stdin (Claude Code 2.1.328 and 2.1.332,
//! Codex 0.171.0, Gemini CLI 0.61.0; samples in `fixtures/clients/`). Nothing here reads stdin or
//! a file: the shell hands over the bytes, capped.

use serde_json::{Map, Value};

use crate::model::InterruptReason;

/// No client sends a hook payload near this; anything larger is not one.
pub const HOOK_STDIN_CAP: usize = 1024 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Client {
    Claude,
    Codex,
    Gemini,
}

impl Client {
    pub const NAMES: [&'static str; 3] = ["claude", "codex", "gemini"];

    pub fn parse(raw: &str) -> Option<Client> {
        match raw {
            "claude" => Some(Client::Claude),
            "codex" => Some(Client::Codex),
            "gemini" => Some(Client::Gemini),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Client::Claude => "claude",
            Client::Codex => "codex",
            Client::Gemini => "gemini",
        }
    }
}

/// What a hook event asks of baton, whichever client sent it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// A session starts (`startup`, `resume`, `clear`, `compact`): hand it the packet.
    SessionStart { source: String },
    /// A prompt was submitted: a turn is open until its stop hook (Codex and Gemini have no
    /// failure hook, so a turn never closed is how a failed turn shows).
    TurnOpen,
    /// A turn ended normally: heartbeat what this session owns; never an interrupt.
    TurnEnd,
    /// An API error ended the turn (Claude Code's StopFailure), with the error it names and
    /// the message shown for it (which may say when a limit resets).
    Failure { error: String, message: String },
    /// The session ends; `terminal` is false for a reason that continues it (Claude Code's
    /// `resume`).
    SessionEnd { reason: String, terminal: bool },
    /// Before a compaction: a checkpoint. Gemini sends it before every model call.
    Checkpoint,
    /// An event baton has nothing to do for (tool calls, model calls).
    Ignored,
}

/// A parsed hook payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookEvent {
    pub client: Client,
    /// The client's own event name (`StopFailure`, `AfterAgent`).
    pub event: String,
    pub session_id: String,
    pub transcript_path: Option<String>,
    pub cwd: Option<String>,
    pub action: Action,
}

/// Why a payload was not understood; a hook reports it on one stderr line and exits 0.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookError {
    TooLarge(usize),
    NotJson(String),
    NotAnObject,
    Missing(&'static str),
    /// The payload's event is not the one the hook was installed for.
    WrongEvent {
        expected: String,
        found: String,
    },
    UnknownEvent(String),
}

impl std::fmt::Display for HookError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HookError::TooLarge(n) => write!(
                f,
                "the hook payload is {n} bytes, over the {HOOK_STDIN_CAP}-byte cap"
            ),
            HookError::NotJson(e) => write!(f, "the hook payload is not JSON: {e}"),
            HookError::NotAnObject => write!(f, "the hook payload is not a JSON object"),
            HookError::Missing(key) => {
                write!(f, "the hook payload has no `{key}` string")
            }
            HookError::WrongEvent { expected, found } => write!(
                f,
                "the hook was installed for {expected:?} but the payload is a {:?} event",
                crate::text::esc(found)
            ),
            HookError::UnknownEvent(name) => write!(
                f,
                "{:?} is not a hook event baton knows",
                crate::text::esc(name)
            ),
        }
    }
}

/// An event name as typed on a command line or sent by a client, compared without case or
/// punctuation: `stop-failure`, `stopfailure` and `StopFailure` are one event.
fn normalize(name: &str) -> String {
    name.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// Parses a payload for `client`, installed as the hook of `expected` (the event named on the
/// command line).
pub fn parse_payload(client: Client, expected: &str, bytes: &[u8]) -> Result<HookEvent, HookError> {
    if bytes.len() > HOOK_STDIN_CAP {
        return Err(HookError::TooLarge(bytes.len()));
    }
    let value: Value =
        serde_json::from_slice(bytes).map_err(|e| HookError::NotJson(e.to_string()))?;
    let Value::Object(map) = value else {
        return Err(HookError::NotAnObject);
    };
    let text = |key: &'static str| map.get(key).and_then(Value::as_str).map(str::to_string);
    let event = text("hook_event_name").ok_or(HookError::Missing("hook_event_name"))?;
    if normalize(&event) != normalize(expected) {
        return Err(HookError::WrongEvent {
            expected: expected.to_string(),
            found: event,
        });
    }
    let session_id = text("session_id")
        .filter(|s| !s.is_empty())
        .ok_or(HookError::Missing("session_id"))?;
    let action = action(client, &event, &map)?;
    Ok(HookEvent {
        client,
        event,
        session_id,
        transcript_path: text("transcript_path"),
        cwd: text("cwd"),
        action,
    })
}

fn action(client: Client, event: &str, map: &Map<String, Value>) -> Result<Action, HookError> {
    let field = |key: &str| {
        map.get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let action = match (client, event) {
        (_, "SessionStart") => Action::SessionStart {
            source: field("source"),
        },
        (Client::Claude | Client::Codex, "UserPromptSubmit") | (Client::Gemini, "BeforeAgent") => {
            Action::TurnOpen
        }
        (Client::Claude | Client::Codex, "Stop") | (Client::Gemini, "AfterAgent") => {
            Action::TurnEnd
        }
        (Client::Claude, "StopFailure") => Action::Failure {
            error: Some(field("error"))
                .filter(|e| !e.is_empty())
                .unwrap_or_else(|| "unknown".into()),
            message: field("last_assistant_message"),
        },
        (_, "SessionEnd") => {
            let reason = field("reason");
            // Claude Code ends a session with `resume` when it goes on in another process:
            // nothing stopped.
            let terminal = !(client == Client::Claude && reason == "resume");
            Action::SessionEnd { reason, terminal }
        }
        (Client::Claude | Client::Codex, "PreCompact") | (Client::Gemini, "PreCompress") => {
            Action::Checkpoint
        }
        (Client::Claude, "PreToolUse" | "PostToolUse" | "PostToolBatch" | "Notification")
        | (Client::Codex, "PreToolUse" | "PostToolUse" | "PostCompact")
        | (
            Client::Gemini,
            "BeforeModel"
            | "AfterModel"
            | "BeforeTool"
            | "AfterTool"
            | "BeforeToolSelection"
            | "Notification",
        ) => Action::Ignored,
        _ => return Err(HookError::UnknownEvent(event.to_string())),
    };
    Ok(action)
}

/// The per-turn hook refreshes the liveness of what a session owns at most once in this many
/// seconds. A write is live for 10 minutes (`STALE_AFTER`), so anything refreshed within the
/// window is never near stale, and a session's every turn costs one small read instead of a
/// rewrite and an fsync of each file it owns.
pub const HEARTBEAT_COALESCE_SECS: i64 = 60;

/// How much of a transcript's end is read for evidence of how its last turn ended.
pub const TRANSCRIPT_TAIL_BYTES: u64 = 64 * 1024;

/// What a session-start hook prints so that the client puts `context` in front of the model:
/// `hookSpecificOutput.additionalContext`, which Claude Code, Codex and Gemini CLI all read
/// (Gemini CLI injects only this JSON form; plain stdout is shown to the user, not the model).
pub fn session_start_output(context: &str) -> String {
    serde_json::json!({
        "hookSpecificOutput": {
            "hookEventName": "SessionStart",
            "additionalContext": context,
        }
    })
    .to_string()
}

/// An interrupt a hook records for what its session owns: the reason written to the state
/// (`rate_limit`, `session_expiry` or `unknown`, the values the loop-state files use) and the
/// evidence it rests on, for the journal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interrupt {
    pub reason: InterruptReason,
    pub evidence: String,
}

/// The interrupt an action calls for, from the evidence at hand: whether a turn was still open
/// (a prompt hook with no stop hook after it) and what the transcript's end says. `None` for
/// every action that records no interrupt.
///
/// - a failure hook (Claude Code's StopFailure) names its error: `rate_limit` is a rate limit,
///   any other error an unknown interrupt;
/// - a session that ends with a turn open lost that turn: a rate limit when the transcript
///   records one, else unknown (a crash: nothing says what happened);
/// - a session that ends between turns left its work unfinished: `session_expiry`;
/// - a session end that is not terminal (Claude Code's `resume`) changes nothing.
pub fn interrupt_for(
    action: &Action,
    turn_open: bool,
    transcript: TranscriptEnd,
) -> Option<Interrupt> {
    match action {
        Action::Failure { error, .. } if error == "rate_limit" => Some(Interrupt {
            reason: InterruptReason::RateLimit,
            evidence: "the client's failure hook named a rate limit".into(),
        }),
        Action::Failure { error, .. } => Some(Interrupt {
            reason: InterruptReason::Unknown,
            evidence: format!(
                "the client's failure hook named the error {:?}",
                crate::text::esc(error)
            ),
        }),
        Action::SessionEnd {
            terminal: true,
            reason,
        } => {
            let why = crate::text::esc(reason);
            Some(match (turn_open, transcript) {
                (true, TranscriptEnd::RateLimit) => Interrupt {
                    reason: InterruptReason::RateLimit,
                    evidence: format!(
                        "the session ended ({why}) in a turn that a rate limit (HTTP 429) ended, by the client's transcript or error report"
                    ),
                },
                (true, TranscriptEnd::Unknown) => Interrupt {
                    reason: InterruptReason::Unknown,
                    evidence: format!(
                        "the session ended ({why}) with a turn still open: the turn died and nothing says why"
                    ),
                },
                (false, _) => Interrupt {
                    reason: InterruptReason::SessionExpiry,
                    evidence: format!(
                        "the session ended ({why}) between turns with the work unfinished"
                    ),
                },
            })
        }
        _ => None,
    }
}

/// What a transcript's tail says about how its last turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TranscriptEnd {
    /// An API rate limit (HTTP 429) ended the last turn.
    RateLimit,
    /// Nothing in the tail says the turn failed.
    Unknown,
}

/// Reads the tail of a client's transcript (JSON Lines) for a rate limit that ended the last
/// turn. Claude Code writes an assistant line with `"isApiErrorMessage": true` and
/// `"error": "rate_limit"`; Codex ends the turn with a `task_complete` event whose
/// `error.codex_error_info.response_too_many_failed_attempts.http_status_code` is 429. Only the
/// last such record counts: a rate limit an earlier turn recovered from is not this one's end.
/// Gemini records nothing of a 429 in its transcript.
pub fn transcript_end(client: Client, tail: &str) -> TranscriptEnd {
    for line in tail.lines().rev() {
        let Ok(Value::Object(entry)) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        match client {
            Client::Claude => {
                if entry.get("type").and_then(Value::as_str) != Some("assistant") {
                    continue;
                }
                let api_error =
                    entry.get("isApiErrorMessage").and_then(Value::as_bool) == Some(true);
                return if api_error
                    && entry.get("error").and_then(Value::as_str) == Some("rate_limit")
                {
                    TranscriptEnd::RateLimit
                } else {
                    TranscriptEnd::Unknown
                };
            }
            Client::Codex => {
                let payload = entry.get("payload");
                if payload.and_then(|p| p.get("type")).and_then(Value::as_str)
                    != Some("task_complete")
                {
                    continue;
                }
                let status = payload
                    .and_then(|p| p.pointer("/error/codex_error_info/response_too_many_failed_attempts/http_status_code"))
                    .and_then(Value::as_u64);
                return if status == Some(429) {
                    TranscriptEnd::RateLimit
                } else {
                    TranscriptEnd::Unknown
                };
            }
            Client::Gemini => return TranscriptEnd::Unknown,
        }
    }
    TranscriptEnd::Unknown
}

/// Gemini CLI writes no 429 to its transcript and sends its hooks no sign of one; what it does
/// write is an error report, `gemini-client-error-*.json` in its temp directory, holding the
/// error and the request's context. A report is evidence of this project's rate limit when its
/// context names the project's root and its error is a quota error (`RetryableQuotaError` or
/// `TerminalQuotaError`, Gemini CLI's classes for HTTP 429, or the API's `Resource has been
/// exhausted`). The caller keeps only reports written while the turn was open.
pub fn gemini_error_report(report: &str, project_root: &str) -> TranscriptEnd {
    let Ok(Value::Object(map)) = serde_json::from_str::<Value>(report) else {
        return TranscriptEnd::Unknown;
    };
    let error = map.get("error").map(Value::to_string).unwrap_or_default();
    let quota = ["QuotaError", "Resource has been exhausted"]
        .iter()
        .any(|sign| error.contains(sign));
    // The root as it appears inside the JSON text of the context, followed by a separator, so
    // that `/p/project` does not match `/p/project-2`.
    let context = map.get("context").map(Value::to_string).unwrap_or_default();
    let root = serde_json::to_string(project_root).unwrap_or_default();
    let root = root.trim_matches('"').trim_end_matches('/');
    let names_root = !root.is_empty()
        && context.match_indices(root).any(|(i, _)| {
            matches!(
                context[i + root.len()..].chars().next(),
                None | Some('/' | '"' | '\\' | ' ' | ',' | ')' | ':' | '\'')
            )
        });
    if quota && names_root {
        TranscriptEnd::RateLimit
    } else {
        TranscriptEnd::Unknown
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(rel: &str) -> Vec<u8> {
        let path = format!(
            "{}/../../fixtures/clients/{rel}",
            env!("CARGO_MANIFEST_DIR")
        );
        std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    fn client_of(dir: &str) -> Client {
        match dir.split('-').next().unwrap() {
            "claude" => Client::Claude,
            "codex" => Client::Codex,
            "gemini" => Client::Gemini,
            other => panic!("no client {other}"),
        }
    }

    /// Every payload the real clients sent gives its documented action, parsed as the hook of
    /// the event the file is named after.
    #[test]
    fn every_captured_payload_gives_its_action() {
        let dir = format!("{}/../../fixtures/clients", env!("CARGO_MANIFEST_DIR"));
        let mut seen = 0;
        for client_dir in std::fs::read_dir(&dir).unwrap() {
            let client_dir = client_dir.unwrap();
            let name = client_dir.file_name().into_string().unwrap();
            if name == "transcripts" || !client_dir.path().is_dir() {
                continue;
            }
            let client = client_of(&name);
            for file in std::fs::read_dir(client_dir.path()).unwrap() {
                let file = file.unwrap().file_name().into_string().unwrap();
                let event = file.split('.').next().unwrap();
                let parsed = parse_payload(client, event, &fixture(&format!("{name}/{file}")))
                    .unwrap_or_else(|e| panic!("{name}/{file}: {e}"));
                let want = match (client, event) {
                    (_, "SessionStart") => "start",
                    (Client::Claude | Client::Codex, "UserPromptSubmit")
                    | (Client::Gemini, "BeforeAgent") => "open",
                    (Client::Claude | Client::Codex, "Stop") | (Client::Gemini, "AfterAgent") => {
                        "end"
                    }
                    (_, "StopFailure") => "failure",
                    (_, "SessionEnd") => "session-end",
                    (_, "PreCompact" | "PreCompress") => "checkpoint",
                    _ => "ignored",
                };
                let got = match &parsed.action {
                    Action::SessionStart { .. } => "start",
                    Action::TurnOpen => "open",
                    Action::TurnEnd => "end",
                    Action::Failure { .. } => "failure",
                    Action::SessionEnd { .. } => "session-end",
                    Action::Checkpoint => "checkpoint",
                    Action::Ignored => "ignored",
                };
                assert_eq!(got, want, "{name}/{file}");
                assert!(!parsed.session_id.is_empty(), "{name}/{file}");
                seen += 1;
            }
        }
        assert!(seen >= 50, "only {seen} payloads found in {dir}");
    }

    #[test]
    fn the_details_each_action_carries() {
        let p = |rel: &str, event: &str, client: Client| {
            parse_payload(client, event, &fixture(rel)).unwrap().action
        };
        assert_eq!(
            p(
                "claude-code-2.1.332/StopFailure.after-429.json",
                "stopfailure",
                Client::Claude
            ),
            Action::Failure {
                error: "rate_limit".into(),
                message: "API Error: Request rejected (429) · Number of request tokens has exceeded your per-minute rate limit".into(),
            }
        );
        assert_eq!(
            p(
                "codex-0.171.0/SessionStart.compact.json",
                "SessionStart",
                Client::Codex
            ),
            Action::SessionStart {
                source: "compact".into()
            }
        );
        assert_eq!(
            p(
                "gemini-0.61.0/SessionEnd.after-429.json",
                "session-end",
                Client::Gemini
            ),
            Action::SessionEnd {
                reason: "exit".into(),
                terminal: true
            }
        );
        // Claude Code's `resume` continues the session elsewhere: not terminal.
        let resumed = br#"{"session_id":"s","hook_event_name":"SessionEnd","reason":"resume"}"#;
        assert_eq!(
            parse_payload(Client::Claude, "SessionEnd", resumed)
                .unwrap()
                .action,
            Action::SessionEnd {
                reason: "resume".into(),
                terminal: false
            }
        );
    }

    #[test]
    fn bad_payloads_are_errors_never_panics() {
        let huge = vec![b' '; HOOK_STDIN_CAP + 1];
        let cases: Vec<(&[u8], &str)> = vec![
            (b"", "not JSON"),
            (b"{\"session_id\":", "not JSON"),
            (b"[1,2]", "not a JSON object"),
            (b"{\"session_id\":\"s\"}", "hook_event_name"),
            (b"{\"hook_event_name\":\"Stop\"}", "session_id"),
            (
                b"{\"hook_event_name\":\"Stop\",\"session_id\":\"\"}",
                "session_id",
            ),
            (
                b"{\"hook_event_name\":\"SessionEnd\",\"session_id\":\"s\"}",
                "installed for",
            ),
            (&huge, "cap"),
        ];
        for (bytes, says) in cases {
            let err = parse_payload(Client::Claude, "Stop", bytes).unwrap_err();
            assert!(err.to_string().contains(says), "{err} (wanted {says})");
        }
        let odd = br#"{"hook_event_name":"Teleport","session_id":"s"}"#;
        assert_eq!(
            parse_payload(Client::Codex, "teleport", odd).unwrap_err(),
            HookError::UnknownEvent("Teleport".into())
        );
        // A Gemini event name sent to the Claude adapter is not guessed at.
        let gemini = br#"{"hook_event_name":"AfterAgent","session_id":"s"}"#;
        assert!(parse_payload(Client::Claude, "AfterAgent", gemini).is_err());
    }

    #[test]
    fn a_rate_limit_is_read_from_the_transcripts_tail() {
        let claude = String::from_utf8(fixture(
            "transcripts/claude-code-2.1.332.rate-limit-line.json",
        ))
        .unwrap();
        assert_eq!(
            transcript_end(Client::Claude, &claude),
            TranscriptEnd::RateLimit
        );
        let codex =
            String::from_utf8(fixture("transcripts/codex-0.171.0.rate-limit-tail.jsonl")).unwrap();
        assert_eq!(
            transcript_end(Client::Codex, &codex),
            TranscriptEnd::RateLimit
        );
        // A later ordinary answer means the turn that hit the limit was not the last one.
        let recovered = format!(
            "{}\n{}\n",
            claude.trim_end(),
            r#"{"type":"assistant","message":{"content":[{"type":"text","text":"Done."}]}}"#
        );
        assert_eq!(
            transcript_end(Client::Claude, &recovered),
            TranscriptEnd::Unknown
        );
        let finished = format!(
            "{}\n{}\n",
            codex.trim_end(),
            r#"{"type":"event_msg","payload":{"type":"task_complete","error":null}}"#
        );
        assert_eq!(
            transcript_end(Client::Codex, &finished),
            TranscriptEnd::Unknown
        );
        // Gemini writes nothing of a 429; a torn line is skipped.
        assert_eq!(
            transcript_end(Client::Gemini, &claude),
            TranscriptEnd::Unknown
        );
        assert_eq!(
            transcript_end(Client::Claude, &format!("{claude}\n{{\"type\":\"assi")),
            TranscriptEnd::RateLimit
        );
    }

    #[test]
    fn the_interrupt_each_ending_calls_for() {
        use TranscriptEnd::{RateLimit, Unknown};
        let end = |terminal| Action::SessionEnd {
            reason: "other".into(),
            terminal,
        };
        let failure = |e: &str| Action::Failure {
            error: e.into(),
            message: String::new(),
        };
        let cases = [
            (failure("rate_limit"), false, Unknown, Some("rate_limit")),
            (failure("server_error"), true, Unknown, Some("unknown")),
            (end(true), true, RateLimit, Some("rate_limit")),
            (end(true), true, Unknown, Some("unknown")),
            (end(true), false, RateLimit, Some("session_expiry")),
            (end(true), false, Unknown, Some("session_expiry")),
            (end(false), true, RateLimit, None),
            (Action::TurnEnd, true, RateLimit, None),
            (Action::Checkpoint, true, RateLimit, None),
        ];
        for (action, open, transcript, want) in cases {
            let got = interrupt_for(&action, open, transcript).map(|i| i.reason.as_str());
            assert_eq!(got, want, "{action:?} open={open} {transcript:?}");
        }
    }

    #[test]
    fn the_session_start_output_carries_the_packet_as_additional_context() {
        let out: Value = serde_json::from_str(&session_start_output("line \"1\"\nline 2")).unwrap();
        assert_eq!(out["hookSpecificOutput"]["hookEventName"], "SessionStart");
        assert_eq!(
            out["hookSpecificOutput"]["additionalContext"],
            "line \"1\"\nline 2"
        );
    }

    #[test]
    fn a_gemini_error_report_is_evidence_only_for_its_own_project_and_a_quota_error() {
        let report = |message: &str, dir: &str| {
            serde_json::json!({
                "error": { "message": message, "stack": format!("{message}\n    at x") },
                "context": [{ "role": "user", "parts": [{ "text": format!("workspace: {dir}\nfile {dir}/GEMINI.md") }] }],
            })
            .to_string()
        };
        let quota = "RetryableQuotaError: Resource has been exhausted (e.g. check quota).";
        assert_eq!(
            gemini_error_report(&report(quota, "/tmp/x/project"), "/tmp/x/project"),
            TranscriptEnd::RateLimit
        );
        // Another project, a longer name sharing the prefix, another error, not JSON.
        for (text, root) in [
            (report(quota, "/tmp/x/other"), "/tmp/x/project"),
            (report(quota, "/tmp/x/project-2"), "/tmp/x/project"),
            (
                report("fetch failed: ECONNREFUSED", "/tmp/x/project"),
                "/tmp/x/project",
            ),
            ("not json".to_string(), "/tmp/x/project"),
        ] {
            assert_eq!(
                gemini_error_report(&text, root),
                TranscriptEnd::Unknown,
                "{text}"
            );
        }
    }
}
