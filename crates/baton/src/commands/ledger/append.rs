use std::path::PathBuf;

use clap::Args;

use crate::error::CommandError;
use crate::output::Report;
use baton_ops::env::Ctx;
use baton_ops::ledgers::{self, EventAppend};

/// Append one raw line, validated against the grammar.
///
/// Append one raw line after validating it against the grammar (invalid: exit 2, nothing
/// written). Prefer the structured writers (`baton ledger start`, `gate`, …).
#[derive(Debug, Args)]
pub struct AppendArgs {
    /// The plan directory.
    pub plan: PathBuf,
    /// The event line, like `phase 2: BLOCKED — waiting for the API key`.
    pub line: String,
}

pub fn cmd_ledger_append(ctx: &Ctx, args: AppendArgs) -> Result<Report, CommandError> {
    let EventAppend { plan, appended } = ledgers::append_raw(ctx, &args.plan, &args.line)?;
    Ok(crate::view::appended(&plan, appended))
}
