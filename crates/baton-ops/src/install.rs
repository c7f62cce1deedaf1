//! Where an agent client keeps the files `baton init` writes: its hook settings, the guide the
//! agent reads, and (Codex) the config that holds hook trust, in the project or the user's home.

use std::path::{Path, PathBuf};

use crate::env::Ctx;
use crate::error::CommandError;
use baton_core::hook::Client;

/// The files one run touches.
pub struct Targets {
    /// The client's hook settings.
    pub settings: PathBuf,
    /// The skill file or the file holding the marked block.
    pub instructions: PathBuf,
    /// Codex's `config.toml`, where its hook trust lives (Codex only).
    pub codex_config: Option<PathBuf>,
    /// The project root (project scope only).
    pub project: Option<PathBuf>,
    /// The directory the files belong under: emptied directories below it are removed, never
    /// it.
    pub base: PathBuf,
}

impl Targets {
    pub fn resolve(ctx: &Ctx, client: Client, user: bool) -> Result<Targets, CommandError> {
        let home = || -> Result<PathBuf, CommandError> {
            std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(PathBuf::from)
                .filter(|h| h.is_absolute())
                .ok_or_else(|| {
                    CommandError::usage("HOME is not set to an absolute path")
                        .hint("set HOME to your home directory")
                })
        };
        let codex_home = || -> Result<PathBuf, CommandError> {
            let dir = match std::env::var_os("CODEX_HOME").filter(|h| !h.is_empty()) {
                Some(dir) => ctx.dir.join(dir),
                None => home()?.join(".codex"),
            };
            Ok(dir.canonicalize().unwrap_or(dir))
        };
        let project = if user { None } else { Some(ctx.layout()?.root) };
        let base = match (&project, client) {
            (Some(root), _) => root.clone(),
            (None, Client::Codex) => codex_home()?,
            (None, _) => home()?,
        };
        let (settings, instructions) = match (client, user) {
            (Client::Claude, _) => (
                base.join(".claude/settings.json"),
                base.join(".claude/skills/baton/SKILL.md"),
            ),
            (Client::Codex, false) => (base.join(".codex/hooks.json"), base.join("AGENTS.md")),
            (Client::Codex, true) => (base.join("hooks.json"), base.join("AGENTS.md")),
            (Client::Gemini, false) => (base.join(".gemini/settings.json"), base.join("GEMINI.md")),
            (Client::Gemini, true) => (
                base.join(".gemini/settings.json"),
                base.join(".gemini/GEMINI.md"),
            ),
        };
        let codex_config = match client {
            Client::Codex => Some(codex_home()?.join("config.toml")),
            _ => None,
        };
        Ok(Targets {
            settings,
            instructions,
            codex_config,
            project,
            base,
        })
    }

    /// A path as the summary shows it: relative to the project root in project scope.
    pub fn display(&self, path: &Path) -> String {
        match &self.project {
            Some(root) => path
                .strip_prefix(root)
                .unwrap_or(path)
                .display()
                .to_string(),
            None => path.display().to_string(),
        }
    }
}
