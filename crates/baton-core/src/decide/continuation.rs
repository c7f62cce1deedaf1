//! Session continuation: what happened to a piece of work nobody is running any more, and the
//! recovery path that fits it. Five classes, after the continuation protocol (seed 004) plus
//! baton's own rate limit; each is a different recovery, so telling them apart is the point:
//! a timeout handled as a crash re-runs a delegate that already hit its cap.
//!
//! The caller has already decided that the work is interrupted (not finished, not live); this
//! decides how.

use jiff::Timestamp;
use serde::Serialize;

use super::Reason;
use crate::model::InterruptReason;
use crate::time::format_ts;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    /// A delegate hit its cap: REVIEW_NEEDED or a partial result. Escalate or re-delegate with
    /// a tighter scope; never a plain re-run.
    Timeout,
    /// No clean end and nobody on it: the state is unknown. Re-run the gates first.
    Crash,
    /// A delegate returned and nobody processed what it returned, or the session ended between
    /// turns with the work unfinished: recontextualize.
    Left,
    /// An API limit ended the turn: wait for the reset, then resume.
    RateLimit,
    /// Explicitly paused, clean and checkpointed: resume from the next task.
    Pause,
}

impl Class {
    pub fn as_str(self) -> &'static str {
        match self {
            Class::Timeout => "timeout",
            Class::Crash => "crash",
            Class::Left => "left",
            Class::RateLimit => "rate_limit",
            Class::Pause => "pause",
        }
    }
}

/// The evidence about one interrupted piece of work.
#[derive(Debug, Clone, Default)]
pub struct Signals<'a> {
    /// The interrupt the state records, by its reason (`rate_limit`, `pause`,
    /// `session_expiry`, `unknown`); `None` when the work simply stopped being written.
    pub interrupt_reason: Option<&'a str>,
    /// An explicit pause mark (`baton pause`) newer than the work's last write.
    pub pause_mark: bool,
    /// What the pause said, shown to the next session.
    pub pause_reason: Option<&'a str>,
    /// Nothing uncommitted in the work's scope; `None` when unknown.
    pub tree_clean: Option<bool>,
    /// The work stopped at a boundary its protocol can resume from (a finished task, an
    /// iteration boundary).
    pub checkpointed: bool,
    /// A REVIEW_NEEDED artifact for this work.
    pub review_needed: bool,
    /// A delegate left a partial result (work in the tree it never finished).
    pub partial_result: bool,
    /// The last thing recorded is a delegate's return that nothing acted on.
    pub returned_unprocessed: bool,
    /// When a rate limit resets, when known.
    pub resume_after: Option<Timestamp>,
    /// The command that re-runs the gates before a crashed piece of work goes on.
    pub gates: Option<&'a str>,
    /// What resuming means for this work ("resume from T-04", "phase qa, iteration 2").
    pub resume_from: &'a str,
}

/// A class, the evidence that decided it, and the recovery it calls for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Classified {
    pub class: Class,
    pub reasons: Vec<Reason>,
    pub next: String,
    /// A rate limit that has not reset yet: waiting is the only step.
    pub waiting: bool,
}

/// Decides the class of interrupted work. Order matters: a cap-hit delegate is a timeout
/// whatever else is true of it (the seed's anti-pattern is treating it as a crash), an explicit
/// rate limit or pause outranks the absence of a clean end, and a crash is what remains.
pub fn classify(s: &Signals, now: Timestamp) -> Classified {
    let from = s.resume_from;
    if s.review_needed || s.partial_result {
        let why = if s.review_needed {
            Reason::new(
                crate::Rule::ContinueTimeoutReviewNeeded,
                "a delegate hit its cap and left REVIEW_NEEDED",
            )
        } else {
            Reason::new(
                crate::Rule::ContinueTimeoutPartial,
                "a delegate hit its cap and left a partial result",
            )
        };
        return Classified {
            class: Class::Timeout,
            reasons: vec![why],
            next: format!(
                "escalate to a human, or re-delegate {from} with a tighter scope; do not re-run it as it was"
            ),
            waiting: false,
        };
    }
    if s.interrupt_reason.and_then(InterruptReason::parse) == Some(InterruptReason::RateLimit) {
        let waiting = s.resume_after.is_some_and(|t| t > now);
        let (reason, next) = match s.resume_after {
            Some(t) if waiting => (
                format!(
                    "an API rate limit ended the turn; it resets at {}",
                    format_ts(t)
                ),
                format!("wait until {}, then resume {from}", format_ts(t)),
            ),
            Some(t) => (
                format!(
                    "an API rate limit ended the turn; it reset at {}",
                    format_ts(t)
                ),
                format!("resume {from}: the limit has reset"),
            ),
            None => (
                "an API rate limit ended the turn; its reset time is unknown".to_string(),
                format!("resume {from} once the limit has reset"),
            ),
        };
        return Classified {
            class: Class::RateLimit,
            reasons: vec![Reason::new(crate::Rule::ContinueRateLimit, reason)],
            next,
            waiting,
        };
    }
    if s.pause_mark || s.interrupt_reason == Some("pause") {
        let mut reasons = vec![Reason::new(
            crate::Rule::ContinuePause,
            match s.pause_reason {
                Some(why) => format!("explicitly paused: {}", crate::text::esc(why)),
                None => "explicitly paused".to_string(),
            },
        )];
        let mut next = format!("resume from the next step: {from}");
        if s.tree_clean == Some(false) {
            reasons.push(Reason::new(
                crate::Rule::ContinuePauseUnclean,
                "the tree has uncommitted changes: the pause was not at a clean checkpoint",
            ));
            next = format!("look at the uncommitted changes (`git status`) first, then {next}");
        } else if !s.checkpointed {
            reasons.push(Reason::new(
                crate::Rule::ContinuePauseUnclean,
                "it was paused in the middle of a step, not at a checkpoint",
            ));
            next = format!("check the step in progress first, then {next}");
        }
        return Classified {
            class: Class::Pause,
            reasons,
            next,
            waiting: false,
        };
    }
    if s.returned_unprocessed {
        return Classified {
            class: Class::Left,
            reasons: vec![Reason::new(
                crate::Rule::ContinueLeft,
                "a delegate returned and nothing processed its result",
            )],
            next: format!(
                "recontextualize: read what the delegate returned, then decide the next action ({from})"
            ),
            waiting: false,
        };
    }
    // A session that ended between turns (its last turn closed, then the session ended: a
    // headless `claude -p` returning, a person quitting) did not end unexpectedly, so it is no
    // crash: it returned with the work unfinished and nobody took the work up, the seed's
    // `left`. Uncommitted changes it left are said beside it, to look at first.
    if s.interrupt_reason.and_then(InterruptReason::parse) == Some(InterruptReason::SessionExpiry) {
        let mut reasons = vec![Reason::new(
            crate::Rule::ContinueLeftEnded,
            match s.tree_clean {
                Some(true) => {
                    "the session ended between turns with the work unfinished; the tree is clean"
                }
                _ => "the session ended between turns with the work unfinished",
            },
        )];
        let mut next = format!(
            "recontextualize: read where the session stopped (its last checkpoint and history), then go on from {from}"
        );
        if s.tree_clean == Some(false) {
            reasons.push(Reason::new(
                crate::Rule::ContinueLeftDirty,
                "the tree has uncommitted changes the session left",
            ));
            next = format!("look at the uncommitted changes (`git status`) first, then {next}");
        }
        return Classified {
            class: Class::Left,
            reasons,
            next,
            waiting: false,
        };
    }
    let mut reasons = vec![match s.interrupt_reason {
        Some(reason) => Reason::new(
            crate::Rule::ContinueCrash,
            format!("interrupted ({reason}) without a clean end: its state is unknown"),
        ),
        None => Reason::new(
            crate::Rule::ContinueCrash,
            "it stopped without a clean end and nobody is on it: its state is unknown",
        ),
    }];
    if s.tree_clean == Some(false) {
        reasons.push(Reason::new(
            crate::Rule::ContinueCrashDirty,
            "the tree has uncommitted changes",
        ));
    }
    let next = match s.gates {
        Some(gates) => format!("re-run the gates first ({gates}), then resume {from}"),
        None => format!("check `git status` and the last marker first, then resume {from}"),
    };
    Classified {
        class: Class::Crash,
        reasons,
        next,
        waiting: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> Timestamp {
        "2026-03-01T12:00:00Z".parse().unwrap()
    }

    fn base() -> Signals<'static> {
        Signals {
            tree_clean: Some(true),
            checkpointed: true,
            resume_from: "T-04",
            ..Signals::default()
        }
    }

    /// One row per class and per signal combination the seed names.
    #[test]
    fn classification_table() {
        let later: Timestamp = "2026-03-01T12:30:00Z".parse().unwrap();
        let earlier: Timestamp = "2026-03-01T11:30:00Z".parse().unwrap();
        #[rustfmt::skip]
        let rows: Vec<(&str, Signals, Class, &[&str], bool)> = vec![
            ("paused, clean, checkpointed",
                Signals { pause_mark: true, ..base() }, Class::Pause, &["continue.pause"], false),
            ("interrupted with reason pause",
                Signals { interrupt_reason: Some("pause"), ..base() }, Class::Pause, &["continue.pause"], false),
            ("paused with a dirty tree",
                Signals { pause_mark: true, tree_clean: Some(false), ..base() }, Class::Pause, &["continue.pause", "continue.pause-unclean"], false),
            ("paused mid-step",
                Signals { pause_mark: true, checkpointed: false, ..base() }, Class::Pause, &["continue.pause", "continue.pause-unclean"], false),
            ("no clean end, stale, clean tree",
                base(), Class::Crash, &["continue.crash"], false),
            ("no clean end, dirty tree",
                Signals { tree_clean: Some(false), checkpointed: false, ..base() }, Class::Crash, &["continue.crash", "continue.crash-dirty"], false),
            ("session ended between turns, clean tree",
                Signals { interrupt_reason: Some("session_expiry"), ..base() }, Class::Left, &["continue.left-ended"], false),
            ("session ended between turns, dirty tree",
                Signals { interrupt_reason: Some("session_expiry"), tree_clean: Some(false), ..base() }, Class::Left, &["continue.left-ended", "continue.left-dirty"], false),
            ("a turn that died",
                Signals { interrupt_reason: Some("unknown"), ..base() }, Class::Crash, &["continue.crash"], false),
            ("review needed",
                Signals { review_needed: true, ..base() }, Class::Timeout, &["continue.timeout-review-needed"], false),
            ("partial result",
                Signals { partial_result: true, tree_clean: Some(false), ..base() }, Class::Timeout, &["continue.timeout-partial"], false),
            ("delegate returned, unprocessed",
                Signals { returned_unprocessed: true, ..base() }, Class::Left, &["continue.left"], false),
            ("rate limit, reset ahead",
                Signals { interrupt_reason: Some("rate_limit"), resume_after: Some(later), ..base() }, Class::RateLimit, &["continue.rate-limit"], true),
            ("rate limit, reset passed",
                Signals { interrupt_reason: Some("rate_limit"), resume_after: Some(earlier), ..base() }, Class::RateLimit, &["continue.rate-limit"], false),
            ("rate limit, reset unknown",
                Signals { interrupt_reason: Some("rate_limit"), ..base() }, Class::RateLimit, &["continue.rate-limit"], false),
            ("review needed outranks a rate limit",
                Signals { interrupt_reason: Some("rate_limit"), review_needed: true, ..base() }, Class::Timeout, &["continue.timeout-review-needed"], false),
            ("a pause outranks a returned delegate",
                Signals { pause_mark: true, returned_unprocessed: true, ..base() }, Class::Pause, &["continue.pause"], false),
        ];
        for (name, signals, class, rules, waiting) in rows {
            let c = classify(&signals, now());
            let got: Vec<&str> = c.reasons.iter().map(|r| r.rule.id()).collect();
            assert_eq!(
                (c.class, got.as_slice(), c.waiting),
                (class, rules, waiting),
                "{name}"
            );
            assert!(!c.next.is_empty(), "{name}: no next step");
        }
    }

    /// The seed's named anti-pattern: a delegate that hit its cap is never handled as a crash,
    /// whatever else looks like one (no clean end, a dirty tree, no checkpoint).
    #[test]
    fn a_timeout_is_never_classified_as_a_crash() {
        for interrupt_reason in [None, Some("unknown"), Some("session_expiry")] {
            for tree_clean in [None, Some(true), Some(false)] {
                for checkpointed in [false, true] {
                    let s = Signals {
                        interrupt_reason,
                        tree_clean,
                        checkpointed,
                        review_needed: true,
                        gates: Some("baton ledger derive plans/x"),
                        ..base()
                    };
                    let c = classify(&s, now());
                    assert_eq!(c.class, Class::Timeout);
                    assert!(!c.next.contains("re-run the gates"), "{}", c.next);
                    assert!(c.next.contains("re-delegate"), "{}", c.next);
                }
            }
        }
    }

    #[test]
    fn a_crash_names_the_gates_to_re_run_first() {
        let s = Signals {
            gates: Some("`baton ledger derive plans/auth`"),
            ..base()
        };
        let c = classify(&s, now());
        assert_eq!(c.class, Class::Crash);
        assert!(
            c.next
                .starts_with("re-run the gates first (`baton ledger derive plans/auth`)")
        );
    }
}
