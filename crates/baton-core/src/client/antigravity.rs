//! Antigravity CLI (`agy`, Gemini CLI's successor), built from its published hooks reference
//! (antigravity.google/docs/hooks as third parties restate it; fixtures in
//! `fixtures/clients/antigravity-reference/`), not from a captured run.
//!
//! Its hooks live in `<root>/.agents/hooks.json` or `~/.gemini/config/hooks.json`: strict JSON
//! whose top level is an object of named hooks, each an object of events (`PreInvocation`,
//! `PostInvocation` and `Stop` take a flat array of handlers, timeouts in whole seconds). One
//! parse error drops the whole file without a word, so `baton init` refuses a file it cannot
//! parse and parses back what it writes. The payloads are camelCase and name no event:
//! `conversationId`, `workspacePaths`, `transcriptPath`; `PreInvocation` adds `invocationNum`
//! (0 at the first invocation), `Stop` adds `terminationReason`, `fullyIdle` and, when an
//! error ended the invocation, `error`. It has no session-start, prompt or session-end event:
//! the first `PreInvocation` is the session start, a later one opens a turn, and `Stop` ends
//! it. Context goes in as `{"injectSteps": [{"ephemeralMessage": …}]}`, which the model sees
//! for that invocation only. No headless resume form is documented, so `baton supervise`
//! does not run it.

use serde_json::{Map, Value, json};

use super::definition::{
    Action, AgentCommandError, Definition, Files, SessionSource, SettingsShape, UserDir, field,
};

pub struct Antigravity;

impl Definition for Antigravity {
    fn name(&self) -> &'static str {
        "antigravity"
    }

    fn title(&self) -> &'static str {
        "Antigravity CLI"
    }

    fn programs(&self) -> &'static [&'static str] {
        &["agy"]
    }

    fn hook_events(&self) -> &'static [&'static str] {
        &["PreInvocation", "Stop", "PreToolUse"]
    }

    /// Whole seconds (a fraction would make Antigravity drop the whole file).
    fn hook_timeout(&self, _event: &str) -> u64 {
        10
    }

    fn settings_shape(&self) -> SettingsShape {
        SettingsShape::Named { name: "baton" }
    }

    fn session_id_fields(&self) -> &'static [&'static str] {
        &["conversationId"]
    }

    /// Its payloads carry no event name: the hook command's own counts.
    fn event_field(&self) -> Option<&'static str> {
        None
    }

    fn action(&self, event: &str, payload: &Map<String, Value>) -> Option<Action> {
        Some(match event {
            // Before each invocation; the first of the conversation starts the session. A
            // payload without the number is taken for a later one: never a second start.
            "PreInvocation" => match payload.get("invocationNum").and_then(Value::as_u64) {
                Some(0) => Action::SessionStart {
                    source: "startup".into(),
                },
                _ => Action::TurnOpen,
            },
            // The invocation stopped: with `error`, an error ended it; else the agent
            // finished, or the user cancelled it (no interrupt either way).
            "Stop" => {
                let message = field(payload, "error");
                if message.trim().is_empty() {
                    Action::TurnEnd
                } else {
                    Action::Failure {
                        error: failure_error(&message).into(),
                        message,
                    }
                }
            }
            // `run_command`, with its `CommandLine` and `Cwd`.
            "PreToolUse" => {
                let call = payload.get("toolCall");
                let arg = |k: &str| {
                    call.and_then(|c| c.get("args"))
                        .and_then(|a| a.get(k))
                        .and_then(Value::as_str)
                };
                match (
                    call.and_then(|c| c.get("name")).and_then(Value::as_str),
                    arg("CommandLine"),
                ) {
                    (Some("run_command"), Some(command)) => Action::ToolCall {
                        command: command.to_string(),
                        dir: arg("Cwd").map(str::to_string),
                    },
                    _ => Action::Ignored,
                }
            }
            "PostInvocation" | "PostToolUse" | "SessionStart" => Action::Ignored,
            _ => return None,
        })
    }

    fn session_start_output(&self, context: &str) -> String {
        inject(context)
    }

    /// `{"decision": "deny", "reason": …}`, as its reference gives the pre-tool hook's refusal.
    fn tool_refusal(&self, event: &str, reason: &str) -> Option<String> {
        (event == "PreToolUse").then(|| super::definition::deny_decision(reason))
    }

    fn turn_context(&self, _event: &str, context: &str) -> String {
        inject(context)
    }

    /// The reference names no variable in the agent's commands: a tool call passes
    /// `--session` (or `BATON_SESSION`).
    fn session_source(&self) -> SessionSource {
        SessionSource::Variables(&[])
    }

    fn resume_command(
        &self,
        _argv: &[String],
        _task: Option<&str>,
        _session: Option<&str>,
        _prompt: &str,
    ) -> Result<Vec<String>, AgentCommandError> {
        Err(no_supervise())
    }

    fn task_of(&self, _argv: &[String], _task: Option<&str>) -> Result<String, AgentCommandError> {
        Err(no_supervise())
    }

    fn files(&self, user: bool) -> Files {
        if user {
            Files {
                settings: ".gemini/config/hooks.json",
                instructions: ".gemini/GEMINI.md",
            }
        } else {
            Files {
                settings: ".agents/hooks.json",
                instructions: "AGENTS.md",
            }
        }
    }

    fn user_dir(&self) -> UserDir {
        UserDir::Home
    }
}

/// `{"injectSteps": [{"ephemeralMessage": …}]}`: a message for the model, not the user's.
fn inject(context: &str) -> String {
    json!({ "injectSteps": [{ "ephemeralMessage": context }] }).to_string()
}

/// The class of the error a `Stop` names: `rate_limit` for HTTP 429 or an exhausted quota
/// (the API's `RESOURCE_EXHAUSTED`, `Resource has been exhausted`, a rate or quota limit),
/// else `unknown`.
pub fn failure_error(message: &str) -> &'static str {
    let lower = message.to_ascii_lowercase();
    let signs = [
        "resource_exhausted",
        "resource has been exhausted",
        "rate limit",
        "rate-limit",
        "ratelimit",
        "quota",
        "too many requests",
    ];
    // `429` as a number of its own, not inside a longer one.
    let code = lower.match_indices("429").any(|(i, _)| {
        let before = lower[..i].chars().next_back();
        let after = lower[i + 3..].chars().next();
        !before.is_some_and(|c| c.is_ascii_digit()) && !after.is_some_and(|c| c.is_ascii_digit())
    });
    if code || signs.iter().any(|s| lower.contains(s)) {
        "rate_limit"
    } else {
        "unknown"
    }
}

fn no_supervise() -> AgentCommandError {
    AgentCommandError(
        "supervise does not run Antigravity CLI: the hooks reference baton is built from gives no headless command that resumes a conversation; run the agent yourself and let its hooks keep baton's state"
            .into(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stop_error_is_a_rate_limit_only_when_it_says_so() {
        for (message, want) in [
            ("429 Too Many Requests", "rate_limit"),
            ("got status 429 from the API", "rate_limit"),
            (
                "RESOURCE_EXHAUSTED: Quota exceeded for quota metric",
                "rate_limit",
            ),
            (
                "Resource has been exhausted (e.g. check quota).",
                "rate_limit",
            ),
            ("You have hit a rate limit", "rate_limit"),
            ("connection reset by peer", "unknown"),
            ("request 14290 failed", "unknown"),
            ("500 Internal Server Error", "unknown"),
        ] {
            assert_eq!(failure_error(message), want, "{message}");
        }
    }

    #[test]
    fn the_first_invocation_starts_the_session_and_a_later_one_opens_a_turn() {
        let payload = |v: Value| v.as_object().unwrap().clone();
        let a = Antigravity;
        assert_eq!(
            a.action("PreInvocation", &payload(json!({"invocationNum": 0}))),
            Some(Action::SessionStart {
                source: "startup".into()
            })
        );
        assert_eq!(
            a.action("PreInvocation", &payload(json!({"invocationNum": 3}))),
            Some(Action::TurnOpen)
        );
        assert_eq!(
            a.action("PreInvocation", &payload(json!({}))),
            Some(Action::TurnOpen)
        );
        assert_eq!(
            a.action(
                "Stop",
                &payload(json!({"terminationReason": "NO_TOOL_CALL"}))
            ),
            Some(Action::TurnEnd)
        );
        assert_eq!(a.action("SessionEnd", &payload(json!({}))), None);
        let out: Value = serde_json::from_str(&a.session_start_output("the packet")).unwrap();
        assert_eq!(out["injectSteps"][0]["ephemeralMessage"], "the packet");
    }
}
