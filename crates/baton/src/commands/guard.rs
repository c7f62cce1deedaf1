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
    /// Run by the `reference-transaction` hook `baton init` installs (not for people).
    #[command(name = "ref-update", hide = true)]
    RefUpdate(RefUpdateArgs),
}

/// Judge a git transaction's ref updates (the hook's stdin) as the guard's backstop; exit 1
/// refuses it.
#[derive(Debug, Args)]
pub struct RefUpdateArgs {
    /// The transaction's state, as git passes it to the hook (`prepared`, `committed`,
    /// `aborted`); only a prepared one is judged.
    state: String,
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
        GuardCommand::RefUpdate(args) => cmd_ref_update(ctx, args),
    }
}

/// The backstop: a prepared transaction that would move another live session's work, by an
/// agent session, exits 1 with the reason, which git shows as it aborts. Anything gone wrong
/// lets the transaction through, with one stderr line.
fn cmd_ref_update(ctx: &Ctx, args: RefUpdateArgs) -> Result<Report, CommandError> {
    let pass = Report::ok(json!({ "refused": false }), String::new());
    if args.state != "prepared" {
        return Ok(pass);
    }
    let mut input = String::new();
    if let Err(e) = std::io::Read::read_to_string(&mut std::io::stdin().lock(), &mut input) {
        return Ok(pass.warn(format!("guard: cannot read the ref updates: {e}")));
    }
    let mut lost = None;
    let mut journal = |e: serde_json::Value| {
        let kept = ctx.store().map_err(|e| e.message).and_then(|s| {
            s.append_journal(baton_store::JournalTarget::Guard, &e)
                .map_err(|e| e.to_string())
        });
        if let Err(e) = kept {
            lost = Some(format!("guard: the refusal was not journaled: {e}"));
        }
    };
    let decided = baton_ops::guard::at_ref_update(ctx, &ctx.dir, &input, &mut journal);
    let pass = match lost {
        Some(w) => pass.warn(w),
        None => pass,
    };
    match decided {
        Ok(Some(reason)) => Err(CommandError::new(crate::error::ExitStatus::Failure, reason)),
        Ok(None) => Ok(pass),
        Err(e) => Ok(pass.warn(format!("guard: {} (the update was let through)", e.message))),
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
