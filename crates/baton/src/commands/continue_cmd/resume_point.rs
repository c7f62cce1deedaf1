use clap::Args;
use serde_json::json;

use crate::error::CommandError;
use crate::output::Report;
use baton_core::feature::ResumeRequest;
use baton_core::text::esc;
use baton_ops::continuation::{ResumePointSet, set_resume_point, shown};
use baton_ops::env::Ctx;

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

/// `baton continue --set-resume-point` (`baton_ops::continuation::set_resume_point`),
/// rendered.
pub fn cmd_set_resume_point(ctx: &Ctx, args: ResumePointArgs) -> Result<Report, CommandError> {
    let p = match set_resume_point(ctx, &args.request())? {
        ResumePointSet::Refused(d) => return Ok(Report::decision(&d)),
        ResumePointSet::Set(p) => p,
    };
    let (point, from_phase, id) = (&p.point, &p.from_phase, &p.feature);
    let mut text = if p.files.is_empty() {
        format!("resume point of {} already set; nothing changed\n", esc(id))
    } else {
        let files: Vec<String> = p.files.iter().map(|f| shown(f)).collect();
        format!("resume point set for {}: {}\n", esc(id), files.join(", "))
    };
    if point.phase != *from_phase {
        text.push_str(&format!(
            "  phase: {} -> {}\n",
            esc(from_phase),
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
            esc(p.resume_title.as_deref().unwrap_or(""))
        )),
        None => text.push_str("no task left to resume\n"),
    }
    let mut report = Report::ok(
        json!({
            "changed": !p.files.is_empty(),
            "feature": id,
            "pointer_path": p.pointer_path,
            "tasks_path": p.tasks_path,
            "phase": { "from": from_phase, "to": point.phase },
            "resume_task": point.task,
            "marks": point.marks,
            "files": p.files,
        }),
        text,
    );
    for w in &p.warnings {
        report = report.warn(esc(w));
    }
    Ok(report)
}
