//! `baton supervise`: after each run of the agent, whether to relaunch it and when, or to stop
//! and say why. Only a rate limit is waited out; everything a person must see stops it.

use jiff::{SignedDuration, Timestamp};

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
}
