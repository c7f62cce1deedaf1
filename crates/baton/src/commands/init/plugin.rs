//! `baton init claude --plugin DIR`: baton as a Claude Code plugin in a marketplace of its own
//! (the text of its files: `baton_core::install::plugin`), with this executable as the
//! plugin's `bin/baton`.

use std::path::Path;

use serde_json::json;

use crate::output::Report;
use baton_core::install::plugin;
use baton_ops::error::{CommandError, ExitStatus};
use baton_store::{StoreError, atomic};

/// Writes the marketplace and its plugin under `dir`: each file replaced atomically (a re-run
/// with the same baton changes nothing), the binary copied in as `bin/baton`.
pub fn write(dir: &Path) -> Result<Report, CommandError> {
    let version = env!("CARGO_PKG_VERSION");
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
    for (rel, text) in plugin::claude_files(version) {
        write_file(&rel, text.as_bytes(), 0o644)?;
    }
    let exe = std::env::current_exe().map_err(|e| {
        CommandError::new(
            ExitStatus::Failure,
            format!("cannot find this executable's path: {e}"),
        )
    })?;
    let binary = std::fs::read(&exe).map_err(StoreError::io("read", &exe))?;
    write_file(&plugin::claude_binary(), &binary, 0o755)?;

    let shown = dir.display().to_string();
    let add = format!(
        "claude plugin marketplace add {}",
        baton_core::text::shell_quote(&shown)
    );
    let install = format!("claude plugin install {0}@{0}", plugin::NAME);
    let text = format!(
        "wrote baton {version} as a Claude Code plugin to {}\ninstall it (on each machine, or once for a team that shares the directory):\n  {add}\n  {install}",
        dir.join(plugin::NAME).display()
    );
    Ok(Report::ok(json!({}), text)
        .with("client", "claude")
        .with("scope", "plugin")
        .with("dry_run", false)
        .with("remove", false)
        .with("changed", changed_any)
        .with("files", files)
        .with("command", plugin::PLUGIN_BATON)
        .note(format!(
            "note: the plugin's hooks and the agent's tool calls run its own {}: nothing in it names a path of this machine, so a team can share the directory",
            plugin::claude_binary()
        )))
}
