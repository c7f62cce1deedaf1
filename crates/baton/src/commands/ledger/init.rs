use std::path::PathBuf;

use clap::Args;
use serde_json::json;

use crate::output::Report;
use baton_ops::env::Ctx;
use baton_ops::error::CommandError;
use baton_ops::ledgers::{self, LedgerInit, ignored_warning};

/// Start a plan's ledger, `plans/<plan>/STATE.md`.
///
/// Start a plan's ledger: `plans/<plan>/STATE.md` with its header line. Warns once when git
/// ignores it, with the re-include stanza that fixes it.
#[derive(Debug, Args)]
pub struct InitArgs {
    /// The plan directory, like `plans/auth`.
    pub plan: PathBuf,
}

pub fn cmd_ledger_init(ctx: &Ctx, args: InitArgs) -> Result<Report, CommandError> {
    let (plan, created, ignored) = match ledgers::init(ctx, &args.plan)? {
        LedgerInit::Refused(d) => return Ok(Report::decision(&d)),
        LedgerInit::Ready {
            plan,
            created,
            ignored,
        } => (plan, created, ignored),
    };
    let text = if created {
        format!("started {}\n", plan.ledger.display())
    } else {
        format!("{} already exists for this plan\n", plan.ledger.display())
    };
    let report = Report::ok(
        json!({ "verdict": "ok", "ledger": plan.ledger.display().to_string(), "created": created, "ignored": ignored }),
        text,
    );
    Ok(if ignored {
        report.warn(ignored_warning(&plan))
    } else {
        report
    })
}
