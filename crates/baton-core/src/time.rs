//! Timestamps as the state files write them, and ages as people read them.

use jiff::{SignedDuration, Timestamp};

/// Liveness window of the ownership gate and the resume check: a write within it is live.
pub const LIVENESS_WINDOW: SignedDuration = SignedDuration::from_secs(10 * 60);

/// A duration as every option and variable of baton takes it, read by jiff: `90s`, `15m`,
/// `1h30m`, `2 hours`, `250ms`, `1d` (a day is 24 hours), or a bare number of seconds (`5`,
/// `0.5`). `None` for anything else, and for a negative duration.
pub fn parse_duration(raw: &str) -> Option<SignedDuration> {
    let raw = raw.trim();
    if let Ok(secs) = raw.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0)
            .then(|| SignedDuration::try_from_secs_f64(secs).ok())
            .flatten();
    }
    let span: jiff::Span = raw.parse().ok()?;
    let d = span
        .to_duration(jiff::SpanRelativeTo::days_are_24_hours())
        .ok()?;
    (!d.is_negative()).then_some(d)
}

/// Formats a timestamp the way the originating tools do (`date -u +%Y-%m-%dT%H:%M:%SZ`).
pub fn format_ts(ts: Timestamp) -> String {
    ts.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// `format_ts` with milliseconds when the time has any: a ledger line's time, which orders the
/// events of ledgers merged from two machines (`ledger::parse_ledger`), so two appends in one
/// second keep their order.
pub fn format_ts_ms(ts: Timestamp) -> String {
    if ts.subsec_millisecond() == 0 {
        format_ts(ts)
    } else {
        ts.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
    }
}

/// Parses a timestamp: RFC 3339, or a date-time with no offset, read as UTC (what Python's
/// `datetime.utcnow().isoformat()` writes). `None` for a missing or unreadable one, which every
/// rule treats as stale, like the protocol's missing timestamp.
pub fn parse_ts(raw: Option<&str>) -> Option<Timestamp> {
    let raw = raw?.trim();
    raw.parse::<Timestamp>().ok().or_else(|| {
        raw.parse::<jiff::civil::DateTime>()
            .ok()
            .and_then(|dt| dt.to_zoned(jiff::tz::TimeZone::UTC).ok())
            .map(|z| z.timestamp())
    })
}

/// `now - then`, clamped at zero: a timestamp from the future counts as just written.
pub fn age(now: Timestamp, then: Timestamp) -> SignedDuration {
    let age = now.duration_since(then);
    if age.is_negative() {
        SignedDuration::ZERO
    } else {
        age
    }
}

/// Whether a liveness timestamp is within the window. A missing one is stale, and so is one
/// further in the future than the window: clock skew explains minutes, not a file that would
/// otherwise stay live for ever.
pub fn is_live(now: Timestamp, liveness: Option<Timestamp>) -> bool {
    liveness.is_some_and(|then| {
        let age = now.duration_since(then);
        age <= LIVENESS_WINDOW && age >= -LIVENESS_WINDOW
    })
}

/// The newest of `candidates` that no clock skew rules out (at most the liveness window in the
/// future of `now`); when every one is further ahead, the newest of them, which `is_live` then
/// counts as stale. So one field poisoned with a far-future time cannot hide a fresh one.
pub fn newest_plausible(
    candidates: impl IntoIterator<Item = Option<Timestamp>>,
    now: Timestamp,
) -> Option<Timestamp> {
    let all: Vec<Timestamp> = candidates.into_iter().flatten().collect();
    let limit = now.checked_add(LIVENESS_WINDOW).unwrap_or(now);
    all.iter()
        .copied()
        .filter(|t| *t <= limit)
        .max()
        .or_else(|| all.iter().copied().max())
}

/// A short human age: `45s`, `12m`, `2h 5m`, `3d 4h`.
pub fn human_age(age: SignedDuration) -> String {
    let secs = age.as_secs().max(0);
    match secs {
        0..60 => format!("{secs}s"),
        60..3600 => format!("{}m", secs / 60),
        3600..86400 => match (secs % 3600) / 60 {
            0 => format!("{}h", secs / 3600),
            m => format!("{}h {m}m", secs / 3600),
        },
        _ => match (secs % 86400) / 3600 {
            0 => format!("{}d", secs / 86400),
            h => format!("{}d {h}h", secs / 86400),
        },
    }
}

/// A time as a person reads it in a wait's messages (`baton supervise`, `baton wait --sleep`): to the minute, in UTC, saying so.
pub fn format_utc(t: Timestamp) -> String {
    t.strftime("%Y-%m-%d %H:%M UTC").to_string()
}

/// A time as a person reads it, in `zone` (the machine's, read at the edge), to the second and
/// naming the zone: `2026-12-03 04:46:31 CET`, `2026-12-03 03:46:31 UTC`.
pub fn format_local(t: Timestamp, zone: &jiff::tz::TimeZone) -> String {
    t.to_zoned(zone.clone())
        .strftime("%Y-%m-%d %H:%M:%S %Z")
        .to_string()
}

/// The time left until a relaunch, to the minute (to the second under a minute): `3d 4h 5m`,
/// `4h 0m`, `5m 10s`, `9s`.
pub fn time_left(left: SignedDuration) -> String {
    let secs = left.as_secs().max(0);
    let (d, h, m, s) = (
        secs / 86_400,
        secs % 86_400 / 3600,
        secs % 3600 / 60,
        secs % 60,
    );
    match (d, h, m) {
        (0, 0, 0) => format!("{s}s"),
        (0, 0, _) => format!("{m}m {s}s"),
        (0, _, _) => format!("{h}h {m}m"),
        _ => format!("{d}d {h}h {m}m"),
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_shown_time_is_in_the_zone_it_names() {
        let t: Timestamp = "2026-12-03T03:46:31Z".parse().unwrap();
        let paris = jiff::tz::TimeZone::get("Europe/Paris").unwrap();
        assert_eq!(format_local(t, &paris), "2026-12-03 04:46:31 CET");
        let summer: Timestamp = "2026-07-01T12:00:00Z".parse().unwrap();
        assert_eq!(format_local(summer, &paris), "2026-07-01 14:00:00 CEST");
        assert_eq!(
            format_local(t, &jiff::tz::TimeZone::UTC),
            "2026-12-03 03:46:31 UTC"
        );
        let fixed = jiff::tz::TimeZone::fixed(jiff::tz::offset(-5));
        assert_eq!(format_local(t, &fixed), "2026-12-02 22:46:31 -05");
    }

    #[test]
    fn one_duration_syntax_for_every_option() {
        let secs = |raw: &str| parse_duration(raw).map(|d| d.as_secs_f64());
        for (raw, want) in [
            ("5s", 5.0),
            ("5", 5.0),
            ("0.5", 0.5),
            ("250ms", 0.25),
            ("15m", 900.0),
            ("1h30m", 5400.0),
            ("1h 30m", 5400.0),
            ("2 hours", 7200.0),
            ("1d", 86_400.0),
            ("2 days", 172_800.0),
        ] {
            assert_eq!(secs(raw), Some(want), "{raw}");
        }
        for bad in ["", "-5s", "-1", "5x", "1 month", "soon", "NaN", "1m,30m"] {
            assert_eq!(secs(bad), None, "{bad}");
        }
    }

    use super::*;

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn liveness_window_is_ten_minutes_inclusive() {
        let now = ts("2026-01-01T00:20:00Z");
        assert!(is_live(now, Some(ts("2026-01-01T00:10:00Z"))));
        assert!(!is_live(now, Some(ts("2026-01-01T00:09:59Z"))));
        assert!(
            is_live(now, Some(ts("2026-01-01T00:30:00Z"))),
            "skew within the window is fresh"
        );
        assert!(
            !is_live(now, Some(ts("2099-01-01T00:00:00Z"))),
            "the far future is not trusted"
        );
        assert!(!is_live(now, None), "missing counts as stale");
    }

    #[test]
    fn parse_accepts_offsets_and_rejects_junk() {
        assert_eq!(
            parse_ts(Some("2026-01-01T02:00:00+02:00")),
            Some(ts("2026-01-01T00:00:00Z"))
        );
        assert_eq!(parse_ts(Some("yesterday")), None);
        assert_eq!(
            parse_ts(Some("2026-01-01T00:00:00.123456")),
            Some(ts("2026-01-01T00:00:00.123456Z")),
            "no offset reads as UTC"
        );
        assert_eq!(parse_ts(None), None);
    }

    #[test]
    fn human_ages() {
        let s = SignedDuration::from_secs;
        assert_eq!(human_age(s(5)), "5s");
        assert_eq!(human_age(s(12 * 60 + 3)), "12m");
        assert_eq!(human_age(s(7200)), "2h");
        assert_eq!(human_age(s(7500)), "2h 5m");
        assert_eq!(human_age(s(86400 * 3 + 3600 * 4)), "3d 4h");
    }
}
