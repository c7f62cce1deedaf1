//! baton's hook entries in a client's JSON hook settings (`.claude/settings.json`,
//! `.codex/hooks.json`, `.gemini/settings.json`), merged into the text the user has.
//!
//! The file is edited as a concrete syntax tree, so everything baton does not touch keeps its
//! bytes: key order, indentation, comments (Gemini's settings allow them), a missing final
//! newline. baton's group is appended to its event's array, or rewritten in place when it is
//! already there; installing twice gives the same bytes, and removing gives back the file as
//! it was before the install.

use jsonc_parser::ParseOptions;
use jsonc_parser::cst::{CstArray, CstInputValue, CstNode, CstObject, CstRootNode};
use serde_json::{Value, json};

use super::{baton_hook_event, hook_command};
use crate::client::{Client, Dialect, SettingsShape};

/// Why a settings file cannot be edited. The message names no file: the caller knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SettingsError {
    /// Not JSON at all (`line:column: message`).
    Syntax(String),
    /// JSON, but not the shape the client reads (the root or `hooks` is no object, an event is
    /// no array).
    Shape(String),
    /// A file of baton's own name that someone else wrote (OpenCode's plugin).
    NotOurs(String),
}

impl std::fmt::Display for SettingsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SettingsError::Syntax(m) => write!(f, "is not valid JSON: {m}"),
            SettingsError::Shape(m) => write!(f, "is not a hook settings file: {m}"),
            SettingsError::NotOurs(m) => write!(f, "is {m}"),
        }
    }
}

/// Where one of baton's handlers sits: the event, the group's index in the event's array and
/// the handler's index in the group (Codex keys its trust by these).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    pub event: String,
    pub group: usize,
    pub handler: usize,
    pub command: String,
    pub timeout: Option<u64>,
}

/// A group of the user's that moved in its event's array because one of baton's before it
/// went away.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Moved {
    pub event: String,
    pub from: usize,
    pub to: usize,
}

/// The settings after a change: the new text (`None`: nothing is left, the file goes), where
/// baton's handlers were before and are now, and which of the user's groups moved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edited {
    pub text: Option<String>,
    pub before: Vec<Placement>,
    pub after: Vec<Placement>,
    pub moved: Vec<Moved>,
    /// Every handler left in the file, the user's and baton's: `(event, group, handler)`.
    pub handlers: Vec<(String, usize, usize)>,
}

/// The group baton installs for `event`: one command handler, with the client's matcher for
/// the event (the shell tool, for a pre-tool hook) or none (in a flat file, the handler alone,
/// with no timeout).
pub fn baton_group(client: Client, baton: &str, event: &str) -> Value {
    if let SettingsShape::Flat { .. } = client.def().settings_shape() {
        return json!({ "command": hook_command(baton, client, event) });
    }
    let handler = json!({
        "type": "command",
        "command": hook_command(baton, client, event),
        "timeout": client.def().hook_timeout(event),
    });
    match client.def().hook_matcher(event) {
        Some(matcher) => json!({ "matcher": matcher, "hooks": [handler] }),
        None => json!({ "hooks": [handler] }),
    }
}

/// Merges baton's hook entries for `client` into `text` (`None`: no file yet).
pub fn install(text: Option<&str>, client: Client, baton: &str) -> Result<Edited, SettingsError> {
    if client.def().settings_shape() == SettingsShape::Plugin {
        return super::opencode_plugin::install(text, baton);
    }
    if let SettingsShape::Named { name } = client.def().settings_shape() {
        return install_named(text, client, baton, name);
    }
    if client.def().settings_shape() == SettingsShape::Handlers {
        return super::hook_file::install(text, client, baton);
    }
    let root = parse(text, client.def().settings_dialect())?;
    let before = placements(&root, client)?;
    let obj = root_object(&root)?;
    // A flat file (Cursor's) is read only with its `version`: a new one gets it first.
    if let SettingsShape::Flat { version } = client.def().settings_shape()
        && obj.get("version").is_none()
    {
        obj.insert(0, "version", CstInputValue::Number(version.to_string()));
    }
    let hooks = match obj.get("hooks") {
        Some(prop) => prop
            .value()
            .and_then(|v| v.as_object())
            .ok_or_else(|| SettingsError::Shape("`hooks` is not an object".into()))?,
        None => obj.object_value_or_set("hooks"),
    };
    let wanted = client.def().hook_events();
    // Baton's groups under events it no longer installs go first, so that the rest is one pass.
    let mut moved = Vec::new();
    for prop in hooks.properties() {
        let Some(name) = prop.decoded_name() else {
            continue;
        };
        if wanted.contains(&name.as_str()) {
            continue;
        }
        if let Some(array) = prop.value().and_then(|v| v.as_array()) {
            let removed = remove_baton_groups(&array, client, &name, &mut moved);
            if removed && array.elements().is_empty() {
                prop.remove();
            }
        }
    }
    for &event in wanted {
        let group = baton_group(client, baton, event);
        let array = match hooks.get(event) {
            Some(prop) => prop
                .value()
                .and_then(|v| v.as_array())
                .ok_or_else(|| SettingsError::Shape(format!("`hooks.{event}` is not an array")))?,
            None => hooks.array_value_or_set(event),
        };
        let elements = array.elements();
        let mine: Vec<usize> = (0..elements.len())
            .filter(|&i| is_baton_group(&elements[i], client))
            .collect();
        match mine.split_first() {
            None => {
                array.append(to_input(&group));
            }
            Some((&first, rest)) => {
                for &i in rest.iter().rev() {
                    elements[i].clone().remove();
                }
                let current = elements[first].to_serde_value();
                if current.as_ref() != Some(&group)
                    && let Some(object) = elements[first].as_object()
                {
                    object.replace_with(to_input(&group));
                }
                // Later duplicates are gone: the user's groups after them moved up.
                let mut shift = 0;
                for i in first + 1..elements.len() {
                    if rest.contains(&i) {
                        shift += 1;
                    } else if shift > 0 {
                        moved.push(Moved {
                            event: event.to_string(),
                            from: i,
                            to: i - shift,
                        });
                    }
                }
            }
        }
    }
    let after = placements(&root, client)?;
    Ok(Edited {
        text: Some(root.to_string()),
        before,
        after,
        moved,
        handlers: handlers(&root, client),
    })
}

/// Removes exactly baton's entries for `client` from `text`; an event array or a `hooks`
/// object that only baton's entries filled goes with them, and a file left with nothing in it
/// goes too.
pub fn uninstall(text: Option<&str>, client: Client) -> Result<Edited, SettingsError> {
    if client.def().settings_shape() == SettingsShape::Plugin {
        return Ok(super::opencode_plugin::uninstall(text));
    }
    if client.def().settings_shape() == SettingsShape::Handlers {
        return super::hook_file::uninstall(text, client);
    }
    let Some(text) = text else {
        return Ok(Edited {
            text: None,
            before: Vec::new(),
            after: Vec::new(),
            moved: Vec::new(),
            handlers: Vec::new(),
        });
    };
    if let SettingsShape::Named { name } = client.def().settings_shape() {
        return uninstall_named(text, client, name);
    }
    let root = parse(Some(text), client.def().settings_dialect())?;
    let before = placements(&root, client)?;
    if before.is_empty() {
        return Ok(Edited {
            text: Some(text.to_string()),
            before,
            after: Vec::new(),
            moved: Vec::new(),
            handlers: handlers(&root, client),
        });
    }
    let obj = root_object(&root)?;
    let mut moved = Vec::new();
    if let Some(hooks) = obj.object_value("hooks") {
        for prop in hooks.properties() {
            let Some(name) = prop.decoded_name() else {
                continue;
            };
            if let Some(array) = prop.value().and_then(|v| v.as_array()) {
                let removed = remove_baton_groups(&array, client, &name, &mut moved);
                if removed && array.elements().is_empty() {
                    prop.remove();
                }
            }
        }
        if hooks.properties().is_empty()
            && let Some(prop) = obj.get("hooks")
        {
            prop.remove();
        }
    }
    let out = root.to_string();
    let mut empty = out.chars().filter(|c| !c.is_whitespace()).eq("{}".chars());
    // A flat file left with only the `version` baton's install put there holds nothing.
    if let SettingsShape::Flat { .. } = client.def().settings_shape()
        && let Some(Value::Object(map)) = root.value().and_then(|v| v.to_serde_value())
    {
        empty |= map.keys().all(|k| k == "version");
    }
    Ok(Edited {
        text: (!empty).then_some(out),
        before,
        after: Vec::new(),
        moved,
        handlers: handlers(&root, client),
    })
}

/// baton's own named hook for `client`: each event baton installs, with its one handler.
pub fn baton_named_hook(client: Client, baton: &str) -> Value {
    let events: serde_json::Map<String, Value> = client
        .def()
        .hook_events()
        .iter()
        .map(|&event| {
            let handler = json!({
                "type": "command",
                "command": hook_command(baton, client, event),
                "timeout": client.def().hook_timeout(event),
            });
            (event.to_string(), json!([handler]))
        })
        .collect();
    Value::Object(events)
}

/// Whether a named hook is baton's: every handler under every event is baton's hook for
/// `client` (an `enabled` switch aside), and there is at least one.
fn is_baton_named(hook: &Value, client: Client) -> bool {
    let Some(events) = hook.as_object() else {
        return false;
    };
    let mut any = false;
    for (key, handlers) in events {
        if key == "enabled" && handlers.is_boolean() {
            continue;
        }
        let Some(handlers) = handlers.as_array() else {
            return false;
        };
        for h in handlers {
            let mine = h
                .get("command")
                .and_then(Value::as_str)
                .is_some_and(|c| baton_hook_event(c, client).is_some());
            if !mine {
                return false;
            }
            any = true;
        }
    }
    any
}

/// Sets baton's named hook in a file of named hooks, keeping every other hook as it is.
fn install_named(
    text: Option<&str>,
    client: Client,
    baton: &str,
    name: &str,
) -> Result<Edited, SettingsError> {
    let root = parse(text, client.def().settings_dialect())?;
    let before = placements(&root, client)?;
    let obj = root_object(&root)?;
    let wanted = baton_named_hook(client, baton);
    match obj.get(name) {
        Some(prop) => {
            let current = prop.value().and_then(|v| v.to_serde_value());
            if current.as_ref() != Some(&wanted) {
                if !current.as_ref().is_some_and(|v| is_baton_named(v, client)) {
                    return Err(SettingsError::Shape(format!(
                        "its hook `{name}` holds commands that are not baton's: rename that hook"
                    )));
                }
                prop.set_value(to_input(&wanted));
            }
        }
        None => {
            obj.append(name, to_input(&wanted));
        }
    }
    let after = placements(&root, client)?;
    Ok(Edited {
        text: Some(root.to_string()),
        before,
        after,
        moved: Vec::new(),
        handlers: Vec::new(),
    })
}

/// Removes baton's named hook (only when it holds nothing but baton's handlers); a file left
/// empty goes.
fn uninstall_named(text: &str, client: Client, name: &str) -> Result<Edited, SettingsError> {
    let root = parse(Some(text), client.def().settings_dialect())?;
    let before = placements(&root, client)?;
    let obj = root_object(&root)?;
    if let Some(prop) = obj.get(name)
        && prop
            .value()
            .and_then(|v| v.to_serde_value())
            .is_some_and(|v| is_baton_named(&v, client))
    {
        prop.remove();
    }
    let out = root.to_string();
    let empty = out.chars().filter(|c| !c.is_whitespace()).eq("{}".chars());
    Ok(Edited {
        text: (!empty).then_some(out),
        before,
        after: Vec::new(),
        moved: Vec::new(),
        handlers: Vec::new(),
    })
}

/// The events baton's handlers for `client` are installed for in the settings `text`.
pub fn installed_events(text: &str, client: Client) -> Result<Vec<String>, SettingsError> {
    Ok(installed(text, client)?
        .into_iter()
        .map(|(e, _)| e)
        .collect())
}

/// baton's handlers for `client` in the settings `text`: each event, with the command it runs.
pub fn installed(text: &str, client: Client) -> Result<Vec<(String, String)>, SettingsError> {
    match client.def().settings_shape() {
        SettingsShape::Plugin => Ok(super::opencode_plugin::installed(text, client)),
        SettingsShape::Handlers => super::hook_file::installed(text, client),
        _ => {
            let root = parse(Some(text), client.def().settings_dialect())?;
            Ok(placements(&root, client)?
                .into_iter()
                .map(|p| (p.event, p.command))
                .collect())
        }
    }
}

/// Every handler in the settings: `(event, group, handler)`.
fn handlers(root: &CstRootNode, client: Client) -> Vec<(String, usize, usize)> {
    let Some(Value::Object(map)) = root.value().and_then(|v| v.to_serde_value()) else {
        return Vec::new();
    };
    let Some(Value::Object(hooks)) = map.get("hooks") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (event, groups) in hooks {
        for (g, group) in groups.as_array().into_iter().flatten().enumerate() {
            let count = handlers_of(group, client).len();
            out.extend((0..count).map(|h| (event.clone(), g, h)));
        }
    }
    out
}

/// Every handler of baton's for `client` in the settings, in file order.
fn placements(root: &CstRootNode, client: Client) -> Result<Vec<Placement>, SettingsError> {
    let Some(Value::Object(map)) = root.value().and_then(|v| v.to_serde_value()) else {
        return Ok(Vec::new());
    };
    if let SettingsShape::Named { name } = client.def().settings_shape() {
        let mut out = Vec::new();
        if let Some(hook @ Value::Object(events)) = map.get(name)
            && is_baton_named(hook, client)
        {
            for (event, handlers) in events {
                for (h, handler) in handlers.as_array().into_iter().flatten().enumerate() {
                    out.push(Placement {
                        event: event.clone(),
                        group: 0,
                        handler: h,
                        command: handler["command"].as_str().unwrap_or_default().to_string(),
                        timeout: handler["timeout"].as_u64(),
                    });
                }
            }
        }
        return Ok(out);
    }
    let Some(Value::Object(hooks)) = map.get("hooks") else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for (event, groups) in hooks {
        let Value::Array(groups) = groups else {
            continue;
        };
        for (g, group) in groups.iter().enumerate() {
            if !is_baton_group_value(group, client) {
                continue;
            }
            for (h, handler) in handlers_of(group, client).into_iter().enumerate() {
                out.push(Placement {
                    event: event.clone(),
                    group: g,
                    handler: h,
                    command: handler["command"].as_str().unwrap_or_default().to_string(),
                    timeout: handler["timeout"].as_u64(),
                });
            }
        }
    }
    Ok(out)
}

/// Removes baton's groups from one event's array, noting the user's groups that move up.
fn remove_baton_groups(
    array: &CstArray,
    client: Client,
    event: &str,
    moved: &mut Vec<Moved>,
) -> bool {
    let elements = array.elements();
    let mut shift = 0;
    for (i, element) in elements.iter().enumerate() {
        if is_baton_group(element, client) {
            shift += 1;
        } else if shift > 0 {
            moved.push(Moved {
                event: event.to_string(),
                from: i,
                to: i - shift,
            });
        }
    }
    for element in elements.into_iter().rev() {
        if is_baton_group(&element, client) {
            element.remove();
        }
    }
    shift > 0
}

fn is_baton_group(node: &CstNode, client: Client) -> bool {
    node.to_serde_value()
        .is_some_and(|v| is_baton_group_value(&v, client))
}

/// A group is baton's when every handler in it is baton's hook for this client: a group that
/// mixes in a handler of the user's stays the user's.
fn is_baton_group_value(group: &Value, client: Client) -> bool {
    let handlers = handlers_of(group, client);
    !handlers.is_empty()
        && handlers.iter().all(|h| {
            h.get("command")
                .and_then(Value::as_str)
                .is_some_and(|c| baton_hook_event(c, client).is_some())
        })
}

/// The handlers of one entry of an event's array: a group's `hooks`, or in a flat file the
/// entry itself when it runs a command.
fn handlers_of(group: &Value, client: Client) -> Vec<&Value> {
    match client.def().settings_shape() {
        SettingsShape::Groups => group
            .get("hooks")
            .and_then(Value::as_array)
            .map(|hs| hs.iter().collect())
            .unwrap_or_default(),
        SettingsShape::Flat { .. }
        | SettingsShape::Named { .. }
        | SettingsShape::Handlers
        | SettingsShape::Plugin => group
            .get("command")
            .is_some()
            .then_some(group)
            .into_iter()
            .collect(),
    }
}

fn parse(text: Option<&str>, dialect: Dialect) -> Result<CstRootNode, SettingsError> {
    let text = match text {
        Some(t) if !t.trim().is_empty() => t,
        _ => "{}\n",
    };
    let options = match dialect {
        Dialect::Json => {
            // The strict parser names the line and column of the first error.
            serde_json::from_str::<Value>(text)
                .map_err(|e| SettingsError::Syntax(format!("{}:{}: {e}", e.line(), e.column())))?;
            ParseOptions {
                allow_comments: false,
                allow_loose_object_property_names: false,
                allow_trailing_commas: false,
                allow_missing_commas: false,
                allow_single_quoted_strings: false,
                allow_hexadecimal_numbers: false,
                ..ParseOptions::default()
            }
        }
        Dialect::JsonWithComments => ParseOptions {
            allow_comments: true,
            allow_loose_object_property_names: false,
            allow_trailing_commas: true,
            allow_missing_commas: false,
            allow_single_quoted_strings: false,
            allow_hexadecimal_numbers: false,
            ..ParseOptions::default()
        },
    };
    CstRootNode::parse(text, &options).map_err(|e| SettingsError::Syntax(e.to_string()))
}

fn root_object(root: &CstRootNode) -> Result<CstObject, SettingsError> {
    match root.value() {
        None => Ok(root.object_value_or_set()),
        Some(v) => v
            .as_object()
            .ok_or_else(|| SettingsError::Shape("the top level is not an object".into())),
    }
}

fn to_input(value: &Value) -> CstInputValue {
    match value {
        Value::Null => CstInputValue::Null,
        Value::Bool(b) => CstInputValue::Bool(*b),
        Value::Number(n) => CstInputValue::Number(n.to_string()),
        Value::String(s) => CstInputValue::String(s.clone()),
        Value::Array(items) => CstInputValue::Array(items.iter().map(to_input).collect()),
        Value::Object(map) => {
            CstInputValue::Object(map.iter().map(|(k, v)| (k.clone(), to_input(v))).collect())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const USER: &str = r#"{
  "model": "opus",
  "hooks": {
    "Stop": [
      {
        "matcher": "",
        "hooks": [
          {
            "type": "command",
            "command": "notify-send done"
          }
        ]
      }
    ],
    "PreToolUse": [
      {
        "matcher": "Bash",
        "hooks": [
          {
            "type": "command",
            "command": "./check.sh"
          }
        ]
      }
    ]
  },
  "env": {
    "A": "1"
  }
}
"#;

    fn install_text(text: Option<&str>, client: Client, baton: &str) -> String {
        install(text, client, baton).unwrap().text.unwrap()
    }

    #[test]
    fn install_keeps_the_users_entries_and_uninstall_gives_back_the_bytes() {
        let grouped = Client::ALL
            .into_iter()
            .filter(|c| c.def().settings_shape() == SettingsShape::Groups);
        for client in grouped {
            let once = install_text(Some(USER), client, "baton");
            let value: Value = serde_json::from_str(&once).unwrap();
            assert_eq!(value["model"], "opus");
            assert_eq!(value["env"]["A"], "1");
            assert_eq!(value["hooks"]["PreToolUse"][0]["matcher"], "Bash");
            assert_eq!(
                value["hooks"]["Stop"][0]["hooks"][0]["command"],
                "notify-send done"
            );
            let twice = install_text(Some(&once), client, "baton");
            assert_eq!(once, twice, "{client:?}: a second install changes nothing");
            let removed = uninstall(Some(&once), client).unwrap();
            assert_eq!(removed.text.as_deref(), Some(USER), "{client:?}");
        }
    }

    #[test]
    fn a_new_path_to_baton_replaces_the_old_entry_in_place() {
        let old = install_text(Some(USER), Client::Claude, "/old/bin/baton");
        let new = install(Some(&old), Client::Claude, "baton").unwrap();
        let value: Value = serde_json::from_str(new.text.as_deref().unwrap()).unwrap();
        let stop = value["hooks"]["Stop"].as_array().unwrap();
        assert_eq!(stop.len(), 2);
        assert_eq!(stop[1]["hooks"][0]["command"], "baton hook claude Stop");
        assert_eq!(
            uninstall(new.text.as_deref(), Client::Claude)
                .unwrap()
                .text
                .as_deref(),
            Some(USER)
        );
    }

    #[test]
    fn a_new_file_holds_only_batons_hooks_and_goes_on_uninstall() {
        let text = install_text(None, Client::Codex, "baton");
        assert!(
            text.starts_with("{\n  \"hooks\": {\n    \"SessionStart\": [\n"),
            "{text}"
        );
        let removed = uninstall(Some(&text), Client::Codex).unwrap();
        assert_eq!(removed.text, None);
        assert_eq!(
            removed.before.len(),
            Client::Codex.def().hook_events().len()
        );
    }

    #[test]
    fn placements_give_the_group_index_after_the_users_groups() {
        let edited = install(Some(USER), Client::Codex, "baton").unwrap();
        let stop = edited.after.iter().find(|p| p.event == "Stop").unwrap();
        assert_eq!((stop.group, stop.handler), (1, 0));
        let end = edited
            .after
            .iter()
            .find(|p| p.event == "SessionEnd")
            .unwrap();
        assert_eq!((end.group, end.timeout), (0, Some(3)));
        assert!(edited.before.is_empty());
    }

    #[test]
    fn uninstall_notes_the_users_groups_that_move_up() {
        let once = install_text(Some(USER), Client::Codex, "baton");
        let mut value: Value = serde_json::from_str(&once).unwrap();
        let user_group = json!({"hooks": [{"type": "command", "command": "after.sh"}]});
        value["hooks"]["Stop"]
            .as_array_mut()
            .unwrap()
            .push(user_group);
        let text = serde_json::to_string_pretty(&value).unwrap();
        let removed = uninstall(Some(&text), Client::Codex).unwrap();
        assert_eq!(
            removed.moved,
            [Moved {
                event: "Stop".into(),
                from: 2,
                to: 1
            }]
        );
    }

    #[test]
    fn gemini_settings_may_hold_comments_and_claude_settings_may_not() {
        let text = "{\n  // mine\n  \"ui\": {}\n}\n";
        let merged = install_text(Some(text), Client::Gemini, "baton");
        assert!(merged.contains("// mine"));
        assert_eq!(
            uninstall(Some(&merged), Client::Gemini)
                .unwrap()
                .text
                .as_deref(),
            Some(text)
        );
        assert!(matches!(
            install(Some(text), Client::Claude, "baton"),
            Err(SettingsError::Syntax(_))
        ));
    }

    #[test]
    fn the_wrong_shape_is_refused() {
        for text in [
            "[]",
            "{\"hooks\": []}",
            "{\"hooks\": {\"Stop\": {}}}",
            "{\"a\": 1,}",
        ] {
            assert!(
                install(Some(text), Client::Claude, "baton").is_err(),
                "{text}"
            );
        }
    }

    #[test]
    fn cursor_entries_are_flat_commands_beside_the_users_and_a_version() {
        let user = r#"{
  "version": 1,
  "hooks": {
    "stop": [
      { "command": "./notify.sh", "loop_limit": 3 }
    ],
    "afterFileEdit": [
      { "command": "prettier --write" }
    ]
  }
}
"#;
        let once = install_text(Some(user), Client::Cursor, "baton");
        let value: Value = serde_json::from_str(&once).unwrap();
        assert_eq!(value["version"], 1);
        let stop = value["hooks"]["stop"].as_array().unwrap();
        assert_eq!(stop[0]["command"], "./notify.sh");
        assert_eq!(stop[1], json!({ "command": "baton hook cursor stop" }));
        assert_eq!(
            value["hooks"]["sessionStart"][0]["command"],
            "baton hook cursor sessionStart"
        );
        assert_eq!(install_text(Some(&once), Client::Cursor, "baton"), once);
        let removed = uninstall(Some(&once), Client::Cursor).unwrap();
        assert_eq!(removed.text.as_deref(), Some(user));

        // A new file: `version` first, and nothing left once baton's entries go.
        let new = install_text(None, Client::Cursor, "baton");
        assert!(
            new.starts_with("{\n  \"version\": 1,\n  \"hooks\": {"),
            "{new}"
        );
        serde_json::from_str::<Value>(&new).unwrap();
        assert_eq!(uninstall(Some(&new), Client::Cursor).unwrap().text, None);
    }

    #[test]
    fn antigravity_keeps_batons_handlers_in_one_named_hook() {
        let user = r#"{
  "shell-audit": {
    "PreToolUse": [
      {
        "matcher": "run_command",
        "hooks": [{ "type": "command", "command": "./audit.sh", "timeout": 5 }]
      }
    ]
  },
  "lint-on-stop": {
    "Stop": [{ "command": "make lint" }]
  }
}
"#;
        let once = install_text(Some(user), Client::Antigravity, "baton");
        let value: Value = serde_json::from_str(&once).unwrap();
        assert_eq!(value["lint-on-stop"]["Stop"][0]["command"], "make lint");
        assert_eq!(
            value["baton"]["PreInvocation"][0],
            json!({
                "type": "command",
                "command": "baton hook antigravity PreInvocation",
                "timeout": 10,
            })
        );
        assert_eq!(
            value["baton"]["Stop"][0]["command"],
            "baton hook antigravity Stop"
        );
        assert_eq!(
            install_text(Some(&once), Client::Antigravity, "baton"),
            once
        );
        assert_eq!(
            installed_events(&once, Client::Antigravity).unwrap(),
            ["PreInvocation", "Stop", "PreToolUse"]
        );
        let moved = install(Some(&once), Client::Antigravity, "/opt/bin/baton").unwrap();
        assert!(
            moved
                .text
                .unwrap()
                .contains("/opt/bin/baton hook antigravity Stop")
        );
        let removed = uninstall(Some(&once), Client::Antigravity).unwrap();
        assert_eq!(removed.text.as_deref(), Some(user));

        // A new file holds only baton's hook, and goes with it.
        let new = install_text(None, Client::Antigravity, "baton");
        serde_json::from_str::<Value>(&new).unwrap();
        assert_eq!(
            uninstall(Some(&new), Client::Antigravity).unwrap().text,
            None
        );

        // A hook of the user's named `baton` is not baton's to overwrite or remove.
        let theirs = r#"{"baton": {"Stop": [{"command": "./mine.sh"}]}}"#;
        assert!(matches!(
            install(Some(theirs), Client::Antigravity, "baton"),
            Err(SettingsError::Shape(_))
        ));
        assert_eq!(
            uninstall(Some(theirs), Client::Antigravity)
                .unwrap()
                .text
                .as_deref(),
            Some(theirs)
        );
        // Strict JSON: a comment is an error.
        assert!(matches!(
            install(Some("{} // x"), Client::Antigravity, "baton"),
            Err(SettingsError::Syntax(_))
        ));
    }
}
