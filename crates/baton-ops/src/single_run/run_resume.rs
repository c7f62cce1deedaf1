//! `run resume`: the four ordered checks (HEAD, staging, alignment, lock), the plan staleness
//! gate, and what to restore; a verdict that proceeds takes the run lock.

use baton_core::journal::JournalEvent;
use std::path::{Path, PathBuf};

use serde_json::json;

use super::{
    Holder, build_import, default_source, import_event, merge_completion_ledger, missing_run,
};
use crate::env::Ctx;
use crate::error::OpError;
use crate::journal;
use crate::run_facts::sections_now;
use crate::runs::{self, decide_now};
use baton_core::decide::run_resume::RunDecision;
use baton_core::model::{RunState, SectionRecord};
use baton_core::run_id::RunId;
use baton_core::time::format_ts;
use baton_store::{LockScope, StateStore, git};

/// Where the alignment sections live unless `run new --project-file` said otherwise.
pub const DEFAULT_PROJECT_FILE: &str = ".claude/PROJECT.md";

/// What `run resume` is asked for.
#[derive(Debug, Clone)]
pub struct ResumeRun {
    pub id: RunId,
    /// The user confirmed that the run still fits the changed alignment sections: record them
    /// as they are now and go on.
    pub confirm_alignment: bool,
    /// The operator's escape hatch: go on although files are staged (recorded in the run).
    pub allow_staged: bool,
    pub holder: Holder,
}

/// What `run resume` decided, and the run as it is now. The decision's verdict says whether
/// the run goes on (`ratify`, `critic`, `replan`: the lock is taken, `decision.acquire`), is
/// blocked or needs a human; nothing is written unless it goes on.
#[derive(Debug)]
pub struct Resumed {
    pub id: RunId,
    pub decision: RunDecision,
    pub run: Box<RunState>,
    /// How messages name baton's record of the run.
    pub path: PathBuf,
    /// What the resume did besides (an import, agents merged, the alignment re-recorded).
    pub notes: Vec<String>,
    /// A lease token for a holder with neither a session nor a process, shown only now.
    pub token: Option<String>,
    /// The journal's, if its append failed: the resume stands.
    pub warning: Option<String>,
}

/// Resumes a single run: imports it first when it is only in its originating file, runs the
/// ordered checks and takes the run lock when the verdict lets the run go on.
pub fn resume(ctx: &Ctx, store: &dyn StateStore, args: &ResumeRun) -> Result<Resumed, OpError> {
    let id = args.id.clone();
    let root = store.layout().root.clone();
    // An unknown run in a project without state creates nothing, not even the lock's sidecar.
    if !store.exists()? && !default_source(ctx, &id).exists() {
        return Err(missing_run(&id));
    }
    // An import is checked before anything is created, so a refused one writes nothing, and is
    // built again under the lock from the source as it is then.
    let import = || {
        build_import(ctx, &*store, &id, None).map_err(|e| {
            if e.message.contains("no originating state") {
                missing_run(&id)
            } else {
                e
            }
        })
    };
    if store.read_run(&id)?.is_none() {
        import()?;
    }
    // git runs before the lock is taken: its status can start a user's fsmonitor hook.
    let mut repo = git::head_and_index(&root)?;
    // baton's own files are never the user's staged work, however they came to be staged.
    if let Some(state_dir) = store.layout().state_dir_in_tree() {
        repo.staged
            .retain(|p| !Path::new(p).starts_with(&state_dir));
    }
    let _guard = store.lock(LockScope::Runs)?;
    let mut notes = Vec::new();
    let mut imported = false;
    // An import stays in memory until the verdict lets the run go on: a refused or finished
    // resume writes nothing.
    let read = store.read_run(&id)?;
    let expect = baton_store::Expect::read(read.as_ref());
    let mut run = match read {
        Some(loaded) => {
            loaded.writable()?;
            loaded.state
        }
        None => {
            let run = import()?;
            imported = true;
            notes.push(format!(
                "note: imported {}",
                run.imported_from.as_deref().unwrap_or_default()
            ));
            run
        }
    };
    // autonomous-dev goes on recording completions beside the file it was imported from.
    let added = merge_completion_ledger(&mut run)?;
    if !added.is_empty() {
        notes.push(format!(
            "note: completed since the import, per the originating completion ledger: {}",
            baton_core::text::esc_join(added.iter().map(String::as_str))
        ));
    }
    if run.status.is_finished() {
        return Err(OpError::usage(format!(
            "run {id} is {}: there is nothing to resume",
            run.status
        ))
        .hint("start a new run with `baton run new`"));
    }
    let (here, source) = runs::here(ctx, args.holder.pid, args.holder.token.as_deref(), true)?;
    if args.confirm_alignment && run.alignment.is_none() {
        // An imported run has no baseline: the user's confirmation makes one.
        run.alignment = Some(baton_core::model::AlignmentRecord {
            path: DEFAULT_PROJECT_FILE.into(),
            sections: Vec::new(),
            extra: Default::default(),
        });
    }
    let sections = match &run.alignment {
        Some(a) => Some(sections_now(&root, &a.path)?),
        None => None,
    };
    if args.confirm_alignment
        && let (Some(record), Some(now)) = (run.alignment.as_mut(), &sections)
    {
        let confirmed: Vec<SectionRecord> = now
            .iter()
            .map(|s| SectionRecord {
                name: s.name.clone(),
                sha256: s.sha256.clone(),
                text: s.text.clone(),
            })
            .collect();
        let realigned = record.sections != confirmed;
        record.sections = confirmed;
        if realigned {
            run.critic_owed = true;
            notes.push(
                "note: the alignment sections were re-recorded as the user confirmed them".into(),
            );
        }
    }
    let staged = repo.staged.clone();
    let (d, lease) = decide_now(ctx, &root, &run, repo, sections, &here, args.allow_staged)?;
    let mut token = None;
    let mut journal_warning = None;
    if d.acquire {
        let before = run.lease.clone();
        if args.allow_staged && !staged.is_empty() {
            // The operator's decision stays on record with what it let through.
            let decision = serde_json::json!({ "at": format_ts(ctx.now), "session": ctx.session, "files": staged });
            match run.extra.get_mut("staged_allowed") {
                Some(serde_json::Value::Array(list)) => list.push(decision),
                _ => {
                    run.extra.insert(
                        "staged_allowed".into(),
                        serde_json::Value::Array(vec![decision]),
                    );
                }
            }
        }
        token = super::take_lease(&mut run, &here, source, &lease, ctx.now);
        run.updated_at = Some(format_ts(ctx.now));
        let mut events = Vec::new();
        if imported {
            events.push(import_event(ctx, &run));
        }
        let taken = before.as_ref().map(|l| l.epoch) != Some(run.lease_epoch);
        events.push(journal::event(
            ctx,
            JournalEvent::Resume,
            Some(run.lease_epoch),
            json!({
                "verdict": d.decision.verdict,
                "lease_taken": taken,
                "from_session": before.as_ref().map(|l| l.session.clone()),
                "from_epoch": before.as_ref().map(|l| l.epoch),
                "allowed_staged": args.allow_staged && !staged.is_empty(),
                "agents_merged": added,
            }),
        ));
        journal_warning = journal::write_run(store, &run, &expect, &events)?;
    }
    let path = store.name(&baton_store::RecordKey::Run(id.clone()));
    Ok(Resumed {
        id,
        decision: d,
        run: Box::new(run),
        path,
        notes,
        token,
        warning: journal_warning,
    })
}
