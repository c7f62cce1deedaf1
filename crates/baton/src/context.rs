//! The facts every command may need from its surroundings, read once at the edge: the working
//! directory, the session id, the clock.

use std::path::PathBuf;

use std::time::Duration;

use jiff::Timestamp;

use crate::error::CommandError;
use baton_store::lock::DEFAULT_LOCK_WAIT;
use baton_store::{FsStore, Layout};

pub struct Ctx {
    pub dir: PathBuf,
    pub session: Option<String>,
    pub now: Timestamp,
    /// How long to wait for a state file's lock (`BATON_LOCK_WAIT`) before giving up, exit 3.
    pub lock_wait: Duration,
}

impl Ctx {
    /// `-C`, `--session` (else `BATON_SESSION`, else the session of the agent client whose
    /// tool call this is: `client_session`) and `BATON_NOW`.
    pub fn from_env(dir: Option<PathBuf>, session: Option<String>) -> Result<Ctx, CommandError> {
        let dir = match dir {
            Some(dir) => dir,
            None => std::env::current_dir().map_err(|e| {
                CommandError::usage(format!("cannot read the working directory: {e}"))
            })?,
        };
        // The originating shell writes the literal `null` for a missing session id; an empty or
        // `null` value is no session, and hides nothing behind it.
        let given = |s: &String| !s.is_empty() && s != "null";
        let session = session
            .filter(given)
            .or_else(|| std::env::var("BATON_SESSION").ok().filter(given))
            .or_else(|| client_session(&dir));
        let now = match std::env::var("BATON_NOW") {
            Ok(raw) if !raw.is_empty() => raw.parse::<Timestamp>().map_err(|e| {
                CommandError::usage(format!(
                    "BATON_NOW={raw:?} is not an RFC 3339 timestamp: {e}"
                ))
                .hint("set it like `BATON_NOW=2026-01-31T09:30:00Z`, or unset it to use the clock")
            })?,
            _ => Timestamp::now(),
        };
        let lock_wait = match std::env::var("BATON_LOCK_WAIT") {
            Ok(raw) if !raw.is_empty() => parse_wait(&raw).ok_or_else(|| {
                CommandError::usage(format!(
                    "BATON_LOCK_WAIT={raw:?} is not a duration"
                ))
                .hint("set it like `BATON_LOCK_WAIT=5s` or `BATON_LOCK_WAIT=250ms`, or unset it for the default 5s")
            })?,
            _ => DEFAULT_LOCK_WAIT,
        };
        Ok(Ctx {
            dir,
            session,
            now,
            lock_wait,
        })
    }

    pub fn session(&self) -> Option<&str> {
        self.session.as_deref()
    }

    pub fn layout(&self) -> Result<Layout, CommandError> {
        Ok(Layout::discover(
            &self.dir,
            std::env::var_os("BATON_STATE_DIR"),
        )?)
    }

    pub fn store(&self) -> Result<FsStore, CommandError> {
        let mut store = FsStore::new(self.layout()?);
        store.lock_wait = self.lock_wait;
        Ok(store)
    }
}

/// The session of the agent client whose tool call this is. Claude Code sets
/// `CLAUDE_CODE_SESSION_ID` in its tool calls and Codex `CODEX_SESSION_ID` and
/// `CODEX_THREAD_ID`; Gemini CLI sets none (only `GEMINI_CLI=1`), but a tool call runs under the
/// same client process as the hooks, and the session-start hook recorded that process's session
/// (`baton hook gemini SessionStart`). When one client runs inside another (a delegate started
/// from a tool call), both leave their marks in the environment: the nearest agent process among
/// this one's ancestors says whose tool call it is.
fn client_session(dir: &std::path::Path) -> Option<String> {
    let given = |s: &String| !s.is_empty() && s != "null";
    let var = |name: &str| std::env::var(name).ok().filter(given);
    let claude = var("CLAUDE_CODE_SESSION_ID");
    let codex = var("CODEX_SESSION_ID").or_else(|| var("CODEX_THREAD_ID"));
    let gemini = std::env::var_os("GEMINI_CLI").is_some();
    let marks = usize::from(claude.is_some()) + usize::from(codex.is_some()) + usize::from(gemini);
    if marks == 1 && !gemini {
        return claude.or(codex);
    }
    if marks == 0 {
        return None;
    }
    match baton_store::process::agent_ancestor_named() {
        Some((_, "claude")) => claude,
        Some((_, "codex")) => codex,
        Some((pid, _)) if gemini => gemini_session(dir, pid),
        // No agent process to be seen: the variables alone, Claude Code's first.
        _ => claude.or(codex),
    }
}

/// The session a Gemini CLI session-start hook recorded for client process `pid`.
fn gemini_session(dir: &std::path::Path, pid: u32) -> Option<String> {
    let start = baton_store::process::start_time(pid)?;
    let layout = Layout::discover(dir, std::env::var_os("BATON_STATE_DIR")).ok()?;
    baton_store::sessions::session_of_process(&layout, pid, start)
}

/// `250ms`, `5s`, `1m`, or bare seconds.
pub fn parse_wait(raw: &str) -> Option<Duration> {
    let raw = raw.trim();
    let (num, unit) = raw.split_at(raw.trim_end_matches(char::is_alphabetic).len());
    let n: f64 = num
        .parse()
        .ok()
        .filter(|n: &f64| n.is_finite() && *n >= 0.0)?;
    let secs = match unit {
        "ms" => n / 1000.0,
        "" | "s" => n,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        _ => return None,
    };
    Duration::try_from_secs_f64(secs).ok()
}
