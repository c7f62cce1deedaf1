//! `baton doctor`: checks in one go what breaks a setup, each with its fix. It reads and never
//! writes: the project's git repository, each client's hooks (as `baton init` would write them,
//! and the `baton` they run), Codex's hook trust, Gemini CLI's and Copilot CLI's folder trust,
//! the `baton` the agent's tool calls find, and the store's connection.

use std::path::{Path, PathBuf};

use clap::Args;
use serde_json::json;

use crate::error::{CommandError, ExitStatus};
use crate::output::Report;
use baton_core::client::Client;
use baton_core::install::codex_trust::{self, TrustChange};
use baton_core::install::folder_trust;
use baton_core::install::settings;
use baton_core::text::{esc, shell_quote};
use baton_ops::env::Ctx;
use baton_ops::install::{Program, Targets, is_executable, which};

/// Check what breaks a setup, and say the fix for each
///
/// Looks at the git repository (git's `safe.directory`), each client's hooks as `baton init`
/// writes them and the `baton` they run, Codex's hook and project trust, the folder trust of
/// Gemini CLI and Copilot CLI, the `baton` the agent's tool calls find on their PATH (Codex's
/// login shell included), and the store's connection. Changes nothing. Exits 0 when every
/// check passes, 4 when any needs a person's fix.
#[derive(Debug, Args)]
pub struct DoctorArgs {}

/// One check: what was looked at, what was found, and the fix when it is wrong.
struct Check {
    name: String,
    ok: bool,
    found: String,
    fix: Option<String>,
}

impl Check {
    fn ok(name: impl Into<String>, found: impl Into<String>) -> Check {
        Check {
            name: name.into(),
            ok: true,
            found: found.into(),
            fix: None,
        }
    }

    fn fix(name: impl Into<String>, found: impl Into<String>, fix: impl Into<String>) -> Check {
        Check {
            name: name.into(),
            ok: false,
            found: found.into(),
            fix: Some(fix.into()),
        }
    }
}

pub fn cmd_doctor(ctx: &Ctx, _args: DoctorArgs) -> Result<Report, CommandError> {
    let mut checks = vec![git(ctx)];
    let on_path = which("baton", std::env::var_os("PATH").as_deref());
    let mut installed = Vec::new();
    for client in Client::ALL {
        for user in [false, true] {
            let Ok(targets) = Targets::resolve(ctx, client, user) else {
                continue;
            };
            let Ok(text) = std::fs::read_to_string(&targets.settings) else {
                continue;
            };
            // A settings file the client cannot read runs no hook at all: said as that, with
            // its fix, rather than as hooks that are missing.
            let hooks = match settings::installed(&text, client) {
                Ok(hooks) => hooks,
                Err(e) => {
                    installed.push(client);
                    checks.push(Check::fix(
                        format!(
                            "{} settings ({})",
                            client.def().title(),
                            targets.settings.display()
                        ),
                        format!(
                            "{} cannot read it, so it runs none of its hooks: {e}",
                            client.def().title()
                        ),
                        unreadable_fix(client),
                    ));
                    continue;
                }
            };
            if hooks.is_empty() {
                continue;
            }
            installed.push(client);
            checks.extend(client_checks(ctx, client, &targets, &text, &hooks, user));
        }
    }
    // baton as the client's plugin: its hooks run from the plugin's own file.
    let by_settings = installed.clone();
    for client in [Client::Claude, Client::Codex] {
        for plugin in baton_ops::install::plugin_hooks(ctx, client) {
            let def = client.def();
            let missing: Vec<&str> = def
                .hook_events()
                .iter()
                .copied()
                .filter(|e| !plugin.hooks.iter().any(|(h, _)| h == e))
                .collect();
            let name = format!("{} hooks (plugin {})", def.title(), esc(&plugin.id));
            checks.push(if missing.is_empty() {
                Check::ok(
                    name,
                    format!("{} events, from {}", plugin.hooks.len(), plugin.hooks_file.display()),
                )
            } else {
                Check::fix(
                    name,
                    format!("no hook for {}", missing.join(", ")),
                    format!(
                        "write the plugin again with this baton (`baton init {} --plugin DIR`) and update it in the client",
                        client.as_str()
                    ),
                )
            });
            // The same hooks in the client's settings too: every hook would run twice.
            if installed.contains(&client) {
                checks.push(Check::fix(
                    format!("{} hooks run once", def.title()),
                    format!(
                        "baton's hooks are both in the settings and in the plugin {}: each would run twice",
                        esc(&plugin.id)
                    ),
                    format!("keep one: `baton init {} --remove` takes them out of the settings", client.as_str()),
                ));
            }
            installed.push(client);
        }
    }
    if installed.is_empty() {
        checks.push(Check::fix(
            "hooks",
            "no client's settings here or in your home hold baton's hooks",
            "run `baton init <client>` in the project (claude, codex, gemini, copilot, opencode, cursor or antigravity)",
        ));
    }
    for client in Client::ALL.into_iter().filter(|c| installed.contains(c)) {
        checks.extend(hooks_switched_off(ctx, client));
    }
    if installed.contains(&Client::Gemini) {
        checks.extend(gemini_folder_trust(ctx));
    }
    if installed.contains(&Client::Copilot) {
        checks.extend(copilot_folder_trust(ctx));
    }
    // Claude Code puts its plugin's `bin/` on a tool call's PATH: a setup that is only that
    // plugin needs no baton of its own on the PATH.
    if !by_settings.is_empty()
        || installed.iter().any(|c| *c != Client::Claude)
        || on_path.is_some()
    {
        checks.push(tool_calls(on_path.as_deref()));
    } else if !installed.is_empty() {
        checks.push(Check::ok(
            "PATH",
            "Claude Code's tool calls run the plugin's own `baton` (its `bin/`)",
        ));
    } else {
        checks.push(tool_calls(on_path.as_deref()));
    }
    if installed.contains(&Client::Codex) {
        checks.push(login_shell());
    }
    checks.extend(store(ctx));

    let failed = checks.iter().filter(|c| !c.ok).count();
    let mut text = String::new();
    for c in &checks {
        text.push_str(&format!(
            "{} {}: {}\n",
            if c.ok { "ok " } else { "FIX" },
            c.name,
            c.found
        ));
        if let Some(fix) = &c.fix {
            text.push_str(&format!("    fix: {fix}\n"));
        }
    }
    text.push_str(&match failed {
        0 => "every check passed".to_string(),
        n => format!("{n} of {} checks need a fix", checks.len()),
    });
    let list: Vec<serde_json::Value> = checks
        .iter()
        .map(|c| json!({"name": c.name, "ok": c.ok, "found": c.found, "fix": c.fix}))
        .collect();
    let status = if failed == 0 {
        ExitStatus::Success
    } else {
        ExitStatus::AskHuman
    };
    Ok(Report::new(
        status,
        json!({ "checks": list, "failed": failed }),
        text,
    ))
}

/// The project is a git repository git agrees to work in.
fn git(ctx: &Ctx) -> Check {
    let out = std::process::Command::new("git")
        .args(["rev-parse", "--show-toplevel"])
        .current_dir(&ctx.dir)
        .env("LC_ALL", "C")
        .output();
    let out = match out {
        Ok(out) => out,
        Err(e) => {
            return Check::fix("git", format!("git cannot be run: {e}"), "install git");
        }
    };
    let said = String::from_utf8_lossy(&out.stderr);
    if out.status.success() {
        let root = String::from_utf8_lossy(&out.stdout).trim().to_string();
        return Check::ok("git", format!("a repository at {}", esc(&root)));
    }
    if said.contains("dubious ownership") {
        return Check::fix(
            "git",
            format!(
                "git refuses {}: another user owns it (dubious ownership)",
                ctx.dir.display()
            ),
            format!(
                "`git config --global --add safe.directory {}`, as the user that runs baton and the agent",
                shell_quote(&ctx.dir.to_string_lossy())
            ),
        );
    }
    Check::fix(
        "git",
        format!(
            "{} is not in a git repository: {}",
            ctx.dir.display(),
            esc(said.lines().next().unwrap_or_default())
        ),
        "run baton in the project's repository (or `git init` it)",
    )
}

/// A client's hooks: as `baton init` would write them now, running a `baton` that exists, and
/// for Codex trusted.
fn client_checks(
    ctx: &Ctx,
    client: Client,
    targets: &Targets,
    text: &str,
    hooks: &[(String, String)],
    user: bool,
) -> Vec<Check> {
    let def = client.def();
    let scope = if user { " --user" } else { "" };
    let name = format!("{} hooks ({})", def.title(), targets.settings.display());
    let init = format!("baton init {}{scope}", client.as_str());
    let mut out = Vec::new();
    let program = hooks
        .first()
        .and_then(|(_, command)| first_word(command))
        .unwrap_or_default();
    let missing: Vec<&str> = def
        .hook_events()
        .iter()
        .copied()
        .filter(|e| !hooks.iter().any(|(h, _)| h == e))
        .collect();
    // What `baton init` would write here now.
    let expected = Program::this()
        .map(|p| p.hook_command(user))
        .unwrap_or_else(|_| "baton".into());
    let current = settings::install(Some(text), client, &expected)
        .is_ok_and(|edited| edited.text.as_deref() == Some(text));
    if !missing.is_empty() {
        out.push(Check::fix(
            name.clone(),
            format!("no hook for {}", missing.join(", ")),
            format!("`{init}`"),
        ));
    } else if !current {
        out.push(Check::fix(
            name.clone(),
            format!(
                "baton's hooks are not as `{init}` writes them now (an older baton wrote them, or they were edited), running {}",
                esc(&program)
            ),
            format!("`{init}`"),
        ));
    } else {
        out.push(Check::ok(
            name.clone(),
            format!("{} events, running {}", hooks.len(), esc(&program)),
        ));
    }
    let runs = if program.contains('/') {
        let path = PathBuf::from(&program);
        is_executable(&path).then_some(path)
    } else {
        which(&program, std::env::var_os("PATH").as_deref())
    };
    match runs {
        Some(path) => out.push(Check::ok(
            format!("{} runs", def.title()),
            format!("`{}` is {}", esc(&program), path.display()),
        )),
        None => out.push(Check::fix(
            format!("{} runs", def.title()),
            format!(
                "the hooks run `{}`, which is not {}",
                esc(&program),
                if program.contains('/') {
                    "an executable file"
                } else {
                    "on the PATH"
                }
            ),
            format!(
                "put baton on the PATH the client is started with (for example `ln -s {} /usr/local/bin/baton`), or run `baton init` again from the baton you mean",
                this_exe()
            ),
        )),
    }
    if def.keeps_hook_trust() {
        out.extend(codex_trust_checks(
            ctx, client, targets, text, &program, &init,
        ));
    }
    out
}

/// The fix for a settings file its client cannot read.
fn unreadable_fix(client: Client) -> String {
    match client.def().settings_dialect() {
        baton_core::client::Dialect::Json => format!(
            "make it valid JSON: {} reads it strictly (no comments, no trailing commas); then run `baton doctor` again",
            client.def().title()
        ),
        baton_core::client::Dialect::JsonWithComments => {
            "make it valid JSON (comments are allowed); then run `baton doctor` again".into()
        }
    }
}

/// The settings that switch all of `client`'s hooks off, baton's included
/// (`Definition::hook_switches`: Claude Code's and Copilot CLI's `disableAllHooks`, Gemini
/// CLI's `hooksConfig.enabled`, Codex's `[features] hooks`), each one set named with its fix.
fn hooks_switched_off(ctx: &Ctx, client: Client) -> Vec<Check> {
    use baton_core::client::SwitchFile;
    let def = client.def();
    let root = ctx.layout().ok().map(|l| l.root);
    let user = Targets::resolve(ctx, client, true).ok().map(|t| t.base);
    def.hook_switches()
        .iter()
        .filter_map(|switch| {
            let file = match switch.file {
                SwitchFile::Project(rel) => root.as_ref()?.join(rel),
                SwitchFile::User(rel) => user.as_ref()?.join(rel),
            };
            let text = std::fs::read_to_string(&file).ok()?;
            let value = if file.extension().is_some_and(|e| e == "toml") {
                let doc: toml_edit::DocumentMut = text.parse().ok()?;
                let mut item = doc.as_item();
                for part in switch.key.split('.') {
                    item = item.get(part)?;
                }
                item.as_bool()?
            } else {
                let json: serde_json::Value = serde_json::from_str(&text).ok()?;
                json.pointer(switch.key)?.as_bool()?
            };
            (value == switch.off).then(|| {
                let setting = format!("{} = {}", switch.key.trim_start_matches('/'), switch.off);
                Check::fix(
                    format!("{} hooks switched on", def.title()),
                    format!(
                        "{} sets `{setting}`: {} runs no hook, baton's included",
                        file.display(),
                        def.title()
                    ),
                    format!(
                        "remove `{}` from {} (or set it to {})",
                        switch.key.trim_start_matches('/'),
                        file.display(),
                        !switch.off
                    ),
                )
            })
        })
        .collect()
}

/// Codex runs a hook only with its trust entry, and a project's hooks only in a trusted
/// project: both as `baton init codex` writes them.
fn codex_trust_checks(
    _ctx: &Ctx,
    client: Client,
    targets: &Targets,
    text: &str,
    program: &str,
    init: &str,
) -> Vec<Check> {
    let Some(config_path) = &targets.trust_config else {
        return Vec::new();
    };
    let config = std::fs::read_to_string(config_path).unwrap_or_default();
    let mut out = Vec::new();
    let quoted = if program.contains('/') {
        shell_quote(program)
    } else {
        program.to_string()
    };
    if let Ok(edited) = settings::install(Some(text), client, &quoted) {
        let hooks_file = targets.settings.display().to_string();
        // The handlers as they are in the file, trusted or not.
        let change = TrustChange {
            hooks_file: &hooks_file,
            before: &edited.before,
            after: &edited.before,
            moved: &edited.moved,
            trust_project: None,
            remaining: None,
        };
        let trusted =
            matches!(codex_trust::apply(Some(&config), &change), Ok(Some(new)) if new == config);
        out.push(if trusted {
            Check::ok("Codex hook trust", format!("every hook trusted in {}", config_path.display()))
        } else {
            Check::fix(
                "Codex hook trust",
                format!(
                    "{} lacks the trust entries of baton's hooks (or holds stale ones): Codex skips untrusted hooks",
                    config_path.display()
                ),
                format!("`{init}` (it writes them)"),
            )
        });
    }
    if let Some(project) = &targets.project {
        let shown = project.display().to_string();
        out.push(if codex_trust::is_project_trusted(&config, &shown) {
            Check::ok("Codex project trust", format!("{shown} is trusted"))
        } else {
            Check::fix(
                "Codex project trust",
                format!("{shown} is not a trusted project: Codex runs none of its hooks"),
                "`baton init codex --trust-project`, or trust it when `codex` asks",
            )
        });
    }
    out
}

/// Gemini CLI works in a folder only once it is trusted (`~/.gemini/trustedFolders.json`):
/// headless, an untrusted folder exits 55 before any hook runs.
fn gemini_folder_trust(ctx: &Ctx) -> Option<Check> {
    let file = PathBuf::from(ctx.settings.home.clone()?).join(".gemini/trustedFolders.json");
    folder_trust(
        ctx,
        "Gemini CLI",
        &file,
        folder_trust::gemini,
        "Gemini CLI run headless there exits 55 before any hook runs",
        &|root| {
            format!(
                "trust it when `gemini` asks, or add `{}: \"TRUST_FOLDER\"` to {} (or run `gemini --skip-trust`)",
                serde_json::Value::from(root),
                file.display()
            )
        },
    )
}

/// Copilot CLI loads a project's hooks (`.github/hooks/`) only in a trusted folder, kept in
/// `config.json` in `$COPILOT_HOME` (`~/.copilot`); elsewhere it runs without them.
fn copilot_folder_trust(ctx: &Ctx) -> Option<Check> {
    let file = Targets::resolve(ctx, Client::Copilot, true)
        .ok()?
        .base
        .join("config.json");
    folder_trust(
        ctx,
        "Copilot CLI",
        &file,
        folder_trust::copilot,
        "Copilot CLI runs there without the project's hooks",
        &|root| {
            format!(
                "run `copilot` in it once and trust it for future sessions, or add {} to `trustedFolders` in {} (or run Copilot with `--trust-folder` or `COPILOT_ALLOW_ALL=true`)",
                serde_json::Value::from(root),
                file.display()
            )
        },
    )
}

/// Whether the project is one of `file`'s trusted folders (`folders` reads them) or below one; a
/// folder is taken as written and with its symbolic links resolved, as the clients match it.
fn folder_trust(
    ctx: &Ctx,
    client: &str,
    file: &Path,
    folders: fn(&str) -> Vec<PathBuf>,
    untrusted: &str,
    fix: &dyn Fn(&str) -> String,
) -> Option<Check> {
    let root = ctx.layout().ok()?.root;
    let text = std::fs::read_to_string(file).unwrap_or_default();
    let trusted = folders(&text).iter().any(|folder| {
        root.starts_with(folder) || folder.canonicalize().is_ok_and(|f| root.starts_with(f))
    });
    let shown = root.display().to_string();
    let name = format!("{client} folder trust");
    Some(if trusted {
        Check::ok(name, format!("{shown} is trusted"))
    } else {
        Check::fix(
            name,
            format!("{shown} is not trusted in {}: {untrusted}", file.display()),
            fix(&shown),
        )
    })
}

/// The agent's tool calls run `baton` by name.
fn tool_calls(on_path: Option<&Path>) -> Check {
    let me = std::env::current_exe().and_then(|p| p.canonicalize()).ok();
    match on_path {
        Some(found) if found.canonicalize().ok() == me => Check::ok(
            "PATH",
            format!("`baton` on the PATH is this one ({})", found.display()),
        ),
        Some(found) => Check::fix(
            "PATH",
            format!(
                "`baton` on the PATH is {}, not this executable ({})",
                found.display(),
                me.map(|p| p.display().to_string()).unwrap_or_default()
            ),
            "put the baton you mean first on the PATH, or replace the other one",
        ),
        None => Check::fix(
            "PATH",
            "no `baton` on the PATH: the agent's tool calls run it by name",
            format!(
                "put baton on the PATH (for example `ln -s {} /usr/local/bin/baton`)",
                this_exe()
            ),
        ),
    }
}

/// Codex runs tool calls in a login shell (`bash -lc`), whose PATH `/etc/profile` sets afresh.
fn login_shell() -> Check {
    let out = std::process::Command::new("bash")
        .args(["-lc", "command -v baton"])
        .stdin(std::process::Stdio::null())
        .output();
    match out {
        Ok(out) if out.status.success() => Check::ok(
            "Codex's login shell",
            format!(
                "`bash -lc` finds baton at {}",
                String::from_utf8_lossy(&out.stdout).trim()
            ),
        ),
        _ => Check::fix(
            "Codex's login shell",
            "`bash -lc 'command -v baton'` finds no baton: Codex's tool calls run in a login shell, whose PATH /etc/profile sets afresh",
            "install baton in /usr/local/bin, or add `export PATH=\"<baton's directory>:$PATH\"` to ~/.profile",
        ),
    }
}

/// The store answers, when one is configured.
fn store(ctx: &Ctx) -> Option<Check> {
    let layout = ctx.layout().ok()?;
    let url = ctx.store_url(Some(&layout.root)).ok().flatten()?;
    #[cfg(feature = "postgres")]
    let shown = baton_store::pg::config::redact(&url);
    #[cfg(not(feature = "postgres"))]
    let shown = "the configured store".to_string();
    let _ = &url;
    let answered = ctx
        .store_at(layout)
        .and_then(|s| s.shared_clock().map_err(baton_ops::OpError::from));
    Some(match answered {
        Ok(_) => Check::ok("store", format!("{shown} answers")),
        Err(e) => Check::fix(
            "store",
            format!("{shown}: {}", esc(&e.message)),
            e.hints.first().cloned().unwrap_or_else(|| {
                "check the server and the URL (BATON_STORE or .baton.toml)".into()
            }),
        ),
    })
}

/// This executable's path, quoted for the shell.
fn this_exe() -> String {
    std::env::current_exe()
        .and_then(|p| p.canonicalize())
        .map(|p| shell_quote(&p.to_string_lossy()))
        .unwrap_or_else(|_| "/path/to/baton".into())
}

fn first_word(command: &str) -> Option<String> {
    baton_core::install::shell_words(command)?
        .into_iter()
        .next()
}
