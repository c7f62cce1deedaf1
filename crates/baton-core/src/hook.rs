//! What an agent client's hook payload means to baton: the payload's envelope, read the same
//! for every client, its event mapped to one set of actions by the client's definition
//! (`crate::client`), and the interrupt the evidence calls for.
//!
//! The payload shapes are those the clients send on stdin (samples in `fixtures/clients/`).
//! Nothing here reads stdin or a file: the shell hands over the bytes, capped.

use serde_json::Value;

use crate::client::{Action, Client, TranscriptEnd};
use crate::model::InterruptReason;

/// No client sends a hook payload near this; anything larger is not one.
pub const HOOK_STDIN_CAP: usize = 1024 * 1024;

/// A parsed hook payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookEvent {
    pub client: Client,
    /// The client's own event name (`StopFailure`, `AfterAgent`).
    pub event: String,
    pub session_id: String,
    pub transcript_path: Option<String>,
    pub cwd: Option<String>,
    /// A prompt hook's prompt, when the payload carries one.
    pub prompt: Option<String>,
    pub action: Action,
    /// The client's process serves many sessions (`Definition::process_shared`).
    pub process_shared: bool,
    /// What a stop hook's payload says about the stop, for the judge of "done".
    pub stop: StopSignals,
}

/// What a client says about a stop: that it follows a refused one (`stop_hook_active`), that
/// the session plans rather than works (`permission_mode: "plan"`), that background tasks still
/// run (Claude Code's `background_tasks`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StopSignals {
    pub again: bool,
    pub plan_mode: bool,
    pub background: bool,
    /// The turn did not end on its own (Cursor's `status: aborted`, the user's stop, or
    /// `error`).
    pub interrupted: bool,
}

impl StopSignals {
    fn of(map: &serde_json::Map<String, Value>) -> StopSignals {
        StopSignals {
            // Claude Code, Codex and Gemini CLI say `stop_hook_active`; Cursor counts the
            // follow-ups its stop hook asked for in `loop_count`.
            again: map.get("stop_hook_active").and_then(Value::as_bool) == Some(true)
                || map
                    .get("loop_count")
                    .and_then(Value::as_u64)
                    .is_some_and(|n| n > 0),
            interrupted: matches!(
                map.get("status").and_then(Value::as_str),
                Some("aborted" | "error")
            ),
            plan_mode: map.get("permission_mode").and_then(Value::as_str) == Some("plan"),
            background: map
                .get("background_tasks")
                .and_then(Value::as_array)
                .is_some_and(|tasks| !tasks.is_empty()),
        }
    }
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
    let event = match client.def().event_field() {
        Some(key) => {
            let event = text(key).ok_or(HookError::Missing(key))?;
            if normalize(&event) != normalize(expected) {
                return Err(HookError::WrongEvent {
                    expected: expected.to_string(),
                    found: event,
                });
            }
            event
        }
        // The payload names no event: the hook's own, by the client's spelling when baton
        // installs it.
        None => client
            .def()
            .hook_events()
            .iter()
            .find(|e| normalize(e) == normalize(expected))
            .map_or_else(|| expected.to_string(), |e| e.to_string()),
    };
    let fields = client.def().session_id_fields();
    let session_id = fields
        .iter()
        .find_map(|key| text(key).filter(|s| !s.is_empty()))
        .ok_or(HookError::Missing(fields[0]))?;
    let keys = client.def().payload_keys();
    let action = client
        .def()
        .action(&event, &map)
        .ok_or_else(|| HookError::UnknownEvent(event.clone()))?;
    Ok(HookEvent {
        client,
        event,
        session_id,
        transcript_path: text(keys.transcript_path),
        // Cursor and Antigravity name no `cwd`, only the workspace's roots: the first is the
        // project.
        cwd: text(keys.cwd).or_else(|| {
            ["workspace_roots", "workspacePaths"]
                .iter()
                .find_map(|key| {
                    map.get(*key)
                        .and_then(|roots| roots.get(0))
                        .and_then(Value::as_str)
                        .map(str::to_string)
                })
        }),
        prompt: text(keys.prompt),
        action,
        process_shared: client.def().process_shared(&map),
        stop: StopSignals::of(&map),
    })
}

/// The prompts with which Claude Code continues a session by itself once a claude.ai usage
/// limit has reset (`autoContinueAtUsageLimit`, on by default since 2.1.234), as its bundle
/// (2.1.332) writes them. The server may serve another text; the turn is then still this
/// session's, only recorded as an ordinary prompt.
pub const AUTO_CONTINUE_PROMPTS: [&str; 2] = [
    "Your claude.ai usage limit has reset. Continue the task you were working on",
    "Your claude.ai usage is available again before the usage-limit reset. Continue the task",
];

/// How a session went on after a failure, for the journal: `auto-continue` when the prompt is
/// the client's own continuation, `auto-continue-early` when it says the usage came back before
/// the limit's reset, else `prompt` (a person typed again in the same session).
pub fn how_continued(prompt: Option<&str>) -> &'static str {
    match prompt {
        Some(p) if p.starts_with(AUTO_CONTINUE_PROMPTS[1]) => "auto-continue-early",
        Some(p) if AUTO_CONTINUE_PROMPTS.iter().any(|a| p.starts_with(a)) => "auto-continue",
        _ => "prompt",
    }
}

/// Whether the client itself says, by its continuation prompt, that the usage is back before the
/// limit's recorded reset: the reset no longer holds the session's own work.
pub fn usage_back_early(how: &str) -> bool {
    how == "auto-continue-early"
}

/// The per-turn hook refreshes the liveness of what a session owns at most once in this many
/// seconds. A write is live for 10 minutes (`STALE_AFTER`), so anything refreshed within the
/// window is never near stale, and a session's every turn costs one small read instead of a
/// rewrite and an fsync of each file it owns.
pub const HEARTBEAT_COALESCE_SECS: i64 = 60;

/// How much of a transcript's end is read for evidence of how its last turn ended.
pub const TRANSCRIPT_TAIL_BYTES: u64 = 64 * 1024;

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
        // Not a limit of the account: a transient failure of the API, worth a retry, but
        // nothing says when it passes.
        Action::Failure { error, .. } if error == "overloaded" => Some(Interrupt {
            reason: InterruptReason::Unknown,
            evidence: "the client's failure hook said the API was overloaded (HTTP 529)".into(),
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
                (true, TranscriptEnd::RateLimit { .. }) => Interrupt {
                    reason: InterruptReason::RateLimit,
                    evidence: format!(
                        "the session ended ({why}) in a turn that a rate limit (HTTP 429) ended, by the client's transcript or error report"
                    ),
                },
                // A person stopped the turn and then ended the session: work left on purpose,
                // to recontextualize, never a crash.
                (true, TranscriptEnd::PersonStopped) => Interrupt {
                    reason: InterruptReason::SessionExpiry,
                    evidence: format!(
                        "the session ended ({why}) after a person stopped its turn, by the client's transcript"
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

#[cfg(test)]
mod tests {
    use super::*;
    use jiff::Timestamp;
    use jiff::tz::TimeZone;

    /// The clock of the transcript tests: before any reset the fixtures name.
    fn now() -> Timestamp {
        "2026-12-02T05:06:00Z".parse().unwrap()
    }

    fn fixture(rel: &str) -> Vec<u8> {
        let path = format!(
            "{}/../../fixtures/clients/{rel}",
            env!("CARGO_MANIFEST_DIR")
        );
        std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    /// The client a fixture folder is named after; `None` for a client whose payloads are kept
    /// but that baton does not parse yet.
    fn client_of(dir: &str) -> Option<Client> {
        Client::parse(dir.split('-').next().unwrap())
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
            let Some(client) = client_of(&name) else {
                continue;
            };
            for file in std::fs::read_dir(client_dir.path()).unwrap() {
                let file = file.unwrap().file_name().into_string().unwrap();
                let bytes = fixture(&format!("{name}/{file}"));
                // OpenCode's files are the bus events its plugins receive (the hook inputs
                // beside them are the plugin's own business): baton's plugin passes each
                // event's `properties` (2.x: `data`) as the payload of the hook named by its
                // `type`. A 2.x event the plugin passes on as 1.18's (a retry, an execution's
                // success) is read as that one (the end-to-end test with the real 2.0.15).
                let (event, bytes) = if client == Client::OpenCode {
                    let event: Value = serde_json::from_slice(&bytes).unwrap();
                    let Some(kind) = event["type"].as_str() else {
                        continue;
                    };
                    if client.def().action(kind, &serde_json::Map::new()).is_none() {
                        continue;
                    }
                    let payload = event.get("properties").or_else(|| event.get("data"));
                    (kind.to_string(), payload.unwrap().to_string().into_bytes())
                } else {
                    (file.split('.').next().unwrap().to_string(), bytes)
                };
                let event = event.as_str();
                let parsed = parse_payload(client, event, &bytes)
                    .unwrap_or_else(|e| panic!("{name}/{file}: {e}"));
                let want = match (client, event) {
                    (_, "SessionStart" | "sessionStart") => "start",
                    (Client::Cursor, "beforeSubmitPrompt") => "open",
                    (Client::Cursor, "stop") if file.contains("error") => "failure",
                    (Client::Cursor, "stop") => "end",
                    (Client::Cursor, "sessionEnd") => "session-end",
                    (Client::Antigravity, "PreInvocation") if file.contains("first") => "start",
                    (Client::Antigravity, "PreInvocation") => "open",
                    (Client::Antigravity, "Stop") if file.contains("error") => "failure",
                    (Client::Antigravity, "Stop") => "end",
                    (Client::Claude | Client::Codex, "UserPromptSubmit")
                    | (Client::Gemini, "BeforeAgent")
                    | (Client::Copilot, "userPromptSubmitted") => "open",
                    (Client::Claude | Client::Codex, "Stop")
                    | (Client::Gemini, "AfterAgent")
                    | (Client::Copilot, "agentStop") => "end",
                    (_, "StopFailure") => "failure",
                    (_, "SessionEnd" | "sessionEnd") => "session-end",
                    (_, "PreCompact" | "PreCompress") => "checkpoint",
                    (Client::Claude | Client::Codex | Client::Antigravity, "PreToolUse")
                    | (Client::Gemini, "BeforeTool")
                    | (Client::Copilot, "preToolUse")
                    | (Client::Cursor, "beforeShellExecution") => "tool",
                    (Client::OpenCode, "session.status") if file.contains("busy") => "open",
                    (Client::OpenCode, "session.error" | "session.execution.failed") => "failure",
                    (Client::OpenCode, "session.idle") => "end",
                    _ => "ignored",
                };
                let got = match &parsed.action {
                    Action::SessionStart { .. } => "start",
                    Action::TurnOpen => "open",
                    Action::TurnEnd => "end",
                    Action::Failure { .. } => "failure",
                    Action::SessionEnd { .. } => "session-end",
                    Action::Checkpoint => "checkpoint",
                    Action::ToolCall { .. } => "tool",
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

    /// Claude Code's goal lines as 2.1.332 writes them: set, checked not met, met, cleared and
    /// given up; Codex's goal rows by status.
    #[test]
    fn the_clients_goals_are_read_as_they_record_them() {
        use crate::client::ClientGoal;
        let claude = Client::Claude.def();
        let line = |attachment: &str| {
            format!(
                r#"{{"parentUuid":"p","isSidechain":false,"type":"attachment","uuid":"u1","timestamp":"2026-12-05T10:00:00.000Z","attachment":{attachment},"sessionId":"s"}}"#
            )
        };
        let goal = |c: &str| {
            Some(Some(ClientGoal {
                condition: c.into(),
                mark: c.into(),
            }))
        };
        for (attachment, read) in [
            (
                r#"{"type":"goal_status","met":false,"sentinel":true,"condition":"C"}"#,
                goal("C"),
            ),
            (
                r#"{"type":"goal_status","met":false,"condition":"C","reason":"not yet"}"#,
                goal("C"),
            ),
            (
                r#"{"type":"goal_status","met":true,"condition":"C","reason":"done","iterations":2}"#,
                Some(None),
            ),
            (
                r#"{"type":"goal_status","met":true,"sentinel":true,"condition":"C"}"#,
                Some(None),
            ),
            (
                r#"{"type":"goal_status","met":false,"failed":true,"condition":"C"}"#,
                Some(None),
            ),
            (r#"{"type":"hook_success","content":""goal_status""}"#, None),
        ] {
            assert_eq!(claude.goal(&line(attachment)), read, "{attachment}");
        }
        assert_eq!(claude.goal("not json \"goal_status\""), None);
        let codex = Client::Codex.def();
        for (status, pursued) in [
            ("active", true),
            ("complete", true),
            ("paused", false),
            ("blocked", false),
            ("usage_limited", false),
            ("budget_limited", false),
        ] {
            assert_eq!(
                codex.goal_row("g1", "O", status),
                pursued.then(|| ClientGoal {
                    condition: "O".into(),
                    mark: format!("g1 {status}"),
                }),
                "{status}"
            );
        }
    }

    #[test]
    fn a_rate_limit_is_read_from_the_transcripts_tail() {
        let claude = String::from_utf8(fixture(
            "transcripts/claude-code-2.1.332.rate-limit-line.json",
        ))
        .unwrap();
        assert_eq!(
            Client::Claude
                .def()
                .transcript_end(&claude, now(), &TimeZone::UTC),
            TranscriptEnd::RateLimit { resets: None }
        );
        let codex =
            String::from_utf8(fixture("transcripts/codex-0.171.0.rate-limit-tail.jsonl")).unwrap();
        assert_eq!(
            Client::Codex
                .def()
                .transcript_end(&codex, now(), &TimeZone::UTC),
            TranscriptEnd::RateLimit { resets: None }
        );
        // A later ordinary answer means the turn that hit the limit was not the last one.
        let recovered = format!(
            "{}\n{}\n",
            claude.trim_end(),
            r#"{"type":"assistant","message":{"content":[{"type":"text","text":"Done."}]}}"#
        );
        assert_eq!(
            Client::Claude
                .def()
                .transcript_end(&recovered, now(), &TimeZone::UTC),
            TranscriptEnd::Unknown
        );
        let finished = format!(
            "{}\n{}\n",
            codex.trim_end(),
            r#"{"type":"event_msg","payload":{"type":"task_complete","error":null}}"#
        );
        assert_eq!(
            Client::Codex
                .def()
                .transcript_end(&finished, now(), &TimeZone::UTC),
            TranscriptEnd::Unknown
        );
        // Gemini writes nothing of a 429; a torn line is skipped.
        assert_eq!(
            Client::Gemini
                .def()
                .transcript_end(&claude, now(), &TimeZone::UTC),
            TranscriptEnd::Unknown
        );
        assert_eq!(
            Client::Claude.def().transcript_end(
                &format!("{claude}\n{{\"type\":\"assi"),
                now(),
                &TimeZone::UTC
            ),
            TranscriptEnd::RateLimit { resets: None }
        );
    }

    #[test]
    fn the_interrupt_each_ending_calls_for() {
        use TranscriptEnd::Unknown;
        const RATE_LIMIT: TranscriptEnd = TranscriptEnd::RateLimit { resets: None };
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
            (failure("overloaded"), true, Unknown, Some("unknown")),
            (end(true), true, RATE_LIMIT, Some("rate_limit")),
            (end(true), true, Unknown, Some("unknown")),
            (end(true), false, RATE_LIMIT, Some("session_expiry")),
            (end(true), false, Unknown, Some("session_expiry")),
            (end(false), true, RATE_LIMIT, None),
            (Action::TurnEnd, true, RATE_LIMIT, None),
            (Action::Checkpoint, true, RATE_LIMIT, None),
        ];
        for (action, open, transcript, want) in cases {
            let got = interrupt_for(&action, open, transcript).map(|i| i.reason.as_str());
            assert_eq!(got, want, "{action:?} open={open} {transcript:?}");
        }
    }

    #[test]
    fn the_session_start_output_carries_the_packet_as_additional_context() {
        for client in Client::ALL {
            let text = client.def().session_start_output("line \"1\"\nline 2");
            let out: Value = serde_json::from_str(&text).unwrap_or_default();
            if client == Client::Copilot {
                assert_eq!(out["additionalContext"], "line \"1\"\nline 2");
                continue;
            }
            if client == Client::Antigravity {
                // Antigravity's: a step injected before the invocation.
                assert_eq!(
                    out["injectSteps"][0]["ephemeralMessage"],
                    "line \"1\"\nline 2"
                );
                continue;
            }
            if client == Client::OpenCode {
                // Plain text: baton's plugin adds it to the request's system messages.
                assert_eq!(
                    client.def().session_start_output("line \"1\"\nline 2"),
                    "line \"1\"\nline 2"
                );
                continue;
            }
            if client == Client::Cursor {
                // Cursor's own shape: `continue` and `additional_context`.
                assert_eq!(out["continue"], true);
                assert_eq!(out["additional_context"], "line \"1\"\nline 2");
                continue;
            }
            assert_eq!(out["hookSpecificOutput"]["hookEventName"], "SessionStart");
            assert_eq!(
                out["hookSpecificOutput"]["additionalContext"],
                "line \"1\"\nline 2"
            );
        }
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
            Client::Gemini.def().error_report(
                &report(quota, "/tmp/x/project"),
                "/tmp/x/project",
                now(),
                &TimeZone::UTC
            ),
            TranscriptEnd::RateLimit { resets: None }
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
                Client::Gemini
                    .def()
                    .error_report(&text, root, now(), &TimeZone::UTC),
                TranscriptEnd::Unknown,
                "{text}"
            );
        }
    }

    // The rows of docs/hooks.md's table of limit signals: each fixture read, its class and its
    // exact reset.

    fn text_fixture(rel: &str) -> String {
        String::from_utf8(fixture(rel)).unwrap()
    }

    fn at(t: &str) -> Option<Timestamp> {
        Some(t.parse().unwrap())
    }

    /// A StopFailure fixture: the class its error gets and the reset its message names.
    fn failure_of(rel: &str, zone: &TimeZone) -> (String, Option<Timestamp>) {
        let event = parse_payload(Client::Claude, "StopFailure", &fixture(rel)).unwrap();
        let Action::Failure { error, message } = event.action else {
            panic!("{rel}: not a failure");
        };
        let reset = crate::reset::reset_time(&message, now(), zone);
        (error, reset)
    }

    #[test]
    fn signal_claude_subscription_limit_in_stop_failure() {
        // Captured at 05:06Z from `You've hit your 5-hour limit · resets 8:05am
        // (Europe/Lisbon)`: Lisbon is on UTC in December. The machine's zone plays no part.
        let tokyo = crate::reset::named_zone("Asia/Tokyo").unwrap();
        let (error, reset) = failure_of(
            "claude-code-2.1.332/StopFailure.subscription-limit.json",
            &tokyo,
        );
        assert_eq!(error, "rate_limit");
        assert_eq!(reset, at("2026-12-02T08:05:00Z"));
        let interrupt = interrupt_for(
            &parse_payload(
                Client::Claude,
                "StopFailure",
                &fixture("claude-code-2.1.332/StopFailure.subscription-limit.json"),
            )
            .unwrap()
            .action,
            true,
            TranscriptEnd::Unknown,
        )
        .unwrap();
        assert_eq!(interrupt.reason, InterruptReason::RateLimit);
    }

    #[test]
    fn signal_claude_weekly_limit_in_stop_failure() {
        // `resets Dec 5, 1:36pm (Asia/Kolkata)`, three days after the capture.
        let (error, reset) = failure_of(
            "claude-code-2.1.332/StopFailure.weekly-limit.json",
            &TimeZone::UTC,
        );
        assert_eq!(error, "rate_limit");
        assert_eq!(reset, at("2026-12-05T08:06:00Z"));
    }

    #[test]
    fn signal_claude_subscription_limit_in_the_transcript() {
        // The line's `apiErrorParams.rate_limit_info.resetsAt`, to the second: the API's
        // `anthropic-ratelimit-unified-reset` header.
        let line = text_fixture("transcripts/claude-code-2.1.332.subscription-limit-line.json");
        assert_eq!(
            Client::Claude
                .def()
                .transcript_end(&line, now(), &TimeZone::UTC),
            TranscriptEnd::RateLimit {
                resets: at("2026-12-02T08:05:47Z")
            }
        );
        let weekly = text_fixture("transcripts/claude-code-2.1.332.weekly-limit-line.json");
        assert_eq!(
            Client::Claude
                .def()
                .transcript_end(&weekly, now(), &TimeZone::UTC),
            TranscriptEnd::RateLimit {
                resets: at("2026-12-05T08:06:01Z")
            }
        );
        // Without the structured fields, the text's own time.
        let bare = line
            .replace("\"apiErrorParams\"", "\"x1\"")
            .replace("\"quotaLimits\"", "\"x2\"");
        assert_eq!(
            Client::Claude
                .def()
                .transcript_end(&bare, now(), &TimeZone::UTC),
            TranscriptEnd::RateLimit {
                resets: at("2026-12-02T08:05:00Z")
            }
        );
    }

    #[test]
    fn signal_claude_stream_json_rate_limit_event() {
        let stdout = text_fixture("transcripts/claude-code-2.1.332.stream-json-rate-limit.jsonl");
        let resets: Vec<Timestamp> = stdout
            .lines()
            .filter_map(|l| crate::reset::stdout_signal(l, now(), &TimeZone::UTC))
            .collect();
        // The `rate_limit_event`'s `resetsAt`, then the `result` line's text (to the minute).
        assert_eq!(
            resets,
            vec![
                "2026-12-02T08:05:47Z".parse().unwrap(),
                "2026-12-02T08:05:00Z".parse().unwrap()
            ]
        );
    }

    #[test]
    fn signal_claude_subscription_limit_on_stdout() {
        let stdout = text_fixture("transcripts/claude-code-2.1.332.subscription-limit-stdout.txt");
        let resets: Vec<Timestamp> = stdout
            .lines()
            .filter_map(|l| crate::reset::stdout_signal(l, now(), &TimeZone::UTC))
            .collect();
        assert_eq!(resets, vec!["2026-12-02T08:05:00Z".parse().unwrap()]);
    }

    #[test]
    fn signal_claude_overloaded_529_is_not_a_rate_limit() {
        // Claude Code 2.1.332 sends a 529 as `server_error` with `529 Overloaded` in the text.
        let rel = "claude-code-2.1.332/StopFailure.overloaded-529.json";
        let (error, _) = failure_of(rel, &TimeZone::UTC);
        assert_eq!(error, "overloaded");
        let action = parse_payload(Client::Claude, "StopFailure", &fixture(rel))
            .unwrap()
            .action;
        let interrupt = interrupt_for(&action, true, TranscriptEnd::Unknown).unwrap();
        assert_eq!(interrupt.reason, InterruptReason::Unknown);
        assert!(interrupt.evidence.contains("overloaded (HTTP 529)"));
        let line = text_fixture("transcripts/claude-code-2.1.332.overloaded-line.json");
        assert_eq!(
            Client::Claude
                .def()
                .transcript_end(&line, now(), &TimeZone::UTC),
            TranscriptEnd::Unknown
        );
    }

    /// A person's Ctrl-C during a tool call, then the session's end: the transcript says a
    /// person stopped the turn, and the work is left (`session_expiry`), never a crash.
    #[test]
    fn a_turn_a_person_stopped_is_the_persons_stop_not_a_crash() {
        let tail = text_fixture("transcripts/claude-code-2.1.332.user-interrupt-tail.jsonl");
        let end = Client::Claude
            .def()
            .transcript_end(&tail, now(), &TimeZone::UTC);
        assert_eq!(end, TranscriptEnd::PersonStopped);
        let action = Action::SessionEnd {
            terminal: true,
            reason: "prompt_input_exit".into(),
        };
        let interrupt = interrupt_for(&action, true, end).unwrap();
        assert_eq!(interrupt.reason, InterruptReason::SessionExpiry);
        assert!(interrupt.evidence.contains("a person stopped its turn"));
        // An answer after the stop is a turn that went on: nothing says how the last one ended.
        let went_on = format!(
            "{}\n{}\n",
            tail.trim_end(),
            r#"{"type":"assistant","message":{"content":[{"type":"text","text":"Stopped."}]}}"#
        );
        assert_eq!(
            Client::Claude
                .def()
                .transcript_end(&went_on, now(), &TimeZone::UTC),
            TranscriptEnd::Unknown
        );
        // A crash stays a crash.
        assert_eq!(
            interrupt_for(&action, true, TranscriptEnd::Unknown)
                .unwrap()
                .reason,
            InterruptReason::Unknown
        );
    }

    #[test]
    fn signal_claude_limit_texts_users_report_are_rate_limits_whatever_the_error() {
        // slopus/happy #465, terryso/claude-auto-resume #26, anthropics/claude-code #93340,
        // #81647, #80903, #92834, #52334, #56219, #15064.
        for text in [
            "You've hit your limit · resets 1pm (Europe/Lisbon)",
            "You've hit your session limit · resets 4:20am (Europe/Warsaw)",
            "You've hit your weekly limit · resets 4am (Europe/Madrid)",
            "You've hit your weekly limit · resets Jul 31, 2am (UTC)",
            "You've hit your weekly limit · resets Jul 27 at 4:30am (Asia/Calcutta)",
            "You've hit your weekly limit · resets Sep 15 at 7pm",
            "You've hit your limit · resets 10pm",
            "You're out of extra usage · resets 7pm (Asia/Seoul)",
            "Claude usage limit reached. Your limit will reset at 9am (America/Chicago).",
            "Claude AI usage limit reached|1766502000",
        ] {
            for error in ["rate_limit", "unknown", "billing_error", ""] {
                let payload = serde_json::json!({
                    "session_id": "s", "hook_event_name": "StopFailure",
                    "error": error, "last_assistant_message": text,
                });
                let action = parse_payload(
                    Client::Claude,
                    "StopFailure",
                    payload.to_string().as_bytes(),
                )
                .unwrap()
                .action;
                assert!(
                    matches!(&action, Action::Failure { error, .. } if error == "rate_limit"),
                    "{text:?} with {error:?}: {action:?}"
                );
            }
        }
    }

    #[test]
    fn signal_codex_usage_limit_in_the_rollout() {
        // `codex_error_info: "usage_limit_exceeded"`; the reset is the exhausted window's
        // `resets_at` (the primary, at 100%), not the weekly one at 40%.
        let tail = text_fixture("transcripts/codex-0.171.0.usage-limit-tail.jsonl");
        assert_eq!(
            Client::Codex
                .def()
                .transcript_end(&tail, now(), &TimeZone::UTC),
            TranscriptEnd::RateLimit {
                resets: at("2026-12-02T08:06:23Z")
            }
        );
        // Without the snapshot, the message's `try again at 8:06 AM`, in the local zone.
        let end = tail.lines().last().unwrap();
        assert_eq!(
            Client::Codex
                .def()
                .transcript_end(end, now(), &TimeZone::UTC),
            TranscriptEnd::RateLimit {
                resets: at("2026-12-02T08:06:00Z")
            }
        );
    }

    #[test]
    fn signal_gemini_quota_retry_delay_in_the_error_report() {
        // `Suggested retry after 31s.`: Gemini CLI's wording of the API's RetryInfo.
        let report = text_fixture("transcripts/gemini-0.61.0.quota-retry-report.json");
        assert_eq!(
            Client::Gemini
                .def()
                .error_report(&report, "/home/dev/project", now(), &TimeZone::UTC),
            TranscriptEnd::RateLimit {
                resets: at("2026-12-02T05:06:31Z")
            }
        );
        // A delay in the conversation is not the error's.
        let mut value: Value = serde_json::from_str(&report).unwrap();
        value["error"]["message"] = "RetryableQuotaError: Resource has been exhausted".into();
        value["context"][0]["parts"][0]["text"] =
            "Please retry in 2 hours; workspace /home/dev/project".into();
        assert_eq!(
            Client::Gemini.def().error_report(
                &value.to_string(),
                "/home/dev/project",
                now(),
                &TimeZone::UTC
            ),
            TranscriptEnd::RateLimit { resets: None }
        );
    }
}
