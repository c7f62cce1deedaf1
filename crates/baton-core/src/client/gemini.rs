//! Gemini CLI (payloads of 0.61.0 in `fixtures/clients/`).
//!
//! Its hooks live in `.gemini/settings.json` (JSON with comments), with timeouts in
//! milliseconds; it has no failure hook and writes nothing of a 429 into its transcript, but
//! an error report into its temporary directory; a tool call gets no session variable, only
//! `GEMINI_CLI=1`, so its session is the one the session-start hook recorded for the client
//! process; it resumes by `latest`, not by session id.

use jiff::Timestamp;
use jiff::tz::TimeZone;
use serde_json::{Map, Value};

use super::argv::{Grammar, PromptCli, Takes, TaskAt, locate_prompt};
use super::definition::{
    Action, AgentCommandError, Definition, Dialect, Evidence, Files, HookSwitch, SessionSource,
    SwitchFile, TranscriptEnd, field,
};

pub struct GeminiCli;

impl Definition for GeminiCli {
    /// AfterAgent's `deny` rejects the turn's answer and sends the reason back as the next
    /// prompt.
    fn stop_refusal(&self, event: &str, reason: &str) -> Option<String> {
        (event == "AfterAgent")
            .then(|| serde_json::json!({ "decision": "deny", "reason": reason }).to_string())
    }

    /// `hooksConfig.enabled: false` (google-gemini/gemini-cli docs/reference/configuration.md:
    /// "When disabled, no hooks will be executed"), in the user's or the project's settings.
    fn hook_switches(&self) -> &'static [HookSwitch] {
        &[
            HookSwitch {
                file: SwitchFile::Project(".gemini/settings.json"),
                key: "/hooksConfig/enabled",
                off: false,
            },
            HookSwitch {
                file: SwitchFile::User(".gemini/settings.json"),
                key: "/hooksConfig/enabled",
                off: false,
            },
        ]
    }
    fn name(&self) -> &'static str {
        "gemini"
    }

    fn title(&self) -> &'static str {
        "Gemini CLI"
    }

    fn programs(&self) -> &'static [&'static str] {
        &["gemini"]
    }

    fn hook_events(&self) -> &'static [&'static str] {
        &[
            "SessionStart",
            "BeforeAgent",
            "AfterAgent",
            "SessionEnd",
            "PreCompress",
            "BeforeTool",
        ]
    }

    /// The shell tool only (the matcher is a regular expression of the tool's name).
    fn hook_matcher(&self, event: &str) -> Option<&'static str> {
        (event == "BeforeTool").then_some("run_shell_command")
    }

    /// `{"decision": "deny", "reason": …}`: 0.61.0 ignores Claude Code's
    /// `hookSpecificOutput.permissionDecision` and runs the command.
    fn tool_refusal(&self, event: &str, reason: &str) -> Option<String> {
        (event == "BeforeTool").then(|| super::definition::deny_decision(reason))
    }

    /// Milliseconds.
    fn hook_timeout(&self, _event: &str) -> u64 {
        10_000
    }

    fn settings_dialect(&self) -> Dialect {
        Dialect::JsonWithComments
    }

    fn action(&self, event: &str, payload: &Map<String, Value>) -> Option<Action> {
        Some(match event {
            "SessionStart" => Action::SessionStart {
                source: field(payload, "source"),
            },
            "BeforeAgent" => Action::TurnOpen,
            "AfterAgent" => Action::TurnEnd,
            "SessionEnd" => Action::SessionEnd {
                reason: field(payload, "reason"),
                terminal: true,
            },
            // Before every model call, not only a compression: a repeat changes nothing.
            "PreCompress" => Action::Checkpoint,
            // `run_shell_command`, in the project directory or its `dir_path` under it.
            "BeforeTool" => {
                let input = payload.get("tool_input");
                let text = |k: &str| input.and_then(|i| i.get(k)).and_then(Value::as_str);
                match (
                    payload.get("tool_name").and_then(Value::as_str),
                    text("command"),
                ) {
                    (Some("run_shell_command"), Some(command)) => Action::ToolCall {
                        command: command.to_string(),
                        dir: text("dir_path").map(str::to_string),
                    },
                    _ => Action::Ignored,
                }
            }
            "BeforeModel" | "AfterModel" | "AfterTool" | "BeforeToolSelection" | "Notification" => {
                Action::Ignored
            }
            _ => return None,
        })
    }

    fn session_source(&self) -> SessionSource {
        SessionSource::Recorded {
            marker: "GEMINI_CLI",
        }
    }

    fn evidence(&self) -> Evidence {
        Evidence::ErrorReports {
            prefix: "gemini-client-error-",
            suffix: ".json",
        }
    }

    /// A report (`gemini-client-error-*.json`, holding the error and the request's context)
    /// is evidence of this project's rate limit when its context names the project's root and
    /// its error is a quota error (`RetryableQuotaError` or `TerminalQuotaError`, Gemini CLI's
    /// classes for HTTP 429, or the API's `Resource has been exhausted`). The caller keeps only
    /// reports written while the turn was open. The reset is read from the error's message
    /// only (never from the conversation in the context): Gemini CLI's `Suggested retry after
    /// 31s.` (the API's `google.rpc.RetryInfo` `retryDelay`) or the API's `Please retry in
    /// 31.5s.`.
    fn error_report(
        &self,
        report: &str,
        project_root: &str,
        now: Timestamp,
        zone: &TimeZone,
    ) -> TranscriptEnd {
        let Ok(Value::Object(map)) = serde_json::from_str::<Value>(report) else {
            return TranscriptEnd::Unknown;
        };
        let error = map.get("error").map(Value::to_string).unwrap_or_default();
        let quota = ["QuotaError", "Resource has been exhausted"]
            .iter()
            .any(|sign| error.contains(sign));
        // The root as it appears inside the JSON text of the context, followed by a separator,
        // so that `/p/project` does not match `/p/project-2`.
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
            let message = map.get("error").and_then(|e| match e {
                Value::String(s) => Some(s.as_str()),
                _ => e.get("message").and_then(Value::as_str),
            });
            let resets = message.and_then(|m| {
                let lower = m.to_ascii_lowercase();
                // RetryInfo's delay first: it is the API's own word on when to retry.
                let suggested = lower
                    .find("suggested retry after ")
                    .and_then(|i| crate::reset::reset_time(&m[i..], now, zone));
                suggested.or_else(|| crate::reset::reset_time(m, now, zone))
            });
            TranscriptEnd::RateLimit { resets }
        } else {
            TranscriptEnd::Unknown
        }
    }

    /// `gemini [OPTIONS] -p "<prompt>" -r <session>` (a new session when there is none to
    /// resume), from a headless `gemini [OPTIONS] -p "<task>"`: every option kept, the prompt
    /// in the task's place. Gemini CLI 0.61 resumes a session by its full id, so two
    /// supervisors in one project each resume their own.
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
        // No session to resume (none reported, or one Gemini CLI kept nothing of): a new one,
        // told the task again. Never `latest`, which may be another supervisor's session.
        if let Some(session) = session {
            out.extend(["-r".to_string(), session.to_string()]);
        }
        Ok(out)
    }

    fn task_of(&self, argv: &[String], task: Option<&str>) -> Result<String, AgentCommandError> {
        let args = argv.get(1..).unwrap_or_default();
        Ok(locate(args, task)?.0.task)
    }

    /// Gemini CLI lists no session that has nothing to resume (its first request refused), and
    /// `--resume <id>` of one fails.
    fn keeps_unanswered_sessions(&self) -> bool {
        false
    }

    fn project_dir_variable(&self) -> Option<&'static str> {
        Some("GEMINI_PROJECT_DIR")
    }

    fn files(&self, user: bool) -> Files {
        Files {
            settings: ".gemini/settings.json",
            instructions: if user {
                ".gemini/GEMINI.md"
            } else {
                "GEMINI.md"
            },
        }
    }

    fn init_notes(&self, user: bool) -> &'static [&'static str] {
        if user {
            &[]
        } else {
            &[
                "note: Gemini CLI reads `.gemini/settings.json` only in a trusted folder: trust the project when Gemini asks",
            ]
        }
    }
}

const USAGE: &str = "gemini [OPTIONS] -p \"<task>\"";

/// Gemini CLI's options (0.61.0, `gemini --help`), with what each takes. Its parser is yargs:
/// an array option takes every word up to the next option (after `--name=value` too), and a
/// boolean takes a following `true` or `false`.
pub const GRAMMAR: Grammar = Grammar {
    client: "Gemini CLI",
    options: &[&[
        ("-d", Takes::Nothing),
        ("--debug", Takes::Nothing),
        ("-m", Takes::Value),
        ("--model", Takes::Value),
        ("-p", Takes::Value),
        ("--prompt", Takes::Value),
        ("-i", Takes::Value),
        ("--prompt-interactive", Takes::Value),
        ("--skip-trust", Takes::Nothing),
        ("-w", Takes::Optional),
        ("--worktree", Takes::Optional),
        ("-s", Takes::Nothing),
        ("--sandbox", Takes::Nothing),
        ("-y", Takes::Nothing),
        ("--yolo", Takes::Nothing),
        ("--approval-mode", Takes::Value),
        ("--policy", Takes::Values),
        ("--admin-policy", Takes::Values),
        ("--acp", Takes::Nothing),
        ("--experimental-acp", Takes::Nothing),
        ("--allowed-mcp-server-names", Takes::Values),
        ("--allowed-tools", Takes::Values),
        ("-e", Takes::Values),
        ("--extensions", Takes::Values),
        ("-l", Takes::Nothing),
        ("--list-extensions", Takes::Nothing),
        ("-r", Takes::Value),
        ("--resume", Takes::Value),
        ("--session-file", Takes::Value),
        ("--session-id", Takes::Value),
        ("--list-sessions", Takes::Nothing),
        ("--delete-session", Takes::Value),
        ("--include-directories", Takes::Values),
        ("--screen-reader", Takes::Nothing),
        ("-o", Takes::Value),
        ("--output-format", Takes::Value),
        ("--raw-output", Takes::Nothing),
        ("--accept-raw-output-risk", Takes::Nothing),
        ("-v", Takes::Nothing),
        ("--version", Takes::Nothing),
        ("-h", Takes::Nothing),
        ("--help", Takes::Nothing),
    ]],
    inline_values_continue: true,
    flags_take_bools: true,
};

/// Where `gemini [OPTIONS] -p "<task>"` has its task, and what the relaunch drops.
const PROMPT: PromptCli = PromptCli {
    title: "Gemini CLI",
    program: "gemini",
    usage: USAGE,
    grammar: &GRAMMAR,
    inline: &["--prompt=", "-p="],
    interactive: &["-i", "--prompt-interactive"],
    session_valued: &["-r", "--resume", "--session-id", "--session-file"],
    session_flags: &[],
    stray: "Gemini CLI refuses a prompt both as an argument and with `-p`, and this command has words that are neither options nor their values",
};

fn locate(args: &[String], task: Option<&str>) -> Result<(TaskAt, Vec<usize>), AgentCommandError> {
    locate_prompt(&PROMPT, args, task)
}
