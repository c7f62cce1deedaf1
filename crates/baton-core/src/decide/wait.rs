//! `baton wait`: whether a piece of work can resume now, must wait for a rate limit to reset,
//! was taken over by someone else, or needs a person first. A pure function of the resume
//! decision the work already has.

use jiff::Timestamp;

use super::loop_resume::Mode;

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
    verdict: &str,
    mode: Option<Mode>,
    resume_after: Option<Timestamp>,
    now: Timestamp,
    deadline: Option<Timestamp>,
) -> Wait {
    match verdict {
        "none" => Wait::Nothing,
        "own" => Wait::Ready,
        "live" => Wait::TakenOver,
        "offer" => match mode {
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
            assert_eq!(
                decide_wait(verdict, mode, after, now, deadline),
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
}
