//! Codex runs no hook until it is trusted: per handler, `config.toml` holds
//! `[hooks.state."<hooks.json path>:<event>:<group>:<handler>"] trusted_hash = "sha256:<hex>"`,
//! and a project's own hooks also need `[projects."<path>"] trust_level = "trusted"`. The hash
//! is the SHA-256 of the handler's group as compact JSON with sorted keys:
//! `{"event_name":"session_start","hooks":[{"async":false,"command":…,"timeout":…,"type":"command"}]}`
//! (with `matcher` and `statusMessage` when set), as Codex 0.171.0 computes it.
//!
//! The edits go through `toml_edit`, so the rest of the user's config keeps its formatting.

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use toml_edit::{DocumentMut, Item, Table, value};

use super::settings::{Moved, Placement};

/// The event's name as Codex keys it: `SessionStart` -> `session_start`.
pub fn snake_event(event: &str) -> String {
    let mut out = String::new();
    for (i, c) in event.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// The `hooks.state` key of one handler.
pub fn state_key(hooks_file: &str, event: &str, group: usize, handler: usize) -> String {
    format!("{hooks_file}:{}:{group}:{handler}", snake_event(event))
}

/// `sha256:<hex>` of a handler as Codex hashes it for trust.
pub fn trusted_hash(
    event: &str,
    command: &str,
    timeout: u64,
    matcher: Option<&str>,
    status_message: Option<&str>,
) -> String {
    let mut handler = json!({
        "async": false,
        "command": command,
        "timeout": timeout,
        "type": "command",
    });
    if let Some(message) = status_message {
        handler["statusMessage"] = message.into();
    }
    let mut group = json!({ "event_name": snake_event(event), "hooks": [handler] });
    if let Some(matcher) = matcher {
        group["matcher"] = matcher.into();
    }
    let canonical = sorted(group).to_string();
    let digest = Sha256::digest(canonical.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// Every object's keys in sorted order (serde_json here keeps insertion order).
fn sorted(v: Value) -> Value {
    match v {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k, sorted(v)))
                    .collect::<Map<_, _>>(),
            )
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

/// What to change in `config.toml` for one hooks file.
#[derive(Debug, Clone, Default)]
pub struct TrustChange<'a> {
    /// The hooks file's absolute path, as Codex names it in the keys.
    pub hooks_file: &'a str,
    /// baton's handlers before the change: their entries go (unless still wanted).
    pub before: &'a [Placement],
    /// baton's handlers after the change: each gets its entry.
    pub after: &'a [Placement],
    /// The user's groups that moved: their entries follow them.
    pub moved: &'a [Moved],
    /// A project to mark trusted.
    pub trust_project: Option<&'a str>,
    /// When set, every handler left in the hooks file: entries for this file that point at
    /// none of them go too (what an interrupted earlier removal left behind).
    pub remaining: Option<&'a [(String, usize, usize)]>,
}

/// Applies `change` to the config text (`None`: no file yet). `Ok(None)`: nothing is left.
pub fn apply(text: Option<&str>, change: &TrustChange) -> Result<Option<String>, String> {
    let original = text.unwrap_or_default();
    let mut doc: DocumentMut = original
        .parse()
        .map_err(|e: toml_edit::TomlError| e.to_string().trim_end().to_string())?;
    let keys_after: Vec<String> = change
        .after
        .iter()
        .map(|p| state_key(change.hooks_file, &p.event, p.group, p.handler))
        .collect();
    let stale: Vec<String> = change
        .before
        .iter()
        .map(|p| state_key(change.hooks_file, &p.event, p.group, p.handler))
        .filter(|k| !keys_after.contains(k))
        .collect();
    let dangling = match change.remaining {
        Some(remaining) => dangling_keys(&doc, change.hooks_file, remaining),
        None => Vec::new(),
    };
    let stale: Vec<String> = stale.into_iter().chain(dangling).collect();
    let touches_state = !stale.is_empty() || !change.after.is_empty() || !change.moved.is_empty();
    if touches_state {
        let state = state_table(&mut doc)?;
        for key in &stale {
            state.remove(key);
        }
        move_entries(state, change);
        for (p, key) in change.after.iter().zip(&keys_after) {
            let matcher = crate::client::Client::Codex.def().hook_matcher(&p.event);
            let hash = trusted_hash(&p.event, &p.command, p.timeout.unwrap_or(0), matcher, None);
            let already = state
                .get(key)
                .and_then(|t| t.get("trusted_hash"))
                .and_then(Item::as_str)
                == Some(hash.as_str());
            if !already {
                let mut entry = Table::new();
                entry.insert("trusted_hash", value(hash));
                state.insert(key, Item::Table(entry));
            }
        }
        prune_empty(&mut doc);
    }
    if let Some(project) = change.trust_project
        && !project_trusted(&doc, project)
    {
        let projects = doc
            .entry("projects")
            .or_insert_with(|| Item::Table(implicit_table()))
            .as_table_mut()
            .ok_or("`projects` is not a table")?;
        let entry = projects
            .entry(project)
            .or_insert_with(|| Item::Table(Table::new()))
            .as_table_mut()
            .ok_or("a `projects` entry is not a table")?;
        entry.insert("trust_level", value("trusted"));
    }
    let out = doc.to_string();
    if out == original {
        return Ok(text.map(str::to_string));
    }
    Ok((!out.trim().is_empty()).then_some(out))
}

/// The `hooks.state` keys of `hooks_file` that name a handler it no longer has.
fn dangling_keys(
    doc: &DocumentMut,
    hooks_file: &str,
    remaining: &[(String, usize, usize)],
) -> Vec<String> {
    let Some(state) = doc
        .get("hooks")
        .and_then(|h| h.get("state"))
        .and_then(Item::as_table_like)
    else {
        return Vec::new();
    };
    let live: Vec<String> = remaining
        .iter()
        .map(|(event, g, h)| state_key(hooks_file, event, *g, *h))
        .collect();
    let prefix = format!("{hooks_file}:");
    state
        .iter()
        .map(|(k, _)| k.to_string())
        .filter(|k| {
            k.strip_prefix(&prefix)
                .is_some_and(|rest| rest.split(':').count() == 3)
                && !live.contains(k)
        })
        .collect()
}

/// Whether `config.toml` marks `project` trusted.
pub fn is_project_trusted(text: &str, project: &str) -> bool {
    text.parse::<DocumentMut>()
        .is_ok_and(|doc| project_trusted(&doc, project))
}

fn project_trusted(doc: &DocumentMut, project: &str) -> bool {
    doc.get("projects")
        .and_then(|p| p.get(project))
        .and_then(|p| p.get("trust_level"))
        .and_then(Item::as_str)
        == Some("trusted")
}

fn implicit_table() -> Table {
    let mut t = Table::new();
    t.set_implicit(true);
    t
}

fn state_table(doc: &mut DocumentMut) -> Result<&mut Table, String> {
    doc.entry("hooks")
        .or_insert_with(|| Item::Table(implicit_table()))
        .as_table_mut()
        .ok_or("`hooks` is not a table")?
        .entry("state")
        .or_insert_with(|| Item::Table(implicit_table()))
        .as_table_mut()
        .ok_or_else(|| "`hooks.state` is not a table".to_string())
}

/// The user's groups that moved up keep their trust: their entries move with them, in the
/// order that never overwrites one still to move.
fn move_entries(state: &mut Table, change: &TrustChange) {
    for m in change.moved {
        let prefix = format!(
            "{}:{}:{}:",
            change.hooks_file,
            snake_event(&m.event),
            m.from
        );
        let keys: Vec<String> = state
            .iter()
            .map(|(k, _)| k.to_string())
            .filter(|k| k.starts_with(&prefix))
            .collect();
        for key in keys {
            let handler = &key[prefix.len()..];
            if let Some(item) = state.remove(&key) {
                let to = format!(
                    "{}:{}:{}:{handler}",
                    change.hooks_file,
                    snake_event(&m.event),
                    m.to
                );
                state.insert(&to, item);
            }
        }
    }
}

/// `hooks.state` and `hooks` go when nothing is left in them.
fn prune_empty(doc: &mut DocumentMut) {
    let Some(hooks) = doc.get_mut("hooks").and_then(Item::as_table_mut) else {
        return;
    };
    if hooks
        .get("state")
        .and_then(Item::as_table)
        .is_some_and(Table::is_empty)
    {
        hooks.remove("state");
    }
    if hooks.is_empty() {
        doc.remove("hooks");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn placement(event: &str, group: usize) -> Placement {
        Placement {
            event: event.into(),
            group,
            handler: 0,
            command: format!("baton hook codex {event}"),
            timeout: Some(10),
        }
    }

    #[test]
    fn events_are_keyed_in_snake_case() {
        assert_eq!(snake_event("SessionStart"), "session_start");
        assert_eq!(snake_event("UserPromptSubmit"), "user_prompt_submit");
        assert_eq!(snake_event("Stop"), "stop");
        assert_eq!(snake_event("PreCompact"), "pre_compact");
    }

    /// The canonical JSON, spelled out: sorted keys, no spaces.
    #[test]
    fn the_hash_is_over_the_sorted_compact_group() {
        let canonical = r#"{"event_name":"session_start","hooks":[{"async":false,"command":"baton hook codex SessionStart","timeout":10,"type":"command"}]}"#;
        let hex: String = Sha256::digest(canonical.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(
            trusted_hash(
                "SessionStart",
                "baton hook codex SessionStart",
                10,
                None,
                None
            ),
            format!("sha256:{hex}")
        );
    }

    #[test]
    fn trust_entries_come_and_go_leaving_the_users_config_as_it_was() {
        let user = "model = \"o3\"\n\n[projects.\"/p\"]\ntrust_level = \"untrusted\"\n";
        let after = [placement("SessionStart", 0), placement("Stop", 1)];
        let added = apply(
            Some(user),
            &TrustChange {
                hooks_file: "/h/hooks.json",
                after: &after,
                ..Default::default()
            },
        )
        .unwrap()
        .unwrap();
        assert!(
            added.contains("[hooks.state.\"/h/hooks.json:stop:1:0\"]\ntrusted_hash = \"sha256:"),
            "{added}"
        );
        assert!(!added.contains("[hooks]\n"), "{added}");
        let again = apply(
            Some(&added),
            &TrustChange {
                hooks_file: "/h/hooks.json",
                before: &after,
                after: &after,
                ..Default::default()
            },
        )
        .unwrap()
        .unwrap();
        assert_eq!(again, added);
        let removed = apply(
            Some(&added),
            &TrustChange {
                hooks_file: "/h/hooks.json",
                before: &after,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(removed.as_deref(), Some(user));
    }

    #[test]
    fn a_new_config_with_only_trust_entries_goes_when_they_go() {
        let after = [placement("Stop", 0)];
        let change = TrustChange {
            hooks_file: "/h/hooks.json",
            after: &after,
            ..Default::default()
        };
        let added = apply(None, &change).unwrap().unwrap();
        let removed = apply(
            Some(&added),
            &TrustChange {
                hooks_file: "/h/hooks.json",
                before: &after,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(removed, None);
    }

    #[test]
    fn a_project_is_trusted_once() {
        let change = TrustChange {
            hooks_file: "/p/.codex/hooks.json",
            trust_project: Some("/p"),
            ..Default::default()
        };
        let text = apply(Some("model = \"o3\"\n"), &change).unwrap().unwrap();
        assert!(is_project_trusted(&text, "/p"));
        assert_eq!(apply(Some(&text), &change).unwrap().unwrap(), text);
    }

    #[test]
    fn a_removal_drops_entries_that_name_no_handler() {
        let text = "[hooks.state.\"/h:stop:0:0\"]\ntrusted_hash = \"sha256:ab\"\n\n[hooks.state.\"/h:stop:1:0\"]\ntrusted_hash = \"sha256:cd\"\n\n[hooks.state.\"/other:stop:1:0\"]\ntrusted_hash = \"sha256:ef\"\n";
        let remaining = [("Stop".to_string(), 0, 0)];
        let out = apply(
            Some(text),
            &TrustChange {
                hooks_file: "/h",
                remaining: Some(&remaining),
                ..Default::default()
            },
        )
        .unwrap()
        .unwrap();
        assert!(
            out.contains("/h:stop:0:0") && out.contains("/other:stop:1:0"),
            "{out}"
        );
        assert!(!out.contains("/h:stop:1:0"), "{out}");
    }

    #[test]
    fn moved_groups_keep_their_trust() {
        let text = "[hooks.state.\"/h:stop:2:0\"]\ntrusted_hash = \"sha256:ab\"\n";
        let moved = [Moved {
            event: "Stop".into(),
            from: 2,
            to: 1,
        }];
        let out = apply(
            Some(text),
            &TrustChange {
                hooks_file: "/h",
                moved: &moved,
                ..Default::default()
            },
        )
        .unwrap()
        .unwrap();
        assert!(out.contains("\"/h:stop:1:0\""), "{out}");
        assert!(!out.contains(":stop:2:0"), "{out}");
    }
}
