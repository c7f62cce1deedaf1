//! `baton verdict`: claimed work judged against git and the gates, never against what a
//! session says of it.

use std::path::PathBuf;

use clap::Args;
use serde::Serialize;

use crate::error::{CommandError, ExitStatus};
use crate::output::Report;
use baton_core::judge::{Claim, Judged, TreeShown, why};
use baton_ops::env::Ctx;
use baton_ops::judge;

/// Judge claimed work on the tree as it is: verified, failed or unverified.
///
/// A claim (a phase recorded complete with `baton ledger complete`) is verified when every
/// exit gate its phase declares passed on this exact tree (HEAD, the index and the working
/// tree, as `baton gate run` records with each result) and its commits are on HEAD; failed
/// when a gate's last result on this tree is a failure; unverified otherwise. Nothing is run:
/// `baton gate run` runs the gates.
///
/// Without a plan, the claims of this session (`--session`, or the agent client's own), the
/// ones its stops are judged on. With a plan and `--phase`, that phase, whoever claimed it; with
/// `--ticket`, that ticket's loop once finished complete, and with `--run`, that run, by the
/// project's gates (`[judge.gates]`).
///
/// Exit 0 whatever the verdict (a query that computed one).
#[derive(Debug, Args)]
pub struct VerdictArgs {
    /// The plan directory (`plans/<plan>`) of the phase to judge.
    #[arg(requires = "phase")]
    plan: Option<PathBuf>,
    /// The phase to judge, as the plan names it (`1`, `2b`).
    #[arg(long, requires = "plan")]
    phase: Option<String>,
    /// Judge this ticket's loop instead.
    #[arg(long, value_name = "TICKET", conflicts_with_all = ["plan", "phase", "run"])]
    ticket: Option<std::ffi::OsString>,
    /// Judge this single run instead (its id, as `baton run new` printed).
    #[arg(long, value_name = "RUN_ID", conflicts_with_all = ["plan", "phase"])]
    run: Option<String>,
}

#[derive(Serialize)]
struct Judgement {
    /// `verified` when every claim is, `failed` when any gate failed, `unverified` when any
    /// claim is neither, `unclaimed` when nothing was claimed.
    verdict: &'static str,
    tree: String,
    head: Option<String>,
    changed: usize,
    claims: Vec<ClaimShown>,
}

#[derive(Serialize)]
struct ClaimShown {
    /// `phase` or `loop`.
    kind: baton_core::judge::ClaimKind,
    /// The work as a sentence names it (`phase 1 of plans/auth`, `the loop of PROJ-1`).
    work: String,
    plan: String,
    phase: String,
    ticket: String,
    verdict: &'static str,
    claimed_at: String,
    /// The evidence and the command that settles it; absent when verified.
    why: Option<String>,
    /// The rule that handed the claim to a person, when a stop was let through on it.
    confirm: Option<String>,
}

pub fn cmd_verdict(ctx: &Ctx, args: VerdictArgs) -> Result<Report, CommandError> {
    if let Some(ticket) = &args.ticket {
        let target = baton_ops::ticket_loop::Target::derive(ctx, ticket);
        let store = ctx.store()?;
        let (tree, judged) = judge::judge_loop(ctx, &*store, &target.raw, &target.key)?;
        let whose = format!("the loop of {}", target.shown());
        return Ok(render(
            &tree,
            &judged.into_iter().collect::<Vec<_>>(),
            &whose,
        ));
    }
    if let Some(raw) = &args.run {
        let id = baton_core::run_id::RunId::parse(raw).map_err(|e| {
            CommandError::usage(format!("--run {raw:?}: {e}"))
                .hint("pass the id `baton run new` printed")
        })?;
        let store = ctx.store()?;
        let (tree, judged) = judge::judge_run(ctx, &*store, &id)?;
        let whose = format!("run {id}");
        return Ok(render(
            &tree,
            &judged.into_iter().collect::<Vec<_>>(),
            &whose,
        ));
    }
    let (tree, judged, whose) = match (&args.plan, &args.phase) {
        (Some(plan), Some(phase)) => {
            let (tree, judged) = judge::judge_plan_phase(ctx, plan, phase)?;
            let whose = format!("phase {phase} of {}", plan.display());
            (tree, judged.into_iter().collect(), whose)
        }
        _ => {
            let session = ctx.session().ok_or_else(|| {
                CommandError::usage("no session: whose claims should be judged?")
                    .hint("pass `--session ID`, or a plan and `--phase N` to judge one phase")
            })?;
            let whose = format!("session {}", baton_core::timeline::short_session(session));
            match judge::verdicts(ctx, session)? {
                Some(v) => (v.tree, v.judged, whose),
                None => (judge::shown(&judge::tree_now(ctx)?), Vec::new(), whose),
            }
        }
    };
    Ok(render(&tree, &judged, &whose))
}

fn overall(judged: &[(Claim, Judged)]) -> &'static str {
    if judged.is_empty() {
        "unclaimed"
    } else if judged.iter().any(|(_, j)| matches!(j, Judged::Failed(_))) {
        "failed"
    } else if judged.iter().all(|(_, j)| *j == Judged::Verified) {
        "verified"
    } else {
        "unverified"
    }
}

fn render(tree: &TreeShown, judged: &[(Claim, Judged)], whose: &str) -> Report {
    let verdict = overall(judged);
    let mut text = format!("{verdict}: {whose} on {tree}");
    if judged.is_empty() {
        text.push_str("\nnothing is claimed complete");
    }
    let claims = judged
        .iter()
        .map(|(claim, j)| {
            let shown = ClaimShown {
                kind: claim.kind,
                work: claim.named(),
                plan: claim.plan.clone(),
                phase: claim.phase.clone(),
                ticket: claim.ticket.clone(),
                verdict: j.word(),
                claimed_at: claim.at.clone(),
                why: (*j != Judged::Verified).then(|| why(claim, j)),
                confirm: (*j != Judged::Verified)
                    .then(|| claim.confirm.as_ref().map(|c| c.rule.clone()))
                    .flatten(),
            };
            text.push_str(&format!("\n  {}: {}", claim.named(), j.word()));
            if let Some(c) = claim.confirm.as_ref().filter(|_| *j != Judged::Verified) {
                text.push_str(&format!(" (a person must confirm it: {})", c.rule));
            }
            if let Some(w) = &shown.why {
                text.push_str(&format!("\n    {w}"));
            }
            shown
        })
        .collect();
    Report::of(
        ExitStatus::Success,
        &Judgement {
            verdict,
            tree: tree.id.clone(),
            head: tree.head.clone(),
            changed: tree.changed,
            claims,
        },
        text,
    )
}
