//! `baton ledger`: the append-only run ledger of a plan (`plans/<plan>/STATE.md`,
//! docs/ledger.md): structured writers for every event, a validating raw append, a lint, the
//! derivation of the true position from git and re-run gates, and committing the ledger.

mod append;
mod check;
mod commit;
mod derive;
mod events;
mod init;

use clap::Subcommand;

use crate::output::Report;
use baton_core::ledger::{Line, parse_header, parse_line, render_line};
use baton_core::{Decision, Reason};
use baton_ops::env::Ctx;
use baton_ops::error::{CommandError, ExitStatus};
use baton_store::ledger::{AppendError, append};

/// Keep a plan's run ledger: `init`, one writer per event, `append`, `check`, `derive`,
/// `commit`.
#[derive(Debug, Subcommand)]
pub enum LedgerCommand {
    Init(init::InitArgs),
    Append(append::AppendArgs),
    Check(check::CheckArgs),
    Derive(derive::DeriveArgs),
    Commit(commit::CommitArgs),
    Start(events::StartArgs),
    Gate(events::GateArgs),
    Complete(events::CompleteArgs),
    Park(events::ParkArgs),
    Block(events::BlockArgs),
    Died(events::DiedArgs),
    Waiver(events::WaiverArgs),
    Baseline(events::BaselineArgs),
    Env(events::EnvArgs),
    Finish(events::FinishArgs),
}

pub fn dispatch(ctx: &Ctx, cmd: LedgerCommand) -> Result<Report, CommandError> {
    use LedgerCommand as C;
    match cmd {
        C::Init(a) => init::cmd_ledger_init(ctx, a),
        C::Append(a) => append::cmd_ledger_append(ctx, a),
        C::Check(a) => check::cmd_ledger_check(ctx, a),
        C::Derive(a) => derive::cmd_ledger_derive(ctx, a),
        C::Commit(a) => commit::cmd_ledger_commit(ctx, a),
        C::Start(a) => events::write(ctx, &a.plan, a.event(ctx)?),
        C::Gate(a) => events::write(ctx, &a.plan, a.event()?),
        C::Complete(a) => {
            let report = events::write(ctx, &a.plan, a.event(ctx)?)?;
            if !a.commit || report.status != baton_ops::error::ExitStatus::Success {
                return Ok(report);
            }
            // The ledger is committed with the phase it records.
            let committed = commit::cmd_ledger_commit(
                ctx,
                commit::CommitArgs {
                    plan: a.plan.clone(),
                },
            )?;
            Ok(report
                .text_after(&committed.text)
                .with("commit", committed.json.get("commit").cloned()))
        }
        C::Park(a) => events::write(ctx, &a.plan, a.event()),
        C::Block(a) => events::write(ctx, &a.plan, a.event()),
        C::Died(a) => events::write(ctx, &a.plan, a.event()),
        C::Waiver(a) => events::write(ctx, &a.plan, a.event()),
        C::Baseline(a) => events::write(ctx, &a.plan, a.event(ctx)?),
        C::Env(a) => events::write(ctx, &a.plan, a.event()),
        C::Finish(a) => events::write(ctx, &a.plan, a.event()),
    }
}

pub use baton_ops::ledgers::Plan;

/// The refusal of a write to another plan's ledger (exit 3).
pub fn foreign(plan: &Plan, found: &str) -> Decision {
    Decision::new(
        baton_core::Verdict::Refused,
        Reason::new(
            baton_core::Rule::LedgerForeignPlan,
            format!(
                "{} names {found:?}: it is another run's record",
                plan.ledger.display()
            ),
        ),
        Some("leave it alone; keep this plan's ledger in its own plan directory".into()),
    )
}

/// The refusal for a ledger whose header names another plan, read from its first line.
pub fn refuse_foreign(plan: &Plan) -> Result<Option<Report>, CommandError> {
    let Some(head) = baton_store::ledger::read_head(&plan.ledger)? else {
        return Ok(None);
    };
    Ok(parse_header(head.lines().next().unwrap_or_default())
        .filter(|named| !plan.owns_header(named))
        .map(|named| Report::decision(&foreign(plan, named))))
}

/// Appends a line (already validated) with the header check, and reports it.
pub fn append_line(plan: &Plan, line: &Line) -> Result<Report, CommandError> {
    let text = render_line(line);
    // A value that would not read back as written (a phase id with a space, a finding holding
    // ` — `) is refused here rather than written as a line nobody can parse.
    match parse_line(&text) {
        Ok(back) if &back == line => {}
        Ok(_) => {
            return Err(
                CommandError::usage(format!("`{text}` would not read back as written"))
                    .hint("avoid ` — `, ` -> ` and `→` inside free text, and spaces in names"),
            );
        }
        Err(e) => {
            return Err(
                CommandError::usage(format!("`{text}` is not a valid ledger line: {e}"))
                    .hint("check the values passed; nothing was written"),
            );
        }
    }
    if !plan.ledger.exists() {
        return Err(missing(plan));
    }
    let sealed = append(&plan.ledger, &text, |first| match parse_header(first) {
        Some(named) if plan.owns_header(named) => Ok(()),
        Some(named) => Err(AppendError::ForeignPlan {
            found: named.to_string(),
        }),
        None => Err(AppendError::NoHeader),
    });
    match sealed {
        Ok(sealed) => {
            // stdout is the appended line alone, so that `LINE=$(baton ledger start …)`
            // captures just it; the note on a sealed tail goes beside it, to stderr.
            let report = Report::ok(
                serde_json::json!({ "verdict": "ok", "appended": text, "sealed_torn_tail": sealed, "ledger": plan.ledger.display().to_string() }),
                text.clone(),
            );
            Ok(if sealed {
                report.note(
                    "note: the ledger ended in a torn line; it was sealed with a newline first",
                )
            } else {
                report
            })
        }
        Err(AppendError::ForeignPlan { found }) => Ok(Report::decision(&foreign(plan, &found))),
        Err(AppendError::NoHeader) => Err(CommandError::new(
            ExitStatus::Failure,
            format!(
                "{} has no `# run-state — plan: <plan>` header line",
                plan.ledger.display()
            ),
        )
        .hint(
            "nothing was written; if it is this plan's ledger, add the header as its first line",
        )),
        Err(AppendError::Store(e)) => Err(e.into()),
    }
}

pub fn missing(plan: &Plan) -> CommandError {
    CommandError::usage(format!("{} does not exist", plan.ledger.display())).hint(format!(
        "start it with `baton ledger init {}`",
        plan.ledger_arg()
    ))
}

/// The exact re-include stanza an ignored ledger needs, the directory line first.
pub const REINCLUDE_STANZA: &str =
    "plans/**/*\n!plans/**/\n!plans/**/plan.md\n!plans/**/phase-*.md\n!plans/**/STATE.md";

/// The ledger's own discipline, as findings (rule, message): it is committed with the phase it
/// records, every `complete` follows a `started`, and a phase whose file declares gates has a
/// gate line before it is marked complete.
pub fn discipline(
    plan: &Plan,
    ledger: &baton_core::ledger::Ledger,
) -> Result<Vec<(baton_core::Rule, String)>, CommandError> {
    use baton_core::ledger::Event;
    let mut findings = Vec::new();
    let rel = plan
        .ledger
        .strip_prefix(&plan.root)
        .unwrap_or(&plan.ledger)
        .to_path_buf();
    if !baton_store::git::is_ignored(&plan.root, &plan.ledger)?
        && baton_store::git::has_changes(&plan.root, &rel)?
    {
        findings.push((
            baton_core::Rule::LedgerUncommitted,
            format!(
                "{} is untracked or holds events git has not committed: the ledger is committed with the phase it records (`baton ledger commit {}`)",
                rel.display(),
                plan.rel
            ),
        ));
    }
    let mut started: Vec<&str> = Vec::new();
    let mut gated: Vec<&str> = Vec::new();
    for (_, line) in &ledger.events {
        match &line.event {
            Event::Started { phase, .. } => started.push(phase),
            Event::Gate { phase, .. } => gated.push(phase),
            Event::Complete { phase, .. } => {
                if !started.contains(&phase.as_str()) {
                    findings.push((
                        baton_core::Rule::LedgerCompleteWithoutStart,
                        format!("phase {phase} is marked complete with no `started` before it"),
                    ));
                }
                if !gated.contains(&phase.as_str()) {
                    let (declared, _) = crate::commands::gate::declared_gates(plan, phase)?;
                    if !declared.is_empty() {
                        findings.push((
                            baton_core::Rule::LedgerCompleteWithoutGate,
                            format!(
                                "phase {phase} is marked complete with no gate line, though it declares {} (`baton gate run {} --phase {phase}`)",
                                declared.iter().map(|g| g.name.as_str()).collect::<Vec<_>>().join(", "),
                                plan.rel
                            ),
                        ));
                    }
                }
            }
            _ => {}
        }
    }
    Ok(findings)
}
