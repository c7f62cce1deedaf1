//! baton's hooks in a hook file of Copilot CLI's shape (`SettingsShape::Handlers`):
//! `{"version": 1, "hooks": {"<event>": [{"type": "command", "bash": …, "timeoutSec": …}]}}`,
//! each event's array holding the handlers themselves. baton writes a file of its own
//! (`.github/hooks/baton.json`), so the user's hook files are never read or written; a handler
//! someone added to baton's file stays, and the keys keep their order.

use serde_json::{Map, Value, json};

use super::settings::{Edited, Placement, SettingsError};
use super::{baton_hook_event, hook_command};
use crate::client::Client;

/// baton's handler for `event`.
pub fn baton_handler(client: Client, baton: &str, event: &str) -> Value {
    json!({
        "type": "command",
        "bash": hook_command(baton, client, event),
        "timeoutSec": client.def().hook_timeout(event),
    })
}

fn is_baton(handler: &Value, client: Client) -> bool {
    handler
        .get("bash")
        .and_then(Value::as_str)
        .is_some_and(|c| baton_hook_event(c, client).is_some())
}

fn parse(text: Option<&str>) -> Result<Map<String, Value>, SettingsError> {
    let text = match text {
        Some(t) if !t.trim().is_empty() => t,
        _ => return Ok(Map::new()),
    };
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => {
            if map.get("hooks").is_some_and(|h| !h.is_object()) {
                return Err(SettingsError::Shape("`hooks` is not an object".into()));
            }
            Ok(map)
        }
        Ok(_) => Err(SettingsError::Shape("the root is not an object".into())),
        Err(e) => Err(SettingsError::Syntax(format!(
            "{}:{}: {e}",
            e.line(),
            e.column()
        ))),
    }
}

/// Every handler of baton's, with its place in its event's array.
fn placements(root: &Map<String, Value>, client: Client) -> Vec<Placement> {
    let Some(Value::Object(hooks)) = root.get("hooks") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (event, handlers) in hooks {
        for (i, h) in handlers.as_array().into_iter().flatten().enumerate() {
            if is_baton(h, client) {
                out.push(Placement {
                    event: event.clone(),
                    group: i,
                    handler: 0,
                    command: h["bash"].as_str().unwrap_or_default().to_string(),
                    timeout: h["timeoutSec"].as_u64(),
                });
            }
        }
    }
    out
}

fn handlers(root: &Map<String, Value>) -> Vec<(String, usize, usize)> {
    let Some(Value::Object(hooks)) = root.get("hooks") else {
        return Vec::new();
    };
    hooks
        .iter()
        .flat_map(|(event, hs)| {
            (0..hs.as_array().map_or(0, Vec::len)).map(move |i| (event.clone(), i, 0))
        })
        .collect()
}

fn render(root: &Map<String, Value>) -> String {
    let mut text = serde_json::to_string_pretty(root).unwrap_or_default();
    text.push('\n');
    text
}

/// Puts baton's handler first in each of its events' arrays (once), keeping every other.
pub fn install(text: Option<&str>, client: Client, baton: &str) -> Result<Edited, SettingsError> {
    let mut root = parse(text)?;
    let before = placements(&root, client);
    if !root.contains_key("version") {
        root.insert("version".into(), json!(1));
    }
    let hooks = root
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .expect("checked by parse");
    let wanted = client.def().hook_events();
    for (event, handlers) in hooks.iter_mut() {
        if let Value::Array(list) = handlers {
            list.retain(|h| !is_baton(h, client));
        } else if wanted.contains(&event.as_str()) {
            return Err(SettingsError::Shape(format!(
                "`hooks.{event}` is not an array"
            )));
        }
    }
    hooks.retain(|_, v| v.as_array().is_none_or(|a| !a.is_empty()));
    for &event in wanted {
        let list = hooks
            .entry(event)
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(list) = list {
            list.push(baton_handler(client, baton, event));
        }
    }
    let new = render(&root);
    // Installing twice gives the same bytes: a file already as baton would write it stays.
    let text_out = match text {
        Some(old) if parse(Some(old)).ok().as_ref() == Some(&root) => old.to_string(),
        _ => new,
    };
    Ok(Edited {
        text: Some(text_out),
        before,
        after: placements(&root, client),
        moved: Vec::new(),
        handlers: handlers(&root),
    })
}

/// Takes out exactly baton's handlers; a file left with nothing but its version goes.
pub fn uninstall(text: Option<&str>, client: Client) -> Result<Edited, SettingsError> {
    let mut root = parse(text)?;
    let before = placements(&root, client);
    if before.is_empty() {
        return Ok(Edited {
            text: text.map(str::to_string),
            before,
            after: Vec::new(),
            moved: Vec::new(),
            handlers: handlers(&root),
        });
    }
    if let Some(Value::Object(hooks)) = root.get_mut("hooks") {
        for list in hooks.values_mut() {
            if let Value::Array(list) = list {
                list.retain(|h| !is_baton(h, client));
            }
        }
        hooks.retain(|_, v| v.as_array().is_none_or(|a| !a.is_empty()));
        if hooks.is_empty() {
            root.remove("hooks");
        }
    }
    let empty = root.keys().all(|k| k == "version");
    Ok(Edited {
        text: (!empty).then(|| render(&root)),
        before,
        after: Vec::new(),
        moved: Vec::new(),
        handlers: handlers(&root),
    })
}

/// baton's handlers for `client`: each event, with the command it runs.
pub fn installed(text: &str, client: Client) -> Result<Vec<(String, String)>, SettingsError> {
    Ok(placements(&parse(Some(text))?, client)
        .into_iter()
        .map(|p| (p.event, p.command))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn baton_s_handlers_go_in_and_out_leaving_the_users() {
        let c = Client::Copilot;
        let users = r#"{"version":1,"hooks":{"sessionStart":[{"type":"command","bash":"./mine.sh","timeoutSec":5}],"preToolUse":[{"type":"command","bash":"./guard.sh"}]}}"#;
        let done = install(Some(users), c, "baton").unwrap();
        let text = done.text.unwrap();
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["version"], 1);
        assert_eq!(v["hooks"]["sessionStart"][0]["bash"], "./mine.sh");
        assert_eq!(
            v["hooks"]["sessionStart"][1]["bash"],
            "baton hook copilot sessionStart"
        );
        assert_eq!(v["hooks"]["sessionEnd"][0]["timeoutSec"], 30);
        assert_eq!(
            super::super::settings::installed_events(&text, c).unwrap(),
            [
                "sessionStart",
                "preToolUse",
                "userPromptSubmitted",
                "agentStop",
                "sessionEnd"
            ]
        );
        // Twice: the same bytes.
        assert_eq!(
            install(Some(&text), c, "baton").unwrap().text.unwrap(),
            text
        );
        let removed = uninstall(Some(&text), c).unwrap().text.unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&removed).unwrap(),
            serde_json::from_str::<Value>(users).unwrap()
        );
        // baton's file alone: it goes.
        let own = install(None, c, "/opt/baton").unwrap().text.unwrap();
        assert_eq!(uninstall(Some(&own), c).unwrap().text, None);
        assert!(install(Some("[1]"), c, "baton").is_err());
        assert!(install(Some("{"), c, "baton").is_err());
    }
}
