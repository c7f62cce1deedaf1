//! baton as a plugin of an agent client, in a marketplace of its own (`baton init claude
//! --plugin DIR`, `baton init codex --plugin DIR`): the files' text, as functions of the
//! client's definition and the guide. The plugin's hooks call the plugin's own `bin/baton`
//! through the variable the client sets to the installed plugin's directory, so nothing in it
//! names a path of one machine.
//!
//! Claude Code reads the marketplace at `.claude-plugin/marketplace.json` and the manifest at
//! `.claude-plugin/plugin.json`, sets `CLAUDE_PLUGIN_ROOT` for a plugin's hooks, and puts the
//! plugin's `bin/` on the `PATH` of the agent's tool calls. Codex (0.171.0) reads the marketplace
//! at `.agents/plugins/marketplace.json` (a plugin's `source` is `{"source": "local", "path":
//! "./…"}`) and the manifest at `.codex-plugin/plugin.json`, copies the plugin into
//! `$CODEX_HOME/plugins/cache/<marketplace>/<plugin>/<version>/` on install, reads its hooks from
//! `hooks/hooks.json` (the shape of `.codex/hooks.json`) and runs them with `PLUGIN_ROOT` (and
//! `CLAUDE_PLUGIN_ROOT`) set to that copy, but only once trusted: per handler, `config.toml`
//! holds `[hooks.state."<plugin>@<marketplace>:hooks/hooks.json:<event>:<group>:<handler>"]`
//! with the handler's `trusted_hash`, computed as for a project's hooks
//! (`install::codex_trust`), over the command as written, `${PLUGIN_ROOT}` and all. Codex adds
//! a `trusted_content_hash` of every file of the installed copy when it trusts the hooks itself;
//! an entry without one is taken as trusted for the copy Codex first sees it with, which Codex
//! then pins (a later copy with other files is "modified" and runs no hook until trusted again).

use serde_json::{Map, Value, json};

use super::instructions;
use super::settings::{Placement, baton_group};
use crate::client::Client;

/// The marketplace's and the plugin's name: `claude plugin install baton@baton`, `codex plugin
/// add baton@baton`.
pub const NAME: &str = "baton";

/// Where a client looks for a plugin's files, and how its hooks name the plugin's directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// The marketplace file, under DIR.
    pub marketplace: &'static str,
    /// The plugin's manifest, under the plugin's directory.
    pub manifest: &'static str,
    /// The variable the client sets, for a plugin's hooks, to the installed plugin's directory.
    pub root_variable: &'static str,
}

/// The layout of `client`'s plugins; `None` for a client baton writes no plugin for.
pub fn layout(client: Client) -> Option<Layout> {
    match client {
        Client::Claude => Some(Layout {
            marketplace: ".claude-plugin/marketplace.json",
            manifest: ".claude-plugin/plugin.json",
            root_variable: "CLAUDE_PLUGIN_ROOT",
        }),
        Client::Codex => Some(Layout {
            marketplace: ".agents/plugins/marketplace.json",
            manifest: ".codex-plugin/plugin.json",
            root_variable: "PLUGIN_ROOT",
        }),
        _ => None,
    }
}

/// The program the plugin's hooks run: its own copy of baton, quoted for the shell (the
/// plugin's directory may hold a space): `"${CLAUDE_PLUGIN_ROOT}/bin/baton"`.
pub fn plugin_baton(layout: &Layout) -> String {
    format!("\"${{{}}}/{}\"", layout.root_variable, BINARY)
}

/// The binary, under the plugin's directory.
const BINARY: &str = "bin/baton";

const DESCRIPTION: &str = "Durable run state for coding-agent runs: a run interrupted by a rate limit, a crash or a compaction resumes where it stopped.";

/// Every file of `client`'s marketplace but the binary, as `(path under DIR, text)`: the
/// marketplace, and the plugin under `baton/` (its manifest, its hooks, the guide as a skill).
/// `None` for a client baton writes no plugin for.
pub fn files(client: Client, version: &str) -> Option<Vec<(String, String)>> {
    let layout = layout(client)?;
    let program = plugin_baton(&layout);
    let mut hooks = Map::new();
    for event in client.def().hook_events() {
        hooks.insert(
            (*event).to_string(),
            json!([baton_group(client, &program, event)]),
        );
    }
    let pretty = |v: Value| format!("{}\n", serde_json::to_string_pretty(&v).unwrap_or_default());
    let (marketplace, manifest) = match client {
        Client::Codex => (
            json!({
                "name": NAME,
                "interface": { "displayName": NAME },
                "plugins": [{
                    "name": NAME,
                    "source": { "source": "local", "path": format!("./{NAME}") },
                }],
            }),
            json!({
                "name": NAME,
                "version": version,
                "description": DESCRIPTION,
                "author": { "name": NAME },
                "interface": {
                    "displayName": NAME,
                    "shortDescription": DESCRIPTION,
                    "developerName": NAME,
                },
            }),
        ),
        _ => (
            json!({
                "$schema": "https://json.schemastore.org/claude-code-marketplace.json",
                "name": NAME,
                "owner": { "name": NAME },
                "plugins": [{
                    "name": NAME,
                    "source": format!("./{NAME}"),
                    "description": DESCRIPTION,
                    "version": version,
                }],
            }),
            json!({
                "name": NAME,
                "version": version,
                "description": DESCRIPTION,
                "author": { "name": NAME },
            }),
        ),
    };
    Some(vec![
        (layout.marketplace.to_string(), pretty(marketplace)),
        (format!("{NAME}/{}", layout.manifest), pretty(manifest)),
        (
            format!("{NAME}/hooks/hooks.json"),
            pretty(json!({ "hooks": Value::Object(hooks) })),
        ),
        (
            format!("{NAME}/skills/{NAME}/SKILL.md"),
            instructions::skill_file(),
        ),
    ])
}

/// Codex only: what names the installed plugin's hooks file in the `hooks.state` keys of
/// `config.toml`, where a project's hooks have the file's path: `baton@baton:hooks/hooks.json`.
pub fn codex_hooks_file() -> String {
    format!("{NAME}@{NAME}:hooks/hooks.json")
}

/// The plugin's handlers as `install::codex_trust` places them: each the only handler of its
/// event's only group, with the command as the plugin's `hooks/hooks.json` has it.
pub fn placements(client: Client) -> Vec<Placement> {
    let Some(layout) = layout(client) else {
        return Vec::new();
    };
    let program = plugin_baton(&layout);
    client
        .def()
        .hook_events()
        .iter()
        .map(|event| Placement {
            event: (*event).to_string(),
            group: 0,
            handler: 0,
            command: super::hook_command(&program, client, event),
            timeout: Some(client.def().hook_timeout(event)),
        })
        .collect()
}

/// Where the binary goes under DIR.
pub fn binary() -> String {
    format!("{NAME}/{BINARY}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::install::baton_hook_event;

    const CLIENTS: [Client; 2] = [Client::Claude, Client::Codex];

    fn file(client: Client, suffix: &str) -> Value {
        let files = files(client, "1.2.3").unwrap();
        let (_, text) = files.iter().find(|(p, _)| p.ends_with(suffix)).unwrap();
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn every_hook_of_the_client_calls_the_plugins_own_baton() {
        for client in CLIENTS {
            let layout = layout(client).unwrap();
            let v = file(client, "hooks/hooks.json");
            let events = v["hooks"].as_object().unwrap();
            assert_eq!(events.len(), client.def().hook_events().len());
            for event in client.def().hook_events() {
                let handler = &v["hooks"][*event][0]["hooks"][0];
                let command = handler["command"].as_str().unwrap();
                assert!(command.starts_with(&plugin_baton(&layout)), "{command}");
                assert!(!command.contains("/usr") && !command.contains("/home"));
                assert_eq!(handler["timeout"], client.def().hook_timeout(event));
                let variable = format!("${{{}}}", layout.root_variable);
                assert_eq!(
                    baton_hook_event(&command.replace(&variable, "/p"), client).as_deref(),
                    Some(*event)
                );
            }
        }
    }

    #[test]
    fn codex_hooks_name_the_plugin_root_codex_sets() {
        let v = file(Client::Codex, "hooks/hooks.json");
        assert_eq!(
            v["hooks"]["SessionStart"][0]["hooks"][0]["command"],
            "\"${PLUGIN_ROOT}/bin/baton\" hook codex SessionStart"
        );
        let v = file(Client::Claude, "hooks/hooks.json");
        assert_eq!(
            v["hooks"]["SessionStart"][0]["hooks"][0]["command"],
            "\"${CLAUDE_PLUGIN_ROOT}/bin/baton\" hook claude SessionStart"
        );
    }

    #[test]
    fn each_client_finds_the_marketplace_and_the_manifest_where_it_reads_them() {
        let paths = |client| -> Vec<String> {
            files(client, "1.2.3")
                .unwrap()
                .into_iter()
                .map(|(p, _)| p)
                .collect()
        };
        assert_eq!(
            paths(Client::Claude),
            [
                ".claude-plugin/marketplace.json",
                "baton/.claude-plugin/plugin.json",
                "baton/hooks/hooks.json",
                "baton/skills/baton/SKILL.md",
            ]
        );
        assert_eq!(
            paths(Client::Codex),
            [
                ".agents/plugins/marketplace.json",
                "baton/.codex-plugin/plugin.json",
                "baton/hooks/hooks.json",
                "baton/skills/baton/SKILL.md",
            ]
        );
        for client in [
            Client::Gemini,
            Client::Cursor,
            Client::Antigravity,
            Client::Copilot,
        ] {
            assert!(files(client, "1.2.3").is_none(), "{client:?}");
        }
    }

    #[test]
    fn the_codex_marketplace_names_its_plugin_by_a_local_source() {
        let v = file(Client::Codex, "marketplace.json");
        assert_eq!(v["name"], NAME);
        assert_eq!(v["plugins"][0]["name"], NAME);
        assert_eq!(
            v["plugins"][0]["source"],
            json!({ "source": "local", "path": "./baton" })
        );
        let manifest = file(Client::Codex, "plugin.json");
        assert_eq!(manifest["name"], NAME);
        assert_eq!(manifest["version"], "1.2.3");
    }

    #[test]
    fn the_trust_of_the_codex_plugins_hooks_is_keyed_and_hashed_as_codex_does() {
        use crate::install::codex_trust::{self, TrustChange};
        let wanted = placements(Client::Codex);
        let v = file(Client::Codex, "hooks/hooks.json");
        for p in &wanted {
            assert_eq!(v["hooks"][&p.event][0]["hooks"][0]["command"], p.command);
        }
        let hooks_file = codex_hooks_file();
        let config = codex_trust::apply(
            None,
            &TrustChange {
                hooks_file: &hooks_file,
                after: &wanted,
                ..Default::default()
            },
        )
        .unwrap()
        .unwrap();
        // As Codex 0.171.0 lists the installed plugin's SessionStart handler (`hooks/list`),
        // and writes its trust when told to trust it.
        assert!(
            config.contains(
                "[hooks.state.\"baton@baton:hooks/hooks.json:session_start:0:0\"]\ntrusted_hash = \"sha256:8f84ce203eee03dec090c26357aabb3aed5af17732ba912e74bc13175b3d9b11\""
            ),
            "{config}"
        );
        assert_eq!(config.matches("trusted_hash").count(), 6, "{config}");
        assert!(placements(Client::Gemini).is_empty());
    }

    #[test]
    fn the_skill_is_the_guide() {
        for client in CLIENTS {
            assert!(
                files(client, "1.2.3")
                    .unwrap()
                    .iter()
                    .any(|(p, t)| p.ends_with("SKILL.md") && *t == instructions::skill_file())
            );
        }
    }
}
