//! `baton guard`: the guard of shared checkouts (docs/guard.md), as a person steers it.

use clap::{Args, Subcommand};
use serde_json::json;

use crate::error::CommandError;
use crate::output::Report;
use baton_ops::env::Ctx;

#[derive(Debug, Subcommand)]
pub enum GuardCommand {
    #[command(about = "Let one refused git command of a session through, once")]
    Allow(AllowArgs),
}

/// Let the next git command of a session that the guard would refuse run, once (a person's
/// decision, journaled; refused when run inside an agent session).
///
/// The guard refuses a git command that would destroy or move another live session's work in
/// a shared checkout (docs/guard.md). When a person wants it done anyway, they run this in the
/// checkout, naming the agent's session (the refusal names the other session; the agent's own
/// id is in its client: `/status` in Claude Code, the session line in Codex). The allowance is
/// used by that session's next refused command, and then gone.
#[derive(Debug, Args)]
pub struct AllowArgs {
    /// The agent session to let through [default: `--session`, `$BATON_SESSION`].
    #[arg(value_name = "SESSION")]
    session: Option<String>,
}

pub fn dispatch(ctx: &Ctx, cmd: GuardCommand) -> Result<Report, CommandError> {
    match cmd {
        GuardCommand::Allow(args) => cmd_allow(ctx, args),
    }
}

fn cmd_allow(ctx: &Ctx, args: AllowArgs) -> Result<Report, CommandError> {
    if let Some(agent) = baton_store::process::agent_ancestor_named() {
        return Err(CommandError::usage(format!(
            "`baton guard allow` runs inside an agent session ({}): letting a refused command through is a person's decision",
            agent.1.def().title()
        ))
        .hint("a person runs it in a terminal of their own, in the checkout"));
    }
    let session = args
        .session
        .as_deref()
        .or(ctx.session())
        .ok_or_else(|| {
            CommandError::usage("no session named")
                .hint("pass the agent's session id: `baton guard allow <SESSION>`")
        })?
        .to_string();
    let store = ctx.store()?;
    let path = baton_ops::guard::allow(ctx, &ctx.dir, &session, &*store)?;
    Ok(Report::ok(
        json!({ "session": session, "path": path.display().to_string() }),
        format!(
            "the next git command of session {} that the guard would refuse runs, once\n(allowance: {}; journaled)",
            baton_core::text::esc(&session),
            path.display()
        ),
    ))
}
