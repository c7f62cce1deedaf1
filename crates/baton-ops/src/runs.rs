//! Operations on single runs that more than one command (and the session-start survey) needs:
//! who is asking, the state of a run's lease, and a run's verdict from what is on disk now.

use std::path::Path;

use jiff::SignedDuration;

use crate::env::Ctx;
use crate::error::OpError;
use crate::run_facts::{plan_now, plan_path_now};
use baton_core::decide::lease::{Here, LeaseState, lease_state};
use baton_core::decide::run_resume::{RunDecision, RunFacts, SectionNow, decide_run_resume};
use baton_core::model::RunState;
use baton_store::git::HeadAndIndex;
use baton_store::{process, sha256_hex};

/// This machine, this session, and the holder process this caller stands for.
/// `records` is true for the commands that record the holder in the lease (`run new`, `run
/// resume`): there a named pid must be a live process other than baton. Elsewhere the pid only
/// identifies the caller, and a dead one identifies nobody.
pub fn here(
    ctx: &Ctx,
    pid: Option<u32>,
    token: Option<&str>,
    records: bool,
) -> Result<(Here, &'static str), OpError> {
    let (pid, source) = match process::resolve_holder(pid, ctx.settings.client_pid()) {
        Ok(found) => found,
        Err(e) if records => {
            return Err(OpError::usage(e).hint(
                "pass the pid of the agent process that runs the pipeline, or leave `--pid` out",
            ));
        }
        Err(_) => (None, "none"),
    };
    Ok((
        Here {
            host: process::host(),
            boot_id: process::boot_id(),
            session: ctx.session.clone(),
            pid,
            token_sha256: token
                .or(ctx.settings.lease_token.as_deref())
                .filter(|t| !t.is_empty())
                .map(|t| sha256_hex(t.as_bytes())),
            shared_store: ctx
                .store_url(ctx.layout().ok().map(|l| l.root).as_deref())
                .ok()
                .flatten()
                .is_some(),
        },
        source,
    ))
}

/// Looks at the lease holder's process when it is on this host and boot.
pub fn lease_state_of(run: &RunState, here: &Here, now: jiff::Timestamp) -> LeaseState {
    let alive = run.lease.as_ref().and_then(|l| {
        let same_machine = l.host == here.host && l.boot_id.is_some() && l.boot_id == here.boot_id;
        let (pid, start) = (l.pid?, l.pid_start?);
        same_machine.then(|| process::is_alive(pid, start))
    });
    let ttl =
        SignedDuration::from_secs(i64::try_from(run.policy.lease_ttl_secs).unwrap_or(i64::MAX));
    lease_state(run.lease.as_ref(), here, alive, now, ttl)
}

/// The run's verdict from what is on disk now: the plan, the lease holder, HEAD and the index.
/// `run resume` decides with it under the lock; the session-start scan decides with it
/// read-only, so both give the same verdict.
pub fn decide_now(
    ctx: &Ctx,
    root: &Path,
    run: &RunState,
    repo: HeadAndIndex,
    sections: Option<Vec<SectionNow>>,
    here: &Here,
    allow_staged: bool,
) -> Result<(RunDecision, LeaseState), OpError> {
    // A plan re-touched without a change is as old as when it was recorded: the gap runs from
    // the older of the two mtimes while the content is the same.
    let plan = match &run.plan {
        Some(p) => {
            plan_now(&plan_path_now(root, &p.path), &run.policy.security_globs)?.map(|mut now| {
                let recorded = baton_core::time::parse_ts(p.mtime.as_deref());
                if p.sha256.as_deref() == Some(now.sha256.as_str())
                    && let Some(recorded) = recorded
                {
                    now.mtime = now.mtime.min(recorded);
                }
                now
            })
        }
        None => None,
    };
    let lease = lease_state_of(run, here, ctx.now);
    let d = decide_run_resume(&RunFacts {
        run,
        head: repo.head,
        staged: repo.staged,
        allow_staged,
        sections,
        lease: lease.clone(),
        plan,
        now: ctx.now,
    });
    Ok((d, lease))
}
