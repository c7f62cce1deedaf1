use std::path::PathBuf;

use clap::Args;
use serde_json::json;

use super::init::ignored_warning;
use crate::output::Report;
use baton_core::ledger::parse_ledger;
use baton_ops::env::Ctx;
use baton_ops::error::CommandError;
use baton_ops::ledgers::{Plan, missing};
use baton_store::{git, ledger};

/// Commit the ledger, and only the ledger, with a message naming the phase it records.
#[derive(Debug, Args)]
pub struct CommitArgs {
    /// The plan directory.
    pub plan: PathBuf,
}

pub fn cmd_ledger_commit(ctx: &Ctx, args: CommitArgs) -> Result<Report, CommandError> {
    let plan = Plan::resolve(ctx, &args.plan)?;
    let text = ledger::read(&plan.ledger)?.ok_or_else(|| missing(&plan))?;
    if git::is_ignored(&plan.root, &plan.ledger)? {
        return Err(CommandError::usage(format!(
            "git ignores {}, so it cannot be committed",
            plan.ledger.display()
        ))
        .hint(ignored_warning(&plan)));
    }
    let parsed = parse_ledger(&text);
    if let Some(named) = parsed.plan.as_deref().filter(|n| !plan.owns_header(n)) {
        return Ok(Report::decision(&baton_ops::ledgers::foreign(&plan, named)));
    }
    let phase = parsed
        .events
        .iter()
        .rev()
        .find_map(|(_, l)| l.event.phase().map(String::from));
    let message = match &phase {
        Some(p) => format!("{}: ledger through phase {p}", plan.rel),
        None => format!("{}: ledger", plan.rel),
    };
    let rel = plan
        .ledger
        .strip_prefix(&plan.root)
        .unwrap_or(&plan.ledger)
        .to_path_buf();
    if !git::has_changes(&plan.root, &rel)? {
        return Ok(Report::ok(
            json!({ "verdict": "ok", "commit": null, "message": null }),
            format!("{} has nothing new to commit", rel.display()),
        ));
    }
    let commit = git::commit_path(&plan.root, &rel, &message)?;
    Ok(Report::ok(
        json!({ "verdict": "ok", "commit": commit, "message": message }),
        format!("committed {} as {commit}: {message}", rel.display()),
    ))
}
