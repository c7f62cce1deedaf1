//! `baton resume`: the session-start check of the ticket-loop protocol, and the two answers to
//! an offer, `accept` and `fresh`.

mod accept;
mod check;
mod fresh;

use std::ffi::OsString;

use clap::{Args, Subcommand};

use crate::commands::ticket_loop::{Target, adopt_legacy};
use crate::context::Ctx;
use crate::error::CommandError;
use crate::output::Report;
use baton_core::decide::loop_resume::{
    OtherLoop, ResumeDecision, ResumeFacts, decide_loop_resume, is_resumable,
};
use baton_core::model::LoopState;
use baton_core::time::parse_ts;
use baton_store::lock::DirLock;
use baton_store::store::Loaded;
use baton_store::{FsStore, StateStore, git};

/// Check, before anything else in a session, whether a ticket's loop can be resumed.
///
/// Verdicts: `none` (nothing to resume), `offer` (resume or start fresh; mode `automatic`,
/// `confirm`, `respawn` or `never`), `live` (another session is on it: hands off), `own` (this
/// session's). Only the ticket's own key is ever offered; other tickets' resumable loops get
/// one informational line.
///
/// Without a ticket, lists every loop in the project with its verdict.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct ResumeArgs {
    #[command(subcommand)]
    action: Option<ResumeAction>,
    /// The ticket id.
    ticket: Option<OsString>,
}

#[derive(Debug, Subcommand)]
enum ResumeAction {
    Accept(accept::AcceptArgs),
    Fresh(fresh::FreshArgs),
}

pub fn cmd_resume(ctx: &Ctx, args: ResumeArgs) -> Result<Report, CommandError> {
    match args.action {
        Some(ResumeAction::Accept(a)) => accept::cmd_resume_accept(ctx, a),
        Some(ResumeAction::Fresh(a)) => fresh::cmd_resume_fresh(ctx, a),
        None => match args.ticket {
            Some(ticket) => check::cmd_resume_check(ctx, &ticket),
            None => check::cmd_resume_all(ctx),
        },
    }
}

/// Everything the resume check needs, read under the store lock.
pub struct Gathered {
    pub store: FsStore,
    pub _guard: Option<DirLock>,
    pub target: Target,
    pub loaded: Option<Loaded<LoopState>>,
    pub decision: ResumeDecision,
    /// Notes of legacy adoption and of unreadable candidates, printed first.
    pub notes: Vec<String>,
}

/// Locks the store, adopts legacy state, reads the ticket's keyed file, scans the others and
/// decides. Git is asked about the tree only when the verdict depends on it.
pub fn gather(ctx: &Ctx, ticket: &std::ffi::OsStr) -> Result<Gathered, CommandError> {
    let store = ctx.store()?;
    let target = Target::derive(ctx, ticket);
    // A query on a project without state creates nothing, not even the lock's sidecar.
    let guard = if store.exists()? {
        Some(store.lock()?)
    } else {
        None
    };
    let mut notes = if guard.is_some() {
        adopt_legacy(&store, ctx)?
    } else {
        Vec::new()
    };
    let loaded = store.read_loop(&target.key)?;
    let mut others = Vec::new();
    for scanned in store.scan_loops()? {
        if scanned.key == target.key {
            continue;
        }
        match scanned.loaded {
            Ok(l) if is_resumable(&l.state, ctx.now) => others.push(OtherLoop {
                key: scanned.key,
                status: l.state.status,
                last_updated: parse_ts(l.state.last_updated.as_deref()),
            }),
            Ok(_) => {}
            Err(e) => notes.push(format!("warning: skipped an unreadable candidate: {e}")),
        }
    }
    let tree_dirty = match &loaded {
        Some(l) if is_resumable(&l.state, ctx.now) => {
            let layout = &store.layout;
            git::tree_status(&layout.root, layout.state_dir_in_tree().as_deref())
                .ok()
                .map(|t| t.dirty)
        }
        _ => None,
    };
    let arg = target.arg();
    let decision = decide_loop_resume(&ResumeFacts {
        ticket_arg: &arg,
        state: loaded.as_ref().map(|l| &l.state),
        me: ctx.session(),
        now: ctx.now,
        tree_dirty,
        others: &others,
    });
    Ok(Gathered {
        store,
        _guard: guard,
        target,
        loaded,
        decision,
        notes,
    })
}
