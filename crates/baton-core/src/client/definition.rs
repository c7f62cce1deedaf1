//! What an agent client is to baton, as one trait every client implements: how its hook
//! payloads map to baton's actions, where a tool call's session id comes from, how the client
//! takes context at session start, what counts as evidence of how a turn ended, the command
//! that resumes a session, and where its settings live and how baton's entries merge into them.

use jiff::Timestamp;
use jiff::tz::TimeZone;
use serde_json::{Map, Value, json};

/// One agent client (Claude Code, Codex, Gemini CLI): everything about it that differs from
/// another client. `Client::def` gives a client's definition; whatever depends on the client
/// (the hook adapter, `baton init`, the settings and the session of a tool call, the lease
/// holder, `baton supervise`) reads it from there.
pub trait Definition: Sync {
    /// The name on baton's command line and in its hook commands: `claude`.
    fn name(&self) -> &'static str;
    /// The product's own name, for messages: `Claude Code`.
    fn title(&self) -> &'static str;
    /// The names its process goes by (the executable, or the script `node` runs).
    fn programs(&self) -> &'static [&'static str];

    /// The hook events baton installs, by the client's own names.
    fn hook_events(&self) -> &'static [&'static str];
    /// The timeout baton's handler for `event` declares, in the client's own unit.
    fn hook_timeout(&self, event: &str) -> u64;
    /// How the client reads its hook settings file.
    fn settings_dialect(&self) -> Dialect {
        Dialect::Json
    }
    /// How the client's hook settings hold an event's handlers.
    fn settings_shape(&self) -> SettingsShape {
        SettingsShape::Groups
    }
    /// The payload fields that name the session, the first present one counting.
    fn session_id_fields(&self) -> &'static [&'static str] {
        &["session_id"]
    }
    /// The payload field that names the event, which must be the hook's own; `None` for a
    /// client whose payloads name none (the event is then the one the hook command names).
    fn event_field(&self) -> Option<&'static str> {
        Some("hook_event_name")
    }
    /// The keys of the payload's other fields: the transcript, the directory, the prompt.
    fn payload_keys(&self) -> PayloadKeys {
        PayloadKeys::SNAKE_CASE
    }
    /// What the client's hook event `event` asks of baton, from its payload; `None` for an
    /// event the client does not send.
    fn action(&self, event: &str, payload: &Map<String, Value>) -> Option<Action>;
    /// What a session-start hook prints so that the client puts `context` in front of the
    /// model.
    fn session_start_output(&self, context: &str) -> String {
        additional_context("SessionStart", context)
    }
    /// What a prompt hook (`event`) prints so that the client adds `context` to the turn.
    fn turn_context(&self, event: &str, context: &str) -> String {
        additional_context(event, context)
    }
    /// The matcher of baton's group for `event` (a pre-tool hook runs only for the shell tool);
    /// `None`: no matcher, every call.
    fn hook_matcher(&self, _event: &str) -> Option<&'static str> {
        None
    }
    /// How the client's pre-tool hook refuses a tool call, with `reason` for the model;
    /// `None` for an event that cannot.
    fn tool_refusal(&self, _event: &str, _reason: &str) -> Option<String> {
        None
    }
    /// What a stop hook (`event`) prints to refuse the stop, so that the client goes on with
    /// `reason` in front of the model; `None` for a client whose stop cannot be refused (the
    /// verdict then reaches the session at its next prompt and start).
    fn stop_refusal(&self, _event: &str, _reason: &str) -> Option<String> {
        None
    }

    /// Where a tool call run by the client finds its session.
    fn session_source(&self) -> SessionSource;
    /// The environment variable through which the client names its own process to its hooks,
    /// if it has one; without it, the process is the nearest of the client's among the hook's
    /// ancestors.
    fn pid_variable(&self) -> Option<&'static str> {
        None
    }
    /// Whether the process that sent `payload` serves many sessions and outlives each (OpenCode
    /// 2.x's shared server): its pid then says nothing of the session, and none is recorded.
    fn process_shared(&self, _payload: &Map<String, Value>) -> bool {
        false
    }
    /// For a client whose tool calls get their session only from baton's own plugin: what
    /// fixes a tool call (one with `pid_variable` set) that has none. Work started there is
    /// refused rather than recorded under no session.
    fn sessionless_tool_call_fix(&self) -> Option<&'static str> {
        None
    }

    /// Where the evidence of how a dead turn ended is kept, besides a failure hook.
    fn evidence(&self) -> Evidence {
        Evidence::Transcript
    }
    /// What the tail of the client's transcript says about how its last turn ended, with the
    /// reset its fields state (read at `now`; `zone` is the machine's local zone, for a clock
    /// time that names none).
    fn transcript_end(&self, _tail: &str, _now: Timestamp, _zone: &TimeZone) -> TranscriptEnd {
        TranscriptEnd::Unknown
    }
    /// Where the client keeps the goal its session works toward (Claude Code's `/goal`, Codex's
    /// goal), which the stop hook reads.
    fn goal_source(&self) -> GoalSource {
        GoalSource::None
    }
    /// The goal a transcript line records (`GoalSource::Transcript`): `Some(None)` when the line
    /// says no goal stands (cleared, met, given up), `None` when the line is no goal record.
    fn goal(&self, _line: &str) -> Option<Option<ClientGoal>> {
        None
    }
    /// The goal a row of the client's goal table records (`GoalSource::ThreadGoals`): its id,
    /// objective and status; `None` when it is not pursued.
    fn goal_row(&self, _id: &str, _objective: &str, _status: &str) -> Option<ClientGoal> {
        None
    }
    /// Where the session's transcript is when the payload names none (Copilot CLI's session
    /// end): a path under the client's user directory (`user_dir`), with `{session}` for the
    /// session's id.
    fn session_transcript(&self) -> Option<&'static str> {
        None
    }
    /// How long a session-end hook with `reason` waits for the client to write how the dead
    /// turn ended into its transcript (Copilot CLI writes it just after starting the hook).
    fn transcript_wait(&self, _reason: &str) -> std::time::Duration {
        std::time::Duration::ZERO
    }
    /// What one of the client's error reports (`Evidence::ErrorReports`) says about a turn of
    /// the project at `project_root`, with the reset its error states.
    fn error_report(
        &self,
        _report: &str,
        _project_root: &str,
        _now: Timestamp,
        _zone: &TimeZone,
    ) -> TranscriptEnd {
        TranscriptEnd::Unknown
    }

    /// The command that resumes the session `session` (the latest in the project when it is
    /// not known) of the headless command `argv`, with `prompt` in place of its task: every
    /// other option of `argv` is kept, except those that picked a session. `task` is the task
    /// as `supervise --task` gave it, for a command baton cannot read by itself.
    fn resume_command(
        &self,
        argv: &[String],
        task: Option<&str>,
        session: Option<&str>,
        prompt: &str,
    ) -> Result<Vec<String>, AgentCommandError>;
    /// The task of the headless command `argv`, found as the client's own parser finds it (or
    /// as `task` names it); an error says why it cannot be found and how to fix the command.
    fn task_of(&self, argv: &[String], task: Option<&str>) -> Result<String, AgentCommandError>;
    /// The settings that switch all of the client's hooks off, baton's included, where the
    /// client reads them (`baton doctor` names each one set).
    fn hook_switches(&self) -> &'static [HookSwitch] {
        &[]
    }
    /// The options of a headless command that leave supervise nothing to do: they switch off
    /// the client's hooks (or baton's plugin), or keep no session to resume. Each is the
    /// option as the client spells it, the values that make it so when it takes one (the
    /// option counts only when its value holds none of `unless`), and why.
    fn disabling_options(&self) -> &'static [Disabling] {
        &[]
    }
    /// Whether a session can be resumed when nothing of it was answered (its first request
    /// refused): when not, the relaunch of such a session starts a new one, told the task again.
    fn keeps_unanswered_sessions(&self) -> bool {
        true
    }

    /// The environment variable through which the client names its project directory (the
    /// directory it was started in) to its hooks, if it has one. A hook runs in the session's
    /// current directory, which the agent may have moved into a nested repository; the project
    /// is where the client started.
    fn project_dir_variable(&self) -> Option<&'static str> {
        None
    }
    /// Which directories the client reads a project's settings from.
    fn settings_scope(&self) -> SettingsScope {
        SettingsScope::StartDir
    }

    /// The files `baton init` edits, relative to the directory the client reads a project's
    /// settings from (`settings_scope`), or to the user's directory (`user_dir`) with `--user`.
    fn files(&self, user: bool) -> Files;
    /// The user's directory of the client.
    fn user_dir(&self) -> UserDir {
        UserDir::Home
    }
    /// The form the guide for the agent takes.
    fn instructions(&self) -> Instructions {
        Instructions::Block
    }
    /// Whether the client runs a hook only once trusted, per handler, in `config.toml` in its
    /// user directory (Codex).
    fn keeps_hook_trust(&self) -> bool {
        false
    }
    /// What `baton init` says when the project is not trusted yet (with `keeps_hook_trust`).
    fn untrusted_project_note(&self) -> Option<&'static str> {
        None
    }
    /// What the user has to do after `baton init` that baton cannot, for this client.
    fn init_notes(&self, _user: bool) -> &'static [&'static str] {
        &[]
    }
}

/// `{"hookSpecificOutput": {"hookEventName": …, "additionalContext": …}}`, the form Claude
/// Code, Codex and Gemini CLI all read (Gemini CLI injects only this JSON form; plain stdout is
/// shown to the user, not the model).
pub fn additional_context(event: &str, context: &str) -> String {
    json!({
        "hookSpecificOutput": {
            "hookEventName": event,
            "additionalContext": context,
        }
    })
    .to_string()
}

/// `{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", …}}`:
/// how Claude Code and Codex refuse a tool call, the reason shown to the model.
pub fn deny_tool(event: &str, reason: &str) -> String {
    json!({
        "hookSpecificOutput": {
            "hookEventName": event,
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }
    })
    .to_string()
}

/// `{"decision": "deny", "reason": …}`: how Gemini CLI's `BeforeTool` and Antigravity's
/// `PreToolUse` refuse a tool call.
pub fn deny_decision(reason: &str) -> String {
    json!({ "decision": "deny", "reason": reason }).to_string()
}

/// What a hook event asks of baton, whichever client sent it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// A session starts (`startup`, `resume`, `clear`, `compact`): hand it the packet.
    SessionStart { source: String },
    /// A prompt was submitted: a turn is open until its stop hook (Codex and Gemini have no
    /// failure hook, so a turn never closed is how a failed turn shows).
    TurnOpen,
    /// A turn ended normally: heartbeat what this session owns; never an interrupt.
    TurnEnd,
    /// The agent is about to run this shell command (a pre-tool hook), in `dir` when the call
    /// names one (relative to the payload's `cwd`): the guard of shared checkouts reads it
    /// (`baton_core::guard`).
    ToolCall {
        command: String,
        dir: Option<String>,
    },
    /// An API error ended the turn (Claude Code's StopFailure), with the error it names (a
    /// subscription limit is `rate_limit`, an overloaded API `overloaded`, whatever the client
    /// sent with them) and the message shown for it (which may say when a limit resets).
    Failure { error: String, message: String },
    /// The session ends; `terminal` is false for a reason that continues it (Claude Code's
    /// `resume`).
    SessionEnd { reason: String, terminal: bool },
    /// Before a compaction: a checkpoint. Gemini sends it before every model call.
    Checkpoint,
    /// An event baton has nothing to do for (tool calls, model calls).
    Ignored,
}

/// The keys of a payload's envelope, which differ by client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PayloadKeys {
    pub transcript_path: &'static str,
    pub cwd: &'static str,
    pub prompt: &'static str,
}

impl PayloadKeys {
    /// `transcript_path`, `cwd`, `prompt`: Claude Code, Codex, Gemini CLI.
    pub const SNAKE_CASE: PayloadKeys = PayloadKeys {
        transcript_path: "transcript_path",
        cwd: "cwd",
        prompt: "prompt",
    };
}

/// A payload's string field, empty when it is missing or not a string.
/// `{"decision": "block", "reason": …}`: how Claude Code and Codex refuse a stop (the reason
/// becomes the model's next instruction).
pub fn block_stop(reason: &str) -> String {
    serde_json::json!({ "decision": "block", "reason": reason }).to_string()
}

pub fn field(payload: &Map<String, Value>, key: &str) -> String {
    payload
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// What a transcript's tail (or an error report) says about how the last turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TranscriptEnd {
    /// An API rate limit (HTTP 429, or a plan's usage limit) ended the last turn; `resets` is
    /// when it resets, when the evidence says so.
    RateLimit { resets: Option<Timestamp> },
    /// A person stopped the turn (Claude Code's `[Request interrupted by user…]`): the work
    /// was left on purpose, not lost to a crash.
    PersonStopped,
    /// Nothing in the tail says the turn failed.
    Unknown,
}

/// Where a client keeps its session's goal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GoalSource {
    None,
    /// In the session's transcript: the last line holding `marker` that `Definition::goal`
    /// reads, read from the end.
    Transcript {
        marker: &'static str,
    },
    /// In a SQLite file under the client's user directory (`user_dir`), table `thread_goals`,
    /// one row per session (`thread_id`) that `Definition::goal_row` reads.
    ThreadGoals {
        file: &'static str,
    },
}

/// The goal a session works toward, as its client records it (Claude Code's `/goal`, Codex's
/// goal), while it stands: pursued, or held met by the model alone, before any check of the
/// client's own that baton's judge does not precede.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientGoal {
    /// The condition (the objective) as the user gave it.
    pub condition: String,
    /// What changes each time the client records the goal anew (the record's id or time): a
    /// goal the judge has taken up once is not taken up again until it changes.
    pub mark: String,
}

/// A setting that switches all of a client's hooks off (`Definition::hook_switches`).
#[derive(Debug, Clone, Copy)]
pub struct HookSwitch {
    /// The settings file: relative to the project's root, or to the client's user directory.
    pub file: SwitchFile,
    /// Where in it: a JSON pointer (`/disableAllHooks`), or in a `.toml` file a dotted key
    /// (`features.hooks`).
    pub key: &'static str,
    /// The value that switches the hooks off.
    pub off: bool,
}

#[derive(Debug, Clone, Copy)]
pub enum SwitchFile {
    Project(&'static str),
    User(&'static str),
}

/// An option that leaves supervise nothing to do (`Definition::disabling_options`).
#[derive(Debug, Clone, Copy)]
pub struct Disabling {
    pub option: &'static str,
    /// For an option that takes a value: it disables only when its value names none of these
    /// (Claude Code's `--setting-sources user` reads no project settings, so no project hooks).
    pub unless: Option<&'static [&'static str]>,
    pub why: &'static str,
}

/// How the client reads its settings: strict JSON, or JSON whose comments it strips first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Json,
    JsonWithComments,
}

/// How a client's hook settings hold the handlers of one event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SettingsShape {
    /// Groups of handlers, each group with an optional `matcher` and its `hooks` array of
    /// `{"type": "command", "command": …, "timeout": …}` (Claude Code, Codex, Gemini CLI).
    Groups,
    /// Each entry of the event's array is one handler, `{"command": …}`, and the file carries
    /// a top-level `version` (Cursor's `hooks.json`).
    Flat { version: u64 },
    /// The top level is an object of named hooks, each an object of events whose arrays hold
    /// handlers `{"type": "command", "command": …, "timeout": …}` (Antigravity's
    /// `hooks.json`): baton's handlers are all in the one named `name`.
    Named { name: &'static str },
    /// `{"version": 1, "hooks": {"<event>": [{"type": "command", "bash": …, "timeoutSec": …}]}}`
    /// (Copilot CLI), in a hook file of baton's own beside the user's.
    Handlers,
    /// No hook settings: a plugin module of baton's own that the client loads and that calls
    /// baton's hook on the client's events (OpenCode's `.opencode/plugins/baton.js`).
    Plugin,
}

/// Where a tool call finds the session of the client that runs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionSource {
    /// The client sets one of these variables (the first set one counts) in its tool calls.
    Variables(&'static [&'static str]),
    /// The client sets no session variable, only `marker`: the session is the one its
    /// session-start hook recorded for the client process.
    Recorded { marker: &'static str },
}

/// Where the evidence of a dead turn is, besides a failure hook.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Evidence {
    /// The tail of the transcript the payload names (`transcript_path`).
    Transcript,
    /// Error reports the client writes into the temporary directory, named
    /// `<prefix>…<suffix>`.
    ErrorReports {
        prefix: &'static str,
        suffix: &'static str,
    },
}

/// The files `baton init` edits: the hook settings and the guide for the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Files {
    pub settings: &'static str,
    pub instructions: &'static str,
}

/// Which directories a client reads a project's settings from, when it is started somewhere
/// inside a repository (a package of a monorepo).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SettingsScope {
    /// Only the directory it is started in (Claude Code, Gemini CLI): started in
    /// `packages/app`, it reads `packages/app/.claude/settings.json` and not the root's.
    StartDir,
    /// Every directory from the one it is started in up to the repository's root (Codex):
    /// settings at the root reach every directory below it.
    UpToRoot,
}

/// The client's directory for the user's own settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UserDir {
    /// `$HOME`.
    Home,
    /// `$<variable>` when set (relative to the working directory), else `$HOME/<default>`.
    Variable {
        variable: &'static str,
        default: &'static str,
    },
}

/// The form of the guide `baton init` installs for the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Instructions {
    /// A skill file of baton's own.
    Skill,
    /// A marked block inside the client's instruction file, beside the user's text.
    Block,
}

/// Why an agent command cannot be supervised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentCommandError(pub String);
