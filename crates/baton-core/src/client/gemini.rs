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

use super::definition::{
    Action, AgentCommandError, Definition, Dialect, Evidence, Files, SessionSource, TranscriptEnd,
    field,
};

pub struct GeminiCli;

impl Definition for GeminiCli {
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
        ]
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
            "BeforeModel"
            | "AfterModel"
            | "BeforeTool"
            | "AfterTool"
            | "BeforeToolSelection"
            | "Notification" => Action::Ignored,
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

    /// `gemini … -r latest -p <prompt>`, from a headless `gemini [OPTIONS] -p "<task>"`: Gemini
    /// CLI resumes by `latest` or an index, not by the session id.
    fn resume_command(
        &self,
        argv: &[String],
        _session: Option<&str>,
        prompt: &str,
    ) -> Result<Vec<String>, AgentCommandError> {
        let Some((program, args)) = argv.split_first() else {
            return Err(AgentCommandError("no agent command was given".into()));
        };
        let mut out = vec![program.clone()];
        let mut found = false;
        let mut i = 0;
        while i < args.len() {
            let a = &args[i];
            if a == "-p" || a == "--prompt" {
                if i + 1 >= args.len() {
                    break;
                }
                out.extend([a.clone(), prompt.to_string()]);
                found = true;
                i += 2;
                continue;
            }
            if a.starts_with("--prompt=") {
                out.push(format!("--prompt={prompt}"));
                found = true;
            } else if a == "-r" || a == "--resume" || a == "--session-id" {
                i += 2;
                continue;
            } else if !a.starts_with("--resume=") && !a.starts_with("--session-id=") {
                out.push(a.clone());
            }
            i += 1;
        }
        if !found {
            return Err(AgentCommandError(
                "supervise runs Gemini CLI headless: `gemini [OPTIONS] -p \"<task>\"`".into(),
            ));
        }
        out.extend(["-r".to_string(), "latest".to_string()]);
        Ok(out)
    }

    fn task_of(&self, argv: &[String]) -> Option<String> {
        let args = argv.get(1..)?;
        args.iter().enumerate().find_map(|(i, a)| {
            if a == "-p" || a == "--prompt" {
                args.get(i + 1).cloned()
            } else {
                a.strip_prefix("--prompt=").map(str::to_string)
            }
        })
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
