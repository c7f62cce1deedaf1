use std::ffi::OsString;

use clap::Args;

use super::{Target, WriteFlags, adopt_legacy, breadcrumb, loop_report, may_replace};
use crate::context::Ctx;
use crate::error::CommandError;
use crate::output::Report;
use baton_core::Decision;
use baton_core::decide::batch::single_ticket_warning;
use baton_core::decide::loop_write::{InitPlan, check_key_collision, decide_init};
use baton_core::model::{LoopState, Phase};
use baton_core::time::format_ts;
use baton_store::{StateStore, git};

/// Start a ticket's loop (Phase 6 initialisation): create its keyed file, active and owned by
/// this session.
///
/// Refuses (exit 4) when the ticket already has a resumable loop: run `baton resume` first.
/// Refuses (exit 3) when another live session owns it. Prints the owner epoch to pass as
/// `--epoch` on later writes.
#[derive(Debug, Args)]
pub struct InitArgs {
    /// The ticket id.
    ticket: OsString,
    /// The first phase.
    #[arg(long, default_value = "skeptic", value_parser = ["skeptic", "qa", "engineer", "quality_gate"])]
    phase: String,
    /// Iteration cap of the Skeptic/QA loop.
    #[arg(long, default_value_t = 5, value_name = "N")]
    max_iterations: u64,
    /// The branch the work is measured against [default: origin's HEAD, else main, else master].
    #[arg(long, value_name = "BRANCH")]
    base: Option<String>,
    #[command(flatten)]
    flags: WriteFlags,
}

pub fn cmd_loop_init(ctx: &Ctx, args: InitArgs) -> Result<Report, CommandError> {
    let store = ctx.store()?;
    let target = Target::derive(ctx, &args.ticket);
    let _guard = store.lock()?;
    let notes = adopt_legacy(&store, ctx)?.join("\n");
    let existing = store.read_loop(&target.key)?;
    if let Some(existing) = &existing {
        existing.writable()?;
        if let Err(d) = check_key_collision(&existing.state, &target.raw, &target.key) {
            return Ok(Report::decision(&d).text_before(&notes));
        }
    }
    let mut reasons = Vec::new();
    match decide_init(
        existing.as_ref().map(|l| &l.state),
        ctx.session(),
        ctx.now,
        &target.arg(),
    ) {
        InitPlan::Refuse(d) => return Ok(Report::decision(&d).text_before(&notes)),
        InitPlan::AlreadyOwned => {
            let loaded = existing.expect("AlreadyOwned implies a file");
            let decision = Decision {
                verdict: "ok",
                reasons,
                next: Some(format!(
                    "record transitions with `baton loop set {}`",
                    target.arg()
                )),
            };
            return Ok(loop_report(
                &decision,
                &target,
                &loaded.path,
                &loaded.state,
                &format!(
                    "{} already runs in this session {}",
                    target.raw,
                    breadcrumb(&loaded.state)
                ),
            )
            .text_before(&notes));
        }
        InitPlan::Create { archive_old } => {
            if let Some(old) = &existing {
                // A finished loop of a live foreign session, or any live foreign loop, stays.
                if let Err(d) = may_replace(ctx, &old.state, &args.flags, &target) {
                    return Ok(Report::decision(&d).text_before(&notes));
                }
                let to = store.archive_loop(&target.key, ctx.now)?;
                let (rule, what) = if archive_old {
                    ("loop.terminal-archived", "the finished loop")
                } else {
                    ("loop.replaced-archived", "the previous loop")
                };
                reasons.push(baton_core::Reason::new(
                    rule,
                    format!("{what} was moved to {}", to.display()),
                ));
            }
        }
    }
    if let Ok(Some(batch)) = store.read_batch()
        && let Some(warning) = single_ticket_warning(Some(&batch.state), ctx.session(), ctx.now)
    {
        reasons.push(warning);
    }
    let layout = &store.layout;
    let tree =
        git::tree_status(&layout.root, layout.state_dir_in_tree().as_deref()).unwrap_or_default();
    let mut state = LoopState::new(target.raw.clone(), target.key.clone(), ctx.session.clone());
    state.branch = tree.branch;
    state.repo = Some(layout.root.display().to_string());
    state.base_branch = args.base.or_else(|| git::default_base(&layout.root));
    state.last_phase = Some(args.phase.clone());
    state.loop_state.phase = Phase::parse(&args.phase).map(|p| p.as_str().to_string());
    state.loop_state.iteration = 1;
    state.loop_state.max_iterations = args.max_iterations;
    state.last_updated = Some(format_ts(ctx.now));
    store.write_loop(&target.key, &state)?;
    let decision = Decision {
        verdict: "ok",
        reasons,
        next: Some(format!(
            "record each phase transition with `baton loop set {} --phase <P> --action <A>` (owner epoch {})",
            target.arg(),
            state.owner_epoch
        )),
    };
    let message = format!("started the loop for {} {}", target.raw, breadcrumb(&state));
    Ok(loop_report(
        &decision,
        &target,
        &store.layout.loop_file(&target.key),
        &state,
        &message,
    )
    .text_before(&notes))
}
