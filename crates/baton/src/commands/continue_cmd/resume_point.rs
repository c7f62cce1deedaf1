use clap::Args;
use serde_json::json;

use super::{gather, no_feature, shown};
use crate::output::Report;
use baton_core::Decision;
use baton_core::feature::{ResumePoint, ResumeRequest, resume_point, set_marks};
use baton_core::text::esc;
use baton_ops::env::Ctx;
use baton_ops::error::CommandError;
use baton_store::feature::{
    FeatureFacts, FileEdit, apply_resume_point, lock_feature, read_feature_locked,
};

/// Where the resume point moves to; each applies only with `--set-resume-point`.
#[derive(Debug, Args)]
pub struct ResumePointArgs {
    /// The phase to set in the pointer: plan, build, review, or done, merged, abandoned.
    /// Without it the phase is derived: `plan` with any task started or done becomes `build`,
    /// `build` with every task done becomes `review`, anything else stays.
    #[arg(long, value_name = "PHASE", requires = "set_resume_point")]
    pub phase: Option<String>,
    /// The task to resume (a `T-NN` id in TASKS.md); it becomes `[~]`. Without it: the first
    /// task in progress, else the first open task that is not BLOCKED.
    #[arg(long, value_name = "T-NN", requires = "set_resume_point")]
    pub task: Option<String>,
    /// A task finished since the markers were last set; it becomes `[x]`. Repeat it for
    /// several.
    #[arg(long, value_name = "T-NN", requires = "set_resume_point")]
    pub done: Vec<String>,
}

impl ResumePointArgs {
    fn request(&self) -> ResumeRequest {
        ResumeRequest {
            phase: self.phase.clone(),
            task: self.task.clone(),
            done: self.done.clone(),
        }
    }
}

/// What the resume point changes, computed from what was read, or the report that refuses it.
enum Plan {
    Refuse(Box<Report>),
    Apply {
        point: ResumePoint,
        from_phase: String,
        edits: Vec<FileEdit>,
    },
}

fn plan(facts: &FeatureFacts, request: &ResumeRequest) -> Result<Plan, CommandError> {
    // A pointer baton cannot trust is a person's to fix: rewriting it would bury the problem.
    if facts.is_degraded() {
        let decision = Decision {
            verdict: baton_core::Verdict::Ask,
            reasons: facts.problems.clone(),
            next: Some(
                "fix the pointer (or TASKS.md) as each problem says, then set the resume point again; nothing was changed".into(),
            ),
        };
        return Ok(Plan::Refuse(Box::new(Report::decision(&decision))));
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
        return Err(CommandError::usage(format!(
            "--task and --done name tasks, but there is no {path}"
        ))
        .hint("write the feature's TASKS.md first, or set only `--phase`"));
    }
    let point = resume_point(&from_phase, tasks, request).map_err(|reason| {
        CommandError::usage(format!("{}: {}", reason.rule, reason.message))
            .hint("nothing was changed")
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
    Ok(Plan::Apply {
        point,
        from_phase,
        edits,
    })
}

/// `baton continue --set-resume-point`: checks first without the lock (so a refusal creates
/// nothing), then reads again, decides and writes under the feature lock.
pub fn cmd_set_resume_point(ctx: &Ctx, args: ResumePointArgs) -> Result<Report, CommandError> {
    let request = args.request();
    let super::Gathered {
        layout,
        changes,
        facts,
    } = gather(ctx)?;
    let facts = facts.ok_or_else(no_feature)?;
    if let Plan::Refuse(report) = plan(&facts, &request)? {
        return Ok(*report);
    }
    let lock = lock_feature(&layout, ctx.lock_wait)?;
    let facts = read_feature_locked(&layout, &changes, ctx.now, &lock)?.ok_or_else(no_feature)?;
    let (point, from_phase, edits) = match plan(&facts, &request)? {
        Plan::Refuse(report) => return Ok(*report),
        Plan::Apply {
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
    let id = pointer.and_then(|p| p.id()).unwrap_or("?");
    let resume_title = point.task.as_deref().and_then(|id| {
        facts
            .tasks
            .as_ref()
            .and_then(|l| l.get(id))
            .map(|t| t.title.clone())
    });
    let mut text = if edits.is_empty() {
        format!("resume point of {} already set; nothing changed\n", esc(id))
    } else {
        let files: Vec<String> = edits.iter().map(|e| shown(&e.path)).collect();
        format!("resume point set for {}: {}\n", esc(id), files.join(", "))
    };
    if point.phase != from_phase {
        text.push_str(&format!(
            "  phase: {} -> {}\n",
            esc(&from_phase),
            esc(&point.phase)
        ));
    }
    for m in &point.marks {
        text.push_str(&format!(
            "  {}: {} -> {}\n",
            esc(&m.task),
            m.from.as_box(),
            m.to.as_box()
        ));
    }
    match &point.task {
        Some(task) => text.push_str(&format!(
            "resume at {} {}\n",
            esc(task),
            esc(resume_title.as_deref().unwrap_or(""))
        )),
        None => text.push_str("no task left to resume\n"),
    }
    if pointer.is_some_and(|p| p.is_terminal()) && point.phase == from_phase {
        warnings.push(format!(
            "the feature's phase is {}: it is finished, and nothing resumes it",
            esc(&from_phase)
        ));
    }
    let mut report = Report::ok(
        json!({
            "changed": !edits.is_empty(),
            "feature": id,
            "pointer_path": facts.pointer_path,
            "tasks_path": facts.tasks_path,
            "phase": { "from": from_phase, "to": point.phase },
            "resume_task": point.task,
            "marks": point.marks,
            "files": edits.iter().map(|e| e.path.clone()).collect::<Vec<_>>(),
        }),
        text,
    );
    for w in warnings {
        report = report.warn(esc(&w));
    }
    Ok(report)
}
