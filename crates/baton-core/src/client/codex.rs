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

use super::argv::{Grammar, Takes, TaskAt, Word, given_task};
use super::definition::{
    Action, AgentCommandError, ClientGoal, Definition, Disabling, Files, GoalSource, HookSwitch,
    SessionSource, SettingsScope, SwitchFile, TranscriptEnd, UserDir, field,
};

pub struct Codex;

const USAGE: &str = "codex exec [OPTIONS] \"<task>\"";

impl Definition for Codex {
    fn stop_refusal(&self, event: &str, reason: &str) -> Option<String> {
        (event == "Stop").then(|| super::definition::block_stop(reason))
    }

    /// Only the shell tool, which the pre-tool payload names `Bash` (Codex's `exec_command` too).
    fn hook_matcher(&self, event: &str) -> Option<&'static str> {
        (event == "PreToolUse").then_some("Bash")
    }

    fn tool_refusal(&self, event: &str, reason: &str) -> Option<String> {
        (event == "PreToolUse").then(|| super::definition::deny_tool(event, reason))
    }

    /// 0.171.0 keeps a thread's goal (set by the user's `/goal`, or by the model's
    /// `create_goal`, and marked `complete` by the model's `update_goal`) in one row per thread
    /// of `thread_goals` in `$CODEX_HOME/goals_1.sqlite`, keyed by the session id. The
    /// transcript records only some of its changes (never the model's), and the stop payload
    /// none.
    fn goal_source(&self) -> GoalSource {
        GoalSource::ThreadGoals {
            file: "goals_1.sqlite",
        }
    }

    /// A goal is pursued while `active`, and claimed by the model alone when `complete`; one
    /// `paused`, `blocked`, `usage_limited` or `budget_limited` is not pursued. Its mark is its
    /// id and status: each change of status is taken up once.
    fn goal_row(&self, id: &str, objective: &str, status: &str) -> Option<ClientGoal> {
        matches!(status, "active" | "complete").then(|| ClientGoal {
            condition: objective.to_string(),
            mark: format!("{id} {status}"),
        })
    }

    /// `[features] hooks = false` (developers.openai.com/codex/hooks: "Hooks are enabled by
    /// default"), and its older name `codex_hooks`.
    fn hook_switches(&self) -> &'static [HookSwitch] {
        &[
            HookSwitch {
                file: SwitchFile::User("config.toml"),
                key: "features.hooks",
                off: false,
            },
            HookSwitch {
                file: SwitchFile::User("config.toml"),
                key: "features.codex_hooks",
                off: false,
            },
        ]
    }

    fn disabling_options(&self) -> &'static [Disabling] {
        &[Disabling {
            option: "--ephemeral",
            unless: None,
            why: "an ephemeral run keeps no session, so there is nothing to resume",
        }]
    }

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
            "PreToolUse",
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
            "PreToolUse" => super::claude::shell_call(payload),
            "PostToolUse" | "PostCompact" => Action::Ignored,
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

    /// `codex [OPTIONS] exec [OPTIONS] resume <session> <prompt>` (`--last` when the session
    /// is not known), from a headless `codex [OPTIONS] exec [OPTIONS] "<task>"`: every option
    /// kept, exec's own (written before or after the task) before `resume`.
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
        let read = locate(args, task)?;
        let mut out = vec![program.clone()];
        out.extend(args[..=read.exec].iter().cloned());
        let kept: Vec<(usize, &String)> = args
            .iter()
            .enumerate()
            .skip(read.exec + 1)
            .filter(|(i, _)| *i != read.task.at && !read.dropped.contains(i))
            .collect();
        // A variadic option written last would take `resume` as one of its values: its values
        // are then written `--name=value` each, which Codex reads the same and ends there.
        let tail = match &read.words {
            Some(words) => {
                let last_option = kept
                    .iter()
                    .rposition(|(i, _)| matches!(words[*i], Word::Option(_)));
                match last_option.map(|k| (k, &words[kept[k].0])) {
                    Some((k, Word::Option(name)))
                        if EXEC.takes_values(name) && k + 1 < kept.len() =>
                    {
                        Some((k, long_name(name)))
                    }
                    _ => None,
                }
            }
            None => None,
        };
        match tail {
            Some((k, long)) => {
                out.extend(kept[..k].iter().map(|(_, a)| (*a).clone()));
                out.extend(kept[k + 1..].iter().map(|(_, v)| format!("{long}={v}")));
            }
            None => out.extend(kept.iter().map(|(_, a)| (*a).clone())),
        }
        out.push("resume".into());
        match session {
            Some(s) => out.push(s.to_string()),
            None => out.push("--last".into()),
        }
        if prompt.starts_with('-') {
            out.push("--".into());
        }
        out.push(prompt.into());
        Ok(out)
    }

    fn task_of(&self, argv: &[String], task: Option<&str>) -> Result<String, AgentCommandError> {
        let args = argv.get(1..).unwrap_or_default();
        Ok(locate(args, task)?.task.task)
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

/// The options Codex takes both before its subcommand and after `exec` (0.171.0, `codex
/// --help` and `codex exec --help`).
const COMMON: &[(&str, Takes)] = &[
    ("-c", Takes::Value),
    ("--config", Takes::Value),
    ("--enable", Takes::Value),
    ("--disable", Takes::Value),
    ("--remote", Takes::Value),
    ("--remote-auth-token-env", Takes::Value),
    ("--strict-config", Takes::Nothing),
    ("-i", Takes::Values),
    ("--image", Takes::Values),
    ("-m", Takes::Value),
    ("--model", Takes::Value),
    ("--oss", Takes::Nothing),
    ("--local-provider", Takes::Value),
    ("-p", Takes::Value),
    ("--profile", Takes::Value),
    ("-s", Takes::Value),
    ("--sandbox", Takes::Value),
    ("--approve-for-me", Takes::Nothing),
    ("--dangerously-bypass-approvals-and-sandbox", Takes::Nothing),
    ("--dangerously-bypass-hook-trust", Takes::Nothing),
    ("-C", Takes::Value),
    ("--cd", Takes::Value),
    ("--worktree", Takes::Nothing),
    ("--add-dir", Takes::Value),
    ("-h", Takes::Nothing),
    ("--help", Takes::Nothing),
    ("-V", Takes::Nothing),
    ("--version", Takes::Nothing),
];

/// Codex's options before its subcommand (0.171.0, `codex --help`), with what each takes. Its
/// parser is clap: `--image <FILE>...` takes every word up to the next option.
pub const GRAMMAR: Grammar = Grammar {
    client: "Codex",
    options: &[
        COMMON,
        &[
            ("-a", Takes::Value),
            ("--ask-for-approval", Takes::Value),
            ("--search", Takes::Nothing),
            ("--no-alt-screen", Takes::Nothing),
            ("--no-daemon", Takes::Nothing),
        ],
    ],
    inline_values_continue: false,
    flags_take_bools: false,
};

/// The options of `codex exec` (0.171.0, `codex exec --help`).
pub const EXEC: Grammar = Grammar {
    client: "Codex",
    options: &[
        COMMON,
        &[
            ("--thread-source", Takes::Value),
            ("--cyber-access-program", Takes::Value),
            ("--skip-git-repo-check", Takes::Nothing),
            ("--trust", Takes::Nothing),
            ("--ephemeral", Takes::Nothing),
            ("--ignore-user-config", Takes::Nothing),
            ("--ignore-rules", Takes::Nothing),
            ("--output-schema", Takes::Value),
            ("--color", Takes::Value),
            ("--json", Takes::Nothing),
            ("-o", Takes::Value),
            ("--output-last-message", Takes::Value),
        ],
    ],
    inline_values_continue: false,
    flags_take_bools: false,
};

/// `exec`'s subcommands: a first argument naming one is not a prompt.
const EXEC_SUBCOMMANDS: &[&str] = &["resume", "fork", "review", "help"];

/// The long name of exec's one variadic option, `-i`/`--image`.
fn long_name(_name: &str) -> &'static str {
    "--image"
}

/// A Codex command as supervise reads it.
struct Read {
    /// The index of `exec` in the arguments.
    exec: usize,
    task: TaskAt,
    /// What each word after `exec` is, when baton could read them all.
    words: Option<Vec<Word>>,
    /// Words the relaunch drops (`--`).
    dropped: Vec<usize>,
}

/// Where the task of `codex [OPTIONS] exec [OPTIONS] "<task>"` is: exec's one argument,
/// options before or after it.
fn locate(args: &[String], task: Option<&str>) -> Result<Read, AgentCommandError> {
    let top = GRAMMAR
        .scan(args, true)
        .map_err(|e| with_task_hint(e, task))?;
    let exec = match top.last() {
        Some(Word::Argument) if matches!(args[top.len() - 1].as_str(), "exec" | "e") => {
            top.len() - 1
        }
        _ => {
            return Err(AgentCommandError(format!(
                "supervise runs Codex headless: `{USAGE}`"
            )));
        }
    };
    let rest = &args[exec + 1..];
    if rest.first().is_some_and(|a| a == "resume") {
        return Err(resume_given());
    }
    let words = match EXEC.scan(rest, false) {
        Ok(words) => words,
        Err(e) => {
            let Some(task) = task else {
                return Err(with_task_hint(e, None));
            };
            let mut found = given_task(rest, task, &[], "codex")?;
            found.at += exec + 1;
            return Ok(Read {
                exec,
                task: found,
                words: None,
                dropped: Vec::new(),
            });
        }
    };
    let arguments: Vec<usize> = (0..words.len())
        .filter(|i| words[*i] == Word::Argument)
        .collect();
    let first_is_sub = |i: usize| {
        words.get(i.wrapping_sub(1)) != Some(&Word::EndOfOptions)
            && EXEC_SUBCOMMANDS.contains(&rest[i].as_str())
    };
    let at = match arguments.as_slice() {
        [first, ..] if first_is_sub(*first) && rest[*first] == "resume" => {
            return Err(resume_given());
        }
        [first, ..] if first_is_sub(*first) => {
            return Err(AgentCommandError(format!(
                "`codex exec {}` does not start a task: supervise runs `{USAGE}`",
                rest[*first]
            )));
        }
        [one] if rest[*one] == "-" => {
            return Err(AgentCommandError(
                "the task of this Codex command is read from stdin (`-`), which supervise cannot give again: put the prompt in the command".into(),
            ));
        }
        [one] => *one,
        [] => {
            let swallowed = words.iter().rev().find_map(|w| match w {
                Word::Value(o) if o == "-i" || o == "--image" => Some(o.clone()),
                _ => None,
            });
            return Err(AgentCommandError(match swallowed {
                Some(o) if matches!(words.last(), Some(Word::Value(_))) => format!(
                    "Codex reads every word after `{o}` up to the next option as an image, so this command has no task: put the prompt before `{o}`, or after `--`"
                ),
                _ => format!("cannot find the task in the Codex command: `{USAGE}`"),
            }));
        }
        _ => {
            return Err(AgentCommandError(format!(
                "`codex exec` takes one prompt, and this command has {} words that are not options: quote the task as one argument (`{USAGE}`)",
                arguments.len()
            )));
        }
    };
    if let Some(t) = task
        && t != rest[at]
    {
        return Err(AgentCommandError(format!(
            "Codex reads {:?} as the task of this command, not the one `--task` gives",
            rest[at]
        )));
    }
    let dropped = (0..words.len())
        .filter(|i| words[*i] == Word::EndOfOptions)
        .map(|i| i + exec + 1)
        .collect();
    let mut all = top;
    all.extend(words);
    Ok(Read {
        exec,
        task: TaskAt {
            at: at + exec + 1,
            prefix: String::new(),
            task: rest[at].clone(),
        },
        words: Some(all),
        dropped,
    })
}

fn with_task_hint(e: AgentCommandError, task: Option<&str>) -> AgentCommandError {
    match task {
        Some(_) => e,
        None => super::argv::needs_task(e),
    }
}

fn resume_given() -> AgentCommandError {
    AgentCommandError(
        "give supervise the command that starts the task (`codex exec \"<task>\"`); it writes the resume form itself".into(),
    )
}
