//! The resume check of the ticket loop: which verdict a session gets for its ticket's key, and
//! in which mode a resumable loop may be resumed.

use jiff::Timestamp;
use serde::Serialize;

use super::{Decision, Reason};
use crate::model::{InterruptReason, LoopState, LoopStatus, Phase};
use crate::text::{esc, esc_or};
use crate::time::{age, format_ts, human_age, is_live, parse_ts};

/// How a resumable loop may be resumed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// At an iteration boundary with a clean tree: resume without asking.
    Automatic,
    /// Partial work in the tree: a human chooses discard or commit.
    Confirm,
    /// A worker was in flight and left nothing behind: spawn it again.
    Respawn,
    /// No rule covers this state: a human decides.
    Never,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Automatic => "automatic",
            Mode::Confirm => "confirm",
            Mode::Respawn => "respawn",
            Mode::Never => "never",
        }
    }
}

/// Another ticket's loop, seen while scanning; only resumable ones are mentioned.
#[derive(Debug, Clone)]
pub struct OtherLoop {
    pub key: String,
    pub status: LoopStatus,
    pub last_updated: Option<Timestamp>,
}

/// The facts the resume check needs.
#[derive(Debug, Clone)]
pub struct ResumeFacts<'a> {
    /// The ticket as the user typed it, quoted for use in suggested commands.
    pub ticket_arg: &'a str,
    pub state: Option<&'a LoopState>,
    pub me: Option<&'a str>,
    pub now: Timestamp,
    /// Whether the working tree has changes outside baton's own files and the governing
    /// artifacts; only consulted for an offer, and `None` when git could not say.
    pub tree_dirty: Option<bool>,
    /// The branch checked out now (`None`: detached); only consulted when git reported the
    /// tree (`tree_dirty` is known).
    pub checked_out: Option<&'a str>,
    /// Whether the loop's branch has commits beyond its base (`None`: unknown, or no base
    /// recorded). An engineer that returned with none left its work uncommitted.
    pub work_committed: Option<bool>,
    pub others: &'a [OtherLoop],
}

#[derive(Debug, Clone, Serialize)]
pub struct ResumeDecision {
    #[serde(flatten)]
    pub decision: Decision,
    pub mode: Option<Mode>,
    /// The keyed file is terminal and is to be archived out of the way.
    pub archive: bool,
    pub resume_after: Option<String>,
    /// One capped informational line about other tickets' resumable loops.
    pub others: Option<String>,
    /// For an offer: the exact command that takes the loop over, and the one that declines it
    /// (archives it and starts over), as the gate will accept them. Neither where a human
    /// decides (`confirm`, `never`, a loop that names no owner): `next` names the choices and
    /// who makes them.
    pub accept: Option<String>,
    pub decline: Option<String>,
}

/// At most this many other tickets are named in the informational line.
pub const OTHERS_CAP: usize = 3;

/// How long a rate-limited loop waits when the limit named no reset time: the originating
/// protocol's wait strategy sleeps until 60 seconds after the interrupt.
pub const RATE_LIMIT_WAIT: jiff::SignedDuration = jiff::SignedDuration::from_secs(60);

/// Interrupted, or active with its last write outside the liveness window.
pub fn is_resumable(state: &LoopState, now: Timestamp) -> bool {
    match state.status {
        LoopStatus::Interrupted => true,
        LoopStatus::Active => !is_live(now, state.liveness(now)),
        _ => false,
    }
}

/// When a rate-limited loop may resume: the reset time recorded with the interrupt, else 60
/// seconds after the interrupt. `None` for any other interrupt.
pub fn resume_after(state: &LoopState) -> Option<Timestamp> {
    if state.status != LoopStatus::Interrupted
        || state
            .interrupt_reason
            .as_deref()
            .and_then(InterruptReason::parse)
            != Some(InterruptReason::RateLimit)
    {
        return None;
    }
    parse_ts(state.resume_after.as_deref()).or_else(|| {
        parse_ts(state.interrupted_at.as_deref())
            .and_then(|at| at.checked_add(RATE_LIMIT_WAIT).ok())
    })
}

/// `last write 4m ago`, or what is true when there is no readable time.
pub fn last_write(state: &LoopState, now: Timestamp) -> String {
    match state.liveness(now) {
        Some(ts) => format!("last write {} ago", human_age(age(now, ts))),
        None => "no last-write time".into(),
    }
}

/// The step a retroactive Brief owes before any spawn, when one is owed.
pub fn brief_step(state: &LoopState, t: &str) -> Option<String> {
    state.brief_owed.then(|| {
        format!(
            "author the retroactive Brief and record it (`baton loop artifact {t} --tier {} --brief <PATH>`) before any engineer spawn",
            esc_or(state.promotion_tier.as_deref(), "brief")
        )
    })
}

/// The branch step when the loop ran on another branch than the one checked out.
pub fn branch_step(state: &LoopState, checked_out: Option<&str>) -> Option<(Reason, String)> {
    let ran_on = state.branch.as_deref().filter(|b| !b.is_empty())?;
    if checked_out == Some(ran_on) {
        return None;
    }
    let now_on = checked_out.map_or_else(
        || "a detached HEAD".into(),
        |b| format!("branch {}", esc(b)),
    );
    Some((
        Reason::new(
            crate::Rule::LoopOtherBranch,
            format!(
                "the loop ran on branch {}, but {now_on} is checked out: the tree seen here is not the loop's",
                esc(ran_on)
            ),
        ),
        format!(
            "switch to its branch first (`git switch {}`)",
            shell_word(ran_on)
        ),
    ))
}

/// A branch name for a suggested command, quoted when it needs it.
fn shell_word(raw: &str) -> String {
    crate::text::shell_quote(&esc(raw))
}

pub fn decide_loop_resume(facts: &ResumeFacts) -> ResumeDecision {
    let t = facts.ticket_arg;
    let others = others_line(facts.others, facts.now);
    let plain = |decision: Decision, archive: bool| ResumeDecision {
        decision,
        mode: None,
        archive,
        resume_after: None,
        others: others.clone(),
        accept: None,
        decline: None,
    };
    let Some(state) = facts.state else {
        return plain(
            Decision::new(
                crate::Verdict::None,
                Reason::new(crate::Rule::LoopNoState, format!("no loop-state for {t}")),
                Some(format!(
                    "start the loop with `baton loop init {t}` when Phase 6 begins"
                )),
            ),
            false,
        );
    };
    let now = facts.now;
    let seen = last_write(state, now);
    let me = facts.me.filter(|s| !s.is_empty());
    if state.status.is_terminal() {
        return plain(
            Decision::new(
                crate::Verdict::None,
                Reason::new(
                    crate::Rule::LoopTerminal,
                    format!(
                        "the loop for {t} is {}: nothing to resume",
                        state.status.as_str()
                    ),
                ),
                Some(format!(
                    "start a new loop with `baton loop init {t}` if there is more to do"
                )),
            ),
            true,
        );
    }
    // A caller with no session owns state with no session: the protocol's carve-out for
    // sessionless conductors. Nothing then tells two of them apart, and the reason says so.
    let mine = match me {
        Some(me) => state.owner() == Some(me),
        None => state.owner().is_none(),
    };
    if state.status == LoopStatus::Active && mine {
        let mut reasons = vec![Reason::new(
            crate::Rule::LoopOwn,
            format!(
                "this session owns the active loop for {t} ({})",
                state.position()
            ),
        )];
        if me.is_none() {
            reasons.push(no_session_reason());
        }
        let next = brief_step(state, t).unwrap_or_else(|| {
            format!("carry on; record the next transition with `baton loop set {t}`")
        });
        return plain(
            Decision {
                verdict: crate::Verdict::Own,
                reasons,
                next: Some(next),
            },
            false,
        );
    }
    if state.status == LoopStatus::Active && is_live(now, state.liveness(now)) {
        let owner = esc_or(state.owner(), "(no session id)");
        return plain(
            Decision::new(
                crate::Verdict::Live,
                Reason::new(
                    crate::Rule::LoopLiveForeign,
                    format!("session {owner} is working on {t} ({seen}, within 10 minutes)"),
                ),
                Some("do not touch this ticket; work on another, or check again after 10 minutes without writes".into()),
            ),
            false,
        );
    }
    let why = if state.status == LoopStatus::Interrupted {
        let reason = esc_or(state.interrupt_reason.as_deref(), "unknown");
        let when = parse_ts(state.interrupted_at.as_deref())
            .map(|ts| format!(" {} ago", human_age(age(now, ts))))
            .unwrap_or_default();
        Reason::new(
            crate::Rule::LoopInterrupted,
            format!("the loop for {t} was interrupted{when} ({reason})"),
        )
    } else {
        let seen = match state.liveness(now) {
            Some(ts) => format!("its last write was {} ago", human_age(age(now, ts))),
            None => "it has no last-write time".into(),
        };
        Reason::new(
            crate::Rule::LoopStaleActive,
            format!("the loop for {t} is active but {seen}, past the 10-minute liveness window"),
        )
    };
    let (mode, mode_reason, step) = offer_mode(state, facts.tree_dirty, facts.work_committed);
    let mut reasons = vec![why, mode_reason];
    if let Some(phase) = state.phase()
        && claims_engineer_output(phase, state.last_phase_action.as_deref())
        && facts.work_committed == Some(false)
    {
        reasons.push(Reason::new(
            crate::Rule::LoopLostWork,
            "the state says the engineer returned, but the loop's branch has no commit beyond its base: the work may be lost; find it before re-spawning anything",
        ));
    }
    // Ownerless (legacy) state is taken over only with `--force`; say so up front.
    let ownerless = state.owner().is_none() && me.is_some();
    if ownerless {
        reasons.push(Reason::new(
            crate::Rule::LoopOwnerless,
            "the loop records no owner session (legacy state): accepting it needs `--force`",
        ));
    }
    let force = if ownerless { " --force" } else { "" };
    let accept = format!("baton resume accept {t}{force}");
    let decline = format!("baton resume fresh {t}{force}");
    // An owed Brief comes between the accept and any spawn.
    let brief = brief_step(state, t);
    let then = match &brief {
        Some(brief) => format!("{brief}, then {step}"),
        None => step.to_string(),
    };
    let mut next = match mode {
        // Taking over a loop that names no owner is the human's call, not the agent's.
        Mode::Automatic | Mode::Respawn if ownerless => format!(
            "ask the human whether to take over a loop that records no owner (`{accept}`), then {then}"
        ),
        Mode::Automatic | Mode::Respawn => format!("`{accept}`, then {then}"),
        Mode::Confirm => format!(
            "ask the human: discard the partial work (`{accept} --discard`, kept in `git stash`) or commit it (`{accept} --commit`)"
        ),
        Mode::Never => format!(
            "ask the human: resume anyway (`baton resume accept {t} --force`) or start over (`{decline}`)"
        ),
    };
    if mode != Mode::Never {
        next.push_str(&format!("; or start over with `{decline}`"));
    }
    if let Some(brief) = brief {
        reasons.push(Reason::new(
            crate::Rule::LoopBriefOwed,
            "a retroactive Brief is owed: the task was promoted with no Brief recorded",
        ));
        if matches!(mode, Mode::Confirm | Mode::Never) {
            next = format!("{next}; after accepting and before any spawn, {brief}");
        }
    }
    if let Some((reason, switch)) = facts
        .tree_dirty
        .and_then(|_| branch_step(state, facts.checked_out))
    {
        reasons.push(reason);
        next = format!("{switch}, then {next}");
    }
    let after = resume_after(state);
    if let Some(after) = after.filter(|a| *a > now) {
        reasons.push(Reason::new(
            crate::Rule::LoopRateLimitWait,
            format!(
                "the rate limit resets at {}, in {}",
                format_ts(after),
                human_age(age(after, now))
            ),
        ));
        next = format!("wait until {}, then {next}", format_ts(after));
    }
    // The one command an agent may run as it is: none where a human decides (partial work to
    // keep or set aside, a state no rule covers, a loop that names no owner); `next` names
    // those choices and who makes them.
    let agent_may = matches!(mode, Mode::Automatic | Mode::Respawn) && !ownerless;
    let (accept, decline) = match agent_may {
        true => (Some(accept), Some(decline)),
        false => (None, None),
    };
    ResumeDecision {
        decision: Decision {
            verdict: crate::Verdict::Offer,
            reasons,
            next: Some(next),
        },
        mode: Some(mode),
        archive: false,
        resume_after: after.map(format_ts),
        others,
        accept,
        decline,
    }
}

/// The warning every sessionless write and check carries.
pub fn no_session_reason() -> Reason {
    Reason::new(
        crate::Rule::LoopNoSession,
        "no session id (`--session`, `BATON_SESSION` or `CLAUDE_CODE_SESSION_ID`): nothing protects this loop from another session without one",
    )
}

/// What the originating resume entry table says about a `last_phase`/`last_phase_action` pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Entry {
    /// A worker was in flight: spawn it again on a clean tree.
    InFlight(&'static str, &'static str),
    /// Between workers: carry on from the next step on a clean tree.
    Boundary(&'static str, &'static str),
    /// The table says a human decides.
    Human(&'static str),
    Uncovered,
}

/// One row per line of the originating resume entry table, plus the pairs baton itself writes
/// (no action yet; `engineer_returned`/`rerun_pending` inside the loop). Each row carries what
/// the next session does, in the table's words.
fn entry(phase: Phase, action: Option<&str>) -> Entry {
    use Entry::*;
    use Phase::*;
    match (phase, action) {
        (_, Some("engineer_spawned")) if phase != CiLoop => InFlight(
            "mid-engineer",
            "spawn the engineer again with the same brief",
        ),
        (Skeptic, Some("spawned")) => InFlight(
            "mid-review",
            "spawn the Skeptic again on the current diff, with the prior iteration's findings",
        ),
        (Qa, Some("spawned")) => InFlight(
            "mid-review",
            "spawn the QA engineer again with the prior brief",
        ),
        (Engineer, Some("spawned")) => InFlight(
            "mid-engineer",
            "spawn the engineer again with the same open-findings brief",
        ),
        (QualityGate, Some("debugger_spawned")) => InFlight(
            "mid-debugger",
            "spawn the Debugger again from scratch with the captured gate failure output",
        ),
        (CiLoop, Some("fix_engineer_spawned")) => InFlight(
            "mid-fix-engineer",
            "spawn the CI fix engineer again from the branch's latest commit",
        ),
        (Skeptic, Some("returned")) => Boundary(
            "iteration boundary",
            "classify the open findings and spawn the engineer's fix pass",
        ),
        (Engineer, Some("returned")) => Boundary(
            "iteration boundary",
            "spawn the Skeptic again with the recorded engineer summary",
        ),
        (Qa, Some("returned")) => Boundary(
            "iteration boundary",
            "spawn the engineer's fix pass for the QA failures",
        ),
        (Skeptic | Qa | Engineer, None | Some("engineer_returned" | "rerun_pending")) => {
            Boundary("iteration boundary", "continue the loop from its next step")
        }
        (QualityGate, Some("engineer_returned")) => Boundary(
            "quality gate after the engineer committed",
            "verify the engineer's quality gate results (re-run the quality command on the Trivial path)",
        ),
        (QualityGate, Some("rerun_pending")) => Boundary(
            "quality gate re-run pending",
            "verify the fix engineer's quality gate results (re-run the quality command on the Trivial path)",
        ),
        (QualityGate, Some("debugger_returned")) => Boundary(
            "quality gate after the Debugger returned",
            "spawn the next engineer fix pass with the Debugger's fix brief",
        ),
        (CiWait, Some("timeout")) => Boundary(
            "CI wait timed out",
            "poll CI once more; if it still times out, escalate",
        ),
        (CiLoop, Some("fix_engineer_returned")) => {
            Boundary("CI fix engineer returned", "poll CI for the fix's result")
        }
        (CiLoop, Some("ci_poll_pending")) => {
            Boundary("CI poll pending", "poll CI again from the current cycle")
        }
        (CiLoop, Some("cap_exceeded")) => Human(
            "the CI fix loop exceeded its cap: show the escalation summary and wait for a human",
        ),
        _ => Uncovered,
    }
}

/// The mode rules of the ticket-loop protocol, plus the cases it leaves to a human; with the
/// step that follows an accept.
fn offer_mode(
    state: &LoopState,
    tree_dirty: Option<bool>,
    work_committed: Option<bool>,
) -> (Mode, Reason, &'static str) {
    let pos = state.position();
    let progress = &state.loop_state;
    let never = |rule, message: String| (Mode::Never, Reason::new(rule, message), "");
    if progress.max_iterations > 0 && progress.iteration > progress.max_iterations {
        return never(
            crate::Rule::LoopModeNeverOverCap,
            format!(
                "iteration {} is over the cap of {}",
                progress.iteration, progress.max_iterations
            ),
        );
    }
    let Some(phase) = state.phase() else {
        let message = match &state.last_phase {
            Some(raw) => format!("last_phase is {:?}, which no resume rule covers", esc(raw)),
            None => "the loop records no last_phase, so no resume rule covers it".into(),
        };
        return never(crate::Rule::LoopModeNeverUnknownPhase, message);
    };
    let action = state.last_phase_action.as_deref();
    let (what, step, in_flight) = match entry(phase, action) {
        Entry::InFlight(what, step) => (what, step, true),
        // The boundary after an engineer returned holds only with its work committed: with no
        // commit beyond the base, the engineer is as good as still in flight.
        Entry::Boundary(..)
            if claims_engineer_output(phase, action) && work_committed == Some(false) =>
        {
            (
                "engineer returned with no commit beyond the base",
                "spawn the engineer again with the same brief (its work was never committed)",
                true,
            )
        }
        Entry::Boundary(what, step) => (what, step, false),
        Entry::Human(why) => {
            return never(crate::Rule::LoopModeNeverHuman, format!("{pos}: {why}"));
        }
        Entry::Uncovered => {
            return never(
                crate::Rule::LoopModeNeverUncovered,
                format!("{pos} is a state no resume rule covers"),
            );
        }
    };
    let Some(dirty) = tree_dirty else {
        return never(
            crate::Rule::LoopModeNeverTreeUnknown,
            "git could not say whether the working tree is clean".into(),
        );
    };
    if dirty {
        return (
            Mode::Confirm,
            Reason::new(
                crate::Rule::LoopModeConfirmDirty,
                format!("{what} ({pos}) with uncommitted changes in the tree"),
            ),
            step,
        );
    }
    if in_flight {
        return (
            Mode::Respawn,
            Reason::new(
                crate::Rule::LoopModeRespawn,
                format!("{what} ({pos}) with a clean tree: nothing was left behind"),
            ),
            step,
        );
    }
    (
        Mode::Automatic,
        Reason::new(
            crate::Rule::LoopModeAutomatic,
            format!("{what} ({pos}) with a clean tree"),
        ),
        step,
    )
}

/// Whether a position says an engineer returned with its work: `engineer`/`returned`,
/// `engineer_returned` or `rerun_pending` in any phase, `ci_loop`/`fix_engineer_returned`.
pub fn claims_engineer_output(phase: Phase, action: Option<&str>) -> bool {
    matches!(
        (phase, action),
        (Phase::Engineer, Some("returned"))
            | (_, Some("engineer_returned" | "rerun_pending"))
            | (Phase::CiLoop, Some("fix_engineer_returned"))
    )
}

/// The step after an accept, for a loop in `mode`.
pub fn resume_step(state: &LoopState) -> &'static str {
    match state.phase() {
        Some(phase) => match entry(phase, state.last_phase_action.as_deref()) {
            Entry::InFlight(_, step) | Entry::Boundary(_, step) => step,
            Entry::Human(_) | Entry::Uncovered => "continue as the human decided",
        },
        None => "continue as the human decided",
    }
}

fn others_line(others: &[OtherLoop], now: Timestamp) -> Option<String> {
    if others.is_empty() {
        return None;
    }
    let mut named: Vec<String> = others
        .iter()
        .take(OTHERS_CAP)
        .map(|o| {
            let seen = o.last_updated.map_or_else(
                || "no last-write time".into(),
                |t| format!("{} ago", human_age(age(now, t))),
            );
            format!("{} ({}, {seen})", o.key, o.status.as_str())
        })
        .collect();
    if others.len() > OTHERS_CAP {
        named.push(format!("and {} more", others.len() - OTHERS_CAP));
    }
    Some(format!(
        "other tickets have resumable loops, not offered here: {}",
        named.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::LoopState;

    const NOW: &str = "2026-03-01T12:00:00Z";

    fn now() -> Timestamp {
        NOW.parse().unwrap()
    }

    fn state(
        status: LoopStatus,
        owner: Option<&str>,
        minutes_ago: i64,
        phase: Option<&str>,
        action: Option<&str>,
    ) -> LoopState {
        let mut s = LoopState::new("PROJ-1".into(), "PROJ-1".into(), owner.map(String::from));
        s.status = status;
        s.last_updated = Some(crate::time::format_ts(
            now() - jiff::SignedDuration::from_mins(minutes_ago),
        ));
        s.last_phase = phase.map(String::from);
        s.last_phase_action = action.map(String::from);
        s.loop_state.iteration = 2;
        s.loop_state.max_iterations = 5;
        s
    }

    fn decide(s: Option<&LoopState>, me: Option<&str>, dirty: bool) -> ResumeDecision {
        decide_loop_resume(&ResumeFacts {
            ticket_arg: "PROJ-1",
            state: s,
            me,
            now: now(),
            tree_dirty: Some(dirty),
            checked_out: None,
            work_committed: None,
            others: &[],
        })
    }

    /// One row per rule of the resume check (docs/ticket-loop.md).
    #[test]
    fn resume_check_table() {
        use LoopStatus::*;
        type Row = (
            &'static str,
            Option<LoopState>,
            Option<&'static str>,
            bool,
            &'static str,
            Option<Mode>,
            &'static str,
        );
        let rows: Vec<Row> = vec![
            (
                "no file",
                None,
                Some("B"),
                false,
                "none",
                None,
                "loop.no-state",
            ),
            (
                "complete is archived",
                Some(state(Complete, Some("A"), 1, Some("qa"), None)),
                Some("B"),
                false,
                "none",
                None,
                "loop.terminal",
            ),
            (
                "stalled is archived",
                Some(state(Stalled, Some("A"), 90, Some("qa"), None)),
                Some("B"),
                false,
                "none",
                None,
                "loop.terminal",
            ),
            (
                "own active",
                Some(state(Active, Some("B"), 1, Some("qa"), Some("returned"))),
                Some("B"),
                false,
                "own",
                None,
                "loop.own",
            ),
            (
                "foreign active 5 min",
                Some(state(Active, Some("A"), 5, Some("qa"), Some("returned"))),
                Some("B"),
                false,
                "live",
                None,
                "loop.live-foreign",
            ),
            (
                "foreign active 12 min, qa boundary",
                Some(state(Active, Some("A"), 12, Some("qa"), Some("returned"))),
                Some("B"),
                false,
                "offer",
                Some(Mode::Automatic),
                "loop.mode-automatic",
            ),
            (
                "interrupted skeptic boundary",
                Some(state(
                    Interrupted,
                    Some("A"),
                    1,
                    Some("skeptic"),
                    Some("engineer_returned"),
                )),
                Some("B"),
                false,
                "offer",
                Some(Mode::Automatic),
                "loop.mode-automatic",
            ),
            (
                "quality gate, engineer_returned",
                Some(state(
                    Interrupted,
                    Some("A"),
                    1,
                    Some("quality_gate"),
                    Some("engineer_returned"),
                )),
                Some("B"),
                false,
                "offer",
                Some(Mode::Automatic),
                "loop.mode-automatic",
            ),
            (
                "quality gate, rerun_pending",
                Some(state(
                    Interrupted,
                    Some("A"),
                    1,
                    Some("quality_gate"),
                    Some("rerun_pending"),
                )),
                Some("B"),
                false,
                "offer",
                Some(Mode::Automatic),
                "loop.mode-automatic",
            ),
            (
                "quality gate, spawned is uncovered",
                Some(state(
                    Interrupted,
                    Some("A"),
                    1,
                    Some("quality_gate"),
                    Some("spawned"),
                )),
                Some("B"),
                false,
                "offer",
                Some(Mode::Never),
                "loop.mode-never-uncovered",
            ),
            (
                "mid-engineer, dirty",
                Some(state(
                    Interrupted,
                    Some("A"),
                    1,
                    Some("qa"),
                    Some("engineer_spawned"),
                )),
                Some("B"),
                true,
                "offer",
                Some(Mode::Confirm),
                "loop.mode-confirm-dirty",
            ),
            (
                "mid-engineer, clean",
                Some(state(
                    Interrupted,
                    Some("A"),
                    1,
                    Some("qa"),
                    Some("engineer_spawned"),
                )),
                Some("B"),
                false,
                "offer",
                Some(Mode::Respawn),
                "loop.mode-respawn",
            ),
            (
                "mid-review, clean",
                Some(state(
                    Interrupted,
                    Some("A"),
                    1,
                    Some("skeptic"),
                    Some("spawned"),
                )),
                Some("B"),
                false,
                "offer",
                Some(Mode::Respawn),
                "loop.mode-respawn",
            ),
            (
                "boundary, dirty",
                Some(state(
                    Interrupted,
                    Some("A"),
                    1,
                    Some("qa"),
                    Some("returned"),
                )),
                Some("B"),
                true,
                "offer",
                Some(Mode::Confirm),
                "loop.mode-confirm-dirty",
            ),
            (
                "unknown phase",
                Some(state(Interrupted, Some("A"), 1, Some("phase3"), None)),
                Some("B"),
                false,
                "offer",
                Some(Mode::Never),
                "loop.mode-never-unknown-phase",
            ),
            (
                "own interrupted is offered",
                Some(state(
                    Interrupted,
                    Some("B"),
                    1,
                    Some("qa"),
                    Some("returned"),
                )),
                Some("B"),
                false,
                "offer",
                Some(Mode::Automatic),
                "loop.mode-automatic",
            ),
            (
                "null owner fresh active is live",
                Some(state(Active, None, 2, Some("qa"), None)),
                Some("B"),
                false,
                "live",
                None,
                "loop.live-foreign",
            ),
        ];
        for (name, s, me, dirty, verdict, mode, rule) in rows {
            let d = decide(s.as_ref(), me, dirty);
            assert_eq!(d.decision.verdict, verdict, "{name}");
            assert_eq!(d.mode, mode, "{name}");
            assert!(
                d.decision.rules().contains(&rule),
                "{name}: {:?}",
                d.decision.rules()
            );
        }
    }

    #[test]
    fn an_unknown_tree_is_never_guessed_clean() {
        let s = state(
            LoopStatus::Interrupted,
            Some("A"),
            1,
            Some("qa"),
            Some("returned"),
        );
        let d = decide_loop_resume(&ResumeFacts {
            ticket_arg: "PROJ-1",
            state: Some(&s),
            me: Some("B"),
            now: now(),
            tree_dirty: None,
            checked_out: None,
            work_committed: None,
            others: &[],
        });
        assert_eq!(d.mode, Some(Mode::Never));
        assert!(d.decision.rules().contains(&"loop.mode-never-tree-unknown"));
    }

    #[test]
    fn ownerless_state_is_offered_with_force() {
        let s = state(
            LoopStatus::Interrupted,
            None,
            30,
            Some("qa"),
            Some("returned"),
        );
        let d = decide(Some(&s), Some("B"), false);
        assert_eq!(d.mode, Some(Mode::Automatic));
        assert!(d.decision.rules().contains(&"loop.ownerless"));
        assert!(
            d.decision
                .next
                .unwrap()
                .contains("baton resume accept PROJ-1 --force")
        );
    }

    #[test]
    fn over_the_cap_is_never() {
        let mut s = state(
            LoopStatus::Interrupted,
            Some("A"),
            1,
            Some("qa"),
            Some("returned"),
        );
        s.loop_state.iteration = 6;
        let d = decide(Some(&s), Some("B"), false);
        assert_eq!(d.mode, Some(Mode::Never));
        assert_eq!(
            d.decision.rules(),
            ["loop.interrupted", "loop.mode-never-over-cap"]
        );
    }

    #[test]
    fn stale_active_is_offered_with_the_stale_reason() {
        let s = state(
            LoopStatus::Active,
            Some("A"),
            12,
            Some("qa"),
            Some("returned"),
        );
        let d = decide(Some(&s), Some("B"), false);
        assert_eq!(
            d.decision.rules(),
            ["loop.stale-active", "loop.mode-automatic"]
        );
        assert!(
            d.decision
                .next
                .unwrap()
                .contains("baton resume accept PROJ-1")
        );
    }

    #[test]
    fn rate_limit_carries_resume_after_and_waits_for_it() {
        let mut s = state(
            LoopStatus::Interrupted,
            Some("A"),
            1,
            Some("qa"),
            Some("returned"),
        );
        s.interrupt_reason = Some("rate_limit".into());
        s.resume_after = Some("2026-03-01T13:00:00Z".into());
        let d = decide(Some(&s), Some("B"), false);
        assert_eq!(d.resume_after.as_deref(), Some("2026-03-01T13:00:00Z"));
        assert!(d.decision.rules().contains(&"loop.rate-limit-wait"));
        assert!(d.decision.next.unwrap().starts_with("wait until"));
    }

    #[test]
    fn other_tickets_get_one_capped_line_and_no_offer() {
        let others: Vec<OtherLoop> = (1..=5)
            .map(|i| OtherLoop {
                key: format!("PROJ-{i}0"),
                status: LoopStatus::Interrupted,
                last_updated: None,
            })
            .collect();
        let d = decide_loop_resume(&ResumeFacts {
            ticket_arg: "PROJ-1",
            state: None,
            me: Some("B"),
            now: now(),
            tree_dirty: None,
            checked_out: None,
            work_committed: None,
            others: &others,
        });
        assert_eq!(d.decision.verdict, "none");
        let line = d.others.unwrap();
        assert!(!line.contains('\n'));
        assert!(line.contains("PROJ-10") && line.contains("PROJ-30") && !line.contains("PROJ-40"));
        assert!(line.ends_with("and 2 more"));
    }
}
