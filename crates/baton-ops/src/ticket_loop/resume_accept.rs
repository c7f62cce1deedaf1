//! `resume accept`: take ownership of a resumable loop (owner epoch + 1, `resume_count` + 1,
//! status active), setting partial work aside first when asked, and say what governs it.

use baton_core::journal::JournalEvent;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{Gathered, Ownership, Target, claim_pending, gather, keep_batch_live};
use super::{no_session_warning, writer};
use crate::env::Ctx;
use crate::error::{Kind, OpError};
use crate::journal;
use crate::loops::{not_work, owner_record};
use crate::project::stored_path_in_project;
use baton_core::decide::loop_resume::{Mode, branch_step, brief_step, resume_after, resume_step};
use baton_core::decide::loop_write::{ASK, REFUSED, check_key_collision, check_reset};
use baton_core::decide::ownership::{GateOutcome, gate};
use baton_core::model::{DiscardedWork, LoopState, LoopStatus, Phase};
use baton_core::text::esc;
use baton_core::time::format_ts;
use baton_core::{Decision, Reason};
use baton_store::Guard;
use baton_store::read::read_capped;
use baton_store::{Expect, LockScope, Revision, StateStore, git, random_hex};

/// What happens to partial work in the tree on accept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetAside {
    /// Into a git stash (`--discard`).
    Discard,
    /// Committed on the loop's branch (`--commit`).
    Commit,
}

/// What `resume accept` is asked for.
#[derive(Debug, Clone)]
pub struct Accept<'a> {
    pub ticket: &'a OsStr,
    /// `None`: neither `--discard` nor `--commit`.
    pub set_aside: Option<SetAside>,
    pub flags: Ownership,
}

impl Accept<'_> {
    fn discard(&self) -> bool {
        self.set_aside == Some(SetAside::Discard)
    }

    fn commit(&self) -> bool {
        self.set_aside == Some(SetAside::Commit)
    }
}

/// What `resume accept` did.
#[derive(Debug)]
pub enum Acceptance {
    /// Refused, or a human must choose first (the decision's verdict says which): nothing
    /// changed. `notes` are what legacy adoption said first.
    Refused {
        decision: Decision,
        notes: Vec<String>,
    },
    /// This session already owns the loop: nothing to accept. `decision` is the resume check's.
    Owned { target: Target, decision: Decision },
    /// The loop is this session's now.
    Accepted(Box<Accepted>),
}

/// An accept that took the loop.
#[derive(Debug)]
pub struct Accepted {
    /// `accepted`, the rules of the offer and of what the accept found, the next steps.
    pub decision: Decision,
    pub target: Target,
    pub path: PathBuf,
    pub state: LoopState,
    /// `resumed <ticket> <breadcrumb> (resume #N, owner epoch E)`.
    pub message: String,
    /// The offer's mode; `None` when this finished an earlier accept's claim without git work.
    pub mode: Option<Mode>,
    /// Every governing artifact the loop records: the Brief, then the Plan.
    pub artifacts: Vec<Governing>,
    /// An earlier discard's pointer, shown once more.
    pub earlier_stash: Option<String>,
    pub notes: Vec<String>,
    /// What went wrong after the write (journal, batch liveness) or protects nothing.
    pub warnings: Vec<String>,
}

/// Which governing artifact a loop records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArtifactKind {
    Brief,
    Plan,
}

impl ArtifactKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ArtifactKind::Brief => "brief",
            ArtifactKind::Plan => "plan",
        }
    }
}

/// A governing Brief (whole, up to a cap) or Plan (its files and its index). Their paths come
/// from the state file, so they are checked as a path argument would be before anything is
/// read: a refused path is named, its content never read.
#[derive(Debug)]
pub enum Governing {
    /// The recorded path is not read: `why`.
    Refused {
        kind: ArtifactKind,
        path: String,
        why: String,
    },
    /// The Brief's text (lossy UTF-8, up to the cap).
    Brief {
        path: String,
        text: String,
    },
    BriefMissing {
        path: String,
    },
    BriefUnreadable {
        path: String,
        error: String,
    },
    /// The Plan directory's files, sorted, and its index file's text if it has one.
    Plan {
        path: String,
        files: Vec<String>,
        index: Option<String>,
    },
}

/// The largest governing artifact read in full.
const ARTIFACT_CAP: u64 = 64 * 1024;

/// Accepts a resume offer: claims the loop for this session and finishes the accept under its
/// lock. In `confirm` mode (partial work in the tree) a `set_aside` is required; in `never`
/// mode, `--force`. git runs outside the loop's lock: the loop is claimed first (so no other
/// session can accept it meanwhile), and the accept is finished once git is done.
pub fn accept(ctx: &Ctx, store: &dyn StateStore, args: &Accept) -> Result<Acceptance, OpError> {
    let g = gather(ctx, store, Target::derive(ctx, args.ticket))?;
    let notes = g.notes.clone();
    let t = g.target.arg();
    let Some(loaded) = &g.loaded else {
        return Err(
            OpError::usage(format!("no loop-state for {t}: nothing to resume")).hint(format!(
                "check for other tickets with `baton resume`, or start with `baton loop init {t}`"
            )),
        );
    };
    loaded.writable()?;
    let refused = |decision: Decision| {
        Ok(Acceptance::Refused {
            decision,
            notes: notes.clone(),
        })
    };
    if let Err(d) = check_key_collision(&loaded.state, &g.target.raw, &g.target.key) {
        return refused(d);
    }
    let offer = &g.decision;
    let refuse = |verdict, rule, message: String, next: String| {
        refused(Decision::new(
            verdict,
            Reason::new(rule, message),
            Some(next),
        ))
    };
    match (offer.decision.verdict, offer.mode) {
        (baton_core::Verdict::Offer, Some(_)) if !g.held_legacy => {}
        (baton_core::Verdict::Own, _) if claim_pending(&loaded.state) => {
            // An accept of this session stopped after its claim (killed before or during git,
            // or its lock stayed busy after): finish it now, setting the work aside first when
            // it is still in the tree.
            let dirty = g.tree.as_ref().is_some_and(|t| t.dirty);
            let (done, mode) = if dirty && args.set_aside.is_some() {
                (
                    set_aside_work(ctx, store, g, args, |_| {})?,
                    Some(Mode::Confirm),
                )
            } else {
                (Claimed::from_gathered(g, |_| {}), None)
            };
            return finish_accept(ctx, store, done, Vec::new(), mode, args, notes);
        }
        (baton_core::Verdict::Own, _) => {
            return Ok(Acceptance::Owned {
                target: g.target.clone(),
                decision: offer.decision.clone(),
            });
        }
        (baton_core::Verdict::Live, _) | (baton_core::Verdict::Offer, _) => {
            let mut d = offer.decision.clone();
            d.verdict = REFUSED;
            return refused(d);
        }
        _ => {
            return Err(OpError::usage(format!(
                "the loop for {t} is {}: nothing to resume",
                loaded.state.status.as_str()
            ))
            .hint(format!("start a new loop with `baton loop init {t}`")));
        }
    }
    let mode = offer.mode.unwrap_or(Mode::Never);
    if mode == Mode::Confirm && args.set_aside.is_none() {
        return refuse(
            ASK,
            baton_core::Rule::LoopConfirmNeedsChoice,
            format!("the tree holds partial work of {t}; a human chooses what happens to it"),
            format!(
                "ask the human, then `baton resume accept {t} --discard` (kept in `git stash`) or `baton resume accept {t} --commit`"
            ),
        );
    }
    if mode == Mode::Never && !args.flags.force {
        return refuse(
            ASK,
            baton_core::Rule::LoopNeverNeedsForce,
            format!(
                "no resume rule covers the loop for {t} ({})",
                loaded.state.position()
            ),
            format!(
                "ask the human; resume anyway with `baton resume accept {t} --force`, or start over with `baton resume fresh {t}`"
            ),
        );
    }
    if args.set_aside.is_some()
        && let Some(tree) = &g.tree
        && let Some((reason, switch)) = branch_step(&loaded.state, tree.branch.as_deref())
    {
        // The tree seen here belongs to another branch: committing would put it on that
        // branch, stashing would set aside work that is not this loop's.
        let flag = if args.commit() {
            "--commit"
        } else {
            "--discard"
        };
        return refused(Decision {
            verdict: ASK,
            reasons: vec![reason],
            next: Some(format!(
                "{switch}, then `baton resume accept {t} {flag}` again"
            )),
        });
    }
    if let Err(d) = check_reset(&loaded.state, ctx.session(), ctx.now, args.flags.force, &t) {
        return refused(d);
    }
    if let GateOutcome::Refused(d) = gate(
        owner_record(&loaded.state, ctx.now),
        writer(ctx, &args.flags),
        ctx.now,
        &g.target.file_name(),
        &g.target.show(),
    ) {
        return refused(d);
    }
    let offered = offer.decision.reasons.clone();
    let dirty = g.tree.as_ref().is_some_and(|t| t.dirty);
    let done = if dirty && args.set_aside.is_some() {
        set_aside_work(ctx, store, g, args, |state| claim(ctx, state))?
    } else {
        // Without git work, the accept is one step under the lock `gather` took.
        Claimed::from_gathered(g, |state| claim(ctx, state))
    };
    finish_accept(ctx, store, done, offered, Some(mode), args, notes)
}

/// The loop claimed by this session, ready to be finished under its lock.
struct Claimed {
    _guard: Option<Guard>,
    target: Target,
    original: LoopState,
    path: PathBuf,
    /// The revision the claim's final write expects.
    revision: Revision,
    claimed: LoopState,
    /// What `--discard` or `--commit` did with the partial work.
    set_aside: Option<Reason>,
}

impl Claimed {
    /// The gathered loop (which the caller has checked is there), still under its lock, with
    /// `change` applied to the copy that will be written.
    fn from_gathered(g: Gathered, change: impl FnOnce(&mut LoopState)) -> Claimed {
        let loaded = g.loaded.expect("the caller checked the loop is there");
        let mut claimed = loaded.state.clone();
        change(&mut claimed);
        Claimed {
            _guard: g._guard,
            target: g.target,
            original: loaded.state,
            path: loaded.path,
            revision: loaded.revision,
            claimed,
            set_aside: None,
        }
    }
}

/// Claims the loop under its lock, runs git (and the user's hooks) with the lock released, and
/// takes the lock again. A failed git call gives the loop back exactly as it was; a takeover
/// in the meantime is caught by the epoch.
fn set_aside_work(
    ctx: &Ctx,
    store: &dyn StateStore,
    g: Gathered,
    args: &Accept,
    claim: impl FnOnce(&mut LoopState),
) -> Result<Claimed, OpError> {
    let Claimed {
        _guard: guard,
        target,
        original,
        revision,
        mut claimed,
        ..
    } = Claimed::from_gathered(g, claim);
    let message = format!(
        "baton: partial work of {} set aside on resume at {} ({})",
        target.shown(),
        format_ts(ctx.now),
        random_hex(3)
    );
    if args.discard() {
        // Recorded before the stash exists, so a kill between the two still leaves a pointer.
        claimed.discarded_work = Some(DiscardedWork {
            message: message.clone(),
            stash: None,
            at: format_ts(ctx.now),
        });
    }
    store.write_loop(&target.key, &claimed, &Expect::Revision(revision))?;
    drop(guard);

    let layout = store.layout();
    let excluded = not_work(layout, &original);
    let refs: Vec<&Path> = excluded.iter().map(PathBuf::as_path).collect();
    let outcome = if args.discard() {
        git::stash_push(&layout.root, &message, &refs).map(|stash| {
            let reason = Reason::new(
                baton_core::Rule::LoopPartialWorkStashed,
                format!(
                    "the partial work is in stash {stash} (`git stash list`; restore with `git stash apply {stash}`)"
                ),
            );
            (reason, Some(stash))
        })
    } else {
        let msg = format!(
            "wip({}): partial engineer work kept on resume",
            target.shown()
        );
        git::commit_all(&layout.root, &msg, &refs).map(|commit| {
            let reason = Reason::new(
                baton_core::Rule::LoopPartialWorkCommitted,
                format!("the partial work is committed as {commit}"),
            );
            (reason, None)
        })
    };

    // git is done and the claim is on disk: wait longer than usual for the lock rather than
    // leave the accept half done, and say exactly what stands if it still cannot be had.
    let done_so_far = match &outcome {
        Ok((reason, _)) => reason.message.clone(),
        Err(e) => format!("git failed: {e}"),
    };
    let guard = store
        .lock_for(
            LockScope::Loop(&target.key),
            store.lock_wait().max(Duration::from_secs(30)),
        )
        .map_err(|e| {
            // A busy lock is a refusal; a lock that cannot be taken at all is an error.
            let (status, why) = match e {
                baton_store::StoreError::LockBusy { .. } => (Kind::Refused, "stayed busy"),
                _ => (Kind::Broken, "could not be taken"),
            };
            OpError::new(
                status,
                format!(
                    "{done_so_far}; the loop for {} is claimed for this session, but its lock {why}",
                    target.shown()
                ),
            )
            .caused_by(e)
            .hint(format!(
                "run `baton resume accept {}` again in this session to finish the accept",
                target.arg()
            ))
        })?;
    let current = store.read_loop(&target.key)?.filter(|c| {
        c.state.owner_epoch == claimed.owner_epoch && c.state.session_id == claimed.session_id
    });
    let Some(current) = current else {
        let kept = match &outcome {
            Ok((reason, _)) => format!("; {}", reason.message),
            Err(e) => format!("; git failed as well: {e}"),
        };
        return Err(OpError::new(
            Kind::Refused,
            format!(
                "another session took the loop for {} over while git ran{kept}",
                target.shown()
            ),
        )
        .hint(format!(
            "see who holds it with `baton loop show {}`",
            target.arg()
        )));
    };
    let (reason, stash) = match outcome {
        Ok(done) => done,
        Err(e) => {
            // Give the loop back as it was: a failed command changes nothing.
            store.write_loop(&target.key, &original, &current.expect())?;
            return Err(e.into());
        }
    };
    let mut claimed = current.state;
    if let Some(work) = claimed.discarded_work.as_mut().filter(|_| args.discard()) {
        work.stash = stash;
    }
    Ok(Claimed {
        _guard: Some(guard),
        target,
        original,
        path: current.path,
        revision: current.revision,
        claimed,
        set_aside: Some(reason),
    })
}

/// Ownership moves to this session: the next epoch, active, fresh.
fn claim(ctx: &Ctx, state: &mut LoopState) {
    state.session_id = ctx.session.clone();
    state.owner_epoch += 1;
    state.status = LoopStatus::Active;
    state.touch(ctx.now);
}

fn finish_accept(
    ctx: &Ctx,
    store: &dyn StateStore,
    done: Claimed,
    offered: Vec<Reason>,
    mode: Option<Mode>,
    args: &Accept,
    notes: Vec<String>,
) -> Result<Acceptance, OpError> {
    let Claimed {
        _guard,
        target,
        original,
        path,
        revision,
        claimed: mut state,
        set_aside,
    } = done;
    // git and the project's commit hooks may have run for a while since the command started:
    // the loop (and its batch) are stamped live as of this write.
    let written = ctx.at_write()?;
    let mut reasons = offered;
    reasons.extend(set_aside);
    // A pointer left by an earlier discard is shown once more; it is dropped unless this accept
    // wrote a new one in its place.
    let earlier_stash = original
        .discarded_work
        .as_ref()
        .map(DiscardedWork::describe);
    if state.discarded_work == original.discarded_work {
        state.discarded_work = None;
    }
    state.resume_count += 1;
    state.interrupted_at = None;
    state.interrupt_reason = None;
    state.resume_after = None;
    state.touch(written.now);
    let event = accept_event(&written, &original, &state, mode, args);
    let journal_warning = journal::write_loop(
        store,
        &target.key,
        &state,
        &Expect::Revision(revision),
        &[event],
    )?;
    let batch_warning = keep_batch_live(store, &written, &target);
    // The accept is on disk; what follows only reports, and runs git, so not under the lock.
    drop(_guard);

    let layout = store.layout();
    let t = target.arg();
    let checked_out = git::tree_status(&layout.root, &[]).ok().map(|s| s.branch);
    let mut steps = Vec::new();
    if let Some(after) = resume_after(&original).filter(|a| *a > ctx.now) {
        steps.push(format!(
            "wait until {} (the rate limit's reset)",
            format_ts(after)
        ));
    }
    if let Some(branch) = state.branch.as_deref()
        && matches!(
            git::ref_exists(&layout.root, &format!("refs/heads/{branch}")),
            Ok(false)
        )
    {
        reasons.push(Reason::new(
            baton_core::Rule::LoopBranchMissing,
            format!(
                "the loop's branch {} no longer exists here: lost work is judged on HEAD",
                esc(branch)
            ),
        ));
    }
    if let Some(lost) = lost_work(&layout.root, &state) {
        reasons.push(lost);
        steps.push(
            "before spawning anything, find the lost work (`git log --all`, `git stash list`, `git reflog`)"
                .into(),
        );
    }
    if let Some(checked_out) = &checked_out
        && let Some((_, switch)) = branch_step(&state, checked_out.as_deref())
    {
        steps.push(switch);
    }
    if let Some(brief) = brief_step(&state, &t) {
        steps.push(brief);
    }
    steps.push(if args.commit() && mode == Some(Mode::Confirm) {
        match state.phase() {
            Some(Phase::QualityGate) => "re-run the quality command on the committed work".into(),
            _ => "spawn the Skeptic on the committed work".into(),
        }
    } else {
        resume_step(&state).to_string()
    });
    let epoch = state.owner_epoch;
    let next = format!(
        "{}; pass `--epoch {epoch}` on later writes",
        steps.join(", then ")
    );
    let decision = Decision {
        verdict: baton_core::Verdict::Accepted,
        reasons,
        next: Some(next),
    };
    let message = format!(
        "resumed {} {} (resume #{}, owner epoch {})",
        target.shown(),
        state.breadcrumb(),
        state.resume_count,
        state.owner_epoch
    );
    let artifacts = governing_artifacts(&layout.root, &state);
    let mut warnings: Vec<String> = no_session_warning(ctx, "loop").into_iter().collect();
    warnings.extend([batch_warning, journal_warning].into_iter().flatten());
    Ok(Acceptance::Accepted(Box::new(Accepted {
        decision,
        target,
        path,
        state,
        message,
        mode,
        artifacts,
        earlier_stash,
        notes,
        warnings,
    })))
}

/// The journal's record of an accept: a `takeover` from the owner it was accepted from (both
/// sessions, both epochs), with the mode and what happened to the partial work. An accept that
/// finishes an earlier, interrupted one of this session (its claim already on disk) is a
/// `resume` of the epoch it claimed.
fn accept_event(
    ctx: &Ctx,
    original: &LoopState,
    state: &LoopState,
    mode: Option<Mode>,
    args: &Accept,
) -> serde_json::Value {
    let work = if args.discard() {
        Some("stashed")
    } else if args.commit() {
        Some("committed")
    } else {
        None
    };
    let mode = mode.map_or("finish-claim", Mode::as_str);
    let mut event = if original.owner_epoch == state.owner_epoch {
        journal::event(
            ctx,
            JournalEvent::Resume,
            Some(state.owner_epoch),
            serde_json::json!({ "mode": mode }),
        )
    } else {
        journal::takeover(
            ctx,
            (original.owner(), original.owner_epoch),
            (state.owner(), state.owner_epoch),
            mode,
        )
    };
    if let Some(obj) = event.as_object_mut() {
        obj.insert("resume_count".into(), state.resume_count.into());
        obj.insert("work".into(), serde_json::json!(work));
        obj.insert(
            "interrupt_reason".into(),
            serde_json::json!(original.interrupt_reason),
        );
    }
    event
}

/// A branch with no commits beyond its base while the state claims engineer output or open
/// findings: the work was lost somewhere, and re-spawning blindly would hide it. It is judged
/// on the loop's own branch, whatever is checked out.
fn lost_work(root: &Path, state: &LoopState) -> Option<Reason> {
    let base = state.base_branch.as_deref()?;
    let action = state.last_phase_action.as_deref();
    let engineer_returned = matches!(
        (state.phase(), action),
        (Some(Phase::Engineer), Some("returned"))
            | (_, Some("engineer_returned" | "rerun_pending"))
            | (Some(Phase::CiLoop), Some("fix_engineer_returned"))
    );
    let claims_output = engineer_returned
        || state
            .loop_state
            .last_engineer_summary
            .as_deref()
            .is_some_and(|s| !s.is_empty());
    let open = state.open_findings();
    if !claims_output && open == 0 {
        return None;
    }
    let branch = state
        .branch
        .as_deref()
        .filter(|b| git::ref_exists(root, &format!("refs/heads/{b}")).unwrap_or(false));
    let tip = branch.unwrap_or("HEAD");
    let base = git::base_ref(root, base);
    if git::commits_beyond(root, &base, tip).ok()?? != 0 {
        return None;
    }
    let claim = if claims_output {
        "engineer output".to_string()
    } else {
        format!("{open} open findings")
    };
    let on = branch.map_or_else(|| "the branch".into(), |b| format!("branch {}", esc(b)));
    Some(Reason::new(
        baton_core::Rule::LoopLostWork,
        format!(
            "the state claims {claim}, but {on} has no commits beyond {base}: the work may be lost; find it before re-spawning anything"
        ),
    ))
}

/// Every governing artifact the loop records, read within the project: the Brief, then the
/// Plan (at tier `plan` a loop may record both, and both govern it).
fn governing_artifacts(root: &Path, state: &LoopState) -> Vec<Governing> {
    let mut artifacts = Vec::new();
    if let Some(brief) = &state.brief_path {
        artifacts.push(governing_brief(root, brief));
    }
    if let Some(plan) = &state.plan_path {
        artifacts.push(governing_plan(root, plan));
    }
    artifacts
}

/// The Brief's text, up to the cap.
fn governing_brief(root: &Path, brief: &str) -> Governing {
    let path = brief.to_string();
    let file = match stored_path_in_project(root, brief, "brief_path", false) {
        Ok(file) => file,
        Err(why) => {
            return Governing::Refused {
                kind: ArtifactKind::Brief,
                path,
                why,
            };
        }
    };
    match read_capped(&file, ARTIFACT_CAP) {
        Ok(Some(bytes)) => Governing::Brief {
            path,
            text: String::from_utf8_lossy(&bytes).into_owned(),
        },
        Ok(None) => Governing::BriefMissing { path },
        Err(e) => Governing::BriefUnreadable {
            path,
            error: e.to_string(),
        },
    }
}

/// The Plan directory's files and its index file's text, up to the cap.
fn governing_plan(root: &Path, plan: &str) -> Governing {
    let path = plan.to_string();
    let dir = match stored_path_in_project(root, plan, "plan_path", true) {
        Ok(dir) => dir,
        Err(why) => {
            return Governing::Refused {
                kind: ArtifactKind::Plan,
                path,
                why,
            };
        }
    };
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    let index = ["PLAN.md", "README.md", "plan.md"]
        .into_iter()
        .find(|f| files.iter().any(|x| x == f))
        .and_then(|index| match read_capped(&dir.join(index), ARTIFACT_CAP) {
            Ok(Some(bytes)) => Some(String::from_utf8_lossy(&bytes).into_owned()),
            _ => None,
        });
    Governing::Plan { path, files, index }
}
