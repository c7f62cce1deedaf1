//! `baton supervise`: after each run of the agent, whether to relaunch it and when, or to stop
//! and say why. Only a rate limit is waited out; everything a person must see stops it.

use jiff::{SignedDuration, Timestamp};

use crate::model::InterruptReason;

/// How one run of the agent left the work, as the state and the hooks recorded it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing of the work is left unfinished.
    Finished,
    /// Interrupted by a rate limit, with the reset time when one is known.
    RateLimited { reset: Option<Timestamp> },
    /// Interrupted in a way a person must see: a crash, a timeout, a state no rule covers,
    /// partial work in the tree. Never retried blindly.
    NeedsPerson { why: String },
    /// Another live session runs the work now.
    TakenOver { by: String },
    /// The supervisor was told to stop (SIGINT, SIGTERM).
    Signalled,
}

/// What the supervisor does next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// Relaunch the agent in its resume form at this time.
    Relaunch { at: Timestamp, why: String },
    /// Stop with this exit status (0 finished, 3 taken over, 4 a person must decide, 1 a
    /// signal or the restarts used up) and say why.
    Stop { status: u8, why: String },
}

/// The wait before relaunching when a rate limit named no reset time: `first`, doubling with
/// each attempt, never above `cap`, times a jitter factor between 0.8 and 1.2 from `jitter`
/// (a number in [0, 1)) so that many supervisors do not all retry at one moment.
pub fn backoff(
    attempt: u32,
    first: SignedDuration,
    cap: SignedDuration,
    jitter: f64,
) -> SignedDuration {
    let doubled = first
        .checked_mul(1i32.checked_shl(attempt.min(30)).unwrap_or(i32::MAX))
        .unwrap_or(cap)
        .min(cap);
    let jitter = if jitter.is_nan() {
        0.0
    } else {
        jitter.clamp(0.0, 1.0)
    };
    let factor = 0.8 + 0.4 * jitter;
    SignedDuration::try_from_secs_f64(doubled.as_secs_f64() * factor)
        .unwrap_or(cap)
        .min(cap)
}

/// The default backoff: 1 minute doubling to 30.
pub const BACKOFF_FIRST: SignedDuration = SignedDuration::from_secs(60);
pub const BACKOFF_CAP: SignedDuration = SignedDuration::from_secs(30 * 60);

/// The next step after a run that left `outcome`, with `restarts` relaunches done so far out
/// of at most `max_restarts`.
pub fn next_step(
    outcome: &Outcome,
    restarts: u32,
    max_restarts: u32,
    now: Timestamp,
    (first, cap): (SignedDuration, SignedDuration),
    jitter: f64,
) -> Next {
    match outcome {
        Outcome::Finished => Next::Stop {
            status: 0,
            why: "the work is finished".into(),
        },
        Outcome::NeedsPerson { why } => Next::Stop {
            status: 4,
            why: format!("a person must see this before it goes on: {why}"),
        },
        Outcome::TakenOver { by } => Next::Stop {
            status: 3,
            why: format!("another live session runs the work now ({by})"),
        },
        Outcome::Signalled => Next::Stop {
            status: 1,
            why: "stopped by a signal; the work is recorded as interrupted".into(),
        },
        Outcome::RateLimited { .. } if restarts >= max_restarts => Next::Stop {
            status: 1,
            why: format!(
                "a rate limit again, after {restarts} relaunches: the limit of {max_restarts} is used up"
            ),
        },
        Outcome::RateLimited { reset: Some(t) } if *t > now => Next::Relaunch {
            at: *t,
            why: format!("the rate limit resets at {}", crate::time::format_ts(*t)),
        },
        Outcome::RateLimited { reset: Some(_) } => Next::Relaunch {
            at: now,
            why: "the rate limit has reset".into(),
        },
        Outcome::RateLimited { reset: None } => {
            let wait = backoff(restarts, first, cap, jitter);
            Next::Relaunch {
                at: now.checked_add(wait).unwrap_or(now),
                why: format!(
                    "the rate limit named no reset time: backing off {}",
                    crate::time::human_age(wait)
                ),
            }
        }
    }
}

/// How the agent process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    /// Killed by this signal.
    Signal(i32),
}

/// One piece of work the attempt's sessions touched, as it stands after the agent ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Carried {
    /// How it is named to a person: `loop T-1`.
    pub name: String,
    /// Its interrupt reason, when it is interrupted.
    pub interrupted: Option<String>,
    /// What waiting for it gives (`decide_wait`), when it is interrupted or owned elsewhere.
    pub wait: Option<super::wait::Wait>,
    /// Still active in a session of this attempt after the agent ended: nothing recorded how
    /// it stopped.
    pub left_active: bool,
}

/// Everything known about one run of the agent once it has ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    pub exit: Exit,
    /// Whether the agent's hooks told the supervisor anything (a session start at least).
    pub heard: bool,
    /// The signal the supervisor itself was sent while the agent ran.
    pub signalled: Option<i32>,
    /// Whether the hooks saw a rate limit end a turn, and when the evidence they read said it
    /// resets (a reset recorded on the work by an earlier attempt is old news).
    pub hook_rate_limit: bool,
    pub hook_resets: Vec<Timestamp>,
    /// The hooks recorded a turn that died with nothing known (`unknown`); a session that
    /// simply ended (`session_expiry`) is not this.
    pub hook_other: Option<String>,
    pub carried: Vec<Carried>,
}

/// The outcome of an attempt, checked in this order: a signal to the supervisor; work now run
/// by another live session; the agent killed by a signal (a crash); a rate limit (unless a
/// piece of work then needs a person first); any other interrupt; a failing exit with nothing
/// recorded; else finished.
pub fn outcome(a: &Attempt) -> Outcome {
    use super::wait::Wait;
    if a.signalled.is_some() {
        return Outcome::Signalled;
    }
    if !a.heard {
        return Outcome::NeedsPerson {
            why: "the agent's hooks never reported, so nothing tells how it ended: check them with `baton init <client> --dry-run` (Codex also needs `--trust-project`)".into(),
        };
    }
    if let Some(c) = a.carried.iter().find(|c| c.wait == Some(Wait::TakenOver)) {
        return Outcome::TakenOver {
            by: format!("{} is owned by another live session", c.name),
        };
    }
    if let Exit::Signal(sig) = a.exit {
        return Outcome::NeedsPerson {
            why: format!("the agent was killed by signal {sig} (a crash), so it is not retried"),
        };
    }
    let rate_limited = a.hook_rate_limit
        || a.carried.iter().any(|c| {
            c.interrupted.as_deref().and_then(InterruptReason::parse)
                == Some(InterruptReason::RateLimit)
        });
    if rate_limited {
        if let Some(c) = a.carried.iter().find(|c| c.wait == Some(Wait::HumanFirst)) {
            return Outcome::NeedsPerson {
                why: format!(
                    "{} was stopped by a rate limit, but its resume needs a person first (`baton resume` says why)",
                    c.name
                ),
            };
        }
        return Outcome::RateLimited {
            reset: a.hook_resets.iter().copied().max(),
        };
    }
    if let Some(c) = a.carried.iter().find(|c| c.interrupted.is_some()) {
        let reason = c.interrupted.as_deref().unwrap_or_default();
        let what = match InterruptReason::parse(reason) {
            Some(InterruptReason::SessionExpiry) => {
                "the agent ended its run before the work was finished".to_string()
            }
            Some(InterruptReason::Unknown) => {
                "a turn died and nothing says it was a rate limit".to_string()
            }
            _ => format!("interrupted ({reason})"),
        };
        return Outcome::NeedsPerson {
            why: format!("{} is interrupted: {what}", c.name),
        };
    }
    if let Some(c) = a.carried.iter().find(|c| c.left_active) {
        return Outcome::NeedsPerson {
            why: format!(
                "the agent ended with {} still active and nothing recorded why",
                c.name
            ),
        };
    }
    match (a.exit, &a.hook_other) {
        (Exit::Code(0), None) => Outcome::Finished,
        (Exit::Code(code), Some(reason)) => Outcome::NeedsPerson {
            why: format!(
                "the agent exited {code} and its hooks recorded `{reason}`, not a rate limit"
            ),
        },
        (Exit::Code(code), None) => Outcome::NeedsPerson {
            why: format!("the agent exited {code} and no rate limit was recorded"),
        },
        (Exit::Signal(_), _) => unreachable!("handled above"),
    }
}

/// A relaunch is never earlier than the carried work itself may resume (a rate limit recorded
/// without a reset time waits the loop protocol's default): relaunched sooner, the agent would
/// only be told to wait.
pub fn not_before(next: Next, carried: &[Carried]) -> Next {
    use super::wait::Wait;
    match next {
        Next::Relaunch { at, why } => {
            let work = carried
                .iter()
                .filter_map(|c| match c.wait {
                    Some(Wait::Until(t)) if t > at => Some(t),
                    _ => None,
                })
                .max();
            match work {
                Some(t) => Next::Relaunch {
                    at: t,
                    why: format!(
                        "{why}; the work itself may resume at {}",
                        crate::time::format_ts(t)
                    ),
                },
                None => Next::Relaunch { at, why },
            }
        }
        stop => stop,
    }
}

/// The prompt a relaunched agent is given: the packet its session-start hook injects says
/// where the work stands.
pub const CONTINUE_PROMPT: &str = "Continue the work from where it stopped. The resume packet \
above (from baton) says where each piece of work stands: follow its steps, taking the work \
back with `baton resume accept` first.";

/// The relaunch prompt for a task: the continue prompt, then the task as first given. A client
/// may keep no trace of a prompt whose first request was refused (Gemini CLI resumes such a
/// session without it), and the packet says where work stands, not what the task was.
pub fn continue_prompt(task: &str) -> String {
    format!("{CONTINUE_PROMPT}\n\nThe task, as first given:\n{task}")
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: &str = "2026-03-01T12:00:00Z";

    #[test]
    fn backoff_doubles_from_a_minute_to_thirty_with_jitter() {
        let b = |attempt, jitter| backoff(attempt, BACKOFF_FIRST, BACKOFF_CAP, jitter).as_secs();
        // Without jitter's spread (the middle factor, 1.0).
        let middle: Vec<i64> = (0..8).map(|a| b(a, 0.5)).collect();
        assert_eq!(middle, [60, 120, 240, 480, 960, 1800, 1800, 1800]);
        // The spread is 0.8x to 1.2x, never above the cap.
        assert_eq!(b(0, 0.0), 48);
        assert_eq!(b(0, 0.999_999), 71);
        assert_eq!(b(5, 0.999_999), 1800);
        assert_eq!(b(4, 0.0), 768);
        // Huge attempts and odd jitter stay in range.
        assert_eq!(b(u32::MAX, 0.5), 1800);
        assert_eq!(b(0, f64::NAN), 48);
        assert_eq!(b(0, 7.0), 72);
    }

    #[test]
    fn every_stop_condition_and_every_relaunch() {
        let now: Timestamp = NOW.parse().unwrap();
        let later: Timestamp = "2026-03-01T13:00:00Z".parse().unwrap();
        let earlier: Timestamp = "2026-03-01T11:00:00Z".parse().unwrap();
        let step = |outcome: Outcome, restarts| {
            next_step(
                &outcome,
                restarts,
                3,
                now,
                (BACKOFF_FIRST, BACKOFF_CAP),
                0.5,
            )
        };
        let stop = |n: Next| match n {
            Next::Stop { status, .. } => Some(status),
            Next::Relaunch { .. } => None,
        };
        let at = |n: Next| match n {
            Next::Relaunch { at, .. } => Some(at),
            Next::Stop { .. } => None,
        };
        assert_eq!(stop(step(Outcome::Finished, 0)), Some(0));
        let crash = Outcome::NeedsPerson {
            why: "crash: the turn died and nothing says why".into(),
        };
        assert_eq!(stop(step(crash, 0)), Some(4));
        let taken = Outcome::TakenOver { by: "B".into() };
        assert_eq!(stop(step(taken, 0)), Some(3));
        assert_eq!(stop(step(Outcome::Signalled, 0)), Some(1));
        let limited = |reset| Outcome::RateLimited { reset };
        assert_eq!(
            stop(step(limited(Some(later)), 3)),
            Some(1),
            "restarts used up"
        );
        assert_eq!(at(step(limited(Some(later)), 2)), Some(later));
        assert_eq!(at(step(limited(Some(earlier)), 0)), Some(now));
        assert_eq!(
            at(step(limited(None), 1)),
            Some(now.checked_add(SignedDuration::from_secs(120)).unwrap())
        );
    }

    #[test]
    fn the_outcome_of_an_attempt() {
        use super::super::wait::Wait;
        let t: Timestamp = "2026-03-01T13:00:00Z".parse().unwrap();
        let t2: Timestamp = "2026-03-01T13:30:00Z".parse().unwrap();
        let base = Attempt {
            exit: Exit::Code(0),
            heard: true,
            signalled: None,
            hook_rate_limit: false,
            hook_resets: vec![],
            hook_other: None,
            carried: vec![],
        };
        let item = |interrupted: Option<&str>, wait| Carried {
            name: "loop T-1".into(),
            interrupted: interrupted.map(Into::into),
            wait,
            left_active: false,
        };
        let with = |f: &dyn Fn(&mut Attempt)| {
            let mut a = base.clone();
            f(&mut a);
            outcome(&a)
        };
        let kind = |o: Outcome| match o {
            Outcome::Finished => "finished",
            Outcome::RateLimited { .. } => "rate_limited",
            Outcome::NeedsPerson { .. } => "person",
            Outcome::TakenOver { .. } => "taken_over",
            Outcome::Signalled => "signalled",
        };
        assert_eq!(kind(outcome(&base)), "finished");
        assert_eq!(kind(with(&|a| a.heard = false)), "person", "hooks silent");
        assert_eq!(kind(with(&|a| a.exit = Exit::Code(1))), "person");
        assert_eq!(
            kind(with(&|a| a.hook_other = Some("unknown".into()))),
            "person"
        );
        // A crash is never retried, even with a rate limit on record.
        assert_eq!(
            kind(with(&|a| {
                a.exit = Exit::Signal(9);
                a.hook_rate_limit = true;
            })),
            "person"
        );
        assert_eq!(
            kind(with(&|a| {
                a.exit = Exit::Code(1);
                a.signalled = Some(15);
            })),
            "signalled"
        );
        assert_eq!(
            kind(with(
                &|a| a.carried = vec![item(None, Some(Wait::TakenOver))]
            )),
            "taken_over"
        );
        // A rate limit: the latest reset known, from the work or the hooks.
        assert_eq!(
            with(&|a| {
                a.exit = Exit::Code(1);
                a.carried = vec![item(Some("rate_limit"), Some(Wait::Until(t)))];
                a.hook_resets = vec![t2, t];
            }),
            Outcome::RateLimited { reset: Some(t2) }
        );
        assert_eq!(
            with(&|a| {
                a.exit = Exit::Code(1);
                a.hook_rate_limit = true;
            }),
            Outcome::RateLimited { reset: None }
        );
        // The loop's own default wait (no reset named) is no reset time: the backoff decides,
        // and the relaunch waits for the work.
        let defaulted = item(Some("rate_limit"), Some(Wait::Until(t)));
        let limited = with(&|a| a.carried = vec![defaulted.clone()]);
        assert_eq!(limited, Outcome::RateLimited { reset: None });
        let now: Timestamp = NOW.parse().unwrap();
        let soon = next_step(&limited, 0, 3, now, (BACKOFF_FIRST, BACKOFF_CAP), 0.5);
        assert!(matches!(soon, Next::Relaunch { at, .. } if at < t));
        let moved = not_before(soon, std::slice::from_ref(&defaulted));
        assert!(
            matches!(moved, Next::Relaunch { at, .. } if at == t),
            "{moved:?}"
        );
        let later = Next::Relaunch {
            at: t2,
            why: String::new(),
        };
        assert_eq!(not_before(later.clone(), &[defaulted]), later);
        // ...unless the work then needs a person (`never` or `confirm` mode).
        assert_eq!(
            kind(with(&|a| {
                a.carried = vec![item(Some("rate_limit"), Some(Wait::HumanFirst))];
            })),
            "person"
        );
        assert_eq!(
            kind(with(
                &|a| a.carried = vec![item(Some("session_expiry"), Some(Wait::Ready))]
            )),
            "person"
        );
        assert_eq!(
            kind(with(&|a| {
                a.carried = vec![Carried {
                    left_active: true,
                    ..item(None, None)
                }];
            })),
            "person"
        );
    }
}
