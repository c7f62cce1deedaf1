use std::path::PathBuf;

use clap::Args;
use serde_json::json;

use crate::error::CommandError;
use crate::output::Report;
use baton_ops::env::Ctx;
use baton_ops::ledgers::{self, LedgerCommit};

/// Commit the ledger, and only the ledger.
///
/// The commit's message names the phase the ledger records.
#[derive(Debug, Args)]
pub struct CommitArgs {
    /// The plan directory.
    pub plan: PathBuf,
}

pub fn cmd_ledger_commit(ctx: &Ctx, args: CommitArgs) -> Result<Report, CommandError> {
    Ok(match ledgers::commit(ctx, &args.plan)? {
        LedgerCommit::Refused(d) => Report::decision(&d),
        LedgerCommit::Unchanged { rel } => Report::ok(
            json!({ "verdict": "ok", "commit": null, "message": null }),
            format!("{} has nothing new to commit", rel.display()),
        ),
        LedgerCommit::Committed {
            rel,
            commit,
            message,
        } => Report::ok(
            json!({ "verdict": "ok", "commit": commit, "message": message }),
            format!("committed {} as {commit}: {message}", rel.display()),
        ),
    })
}
