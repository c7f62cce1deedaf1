//! `baton init <client>`: installs baton's hooks into an agent client's settings (or, for
//! OpenCode, baton's plugin),
//! the trust Codex needs before it runs them, and a short text telling the agent when to call
//! baton. The edits themselves are pure (`baton_core::install`); this module finds the files,
//! reads them, and writes every change only once all of them are known to be possible.

pub mod files;
mod originals;
mod plugin;

use std::path::Path;

use clap::Args;
use serde_json::json;

use crate::error::{CommandError, ExitStatus};
use crate::output::Report;
use baton_core::client::{Client, Dialect, Instructions, SettingsShape};
use baton_core::install::codex_trust::{self, TrustChange};
use baton_core::install::plugin as install_plugin;
use baton_core::install::{gitattributes, instructions, settings};
use baton_ops::env::Ctx;
use baton_ops::install::{Program, Targets};
use files::Change;

/// Install baton's hooks into an agent client's settings, keeping every entry and key the user
/// had: Claude Code (`.claude/settings.json`), Codex (`.codex/hooks.json`), Gemini CLI
/// (`.gemini/settings.json`), Cursor (`.cursor/hooks.json`), Antigravity CLI
/// (`.agents/hooks.json`) or Copilot CLI (a file of its own, `.github/hooks/baton.json`), or
/// baton's plugin for OpenCode (`.opencode/plugins/baton.js`).
///
/// Also installs a short text telling the agent when to call baton (a `baton` skill for Claude
/// Code, a marked block in `AGENTS.md` for Codex, Cursor, Antigravity CLI, Copilot CLI and
/// OpenCode and
/// in `GEMINI.md` for Gemini CLI) and, for Codex, the per-handler trust entries in
/// `$CODEX_HOME/config.toml` without which Codex runs no hook. Running it again changes
/// nothing; `--remove` takes out exactly what it put in. A project's settings, which a team
/// commits, call `baton` by name from PATH; the user's own call it by name when the `baton` on
/// PATH is this executable, else by its full path. See docs/init.md.
#[derive(Debug, Args)]
pub struct InitArgs {
    /// The agent client: `claude` (Claude Code), `codex` (Codex CLI), `gemini` (Gemini CLI),
    /// `cursor` (Cursor), `antigravity` (Antigravity CLI), `copilot` (GitHub Copilot CLI) or
    /// `opencode` (OpenCode).
    #[arg(value_parser = Client::NAMES, value_name = "CLIENT")]
    client: String,
    /// Print a unified diff of every file that would change, and change nothing.
    #[arg(long)]
    dry_run: bool,
    /// Remove baton's hook entries, trust entries and instruction text instead of installing
    /// them.
    #[arg(long)]
    remove: bool,
    /// Install into the user's own settings (`~/.claude`, `$CODEX_HOME` or `~/.codex`,
    /// `~/.gemini`, `~/.cursor`, `~/.gemini/config`, `$COPILOT_HOME` or `~/.copilot`,
    /// `$XDG_CONFIG_HOME/opencode` or `~/.config/opencode`) instead of the project's.
    #[arg(long)]
    user: bool,
    /// Codex only: also mark the project trusted in `$CODEX_HOME/config.toml`, which Codex
    /// requires before it runs a project's hooks.
    #[arg(long, conflicts_with_all = ["remove", "user"])]
    trust_project: bool,
    /// Claude Code and Codex only: write baton as a plugin into DIR instead of editing
    /// settings: a marketplace (`DIR/.claude-plugin/marketplace.json` for Claude Code,
    /// `DIR/.agents/plugins/marketplace.json` for Codex) holding the plugin `DIR/baton` (its
    /// manifest, its hooks, the guide as a skill, and this executable as its `bin/baton`, which
    /// the hooks call). Install it with `claude plugin marketplace add DIR` and `claude plugin
    /// install baton@baton`, or `codex plugin marketplace add DIR` and `codex plugin add
    /// baton@baton`; for Codex, the trust entries of the plugin's hooks also go into
    /// `$CODEX_HOME/config.toml`.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["remove", "user", "trust_project", "dry_run"])]
    plugin: Option<std::path::PathBuf>,
}

pub fn cmd_init(ctx: &Ctx, args: InitArgs) -> Result<Report, CommandError> {
    let client = Client::parse(&args.client)
        .ok_or_else(|| CommandError::usage(format!("unknown client {:?}", args.client)))?;
    if let Some(dir) = &args.plugin {
        if install_plugin::layout(client).is_none() {
            let writes: Vec<&str> = Client::ALL
                .into_iter()
                .filter(|c| install_plugin::layout(*c).is_some())
                .map(|c| c.def().title())
                .collect();
            return Err(CommandError::usage(format!(
                "`--plugin` is for {}: {} has no plugin baton writes",
                writes.join(" and "),
                client.def().title()
            ))
            .hint(format!("run `baton init {}` without it", client.as_str())));
        }
        return plugin::write(ctx, client, dir);
    }
    if args.trust_project && !client.def().keeps_hook_trust() {
        let (trusting, others): (Vec<Client>, Vec<Client>) = Client::ALL
            .into_iter()
            .partition(|c| c.def().keeps_hook_trust());
        let titles = |cs: Vec<Client>| {
            cs.iter()
                .map(|c| c.def().title())
                .collect::<Vec<_>>()
                .join(" and ")
        };
        return Err(CommandError::usage(format!(
            "`--trust-project` is for {}: {} keep no per-project hook trust in a file baton edits",
            titles(trusting),
            titles(others)
        ))
        .hint(format!("run `baton init {}` without it", client.as_str())));
    }
    // baton already runs as the client's plugin: the same hooks in its settings would run
    // every hook twice.
    if !args.remove
        && let Some(plugin) = baton_ops::install::plugin_hooks(ctx, client).first()
    {
        return Err(CommandError::new(
            ExitStatus::Refused,
            format!(
                "baton's {} hooks already run as the plugin {} ({}): installing them in the settings too would run every hook twice",
                client.def().title(),
                baton_core::text::esc(&plugin.id),
                plugin.hooks_file.display()
            ),
        )
        .hint(format!(
            "keep the plugin (nothing to do), or uninstall it in {} first and run this again",
            client.def().title()
        )));
    }
    let targets = Targets::resolve(ctx, client, args.user)?;
    let program = Program::this()?;
    let command = program.hook_command(args.user);
    let originals = originals::Originals::for_scope(ctx, args.user)?;
    let changes = plan(client, &targets, &command, &args, &originals)?;

    let mut warnings = Vec::new();
    let mut report = if args.dry_run {
        let diff: String = changes.iter().map(|c| c.diff(&targets)).collect();
        let text = if diff.is_empty() {
            "nothing to change".to_string()
        } else {
            diff
        };
        Report::ok(json!({}), text)
    } else {
        for change in &changes {
            change.apply(&targets)?;
            // What is remembered helps a later `--remove`; failing to keep it only costs that
            // removal its byte-for-byte restore.
            let whole = Some(&change.path) != targets.trust_config.as_ref();
            match (&change.new, args.remove) {
                _ if !whole => {}
                (_, true) => originals.forget(&change.path),
                (Some(new), false) if change.changed() => {
                    if let Err(e) = originals.record(&change.path, change.old.as_deref(), new) {
                        warnings.push(format!(
                            "{}: `--remove` will take out baton's entries but cannot give back the exact bytes",
                            e
                        ));
                    }
                }
                _ => {}
            }
        }
        let lines: Vec<String> = changes
            .iter()
            .filter(|c| c.changed())
            .map(|c| format!("{} {}", c.action(), targets.display(&c.path)))
            .collect();
        let text = if lines.is_empty() {
            "nothing to change".to_string()
        } else {
            lines.join("\n")
        };
        Report::ok(json!({}), text)
    };
    let file_list: Vec<serde_json::Value> = changes
        .iter()
        .map(|c| {
            json!({
                "path": c.path.display().to_string(),
                "action": c.action(),
                "changed": c.changed(),
            })
        })
        .collect();
    report = report
        .with("client", client.as_str())
        .with("scope", if args.user { "user" } else { "project" })
        .with("dry_run", args.dry_run)
        .with("remove", args.remove)
        .with("changed", changes.iter().any(Change::changed))
        .with("files", file_list);
    for w in warnings {
        report = report.warn(w);
    }
    if !args.remove {
        report = report.with("command", command.clone());
        for note in notes(client, &targets, &program, &changes, &args) {
            report = report.note(note);
        }
    }
    Ok(report)
}

/// Every file's old and new text, or the error that stops the whole command before anything
/// is written.
fn plan(
    client: Client,
    targets: &Targets,
    baton: &str,
    args: &InitArgs,
    originals: &originals::Originals,
) -> Result<Vec<Change>, CommandError> {
    let mut changes = Vec::new();
    // `--remove` gives a file back byte for byte when it still holds what baton wrote.
    let restored = |path: &Path, old: Option<&str>, new: Option<String>| {
        if args.remove {
            originals.restore(path, old).unwrap_or(new)
        } else {
            new
        }
    };

    let old = files::read(&targets.settings)?;
    let edited = if args.remove {
        settings::uninstall(old.as_deref(), client)
    } else {
        settings::install(old.as_deref(), client, baton)
    }
    .map_err(|e| refuse(&targets.settings, &e.to_string(), client, args))?;
    let new = restored(&targets.settings, old.as_deref(), edited.text.clone());
    // A client that reads strict JSON may drop the whole file over one error (Cursor's and
    // Antigravity's hook files): what would be written is parsed back first.
    if client.def().settings_dialect() == Dialect::Json
        && client.def().settings_shape() != SettingsShape::Plugin
        && let Some(text) = &new
        && let Err(e) = serde_json::from_str::<serde_json::Value>(text)
    {
        return Err(CommandError::new(
            ExitStatus::Failure,
            format!(
                "baton's edit of {} would not be valid JSON ({e}); nothing was changed",
                targets.settings.display()
            ),
        ));
    }
    changes.push(Change::new(targets.settings.clone(), old, new));

    let old = files::read(&targets.instructions)?;
    let new = match (client.def().instructions(), args.remove) {
        (Instructions::Skill, false) => Some(instructions::skill_file()),
        // A skill file someone changed since is theirs now: it stays.
        (Instructions::Skill, true) => old.clone().filter(|t| *t != instructions::skill_file()),
        (Instructions::Block, false) => Some(instructions::upsert_block(old.as_deref())),
        (Instructions::Block, true) => old.as_deref().and_then(instructions::remove_block),
    };
    let new = restored(&targets.instructions, old.as_deref(), new);
    changes.push(Change::new(targets.instructions.clone(), old, new));

    // A plan's ledger merges by union across machines and branches (project scope only).
    if let Some(root) = &targets.project {
        let path = root.join(".gitattributes");
        let old = files::read(&path)?;
        let new = if args.remove {
            old.as_deref().and_then(gitattributes::remove)
        } else {
            Some(gitattributes::upsert(old.as_deref()))
        };
        let new = restored(&path, old.as_deref(), new);
        changes.push(Change::new(path, old, new));
    }

    // The guard's backstop in git itself (project scope only): the hook that was there runs
    // first, kept beside it.
    if let Some(root) = &targets.project
        && let Some(hooks) = baton_ops::guard::hooks_dir(root)
    {
        let path = hooks.join("reference-transaction");
        let before = hooks.join(format!("reference-transaction{}", BEFORE_BATON));
        let old = files::read(&path)?;
        let kept = files::read(&before)?;
        let ours = |t: &Option<String>| t.as_deref().is_some_and(baton_ops::guard::is_backstop);
        let (new, new_kept) = match (args.remove, ours(&old)) {
            (false, true) => (Some(baton_ops::guard::backstop_script()), kept.clone()),
            (false, false) => (
                Some(baton_ops::guard::backstop_script()),
                old.clone().or(kept.clone()),
            ),
            (true, true) => (kept.clone(), None),
            (true, false) => (old.clone(), kept.clone()),
        };
        changes.push(Change::program(path, old, new));
        if kept.is_some() || new_kept.is_some() {
            changes.push(Change::program(before, kept, new_kept));
        }
    }

    if let Some(config) = &targets.trust_config {
        let hooks_file = targets.settings.display().to_string();
        let project = targets.project.as_ref().map(|p| p.display().to_string());
        let change = TrustChange {
            hooks_file: &hooks_file,
            before: &edited.before,
            after: &edited.after,
            moved: &edited.moved,
            trust_project: project.as_deref().filter(|_| args.trust_project),
            remaining: args.remove.then_some(edited.handlers.as_slice()),
        };
        let old = files::read(config)?;
        let new = codex_trust::apply(old.as_deref(), &change)
            .map_err(|e| refuse(config, &format!("is not valid TOML: {e}"), client, args))?;
        // Not given back whole: the project's trust, once granted, outlives baton's hooks,
        // and `toml_edit` keeps the rest of the file as it was.
        changes.push(Change::new(config.clone(), old, new));
    }
    Ok(changes)
}

/// The name a hook that was in place gets beside baton's, which runs it first.
const BEFORE_BATON: &str = ".before-baton";

fn refuse(path: &Path, problem: &str, client: Client, args: &InitArgs) -> CommandError {
    let again = if args.remove {
        format!("baton init {} --remove", client.as_str())
    } else {
        format!("baton init {}", client.as_str())
    };
    CommandError::new(ExitStatus::Usage, format!("{} {problem}", path.display())).hint(format!(
        "fix the file (or move it aside), then run `{again}` again; nothing was changed"
    ))
}

/// What the user has to do that baton cannot: put baton on the agent's PATH, trust the
/// project.
fn notes(
    client: Client,
    targets: &Targets,
    program: &Program,
    changes: &[Change],
    args: &InitArgs,
) -> Vec<String> {
    let mut out = Vec::new();
    let in_project: Vec<String> = changes
        .iter()
        .filter(|c| c.changed() && c.new.is_some())
        .filter(|c| {
            // Files in git's own directory (a hook) are no part of the tree.
            targets.project.as_ref().is_some_and(|p| {
                c.path
                    .strip_prefix(p)
                    .is_ok_and(|rel| !rel.starts_with(".git"))
            })
        })
        .map(|c| targets.display(&c.path))
        .collect();
    if !in_project.is_empty() {
        out.push(format!(
            "note: commit {}: until then they are uncommitted changes in the tree, and a resume asks before it takes such a tree as it is",
            in_project.join(", ")
        ));
    }
    if let Some(root) = &targets.project
        && targets.base != *root
    {
        out.push(format!(
            "note: {} reads a project's settings only from the directory it is started in: these hooks work when it is started in {}; to start it elsewhere (the root, another package), run `baton init {}` there too",
            client.def().title(),
            targets.display(&targets.base),
            client.as_str()
        ));
    }
    if !program.on_path && args.user {
        out.push(format!(
            "note: the `baton` on PATH is not this executable, so the hooks call {}; the agent's own tool calls run `baton` by name: put baton on the PATH they see (for example in /usr/local/bin)",
            program.path.display()
        ));
    }
    if !program.on_path && !args.user {
        out.push(format!(
            "note: the hooks call `baton` from PATH (a project's settings name no path of one machine), and the `baton` on PATH is not this executable: put it there before {} runs them, for example `ln -s {} /usr/local/bin/baton`",
            client.def().title(),
            baton_core::text::shell_quote(&program.path.to_string_lossy())
        ));
    }
    // Project settings are committed: what a teammate needs for them to work.
    if !args.user {
        let plugin = if client == Client::Claude {
            ", or use baton as a plugin instead (`baton init claude --plugin DIR`)"
        } else {
            ""
        };
        out.push(format!(
            "note: for teammates these hooks call `baton` by name: each needs baton on the PATH (`cargo install baton-cli --locked`, `npm install -g baton-cli`, or `cargo install --path crates/baton --locked` in a clone of baton: docs/install.md){plugin}"
        ));
    }
    out.extend(
        client
            .def()
            .init_notes(args.user)
            .iter()
            .map(|n| n.to_string()),
    );
    if client.def().keeps_hook_trust() {
        let trusted = targets.project.as_ref().is_none_or(|project| {
            let config = changes
                .iter()
                .find(|c| Some(&c.path) == targets.trust_config.as_ref())
                .and_then(|c| c.new.as_deref())
                .unwrap_or_default();
            codex_trust::is_project_trusted(config, &project.display().to_string())
        });
        if !trusted && !args.trust_project && !args.user {
            out.extend(client.def().untrusted_project_note().map(str::to_string));
        }
    }
    out
}
