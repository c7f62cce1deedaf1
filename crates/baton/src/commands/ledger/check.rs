use std::path::PathBuf;

use clap::Args;
use serde_json::json;

use crate::error::CommandError;
use crate::output::Report;
use baton_core::ledger::parse_ledger;
use baton_ops::env::Ctx;
use baton_ops::ledgers::ignored_warning;
use baton_ops::ledgers::{Plan, missing};
use baton_store::{git, ledger};

/// Lint a ledger: its lines, its header, and whether git ignores it.
///
/// Lint a ledger: every line against the grammar (bad lines counted and shown, never fatal),
/// the header, and whether git ignores it.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The plan directory.
    pub plan: PathBuf,
}

pub fn cmd_ledger_check(ctx: &Ctx, args: CheckArgs) -> Result<Report, CommandError> {
    let plan = Plan::resolve(ctx, &args.plan)?;
    let text = ledger::read(&plan.ledger)?.ok_or_else(|| missing(&plan))?;
    let l = parse_ledger(&text);
    let mut out = format!(
        "{}: {} events, {} bad lines\n",
        plan.ledger.display(),
        l.events.len(),
        l.bad.len()
    );
    let header = match &l.plan {
        None => {
            out.push_str("warning: the first line is not `# run-state — plan: <plan>`\n");
            "missing"
        }
        Some(named) if !plan.owns_header(named) => {
            out.push_str(&format!(
                "warning: the header names {named:?}: this is another run's record\n"
            ));
            "foreign"
        }
        Some(_) => "ok",
    };
    // A bad line is shown, but never more than a screenful of it.
    let shown = |raw: &str| -> String {
        let cut: String = raw.chars().take(200).collect();
        if cut.len() < raw.len() {
            format!("{cut}…")
        } else {
            cut
        }
    };
    for (n, raw, e) in &l.bad {
        out.push_str(&format!("line {n}: {e}: {:?}\n", shown(raw)));
    }
    let ignored = git::is_ignored(&plan.root, &plan.ledger)?;
    let bad: Vec<_> = l
        .bad
        .iter()
        .map(|(n, raw, e)| json!({ "line": n, "text": shown(raw), "error": e.to_string() }))
        .collect();
    let findings = baton_ops::ledgers::discipline(&plan, &l)?;
    for (rule, message) in &findings {
        out.push_str(&format!("finding: {rule}: {message}\n"));
    }
    let report = Report::ok(
        json!({
            "events": l.events.len(), "bad": bad, "header": header, "ignored": ignored,
            "findings": findings.iter().map(|(rule, message)| json!({"rule": rule, "message": message})).collect::<Vec<_>>(),
        }),
        out,
    );
    Ok(if ignored {
        report.warn(ignored_warning(&plan))
    } else {
        report
    })
}
