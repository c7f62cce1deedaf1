//! The facts every command may need from its surroundings, read once at the edge: the working
//! directory, the session id, the clock.

use std::path::PathBuf;

use jiff::Timestamp;

use crate::error::CommandError;
use baton_store::{FsStore, Layout};

pub struct Ctx {
    pub dir: PathBuf,
    pub session: Option<String>,
    pub now: Timestamp,
}

impl Ctx {
    /// `-C`, `--session` (else `BATON_SESSION`, else `CLAUDE_CODE_SESSION_ID`) and `BATON_NOW`.
    pub fn from_env(dir: Option<PathBuf>, session: Option<String>) -> Result<Ctx, CommandError> {
        let dir = match dir {
            Some(dir) => dir,
            None => std::env::current_dir().map_err(|e| {
                CommandError::usage(format!("cannot read the working directory: {e}"))
            })?,
        };
        let session = session
            .or_else(|| std::env::var("BATON_SESSION").ok())
            .or_else(|| std::env::var("CLAUDE_CODE_SESSION_ID").ok())
            // The originating shell writes the literal `null` for a missing session id.
            .filter(|s| !s.is_empty() && s != "null");
        let now = match std::env::var("BATON_NOW") {
            Ok(raw) if !raw.is_empty() => raw.parse::<Timestamp>().map_err(|e| {
                CommandError::usage(format!(
                    "BATON_NOW={raw:?} is not an RFC 3339 timestamp: {e}"
                ))
                .hint("set it like `BATON_NOW=2026-01-31T09:30:00Z`, or unset it to use the clock")
            })?,
            _ => Timestamp::now(),
        };
        Ok(Ctx { dir, session, now })
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
        Ok(FsStore::new(self.layout()?))
    }
}
