use std::path::{Path, PathBuf};

use clap::Args;
use serde_json::{Map, Value, json};

use super::{parse_run_id, state_file_line};
use crate::context::Ctx;
use crate::error::CommandError;
use crate::output::Report;
use baton_core::model::{Completion, PlanRecord, RunPolicy, RunState, SCHEMA_VERSION, StepRecord};
use baton_core::run_id::RunId;
use baton_core::time::format_ts;
use baton_store::read::{STATE_FILE_CAP, read_owned};
use baton_store::{FsStore, LockScope, StateStore};

/// Import an originating `/tmp/pipeline_state_<run_id>.json` into `.agentic/runs/`.
///
/// Only a regular file owned by this user is read (never a link, never another user's file in
/// the shared `/tmp`). Every field is kept; the known ones (`PIPELINE_BASE_COMMIT`, the plan
/// file, completed agents) are mapped. `baton run resume` imports on its own when the run is
/// not in `.agentic/runs/` yet.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The run id `baton run new` printed (16 hex digits, or a legacy `YYYYMMDD-HHMMSS`).
    run_id: String,
    /// The file to import [default: /tmp/pipeline_state_<run_id>.json].
    #[arg(long, value_name = "PATH")]
    from: Option<PathBuf>,
}

pub fn cmd_run_import(ctx: &Ctx, args: ImportArgs) -> Result<Report, CommandError> {
    let id = parse_run_id(&args.run_id)?;
    let store = ctx.store()?;
    let _guard = store.lock(LockScope::Runs)?;
    if store.read_run(&id)?.is_some() {
        return Err(
            CommandError::usage(format!("run {id} is already in .agentic/runs/"))
                .hint(format!("see it with `baton run show {id}`")),
        );
    }
    let run = import_into(ctx, &store, &id, args.from.as_deref())?;
    let path = store.layout.run_file(&id);
    Ok(Report::ok(
        json!({ "run_id": id.to_string(), "imported_from": run.imported_from, "state_file": path.display().to_string() }),
        format!(
            "imported run {id} from {}\n{}",
            run.imported_from.as_deref().unwrap_or_default(),
            state_file_line(&path)
        ),
    ))
}

/// Where the originating pipeline keeps a run's state.
pub fn default_source(id: &RunId) -> PathBuf {
    let dir = std::env::var_os("BATON_PIPELINE_STATE_DIR")
        .map_or_else(|| PathBuf::from("/tmp"), PathBuf::from);
    dir.join(format!("pipeline_state_{id}.json"))
}

/// Reads the originating state and writes it as baton run state; the caller holds the lock.
pub fn import_into(
    ctx: &Ctx,
    store: &FsStore,
    id: &RunId,
    from: Option<&Path>,
) -> Result<RunState, CommandError> {
    let run = build_import(ctx, store, id, from)?;
    store.write_run(&run)?;
    Ok(run)
}

/// The baton run state an originating file maps to, not yet written.
pub fn build_import(
    ctx: &Ctx,
    store: &FsStore,
    id: &RunId,
    from: Option<&Path>,
) -> Result<RunState, CommandError> {
    let source = from.map_or_else(|| default_source(id), Path::to_path_buf);
    let bytes = read_owned(&source, STATE_FILE_CAP)?.ok_or_else(|| {
        CommandError::usage(format!("no originating state at {}", source.display()))
            .hint("pass the file with `--from <PATH>`")
    })?;
    let original: Map<String, Value> = serde_json::from_slice(&bytes).map_err(|e| {
        CommandError::new(
            crate::error::ExitStatus::Failure,
            format!("{} is not a JSON object: {e}", source.display()),
        )
        .hint("nothing was imported; check the file")
    })?;
    let text = |keys: &[&str]| {
        keys.iter()
            .find_map(|k| original.get(*k).and_then(Value::as_str))
            .map(String::from)
    };
    // The plan is pinned as it is now, so a later edit is seen; a plan outside the project is
    // not trusted at all (the run then has no cached plan, and resumes with a re-plan).
    let root = &store.layout.root;
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
            path: super::facts::recorded_plan_path(root, &abs),
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
    let finished = matches!(
        text(&["status"]).as_deref(),
        Some("complete" | "completed" | "done")
    );
    let now = format_ts(ctx.now);
    let run = RunState {
        schema_version: SCHEMA_VERSION,
        run_id: id.to_string(),
        status: if finished {
            "complete".into()
        } else {
            "active".into()
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
        completed_agents: completions("completed_agents"),
        hard_gates: completions("hard_gates"),
        lease: None,
        lease_epoch: 0,
        critic_owed: false,
        imported_from: Some(source.display().to_string()),
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

/// Steps as `{"name": "status"}` or as a list of `{name, status, at}`.
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
            .map(|(name, status)| step(name.clone(), status))
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
