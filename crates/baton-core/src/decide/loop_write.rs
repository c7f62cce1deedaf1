//! Rules on the writes of a ticket loop that come on top of the ownership gate: the key
//! collision guard, what `loop init` does with an existing file, which transitions a status
//! allows, and the mid-flight escalation guard.

use jiff::Timestamp;

use super::loop_resume::is_resumable;
use super::{Decision, Reason};
use crate::model::{LoopState, LoopStatus, PromotionTier};
use crate::text::esc_or;

/// Verdict of a write refused by a gate (exit 3).
pub const REFUSED: crate::Verdict = crate::Verdict::Refused;
/// Verdict of a write that waits for a human decision (exit 4).
pub const ASK: crate::Verdict = crate::Verdict::Ask;

/// Two raw ticket ids that sanitize to one key never share the file. A loop started with no
/// ticket (keyed by its session) is named by its key.
pub fn check_key_collision(
    stored: &LoopState,
    raw_ticket: &str,
    key: &str,
) -> Result<(), Decision> {
    match stored.ticket_id.as_deref() {
        Some(existing) if !existing.is_empty() && existing != raw_ticket => Err(Decision::new(
            REFUSED,
            Reason::new(
                crate::Rule::LoopKeyCollision,
                format!(
                    "ticket {raw_ticket:?} sanitizes to key {key}, whose file belongs to ticket {existing:?}"
                ),
            ),
            Some(format!(
                "refer to the loop as {existing:?}; to reuse the key, archive that loop first with `baton resume fresh` on it"
            )),
        )),
        _ => Ok(()),
    }
}

/// What `loop init` does with the file already at its key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InitPlan {
    /// Write a new loop (after archiving a terminal one, if `archive_old`).
    Create {
        archive_old: bool,
    },
    /// This session already runs this loop: nothing to write.
    AlreadyOwned,
    Refuse(Decision),
}

pub fn decide_init(
    existing: Option<&LoopState>,
    me: Option<&str>,
    now: Timestamp,
    t: &str,
) -> InitPlan {
    let Some(state) = existing else {
        return InitPlan::Create { archive_old: false };
    };
    if state.status.is_terminal() {
        return InitPlan::Create { archive_old: true };
    }
    let me = me.filter(|s| !s.is_empty());
    // This session's own active loop, however quiet it has been, is already running; so is a
    // sessionless loop for a sessionless caller (the protocol's carve-out).
    if state.owner() == me && state.status == LoopStatus::Active {
        return InitPlan::AlreadyOwned;
    }
    if is_resumable(state, now) {
        return InitPlan::Refuse(Decision::new(
            ASK,
            Reason::new(
                crate::Rule::LoopInitResumable,
                format!(
                    "{t} already has a resumable loop ({}, {})",
                    state.status.as_str(),
                    state.position()
                ),
            ),
            Some(format!(
                "run `baton resume {t}` and resume it or start fresh"
            )),
        ));
    }
    // Active and live under another (or no) session: the ownership gate refuses it.
    InitPlan::Create { archive_old: false }
}

/// A loop interrupted by a rate limit waits for its reset: until then another session may not
/// take it over (its own session may resume it at any time), unless `--force`.
pub fn check_reset(
    state: &LoopState,
    me: Option<&str>,
    now: Timestamp,
    force: bool,
    t: &str,
) -> Result<(), Decision> {
    let me = me.filter(|s| !s.is_empty());
    let after = super::loop_resume::resume_after(state).filter(|a| *a > now);
    match after {
        Some(after) if state.owner() != me && !force => Err(Decision::new(
            REFUSED,
            Reason::new(
                crate::Rule::LoopWaitsForReset,
                format!(
                    "the loop for {t} was interrupted by a rate limit that resets at {}: until then only its own session may resume it",
                    crate::time::format_ts(after)
                ),
            ),
            Some(format!(
                "wait until {}, then `baton resume accept {t}`; a human may take it over now with `--force`",
                crate::time::format_ts(after)
            )),
        )),
        _ => Ok(()),
    }
}

/// A phase transition is recorded on an active loop only; the refusal says how to get there.
pub fn check_transition(
    state: &LoopState,
    phase: &str,
    action: Option<&str>,
    t: &str,
) -> Result<(), Decision> {
    match state.status {
        LoopStatus::Active => {}
        LoopStatus::Interrupted => {
            return Err(Decision::new(
                REFUSED,
                Reason::new(
                    crate::Rule::LoopNotActive,
                    format!("the loop for {t} is interrupted"),
                ),
                Some(format!("resume it first: `baton resume {t}`")),
            ));
        }
        status => {
            return Err(Decision::new(
                REFUSED,
                Reason::new(
                    crate::Rule::LoopNotActive,
                    format!("the loop for {t} is {}", status.as_str()),
                ),
                Some(format!("start a new loop with `baton loop init {t}`")),
            ));
        }
    }
    let spawns_engineer = action.is_some_and(|a| is_engineer_spawn(phase, a));
    if state.brief_owed && spawns_engineer {
        return Err(Decision::new(
            REFUSED,
            Reason::new(
                crate::Rule::LoopBriefOwed,
                format!(
                    "the task was promoted to the {} tier with no Brief recorded: a retroactive Brief is owed before the next engineer spawn",
                    esc_or(state.promotion_tier.as_deref(), "brief")
                ),
            ),
            Some(format!(
                "author the Brief (goal, scope, constraints, acceptance), then `baton loop artifact {t} --tier {} --brief <PATH>`",
                esc_or(state.promotion_tier.as_deref(), "brief")
            )),
        ));
    }
    Ok(())
}

/// Whether a transition spawns an engineer: `engineer_spawned` in any phase, or `spawned` in
/// the engineer phase.
pub fn is_engineer_spawn(phase: &str, action: &str) -> bool {
    action == "engineer_spawned" || (phase == "engineer" && action == "spawned")
}

/// Whether a Brief is owed after an artifact update. Raising the tier with no Brief on record
/// makes one owed; recording a Brief pays it, and so does demoting the task to tier `none`
/// (a trivial task governs itself). Lowering plan to brief keeps the debt.
pub fn brief_owed_after(old: &LoopState, new_tier: PromotionTier, new_brief: bool) -> bool {
    if new_brief || old.brief_path.is_some() || new_tier == PromotionTier::None {
        return false;
    }
    let old_tier = PromotionTier::parse_lenient(old.promotion_tier.as_deref());
    let raised = new_tier > old_tier && new_tier >= PromotionTier::Brief;
    old.brief_owed || raised
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> Timestamp {
        "2026-03-01T12:00:00Z".parse().unwrap()
    }

    fn loop_with(status: LoopStatus, owner: Option<&str>, minutes_ago: i64) -> LoopState {
        let mut s = LoopState::new("PROJ-1".into(), "PROJ-1".into(), owner.map(String::from));
        s.status = status;
        s.last_updated = Some(crate::time::format_ts(
            now() - jiff::SignedDuration::from_mins(minutes_ago),
        ));
        s
    }

    #[test]
    fn key_collision_table() {
        let s = loop_with(LoopStatus::Active, Some("A"), 1);
        assert!(check_key_collision(&s, "PROJ-1", "PROJ-1").is_ok());
        let err = check_key_collision(&s, "PROJ/1", "PROJ-1").unwrap_err();
        assert_eq!(err.rules(), ["loop.key-collision"]);
        let mut legacy = s.clone();
        legacy.ticket_id = None;
        assert!(check_key_collision(&legacy, "PROJ/1", "PROJ-1").is_ok());
        // A loop with no ticket, keyed by its session: another session names it by that key.
        let mut ticketless = s.clone();
        ticketless.ticket_id = Some(String::new());
        assert!(check_key_collision(&ticketless, "session-A", "session-A").is_ok());
    }

    #[test]
    fn init_table() {
        use LoopStatus::*;
        assert_eq!(
            decide_init(None, Some("A"), now(), "T"),
            InitPlan::Create { archive_old: false }
        );
        assert_eq!(
            decide_init(
                Some(&loop_with(Complete, Some("A"), 1)),
                Some("B"),
                now(),
                "T"
            ),
            InitPlan::Create { archive_old: true }
        );
        assert_eq!(
            decide_init(
                Some(&loop_with(Active, Some("A"), 1)),
                Some("A"),
                now(),
                "T"
            ),
            InitPlan::AlreadyOwned
        );
        assert_eq!(
            decide_init(
                Some(&loop_with(Active, Some("A"), 30)),
                Some("A"),
                now(),
                "T"
            ),
            InitPlan::AlreadyOwned,
            "own and quiet is still own"
        );
        match decide_init(
            Some(&loop_with(Interrupted, Some("A"), 1)),
            Some("A"),
            now(),
            "T",
        ) {
            InitPlan::Refuse(d) => {
                assert_eq!((d.verdict, d.rules()), (ASK, vec!["loop.init-resumable"]))
            }
            other => panic!("{other:?}"),
        }
        match decide_init(
            Some(&loop_with(Active, Some("A"), 30)),
            Some("B"),
            now(),
            "T",
        ) {
            InitPlan::Refuse(d) => assert_eq!(d.rules(), ["loop.init-resumable"]),
            other => panic!("{other:?}"),
        }
        // A live foreign loop is left to the ownership gate.
        assert_eq!(
            decide_init(
                Some(&loop_with(Active, Some("A"), 1)),
                Some("B"),
                now(),
                "T"
            ),
            InitPlan::Create { archive_old: false }
        );
    }

    #[test]
    fn transitions_need_an_active_loop() {
        for status in [
            LoopStatus::Interrupted,
            LoopStatus::Complete,
            LoopStatus::Stalled,
        ] {
            let err = check_transition(
                &loop_with(status, Some("A"), 1),
                "qa",
                Some("returned"),
                "T",
            )
            .unwrap_err();
            assert_eq!(err.rules(), ["loop.not-active"]);
        }
        assert!(
            check_transition(
                &loop_with(LoopStatus::Active, Some("A"), 1),
                "qa",
                Some("returned"),
                "T"
            )
            .is_ok()
        );
    }

    /// Mid-flight escalation: raising the tier with no Brief blocks the next engineer spawn only.
    #[test]
    fn escalation_table() {
        let base = loop_with(LoopStatus::Active, Some("A"), 1);
        assert!(
            brief_owed_after(&base, PromotionTier::Brief, false),
            "none -> brief, no Brief"
        );
        assert!(
            brief_owed_after(&base, PromotionTier::Plan, false),
            "none -> plan, no Brief"
        );
        assert!(
            !brief_owed_after(&base, PromotionTier::Brief, true),
            "Brief recorded with the raise"
        );
        assert!(
            !brief_owed_after(&base, PromotionTier::None, false),
            "no raise"
        );
        let mut owed = base.clone();
        owed.brief_owed = true;
        owed.promotion_tier = Some("brief".into());
        assert!(
            !brief_owed_after(&owed, PromotionTier::None, false),
            "tier none clears the debt"
        );
        let mut owed_plan = owed.clone();
        owed_plan.promotion_tier = Some("plan".into());
        assert!(
            brief_owed_after(&owed_plan, PromotionTier::Brief, false),
            "plan -> brief keeps the debt"
        );
        assert!(
            !brief_owed_after(&owed, PromotionTier::Brief, true),
            "recording pays it"
        );

        let err = check_transition(&owed, "qa", Some("engineer_spawned"), "T").unwrap_err();
        assert_eq!(err.rules(), ["loop.brief-owed"]);
        assert!(
            check_transition(&owed, "qa", Some("engineer_returned"), "T").is_ok(),
            "the in-flight engineer may return"
        );
        assert!(
            check_transition(&owed, "qa", Some("spawned"), "T").is_ok(),
            "reviews go on"
        );
        let err = check_transition(&owed, "engineer", Some("spawned"), "T").unwrap_err();
        assert_eq!(
            err.rules(),
            ["loop.brief-owed"],
            "an engineer spawn by another name"
        );

        let mut with_brief = base.clone();
        with_brief.brief_path = Some("/p/brief.md".into());
        with_brief.promotion_tier = Some("brief".into());
        assert!(
            !brief_owed_after(&with_brief, PromotionTier::Plan, false),
            "brief -> plan with a Brief already on record owes nothing"
        );
    }
}
