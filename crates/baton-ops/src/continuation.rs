//! The session-continuation protocol's own writes: the explicit pause mark (`.agentic/pause.json`,
//! one mark per session) that tells the next session to resume, not recover; and the resume
//! point (`continue --set-resume-point`), set across the feature's pointer and `TASKS.md` in one
//! step; and the feature's `REVIEW_NEEDED.md` (`continue review-needed`), written and cleared
//! under the feature lock.

use std::path::{Path, PathBuf};

use crate::env::Ctx;
use crate::error::{Kind, OpError};
use crate::project::path_in_project;
use baton_core::feature::{
    ResumePoint, ResumeRequest, ReviewNeeded, format_review_needed, resume_point, set_marks,
};
use baton_core::model::{PauseMark, Pauses};
use baton_core::text::esc;
use baton_core::time::format_ts;
use baton_core::{Decision, Reason};
use baton_store::feature::{
    FeatureFacts, FileEdit, POINTER_PATH, REVIEW_NEEDED_CAP, REVIEW_NEEDED_FILE,
    apply_resume_point, lock_feature, read_feature, read_feature_locked,
};
use baton_store::read::read_capped;
use baton_store::{Expect, Layout, LockScope, RecordKey, StateStore, git};

/// A pause recorded.
#[derive(Debug)]
pub struct Paused {
    pub mark: PauseMark,
    /// How messages name the pause record.
    pub path: PathBuf,
    /// The tree held uncommitted changes: the next session reports the pause as unclean.
    pub tree_dirty: bool,
}

/// What lifting this session's pause did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cleared {
    /// There is no pause mark at all.
    NoMark,
    /// There are marks, none of this session's.
    NotThisSession,
    Removed,
}

/// Marks this session's work paused at `ctx.now` for `reason`; a later pause of the same
/// session replaces its earlier mark.
pub fn pause(ctx: &Ctx, store: &dyn StateStore, reason: Option<String>) -> Result<Paused, OpError> {
    let mark = PauseMark {
        paused_at: format_ts(ctx.now),
        session_id: ctx.session.clone(),
        reason,
        extra: Default::default(),
    };
    // Asked before the lock: git status can start a user's fsmonitor hook.
    let excluded: Vec<PathBuf> = store.layout().state_dir_in_tree().into_iter().collect();
    let refs: Vec<&std::path::Path> = excluded.iter().map(|p| p.as_path()).collect();
    let tree_dirty = git::tree_dirty(&store.layout().root, &refs)?;
    let _guard = store.lock(LockScope::Feature)?;
    let old = store.read_pause()?;
    let mut pauses = match &old {
        Some(old) => {
            old.writable()?;
            old.state.clone()
        }
        None => Pauses::default(),
    };
    pauses.set(mark.clone());
    store.write_pause(&pauses, &Expect::read(old.as_ref()))?;
    Ok(Paused {
        mark,
        path: store.name(&RecordKey::Pause),
        tree_dirty,
    })
}

/// Records that a rate limit ended the turn of the session `ctx.session` while it worked on
/// the active feature, with its reset when known (`resume_after`), in baton's pause record
/// beside the pauses: the feature's own files have no place for it. Nothing is written when
/// there is no active feature (no pointer, or a finished one). Returns whether it wrote.
pub fn record_feature_interrupt(
    ctx: &Ctx,
    store: &dyn baton_store::StateStore,
    reason: baton_core::model::InterruptReason,
    resume_after: Option<jiff::Timestamp>,
) -> Result<bool, OpError> {
    let layout = store.layout();
    let Some(pointer) = baton_store::feature::read_pointer(layout)? else {
        return Ok(false);
    };
    if pointer.is_terminal() {
        return Ok(false);
    }
    let _guard = store.lock(LockScope::Feature)?;
    let old = store.read_pause()?;
    let mut pauses = match &old {
        Some(old) => {
            old.writable()?;
            old.state.clone()
        }
        None => Pauses::default(),
    };
    pauses.feature_interrupt = Some(baton_core::model::FeatureInterrupt {
        feature: pointer.id().map(str::to_string),
        session_id: ctx.session.clone(),
        interrupted_at: format_ts(ctx.now),
        reason: reason.as_str().to_string(),
        resume_after: resume_after.map(format_ts),
        extra: Default::default(),
    });
    store.write_pause(&pauses, &Expect::read(old.as_ref()))?;
    Ok(true)
}

/// Removes this session's pause mark (the record itself with the last mark).
pub fn clear_pause(ctx: &Ctx, store: &dyn StateStore) -> Result<Cleared, OpError> {
    if !store.exists()? {
        return Ok(Cleared::NoMark);
    }
    let _guard = store.lock(LockScope::Feature)?;
    let Some(loaded) = store.read_pause()? else {
        return Ok(Cleared::NoMark);
    };
    loaded.writable()?;
    let mut pauses = loaded.state.clone();
    let had = pauses.clear(ctx.session());
    if pauses.is_empty() {
        store.remove(&RecordKey::Pause, &loaded.expect())?;
    } else if had {
        store.write_pause(&pauses, &loaded.expect())?;
    }
    Ok(if had {
        Cleared::Removed
    } else {
        Cleared::NotThisSession
    })
}

/// What a command read: where the project is, the one `git status` of it, and the feature.
pub struct Gathered {
    pub layout: Layout,
    /// Kept for a second read under the lock: the branch and the changed paths do not move in
    /// the milliseconds between, and one `git status` is the cost of a call.
    pub changes: git::Changes,
    pub facts: Option<FeatureFacts>,
}

/// Reads the feature: one `git status` for the whole tree, and any pending resume point
/// completed first.
pub fn gather(ctx: &Ctx) -> Result<Gathered, OpError> {
    let layout = ctx.layout()?;
    let changes = git::changes(&layout.root)?;
    let facts = read_feature(&layout, &changes, ctx.now, ctx.lock_wait)?;
    Ok(Gathered {
        layout,
        changes,
        facts,
    })
}

/// A path read from the project (the pointer's `path` names it), safe to print on one line.
pub fn shown(path: &std::path::Path) -> String {
    esc(&path.to_string_lossy()).into_owned()
}

/// The error for a command that needs a feature where there is none.
pub fn no_feature() -> OpError {
    OpError::usage(format!(
        "no active feature: {POINTER_PATH} does not exist in this project"
    ))
    .hint("create the feature first (the feature scaffold writes the pointer), or run baton in the project that has one")
}

/// What setting the resume point did.
#[derive(Debug)]
pub enum ResumePointSet {
    /// The pointer (or `TASKS.md`) cannot be trusted: a human fixes it first; nothing changed.
    Refused(Decision),
    Set(Box<PointSet>),
}

/// The resume point as it stands now.
#[derive(Debug)]
pub struct PointSet {
    pub point: ResumePoint,
    /// The pointer's phase before.
    pub from_phase: String,
    /// The files changed (the pointer, `TASKS.md`); none when the point was already set.
    pub files: Vec<PathBuf>,
    /// The feature's id (`?` when the pointer names none).
    pub feature: String,
    pub pointer_path: PathBuf,
    pub tasks_path: Option<PathBuf>,
    /// The title of the task to resume.
    pub resume_title: Option<String>,
    /// What reading and writing the feature warned of, and a finished feature's phase left as
    /// it is: the point stands.
    pub warnings: Vec<String>,
}

/// What the resume point changes, computed from what was read, or the refusal.
enum PointPlan {
    Refuse(Decision),
    Apply {
        point: ResumePoint,
        from_phase: String,
        edits: Vec<FileEdit>,
    },
}

fn plan_point(facts: &FeatureFacts, request: &ResumeRequest) -> Result<PointPlan, OpError> {
    // A pointer baton cannot trust is a person's to fix: rewriting it would bury the problem.
    if facts.is_degraded() {
        let decision = Decision {
            verdict: baton_core::Verdict::Ask,
            reasons: facts.problems.clone(),
            next: Some(
                "fix the pointer (or TASKS.md) as each problem says, then set the resume point again; nothing was changed".into(),
            ),
        };
        return Ok(PointPlan::Refuse(decision));
    }
    let (Some(pointer), Some(bytes)) = (&facts.pointer, &facts.pointer_bytes) else {
        return Err(no_feature());
    };
    let from_phase = pointer.phase().unwrap_or_default().to_string();
    let empty = Default::default();
    let tasks = facts.tasks.as_ref().unwrap_or(&empty);
    if facts.tasks.is_none() && (request.task.is_some() || !request.done.is_empty()) {
        let path = facts
            .tasks_path
            .as_ref()
            .map_or("TASKS.md".into(), |p| shown(p));
        return Err(OpError::usage(format!(
            "--task and --done name tasks, but there is no {path}"
        ))
        .hint("write the feature's TASKS.md first, or set only `--phase`"));
    }
    let point = resume_point(&from_phase, tasks, request).map_err(|reason| {
        OpError::usage(format!("{}: {}", reason.rule, reason.message)).hint("nothing was changed")
    })?;
    let mut edits = Vec::new();
    if point.phase != from_phase {
        let mut new = pointer.clone();
        new.set_phase(&point.phase);
        edits.push(FileEdit {
            path: facts.pointer_path.clone(),
            before: bytes.clone(),
            after: new.to_bytes(),
        });
    }
    if let (Some(text), Some(path)) = (&facts.tasks_text, &facts.tasks_path)
        && !point.marks.is_empty()
    {
        let after = set_marks(text, &point.mark_pairs());
        if after != *text {
            edits.push(FileEdit {
                path: path.clone(),
                before: text.clone().into_bytes(),
                after: after.into_bytes(),
            });
        }
    }
    Ok(PointPlan::Apply {
        point,
        from_phase,
        edits,
    })
}

/// Sets the resume point: leaves exactly one task in progress (the one to resume), marks the
/// tasks done, and moves the pointer's phase, both files in one step. Checks first without the
/// lock (so a refusal creates nothing), then reads again, decides and writes under the feature
/// lock.
pub fn set_resume_point(ctx: &Ctx, request: &ResumeRequest) -> Result<ResumePointSet, OpError> {
    let Gathered {
        layout,
        changes,
        facts,
    } = gather(ctx)?;
    let facts = facts.ok_or_else(no_feature)?;
    if let PointPlan::Refuse(d) = plan_point(&facts, request)? {
        return Ok(ResumePointSet::Refused(d));
    }
    let lock = lock_feature(&layout, ctx.lock_wait)?;
    let facts = read_feature_locked(&layout, &changes, ctx.now, &lock)?.ok_or_else(no_feature)?;
    let (point, from_phase, edits) = match plan_point(&facts, request)? {
        PointPlan::Refuse(d) => return Ok(ResumePointSet::Refused(d)),
        PointPlan::Apply {
            point,
            from_phase,
            edits,
        } => (point, from_phase, edits),
    };
    let mut warnings = facts.warnings.clone();
    if !edits.is_empty() {
        warnings.extend(apply_resume_point(&layout, &lock, ctx.now, &edits)?);
    }
    drop(lock);
    let pointer = facts.pointer.as_ref();
    let feature = pointer.and_then(|p| p.id()).unwrap_or("?").to_string();
    let resume_title = point.task.as_deref().and_then(|id| {
        facts
            .tasks
            .as_ref()
            .and_then(|l| l.get(id))
            .map(|t| t.title.clone())
    });
    if pointer.is_some_and(|p| p.is_terminal()) && point.phase == from_phase {
        warnings.push(format!(
            "the feature's phase is {}: it is finished, and nothing resumes it",
            esc(&from_phase)
        ));
    }
    Ok(ResumePointSet::Set(Box::new(PointSet {
        point,
        from_phase,
        files: edits.into_iter().map(|e| e.path).collect(),
        feature,
        pointer_path: facts.pointer_path,
        tasks_path: facts.tasks_path,
        resume_title,
        warnings,
    })))
}

/// A note that a delegate hit its cap and a person must look (`REVIEW_NEEDED.md`).
#[derive(Debug)]
pub struct ReviewRequest {
    /// The task the capped delegate was working on, a `T-NN` id of the feature's `TASKS.md`.
    pub task: String,
    pub reason: Option<String>,
    pub cap: Option<String>,
    pub partial: Option<Partial>,
    /// Replace a `REVIEW_NEEDED.md` that is there instead of refusing.
    pub replace: bool,
}

/// What the delegate got done before the cap.
#[derive(Debug)]
pub enum Partial {
    Inline(String),
    /// A file inside the project, as the caller named it (relative to `Ctx::dir`).
    File(PathBuf),
}

/// A `REVIEW_NEEDED.md` written.
#[derive(Debug)]
pub struct ReviewMarked {
    /// The file written, relative to the project's root.
    pub written: PathBuf,
    /// What it records (the task, the session, the cap, when).
    pub review: ReviewNeeded,
    /// The pointer's problems when the feature reads degraded, shown as warnings.
    pub problems: Vec<Reason>,
    /// What reading the feature warned of.
    pub warnings: Vec<String>,
}

/// A `REVIEW_NEEDED.md` cleared, or not there.
#[derive(Debug)]
pub struct ReviewCleared {
    /// The file, relative to the project's root.
    pub path: PathBuf,
    pub removed: bool,
}

/// The feature directory a write goes to, or why there is none.
fn feature_dir(facts: Option<&FeatureFacts>) -> Result<PathBuf, OpError> {
    let facts = facts.ok_or_else(no_feature)?;
    facts.dir.clone().ok_or_else(|| {
        let why: Vec<String> = facts
            .problems
            .iter()
            .map(|r| format!("{}: {}", r.rule, r.message))
            .collect();
        OpError::new(
            Kind::AskHuman,
            format!(
                "the active feature has no directory baton can use: {}",
                why.join("; ")
            ),
        )
        .hint("fix the pointer's `path` first; nothing was written")
    })
}

/// Refuses to overwrite a REVIEW_NEEDED.md that is there: it is a person's to handle.
fn refuse_existing(facts: &FeatureFacts) -> Result<(), OpError> {
    let (Some(existing), Some(path)) = (&facts.review_needed, &facts.review_needed_path) else {
        return Ok(());
    };
    Err(OpError::new(
        Kind::Refused,
        format!(
            "{} is already there (task {}); it was left as it is",
            shown(path),
            esc(existing.task.as_deref().unwrap_or("?"))
        ),
    )
    .hint("handle it and run `baton continue review-needed --clear`, or pass `--replace` to overwrite it"))
}

/// Writes the active feature's `REVIEW_NEEDED.md`: checked without the lock first (so that a
/// refusal creates nothing), then read again, checked and written under the feature lock.
pub fn mark_review_needed(ctx: &Ctx, request: ReviewRequest) -> Result<ReviewMarked, OpError> {
    let Gathered {
        layout,
        changes,
        facts,
    } = gather(ctx)?;
    feature_dir(facts.as_ref())?;
    let task = request.task;
    let facts = facts.ok_or_else(no_feature)?;
    if let Some(list) = &facts.tasks
        && list.get(&task).is_none()
    {
        return Err(OpError::usage(format!(
            "no task {} in {}",
            esc(&task),
            facts
                .tasks_path
                .as_deref()
                .unwrap_or(Path::new("TASKS.md"))
                .display()
        ))
        .hint("name the task the delegate was working on; nothing was written"));
    }
    let partial = match request.partial {
        Some(Partial::File(raw)) => {
            let path = path_in_project(&ctx.dir, &layout.root, &raw, "--partial-file", false)?;
            let bytes = read_capped(&path, REVIEW_NEEDED_CAP / 2)?.unwrap_or_default();
            Some(String::from_utf8_lossy(&bytes).into_owned())
        }
        Some(Partial::Inline(text)) => Some(text),
        None => None,
    };
    let review = ReviewNeeded {
        task: Some(task),
        by: ctx.session().map(String::from),
        cap: request.cap,
        written_at: Some(format_ts(ctx.now)),
        reason: request.reason,
        partial,
    };
    // Checked before the lock, so that a refusal creates nothing, and again under it.
    if !request.replace {
        refuse_existing(&facts)?;
    }
    let lock = lock_feature(&layout, ctx.lock_wait)?;
    let facts = read_feature_locked(&layout, &changes, ctx.now, &lock)?.ok_or_else(no_feature)?;
    let dir = feature_dir(Some(&facts))?;
    if !request.replace {
        refuse_existing(&facts)?;
    }
    let written = baton_store::feature::write_review_needed(
        &layout,
        &lock,
        &dir,
        &format_review_needed(&review),
    )?;
    drop(lock);
    let problems = if facts.is_degraded() {
        facts.problems
    } else {
        Vec::new()
    };
    Ok(ReviewMarked {
        written,
        review,
        problems,
        warnings: facts.warnings,
    })
}

/// Removes the active feature's `REVIEW_NEEDED.md` once a person has handled it; nothing to
/// clear takes no lock, so it creates nothing.
pub fn clear_review_needed(ctx: &Ctx) -> Result<ReviewCleared, OpError> {
    let Gathered { layout, facts, .. } = gather(ctx)?;
    let dir = feature_dir(facts.as_ref())?;
    let path = dir.join(REVIEW_NEEDED_FILE);
    let removed = std::fs::symlink_metadata(layout.root.join(&path)).is_ok() && {
        let lock = lock_feature(&layout, ctx.lock_wait)?;
        baton_store::feature::clear_review_needed(&layout, &lock, &dir)?
    };
    Ok(ReviewCleared { path, removed })
}
