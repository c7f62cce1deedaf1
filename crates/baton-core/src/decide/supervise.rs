//! `baton supervise`: after each run of the agent, whether to relaunch it and when, or to stop
//! and say why. Only a rate limit is waited out; everything a person must see stops it.

use jiff::{SignedDuration, Timestamp};

use crate::model::InterruptReason;
use crate::time::{format_utc, time_left};

/// How one run of the agent left the work, as the state and the hooks recorded it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing of the work is left unfinished.
    Finished,
    /// Interrupted by a rate limit, with the reset time when one is known.
    RateLimited { reset: Option<Timestamp> },
    /// The API was overloaded (HTTP 529) and no rate limit was seen: a transient failure,
    /// retried with the backoff like a rate limit that named no reset.
    Overloaded,
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
    Relaunch {
        at: Timestamp,
        why: String,
        /// The reset the evidence named, when the wait is for one.
        reset: Option<Timestamp>,
        /// Where the relaunch time comes from.
        source: Source,
        /// Whether the relaunch counts against `--max-restarts` and the give-up horizon: a
        /// relaunch blind to when the limit resets does, one after a named reset does not.
        counted: bool,
    },
    /// Stop with this exit status (0 finished, 3 taken over, 4 a person must decide, 1 a
    /// signal or the retries given up) and say why.
    Stop { status: u8, why: String },
}

/// Where a relaunch time comes from, as the journal's `supervise.wait` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The reset the rate limit's error named (read by the hooks from the client's evidence).
    Error,
    /// The backoff: the rate limit named no reset still to come.
    Backoff,
    /// The backoff after the API was overloaded.
    Overloaded,
    /// The carried work itself records a later reset (`resume_after`).
    Work,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Error => "error",
            Source::Backoff => "backoff",
            Source::Overloaded => "overloaded",
            Source::Work => "work",
        }
    }
}

/// When supervise gives up on retries blind to when the limit resets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// The backoff's first wait and its cap.
    pub backoff: (SignedDuration, SignedDuration),
    /// How long after the first of a run of blind retries to go on retrying: a rate limit
    /// (or overload) at or after that stops supervise. The default outlasts a 5-hour window.
    pub give_up_after: SignedDuration,
    /// At most this many counted relaunches, when set.
    pub max_restarts: Option<u32>,
}

/// The default give-up horizon: a 5-hour usage window, plus an hour of margin.
pub const GIVE_UP_AFTER: SignedDuration = SignedDuration::from_hours(6);

/// The retries counted so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// Relaunches that did not get past a limit: after a rate limit with no reset still to
    /// come, or an overload.
    pub counted: u32,
    /// When the current run of counted retries began (the first such limit), if one runs.
    pub since: Option<Timestamp>,
}

impl Tally {
    /// The tally after `next`, decided at `now`: a counted relaunch adds one (and starts the
    /// run of blind retries if none runs); a relaunch after a named reset ends that run.
    pub fn after(self, next: &Next, now: Timestamp) -> Tally {
        match next {
            Next::Relaunch { counted: true, .. } => Tally {
                counted: self.counted + 1,
                since: Some(self.since.unwrap_or(now)),
            },
            Next::Relaunch { counted: false, .. } => Tally {
                counted: self.counted,
                since: None,
            },
            Next::Stop { .. } => self,
        }
    }
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

/// The next step after a run that left `outcome`, with `tally` counted so far.
///
/// A rate limit whose error named a reset still to come is waited for, however far off (a
/// weekly limit days away included), and the relaunch is not counted. A rate limit with no
/// reset still to come, and an overload, are retried with the backoff and counted: supervise
/// gives up when one comes `policy.give_up_after` or more after the first of the run, or
/// after `policy.max_restarts` counted relaunches. Each retry is at most the backoff's cap
/// after the last, so the last one lands after the horizon.
pub fn next_step(
    outcome: &Outcome,
    tally: Tally,
    policy: &Policy,
    now: Timestamp,
    jitter: f64,
) -> Next {
    let (first, cap) = policy.backoff;
    let blind = |source: Source, what: &str| {
        let since = tally.since.unwrap_or(now);
        let lasted = now.duration_since(since);
        if let Some(max) = policy.max_restarts
            && tally.counted >= max
        {
            return Next::Stop {
                status: 1,
                why: format!(
                    "{what} again, after {} relaunches that did not get past it: the --max-restarts of {max} is used up",
                    tally.counted
                ),
            };
        }
        if tally.since.is_some() && lasted >= policy.give_up_after {
            return Next::Stop {
                status: 1,
                why: format!(
                    "{what} again, {} after the first with no reset named: past the --give-up-after of {}",
                    crate::time::human_age(lasted),
                    crate::time::human_age(policy.give_up_after)
                ),
            };
        }
        let wait = backoff(tally.counted, first, cap, jitter);
        Next::Relaunch {
            at: now.checked_add(wait).unwrap_or(now),
            why: format!(
                "{what}, with no reset named: backing off {}",
                crate::time::human_age(wait)
            ),
            reset: None,
            source,
            counted: true,
        }
    };
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
        Outcome::RateLimited { reset: Some(t) } if *t > now => Next::Relaunch {
            at: *t,
            why: format!("the rate limit resets at {}", format_utc(*t)),
            reset: Some(*t),
            source: Source::Error,
            counted: false,
        },
        // A reset already past says nothing of when the limit ends if it is still on:
        // relaunching at once, over and over, would only meet it again. It backs off, counted.
        Outcome::RateLimited { reset: Some(t) } => match blind(Source::Error, "a rate limit") {
            Next::Relaunch {
                at,
                source,
                counted,
                ..
            } => Next::Relaunch {
                at,
                why: format!(
                    "the rate limit has reset (at {}): backing off {} in case it is still on",
                    format_utc(*t),
                    crate::time::human_age(at.duration_since(now))
                ),
                reset: Some(*t),
                source,
                counted,
            },
            stop => stop,
        },
        Outcome::RateLimited { reset: None } => blind(Source::Backoff, "a rate limit"),
        Outcome::Overloaded => blind(Source::Overloaded, "the API was overloaded"),
    }
}

/// The countdown supervise rewrites in place on a terminal while it waits.
pub fn countdown(at: Timestamp, now: Timestamp) -> String {
    format!(
        "baton supervise: relaunching at {}, in {}",
        format_utc(at),
        time_left(at.duration_since(now))
    )
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
    /// The hooks saw the API overloaded (`"error": "overloaded"`, an HTTP 529) end a turn.
    pub hook_overloaded: bool,
    pub carried: Vec<Carried>,
}

/// The outcome of an attempt, checked in this order: a signal to the supervisor; work now run
/// by another live session; the agent killed by a signal (a crash); a rate limit (unless a
/// piece of work then needs a person first); an overload with no rate limit (the same); any
/// other interrupt; a failing exit with nothing recorded; else finished.
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
    if a.hook_overloaded {
        if let Some(c) = a.carried.iter().find(|c| c.wait == Some(Wait::HumanFirst)) {
            return Outcome::NeedsPerson {
                why: format!(
                    "{} was stopped by an overloaded API, but its resume needs a person first (`baton resume` says why)",
                    c.name
                ),
            };
        }
        return Outcome::Overloaded;
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
        Next::Relaunch {
            at,
            why,
            reset,
            source,
            counted,
        } => {
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
                    why: format!("{why}; the work itself may resume at {}", format_utc(t)),
                    reset: Some(t),
                    source: Source::Work,
                    counted,
                },
                None => Next::Relaunch {
                    at,
                    why,
                    reset,
                    source,
                    counted,
                },
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

    const POLICY: Policy = Policy {
        backoff: (BACKOFF_FIRST, BACKOFF_CAP),
        give_up_after: GIVE_UP_AFTER,
        max_restarts: None,
    };

    fn at(n: Next) -> Option<Timestamp> {
        match n {
            Next::Relaunch { at, .. } => Some(at),
            Next::Stop { .. } => None,
        }
    }

    fn stop(n: Next) -> Option<u8> {
        match n {
            Next::Stop { status, .. } => Some(status),
            Next::Relaunch { .. } => None,
        }
    }

    #[test]
    fn every_stop_condition_and_every_relaunch() {
        let now: Timestamp = NOW.parse().unwrap();
        let later: Timestamp = "2026-03-01T13:00:00Z".parse().unwrap();
        let earlier: Timestamp = "2026-03-01T11:00:00Z".parse().unwrap();
        let three = Policy {
            max_restarts: Some(3),
            ..POLICY
        };
        let step = |outcome: Outcome, counted| {
            let tally = Tally {
                counted,
                since: (counted > 0).then_some(now),
            };
            next_step(&outcome, tally, &three, now, 0.5)
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
        // A named reset is waited for whatever was counted: it is not a blind retry.
        assert_eq!(at(step(limited(Some(later)), 3)), Some(later));
        assert_eq!(
            step(limited(Some(later)), 0),
            Next::Relaunch {
                at: later,
                why: "the rate limit resets at 2026-03-01 13:00 UTC".into(),
                reset: Some(later),
                source: Source::Error,
                counted: false,
            }
        );
        // No reset still to come: the backoff, counted, up to --max-restarts.
        assert_eq!(
            at(step(limited(None), 1)),
            Some(now.checked_add(SignedDuration::from_secs(120)).unwrap())
        );
        assert_eq!(
            step(limited(Some(earlier)), 0),
            Next::Relaunch {
                at: now.checked_add(SignedDuration::from_secs(60)).unwrap(),
                why: "the rate limit has reset (at 2026-03-01 11:00 UTC): backing off 1m in case it is still on".into(),
                reset: Some(earlier),
                source: Source::Error,
                counted: true,
            }
        );
        assert_eq!(stop(step(limited(None), 3)), Some(1), "restarts used up");
        assert_eq!(stop(step(limited(Some(earlier)), 3)), Some(1));
        // An overload: the backoff, counted, like a limit with no reset named.
        assert!(matches!(
            step(Outcome::Overloaded, 0),
            Next::Relaunch {
                source: Source::Overloaded,
                counted: true,
                ..
            }
        ));
        assert_eq!(stop(step(Outcome::Overloaded, 3)), Some(1));
    }

    #[test]
    fn a_weekly_limit_days_away_is_waited_for_and_not_counted() {
        let now: Timestamp = NOW.parse().unwrap();
        let weekly: Timestamp = "2026-03-06T04:20:00Z".parse().unwrap();
        // However many blind retries came before, and however long they lasted.
        let tally = Tally {
            counted: 50,
            since: Some("2026-02-20T00:00:00Z".parse().unwrap()),
        };
        let next = next_step(
            &Outcome::RateLimited {
                reset: Some(weekly),
            },
            tally,
            &Policy {
                max_restarts: Some(1),
                ..POLICY
            },
            now,
            0.5,
        );
        assert_eq!(at(next.clone()), Some(weekly));
        // The relaunch after it does not count, and ends the run of blind retries.
        assert_eq!(
            tally.after(&next, now),
            Tally {
                counted: 50,
                since: None
            }
        );
    }

    #[test]
    fn blind_retries_go_on_until_a_five_hour_window_could_have_reset() {
        let first: Timestamp = NOW.parse().unwrap();
        for jitter in [0.0, 0.5, 0.999] {
            let (mut now, mut tally, mut relaunches) = (first, Tally::default(), Vec::new());
            loop {
                let outcome = Outcome::RateLimited { reset: None };
                let next = next_step(&outcome, tally, &POLICY, now, jitter);
                tally = tally.after(&next, now);
                match next {
                    Next::Relaunch { at, .. } => {
                        relaunches.push(at);
                        now = at;
                    }
                    Next::Stop { status, why } => {
                        assert_eq!(status, 1);
                        assert!(why.contains("--give-up-after of 6h"), "{why}");
                        break;
                    }
                }
                assert!(relaunches.len() < 100, "never gave up");
            }
            let last = *relaunches.last().unwrap();
            // The last retry lands after the horizon, so after a 5-hour window resets, and
            // no two retries are further apart than the cap.
            assert!(
                last.duration_since(first) >= GIVE_UP_AFTER,
                "{jitter}: {relaunches:?}"
            );
            assert!(last.duration_since(first) > SignedDuration::from_hours(5));
            let mut prev = first;
            for t in &relaunches {
                assert!(t.duration_since(prev) <= BACKOFF_CAP, "{relaunches:?}");
                prev = *t;
            }
            assert_eq!(tally.since, Some(first));
        }
        // A shorter horizon gives up sooner: the first limit after it stops supervise.
        let short = Policy {
            give_up_after: SignedDuration::from_mins(10),
            ..POLICY
        };
        let since = Some(first);
        let at_mins = |m: i64| first.checked_add(SignedDuration::from_mins(m)).unwrap();
        let limited = Outcome::RateLimited { reset: None };
        let t = |counted| Tally { counted, since };
        assert!(at(next_step(&limited, t(3), &short, at_mins(9), 0.5)).is_some());
        assert_eq!(
            stop(next_step(&limited, t(4), &short, at_mins(10), 0.5)),
            Some(1)
        );
    }

    #[test]
    fn the_countdown_reads_in_days_hours_and_minutes_in_utc() {
        let now: Timestamp = NOW.parse().unwrap();
        let rows = [
            ("2026-03-01T12:00:09Z", "in 9s"),
            ("2026-03-01T12:05:10Z", "in 5m 10s"),
            ("2026-03-01T16:00:00Z", "in 4h 0m"),
            ("2026-03-01T16:59:59Z", "in 4h 59m"),
            ("2026-03-06T04:20:00Z", "in 4d 16h 20m"),
        ];
        for (at, left) in rows {
            let at: Timestamp = at.parse().unwrap();
            let line = countdown(at, now);
            assert!(line.ends_with(left), "{line}");
        }
        assert_eq!(
            countdown("2026-03-06T04:20:00Z".parse().unwrap(), now),
            "baton supervise: relaunching at 2026-03-06 04:20 UTC, in 4d 16h 20m"
        );
        assert_eq!(time_left(SignedDuration::from_secs(-5)), "0s");
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
            hook_overloaded: false,
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
            Outcome::Overloaded => "overloaded",
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
        let soon = next_step(&limited, Tally::default(), &POLICY, now, 0.5);
        assert!(matches!(soon, Next::Relaunch { at, .. } if at < t));
        let moved = not_before(soon, std::slice::from_ref(&defaulted));
        assert!(
            matches!(moved, Next::Relaunch { at, source: Source::Work, counted: true, .. } if at == t),
            "{moved:?}"
        );
        let later = Next::Relaunch {
            at: t2,
            why: String::new(),
            reset: Some(t2),
            source: Source::Error,
            counted: false,
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
        // An overloaded API (HTTP 529) with no rate limit: a transient failure, retried.
        let overloaded = |f: &dyn Fn(&mut Attempt)| {
            kind(with(&|a| {
                a.hook_overloaded = true;
                f(a);
            }))
        };
        // (what else the attempt left, the outcome)
        type Edit<'a> = &'a dyn Fn(&mut Attempt);
        let rows: [(Edit, &str); 8] = [
            (&|a| a.exit = Exit::Code(1), "overloaded"),
            (&|_| {}, "overloaded"),
            // The hooks' `unknown` for the dead turn, and the work it left interrupted.
            (
                &|a| {
                    a.exit = Exit::Code(1);
                    a.hook_other = Some("unknown".into());
                    a.carried = vec![item(Some("unknown"), Some(Wait::Ready))];
                },
                "overloaded",
            ),
            // A rate limit as well: the rate limit decides (its reset is waited for).
            (
                &|a| {
                    a.hook_rate_limit = true;
                    a.hook_resets = vec![t];
                },
                "rate_limited",
            ),
            (&|a| a.exit = Exit::Signal(9), "person"),
            (
                &|a| a.carried = vec![item(Some("unknown"), Some(Wait::HumanFirst))],
                "person",
            ),
            (
                &|a| a.carried = vec![item(None, Some(Wait::TakenOver))],
                "taken_over",
            ),
            (&|a| a.signalled = Some(2), "signalled"),
        ];
        for (i, (f, want)) in rows.into_iter().enumerate() {
            assert_eq!(overloaded(f), want, "row {i}");
        }
        assert_eq!(
            kind(with(&|a| a.exit = Exit::Code(1))),
            "person",
            "no overload"
        );
    }
}
