//! `baton run`: the single-run pipeline protocol (docs/single-run.md): run state under
//! `.agentic/runs/`, the ordered resume checks, and the run lock as a lease.

mod finish;
mod heartbeat;
mod import;
mod new;
mod prune;
mod record;
mod release;
mod resume;
mod show;

use clap::{Args, Subcommand};
use serde_json::json;

use crate::error::CommandError;
use crate::output::Report;
use baton_core::decide::lease::Here;
use baton_core::model::{RunState, RunStatus};
use baton_core::run_id::RunTarget;
use baton_ops::env::Ctx;
use baton_ops::single_run::{self, Holder, LeaseEnd};

/// Track a single-run pipeline and resume it safely: `baton run new`, `record`, `resume`.
#[derive(Debug, Subcommand)]
pub enum RunCommand {
    New(new::NewArgs),
    Record(record::RecordArgs),
    Resume(resume::ResumeArgs),
    Show(show::ShowArgs),
    Heartbeat(heartbeat::HeartbeatArgs),
    Release(release::ReleaseArgs),
    Finish(finish::FinishArgs),
    Import(import::ImportArgs),
    Prune(prune::PruneArgs),
}

pub fn dispatch(ctx: &Ctx, cmd: RunCommand) -> Result<Report, CommandError> {
    match cmd {
        RunCommand::New(args) => new::cmd_run_new(ctx, args),
        RunCommand::Record(args) => record::cmd_run_record(ctx, args),
        RunCommand::Resume(args) => resume::cmd_run_resume(ctx, args),
        RunCommand::Show(args) => show::cmd_run_show(ctx, args),
        RunCommand::Heartbeat(args) => heartbeat::cmd_run_heartbeat(ctx, args),
        RunCommand::Release(args) => release::cmd_run_release(ctx, args),
        RunCommand::Finish(args) => finish::cmd_run_finish(ctx, args),
        RunCommand::Import(args) => import::cmd_run_import(ctx, args),
        RunCommand::Prune(args) => prune::cmd_run_prune(ctx, args),
    }
}

/// Who holds the run lock: the long-lived agent process, never baton's own.
#[derive(Debug, Clone, Default, Args)]
pub struct HolderArgs {
    /// The agent process the lock is held for [default: $CLAUDE_PID, else an agent
    /// (claude, codex, gemini) among baton's ancestors, else none: the heartbeat alone decides].
    #[arg(long, value_name = "PID")]
    pub pid: Option<u32>,
    /// The lease epoch this caller was handed: a fencing token, so a write holding another
    /// epoch is refused. It never proves who holds the lock (anyone can read it).
    #[arg(long, value_name = "N")]
    pub epoch: Option<u64>,
    /// The lease token printed once when a caller with neither a session nor a holder process
    /// took the lock: the only proof such a holder has [default: $BATON_LEASE_TOKEN].
    #[arg(long, value_name = "TOKEN")]
    pub token: Option<String>,
}

impl HolderArgs {
    pub fn holder(&self) -> Holder {
        Holder {
            pid: self.pid,
            epoch: self.epoch,
            token: self.token.clone(),
        }
    }
}

pub fn parse_target(raw: &str) -> Result<RunTarget, CommandError> {
    RunTarget::parse(raw).map_err(|e| {
        CommandError::usage(e.to_string())
            .hint("list runs with `ls .agentic/runs/`, or start one with `baton run new`")
    })
}

/// Where this command runs and the agent process it acts for, from the holder options.
pub fn here(
    ctx: &Ctx,
    holder: &HolderArgs,
    records: bool,
) -> Result<(Here, &'static str), CommandError> {
    Ok(baton_ops::runs::here(
        ctx,
        holder.pid,
        holder.token.as_deref(),
        records,
    )?)
}

pub use baton_ops::runs::lease_state_of;

/// The note that hands a fresh lease token to its holder, the one time it is ever shown.
pub fn token_note(token: &str) -> String {
    format!(
        "lease token: {token} (no session and no holder process identify this caller: pass `--token {token}` or set BATON_LEASE_TOKEN on later writes; it is shown only now)"
    )
}

/// `PIPELINE_STATE_FILE=<path>`, for the caller's environment.
pub fn state_file_line(path: &std::path::Path) -> String {
    format!("PIPELINE_STATE_FILE={}", path.display())
}

/// The file the caller's pipeline reads and writes: for an imported run its originating file,
/// which the originating helpers go on using (baton's own record stays beside it); else
/// baton's record.
pub fn pipeline_state_file(run: &RunState, record: &std::path::Path) -> std::path::PathBuf {
    run.imported_from
        .as_deref()
        .map_or_else(|| record.to_path_buf(), std::path::PathBuf::from)
}

/// `PIPELINE_STATE_FILE=…`, and for an imported run where baton's own record is.
pub fn state_file_lines(run: &RunState, record: &std::path::Path) -> String {
    let file = pipeline_state_file(run, record);
    if file == record {
        state_file_line(record)
    } else {
        format!(
            "{}
baton's record of the run: {}",
            state_file_line(&file),
            record.display()
        )
    }
}

/// `session S, pid P (CLAUDE_PID)`.
pub fn holder_text(run: &RunState) -> String {
    let Some(lease) = &run.lease else {
        return "nobody".into();
    };
    let session = lease.session.as_deref().map_or_else(
        || "no session".into(),
        |s| format!("session {}", crate::view::short_session(s)),
    );
    match lease.pid {
        Some(pid) => format!("{session}, pid {pid} ({})", lease.pid_source),
        None => format!("{session}, no holder process known: the heartbeat alone decides"),
    }
}

/// Drops the lease (and, with `status`, ends the run) unless a live foreign holder has it.
pub fn end_lease(
    ctx: &Ctx,
    raw_id: &str,
    holder: &HolderArgs,
    status: Option<RunStatus>,
    force: bool,
) -> Result<Report, CommandError> {
    Ok(
        match single_run::end_lease(ctx, &*ctx.store()?, raw_id, &holder.holder(), status, force)? {
            LeaseEnd::Refused(d) => Report::decision(&d),
            LeaseEnd::Ended {
                id,
                status,
                finished,
                warning,
            } => {
                let what = if finished {
                    format!("run {id} is {status}; its lock is released")
                } else {
                    format!("run {id}'s lock is released")
                };
                let report = Report::ok(
                    json!({ "verdict": "ok", "run_id": id.to_string(), "status": status }),
                    what,
                );
                match warning {
                    Some(w) => report.warn(w),
                    None => report,
                }
            }
        },
    )
}
