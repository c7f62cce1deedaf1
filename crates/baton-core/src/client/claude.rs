//! Claude Code (payloads of 2.1.328 and 2.1.332 in `fixtures/clients/`).
//!
//! Its hooks live in `.claude/settings.json` (strict JSON); a failed turn has its own hook,
//! StopFailure, naming the API error; a tool call knows its session by
//! `CLAUDE_CODE_SESSION_ID` and the client's process by `CLAUDE_PID`; the guide is a skill.

use jiff::Timestamp;
use jiff::tz::TimeZone;
use serde_json::{Map, Value};

use super::argv::{Grammar, Takes, TaskAt, Word, given_task, needs_task, session_words};
use super::definition::{
    Action, AgentCommandError, ClientGoal, Definition, Disabling, Files, GoalSource, HookSwitch,
    Instructions, SessionSource, SwitchFile, TranscriptEnd, field,
};

pub struct ClaudeCode;

impl Definition for ClaudeCode {
    fn stop_refusal(&self, event: &str, reason: &str) -> Option<String> {
        (event == "Stop").then(|| super::definition::block_stop(reason))
    }

    /// Only the shell tool, which the pre-tool payload names `Bash`.
    fn hook_matcher(&self, event: &str) -> Option<&'static str> {
        (event == "PreToolUse").then_some("Bash")
    }

    fn tool_refusal(&self, event: &str, reason: &str) -> Option<String> {
        (event == "PreToolUse").then(|| super::definition::deny_tool(event, reason))
    }

    /// `disableAllHooks` (code.claude.com/docs/en/settings: "Disable all hooks and any custom
    /// status line"), in each settings file Claude Code reads here.
    fn hook_switches(&self) -> &'static [HookSwitch] {
        &CLAUDE_SWITCHES
    }

    fn disabling_options(&self) -> &'static [Disabling] {
        &[
            Disabling {
                option: "--bare",
                unless: None,
                why: "a bare run loads no hooks, so baton never hears how the run ends",
            },
            Disabling {
                option: "--safe-mode",
                unless: None,
                why: "safe mode runs no hooks, so baton never hears how the run ends",
            },
            Disabling {
                option: "--setting-sources",
                unless: Some(&["project", "local"]),
                why: "it reads no project settings, where `baton init claude` installs the hooks",
            },
            Disabling {
                option: "--no-session-persistence",
                unless: None,
                why: "it keeps no session, so there is nothing to resume",
            },
        ]
    }

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
            "PreToolUse",
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
            "PreToolUse" => shell_call(payload),
            "PostToolUse" | "PostToolBatch" | "Notification" => Action::Ignored,
            _ => return None,
        })
    }

    fn session_source(&self) -> SessionSource {
        SessionSource::Variables(&["CLAUDE_CODE_SESSION_ID"])
    }

    fn pid_variable(&self) -> Option<&'static str> {
        Some("CLAUDE_PID")
    }

    /// `/goal` (2.1.332) keeps its goal in the transcript: an attachment line
    /// `{"type":"attachment","attachment":{"type":"goal_status","met":…,"condition":…}}` written
    /// when the goal is set (`sentinel: true, met: false`) or cleared by the user (`sentinel:
    /// true, met: true`), and after each check at a stop: not met (`met: false`), met (`met:
    /// true`), or given up as impossible (`failed: true`). The last one says what stands, as the
    /// client itself reads it. The check runs beside the stop hooks on the transcript as the
    /// stop found it, so a stop hook reads the goal as it stood before that check: the goal is
    /// judged at every stop while it stands, and a goal met is over.
    fn goal_source(&self) -> GoalSource {
        GoalSource::Transcript {
            marker: "\"goal_status\"",
        }
    }

    fn goal(&self, line: &str) -> Option<Option<ClientGoal>> {
        let entry: Value = serde_json::from_str(line).ok()?;
        let a = entry.get("attachment")?;
        if entry.get("type")?.as_str()? != "attachment" || a.get("type")?.as_str()? != "goal_status"
        {
            return None;
        }
        let flag = |k: &str| a.get(k).and_then(Value::as_bool).unwrap_or(false);
        let condition = a.get("condition").and_then(Value::as_str).unwrap_or("");
        if flag("met") || flag("failed") || condition.is_empty() {
            return Some(None);
        }
        // Each check writes a line of its own: the goal is the same while its condition is.
        Some(Some(ClientGoal {
            condition: condition.to_string(),
            mark: condition.to_string(),
        }))
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
            // A person's Ctrl-C: Claude Code writes it as the user's own line after the turn
            // it stopped, `[Request interrupted by user]` or `… for tool use]`.
            if entry.get("type").and_then(Value::as_str) == Some("user")
                && user_text(&entry).is_some_and(|t| t.starts_with("[Request interrupted by user"))
            {
                return TranscriptEnd::PersonStopped;
            }
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

    /// `claude [OPTIONS] --resume <session> <prompt>` (`--continue` when the session is not
    /// known), from a headless `claude [OPTIONS] -p "<task>"`: every option kept but those that
    /// picked a session.
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
        out.extend(
            args.iter()
                .enumerate()
                .filter(|(i, _)| *i != found.at && !dropped.contains(i))
                .map(|(_, a)| a.clone()),
        );
        match session {
            Some(s) => out.extend(["--resume".to_string(), s.to_string()]),
            None => out.push("--continue".into()),
        }
        if prompt.starts_with('-') {
            out.push("--".into());
        }
        out.push(prompt.into());
        Ok(out)
    }

    fn task_of(&self, argv: &[String], task: Option<&str>) -> Result<String, AgentCommandError> {
        let args = argv.get(1..).unwrap_or_default();
        Ok(locate(args, task)?.0.task)
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

const USAGE: &str = "claude [OPTIONS] -p \"<task>\"";

/// Claude Code's options (2.1.332: `claude --help`, and the hidden ones its parser knows), with
/// what each takes. Its parser is commander: a variadic option (`<tools...>`) takes every word
/// up to the next option, so a prompt written right after `--allowedTools Bash` is a tool.
pub const GRAMMAR: Grammar = Grammar {
    client: "Claude Code",
    options: &[&[
        ("--add-dir", Takes::Values),
        ("--agent", Takes::Value),
        ("--agents", Takes::Value),
        ("--allow-dangerously-skip-permissions", Takes::Nothing),
        ("--allowedTools", Takes::Values),
        ("--allowed-tools", Takes::Values),
        ("--append-system-prompt", Takes::Value),
        ("--append-system-prompt-file", Takes::Value),
        ("--autocompact", Takes::Value),
        ("--ax-screen-reader", Takes::Nothing),
        ("--bg", Takes::Nothing),
        ("--background", Takes::Nothing),
        ("--bare", Takes::Nothing),
        ("--betas", Takes::Values),
        ("--brief", Takes::Nothing),
        ("--chrome", Takes::Nothing),
        ("--cloud", Takes::Optional),
        ("-c", Takes::Nothing),
        ("--continue", Takes::Nothing),
        ("--dangerously-skip-permissions", Takes::Nothing),
        ("-d", Takes::Optional),
        ("--debug", Takes::Optional),
        ("--debug-file", Takes::Value),
        ("--desktop", Takes::Nothing),
        ("--disable-slash-commands", Takes::Nothing),
        ("--disallowedTools", Takes::Values),
        ("--disallowed-tools", Takes::Values),
        ("--effort", Takes::Value),
        ("--environment", Takes::Value),
        ("--exclude-dynamic-system-prompt-sections", Takes::Nothing),
        ("--fallback-model", Takes::Value),
        ("--file", Takes::Values),
        ("--fork-session", Takes::Nothing),
        ("--forward-subagent-text", Takes::Nothing),
        ("--from-pr", Takes::Optional),
        ("-h", Takes::Nothing),
        ("--help", Takes::Nothing),
        ("--ide", Takes::Nothing),
        ("--include-hook-events", Takes::Nothing),
        ("--include-partial-messages", Takes::Nothing),
        ("--input-format", Takes::Value),
        ("--json-schema", Takes::Value),
        ("--max-budget-usd", Takes::Value),
        ("--max-thinking-tokens", Takes::Value),
        ("--max-turns", Takes::Value),
        ("--mcp-config", Takes::Values),
        ("--model", Takes::Value),
        ("-n", Takes::Value),
        ("--name", Takes::Value),
        ("--no-chrome", Takes::Nothing),
        ("--no-session-persistence", Takes::Nothing),
        ("--output-format", Takes::Value),
        ("--permission-mode", Takes::Value),
        ("--permission-prompt-tool", Takes::Value),
        ("--permission-prompts", Takes::Value),
        ("--plugin-dir", Takes::Value),
        ("--plugin-url", Takes::Value),
        ("-p", Takes::Nothing),
        ("--print", Takes::Nothing),
        ("--prompt-suggestions", Takes::Optional),
        ("--remote-control", Takes::Optional),
        ("--remote-control-session-name-prefix", Takes::Value),
        ("--replay-user-messages", Takes::Nothing),
        ("--restricted", Takes::Nothing),
        ("-r", Takes::Optional),
        ("--resume", Takes::Optional),
        ("--resume-session-at", Takes::Value),
        ("--rewind-files", Takes::Value),
        ("--safe-mode", Takes::Nothing),
        ("--sdk-url", Takes::Value),
        ("--session-id", Takes::Value),
        ("--setting-sources", Takes::Value),
        ("--settings", Takes::Value),
        ("--strict-mcp-config", Takes::Nothing),
        ("--system-prompt", Takes::Value),
        ("--system-prompt-file", Takes::Value),
        ("--system-prompt-snapshot", Takes::Value),
        ("--teleport", Takes::Optional),
        ("--thinking", Takes::Value),
        ("--thinking-display", Takes::Value),
        ("--tmux", Takes::Nothing),
        ("--tools", Takes::Values),
        ("--verbose", Takes::Nothing),
        ("-v", Takes::Nothing),
        ("--version", Takes::Nothing),
        ("-w", Takes::Optional),
        ("--worktree", Takes::Optional),
    ]],
    inline_values_continue: false,
    flags_take_bools: false,
};

/// Claude Code's subcommands: a first argument naming one is not a prompt.
const SUBCOMMANDS: &[&str] = &[
    "agents",
    "attach",
    "auth",
    "auto-mode",
    "doctor",
    "gateway",
    "import",
    "install",
    "logs",
    "mcp",
    "plugin",
    "plugins",
    "purge",
    "respawn",
    "rm",
    "setup-token",
    "stop",
    "kill",
    "ultrareview",
    "update",
    "upgrade",
];

/// The options that pick a session: the relaunch names its own.
const SESSION_VALUED: &[&str] = &["--resume", "-r", "--session-id"];
const SESSION_FLAGS: &[&str] = &["--continue", "-c", "--fork-session"];

/// Where the task of `claude [OPTIONS] -p "<task>"` is (its one argument, in any place, `--`
/// included), and the words the relaunch drops (the session options, `--`).
fn locate(args: &[String], task: Option<&str>) -> Result<(TaskAt, Vec<usize>), AgentCommandError> {
    let headless = |words: &[Word]| {
        words
            .iter()
            .any(|w| matches!(w, Word::Option(o) if o == "-p" || o == "--print"))
    };
    let words = match GRAMMAR.scan(args, false) {
        Ok(words) => words,
        Err(e) => {
            // A command baton cannot read: the task as `--task` gives it, every other word kept.
            let Some(task) = task else {
                return Err(needs_task(e));
            };
            if !args.iter().any(|a| a == "-p" || a == "--print") {
                return Err(not_headless());
            }
            let found = given_task(args, task, &[], "claude")?;
            return Ok((found, session_words(args, SESSION_VALUED, SESSION_FLAGS)));
        }
    };
    if !headless(&words) {
        return Err(not_headless());
    }
    let arguments: Vec<usize> = (0..words.len())
        .filter(|i| words[*i] == Word::Argument)
        .collect();
    let found = match arguments.as_slice() {
        [one]
            if words.get(one.wrapping_sub(1)) != Some(&Word::EndOfOptions)
                && SUBCOMMANDS.contains(&args[*one].as_str()) =>
        {
            return Err(AgentCommandError(format!(
                "`claude {}` is a Claude Code subcommand, not a task: supervise runs `{USAGE}`",
                args[*one]
            )));
        }
        [one] => TaskAt {
            at: *one,
            prefix: String::new(),
            task: args[*one].clone(),
        },
        [] => return Err(no_task(args, &words)),
        _ => {
            return Err(AgentCommandError(format!(
                "Claude Code takes one prompt, and this command has {} words that are not options: quote the task as one argument (`{USAGE}`)",
                arguments.len()
            )));
        }
    };
    if let Some(t) = task
        && t != found.task
    {
        return Err(AgentCommandError(format!(
            "Claude Code reads {:?} as the task of this command, not the one `--task` gives",
            found.task
        )));
    }
    let dropped = (0..words.len())
        .filter(|i| match &words[*i] {
            Word::Option(o) | Word::Value(o) => {
                SESSION_VALUED.contains(&o.as_str()) || SESSION_FLAGS.contains(&o.as_str())
            }
            Word::EndOfOptions => true,
            Word::Argument => false,
        })
        .collect();
    Ok((found, dropped))
}

fn not_headless() -> AgentCommandError {
    AgentCommandError(format!(
        "supervise runs Claude Code headless: `{USAGE}` (add `-p`)"
    ))
}

/// Why no word of the command is its task: a variadic option took it, or there is none.
pub(super) fn no_task(args: &[String], words: &[Word]) -> AgentCommandError {
    let swallowed = words.iter().rev().find_map(|w| match w {
        Word::Value(o) if GRAMMAR.takes_values(o) => Some(o),
        _ => None,
    });
    match (swallowed, words.last()) {
        (Some(o), Some(Word::Value(_))) => AgentCommandError(format!(
            "Claude Code reads every word after `{o}` up to the next option as its values, so this command has no task (the last word, {:?}, is one of them): put the prompt before `{o}`, or after `--`",
            args.last().map(String::as_str).unwrap_or_default()
        )),
        _ => AgentCommandError(format!(
            "cannot find the task in the Claude Code command: give the prompt as its argument (`{USAGE}`)"
        )),
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

/// The text of a user line: its `message.content` as a string, or its first text part.
fn user_text(entry: &Value) -> Option<&str> {
    let content = entry.pointer("/message/content")?;
    content.as_str().or_else(|| {
        content.as_array()?.iter().find_map(|part| {
            (part["type"] == "text")
                .then(|| part["text"].as_str())
                .flatten()
        })
    })
}

/// `disableAllHooks` in the project's Claude Code settings, its local ones and the user's.
/// Copilot CLI reads the project's two as well.
pub(super) const CLAUDE_SWITCHES: [HookSwitch; 3] = [
    HookSwitch {
        file: SwitchFile::Project(".claude/settings.json"),
        key: "/disableAllHooks",
        off: true,
    },
    HookSwitch {
        file: SwitchFile::Project(".claude/settings.local.json"),
        key: "/disableAllHooks",
        off: true,
    },
    HookSwitch {
        file: SwitchFile::User(".claude/settings.json"),
        key: "/disableAllHooks",
        off: true,
    },
];

/// A pre-tool payload's shell command (`tool_name: "Bash"`, `tool_input.command`), as Claude
/// Code and Codex send it; any other tool is nothing to the guard.
pub fn shell_call(payload: &Map<String, Value>) -> Action {
    let command = payload
        .get("tool_input")
        .and_then(|i| i.get("command"))
        .and_then(Value::as_str);
    match (payload.get("tool_name").and_then(Value::as_str), command) {
        (Some("Bash"), Some(command)) => Action::ToolCall {
            command: command.to_string(),
            dir: None,
        },
        _ => Action::Ignored,
    }
}
