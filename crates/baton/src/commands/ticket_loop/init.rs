use std::ffi::OsString;

use clap::Args;

use crate::args::WriteFlags;
use crate::output::Report;
use crate::view::loop_report;
use baton_core::Decision;
use baton_core::decide::batch::single_ticket_warning;
use baton_core::decide::loop_write::{InitPlan, REFUSED, check_key_collision, decide_init};
use baton_core::model::{LoopState, Phase};
use baton_ops::env::Ctx;
use baton_ops::error::CommandError;
use baton_ops::loops::{adopt_legacy, legacy_held};
use baton_ops::ticket_loop::{Target, keep_batch_live, may_replace, no_session_warning};
use baton_store::{Expect, JournalTarget, LockScope, RecordKey, git};

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
    /// The first phase: `skeptic` (Phase 6) or `qa` (Phase 6b) start that loop; the others
    /// record where a loop that starts later in the protocol stands.
    #[arg(long, default_value = "skeptic", value_parser = Phase::NAMES)]
    phase: String,
    /// Iteration cap of the Skeptic/QA loop.
    #[arg(long, default_value_t = 5, value_name = "N")]
    max_iterations: u64,
    /// The branch the work is measured against, as a branch name (`main`); it is compared with
    /// `origin/<BRANCH>` when that exists [default: origin's HEAD branch, else main, else
    /// master].
    #[arg(long, value_name = "BRANCH")]
    base: Option<String>,
    #[command(flatten)]
    flags: WriteFlags,
}

/// `--base` as a branch name that exists here or on `origin`.
fn checked_base(root: &std::path::Path, raw: &str) -> Result<String, CommandError> {
    let name = git::branch_name(raw.trim());
    let known = !name.is_empty()
        && (git::ref_exists(root, &format!("refs/heads/{name}"))?
            || git::ref_exists(root, &format!("refs/remotes/origin/{name}"))?);
    if known {
        Ok(name.to_string())
    } else {
        Err(
            CommandError::usage(format!("--base {raw:?} names no branch here or on origin"))
                .hint("pass a branch name such as `--base main` (`git branch -a` lists them)"),
        )
    }
}

pub fn cmd_loop_init(ctx: &Ctx, args: InitArgs) -> Result<Report, CommandError> {
    let store = ctx.store()?;
    let target = Target::derive(ctx, &args.ticket);
    target.require_stable()?;
    let adoption = adopt_legacy(&*store, ctx)?;
    let notes = adoption.notes.join("\n");
    if let Some(held) = adoption.held_for(&target.key) {
        let d = legacy_held(ctx, &held.state, REFUSED, &target.arg());
        return Ok(Report::decision(&d).text_before(&notes));
    }
    // git runs before the lock is taken (a user's fsmonitor hook must not stall other writers).
    let layout = store.layout();
    let branch = git::tree_status(&layout.root, &[])?.branch;
    let base = match args.base.as_deref() {
        Some(raw) => Some(checked_base(&layout.root, raw)?),
        None => git::default_base(&layout.root)?,
    };
    let _guard = store.lock(LockScope::Loop(&target.key))?;
    let existing = store.read_loop(&target.key)?;
    if let Some(existing) = &existing {
        existing.writable()?;
        if let Err(d) = check_key_collision(&existing.state, &target.raw, &target.key) {
            return Ok(Report::decision(&d).text_before(&notes));
        }
    }
    let mut reasons = Vec::new();
    // What the journal says of the loop this one replaces, if any.
    let mut replaced = serde_json::Value::Null;
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
                verdict: baton_core::Verdict::Ok,
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
                    target.shown(),
                    loaded.state.breadcrumb()
                ),
            )
            .with("changed", false)
            .text_before(&notes));
        }
        InitPlan::Create { archive_old } => {
            if let Some(old) = &existing {
                // A finished loop of a live foreign session, or any live foreign loop, stays.
                if let Err(d) = may_replace(ctx, &old.state, &args.flags.ownership(), &target) {
                    return Ok(Report::decision(&d).text_before(&notes));
                }
                let to = store.archive_loop(&target.key, &old.expect(), ctx.now)?;
                replaced = serde_json::json!({
                    "archived": to.display().to_string(),
                    "session": old.state.session_id,
                    "epoch": old.state.owner_epoch,
                    "status": old.state.status.as_str(),
                });
                let (rule, what) = if archive_old {
                    (baton_core::Rule::LoopTerminalArchived, "the finished loop")
                } else {
                    (baton_core::Rule::LoopReplacedArchived, "the previous loop")
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
    let mut state = LoopState::new(target.raw.clone(), target.key.clone(), ctx.session.clone());
    state.branch = branch;
    state.repo = Some(layout.root.display().to_string());
    state.base_branch = base;
    state.last_phase = Some(args.phase.clone());
    // `loop_state.phase` names the loop that runs; a later phase leaves it unset until one does.
    state.loop_state.phase = Phase::parse(&args.phase)
        .filter(|p| p.is_loop())
        .map(|p| p.as_str().to_string());
    state.loop_state.iteration = 1;
    state.loop_state.max_iterations = args.max_iterations;
    state.touch(ctx.now);
    store.write_loop(&target.key, &state, &Expect::Absent)?;
    let init = baton_ops::journal::event(
        ctx,
        "init",
        Some(state.owner_epoch),
        serde_json::json!({
            "ticket": target.raw,
            "phase": state.last_phase,
            "iteration": state.loop_state.iteration,
            "max_iterations": state.loop_state.max_iterations,
            "branch": state.branch,
            "base": state.base_branch,
            "replaced": replaced,
        }),
    );
    let journal_warning =
        baton_ops::journal::append(&*store, JournalTarget::Loop(&target.key), &[init]);
    let batch_warning = keep_batch_live(&*store, ctx, &target);
    let decision = Decision {
        verdict: baton_core::Verdict::Ok,
        reasons,
        next: Some(format!(
            "record each phase transition with `baton loop set {} --phase <P> --action <A>` (owner epoch {})",
            target.arg(),
            state.owner_epoch
        )),
    };
    let message = format!(
        "started the loop for {} {}",
        target.shown(),
        state.breadcrumb()
    );
    let mut report = loop_report(
        &decision,
        &target,
        &store.name(&RecordKey::Loop(target.key.clone())),
        &state,
        &message,
    )
    .with("changed", true)
    .with("notes", adoption.notes.clone())
    .text_before(&notes);
    if let Some(w) = no_session_warning(ctx, "loop") {
        report = report.warn(w);
    }
    for w in [batch_warning, journal_warning].into_iter().flatten() {
        report = report.warn(w);
    }
    Ok(report)
}
