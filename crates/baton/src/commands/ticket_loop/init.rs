use std::ffi::OsString;

use clap::Args;

use crate::args::WriteFlags;
use crate::error::CommandError;
use crate::output::Report;
use baton_core::model::Phase;
use baton_ops::env::Ctx;
use baton_ops::ticket_loop;

/// Start a ticket's loop, owned by this session.
///
/// Start a ticket's loop (Phase 6 initialisation): create its keyed file, active and owned by
/// this session.
///
/// Refuses (exit 4) when the ticket already has a resumable loop: run `baton resume` first.
/// Refuses (exit 3) when another live session owns it. Prints the owner epoch to pass as
/// `--epoch` on later writes.
#[derive(Debug, Args)]
pub struct InitArgs {
    /// The ticket id.
    ticket: OsString,
    /// The first phase: `skeptic` (Phase 6) or `qa` (Phase 6b) start that loop; the others
    /// record where a loop that starts later in the protocol stands.
    #[arg(long, default_value = "skeptic", value_parser = Phase::NAMES)]
    phase: String,
    /// Iteration cap of the Skeptic/QA loop.
    #[arg(long, default_value_t = 5, value_name = "N")]
    max_iterations: u64,
    /// The branch the work is measured against, as a branch name (`main`); it is compared with
    /// `origin/<BRANCH>` when that exists [default: origin's HEAD branch, else main, else
    /// master].
    #[arg(long, value_name = "BRANCH")]
    base: Option<String>,
    #[command(flatten)]
    flags: WriteFlags,
}

pub fn cmd_loop_init(ctx: &Ctx, args: InitArgs) -> Result<Report, CommandError> {
    let done = ticket_loop::init(
        ctx,
        &*ctx.store()?,
        &ticket_loop::Init {
            ticket: &args.ticket,
            phase: &args.phase,
            max_iterations: args.max_iterations,
            base: args.base.as_deref(),
            flags: args.flags.ownership(),
        },
    )?;
    Ok(super::render_transition(done))
}
