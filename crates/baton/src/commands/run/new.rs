use std::path::PathBuf;

use clap::Args;
use serde_json::json;

use super::{HolderArgs, holder_text, state_file_line, token_note};
use crate::error::CommandError;
use crate::output::Report;
use baton_ops::env::Ctx;
use baton_ops::single_run::{self, NewRun, RunStart};

/// Start a single run and print its run id, holding the run lock.
///
/// Start a single run: print a new run id and record what it is planned against (HEAD, the
/// plan, the project's alignment sections), holding the run lock.
#[derive(Debug, Args)]
pub struct NewArgs {
    /// What the run implements.
    #[arg(long, value_name = "TEXT")]
    feature: Option<String>,
    /// The pre-validated plan file.
    #[arg(long, value_name = "FILE")]
    plan: Option<PathBuf>,
    /// The pipeline mode, as your conductor names it.
    #[arg(long)]
    mode: Option<String>,
    /// The project file with the GOALS, SCOPE and CONSTRAINTS sections.
    #[arg(long, value_name = "PATH", default_value = ".claude/PROJECT.md")]
    project_file: String,
    /// The verdict for a plan over 4 and at most 24 hours old that names no security-sensitive
    /// path: one critic round, or a full re-plan.
    #[arg(long, value_name = "VERDICT", default_value = "critic", value_parser = ["critic", "replan"])]
    mid_gap: String,
    /// A security-sensitive path glob (repeatable; replaces the default list).
    #[arg(long = "security-glob", value_name = "GLOB")]
    security_globs: Vec<String>,
    /// How long without a heartbeat before the run lock is stale when its holder's process
    /// cannot be checked (on another machine, or none known); a holder still running on this
    /// host keeps the lock however long it is silent (`10m`, `1h`, or seconds; at least 60s: a
    /// shorter TTL would let a live holder's lock go stale between two turns).
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = crate::args::duration_of_at_least(60))]
    lease_ttl: std::time::Duration,
    /// Start over although a run of the same plan can be resumed: that run is marked abandoned,
    /// naming this one.
    #[arg(long)]
    fresh: bool,
    #[command(flatten)]
    holder: HolderArgs,
}

pub fn cmd_run_new(ctx: &Ctx, args: NewArgs) -> Result<Report, CommandError> {
    let done = single_run::new_run(
        ctx,
        &*ctx.store()?,
        &NewRun {
            feature: args.feature.as_deref(),
            plan: args.plan.as_deref(),
            mode: args.mode.as_deref(),
            project_file: &args.project_file,
            mid_gap: &args.mid_gap,
            security_globs: &args.security_globs,
            lease_ttl: args.lease_ttl.as_secs(),
            fresh: args.fresh,
            holder: args.holder.holder(),
        },
    )?;
    let s = match done {
        RunStart::Refused(d) => return Ok(Report::decision(&d)),
        RunStart::Started(s) => s,
    };
    let (id, run, path) = (&s.id, &s.run, &s.path);
    // stdout is the run id alone, so that `RUN=$(baton run new …)` captures just it.
    let mut report = Report::ok(
        json!({ "run_id": id.to_string(), "state_file": path.display().to_string(), "epoch": run.lease_epoch, "lease": run.lease }),
        id.to_string(),
    )
    .note(state_file_line(path))
    .note(format!(
        "run lock held for {} (epoch {}); pass `--epoch {}` on later writes",
        holder_text(run),
        run.lease_epoch,
        run.lease_epoch
    ));
    if let Some(token) = &s.token {
        report = report.note(token_note(token)).with("token", token.clone());
    }
    if run
        .alignment
        .as_ref()
        .is_some_and(|a| a.sections.iter().all(|s| s.sha256.is_none()))
    {
        report = report.warn(format!(
            "no `## GOALS`, `## SCOPE` or `## CONSTRAINTS` heading found in {}: the alignment check cannot see a drift (pass `--project-file` to name the right file)",
            run.alignment.as_ref().map(|a| a.path.as_str()).unwrap_or_default()
        ));
    }
    if !s.abandoned.is_empty() {
        report = report.note(format!(
            "note: a fresh start: run {} of this plan is marked abandoned",
            s.abandoned.join(", ")
        ));
    }
    if !s.others.is_empty() {
        report = report.note(format!(
            "note: other runs are open in this project (another plan): {}",
            s.others.join(", ")
        ));
    }
    for w in &s.warnings {
        report = report.warn(w.clone());
    }
    if s.no_head {
        report = report
            .warn("the repository has no commit yet, so `baton run resume` will ask for a re-plan");
    }
    Ok(report)
}
