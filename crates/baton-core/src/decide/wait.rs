//! `baton wait`: whether a piece of work can resume now, must wait for a rate limit to reset,
//! was taken over by someone else, or needs a person first. A pure function of the resume
//! decision the work already has; and, for `baton wait` with no ticket, one verdict over every
//! piece of work in the project.

use jiff::Timestamp;

use super::Verdict;
use super::continuation::Class;
use super::loop_resume::Mode;
use super::survey::SurveyVerdict;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// It can resume now (or this session already runs it).
    Ready,
    /// Nothing to resume: finished or never started.
    Nothing,
    /// A rate limit resets at this time; resume then.
    Until(Timestamp),
    /// Another live session runs it: not ours to resume.
    TakenOver,
    /// A person must decide before it resumes (partial work in the tree, no rule covers it, or
    /// the reset lies beyond the longest wait allowed).
    HumanFirst,
}

impl Wait {
    /// The verdict's name in `--json`.
    pub fn as_str(self) -> &'static str {
        match self {
            Wait::Ready => "ready",
            Wait::Nothing => "nothing",
            Wait::Until(_) => "wait",
            Wait::TakenOver => "taken_over",
            Wait::HumanFirst => "human_first",
        }
    }

    /// The exit status `baton wait` answers with: 0 when it is time (or nothing is left to
    /// wait for), 3 when something else took the work over, 4 when a person must decide.
    pub fn exit_code(self) -> u8 {
        match self {
            Wait::Ready | Wait::Nothing | Wait::Until(_) => 0,
            Wait::TakenOver => 3,
            Wait::HumanFirst => 4,
        }
    }
}

/// The wait for work whose resume verdict is `verdict` (`none`, `offer`, `live`, `own`, or a
/// refusal) with `mode` and, for a rate limit, `resume_after`. `deadline` is the latest time
/// the caller will wait until.
pub fn decide_wait(
    verdict: crate::Verdict,
    mode: Option<Mode>,
    resume_after: Option<Timestamp>,
    now: Timestamp,
    deadline: Option<Timestamp>,
) -> Wait {
    use crate::Verdict;
    match verdict {
        Verdict::None => Wait::Nothing,
        Verdict::Own => Wait::Ready,
        Verdict::Live => Wait::TakenOver,
        Verdict::Offer => match mode {
            Some(Mode::Confirm | Mode::Never) | None => Wait::HumanFirst,
            Some(Mode::Automatic | Mode::Respawn) => match resume_after {
                Some(t) if t > now && deadline.is_some_and(|d| t > d) => Wait::HumanFirst,
                Some(t) if t > now => Wait::Until(t),
                _ => Wait::Ready,
            },
        },
        _ => Wait::HumanFirst,
    }
}

/// The wait for a piece of work that is not a loop (the feature, the batch, a run, a ledger),
/// from what `baton resume` with no argument says of it: its verdict there (the first word
/// counts: `none (finished)` is `none`), its class when it is interrupted, and whether it is
/// degraded (a blocker a person must clear: a run that is `blocked` or asks to `confirm` its
/// alignment, a ledger phase marked BLOCKED, an unreadable or degraded feature).
///
/// - `none` (finished, not started) is [`Wait::Nothing`].
/// - `own` (this session is on it) is [`Wait::Ready`].
/// - `live` (another session is on it, or holds the run's live lease) is [`Wait::TakenOver`].
/// - `degraded`, `blocked`, `confirm`, anything degraded, and a `timeout` (a delegate hit its
///   cap: escalate or re-delegate, never a plain re-run) are [`Wait::HumanFirst`].
/// - Anything else (`offer`, `resume`, `derive`, and a run's `replan`, `critic` or `ratify`)
///   is interrupted and resumable: [`Wait::Ready`], except a rate limit whose reset
///   (`resets`, recorded for the active feature) is still ahead: [`Wait::Until`] it, or
///   [`Wait::HumanFirst`] past `deadline`. A rate limit whose reset time is unknown is ready, as
///   it is for a loop.
pub fn survey_wait(
    verdict: SurveyVerdict,
    class: Option<Class>,
    degraded: bool,
    resets: Option<Timestamp>,
    now: Timestamp,
    deadline: Option<Timestamp>,
) -> Wait {
    use SurveyVerdict::*;
    match verdict {
        Decided(Verdict::None) => Wait::Nothing,
        Decided(Verdict::Own) => Wait::Ready,
        // Another session's quiet work is not this session's to resume (`resume.quiet-aside`),
        // and nothing says that session is still on it.
        Quiet => Wait::Nothing,
        Decided(Verdict::Live) | LiveRun(_) => Wait::TakenOver,
        Degraded | Decided(Verdict::Blocked | Verdict::Confirm) => Wait::HumanFirst,
        _ if degraded || class == Some(Class::Timeout) => Wait::HumanFirst,
        _ => match resets.filter(|t| class == Some(Class::RateLimit) && *t > now) {
            Some(t) if deadline.is_some_and(|d| t > d) => Wait::HumanFirst,
            Some(t) => Wait::Until(t),
            None => Wait::Ready,
        },
    }
}

/// One verdict over many pieces of work: [`Wait::Ready`] if any is ready (there is work to do
/// now); else [`Wait::Until`] the earliest reset if any waits for one; else
/// [`Wait::HumanFirst`] if any needs a person; else [`Wait::TakenOver`] if any is taken over;
/// else [`Wait::Nothing`] (nothing at all counts as nothing).
pub fn combine(waits: impl IntoIterator<Item = Wait>) -> Wait {
    let (mut ready, mut until, mut human, mut taken) = (false, None::<Timestamp>, false, false);
    for w in waits {
        match w {
            Wait::Ready => ready = true,
            Wait::Until(t) => until = Some(until.map_or(t, |u| u.min(t))),
            Wait::HumanFirst => human = true,
            Wait::TakenOver => taken = true,
            Wait::Nothing => {}
        }
    }
    if ready {
        Wait::Ready
    } else if let Some(t) = until {
        Wait::Until(t)
    } else if human {
        Wait::HumanFirst
    } else if taken {
        Wait::TakenOver
    } else {
        Wait::Nothing
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wait_table() {
        let now: Timestamp = "2026-03-01T12:00:00Z".parse().unwrap();
        let later: Timestamp = "2026-03-01T13:00:00Z".parse().unwrap();
        let earlier: Timestamp = "2026-03-01T11:00:00Z".parse().unwrap();
        let soon: Timestamp = "2026-03-01T12:30:00Z".parse().unwrap();
        use Mode::*;
        // (verdict, mode, resume_after, deadline, the wait)
        type Row = (
            &'static str,
            Option<Mode>,
            Option<Timestamp>,
            Option<Timestamp>,
            Wait,
        );
        let rows: [Row; 12] = [
            ("none", None, None, None, Wait::Nothing),
            ("own", None, None, None, Wait::Ready),
            ("live", None, None, None, Wait::TakenOver),
            ("refused", None, None, None, Wait::HumanFirst),
            ("offer", Some(Confirm), Some(later), None, Wait::HumanFirst),
            ("offer", Some(Never), None, None, Wait::HumanFirst),
            ("offer", Some(Automatic), None, None, Wait::Ready),
            ("offer", Some(Automatic), Some(earlier), None, Wait::Ready),
            (
                "offer",
                Some(Automatic),
                Some(later),
                None,
                Wait::Until(later),
            ),
            (
                "offer",
                Some(Respawn),
                Some(later),
                Some(later),
                Wait::Until(later),
            ),
            (
                "offer",
                Some(Automatic),
                Some(later),
                Some(soon),
                Wait::HumanFirst,
            ),
            ("offer", Some(Automatic), Some(now), Some(soon), Wait::Ready),
        ];
        for (verdict, mode, after, deadline, want) in rows {
            let typed = *crate::Verdict::ALL.iter().find(|v| **v == verdict).unwrap();
            assert_eq!(
                decide_wait(typed, mode, after, now, deadline),
                want,
                "{verdict} {mode:?} {after:?} {deadline:?}"
            );
        }
    }

    #[test]
    fn exit_codes() {
        let t: Timestamp = "2026-03-01T13:00:00Z".parse().unwrap();
        let codes: Vec<u8> = [
            Wait::Ready,
            Wait::Nothing,
            Wait::Until(t),
            Wait::TakenOver,
            Wait::HumanFirst,
        ]
        .iter()
        .map(|w| w.exit_code())
        .collect();
        assert_eq!(codes, [0, 0, 0, 3, 4]);
    }

    #[test]
    fn combine_table() {
        let early: Timestamp = "2026-03-01T12:30:00Z".parse().unwrap();
        let late: Timestamp = "2026-03-01T13:00:00Z".parse().unwrap();
        use Wait::*;
        let rows: [(&[Wait], Wait); 13] = [
            (&[], Nothing),
            (&[Nothing, Nothing], Nothing),
            (&[Ready], Ready),
            (&[Until(late), Ready, HumanFirst, TakenOver], Ready),
            (&[Nothing, Until(late)], Until(late)),
            (&[Until(late), Until(early)], Until(early)),
            (&[Until(early), Until(late)], Until(early)),
            (&[HumanFirst, Until(late), TakenOver], Until(late)),
            (&[TakenOver, HumanFirst], HumanFirst),
            (&[HumanFirst, Nothing], HumanFirst),
            (&[TakenOver, Nothing], TakenOver),
            (&[Nothing, TakenOver, TakenOver], TakenOver),
            (&[Nothing, Ready, Nothing], Ready),
        ];
        for (waits, want) in rows {
            assert_eq!(combine(waits.iter().copied()), want, "{waits:?}");
        }
    }

    #[test]
    fn survey_wait_table() {
        use Class::*;
        use SurveyVerdict::{Decided, Degraded, Derive, LiveRun, Quiet};
        let rows: [(SurveyVerdict, Option<Class>, bool, Wait); 16] = [
            (Decided(Verdict::None), None, false, Wait::Nothing),
            (Decided(Verdict::Own), None, false, Wait::Ready),
            (Decided(Verdict::Live), None, false, Wait::TakenOver),
            (Quiet, None, false, Wait::Nothing),
            (LiveRun(Verdict::Ratify), None, false, Wait::TakenOver),
            (Degraded, None, true, Wait::HumanFirst),
            (
                Decided(Verdict::Blocked),
                Some(Crash),
                true,
                Wait::HumanFirst,
            ),
            (
                Decided(Verdict::Confirm),
                Some(Crash),
                true,
                Wait::HumanFirst,
            ),
            (Decided(Verdict::Offer), Some(RateLimit), false, Wait::Ready),
            (Decided(Verdict::Offer), Some(Pause), false, Wait::Ready),
            (Decided(Verdict::Resume), Some(Crash), false, Wait::Ready),
            (
                Decided(Verdict::Resume),
                Some(Timeout),
                false,
                Wait::HumanFirst,
            ),
            (Derive, Some(Left), false, Wait::Ready),
            (Derive, Some(Crash), true, Wait::HumanFirst),
            (Decided(Verdict::Ratify), Some(Crash), false, Wait::Ready),
            (Decided(Verdict::Replan), Some(Crash), false, Wait::Ready),
        ];
        let now: Timestamp = "2026-03-01T12:00:00Z".parse().unwrap();
        for (verdict, class, degraded, want) in rows {
            assert_eq!(
                survey_wait(verdict, class, degraded, None, now, None),
                want,
                "{verdict} {class:?} {degraded}"
            );
        }
        // The feature's rate limit with its recorded reset: wait until it, within the deadline.
        let later: Timestamp = "2026-03-01T13:00:00Z".parse().unwrap();
        let earlier: Timestamp = "2026-03-01T11:00:00Z".parse().unwrap();
        let soon: Timestamp = "2026-03-01T12:30:00Z".parse().unwrap();
        let resume = Decided(Verdict::Resume);
        let limited =
            |resets, deadline| survey_wait(resume, Some(RateLimit), false, resets, now, deadline);
        assert_eq!(limited(Some(later), None), Wait::Until(later));
        assert_eq!(limited(Some(earlier), None), Wait::Ready);
        assert_eq!(limited(None, None), Wait::Ready);
        assert_eq!(limited(Some(later), Some(soon)), Wait::HumanFirst);
        assert_eq!(
            survey_wait(resume, Some(Crash), false, Some(later), now, None),
            Wait::Ready,
            "a reset means nothing to another class"
        );
    }
}
