//! Codex CLI (payloads of 0.171.0 in `fixtures/clients/`).
//!
//! Its hooks live in `.codex/hooks.json` (strict JSON; `$CODEX_HOME/hooks.json` for the user)
//! and run only once trusted, per handler, in `$CODEX_HOME/config.toml`
//! (`install::codex_trust`); it has no failure hook, and ends a turn that failed with a
//! `task_complete` event naming the error in its transcript; a tool call knows its session by
//! `CODEX_SESSION_ID` or `CODEX_THREAD_ID`; the guide is a block in `AGENTS.md`.

use jiff::Timestamp;
use jiff::tz::TimeZone;
use serde_json::{Map, Value};

use super::definition::{
    Action, AgentCommandError, Definition, Files, SessionSource, SettingsScope, TranscriptEnd,
    UserDir, field, last_prompt,
};

pub struct Codex;

const USAGE: &str = "codex exec [OPTIONS] \"<task>\"";

impl Definition for Codex {
    fn name(&self) -> &'static str {
        "codex"
    }

    fn title(&self) -> &'static str {
        "Codex"
    }

    fn programs(&self) -> &'static [&'static str] {
        &["codex"]
    }

    fn hook_events(&self) -> &'static [&'static str] {
        &[
            "SessionStart",
            "UserPromptSubmit",
            "Stop",
            "SessionEnd",
            "PreCompact",
        ]
    }

    /// Seconds. Codex cuts SessionEnd hooks to 3 s, so the entry says so instead of promising
    /// more.
    fn hook_timeout(&self, event: &str) -> u64 {
        if event == "SessionEnd" { 3 } else { 10 }
    }

    fn action(&self, event: &str, payload: &Map<String, Value>) -> Option<Action> {
        Some(match event {
            "SessionStart" => Action::SessionStart {
                source: field(payload, "source"),
            },
            "UserPromptSubmit" => Action::TurnOpen,
            "Stop" => Action::TurnEnd,
            "SessionEnd" => Action::SessionEnd {
                reason: field(payload, "reason"),
                terminal: true,
            },
            "PreCompact" => Action::Checkpoint,
            "PreToolUse" | "PostToolUse" | "PostCompact" => Action::Ignored,
            _ => return None,
        })
    }

    fn session_source(&self) -> SessionSource {
        SessionSource::Variables(&["CODEX_SESSION_ID", "CODEX_THREAD_ID"])
    }

    /// A `task_complete` event whose error is a rate limit: retries exhausted on HTTP 429
    /// (`codex_error_info.response_too_many_failed_attempts.http_status_code` 429) or the
    /// plan's usage limit (`codex_error_info: "usage_limit_exceeded"`, from the API's
    /// `usage_limit_reached`). Only the last `task_complete` counts: a rate limit an earlier
    /// turn recovered from is not this one's end. Its reset is the latest `resets_at` of the
    /// exhausted windows (`used_percent` 100) in the `token_count` event's `rate_limits` before
    /// it (from the API's `x-codex-*-reset-at` headers), else the time the error's message
    /// names (`try again at 8:06 AM`, in the machine's local time).
    fn transcript_end(&self, tail: &str, now: Timestamp, zone: &TimeZone) -> TranscriptEnd {
        let mut lines = tail.lines().rev().filter_map(|line| {
            let Ok(Value::Object(entry)) = serde_json::from_str::<Value>(line) else {
                return None;
            };
            entry.get("payload").cloned()
        });
        let Some(end) = lines
            .by_ref()
            .find(|p| p.get("type").and_then(Value::as_str) == Some("task_complete"))
        else {
            return TranscriptEnd::Unknown;
        };
        let info = end.pointer("/error/codex_error_info");
        let too_many = info
            .and_then(|i| i.pointer("/response_too_many_failed_attempts/http_status_code"))
            .and_then(Value::as_u64)
            == Some(429);
        let usage_limit = info.is_some_and(|i| {
            i.as_str() == Some("usage_limit_exceeded") || i.get("usage_limit_exceeded").is_some()
        });
        if !too_many && !usage_limit {
            return TranscriptEnd::Unknown;
        }
        // The turn's own rate-limit snapshot: the token_count right before its end.
        let snapshot = lines
            .take_while(|p| p.get("type").and_then(Value::as_str) != Some("task_complete"))
            .find(|p| p.get("type").and_then(Value::as_str) == Some("token_count"));
        let stated = snapshot
            .as_ref()
            .and_then(|p| p.get("rate_limits"))
            .and_then(Value::as_object)
            .and_then(|limits| {
                limits
                    .values()
                    .filter(|w| w.get("used_percent").and_then(Value::as_f64) >= Some(100.0))
                    .filter_map(|w| w.get("resets_at").and_then(Value::as_i64))
                    .max()
            });
        let message = end
            .pointer("/error/message")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let resets = match stated {
            Some(secs) => crate::reset::unix_reset(secs, now),
            None => crate::reset::reset_time(message, now, zone),
        };
        TranscriptEnd::RateLimit { resets }
    }

    /// `codex … exec … resume <session> <prompt>` (`--last` when the session is not known),
    /// from a headless `codex exec [OPTIONS] "<task>"`.
    fn resume_command(
        &self,
        argv: &[String],
        session: Option<&str>,
        prompt: &str,
    ) -> Result<Vec<String>, AgentCommandError> {
        let Some((program, args)) = argv.split_first() else {
            return Err(AgentCommandError("no agent command was given".into()));
        };
        let exec = args
            .iter()
            .position(|a| a == "exec" || a == "e")
            .ok_or_else(|| {
                AgentCommandError(format!("supervise runs Codex headless: `{USAGE}`"))
            })?;
        let rest = &args[exec + 1..];
        if rest.first().is_some_and(|a| a == "resume") {
            return Err(AgentCommandError(
                "give supervise the command that starts the task (`codex exec \"<task>\"`); it writes the resume form itself".into(),
            ));
        }
        last_prompt(rest, "codex", USAGE).or_else(|e| {
            // `codex exec "<task>"` alone: the task is the only word.
            match rest {
                [only] if !only.starts_with('-') => Ok(only.as_str()),
                _ => Err(e),
            }
        })?;
        let mut out = vec![program.clone()];
        out.extend(args[..=exec].iter().cloned());
        out.extend(rest[..rest.len() - 1].iter().cloned());
        out.push("resume".into());
        match session {
            Some(s) => out.push(s.to_string()),
            None => out.push("--last".into()),
        }
        out.push(prompt.into());
        Ok(out)
    }

    fn task_of(&self, argv: &[String]) -> Option<String> {
        argv.get(1..)?.last().cloned()
    }

    /// Codex reads `.codex/` in every directory from where it starts up to the root.
    fn settings_scope(&self) -> SettingsScope {
        SettingsScope::UpToRoot
    }

    fn files(&self, user: bool) -> Files {
        Files {
            settings: if user {
                "hooks.json"
            } else {
                ".codex/hooks.json"
            },
            instructions: "AGENTS.md",
        }
    }

    fn user_dir(&self) -> UserDir {
        UserDir::Variable {
            variable: "CODEX_HOME",
            default: ".codex",
        }
    }

    fn keeps_hook_trust(&self) -> bool {
        true
    }

    fn untrusted_project_note(&self) -> Option<&'static str> {
        Some(
            "note: Codex runs a project's hooks only in a trusted project, and this one is not: run `baton init codex --trust-project` (or trust it when Codex asks)",
        )
    }

    fn init_notes(&self, _user: bool) -> &'static [&'static str] {
        &[
            "note: Codex runs tool calls in a login shell (`bash -lc`) whose PATH comes from /etc/profile and ~/.profile: install baton in /usr/local/bin, or add a PATH line for its directory to ~/.profile",
        ]
    }
}
