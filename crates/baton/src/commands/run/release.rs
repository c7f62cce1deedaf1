use clap::Args;
use serde_json::json;

use super::{HolderArgs, here, lease_state_of, open_for_write};
use crate::output::Report;
use baton_core::decide::lease::LeaseState;
use baton_core::time::format_ts;
use baton_core::{Decision, Reason};
use baton_ops::env::Ctx;
use baton_ops::error::CommandError;
use baton_store::JournalTarget;

/// Release the run lock. Refused (exit 3) while another live holder has it, and for another
/// holder's stale lock without `--force`.
#[derive(Debug, Args)]
pub struct ReleaseArgs {
    /// The run id `baton run new` printed (16 hex digits, or a legacy `YYYYMMDD-HHMMSS`).
    run_id: String,
    /// End another holder's stale lock.
    #[arg(long)]
    force: bool,
    #[command(flatten)]
    holder: HolderArgs,
}

pub fn cmd_run_release(ctx: &Ctx, args: ReleaseArgs) -> Result<Report, CommandError> {
    end_lease(ctx, &args.run_id, &args.holder, None, args.force)
}

/// Drops the lease (and, with `status`, ends the run) unless a live foreign holder has it.
pub fn end_lease(
    ctx: &Ctx,
    raw_id: &str,
    holder: &HolderArgs,
    status: Option<&str>,
    force: bool,
) -> Result<Report, CommandError> {
    let super::OpenRun {
        id,
        store,
        _guard,
        mut run,
        read,
    } = open_for_write(ctx, raw_id)?;
    let before = run.clone();
    let (here, _) = here(ctx, holder, false)?;
    if let (Some(held), Some(lease)) = (holder.epoch, &run.lease)
        && held != lease.epoch
    {
        let d = Decision::new(
            baton_core::Verdict::Refused,
            Reason::new(
                baton_core::Rule::RunStaleEpoch,
                format!(
                    "run {id}'s lock is at epoch {}, this caller holds epoch {held}",
                    lease.epoch
                ),
            ),
            Some(format!("check the run with `baton run show {id}`")),
        );
        return Ok(Report::decision(&d));
    }
    match lease_state_of(&run, &here, ctx.now) {
        LeaseState::Live(why) => {
            let d = Decision::new(
                baton_core::Verdict::Refused,
                Reason::new(baton_core::Rule::RunLockHeld, format!("Another /implement is active on run_id {id}; wait for it to complete or use a fresh run_id. ({why})")),
                Some("only the holder releases a live lock; a dead one is taken over by `baton run resume`".into()),
            );
            return Ok(Report::decision(&d));
        }
        // Another holder's lock that went stale: its run may still be going, so ending it
        // for that holder is a deliberate act.
        LeaseState::Stale(why) if !force => {
            let d = Decision::new(
                baton_core::Verdict::Refused,
                Reason::new(
                    baton_core::Rule::RunLockNotHeld,
                    format!("this caller does not hold run {id}'s lock ({why})"),
                ),
                Some(format!(
                    "resume the run with `baton run resume {id}`, or repeat with `--force` to end another holder's stale lock"
                )),
            );
            return Ok(Report::decision(&d));
        }
        LeaseState::Free | LeaseState::Mine | LeaseState::Stale(_) => {}
    }
    run.lease = None;
    if let Some(status) = status {
        run.status = status.to_string();
    }
    run.updated_at = Some(format_ts(ctx.now));
    store.write_run(&run, &read)?;
    // A release of a lock nobody holds, or a finish of a finished run, is no event.
    let journal_warning = baton_ops::journal::run_changed(&before, &run)
        .then(|| {
            let released = before
                .lease
                .as_ref()
                .map(|l| json!({ "session": l.session, "epoch": l.epoch, "pid": l.pid }));
            let event = match status {
                Some(s) => baton_ops::journal::event(
                    ctx,
                    "finish",
                    Some(run.lease_epoch),
                    json!({ "status": s, "released": released, "forced": force }),
                ),
                None => baton_ops::journal::event(
                    ctx,
                    "release",
                    Some(run.lease_epoch),
                    json!({ "released": released, "forced": force }),
                ),
            };
            baton_ops::journal::append(&*store, JournalTarget::Run(&id), &[event])
        })
        .flatten();
    let what = match status {
        Some(s) => format!("run {id} is {s}; its lock is released"),
        None => format!("run {id}'s lock is released"),
    };
    let report = Report::ok(
        json!({ "verdict": "ok", "run_id": id.to_string(), "status": run.status }),
        what,
    );
    Ok(match journal_warning {
        Some(w) => report.warn(w),
        None => report,
    })
}

/// Records that the run's holder was interrupted (`reason` as a loop's interrupt reason), and
/// drops its lease so the next session finds the run free with the reason beside it. Only the
/// holder's own lease: anything else is a no-op, as a hook needs.
pub fn interrupt_lease(
    ctx: &Ctx,
    raw_id: &str,
    holder: &HolderArgs,
    reason: &str,
    evidence: &str,
) -> Result<Report, CommandError> {
    let super::OpenRun {
        id,
        store,
        _guard,
        mut run,
        read,
    } = open_for_write(ctx, raw_id)?;
    let (here, _) = here(ctx, holder, false)?;
    if lease_state_of(&run, &here, ctx.now) != LeaseState::Mine {
        return Ok(Report::ok(
            json!({ "interrupted": false, "run_id": id.to_string() }),
            format!("run {id}: this session does not hold its lock"),
        ));
    }
    let released = run
        .lease
        .take()
        .map(|l| json!({ "session": l.session, "epoch": l.epoch, "pid": l.pid }));
    run.extra.insert("interrupt_reason".into(), reason.into());
    run.extra
        .insert("interrupted_at".into(), format_ts(ctx.now).into());
    run.updated_at = Some(format_ts(ctx.now));
    store.write_run(&run, &read)?;
    let event = baton_ops::journal::event(
        ctx,
        "interrupt",
        Some(run.lease_epoch),
        json!({ "reason": reason, "evidence": evidence, "released": released }),
    );
    let report = Report::ok(
        json!({ "interrupted": true, "run_id": id.to_string(), "reason": reason }),
        format!("interrupted run {id} ({reason}); its lock is released"),
    );
    Ok(
        match baton_ops::journal::append(&*store, JournalTarget::Run(&id), &[event]) {
            Some(w) => report.warn(w),
            None => report,
        },
    )
}
