//! `baton resume`: the session-start check of the ticket-loop protocol, and the two answers to
//! an offer, `accept` and `fresh`.

mod accept;
pub mod all;
mod check;

mod fresh;

use std::ffi::OsString;

use clap::{Args, Subcommand};

use crate::error::CommandError;
use crate::output::Report;
use baton_ops::env::Ctx;

/// Start every session here: every piece of interrupted work and one resume packet, or, with a
/// ticket, whether that ticket's loop can be resumed.
///
/// With a ticket, the verdicts are `none` (nothing to resume), `offer` (resume or start fresh; mode `automatic`,
/// `confirm`, `respawn` or `never`), `live` (another session is on it: hands off), `own` (this
/// session's). Only the ticket's own key is ever offered; other tickets' resumable loops get
/// one informational line.
///
/// Without a ticket: the session-start entry point. The work in the project with its verdict
/// (at most 20 rows, the most urgent first; `baton status` lists them all), how each
/// interrupted one was interrupted (pause, crash, timeout, left, rate_limit), and one resume
/// packet (INTENT · CONTEXT · CONSTRAINTS · REFERENCES · EXPECTED OUTCOME) with the command that
/// accepts or declines each resume. Only this session's own work and work whose evidence says
/// it was interrupted are offered; another session's work that is only quiet (`quiet`: it may
/// be a long CI wait) gets one informational line and no accept command.
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
