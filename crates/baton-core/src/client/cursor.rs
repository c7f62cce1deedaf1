//! Cursor's agent (the editor's agent and the `cursor-agent` CLI), built from the published
//! hooks reference (fixtures in `fixtures/clients/cursor-reference/`), not from a captured run.
//!
//! Its hooks live in `.cursor/hooks.json` or `~/.cursor/hooks.json` (strict JSON,
//! `{"version": 1, "hooks": {"<event>": [{"command": …}]}}`: each entry of an event is one
//! command, with no group around it); every payload carries the chat's `conversation_id`
//! (`sessionStart` and `sessionEnd` a `session_id` besides); a session start answers
//! `{"continue": true, "additional_context": …}`; the turn's `stop` says how the agent loop
//! ended (`status`: `completed`, `aborted` or `error`) and names no error, so a failed turn is
//! a failure of unknown class. A prompt hook cannot add context for the model: its note after
//! a failure goes to the user as `user_message`. baton answers `stop` with a `followup_message`
//! (a prompt of baton's) only to refuse a stop on claimed work that is not verified
//! (`baton_ops::judge`), never after the user stopped the turn. Nothing in the reference gives a
//! headless resume form, so `baton supervise` does not run Cursor.

use serde_json::{Map, Value, json};

use super::definition::{
    Action, AgentCommandError, Definition, Files, SessionSource, SettingsShape, field,
};

pub struct Cursor;

impl Definition for Cursor {
    /// A `followup_message` from `stop` is sent as the next user message; its `loop_count` says
    /// how many such follow-ups came before (`StopSignals::again`).
    fn stop_refusal(&self, event: &str, reason: &str) -> Option<String> {
        (event == "stop").then(|| serde_json::json!({ "followup_message": reason }).to_string())
    }

    /// `{"permission": "deny", "user_message": …, "agent_message": …}` (cursor.com/docs/hooks):
    /// the agent gets the reason; `deny` holds in every mode, where `ask` does not.
    fn tool_refusal(&self, event: &str, reason: &str) -> Option<String> {
        (event == "beforeShellExecution").then(|| {
            serde_json::json!({
                "permission": "deny",
                "user_message": "baton refused a git command that would destroy another live session's work (docs/guard.md)",
                "agent_message": reason,
            })
            .to_string()
        })
    }

    fn name(&self) -> &'static str {
        "cursor"
    }

    fn title(&self) -> &'static str {
        "Cursor"
    }

    /// The CLI's executable goes by both names (the installer links `agent` to
    /// `cursor-agent`).
    fn programs(&self) -> &'static [&'static str] {
        &["cursor-agent", "agent"]
    }

    fn hook_events(&self) -> &'static [&'static str] {
        &[
            "sessionStart",
            "beforeSubmitPrompt",
            "stop",
            "sessionEnd",
            "beforeShellExecution",
        ]
    }

    /// Not written: baton's entries carry no `timeout`, so Cursor's default applies (the
    /// references disagree on its unit).
    fn hook_timeout(&self, _event: &str) -> u64 {
        0
    }

    fn settings_shape(&self) -> SettingsShape {
        SettingsShape::Flat { version: 1 }
    }

    /// The chat's `conversation_id`, which every event carries; `session_id` only when it is
    /// missing.
    fn session_id_fields(&self) -> &'static [&'static str] {
        &["conversation_id", "session_id"]
    }

    fn action(&self, event: &str, payload: &Map<String, Value>) -> Option<Action> {
        Some(match event {
            "sessionStart" => Action::SessionStart {
                source: field(payload, "source"),
            },
            "beforeSubmitPrompt" => Action::TurnOpen,
            "stop" => match field(payload, "status").as_str() {
                // The agent loop failed. The reference names no field for the error, so its
                // class is unknown; a rate limit cannot be told from another error.
                "error" => Action::Failure {
                    error: "unknown".into(),
                    message: String::new(),
                },
                // `completed`, or `aborted`: the user stopped the turn, which is no interrupt.
                _ => Action::TurnEnd,
            },
            "sessionEnd" => Action::SessionEnd {
                reason: field(payload, "reason"),
                terminal: true,
            },
            "beforeShellExecution" => match payload.get("command").and_then(Value::as_str) {
                Some(command) => Action::ToolCall {
                    command: command.to_string(),
                    dir: None,
                },
                None => Action::Ignored,
            },
            "afterShellExecution"
            | "beforeMCPExecution"
            | "afterMCPExecution"
            | "beforeReadFile"
            | "afterFileEdit"
            | "afterAgentResponse"
            | "afterAgentThought"
            | "preToolUse"
            | "postToolUse"
            | "postToolUseFailure"
            | "preCompact"
            | "subagentStart"
            | "subagentStop"
            | "beforeTabFileRead"
            | "afterTabFileEdit" => Action::Ignored,
            _ => return None,
        })
    }

    fn session_start_output(&self, context: &str) -> String {
        json!({ "continue": true, "additional_context": context }).to_string()
    }

    /// `beforeSubmitPrompt` takes only `continue` and `user_message`: the note is shown to the
    /// user, and the prompt goes on.
    fn turn_context(&self, _event: &str, context: &str) -> String {
        json!({ "continue": true, "user_message": context }).to_string()
    }

    /// No session variable is set in the agent's shell commands, only `CURSOR_AGENT`
    /// (forum.cursor.com/t/151935): the session is the one the session-start hook recorded
    /// for the client process, found among the tool call's ancestors.
    fn session_source(&self) -> SessionSource {
        SessionSource::Recorded {
            marker: "CURSOR_AGENT",
        }
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
        Files {
            settings: ".cursor/hooks.json",
            instructions: if user {
                ".cursor/AGENTS.md"
            } else {
                "AGENTS.md"
            },
        }
    }

    fn init_notes(&self, user: bool) -> &'static [&'static str] {
        if user {
            &[
                "note: Cursor reads no user-wide instruction file: copy the baton block of ~/.cursor/AGENTS.md into Cursor's User Rules",
            ]
        } else {
            &[]
        }
    }
}

fn no_supervise() -> AgentCommandError {
    AgentCommandError(
        "supervise does not run Cursor: the hooks reference baton is built from gives no headless command that resumes a chat; run the agent yourself and let its hooks keep baton's state"
            .into(),
    )
}
