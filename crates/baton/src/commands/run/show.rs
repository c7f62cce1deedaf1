use clap::Args;
use serde_json::json;

use super::{HolderArgs, here, holder_text, lease_state_of, state_file_lines};
use crate::error::CommandError;
use crate::output::Report;
use baton_core::decide::lease::LeaseState;
use baton_core::decide::run_resume::restoration;
use baton_core::text::{esc, esc_join, esc_or};
use baton_ops::env::Ctx;
use baton_ops::single_run::{missing_run, parse_run_id};

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
    // What autonomous-dev recorded since the import counts too (shown, not written: `show` is
    // a query).
    let mut merged = loaded.state.clone();
    baton_ops::single_run::merge_completion_ledger(&mut merged)?;
    let run = &merged;
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
        esc(run.status.as_str()),
        run.feature
            .as_deref()
            .map(|f| format!(": {}", esc(f)))
            .unwrap_or_default(),
        esc_or(run.base_commit.as_deref(), "(none)"),
        esc_or(run.branch.as_deref(), "(detached)"),
        run.plan.as_ref().map_or("(none)".into(), |p| esc(&p.path)),
        run.lease_epoch,
        if rest.completed_agents.is_empty() {
            "none".into()
        } else {
            esc_join(rest.completed_agents.iter().map(String::as_str))
        },
    );
    if !run.hard_gates.is_empty() {
        text.push_str(&format!(
            "  gates:   {}\n",
            esc_join(run.hard_gates.iter().map(|g| g.name.as_str()))
        ));
    }
    for step in &run.steps {
        text.push_str(&format!(
            "  step {}: {}\n",
            esc(&step.name),
            esc(&step.status)
        ));
    }
    if let Some(next) = &rest.next_step {
        text.push_str(&format!("  next:    {}\n", esc(next)));
    }
    text.push_str(&format!("{}\n", state_file_lines(run, &loaded.path)));
    // The JSON carries the state as it is on disk.
    let run = &loaded.state;
    Ok(Report::ok(
        json!({ "path": loaded.path.display().to_string(), "lock": lock, "restore": rest, "state": run }),
        text,
    ))
}
