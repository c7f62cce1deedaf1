//! `baton goal`: a goal condition for an agent client's goal, cleared only by baton's verdict.

use std::path::PathBuf;

use clap::Args;
use serde::Serialize;

use crate::error::{CommandError, ExitStatus};
use crate::output::Report;
use baton_core::text::shell_quote;
use baton_ops::env::Ctx;
use baton_ops::ledgers::Plan;

/// Print a goal condition that only baton's verified verdict meets.
///
/// Give it to Claude Code's `/goal` (or `claude -p "/goal …"`) or to Codex's goal. Their
/// evaluators read the session's text and run nothing, so the condition names the one piece of
/// text that settles it: the output of `baton verdict <plan> --phase N`, run after the last
/// change to the tree, starting with `verified:`. A model's own word that the phase is done, or
/// that tests pass, does not meet it.
///
/// stdout is the condition alone (`G=$(baton goal plans/auth --phase 2)`); `--json` adds the
/// command that checks it.
#[derive(Debug, Args)]
pub struct GoalArgs {
    /// The plan directory (`plans/<plan>`).
    plan: PathBuf,
    /// The phase the goal is, as the plan names it (`1`, `2b`).
    #[arg(long)]
    phase: String,
}

#[derive(Serialize)]
struct Goal {
    condition: String,
    /// The command whose output meets the condition.
    check: String,
}

pub fn cmd_goal(ctx: &Ctx, args: GoalArgs) -> Result<Report, CommandError> {
    let plan = Plan::resolve(ctx, &args.plan)?;
    let declared = baton_ops::ledgers::declared_phases(&plan)?;
    if !declared.is_empty() && !declared.contains(&args.phase) {
        return Err(
            CommandError::usage(format!("{} declares no phase {}", plan.rel, args.phase))
                .hint(format!("its phases: {}", declared.join(", "))),
        );
    }
    let check = format!(
        "baton verdict {} --phase {}",
        plan.ledger_arg(),
        shell_quote(&args.phase)
    );
    let condition = format!(
        "Phase {phase} of {plan} is complete: after the last change to the files, the output of `{check}` starts with `verified:`. Nothing else meets this goal: not a statement that the phase is done, that tests pass or that gates ran, and not an earlier verdict. Record the phase with `baton ledger complete {arg} --phase {phase} --tests <passed>/<run>` and run its gates with `baton gate run {arg} --phase {phase}`; a verdict of failed or unverified says what is missing.",
        phase = args.phase,
        plan = plan.rel,
        arg = plan.ledger_arg(),
    );
    Ok(Report::of(
        ExitStatus::Success,
        &Goal {
            condition: condition.clone(),
            check,
        },
        condition,
    ))
}
