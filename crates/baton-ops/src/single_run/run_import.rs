//! `run import`: an originating `/tmp/pipeline_state_<run_id>.json` brought into baton's run
//! state, and the mapping `run resume` uses to import on its own.

use baton_core::journal::JournalEvent;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::parse_run_id;
use crate::env::Ctx;
use crate::error::OpError;
use crate::journal;
use crate::run_facts::recorded_plan_path;
use baton_core::model::{
    Completion, PlanRecord, RunPolicy, RunState, RunStatus, SCHEMA_VERSION, StepRecord,
};
use baton_core::run_id::RunId;
use baton_core::time::format_ts;
use baton_store::read::{STATE_FILE_CAP, read_owned};
use baton_store::{LockScope, RecordKey, StateStore};

/// What `run import` did: the run is in baton's state now.
#[derive(Debug)]
pub struct Imported {
    pub id: RunId,
    pub run: Box<RunState>,
    /// How messages name baton's record of the run.
    pub path: PathBuf,
    /// The journal's, if its append failed: the import stands.
    pub warning: Option<String>,
}

/// Imports an originating state file (`from`, or the default place for `run_id`). Only a
/// regular file owned by this user is read; every field is kept and the known ones are mapped.
/// A run already in baton's state is a usage error; a refused import writes nothing.
pub fn import(
    ctx: &Ctx,
    store: &dyn StateStore,
    run_id: &str,
    from: Option<&Path>,
) -> Result<Imported, OpError> {
    let id = parse_run_id(run_id)?;
    // The source is checked before anything is created: a refused import writes nothing.
    build_import(ctx, store, &id, from)?;
    let _guard = store.lock(LockScope::Runs)?;
    if store.read_run(&id)?.is_some() {
        return Err(
            OpError::usage(format!("run {id} is already in .agentic/runs/"))
                .hint(format!("see it with `baton run show {id}`")),
        );
    }
    // The run and its `import` event: one transaction on a server.
    let run = build_import(ctx, store, &id, from)?;
    let warning = journal::write_run(
        store,
        &run,
        &baton_store::Expect::Absent,
        &[import_event(ctx, &run)],
    )?;
    let path = store.name(&RecordKey::Run(id.clone()));
    Ok(Imported {
        id,
        run: Box::new(run),
        path,
        warning,
    })
}

/// Where the originating pipeline keeps a run's state.
pub fn default_source(ctx: &Ctx, id: &RunId) -> PathBuf {
    let dir = ctx
        .settings
        .pipeline_state_dir
        .clone()
        .unwrap_or_else(|| PathBuf::from("/tmp"));
    dir.join(format!("pipeline_state_{id}.json"))
}

/// The `import` event of a run brought in from its originating file.
pub fn import_event(ctx: &Ctx, run: &RunState) -> serde_json::Value {
    journal::event(
        ctx,
        JournalEvent::Import,
        Some(run.lease_epoch),
        json!({
            "from": run.imported_from,
            "completed_agents": run.completed_agents.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(),
        }),
    )
}

/// The baton run state an originating file maps to, not yet written.
pub fn build_import(
    ctx: &Ctx,
    store: &dyn StateStore,
    id: &RunId,
    from: Option<&Path>,
) -> Result<RunState, OpError> {
    let source = from.map_or_else(|| default_source(ctx, id), Path::to_path_buf);
    let bytes = read_owned(&source, STATE_FILE_CAP)?.ok_or_else(|| {
        OpError::usage(format!("no originating state at {}", source.display()))
            .hint("pass the file with `--from <PATH>`")
    })?;
    let original: Map<String, Value> = serde_json::from_slice(&bytes).map_err(|e| {
        OpError::broken(format!("{} is not a JSON object: {e}", source.display()))
            .hint("nothing was imported; check the file")
    })?;
    let text = |keys: &[&str]| {
        keys.iter()
            .find_map(|k| original.get(*k).and_then(Value::as_str))
            .map(String::from)
    };
    // A file that names another run would import that run's progress under this id.
    if let Some(named) = original.get("run_id").and_then(Value::as_str)
        && named != id.as_str()
    {
        return Err(OpError::usage(format!(
            "{} names run {:?}, not {id}",
            source.display(),
            baton_core::text::esc(named)
        ))
        .hint("import it under its own id, or pass the right file with `--from`; nothing was imported"));
    }
    // The plan is pinned as it is now, so a later edit is seen; a plan outside the project is
    // not trusted at all (the run then has no cached plan, and resumes with a re-plan).
    let root = &store.layout().root;
    let plan = text(&["plan_file", "plan_path", "plan"]).and_then(|p| {
        let path = Path::new(&p);
        let abs = if path.is_absolute() {
            path.to_path_buf()
        } else {
            root.join(path)
        };
        let abs = abs.canonicalize().ok().filter(|a| a.starts_with(root))?;
        let bytes = baton_store::read::read_capped(&abs, STATE_FILE_CAP)
            .ok()
            .flatten();
        let mtime = std::fs::metadata(&abs)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| jiff::Timestamp::try_from(t).ok());
        Some(PlanRecord {
            path: recorded_plan_path(root, &abs),
            sha256: bytes.map(|b| baton_store::sha256_hex(&b)),
            mtime: mtime.map(format_ts),
            extra: Map::new(),
        })
    });
    let completions = |key: &str| {
        original
            .get(key)
            .and_then(Value::as_array)
            .map(|list| list.iter().filter_map(completion).collect())
            .unwrap_or_default()
    };
    // Fields baton knows under other names stay at the top level; the whole original is kept
    // too, so values that share a name with baton's own (`status`, `steps`) are never lost.
    let own: Vec<String> = match serde_json::to_value(RunState::placeholder()) {
        Ok(Value::Object(o)) => o.keys().cloned().collect(),
        _ => Vec::new(),
    };
    let mut extra: Map<String, Value> = original
        .iter()
        .filter(|(k, _)| !own.contains(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    extra.insert("originating_state".into(), Value::Object(original.clone()));
    // autonomous-dev records completed agents in a ledger beside the state file.
    let ledger = completion_ledger(&source, id)?;
    if let Some(l) = &ledger {
        extra.insert("originating_completions".into(), l.clone());
    }
    let finished = matches!(
        text(&["status"]).as_deref(),
        Some("complete" | "completed" | "done")
    );
    let now = format_ts(ctx.now);
    let run = RunState {
        schema_version: SCHEMA_VERSION,
        run_id: id.to_string(),
        status: if finished {
            RunStatus::Complete
        } else {
            RunStatus::Active
        },
        created_at: text(&["created_at", "started_at"]).or_else(|| Some(now.clone())),
        updated_at: Some(now),
        feature: text(&["feature", "feature_description"]),
        mode: text(&["mode"]),
        base_commit: text(&[
            "base_commit",
            "PIPELINE_BASE_COMMIT",
            "pipeline_base_commit",
        ]),
        branch: text(&["branch"]),
        plan,
        alignment: None,
        policy: RunPolicy::default(),
        steps: steps(original.get("steps")),
        completed_agents: with_ledger(completions("completed_agents"), ledger.as_ref()),
        hard_gates: completions("hard_gates"),
        lease: None,
        lease_epoch: 0,
        critic_owed: false,
        // Absolute, so that `PIPELINE_STATE_FILE` names it from any directory.
        imported_from: Some(
            std::path::absolute(&source)
                .unwrap_or(source.clone())
                .display()
                .to_string(),
        ),
        extra,
    };
    Ok(run)
}

/// A completion as the originating pipeline writes it: a name, or an object with `name` or
/// `agent` and a time; other keys are kept.
fn completion(value: &Value) -> Option<Completion> {
    match value {
        Value::String(name) => Some(Completion {
            name: name.clone(),
            at: None,
            extra: Map::new(),
        }),
        Value::Object(o) => {
            let get = |k: &str| o.get(k).and_then(Value::as_str).map(String::from);
            let name = get("name")
                .or_else(|| get("agent"))
                .or_else(|| get("gate"))?;
            let at = get("at")
                .or_else(|| get("completed_at"))
                .or_else(|| get("timestamp"));
            let known = ["name", "agent", "gate", "at", "completed_at", "timestamp"];
            let extra = o
                .iter()
                .filter(|(k, _)| !known.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            Some(Completion { name, at, extra })
        }
        _ => None,
    }
}

/// autonomous-dev's completion ledger for `id`, beside the state file:
/// `pipeline_agent_completions_<id>.json`, read like the state file (a regular file of this
/// user's, never a link). `Ok(None)` when there is none; an error names one that is there but
/// cannot be read, since dropping it would re-dispatch every agent it records.
pub fn completion_ledger(source: &Path, id: &RunId) -> Result<Option<Value>, OpError> {
    let Some(dir) = source.parent() else {
        return Ok(None);
    };
    let path = dir.join(format!("pipeline_agent_completions_{id}.json"));
    let Some(bytes) = read_owned(&path, STATE_FILE_CAP)? else {
        return Ok(None);
    };
    serde_json::from_slice(&bytes).map(Some).map_err(|e| {
        OpError::broken(format!("{} is not valid JSON: {e}", path.display()))
            .hint("its completed agents would be lost; fix or move the file, then retry")
    })
}

/// Adds the agents the originating completion ledger records now (autonomous-dev goes on
/// writing it after the import) to an imported run. Returns the names added.
pub fn merge_completion_ledger(run: &mut RunState) -> Result<Vec<String>, OpError> {
    let Some(source) = run.imported_from.clone() else {
        return Ok(Vec::new());
    };
    let Ok(id) = RunId::parse(&run.run_id) else {
        return Ok(Vec::new());
    };
    let Some(ledger) = completion_ledger(Path::new(&source), &id)? else {
        return Ok(Vec::new());
    };
    let before = run.completed_agents.len();
    run.completed_agents = with_ledger(std::mem::take(&mut run.completed_agents), Some(&ledger));
    run.extra.insert("originating_completions".into(), ledger);
    Ok(run.completed_agents[before..]
        .iter()
        .map(|c| c.name.clone())
        .collect())
}

/// The agents the completion ledger records as done, in every scope (its `"0"`, `"unscoped"`
/// and issue-number keys hold the same agents), added after the ones the state file names, in
/// the order they completed. An agent counts when its value is `true` or `{"success": true}`;
/// the names `""` and `unknown` never count, as in autonomous-dev itself.
fn with_ledger(mut agents: Vec<Completion>, ledger: Option<&Value>) -> Vec<Completion> {
    let Some(ledger) = ledger else {
        return agents;
    };
    let times = ledger.get("completion_times").and_then(Value::as_object);
    let mut found: Vec<(Option<f64>, String, Value)> = Vec::new();
    let scopes = ledger.get("completions").and_then(Value::as_object);
    for (scope, entries) in scopes.into_iter().flatten() {
        for (agent, value) in entries.as_object().into_iter().flatten() {
            let success = match value {
                Value::Bool(b) => *b,
                Value::Object(o) => o.get("success").and_then(Value::as_bool) == Some(true),
                _ => false,
            };
            let name = agent.trim();
            if !success
                || name.is_empty()
                || name.eq_ignore_ascii_case("unknown")
                || found.iter().any(|(_, n, _)| n == name)
            {
                continue;
            }
            let at = times
                .and_then(|t| t.get(scope))
                .and_then(|t| t.get(agent))
                .and_then(Value::as_f64);
            found.push((at, name.to_string(), value.clone()));
        }
    }
    found.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap_or(std::cmp::Ordering::Equal));
    for (at, name, value) in found {
        if agents.iter().any(|c| c.name == name) {
            continue;
        }
        let at = at
            .and_then(|secs| jiff::Timestamp::from_millisecond((secs * 1000.0) as i64).ok())
            .map(format_ts);
        let mut extra = Map::new();
        extra.insert("from_completion_ledger".into(), value);
        agents.push(Completion { name, at, extra });
    }
    agents
}

/// Steps as `{"name": "status"}`, as autonomous-dev's `{"name": {status, started_at,
/// completed_at, error}}`, or as a list of `{name, status, at}`. Every field of a step object
/// is kept.
fn steps(value: Option<&Value>) -> Vec<StepRecord> {
    let step = |name: String, status: &Value| StepRecord {
        name,
        status: status
            .as_str()
            .map_or_else(|| status.to_string(), String::from),
        at: None,
        extra: Map::new(),
    };
    match value {
        Some(Value::Object(map)) => map
            .iter()
            .map(|(name, value)| match value.as_object() {
                Some(o) => {
                    let mut record = step(name.clone(), o.get("status").unwrap_or(&Value::Null));
                    record.at = ["completed_at", "started_at"]
                        .iter()
                        .find_map(|k| o.get(*k).and_then(Value::as_str))
                        .map(String::from);
                    record.extra = o
                        .iter()
                        .filter(|(k, _)| k.as_str() != "status")
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect();
                    record
                }
                None => step(name.clone(), value),
            })
            .collect(),
        Some(Value::Array(list)) => list
            .iter()
            .filter_map(|s| {
                let o = s.as_object()?;
                let mut record = step(
                    o.get("name")?.as_str()?.to_string(),
                    o.get("status").unwrap_or(&Value::Null),
                );
                record.at = o.get("at").and_then(Value::as_str).map(String::from);
                Some(record)
            })
            .collect(),
        _ => Vec::new(),
    }
}
