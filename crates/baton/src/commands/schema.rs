use clap::Args;
use serde_json::{Map, Value, json};

use crate::error::CommandError;
use crate::output::Report;
use baton_core::client::Client;
use baton_core::model::{BatchState, LoopState};
use baton_core::{Rule, Verdict};
use baton_ops::env::Ctx;

/// Print the JSON Schemas of the files baton writes: loop-state, batch-state, run-state, the
/// pause marks and the resume-point record.
///
/// With `--outputs`, the schemas of what every command prints under `--json` instead: one
/// document whose `outputs` object is keyed by command path (`"loop set"`, `"resume accept"`),
/// over shared definitions in `$defs` (the decision's `verdict`, `reasons` with their rule ids
/// and `next`; `warnings` and `notes`; the `error` object any command can answer; the files'
/// shapes). A command's schema is `#/outputs/<command>` in it (`#/outputs/loop%20set`).
/// `--output <COMMAND>` prints one command's schema alone, with the definitions it needs.
#[derive(Debug, Args)]
pub struct SchemaArgs {
    /// Print the schemas of every command's `--json` output instead of the files'.
    #[arg(long, conflicts_with = "output")]
    outputs: bool,
    /// Print the schema of this command's `--json` output alone (`"loop set"`, `status`).
    #[arg(long, value_name = "COMMAND")]
    output: Option<String>,
}

/// The shared definitions of the output schemas (`$defs`), without the derived ones.
const DEFS: &str = include_str!("schema/defs.json");
/// Every command's output schema, keyed by command path, without the error object (added to
/// each but `hook`'s when the document is put together).
const OUTPUTS: &str = include_str!("schema/outputs.json");

pub fn cmd_schema(_ctx: &Ctx, args: SchemaArgs) -> Result<Report, CommandError> {
    let schemas = if let Some(command) = &args.output {
        output_schema(command)?
    } else if args.outputs {
        outputs_document()
    } else {
        file_schemas()
    };
    let text = serde_json::to_string_pretty(&schemas).unwrap_or_default();
    Ok(Report::ok(schemas, text))
}

/// The schemas of the files baton writes, derived from their types.
fn file_schemas() -> Value {
    json!({
        "loop-state": schemars::schema_for!(LoopState),
        "batch-state": schemars::schema_for!(BatchState),
        "run-state": schemars::schema_for!(baton_core::model::RunState),
        "resume-point": schemars::schema_for!(baton_core::feature::ResumePointRecord),
        "pause": schemars::schema_for!(baton_core::model::Pauses),
    })
}

fn object(text: &str, what: &str) -> Map<String, Value> {
    match serde_json::from_str(text) {
        Ok(Value::Object(map)) => map,
        _ => panic!("{what} is not a JSON object"),
    }
}

/// The output schemas in one document: `$defs` (the hand-written definitions, the verdicts and
/// rule ids from their registries, the files' schemas with their own definitions hoisted) and
/// `outputs`, each command's schema with the error object as an alternative.
pub fn outputs_document() -> Value {
    let mut defs = object(DEFS, "schema/defs.json");
    let verdicts: Vec<&str> = Verdict::ALL.iter().map(|v| v.as_str()).collect();
    let rules: Vec<&str> = Rule::ALL.iter().map(|r| r.id()).collect();
    if let Some(Value::Object(verdict)) = defs.get_mut("verdict") {
        verdict.insert("enum".into(), json!(verdicts));
    }
    if let Some(Value::Object(rule)) = defs.get_mut("rule") {
        rule.insert("enum".into(), json!(rules));
    }
    if let Some(Value::Object(client)) = defs.get_mut("client") {
        client.insert("enum".into(), json!(Client::NAMES));
    }
    if let Value::Object(files) = file_schemas() {
        for (name, schema) in files {
            let Value::Object(mut schema) = schema else {
                continue;
            };
            schema.remove("$schema");
            if let Some(Value::Object(inner)) = schema.remove("$defs") {
                for (key, def) in inner {
                    defs.entry(key).or_insert(def);
                }
            }
            defs.insert(name, Value::Object(schema));
        }
    }
    let error = json!({ "$ref": "#/$defs/error" });
    let outputs: Map<String, Value> = object(OUTPUTS, "schema/outputs.json")
        .into_iter()
        .map(|(command, schema)| {
            let mut schema = match schema {
                // A hook fails open: it never prints an error object.
                hook if command == "hook" => hook,
                Value::Object(mut s) if s.contains_key("anyOf") => {
                    if let Some(Value::Array(any)) = s.get_mut("anyOf") {
                        any.push(error.clone());
                    }
                    Value::Object(s)
                }
                other => json!({ "anyOf": [other, error.clone()] }),
            };
            if let Value::Object(s) = &mut schema {
                s.insert("title".into(), json!(format!("baton {command} --json")));
            }
            (command, schema)
        })
        .collect();
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "baton --json outputs",
        "description": "What every baton command prints under --json: exactly one object. `outputs` holds each command's schema, keyed by its path; `$defs` the shapes they share.",
        "$defs": defs,
        "outputs": outputs,
    })
}

/// One command's output schema, standing alone: its schema with every definition beside it.
fn output_schema(command: &str) -> Result<Value, CommandError> {
    let document = outputs_document();
    let Some(Value::Object(schema)) = document["outputs"].get(command).cloned() else {
        let known: Vec<&String> = document["outputs"]
            .as_object()
            .map(|o| o.keys().collect())
            .unwrap_or_default();
        return Err(
            CommandError::usage(format!("no command {command:?} prints a --json object")).hint(
                format!(
                    "name one of: {}",
                    known
                        .iter()
                        .map(|k| k.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ),
        );
    };
    let mut alone = Map::new();
    alone.insert("$schema".into(), document["$schema"].clone());
    alone.insert("title".into(), json!(format!("baton {command} --json")));
    alone.extend(schema);
    // The definitions it refers to, and theirs in turn.
    let all = document["$defs"].as_object().cloned().unwrap_or_default();
    let mut needed = std::collections::BTreeSet::new();
    let mut todo = Vec::new();
    refs(&Value::Object(alone.clone()), &mut todo);
    while let Some(name) = todo.pop() {
        if let Some(def) = all.get(&name)
            && needed.insert(name)
        {
            refs(def, &mut todo);
        }
    }
    let defs: Map<String, Value> = all
        .into_iter()
        .filter(|(name, _)| needed.contains(name))
        .collect();
    alone.insert("$defs".into(), Value::Object(defs));
    Ok(Value::Object(alone))
}

/// The names of the definitions `value` refers to (`"$ref": "#/$defs/<name>"`).
fn refs(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                match (key.as_str(), v.as_str()) {
                    ("$ref", Some(target)) => {
                        if let Some(name) = target.strip_prefix("#/$defs/") {
                            out.push(name.to_string());
                        }
                    }
                    _ => refs(v, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| refs(v, out)),
        _ => {}
    }
}
