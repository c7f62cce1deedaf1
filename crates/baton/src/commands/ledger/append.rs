use std::path::PathBuf;

use clap::Args;

use crate::output::Report;
use baton_core::ledger::parse_line;
use baton_ops::env::Ctx;
use baton_ops::error::CommandError;
use baton_ops::ledgers::Plan;

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
    let plan = Plan::resolve(ctx, &args.plan)?;
    // Another run's ledger is refused before anything else is looked at.
    if let Some(refusal) = baton_ops::ledgers::refuse_foreign(&plan)? {
        return Ok(Report::decision(&refusal));
    }
    let line = parse_line(&args.line).map_err(|e| {
        CommandError::usage(format!(
            "not a ledger event: {e}: {:?}",
            baton_core::text::esc(&args.line)
        ))
        .hint("see `baton ledger --help` for the writers, or docs/ledger.md for the grammar; nothing was written")
    })?;
    // A raw line passes the writers' checks too.
    super::events::check_event(&plan, &line.event)?;
    Ok(crate::view::appended(
        &plan,
        baton_ops::ledgers::append_line(&plan, &line)?,
    ))
}
