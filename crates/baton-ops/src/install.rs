//! Where an agent client keeps the files `baton init` writes: its hook settings, the guide the
//! agent reads, and (Codex) the config that holds hook trust, in the project or the user's home.

use std::path::{Path, PathBuf};

use crate::env::Ctx;
use crate::error::{CommandError, ExitStatus};
use baton_core::client::{Client, SettingsScope, UserDir};

/// The `baton` hooks call, and this executable.
pub struct Program {
    /// `baton`, or the shell-quoted absolute path of this executable.
    pub command: String,
    pub path: PathBuf,
    /// Whether the `baton` found on PATH is this executable.
    pub on_path: bool,
}

impl Program {
    /// This executable, and whether it is the `baton` on PATH.
    pub fn this() -> Result<Program, CommandError> {
        let path = std::env::current_exe()
            .and_then(|p| p.canonicalize())
            .map_err(|e| {
                CommandError::new(
                    ExitStatus::Failure,
                    format!("cannot find this executable's path: {e}"),
                )
            })?;
        let on_path = which("baton", std::env::var_os("PATH").as_deref())
            .and_then(|p| p.canonicalize().ok())
            .is_some_and(|p| p == path);
        let command = if on_path {
            "baton".to_string()
        } else {
            baton_core::text::shell_quote(&path.to_string_lossy())
        };
        Ok(Program {
            command,
            path,
            on_path,
        })
    }

    /// How the hooks `baton init` writes call baton: by name from PATH in a project's
    /// settings, which a team commits; in the user's own, by path when this executable is not
    /// the `baton` on PATH.
    pub fn hook_command(&self, user: bool) -> String {
        if user {
            self.command.clone()
        } else {
            "baton".to_string()
        }
    }
}

/// Whether `path` is an executable file.
pub fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The first executable `name` in the directories of `path` (a `PATH` value).
pub fn which(name: &str, path: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    std::env::split_paths(path?)
        .map(|dir| dir.join(name))
        .find(|p| is_executable(p))
}

/// The files one run touches.
pub struct Targets {
    /// The client's hook settings.
    pub settings: PathBuf,
    /// The skill file or the file holding the marked block.
    pub instructions: PathBuf,
    /// The config where the client keeps its hook trust (`Definition::keeps_hook_trust`:
    /// Codex's `config.toml`).
    pub trust_config: Option<PathBuf>,
    /// The project root (project scope only).
    pub project: Option<PathBuf>,
    /// The directory the files belong under: in project scope, the directory the client reads
    /// a project's settings from when started here (`settings_dir`). Emptied directories below
    /// it are removed, never it.
    pub base: PathBuf,
}

impl Targets {
    pub fn resolve(ctx: &Ctx, client: Client, user: bool) -> Result<Targets, CommandError> {
        let def = client.def();
        let home = || -> Result<PathBuf, CommandError> {
            ctx.settings
                .home
                .clone()
                .filter(|h| !h.is_empty())
                .map(PathBuf::from)
                .filter(|h| h.is_absolute())
                .ok_or_else(|| {
                    CommandError::usage("HOME is not set to an absolute path")
                        .hint("set HOME to your home directory")
                })
        };
        let user_dir = || -> Result<PathBuf, CommandError> {
            match def.user_dir() {
                UserDir::Home => home(),
                UserDir::Variable { variable, default } => {
                    let set = ctx
                        .settings
                        .client_dirs
                        .iter()
                        .find(|(v, _)| *v == variable);
                    let dir = match set.map(|(_, dir)| dir).filter(|h| !h.is_empty()) {
                        Some(dir) => ctx.dir.join(dir),
                        None => home()?.join(default),
                    };
                    Ok(dir.canonicalize().unwrap_or(dir))
                }
            }
        };
        let project = if user { None } else { Some(ctx.layout()?.root) };
        let base = match &project {
            Some(root) => settings_dir(ctx, client, root),
            None => user_dir()?,
        };
        let files = def.files(user);
        let trust_config = if def.keeps_hook_trust() {
            Some(user_dir()?.join("config.toml"))
        } else {
            None
        };
        Ok(Targets {
            settings: base.join(files.settings),
            instructions: base.join(files.instructions),
            trust_config,
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

/// The directory whose project settings `client` reads when it is started in the working
/// directory: the repository's root for a client that reads every directory up to it (Codex),
/// else the working directory itself (Claude Code and Gemini CLI, started in a package of a
/// monorepo, read that package's settings only).
pub fn settings_dir(ctx: &Ctx, client: Client, root: &Path) -> PathBuf {
    match client.def().settings_scope() {
        SettingsScope::UpToRoot => root.to_path_buf(),
        SettingsScope::StartDir => ctx
            .dir
            .canonicalize()
            .ok()
            .filter(|dir| dir.starts_with(root))
            .unwrap_or_else(|| root.to_path_buf()),
    }
}
