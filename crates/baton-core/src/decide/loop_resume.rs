//! The resume check of the ticket loop: which verdict a session gets for its ticket's key, and
//! in which mode a resumable loop may be resumed.

use jiff::Timestamp;
use serde::Serialize;

use super::{Decision, Reason};
use crate::model::{LoopState, LoopStatus, Phase};
use crate::time::{age, human_age, is_live, parse_ts};

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
    /// Whether the working tree has changes outside the state directory; only consulted for
    /// an offer, and `None` when git could not say.
    pub tree_dirty: Option<bool>,
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
}

/// At most this many other tickets are named in the informational line.
pub const OTHERS_CAP: usize = 3;

/// Interrupted, or active with its last write outside the liveness window.
pub fn is_resumable(state: &LoopState, now: Timestamp) -> bool {
    match state.status {
        LoopStatus::Interrupted => true,
        LoopStatus::Active => !is_live(now, parse_ts(state.last_updated.as_deref())),
        _ => false,
    }
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
    };
    let Some(state) = facts.state else {
        return plain(
            Decision::new(
                "none",
                Reason::new("loop.no-state", format!("no loop-state for {t}")),
                Some(format!(
                    "start the loop with `baton loop init {t}` when Phase 6 begins"
                )),
            ),
            false,
        );
    };
    let now = facts.now;
    let last = parse_ts(state.last_updated.as_deref());
    let seen = last.map_or_else(
        || "never".to_string(),
        |ts| format!("{} ago", human_age(age(now, ts))),
    );
    let me = facts.me.filter(|s| !s.is_empty());
    if state.status.is_terminal() {
        return plain(
            Decision::new(
                "none",
                Reason::new(
                    "loop.terminal",
                    format!(
                        "the loop for {t} is {}; it is archived out of the way",
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
    if state.status == LoopStatus::Active && me.is_some() && state.owner() == me {
        return plain(
            Decision::new(
                "own",
                Reason::new(
                    "loop.own",
                    format!(
                        "this session owns the active loop for {t} ({})",
                        state.position()
                    ),
                ),
                Some(format!(
                    "carry on; record the next transition with `baton loop set {t}`"
                )),
            ),
            false,
        );
    }
    if state.status == LoopStatus::Active && is_live(now, last) {
        let owner = state.owner().unwrap_or("(no session id)");
        return plain(
            Decision::new(
                "live",
                Reason::new(
                    "loop.live-foreign",
                    format!("session {owner} is working on {t} (last write {seen}, within 10 minutes)"),
                ),
                Some("do not touch this ticket; work on another, or check again after 10 minutes without writes".into()),
            ),
            false,
        );
    }
    let why = if state.status == LoopStatus::Interrupted {
        let reason = state.interrupt_reason.as_deref().unwrap_or("unknown");
        let when = parse_ts(state.interrupted_at.as_deref())
            .map(|ts| format!(" {} ago", human_age(age(now, ts))))
            .unwrap_or_default();
        Reason::new(
            "loop.interrupted",
            format!("the loop for {t} was interrupted{when} ({reason})"),
        )
    } else {
        Reason::new(
            "loop.stale-active",
            format!(
                "the loop for {t} is active but its last write was {seen}, past the 10-minute liveness window"
            ),
        )
    };
    let (mode, mode_reason) = offer_mode(state, facts.tree_dirty);
    let mut reasons = vec![why, mode_reason];
    let resume_after = (state.interrupt_reason.as_deref() == Some("rate_limit")
        && state.status == LoopStatus::Interrupted)
        .then(|| state.resume_after.clone())
        .flatten();
    // Ownerless (legacy) state is taken over only with `--force`; say so up front.
    let ownerless = state.owner().is_none() && me.is_some();
    if ownerless {
        reasons.push(Reason::new(
            "loop.ownerless",
            "the loop records no owner session (legacy state): accepting it needs `--force`",
        ));
    }
    let accept = format!(
        "baton resume accept {t}{}",
        if ownerless { " --force" } else { "" }
    );
    let mut next = match mode {
        Mode::Automatic => format!("`{accept}`, then continue from {}", state.position()),
        Mode::Respawn => format!(
            "`{accept}`, then spawn the in-flight worker again ({})",
            state.position()
        ),
        Mode::Confirm => format!(
            "ask the human: discard the partial work (`{accept} --discard`, kept in `git stash`) or commit it (`{accept} --commit`)"
        ),
        Mode::Never => format!(
            "ask the human: resume anyway (`baton resume accept {t} --force`) or start over (`baton resume fresh {t}`)"
        ),
    };
    if mode != Mode::Never {
        next.push_str(&format!("; or start over with `baton resume fresh {t}`"));
    }
    if let Some(after) = parse_ts(resume_after.as_deref())
        && after > now
    {
        reasons.push(Reason::new(
            "loop.rate-limit-wait",
            format!(
                "the rate limit resets at {after}, in {}",
                human_age(age(after, now))
            ),
        ));
        next = format!("wait until {after}, then {next}");
    }
    ResumeDecision {
        decision: Decision {
            verdict: "offer",
            reasons,
            next: Some(next),
        },
        mode: Some(mode),
        archive: false,
        resume_after,
        others,
    }
}

/// The mode rules of the ticket-loop protocol, plus the cases it leaves to a human.
fn offer_mode(state: &LoopState, tree_dirty: Option<bool>) -> (Mode, Reason) {
    let pos = state.position();
    let progress = &state.loop_state;
    if progress.max_iterations > 0 && progress.iteration > progress.max_iterations {
        return (
            Mode::Never,
            Reason::new(
                "loop.mode-never-over-cap",
                format!(
                    "iteration {} is over the cap of {}",
                    progress.iteration, progress.max_iterations
                ),
            ),
        );
    }
    let Some(phase) = state.phase() else {
        let raw = state.last_phase.as_deref().unwrap_or("null");
        return (
            Mode::Never,
            Reason::new(
                "loop.mode-never-unknown-phase",
                format!("last_phase is {raw}, which no resume rule covers"),
            ),
        );
    };
    let Some(dirty) = tree_dirty else {
        return (
            Mode::Never,
            Reason::new(
                "loop.mode-never-tree-unknown",
                "git could not say whether the working tree is clean",
            ),
        );
    };
    let action = state.last_phase_action.as_deref();
    let dirty_confirm = |what: &str| {
        (
            Mode::Confirm,
            Reason::new(
                "loop.mode-confirm-dirty",
                format!("{what} ({pos}) with uncommitted changes in the tree"),
            ),
        )
    };
    let in_flight = match (phase, action) {
        (_, Some("engineer_spawned")) | (Phase::Engineer, Some("spawned")) => Some("mid-engineer"),
        (Phase::Skeptic | Phase::Qa, Some("spawned")) => Some("mid-review"),
        _ => None,
    };
    if let Some(what) = in_flight {
        return if dirty {
            dirty_confirm(what)
        } else {
            (
                Mode::Respawn,
                Reason::new(
                    "loop.mode-respawn",
                    format!("{what} ({pos}) with a clean tree: nothing was left behind"),
                ),
            )
        };
    }
    let boundary = match phase {
        Phase::Skeptic | Phase::Qa | Phase::Engineer => {
            matches!(
                action,
                None | Some("returned" | "engineer_returned" | "rerun_pending")
            )
        }
        Phase::QualityGate => matches!(action, Some("engineer_returned" | "rerun_pending")),
    };
    if !boundary {
        return (
            Mode::Never,
            Reason::new(
                "loop.mode-never-uncovered",
                format!("{pos} is a state no resume rule covers"),
            ),
        );
    }
    let what = if phase == Phase::QualityGate {
        "quality gate after the engineer committed"
    } else {
        "iteration boundary"
    };
    if dirty {
        return dirty_confirm(what);
    }
    (
        Mode::Automatic,
        Reason::new(
            "loop.mode-automatic",
            format!("{what} ({pos}) with a clean tree"),
        ),
    )
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
                || "never written".into(),
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
            others: &others,
        });
        assert_eq!(d.decision.verdict, "none");
        let line = d.others.unwrap();
        assert!(!line.contains('\n'));
        assert!(line.contains("PROJ-10") && line.contains("PROJ-30") && !line.contains("PROJ-40"));
        assert!(line.ends_with("and 2 more"));
    }
}
