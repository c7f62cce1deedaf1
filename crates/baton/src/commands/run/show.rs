use clap::Args;
use serde_json::json;

use super::new::holder_text;
use super::{HolderArgs, here, lease_state_of, missing_run, parse_run_id, state_file_lines};
use crate::context::Ctx;
use crate::error::CommandError;
use crate::output::Report;
use baton_core::decide::lease::LeaseState;
use baton_core::decide::run_resume::restoration;
use baton_store::StateStore;

/// Show a run: what it was planned against, its progress, and its lock.
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// The run id `baton run new` printed (16 hex digits, or a legacy `YYYYMMDD-HHMMSS`).
    run_id: String,
}

pub fn cmd_run_show(ctx: &Ctx, args: ShowArgs) -> Result<Report, CommandError> {
    let id = parse_run_id(&args.run_id)?;
    let store = ctx.store()?;
    let loaded = store.read_run(&id)?.ok_or_else(|| missing_run(&id))?;
    let run = &loaded.state;
    let (here, _) = here(ctx, &HolderArgs::default(), false)?;
    let lock = match lease_state_of(run, &here, ctx.now) {
        LeaseState::Free => "free".to_string(),
        LeaseState::Mine => format!("held by this caller: {}", holder_text(run)),
        LeaseState::Live(why) => format!("held: {why}"),
        LeaseState::Stale(why) => format!("stale: {why}"),
    };
    let rest = restoration(run);
    let mut text = format!(
        "run {id} ({}){}\n  base:    {} on {}\n  plan:    {}\n  lock:    {lock} (epoch {})\n  agents:  {}\n",
        run.status,
        run.feature
            .as_deref()
            .map(|f| format!(": {f}"))
            .unwrap_or_default(),
        run.base_commit.as_deref().unwrap_or("(none)"),
        run.branch.as_deref().unwrap_or("(detached)"),
        run.plan.as_ref().map_or("(none)", |p| p.path.as_str()),
        run.lease_epoch,
        if rest.completed_agents.is_empty() {
            "none".into()
        } else {
            rest.completed_agents.join(", ")
        },
    );
    if !run.hard_gates.is_empty() {
        text.push_str(&format!(
            "  gates:   {}\n",
            run.hard_gates
                .iter()
                .map(|g| g.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    for step in &run.steps {
        text.push_str(&format!("  step {}: {}\n", step.name, step.status));
    }
    if let Some(next) = &rest.next_step {
        text.push_str(&format!("  next:    {next}\n"));
    }
    text.push_str(&format!("{}\n", state_file_lines(run, &loaded.path)));
    Ok(Report::ok(
        json!({ "path": loaded.path.display().to_string(), "lock": lock, "restore": rest, "state": run }),
        text,
    ))
}
