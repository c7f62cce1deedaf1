//! Where an agent client keeps the files `baton init` writes: its hook settings, the guide the
//! agent reads, and (Codex) the config that holds hook trust, in the project or the user's home.

use std::path::{Path, PathBuf};

use crate::env::Ctx;
use crate::error::OpError;
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
    pub fn this() -> Result<Program, OpError> {
        let path = std::env::current_exe()
            .and_then(|p| p.canonicalize())
            .map_err(|e| OpError::broken(format!("cannot find this executable's path: {e}")))?;
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
    pub fn resolve(ctx: &Ctx, client: Client, user: bool) -> Result<Targets, OpError> {
        let def = client.def();
        let home = || -> Result<PathBuf, OpError> {
            ctx.settings
                .home
                .clone()
                .filter(|h| !h.is_empty())
                .map(PathBuf::from)
                .filter(|h| h.is_absolute())
                .ok_or_else(|| {
                    OpError::usage("HOME is not set to an absolute path")
                        .hint("set HOME to your home directory")
                })
        };
        let user_dir = || -> Result<PathBuf, OpError> {
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

/// baton's hooks as an installed, enabled plugin of a client (`baton init claude|codex --plugin`,
/// then the client's own `plugin install`): the plugin's id (`baton@baton`), its hooks file and
/// baton's handlers in it.
#[derive(Debug, Clone)]
pub struct PluginHooks {
    pub id: String,
    pub hooks_file: PathBuf,
    pub hooks: Vec<(String, String)>,
}

/// The enabled plugins of `client` whose hooks file holds baton's hooks, as the client records
/// them: Claude Code's `enabledPlugins` in the settings it reads here (the user's, the
/// project's, its local ones) with `plugins/installed_plugins.json` for where each is installed
/// (under `$CLAUDE_CONFIG_DIR`, else `~/.claude`); Codex's `[plugins."<id>"] enabled = true` in
/// `$CODEX_HOME/config.toml`, installed under `$CODEX_HOME/plugins/cache/<marketplace>/<name>/`.
/// Nothing for the other clients, or when nothing can be read.
pub fn plugin_hooks(ctx: &Ctx, client: Client) -> Vec<PluginHooks> {
    // The client's user directory, as `baton init --user` finds it.
    let Ok(user) = Targets::resolve(ctx, client, true).map(|t| t.base) else {
        return Vec::new();
    };
    let found: Vec<(String, PathBuf)> = match client {
        Client::Claude => {
            let dir = ctx
                .settings
                .claude_config_dir
                .clone()
                .unwrap_or_else(|| user.join(".claude"));
            let mut settings = vec![dir.join("settings.json")];
            if let Ok(layout) = ctx.layout() {
                settings.push(layout.root.join(".claude/settings.json"));
                settings.push(layout.root.join(".claude/settings.local.json"));
            }
            let mut enabled = std::collections::BTreeMap::new();
            for file in settings {
                let Some(v) = read_json(&file) else { continue };
                if let Some(map) = v.get("enabledPlugins").and_then(|m| m.as_object()) {
                    for (id, on) in map {
                        enabled.insert(id.clone(), on.as_bool() == Some(true));
                    }
                }
            }
            let installed = read_json(&dir.join("plugins/installed_plugins.json"));
            enabled
                .into_iter()
                .filter(|(_, on)| *on)
                .filter_map(|(id, _)| {
                    let path = installed
                        .as_ref()?
                        .pointer(&format!(
                            "/plugins/{}",
                            id.replace('~', "~0").replace('/', "~1")
                        ))?
                        .as_array()?
                        .iter()
                        .find_map(|e| e.get("installPath")?.as_str().map(PathBuf::from))?;
                    Some((id, path.join("hooks/hooks.json")))
                })
                .collect()
        }
        Client::Codex => {
            let dir = user;
            let Some(config) = std::fs::read_to_string(dir.join("config.toml"))
                .ok()
                .and_then(|t| t.parse::<toml_edit::DocumentMut>().ok())
            else {
                return Vec::new();
            };
            let Some(plugins) = config.get("plugins").and_then(|p| p.as_table_like()) else {
                return Vec::new();
            };
            plugins
                .iter()
                .filter(|(_, p)| {
                    p.as_table_like()
                        .and_then(|t| t.get("enabled"))
                        .and_then(|e| e.as_bool())
                        == Some(true)
                })
                .filter_map(|(id, _)| {
                    let (name, market) = id.split_once('@')?;
                    // A plugin id names no path of its own: one with a separator is not ours.
                    if [name, market]
                        .iter()
                        .any(|p| p.is_empty() || p.contains(['/', '\\']) || *p == "..")
                    {
                        return None;
                    }
                    let versions = dir.join("plugins/cache").join(market).join(name);
                    let mut found: Vec<PathBuf> = std::fs::read_dir(&versions)
                        .ok()?
                        .flatten()
                        .map(|e| e.path().join("hooks/hooks.json"))
                        .filter(|p| p.is_file())
                        .collect();
                    found.sort();
                    Some((id.to_string(), found.pop()?))
                })
                .collect()
        }
        _ => Vec::new(),
    };
    found
        .into_iter()
        .filter_map(|(id, hooks_file)| {
            // The plugin's hooks run `"${CLAUDE_PLUGIN_ROOT}/bin/baton"` (Codex:
            // `${PLUGIN_ROOT}`), which the client expands to the plugin's directory.
            let root = hooks_file
                .parent()?
                .parent()?
                .to_string_lossy()
                .into_owned();
            let text = std::fs::read_to_string(&hooks_file)
                .ok()?
                .replace("${CLAUDE_PLUGIN_ROOT}", &root)
                .replace("${PLUGIN_ROOT}", &root);
            let hooks = baton_core::install::settings::installed(&text, client).ok()?;
            (!hooks.is_empty()).then_some(PluginHooks {
                id,
                hooks_file,
                hooks,
            })
        })
        .collect()
}

/// A small JSON file, when it can be read and parsed.
fn read_json(path: &Path) -> Option<serde_json::Value> {
    let bytes = baton_store::read::read_capped(path, 4 * 1024 * 1024).ok()??;
    serde_json::from_slice(&bytes).ok()
}
