//! Claude Code (payloads of 2.1.328 and 2.1.332 in `fixtures/clients/`).
//!
//! Its hooks live in `.claude/settings.json` (strict JSON); a failed turn has its own hook,
//! StopFailure, naming the API error; a tool call knows its session by
//! `CLAUDE_CODE_SESSION_ID` and the client's process by `CLAUDE_PID`; the guide is a skill.

use jiff::Timestamp;
use jiff::tz::TimeZone;
use serde_json::{Map, Value};

use super::definition::{
    Action, AgentCommandError, Definition, Files, Instructions, SessionSource, TranscriptEnd,
    drop_options, field, last_prompt,
};

pub struct ClaudeCode;

impl Definition for ClaudeCode {
    fn name(&self) -> &'static str {
        "claude"
    }

    fn title(&self) -> &'static str {
        "Claude Code"
    }

    fn programs(&self) -> &'static [&'static str] {
        &["claude"]
    }

    fn hook_events(&self) -> &'static [&'static str] {
        &[
            "SessionStart",
            "UserPromptSubmit",
            "Stop",
            "StopFailure",
            "SessionEnd",
            "PreCompact",
        ]
    }

    /// Seconds. Claude Code kills StopFailure hooks after about 0.1 s whatever the entry says;
    /// the failure path is built to finish well inside that.
    fn hook_timeout(&self, _event: &str) -> u64 {
        10
    }

    fn action(&self, event: &str, payload: &Map<String, Value>) -> Option<Action> {
        Some(match event {
            "SessionStart" => Action::SessionStart {
                source: field(payload, "source"),
            },
            "UserPromptSubmit" => Action::TurnOpen,
            "Stop" => Action::TurnEnd,
            "StopFailure" => {
                let message = field(payload, "last_assistant_message");
                Action::Failure {
                    error: failure_error(&field(payload, "error"), &message),
                    message,
                }
            }
            "SessionEnd" => {
                let reason = field(payload, "reason");
                // `resume`: the session goes on in another process; nothing stopped.
                let terminal = reason != "resume";
                Action::SessionEnd { reason, terminal }
            }
            "PreCompact" => Action::Checkpoint,
            "PreToolUse" | "PostToolUse" | "PostToolBatch" | "Notification" => Action::Ignored,
            _ => return None,
        })
    }

    fn session_source(&self) -> SessionSource {
        SessionSource::Variables(&["CLAUDE_CODE_SESSION_ID"])
    }

    fn pid_variable(&self) -> Option<&'static str> {
        Some("CLAUDE_PID")
    }

    /// An assistant line with `"isApiErrorMessage": true` and `"error": "rate_limit"`, or whose
    /// text is a subscription-limit message. Only the last assistant line counts: a rate limit
    /// an earlier turn recovered from is not this one's end. Its reset is the line's
    /// `apiErrorParams.rate_limit_info.resetsAt` or `quotaLimits.resetsAt` (unix seconds, from
    /// the API's `anthropic-ratelimit-unified-reset` header), else the time its text names.
    fn transcript_end(&self, tail: &str, now: Timestamp, zone: &TimeZone) -> TranscriptEnd {
        for line in tail.lines().rev() {
            let Ok(entry @ Value::Object(_)) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            if entry.get("type").and_then(Value::as_str) != Some("assistant") {
                continue;
            }
            let api_error = entry.get("isApiErrorMessage").and_then(Value::as_bool) == Some(true);
            let text = entry
                .pointer("/message/content/0/text")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let error = entry
                .get("error")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if !api_error || failure_error(error, text) != "rate_limit" {
                return TranscriptEnd::Unknown;
            }
            let stated = [
                "/apiErrorParams/rate_limit_info/resetsAt",
                "/quotaLimits/resetsAt",
            ]
            .iter()
            .find_map(|p| entry.pointer(p).and_then(Value::as_i64));
            let resets = match stated {
                Some(secs) => crate::reset::unix_reset(secs, now),
                None => crate::reset::reset_time(text, now, zone),
            };
            return TranscriptEnd::RateLimit { resets };
        }
        TranscriptEnd::Unknown
    }

    /// `claude … --resume <session> <prompt>` (`--continue` when the session is not known),
    /// from a headless `claude [OPTIONS] -p "<task>"`.
    fn resume_command(
        &self,
        argv: &[String],
        session: Option<&str>,
        prompt: &str,
    ) -> Result<Vec<String>, AgentCommandError> {
        let Some((program, args)) = argv.split_first() else {
            return Err(AgentCommandError("no agent command was given".into()));
        };
        if !args.iter().any(|a| a == "-p" || a == "--print") {
            return Err(AgentCommandError(
                "supervise runs Claude Code headless: `claude [OPTIONS] -p \"<task>\"`".into(),
            ));
        }
        last_prompt(args, "claude", "claude [OPTIONS] -p \"<task>\"")?;
        let mut out = vec![program.clone()];
        out.extend(drop_options(
            &args[..args.len() - 1],
            &["--resume", "-r", "--session-id"],
            &["--continue", "-c", "--fork-session"],
        ));
        match session {
            Some(s) => out.extend(["--resume".to_string(), s.to_string()]),
            None => out.push("--continue".into()),
        }
        out.push(prompt.into());
        Ok(out)
    }

    fn task_of(&self, argv: &[String]) -> Option<String> {
        argv.get(1..)?.last().cloned()
    }

    fn project_dir_variable(&self) -> Option<&'static str> {
        Some("CLAUDE_PROJECT_DIR")
    }

    fn files(&self, _user: bool) -> Files {
        Files {
            settings: ".claude/settings.json",
            instructions: ".claude/skills/baton/SKILL.md",
        }
    }

    fn instructions(&self) -> Instructions {
        Instructions::Skill
    }
}

/// The class of a StopFailure's error, from the `error` the client sent and the message shown
/// for it. A subscription limit (`You've hit your limit · resets …`) is `rate_limit` whatever
/// the client called it; an overloaded API (HTTP 529, which Claude Code 2.1.332 sends as
/// `server_error` with `529 Overloaded` in the message) is `overloaded`; a missing error is
/// `unknown`.
pub fn failure_error(error: &str, message: &str) -> String {
    if crate::reset::is_subscription_limit(message) {
        return "rate_limit".into();
    }
    let overloaded = error == "overloaded"
        || (error == "server_error" || error.is_empty())
            && (message.contains("529 Overloaded") || message.contains("overloaded_error"));
    match error {
        _ if overloaded => "overloaded".into(),
        "" => "unknown".into(),
        other => other.into(),
    }
}
