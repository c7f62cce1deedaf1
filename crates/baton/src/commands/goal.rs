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
///
/// With `--ticket`, the goal is that ticket's loop, finished complete and verified by the
/// project's gates (`[judge.gates]` in `.baton.toml`).
#[derive(Debug, Args)]
pub struct GoalArgs {
    /// The plan directory (`plans/<plan>`).
    #[arg(required_unless_present = "ticket")]
    plan: Option<PathBuf>,
    /// The phase the goal is, as the plan names it (`1`, `2b`).
    #[arg(long, requires = "plan")]
    phase: Option<String>,
    /// The goal is this ticket's loop instead.
    #[arg(long, value_name = "TICKET", conflicts_with_all = ["plan", "phase"])]
    ticket: Option<std::ffi::OsString>,
}

struct PhaseGoal {
    plan: PathBuf,
    phase: String,
}

#[derive(Serialize)]
struct Goal {
    condition: String,
    /// The command whose output meets the condition.
    check: String,
}

pub fn cmd_goal(ctx: &Ctx, args: GoalArgs) -> Result<Report, CommandError> {
    if let Some(ticket) = &args.ticket {
        if baton_ops::judge::project_gates(ctx)?.is_empty() {
            return Err(CommandError::usage(
                "the project declares no gates, so no verdict can meet a loop's goal",
            )
            .hint("declare them in .baton.toml as `[judge.gates]` with `<name> = \"<command>\"` (docs/judge.md)"));
        }
        let target = baton_ops::ticket_loop::Target::derive(ctx, ticket);
        let t = shell_quote(&baton_core::text::esc(&target.raw));
        let check = format!("baton verdict --ticket {t}");
        let condition = format!(
            "The loop of {t} is complete: after the last change to the files, the output of `{check}` starts with `verified:`. Nothing else meets this goal: not a statement that the work is done, that tests pass or that gates ran, and not an earlier verdict. Finish the loop with `baton loop finish {t} --status complete` and run the project's gates with `baton gate run --ticket {t}`; a verdict of failed or unverified says what is missing."
        );
        return Ok(Report::of(
            ExitStatus::Success,
            &Goal {
                condition: condition.clone(),
                check,
            },
            condition,
        ));
    }
    let (Some(plan), Some(phase)) = (&args.plan, &args.phase) else {
        return Err(
            CommandError::usage("a plan's goal is one phase: pass `--phase N`")
                .hint("or `--ticket T` for a ticket's loop"),
        );
    };
    let args = PhaseGoal {
        plan: plan.clone(),
        phase: phase.clone(),
    };
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
