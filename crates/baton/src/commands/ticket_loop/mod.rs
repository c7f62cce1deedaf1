//! `baton loop`: the per-ticket loop state of the ticket-loop protocol (docs/ticket-loop.md).

mod artifact;
mod finish;
pub mod heartbeat;
mod init;
pub mod interrupt;
mod key;
mod set;
mod show;

use std::ffi::OsStr;

use clap::Subcommand;

use crate::args::WriteFlags;
use crate::error::CommandError;
use crate::output::Report;
use crate::view::loop_report;
use baton_core::Decision;
use baton_core::journal::JournalEvent;
use baton_core::model::LoopState;
use baton_ops::env::Ctx;
use baton_ops::ticket_loop::{self, Applied, Target, Transition};

/// Record and inspect one ticket's loop state (`.agentic/loop-state-<KEY>.json`).
#[derive(Debug, Subcommand)]
pub enum LoopCommand {
    Key(key::KeyArgs),
    Init(init::InitArgs),
    Set(set::SetArgs),
    Artifact(artifact::ArtifactArgs),
    Heartbeat(heartbeat::HeartbeatArgs),
    Interrupt(interrupt::InterruptArgs),
    Finish(finish::FinishArgs),
    Show(show::ShowArgs),
}

pub fn dispatch(ctx: &Ctx, cmd: LoopCommand) -> Result<Report, CommandError> {
    match cmd {
        LoopCommand::Key(args) => key::cmd_loop_key(ctx, args),
        LoopCommand::Init(args) => init::cmd_loop_init(ctx, args),
        LoopCommand::Set(args) => set::cmd_loop_set(ctx, args),
        LoopCommand::Artifact(args) => artifact::cmd_loop_artifact(ctx, args),
        LoopCommand::Heartbeat(args) => heartbeat::cmd_loop_heartbeat(ctx, args),
        LoopCommand::Interrupt(args) => interrupt::cmd_loop_interrupt(ctx, args),
        LoopCommand::Finish(args) => finish::cmd_loop_finish(ctx, args),
        LoopCommand::Show(args) => show::cmd_loop_show(ctx, args),
    }
}

/// The shared write path of `loop set`, `artifact`, `interrupt` and `finish`
/// (`baton_ops::ticket_loop::transition`), rendered.
pub fn transition(
    ctx: &Ctx,
    ticket: &OsStr,
    flags: &WriteFlags,
    event: JournalEvent,
    apply: impl FnOnce(&mut LoopState, &Target) -> Result<Applied, Decision>,
) -> Result<Report, CommandError> {
    let target = ticket_loop::Target::derive(ctx, ticket);
    Ok(render_transition(ticket_loop::transition(
        ctx,
        &*ctx.store()?,
        target,
        &flags.ownership(),
        event,
        apply,
    )?))
}

/// What a transition did, as a command prints it.
pub fn render_transition(done: Transition) -> Report {
    match done {
        Transition::Refused { decision, notes } => {
            Report::decision(&decision).text_before(&notes.join("\n"))
        }
        Transition::Written(w) => {
            let mut report = loop_report(&w.decision, &w.target, &w.path, &w.state, &w.message)
                .with("changed", w.changed)
                .with("notes", w.notes.clone())
                .text_before(&w.notes.join("\n"));
            for warning in w.warnings {
                report = report.warn(warning);
            }
            report
        }
    }
}
