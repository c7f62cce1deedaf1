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

use crate::error::CommandError;
use crate::output::Report;
use baton_ops::env::Ctx;

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
        C::Init(a) => match init::cmd_ledger_init(ctx, &a)? {
            init::Init::Done(report) => Ok(report),
            // Seed 003: "On starting a run whose plan directory already has a STATE.md", the
            // resume protocol: re-derive from the ledger, git and the gates, and append where
            // the run resumes. Nothing confirmed is redone.
            init::Init::Exists { ledger, warning } => {
                let mut report = derive::cmd_ledger_derive(
                    ctx,
                    derive::DeriveArgs {
                        plan: a.plan,
                        append: true,
                        no_gates: false,
                        timeout: std::time::Duration::from_secs(600),
                    },
                )?;
                report.json.insert("created".into(), false.into());
                report
                    .json
                    .insert("ledger".into(), ledger.display().to_string().into());
                report.warnings.extend(warning);
                Ok(report.note(format!(
                    "{} already exists for this plan: the run resumes from it (its position re-derived from the ledger, git and the re-run gates)",
                    ledger.display()
                )))
            }
        },
        C::Append(a) => append::cmd_ledger_append(ctx, a),
        C::Check(a) => check::cmd_ledger_check(ctx, a),
        C::Derive(a) => derive::cmd_ledger_derive(ctx, a),
        C::Commit(a) => commit::cmd_ledger_commit(ctx, a),
        C::Start(a) => events::write(ctx, &a.plan, a.event(ctx)?),
        C::Gate(a) => events::write(ctx, &a.plan, a.event()?),
        C::Complete(a) => {
            let event = a.event(ctx)?;
            let to = match &event {
                baton_core::ledger::Event::Complete { to, .. } => to.clone(),
                _ => String::new(),
            };
            let report = events::write(ctx, &a.plan, event)?;
            if report.status != crate::error::ExitStatus::Success {
                return Ok(report);
            }
            // The claim is judged at once, and kept for the session's stops.
            let claimed = ctx.store().and_then(|store| {
                let plan = baton_ops::ledgers::Plan::resolve(ctx, &a.plan)?;
                baton_ops::judge::claim_phase(ctx, &plan, &a.phase, &to, &*store).map(Some)
            });
            let report = crate::view::with_claim(report, "the phase", claimed);
            if !a.commit {
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
