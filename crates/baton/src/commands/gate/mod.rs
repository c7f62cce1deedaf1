//! `baton gate`: running the exit gates a plan's phase files declare (docs/ledger.md).

mod run;

use clap::Subcommand;

use crate::error::CommandError;
use crate::output::Report;
use baton_ops::env::Ctx;

pub use run::RunArgs;

/// Run the exit gates declared in a plan's phase files.
#[derive(Debug, Subcommand)]
pub enum GateCommand {
    Run(RunArgs),
}

pub fn dispatch(ctx: &Ctx, cmd: GateCommand) -> Result<Report, CommandError> {
    match cmd {
        GateCommand::Run(args) => run::cmd_gate_run(ctx, args),
    }
}
