//! `baton init claude|codex --plugin DIR`: baton as a Claude Code or Codex plugin in a
//! marketplace of its own (the text of its files: `baton_core::install::plugin`), with this
//! executable as the plugin's `bin/baton`.

use std::path::Path;

use serde_json::json;

use super::files::{self, Change};
use crate::error::{CommandError, ExitStatus};
use crate::output::Report;
use baton_core::client::Client;
use baton_core::install::codex_trust::{self, TrustChange};
use baton_core::install::plugin;
use baton_ops::env::Ctx;
use baton_ops::install::Targets;
use baton_store::{StoreError, atomic};

/// Writes the marketplace and its plugin under `dir`: each file replaced atomically (a re-run
/// with the same baton changes nothing), the binary copied in as `bin/baton`; for Codex, also
/// the trust entries of the plugin's hooks in `$CODEX_HOME/config.toml`, planned before
/// anything is written.
pub fn write(ctx: &Ctx, client: Client, dir: &Path) -> Result<Report, CommandError> {
    let version = env!("CARGO_PKG_VERSION");
    let (Some(layout), Some(texts)) = (plugin::layout(client), plugin::files(client, version))
    else {
        return Err(CommandError::usage(format!(
            "{} has no plugin baton writes",
            client.def().title()
        )));
    };
    let trust = trust_change(ctx, client)?;
    let mut files = Vec::new();
    let mut changed_any = false;
    let mut write_file = |rel: &str, bytes: &[u8], mode: u32| -> Result<(), CommandError> {
        let path = dir.join(rel);
        let old = std::fs::read(&path).ok();
        let changed = old.as_deref() != Some(bytes);
        if changed {
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(StoreError::io("create directory", parent))?;
            }
            atomic::replace_with_mode(&path, bytes, mode)?;
        }
        changed_any |= changed;
        files.push(json!({
            "path": path.display().to_string(),
            "action": match (changed, old.is_some()) {
                (false, _) => "unchanged",
                (true, false) => "created",
                (true, true) => "updated",
            },
            "changed": changed,
        }));
        Ok(())
    };
    for (rel, text) in texts {
        write_file(&rel, text.as_bytes(), 0o644)?;
    }
    let exe = std::env::current_exe().map_err(|e| {
        CommandError::new(
            ExitStatus::Failure,
            format!("cannot find this executable's path: {e}"),
        )
    })?;
    let binary = std::fs::read(&exe).map_err(StoreError::io("read", &exe))?;
    write_file(&plugin::binary(), &binary, 0o755)?;
    if let Some((targets, change)) = &trust {
        change.apply(targets)?;
        changed_any |= change.changed();
        files.push(json!({
            "path": change.path.display().to_string(),
            "action": change.action(),
            "changed": change.changed(),
        }));
    }

    // The clients read a relative `tools/baton` as a GitHub `owner/repo` and try to clone it:
    // the command names the directory by its absolute path.
    let absolute = dir.canonicalize().unwrap_or_else(|_| ctx.dir.join(dir));
    let shown = baton_core::text::shell_quote(&absolute.display().to_string());
    let program = client.as_str();
    let (add, install) = match client {
        Client::Codex => (
            format!("codex plugin marketplace add {shown}"),
            format!("codex plugin add {0}@{0}", plugin::NAME),
        ),
        _ => (
            format!("claude plugin marketplace add {shown}"),
            format!("claude plugin install {0}@{0}", plugin::NAME),
        ),
    };
    let text = format!(
        "wrote baton {version} as a {} plugin to {}\ninstall it (on each machine, or once for a team that shares the directory):\n  {add}\n  {install}",
        client.def().title(),
        dir.join(plugin::NAME).display()
    );
    let mut report = Report::ok(json!({}), text)
        .with("client", program)
        .with("scope", "plugin")
        .with("dry_run", false)
        .with("remove", false)
        .with("changed", changed_any)
        .with("files", files)
        .with("command", plugin::plugin_baton(&layout));
    for note in notes(client) {
        report = report.note(note);
    }
    Ok(report)
}

/// Codex: the trust entries of the installed plugin's hooks in the user's `config.toml`, or the
/// error that stops the command before anything is written.
fn trust_change(ctx: &Ctx, client: Client) -> Result<Option<(Targets, Change)>, CommandError> {
    if !client.def().keeps_hook_trust() {
        return Ok(None);
    }
    let targets = Targets::resolve(ctx, client, true)?;
    let Some(config) = targets.trust_config.clone() else {
        return Ok(None);
    };
    let old = files::read(&config)?;
    let hooks_file = plugin::codex_hooks_file();
    let placements = plugin::placements(client);
    let new = codex_trust::apply(
        old.as_deref(),
        &TrustChange {
            hooks_file: &hooks_file,
            after: &placements,
            ..Default::default()
        },
    )
    .map_err(|e| {
        CommandError::new(
            ExitStatus::Usage,
            format!("{} is not valid TOML: {e}", config.display()),
        )
        .hint(format!(
            "fix the file (or move it aside), then run `baton init {} --plugin DIR` again; nothing was changed",
            client.as_str()
        ))
    })?;
    Ok(Some((targets, Change::new(config, old, new))))
}

/// Where the plugin's baton runs, and what the user has to do that the plugin cannot.
fn notes(client: Client) -> Vec<String> {
    let own = plugin::binary();
    match client {
        Client::Codex => vec![
            format!(
                "note: the plugin's hooks run its own {own}: nothing in it names a path of this machine, so a team can share the directory"
            ),
            "note: Codex gives the agent's tool calls neither the plugin's bin/ nor its directory, and runs them in a login shell (`bash -lc`) whose PATH comes from /etc/profile and ~/.profile: for the agent's own `baton` calls, install baton in /usr/local/bin, or add a PATH line for its directory to ~/.profile".to_string(),
            format!(
                "note: Codex runs a plugin's hooks only once they are trusted: their trust entries are in $CODEX_HOME/config.toml (`[hooks.state.\"{0}:…\"]`), and Codex pins the files of the installed copy the first time it runs them; on another machine or for another user run `baton init codex --plugin DIR` there too (or trust the hooks when `codex` asks); after `codex plugin add {1}@{1}` installs another baton, Codex reports the hooks modified and runs none of them until they are trusted again in `codex` (\"Trust all and continue\", or `/hooks`)",
                plugin::codex_hooks_file(),
                plugin::NAME
            ),
        ],
        _ => vec![format!(
            "note: the plugin's hooks and the agent's tool calls run its own {own}: nothing in it names a path of this machine, so a team can share the directory"
        )],
    }
}
