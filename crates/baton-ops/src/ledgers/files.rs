//! The ledger file itself: `ledger init` starts it, `ledger commit` commits it alone.

use std::path::{Path, PathBuf};

use super::{Plan, foreign, missing};
use crate::env::Ctx;
use crate::error::OpError;
use baton_core::Decision;
use baton_core::ledger::{parse_header, parse_ledger, render_header};
use baton_store::{git, ledger};

/// The exact re-include stanza an ignored ledger needs, the directory line first.
pub const REINCLUDE_STANZA: &str =
    "plans/**/*\n!plans/**/\n!plans/**/plan.md\n!plans/**/phase-*.md\n!plans/**/STATE.md";

/// The one warning for an ignored ledger, naming the fix.
pub fn ignored_warning(plan: &Plan) -> String {
    format!(
        "git ignores {}: it can be neither committed nor survive `git clean -fdx`.\nIn .gitignore, put this stanza in place of the line that ignores `plans/` (a re-include cannot undo an excluded parent directory, so the directory re-include comes before the files):\n{REINCLUDE_STANZA}\n",
        plan.ledger
            .strip_prefix(&plan.root)
            .unwrap_or(&plan.ledger)
            .display()
    )
}

/// What `ledger init` did.
#[derive(Debug)]
pub enum LedgerInit {
    /// The ledger there names another plan: nothing changed.
    Refused(Decision),
    /// The plan's ledger is there: `created` now, or it already was.
    Ready {
        plan: Plan,
        created: bool,
        /// git ignores it.
        ignored: bool,
    },
}

/// Starts a plan's ledger (`STATE.md` in the plan directory `raw`) with its header line; one
/// that is there already for this plan is left as it is.
pub fn init(ctx: &Ctx, raw: &Path) -> Result<LedgerInit, OpError> {
    let plan = Plan::resolve(ctx, raw)?;
    let created = match ledger::read(&plan.ledger)? {
        Some(existing) => {
            let first = existing.lines().next().unwrap_or_default();
            match parse_header(first) {
                Some(named) if plan.owns_header(named) => false,
                Some(named) => return Ok(LedgerInit::Refused(foreign(&plan, named))),
                None => {
                    return Err(OpError::usage(format!("{} exists without a `# run-state — plan:` header", plan.ledger.display()))
                        .hint("it is not a ledger baton wrote; move it aside, then run `baton ledger init` again"));
                }
            }
        }
        None => {
            ledger::create(&plan.ledger, &render_header(&plan.header_name()))?;
            true
        }
    };
    let ignored = git::is_ignored(&plan.root, &plan.ledger)?;
    Ok(LedgerInit::Ready {
        plan,
        created,
        ignored,
    })
}

/// What `ledger commit` did.
#[derive(Debug)]
pub enum LedgerCommit {
    /// The ledger names another plan: nothing committed.
    Refused(Decision),
    /// The ledger (`rel`, relative to the root) has no change to commit.
    Unchanged { rel: PathBuf },
    Committed {
        rel: PathBuf,
        commit: String,
        message: String,
    },
}

/// Commits the plan's ledger, and only it, with a message naming the phase it records last.
pub fn commit(ctx: &Ctx, raw: &Path) -> Result<LedgerCommit, OpError> {
    let plan = Plan::resolve(ctx, raw)?;
    let text = ledger::read(&plan.ledger)?.ok_or_else(|| missing(&plan))?;
    if git::is_ignored(&plan.root, &plan.ledger)? {
        return Err(OpError::usage(format!(
            "git ignores {}, so it cannot be committed",
            plan.ledger.display()
        ))
        .hint(ignored_warning(&plan)));
    }
    let parsed = parse_ledger(&text);
    if let Some(named) = parsed.plan.as_deref().filter(|n| !plan.owns_header(n)) {
        return Ok(LedgerCommit::Refused(foreign(&plan, named)));
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
        return Ok(LedgerCommit::Unchanged { rel });
    }
    let commit = git::commit_path(&plan.root, &rel, &message)?;
    Ok(LedgerCommit::Committed {
        rel,
        commit,
        message,
    })
}
