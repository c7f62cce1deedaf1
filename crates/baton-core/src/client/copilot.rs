//! GitHub Copilot CLI (payloads of 1.0.102 in `fixtures/clients/`).
//!
//! Its hooks are files of their own, `{"version":1,"hooks":{…}}`, in the project's
//! `.github/hooks/` (loaded only in a trusted folder) or `$COPILOT_HOME/hooks/`; its payloads
//! are camelCase and name no event; it has no failure hook (`errorOccurred` fires on every
//! retry alike), and ends a session whose turn failed with `sessionEnd` reason `error`, the
//! error's class in the session's `events.jsonl`, which the payload does not name; a tool call
//! knows its session by `COPILOT_AGENT_SESSION_ID`; the guide is a block in `AGENTS.md`.

use jiff::Timestamp;
use jiff::tz::TimeZone;
use serde_json::{Map, Value, json};

use super::argv::{Grammar, PromptCli, Takes, TaskAt, locate_prompt};
use super::definition::{
    Action, AgentCommandError, Definition, Files, HookSwitch, PayloadKeys, SessionSource,
    SettingsShape, SwitchFile, TranscriptEnd, UserDir, field,
};

pub struct CopilotCli;

const USAGE: &str = "copilot [OPTIONS] -p \"<task>\"";

impl Definition for CopilotCli {
    /// `disableAllHooks` (github/docs, Copilot CLI's config directory reference: "Disable all
    /// hooks (both repository-level and user-level)"), in its own settings and in the
    /// repository's Claude Code settings, which it also reads.
    fn hook_switches(&self) -> &'static [HookSwitch] {
        const SWITCHES: [HookSwitch; 3] = [
            HookSwitch {
                file: SwitchFile::User("settings.json"),
                key: "/disableAllHooks",
                off: true,
            },
            super::claude::CLAUDE_SWITCHES[0],
            super::claude::CLAUDE_SWITCHES[1],
        ];
        &SWITCHES
    }
    fn name(&self) -> &'static str {
        "copilot"
    }

    fn title(&self) -> &'static str {
        "Copilot CLI"
    }

    fn programs(&self) -> &'static [&'static str] {
        &["copilot"]
    }

    fn hook_events(&self) -> &'static [&'static str] {
        &[
            "sessionStart",
            "userPromptSubmitted",
            "agentStop",
            "sessionEnd",
            "preToolUse",
        ]
    }

    /// `{"permissionDecision": "deny", "permissionDecisionReason": …}`, flat: 1.0.102 ignores
    /// Claude Code's shape and runs the command, and its exit 2 drops the reason.
    fn tool_refusal(&self, event: &str, reason: &str) -> Option<String> {
        (event.eq_ignore_ascii_case("preToolUse")).then(|| {
            serde_json::json!({
                "permissionDecision": "deny",
                "permissionDecisionReason": reason,
            })
            .to_string()
        })
    }

    /// Seconds (`timeoutSec`). The session end waits for the transcript (`transcript_wait`).
    fn hook_timeout(&self, _event: &str) -> u64 {
        30
    }

    fn settings_shape(&self) -> SettingsShape {
        SettingsShape::Handlers
    }

    // Copilot CLI's payloads are camelCase and name no event: the event is the one the hook
    // was installed for.
    fn event_field(&self) -> Option<&'static str> {
        None
    }

    fn session_id_fields(&self) -> &'static [&'static str] {
        &["sessionId"]
    }

    fn payload_keys(&self) -> PayloadKeys {
        PayloadKeys {
            transcript_path: "transcriptPath",
            cwd: "cwd",
            prompt: "prompt",
        }
    }

    fn action(&self, event: &str, payload: &Map<String, Value>) -> Option<Action> {
        let name: String = event
            .chars()
            .filter(char::is_ascii_alphanumeric)
            .map(|c| c.to_ascii_lowercase())
            .collect();
        Some(match name.as_str() {
            "sessionstart" => Action::SessionStart {
                source: field(payload, "source"),
            },
            "userpromptsubmitted" => Action::TurnOpen,
            "agentstop" => Action::TurnEnd,
            // `complete`, or `error` when the turn failed: the evidence decides the class.
            "sessionend" => Action::SessionEnd {
                reason: field(payload, "reason"),
                terminal: true,
            },
            // Fired on every attempt of a model call, each `recoverable: true` and alike, the
            // last one included: it never says the turn is lost (a retry may succeed), and its
            // error is the provider's body with no status. The session end decides.
            "erroroccurred" => Action::Ignored,
            // The `bash` tool: `toolArgs` an object (1.0.102), or that object as JSON text.
            "pretooluse" => {
                let args = match payload.get("toolArgs") {
                    Some(Value::String(text)) => serde_json::from_str(text).unwrap_or(Value::Null),
                    Some(other) => other.clone(),
                    None => Value::Null,
                };
                match (
                    payload.get("toolName").and_then(Value::as_str),
                    args.get("command").and_then(Value::as_str),
                ) {
                    (Some("bash"), Some(command)) => Action::ToolCall {
                        command: command.to_string(),
                        dir: None,
                    },
                    _ => Action::Ignored,
                }
            }
            "posttooluse" | "permissionrequest" | "subagentstop" => Action::Ignored,
            _ => return None,
        })
    }

    /// `{"additionalContext": …}`: from `sessionStart` the model gets it as a message of its
    /// own before the prompt; plain stdout reaches it from no hook.
    fn session_start_output(&self, context: &str) -> String {
        json!({ "additionalContext": context }).to_string()
    }

    /// From `userPromptSubmitted`, inside the prompt's message in `<system_reminder>` tags.
    fn turn_context(&self, _event: &str, context: &str) -> String {
        json!({ "additionalContext": context }).to_string()
    }

    fn session_source(&self) -> SessionSource {
        SessionSource::Variables(&["COPILOT_AGENT_SESSION_ID"])
    }

    /// `$COPILOT_HOME/session-state/<session>/events.jsonl` (`~/.copilot` without it), the
    /// `transcriptPath` of `agentStop`; `sessionEnd` names none.
    fn session_transcript(&self) -> Option<&'static str> {
        Some("session-state/{session}/events.jsonl")
    }

    /// Copilot CLI starts the `sessionEnd` hook before it writes the turn's `session.error`
    /// (about 0.1 s later, with 1.0.102).
    fn transcript_wait(&self, reason: &str) -> std::time::Duration {
        if reason == "error" {
            std::time::Duration::from_secs(3)
        } else {
            std::time::Duration::ZERO
        }
    }

    /// A `session.error` event of the last turn with `errorType` `rate_limit` or `statusCode`
    /// 429 (written once the retries on a 429 ran out). Only an error after the last
    /// `user.message` counts: one an earlier turn ended with is not this turn's end. The event
    /// states no reset; the time its message names, if any, is the reset.
    fn transcript_end(&self, tail: &str, now: Timestamp, zone: &TimeZone) -> TranscriptEnd {
        for line in tail.lines().rev() {
            let Ok(entry @ Value::Object(_)) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            match entry.get("type").and_then(Value::as_str) {
                Some("user.message") => return TranscriptEnd::Unknown,
                Some("session.error") => {
                    let data = entry.get("data");
                    let class = data
                        .and_then(|d| d.get("errorType"))
                        .and_then(Value::as_str);
                    let status = data
                        .and_then(|d| d.get("statusCode"))
                        .and_then(Value::as_u64);
                    if class != Some("rate_limit") && status != Some(429) {
                        return TranscriptEnd::Unknown;
                    }
                    let message = data
                        .and_then(|d| d.get("message"))
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    return TranscriptEnd::RateLimit {
                        resets: crate::reset::reset_time(message, now, zone),
                    };
                }
                _ => {}
            }
        }
        TranscriptEnd::Unknown
    }

    /// `copilot [OPTIONS] -p "<prompt>" --resume=<session>` (a new session when there is none
    /// to resume: `--continue` might pick another supervisor's), from a headless
    /// `copilot [OPTIONS] -p "<task>"`: every option kept but those that picked a session.
    fn resume_command(
        &self,
        argv: &[String],
        task: Option<&str>,
        session: Option<&str>,
        prompt: &str,
    ) -> Result<Vec<String>, AgentCommandError> {
        let (program, args) = argv
            .split_first()
            .ok_or_else(|| AgentCommandError("no agent command was given".into()))?;
        let (found, dropped) = locate(args, task)?;
        let mut out = vec![program.clone()];
        for (i, a) in args.iter().enumerate() {
            if i == found.at {
                out.push(format!("{}{prompt}", found.prefix));
            } else if !dropped.contains(&i) {
                out.push(a.clone());
            }
        }
        if let Some(session) = session {
            out.push(format!("--resume={session}"));
        }
        Ok(out)
    }

    fn task_of(&self, argv: &[String], task: Option<&str>) -> Result<String, AgentCommandError> {
        let args = argv.get(1..).unwrap_or_default();
        Ok(locate(args, task)?.0.task)
    }

    fn project_dir_variable(&self) -> Option<&'static str> {
        Some("COPILOT_PROJECT_DIR")
    }

    /// baton's own hooks file beside the user's: Copilot CLI loads every `*.json` there.
    fn files(&self, user: bool) -> Files {
        Files {
            settings: if user {
                "hooks/baton.json"
            } else {
                ".github/hooks/baton.json"
            },
            instructions: if user {
                "copilot-instructions.md"
            } else {
                "AGENTS.md"
            },
        }
    }

    fn user_dir(&self) -> UserDir {
        UserDir::Variable {
            variable: "COPILOT_HOME",
            default: ".copilot",
        }
    }

    fn init_notes(&self, user: bool) -> &'static [&'static str] {
        if user {
            &[]
        } else {
            &[
                "note: Copilot CLI runs a project's hooks only in a trusted folder: trust it when Copilot asks, or run it with `--trust-folder` or `COPILOT_ALLOW_ALL=true`",
            ]
        }
    }
}

/// Copilot CLI's options (1.0.102, `copilot --help`), with what each takes. A list option
/// (`--allow-tool [<tools>...]`) takes every word up to the next option.
pub const GRAMMAR: Grammar = Grammar {
    client: "Copilot CLI",
    options: &[&[
        ("-v", Takes::Nothing),
        ("--version", Takes::Nothing),
        ("-i", Takes::Value),
        ("--interactive", Takes::Value),
        ("--fleet", Takes::Nothing),
        ("-p", Takes::Value),
        ("--prompt", Takes::Value),
        ("--trust-folder", Takes::Nothing),
        ("-s", Takes::Nothing),
        ("--silent", Takes::Nothing),
        ("--disable-client-telemetry", Takes::Nothing),
        ("--enable-memory", Takes::Nothing),
        ("--model", Takes::Value),
        ("--reasoning-effort", Takes::Value),
        ("--context", Takes::Value),
        ("--auto-tier", Takes::Value),
        ("--agent", Takes::Value),
        ("-r", Takes::Optional),
        ("--resume", Takes::Optional),
        ("--continue", Takes::Nothing),
        ("-n", Takes::Value),
        ("--name", Takes::Value),
        ("--session-id", Takes::Value),
        ("--connect", Takes::Optional),
        ("--allow-all-tools", Takes::Nothing),
        ("--allow-all-paths", Takes::Nothing),
        ("--disallow-temp-dir", Takes::Nothing),
        ("--banner", Takes::Nothing),
        ("--screen-reader", Takes::Nothing),
        ("--plain-diff", Takes::Nothing),
        ("-C", Takes::Value),
        ("--log-dir", Takes::Value),
        ("--extension-sdk-path", Takes::Value),
        ("--log-level", Takes::Value),
        ("--stream", Takes::Value),
        ("--output-format", Takes::Value),
        ("--share", Takes::Optional),
        ("--share-gist", Takes::Nothing),
        ("--add-dir", Takes::Value),
        ("--attachment", Takes::Value),
        ("--disable-mcp-server", Takes::Value),
        ("--disable-builtin-mcps", Takes::Nothing),
        ("--enable-all-github-mcp-tools", Takes::Nothing),
        ("--add-github-mcp-toolset", Takes::Value),
        ("--add-github-mcp-tool", Takes::Value),
        ("--plugin-dir", Takes::Value),
        ("--additional-mcp-config", Takes::Value),
        ("--mcp-github-auth", Takes::Value),
        ("--allow-all-mcp-server-instructions", Takes::Nothing),
        ("--allow-tool", Takes::Values),
        ("--deny-tool", Takes::Values),
        ("--available-tools", Takes::Values),
        ("--excluded-tools", Takes::Values),
        ("--secret-env-vars", Takes::Values),
        ("--allow-url", Takes::Values),
        ("--deny-url", Takes::Values),
        ("--allow-all-urls", Takes::Nothing),
        ("--allow-all", Takes::Nothing),
        ("--yolo", Takes::Nothing),
        ("--max-autopilot-continues", Takes::Value),
        ("--mode", Takes::Value),
        ("--autopilot", Takes::Nothing),
        ("--plan", Takes::Nothing),
        ("--experimental", Takes::Nothing),
        ("--bash-env", Takes::Optional),
        ("--mouse", Takes::Optional),
        ("--acp", Takes::Nothing),
        ("--remote", Takes::Nothing),
        ("--remote-export", Takes::Nothing),
        ("--environment-host", Takes::Value),
        ("--environment-compute-id", Takes::Value),
        ("--dynamic-retrieval", Takes::Value),
        ("--enable-mcp-server", Takes::Value),
        ("--max-ai-credits", Takes::Value),
        ("--assisted-approval", Takes::Nothing),
        ("--usage-output-file", Takes::Value),
        ("--no-custom-instructions", Takes::Nothing),
        ("--no-auto-update", Takes::Nothing),
        ("--no-ask-user", Takes::Nothing),
        ("--no-color", Takes::Nothing),
        ("--no-experimental", Takes::Nothing),
        ("--no-bash-env", Takes::Nothing),
        ("--no-mouse", Takes::Nothing),
        ("--no-remote", Takes::Nothing),
        ("--no-remote-export", Takes::Nothing),
        ("--no-eager-powershell-resolution", Takes::Nothing),
        ("-h", Takes::Nothing),
        ("--help", Takes::Nothing),
    ]],
    inline_values_continue: false,
    flags_take_bools: false,
};

/// Where `copilot [OPTIONS] -p "<task>"` has its task, and what the relaunch drops: the
/// options that pick a session (or name a new one), as the relaunch names its own.
const PROMPT: PromptCli = PromptCli {
    title: "Copilot CLI",
    program: "copilot",
    usage: USAGE,
    grammar: &GRAMMAR,
    inline: &["--prompt="],
    interactive: &["-i", "--interactive"],
    session_valued: &["-r", "--resume", "--session-id", "-n", "--name"],
    session_flags: &["--continue"],
    stray: "this Copilot CLI command has words that are neither options nor their values (a subcommand, or a task outside `-p`)",
};

fn locate(args: &[String], task: Option<&str>) -> Result<(TaskAt, Vec<usize>), AgentCommandError> {
    locate_prompt(&PROMPT, args, task)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::Client;
    use crate::hook::parse_payload;

    fn fixture(rel: &str) -> String {
        let path = format!(
            "{}/../../fixtures/clients/{rel}",
            env!("CARGO_MANIFEST_DIR")
        );
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    fn now() -> Timestamp {
        "2026-12-02T13:21:15Z".parse().unwrap()
    }

    #[test]
    fn the_envelope_is_camel_case_and_the_event_the_hooks_own() {
        let end = fixture("copilot-1.0.102/sessionEnd.after-429.json");
        let parsed = parse_payload(Client::Copilot, "sessionEnd", end.as_bytes()).unwrap();
        assert_eq!(parsed.session_id, "4fab203a-54b2-4d03-8fbc-7d831de676fb");
        assert_eq!(parsed.cwd.as_deref(), Some("/home/dev/project"));
        assert_eq!(parsed.transcript_path, None);
        assert_eq!(
            parsed.action,
            Action::SessionEnd {
                reason: "error".into(),
                terminal: true
            }
        );
        let stop = fixture("copilot-1.0.102/agentStop.json");
        let parsed = parse_payload(Client::Copilot, "agentStop", stop.as_bytes()).unwrap();
        assert!(parsed.transcript_path.unwrap().ends_with("/events.jsonl"));
        let start = fixture("copilot-1.0.102/sessionStart.resume.json");
        assert_eq!(
            parse_payload(Client::Copilot, "session-start", start.as_bytes())
                .unwrap()
                .action,
            Action::SessionStart {
                source: "resume".into()
            }
        );
        let prompt = fixture("copilot-1.0.102/userPromptSubmitted.json");
        let parsed =
            parse_payload(Client::Copilot, "userPromptSubmitted", prompt.as_bytes()).unwrap();
        assert_eq!(parsed.prompt.as_deref(), Some("run echo"));
        // Every retry's errorOccurred is alike and recoverable: not the turn's end.
        let error = fixture("copilot-1.0.102/errorOccurred.after-429.json");
        assert_eq!(
            parse_payload(Client::Copilot, "errorOccurred", error.as_bytes())
                .unwrap()
                .action,
            Action::Ignored
        );
        assert!(parse_payload(Client::Copilot, "teleport", b"{\"sessionId\":\"s\"}").is_err());
        assert!(parse_payload(Client::Copilot, "agentStop", b"{\"session_id\":\"s\"}").is_err());
    }

    #[test]
    fn a_rate_limit_is_the_last_turns_session_error() {
        let tail = fixture("transcripts/copilot-1.0.102.rate-limit-tail.jsonl");
        let def = Client::Copilot.def();
        assert_eq!(
            def.transcript_end(&tail, now(), &TimeZone::UTC),
            TranscriptEnd::RateLimit { resets: None }
        );
        // A later prompt: the error was an earlier turn's.
        let later = format!(
            "{}\n{}\n",
            tail.trim_end(),
            r#"{"type":"user.message","data":{"content":"again"}}"#
        );
        assert_eq!(
            def.transcript_end(&later, now(), &TimeZone::UTC),
            TranscriptEnd::Unknown
        );
        let other = tail
            .replace("\"rate_limit\"", "\"server\"")
            .replace("429,", "500,");
        assert_eq!(
            def.transcript_end(&other, now(), &TimeZone::UTC),
            TranscriptEnd::Unknown
        );
        assert_eq!(def.transcript_wait("error").as_secs(), 3);
        assert!(def.transcript_wait("complete").is_zero());
    }
}
