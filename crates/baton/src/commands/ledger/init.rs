use std::path::PathBuf;

use clap::Args;
use serde_json::json;

use super::REINCLUDE_STANZA;
use crate::output::Report;
use baton_core::ledger::{parse_header, render_header};
use baton_ops::env::Ctx;
use baton_ops::error::CommandError;
use baton_ops::ledgers::{Plan, foreign};
use baton_store::{git, ledger};

/// Start a plan's ledger: `plans/<plan>/STATE.md` with its header line. Warns once when git
/// ignores it, with the re-include stanza that fixes it.
#[derive(Debug, Args)]
pub struct InitArgs {
    /// The plan directory, like `plans/auth`.
    pub plan: PathBuf,
}

pub fn cmd_ledger_init(ctx: &Ctx, args: InitArgs) -> Result<Report, CommandError> {
    let plan = Plan::resolve(ctx, &args.plan)?;
    let mut text = String::new();
    let created = match ledger::read(&plan.ledger)? {
        Some(existing) => {
            let first = existing.lines().next().unwrap_or_default();
            match parse_header(first) {
                Some(named) if plan.owns_header(named) => {
                    text.push_str(&format!(
                        "{} already exists for this plan\n",
                        plan.ledger.display()
                    ));
                    false
                }
                Some(named) => return Ok(Report::decision(&foreign(&plan, named))),
                None => {
                    return Err(CommandError::usage(format!("{} exists without a `# run-state — plan:` header", plan.ledger.display()))
                        .hint("it is not a ledger baton wrote; move it aside, then run `baton ledger init` again"));
                }
            }
        }
        None => {
            ledger::create(&plan.ledger, &render_header(&plan.header_name()))?;
            text.push_str(&format!("started {}\n", plan.ledger.display()));
            true
        }
    };
    let ignored = git::is_ignored(&plan.root, &plan.ledger)?;
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

/// The one warning for an ignored ledger, naming the fix (stderr in text mode, `warnings` under
/// `--json`).
pub fn ignored_warning(plan: &Plan) -> String {
    format!(
        "git ignores {}: it can be neither committed nor survive `git clean -fdx`.\nIn .gitignore, put this stanza in place of the line that ignores `plans/` (a re-include cannot undo an excluded parent directory, so the directory re-include comes before the files):\n{REINCLUDE_STANZA}\n",
        plan.ledger
            .strip_prefix(&plan.root)
            .unwrap_or(&plan.ledger)
            .display()
    )
}
