//! baton as a Claude Code plugin, in a marketplace of its own (`baton init claude --plugin
//! DIR`): the files' text, as functions of the client's definition and the guide. The plugin's
//! hooks call the plugin's own `bin/baton`, which Claude Code also puts on the `PATH` of the
//! agent's tool calls, so nothing in it names a path of one machine.

use serde_json::{Map, Value, json};

use super::instructions;
use super::settings::baton_group;
use crate::client::Client;

/// The marketplace's and the plugin's name: `claude plugin install baton@baton`.
pub const NAME: &str = "baton";

/// The program the plugin's hooks run: its own copy of baton, quoted for the shell (the
/// plugin's directory may hold a space).
pub const PLUGIN_BATON: &str = "\"${CLAUDE_PLUGIN_ROOT}/bin/baton\"";

/// Every file of the marketplace but the binary, as `(path under DIR, text)`: the marketplace
/// at `.claude-plugin/marketplace.json`, the plugin under `baton/`.
pub fn claude_files(version: &str) -> Vec<(String, String)> {
    let client = Client::Claude;
    let def = client.def();
    let mut hooks = Map::new();
    for event in def.hook_events() {
        hooks.insert(
            (*event).to_string(),
            json!([baton_group(client, PLUGIN_BATON, event)]),
        );
    }
    let description = "Durable run state for coding-agent runs: a run interrupted by a rate limit, a crash or a compaction resumes where it stopped.";
    let pretty = |v: Value| format!("{}\n", serde_json::to_string_pretty(&v).unwrap_or_default());
    vec![
        (
            ".claude-plugin/marketplace.json".into(),
            pretty(json!({
                "$schema": "https://json.schemastore.org/claude-code-marketplace.json",
                "name": NAME,
                "owner": { "name": NAME },
                "plugins": [{
                    "name": NAME,
                    "source": format!("./{NAME}"),
                    "description": description,
                    "version": version,
                }],
            })),
        ),
        (
            format!("{NAME}/.claude-plugin/plugin.json"),
            pretty(json!({
                "name": NAME,
                "version": version,
                "description": description,
                "author": { "name": NAME },
            })),
        ),
        (
            format!("{NAME}/hooks/hooks.json"),
            pretty(json!({ "hooks": Value::Object(hooks) })),
        ),
        (
            format!("{NAME}/skills/{NAME}/SKILL.md"),
            instructions::skill_file(),
        ),
    ]
}

/// Where the binary goes under DIR.
pub fn claude_binary() -> String {
    format!("{NAME}/bin/baton")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::install::baton_hook_event;

    #[test]
    fn every_hook_of_the_client_calls_the_plugins_own_baton() {
        let files = claude_files("1.2.3");
        let (_, hooks) = files
            .iter()
            .find(|(p, _)| p.ends_with("hooks/hooks.json"))
            .unwrap();
        let v: Value = serde_json::from_str(hooks).unwrap();
        for event in Client::Claude.def().hook_events() {
            let command = v["hooks"][*event][0]["hooks"][0]["command"]
                .as_str()
                .unwrap();
            assert!(command.starts_with(PLUGIN_BATON), "{command}");
            assert!(!command.contains("/usr") && !command.contains("/home"));
            assert_eq!(
                baton_hook_event(
                    &command.replace("${CLAUDE_PLUGIN_ROOT}", "/p"),
                    Client::Claude
                )
                .as_deref(),
                Some(*event)
            );
        }
    }

    #[test]
    fn the_skill_is_the_guide() {
        let files = claude_files("1.2.3");
        assert!(
            files
                .iter()
                .any(|(p, t)| p.ends_with("SKILL.md") && *t == instructions::skill_file())
        );
    }
}
