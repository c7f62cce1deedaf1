use std::path::PathBuf;

use clap::Args;
use serde_json::json;

use crate::error::CommandError;
use crate::output::Report;
use baton_ops::env::Ctx;
use baton_ops::ledgers::{self, LedgerInit, ignored_warning};

/// Start a plan's ledger (`STATE.md`), or resume the run it records.
///
/// Start a plan's ledger: `plans/<plan>/STATE.md` with its header line. Warns once when git
/// ignores it, with the re-include stanza that fixes it. A plan whose ledger is already there
/// is a run to resume, not to start: its position is re-derived from the ledger, git and its
/// re-run gates, and the resume point appended (what `baton ledger derive --append` does).
#[derive(Debug, Args)]
pub struct InitArgs {
    /// The plan directory, like `plans/auth`.
    pub plan: PathBuf,
}

/// What `ledger init` found.
pub enum Init {
    /// Started, or refused (another plan's ledger).
    Done(Report),
    /// The plan's own ledger is there: the run resumes from it.
    Exists {
        ledger: PathBuf,
        warning: Option<String>,
    },
}

pub fn cmd_ledger_init(ctx: &Ctx, args: &InitArgs) -> Result<Init, CommandError> {
    let (plan, created, ignored) = match ledgers::init(ctx, &args.plan)? {
        LedgerInit::Refused(d) => return Ok(Init::Done(Report::decision(&d))),
        LedgerInit::Ready {
            plan,
            created,
            ignored,
        } => (plan, created, ignored),
    };
    let warning = ignored.then(|| ignored_warning(&plan));
    if !created {
        return Ok(Init::Exists {
            ledger: plan.ledger,
            warning,
        });
    }
    let report = Report::ok(
        json!({ "verdict": "ok", "ledger": plan.ledger.display().to_string(), "created": created, "ignored": ignored }),
        format!("started {}\n", plan.ledger.display()),
    );
    Ok(Init::Done(match warning {
        Some(w) => report.warn(w),
        None => report,
    }))
}
