//! `baton resume`: the session-start check of the ticket-loop protocol, and the two answers to
//! an offer, `accept` and `fresh`.

mod accept;
pub mod all;
mod check;

pub use check::discarded_line;
mod fresh;

use std::ffi::OsString;

use clap::{Args, Subcommand};

use crate::commands::ticket_loop::{Adoption, Target, adopt_legacy, legacy_held};
use crate::output::Report;
use baton_core::decide::loop_resume::{
    OtherLoop, ResumeDecision, ResumeFacts, decide_loop_resume, is_resumable,
};
use baton_core::model::LoopState;
use baton_core::text::esc;
use baton_ops::env::Ctx;
use baton_ops::error::CommandError;
use baton_store::Guard;
use baton_store::Versioned;
use baton_store::git::TreeStatus;
use baton_store::{LockScope, StateStore};

/// Start every session here: every piece of interrupted work and one resume packet, or, with a
/// ticket, whether that ticket's loop can be resumed.
///
/// With a ticket, the verdicts are `none` (nothing to resume), `offer` (resume or start fresh; mode `automatic`,
/// `confirm`, `respawn` or `never`), `live` (another session is on it: hands off), `own` (this
/// session's). Only the ticket's own key is ever offered; other tickets' resumable loops get
/// one informational line.
///
/// Without a ticket: the session-start entry point. Every feature, loop, batch, run and ledger
/// in the project with its verdict, how each interrupted one was interrupted (pause, crash,
/// timeout, left, rate_limit), and one resume packet (INTENT · CONTEXT · CONSTRAINTS ·
/// REFERENCES · EXPECTED OUTCOME) with the command that accepts or declines each resume.
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
            None => all::cmd_resume_all(ctx),
        },
    }
}

/// Everything the resume check needs, read under the loop's lock.
pub struct Gathered {
    pub store: Box<dyn StateStore>,
    pub _guard: Option<Guard>,
    pub target: Target,
    pub loaded: Option<Versioned<LoopState>>,
    /// `loaded` is a legacy `loop-state.json` that a live session still writes, not the keyed
    /// file: it is only ever read.
    pub held_legacy: bool,
    /// The working tree, asked only when the verdict depends on it.
    pub tree: Option<TreeStatus>,
    pub decision: ResumeDecision,
    /// Notes of legacy adoption and of unreadable candidates, printed first.
    pub notes: Vec<String>,
}

/// Adopts legacy state, locks the ticket's loop, reads its keyed file, scans the others and
/// decides. Git is asked about the tree only when the verdict depends on it.
pub fn gather(ctx: &Ctx, ticket: &std::ffi::OsStr) -> Result<Gathered, CommandError> {
    let store = ctx.store()?;
    let target = Target::derive(ctx, ticket);
    // A query on a project without state creates nothing, not even a lock's sidecar.
    let exists = store.exists()?;
    let adoption = if exists {
        adopt_legacy(&*store, ctx)?
    } else {
        Adoption::default()
    };
    let mut notes = adoption.notes.clone();
    // The scan runs before this ticket's lock is taken: it clears the temp files of killed
    // writers only when their file's lock is free, and this process must not hold one of them.
    let mut others = Vec::new();
    for scanned in store.scan_loops(None)? {
        if scanned.key == target.key {
            continue;
        }
        match scanned.loaded {
            Ok(l) if is_resumable(&l.state, ctx.now) => others.push(OtherLoop {
                key: scanned.key,
                status: l.state.status,
                last_updated: l.state.liveness(ctx.now),
            }),
            Ok(_) => {}
            Err(e) => notes.push(format!(
                "warning: skipped an unreadable candidate: {}",
                esc(&e.to_string())
            )),
        }
    }
    // git runs before the lock is taken, on what the file says now (its tree check can start a
    // user's fsmonitor hook, which must not stall other writers); the decision is made on the
    // file as it is under the lock.
    let held = adoption.held_for(&target.key);
    let unlocked = match held {
        Some(held) => Some(held.state.clone()),
        None => store.read_loop(&target.key)?.map(|l| l.state),
    };
    // An accept of this session that stopped after its claim needs the tree too: it may still
    // have the work to set aside.
    let mut tree = match &unlocked {
        Some(state)
            if held.is_none() && (is_resumable(state, ctx.now) || accept::claim_pending(state)) =>
        {
            loop_tree(store.layout(), state).ok()
        }
        _ => None,
    };
    let committed = unlocked
        .as_ref()
        .filter(|s| held.is_none() && is_resumable(s, ctx.now))
        .and_then(|s| work_committed(&store.layout().root, s));
    let guard = if exists && held.is_none() {
        Some(store.lock(LockScope::Loop(&target.key))?)
    } else {
        None
    };
    let arg = target.arg();
    let (loaded, decision) = match held {
        Some(held) => {
            // A live session still writes the legacy file for this ticket: whatever a keyed file
            // says, the ticket is that session's.
            let d = legacy_held(ctx, &held.state, baton_core::Verdict::Live, &arg);
            let decision = ResumeDecision {
                decision: d,
                mode: None,
                archive: false,
                resume_after: None,
                others: None,
                accept: None,
                decline: None,
            };
            (Some(held.clone()), decision)
        }
        None => {
            let loaded = store.read_loop(&target.key)?;
            // Rarely the file became resumable between the two reads: ask git now.
            if let Some(l) = &loaded
                && tree.is_none()
                && is_resumable(&l.state, ctx.now)
            {
                tree = loop_tree(store.layout(), &l.state).ok();
            }
            let decision = decide_loop_resume(&ResumeFacts {
                ticket_arg: &arg,
                state: loaded.as_ref().map(|l| &l.state),
                me: ctx.session(),
                now: ctx.now,
                tree_dirty: tree.as_ref().map(|t| t.dirty),
                checked_out: tree.as_ref().and_then(|t| t.branch.as_deref()),
                work_committed: committed,
                others: &others,
            });
            (loaded, decision)
        }
    };
    let held_legacy = held.is_some();
    Ok(Gathered {
        store,
        _guard: guard,
        target,
        loaded,
        held_legacy,
        tree,
        decision,
        notes,
    })
}

pub use baton_ops::loops::{loop_tree, not_work, work_committed};
