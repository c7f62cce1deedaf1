//! When a rate limit resets, as the clients state it. Read from a failure hook's message, a
//! transcript's error, a client's error report or an agent's stdout; `None` when nothing names
//! a time, and then the caller keeps none (the loop protocol's default wait applies).
//!
//! The forms read from text, case aside:
//! - `limit reached|<unix seconds>` (Claude Code's older usage-limit message);
//! - `retry in <duration>`, `retry after <duration>`, `try again in <duration>`, where a
//!   duration is one or more `<number><unit>` (`31.5s`, `2 hours 5 minutes`, `1h30m`; units
//!   s, sec, second, m, min, minute, h, hr, hour, d, day, with or without a plural `s`);
//! - `reset(s) at <RFC 3339 time>`, `retry after <RFC 3339 time>`, `try again at <RFC 3339
//!   time>`;
//! - a wall-clock time after `resets`, `reset at` or `try again at`, with an optional date
//!   before it and an optional IANA zone after it: `resets 1pm (Europe/Lisbon)`, `resets Jul 31,
//!   2am (UTC)`, `resets Jul 27 at 4:30am (Asia/Calcutta)`, `resets Sep 15 at 7pm`, `will reset
//!   at 9am (America/Chicago)`, `try again at 8:06 AM`. It is the next such time in that zone
//!   (the machine's local zone when none is named), DST-correct; a date without a year is its
//!   next occurrence. A time that falls in a DST gap is the first instant after the gap.
//!
//! A reset in the past or more than `HORIZON_HOURS` ahead is not believed. Zone names resolve
//! in the time zone database bundled into the binary: no file is read.

use jiff::civil::{Date, DateTime, Time};
use jiff::tz::{TimeZone, TimeZoneDatabase};
use jiff::{SignedDuration, Timestamp};

/// How far ahead a reset is believed: a weekly limit resets up to seven days away, and a day
/// more covers a reset named in another zone.
pub const HORIZON_HOURS: i64 = 24 * 8;

/// `at` when it is after `now` and within the horizon.
pub fn believable(at: Timestamp, now: Timestamp) -> Option<Timestamp> {
    let horizon = now
        .checked_add(SignedDuration::from_hours(HORIZON_HOURS))
        .ok()?;
    (at > now && at <= horizon).then_some(at)
}

/// A reset given as unix seconds (`resetsAt`, `resets_at`), when believable.
pub fn unix_reset(secs: i64, now: Timestamp) -> Option<Timestamp> {
    believable(Timestamp::from_second(secs).ok()?, now)
}

/// The reset time a text states, if it states one; `zone` is the machine's local zone, for a
/// clock time that names none.
pub fn reset_time(text: &str, now: Timestamp, zone: &TimeZone) -> Option<Timestamp> {
    reset_time_in(text, now, &|| zone.clone())
}

/// `reset_time`, asking `local` for the machine's zone only when the text names a clock time
/// without one: a failure hook looks nothing up that its record does not need.
pub fn reset_time_in(
    text: &str,
    now: Timestamp,
    local: &dyn Fn() -> TimeZone,
) -> Option<Timestamp> {
    let lower = text.to_ascii_lowercase();
    let found = unix_after_bar(&lower)
        .or_else(|| {
            after_phrase(
                &lower,
                &[
                    "retry in ",
                    "retry after ",
                    "try again in ",
                    // Gemini CLI's quota error: `Your quota will reset after 4h28m20s.`
                    "reset after ",
                    "resets after ",
                    "reset in ",
                    "resets in ",
                ],
                now,
            )
        })
        .or_else(|| {
            timestamp_after(
                text,
                &lower,
                &["resets at ", "reset at ", "retry after ", "try again at "],
            )
        })
        .or_else(|| clock_after(text, &lower, now, local))?;
    believable(found, now)
}

/// Whether a line of text is one of Claude Code's subscription-limit messages (`You've hit
/// your limit · resets …`, `You're out of extra usage · resets …`, `Claude usage limit
/// reached…`), whatever error class the client gave it.
pub fn is_subscription_limit(text: &str) -> bool {
    let lower = text.to_ascii_lowercase().replace('\u{2019}', "'");
    let head = lower.trim_start();
    (head.starts_with("you've hit your") && !head.contains("spend limit"))
        || head.starts_with("you're out of extra usage")
        || head.starts_with("you're out of usage")
        || lower.contains("usage limit reached")
}

/// The reset a line of an agent's stdout signals: a `claude -p --output-format stream-json`
/// `rate_limit_event` whose limit is `rejected` (its `resetsAt`), a stream-json `result` or
/// plain line with a subscription-limit message, or a Codex `usage limit` error line.
pub fn stdout_signal(line: &str, now: Timestamp, zone: &TimeZone) -> Option<Timestamp> {
    let line = line.trim();
    if line.starts_with('{') {
        let value: serde_json::Value = serde_json::from_str(line).ok()?;
        return match value.get("type").and_then(serde_json::Value::as_str) {
            Some("rate_limit_event") => {
                let info = value.get("rate_limit_info")?;
                if info.get("status").and_then(serde_json::Value::as_str) != Some("rejected") {
                    return None;
                }
                unix_reset(info.get("resetsAt")?.as_i64()?, now)
            }
            Some("result") => {
                let text = value.get("result")?.as_str()?;
                (value.get("is_error").and_then(serde_json::Value::as_bool) == Some(true)
                    && is_subscription_limit(text))
                .then(|| reset_time(text, now, zone))?
            }
            _ => None,
        };
    }
    let limit =
        is_subscription_limit(line) || line.to_ascii_lowercase().contains("hit your usage limit");
    limit.then(|| reset_time(line, now, zone))?
}

/// `limit reached|1767225600`.
fn unix_after_bar(lower: &str) -> Option<Timestamp> {
    let at = lower.find("limit reached|")? + "limit reached|".len();
    let digits: String = lower[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    let secs: i64 = digits.parse().ok()?;
    Timestamp::from_second(secs).ok()
}

/// `<phrase><duration>` for the first phrase that is followed by one.
fn after_phrase(lower: &str, phrases: &[&str], now: Timestamp) -> Option<Timestamp> {
    phrases.iter().find_map(|phrase| {
        lower.match_indices(phrase).find_map(|(i, _)| {
            let secs = duration_secs(&lower[i + phrase.len()..])?;
            let span = SignedDuration::try_from_secs_f64(secs).ok()?;
            now.checked_add(span).ok()
        })
    })
}

/// The seconds of a duration at the start of `text`: `2 hours 5 minutes`, `31.5s`, `1h30m`.
fn duration_secs(text: &str) -> Option<f64> {
    let mut rest = text;
    let mut total = 0.0;
    let mut parts = 0;
    loop {
        let trimmed = rest.trim_start_matches([' ', ',']);
        let trimmed = trimmed.strip_prefix("and ").unwrap_or(trimmed);
        let number_len = trimmed
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(trimmed.len());
        let Ok(n) = trimmed[..number_len].parse::<f64>() else {
            break;
        };
        let after = trimmed[number_len..].trim_start();
        let unit_len = after
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(after.len());
        let scale = match &after[..unit_len] {
            "s" | "sec" | "secs" | "second" | "seconds" => 1.0,
            "m" | "min" | "mins" | "minute" | "minutes" => 60.0,
            "h" | "hr" | "hrs" | "hour" | "hours" => 3600.0,
            "d" | "day" | "days" => 86400.0,
            _ => break,
        };
        if !n.is_finite() {
            return None;
        }
        total += n * scale;
        parts += 1;
        rest = &after[unit_len..];
    }
    (parts > 0).then_some(total)
}

/// An RFC 3339 time right after one of `phrases` (looked for in `lower`, read from `text`).
fn timestamp_after(text: &str, lower: &str, phrases: &[&str]) -> Option<Timestamp> {
    phrases.iter().find_map(|phrase| {
        lower.match_indices(phrase).find_map(|(i, _)| {
            let start = i + phrase.len();
            let token: String = text[start..]
                .chars()
                .take_while(|c| !c.is_whitespace() && !matches!(c, ',' | ')' | '"' | ';'))
                .collect();
            token.trim_end_matches('.').parse::<Timestamp>().ok()
        })
    })
}

/// A wall-clock time (with an optional date and zone) after `resets `, `reset at ` or `try
/// again at `.
fn clock_after(
    text: &str,
    lower: &str,
    now: Timestamp,
    zone: &dyn Fn() -> TimeZone,
) -> Option<Timestamp> {
    ["resets ", "reset at ", "try again at "]
        .iter()
        .find_map(|phrase| {
            lower.match_indices(phrase).find_map(|(i, _)| {
                let start = i + phrase.len();
                clock_time(&text[start..], &lower[start..], now, zone)
            })
        })
}

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];

/// `[at ][Mon D[st|nd|rd|th][,][ YYYY][,| at] ]H[:MM](am|pm)[ (Zone)]` at the start of `lower`
/// (`text` is the same with its case, for the zone's name).
fn clock_time(
    text: &str,
    lower: &str,
    now: Timestamp,
    local: &dyn Fn() -> TimeZone,
) -> Option<Timestamp> {
    let mut at = 0;
    let skip = |at: &mut usize, word: &str| {
        if lower[*at..].starts_with(word) {
            *at += word.len();
            true
        } else {
            false
        }
    };
    skip(&mut at, "at ");
    // An optional date: a month's name (`Jul`, `July`, `Sept`) and a day.
    let mut date = None;
    if let Some(month) = MONTHS.iter().position(|m| lower[at..].starts_with(m)) {
        let name_len = lower[at..]
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(lower.len() - at);
        let after = &lower[at + name_len..];
        let day_at = at + name_len + (after.len() - after.trim_start_matches([' ', '.']).len());
        let day_len = lower[day_at..]
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(lower.len() - day_at);
        let day: i8 = lower[day_at..day_at + day_len].parse().ok()?;
        at = day_at + day_len;
        for suffix in ["st", "nd", "rd", "th"] {
            if skip(&mut at, suffix) {
                break;
            }
        }
        skip(&mut at, ",");
        skip(&mut at, " ");
        // A year after the day, when the reset is in another calendar year (Claude Code's
        // `Jan 2, 2027, 1:36pm`) or the client always names it (Codex's `Dec 9th, 2026 1:36 PM`).
        let year_len = lower[at..]
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(lower.len() - at);
        let mut year = None;
        if year_len == 4 && !lower[at + 4..].starts_with(':') {
            year = lower[at..at + 4].parse::<i16>().ok();
            at += 4;
            skip(&mut at, ",");
            skip(&mut at, " ");
        }
        skip(&mut at, "at ");
        date = Some((year, month as i8 + 1, day));
    }
    // The time: `1pm`, `4:20am`, `8:06 AM`, or a 24-hour `13:05`.
    let hour_len = lower[at..].find(|c: char| !c.is_ascii_digit())?;
    if hour_len == 0 || hour_len > 2 {
        return None;
    }
    let mut hour: i8 = lower[at..at + hour_len].parse().ok()?;
    at += hour_len;
    let mut minute: i8 = 0;
    let mut colon = false;
    if lower[at..].starts_with(':') {
        let digits = lower.get(at + 1..at + 3)?;
        if !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        minute = digits.parse().ok()?;
        at += 3;
        colon = true;
    }
    let before_meridiem = at;
    skip(&mut at, " ");
    let meridiem = if skip(&mut at, "am") || skip(&mut at, "a.m.") {
        Some(false)
    } else if skip(&mut at, "pm") || skip(&mut at, "p.m.") {
        Some(true)
    } else {
        at = before_meridiem;
        None
    };
    match meridiem {
        Some(pm) => {
            if !(1..=12).contains(&hour) {
                return None;
            }
            hour = hour % 12 + if pm { 12 } else { 0 };
        }
        // Without am/pm only `HH:MM` is a time: a bare number is not.
        None if !colon => return None,
        None => {}
    }
    if lower[at..].starts_with(|c: char| c.is_ascii_alphanumeric()) {
        return None;
    }
    // An optional zone in parentheses: `(Europe/Lisbon)`.
    let rest = text[at..].trim_start();
    let zone = match rest.strip_prefix('(') {
        Some(inner) => {
            let name = &inner[..inner.find(')')?];
            named_zone(name)?
        }
        None => local(),
    };
    let time = Time::new(hour, minute, 0, 0).ok()?;
    next_occurrence(date, time, &zone, now)
}

/// A zone by its IANA name, from the database bundled into the binary.
pub fn named_zone(name: &str) -> Option<TimeZone> {
    let name = name.trim();
    if name.eq_ignore_ascii_case("utc") || name.eq_ignore_ascii_case("gmt") {
        return Some(TimeZone::UTC);
    }
    static DB: std::sync::OnceLock<TimeZoneDatabase> = std::sync::OnceLock::new();
    DB.get_or_init(TimeZoneDatabase::bundled).get(name).ok()
}

/// The first instant after `now` at `time` in `zone` (on `date`, month and day and the year
/// when given). A text names the minute, and the limit resets somewhere in it: a time in the
/// minute `now` is in is that minute's reset, not tomorrow's, and is read as the minute's end
/// (never early).
fn next_occurrence(
    date: Option<(Option<i16>, i8, i8)>,
    time: Time,
    zone: &TimeZone,
    now: Timestamp,
) -> Option<Timestamp> {
    let today = now.to_zoned(zone.clone()).date();
    let at = |day: Date| -> Option<Timestamp> {
        let civil = DateTime::from_parts(day, time);
        let zoned = zone.to_ambiguous_zoned(civil).compatible().ok()?;
        Some(zoned.timestamp())
    };
    let minute = SignedDuration::from_secs(60);
    let ahead = |t: Timestamp| {
        if t > now {
            Some(t)
        } else {
            let end = t.checked_add(minute).ok()?;
            (end > now).then_some(end)
        }
    };
    match date {
        None => [0, 1, 2].iter().find_map(|d| {
            let day = today.checked_add(jiff::Span::new().days(*d)).ok()?;
            at(day).and_then(ahead)
        }),
        Some((Some(year), month, day)) => at(Date::new(year, month, day).ok()?).and_then(ahead),
        Some((None, month, day)) => [0, 1].iter().find_map(|y| {
            let year = today.year().checked_add(*y)?;
            at(Date::new(year, month, day).ok()?).and_then(ahead)
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: &str = "2026-03-01T12:00:00Z";

    fn at(text: &str) -> Option<String> {
        reset_time(text, NOW.parse().unwrap(), &TimeZone::UTC).map(|t| t.to_string())
    }

    #[test]
    fn the_forms_read_and_the_ones_not() {
        let cases: [(&str, Option<&str>); 12] = [
            (
                "Claude AI usage limit reached|1772370000",
                Some("2026-03-01T13:00:00Z"),
            ),
            (
                "Rate limit hit. Please retry in 31.5s.",
                Some("2026-03-01T12:00:31.5Z"),
            ),
            (
                "You've hit your usage limit. Try again in 2 hours 5 minutes.",
                Some("2026-03-01T14:05:00Z"),
            ),
            ("try again in 1h30m", Some("2026-03-01T13:30:00Z")),
            (
                "quota exceeded; retry after 90 seconds",
                Some("2026-03-01T12:01:30Z"),
            ),
            (
                "The limit resets at 2026-03-01T15:00:00Z.",
                Some("2026-03-01T15:00:00Z"),
            ),
            (
                "retry after 2026-03-01T12:10:00+01:00",
                None, // 11:10 UTC: already past
            ),
            // A clock time with no zone is the machine's local one (UTC here).
            (
                "5-hour limit reached ∙ resets 3pm",
                Some("2026-03-01T15:00:00Z"),
            ),
            (
                "API Error: Request rejected (429) · Number of request tokens has exceeded your per-minute rate limit",
                None,
            ),
            ("try again in a moment", None),
            ("usage limit reached|99999999999", None), // far beyond a week
            ("", None),
        ];
        for (text, want) in cases {
            assert_eq!(at(text).as_deref(), want, "{text:?}");
        }
    }

    #[test]
    fn odd_text_never_panics() {
        for text in [
            "retry in 1e999999s",
            "retry in 9999999999999999999999 days",
            "limit reached|",
            "retry in .s",
            "resets at ",
            "try again in 5 and",
            "ÄÖÜ retry in 5s",
            "resets 99:99pm (Nowhere/City)",
            "resets Feb 30 at 1pm",
            "resets 12:",
            "resets 1pm (",
            "resets Ju",
            "try again at ÄÖ",
            "resets 0am",
            "resets 13pm",
        ] {
            let _ = at(text);
        }
    }

    /// `now` at a local wall-clock time of `zone`.
    fn local(civil: &str, zone: &str) -> Timestamp {
        civil
            .parse::<DateTime>()
            .unwrap()
            .to_zoned(named_zone(zone).unwrap())
            .unwrap()
            .timestamp()
    }

    fn read(text: &str, now: Timestamp, zone: &str) -> Option<String> {
        reset_time(text, now, &named_zone(zone).unwrap()).map(|t| t.to_string())
    }

    #[test]
    fn a_clock_time_is_its_next_occurrence_in_the_zone_it_names() {
        let lisbon = "You've hit your limit · resets 1pm (Europe/Lisbon)";
        // Read before 13:00 Lisbon time: today; at 13:30: tomorrow, never in the past.
        let now = local("2026-07-10T09:00", "Europe/Lisbon");
        assert_eq!(
            read(lisbon, now, "UTC").as_deref(),
            Some("2026-07-10T12:00:00Z")
        );
        let now = local("2026-07-10T13:30", "Europe/Lisbon");
        assert_eq!(
            read(lisbon, now, "UTC").as_deref(),
            Some("2026-07-11T12:00:00Z")
        );
        // The zone named wins over the local one.
        assert_eq!(
            read(lisbon, now, "Asia/Tokyo").as_deref(),
            Some("2026-07-11T12:00:00Z")
        );
        let cases: [(&str, &str, &str, &str); 13] = [
            (
                "You've hit your session limit · resets 4:20am (Europe/Warsaw)",
                "2026-11-30T23:00:00Z",
                "UTC",
                "2026-12-01T03:20:00Z",
            ),
            (
                "You've hit your weekly limit · resets Jul 31, 2am (UTC)",
                "2026-07-27T10:00:00Z",
                "Europe/Lisbon",
                "2026-07-31T02:00:00Z",
            ),
            (
                "You've hit your weekly limit · resets Jul 27 at 4:30am (Asia/Calcutta)",
                "2026-07-22T00:00:00Z",
                "UTC",
                "2026-07-26T23:00:00Z",
            ),
            // No zone: the machine's local zone.
            (
                "You've hit your weekly limit · resets Sep 15 at 7pm",
                "2026-09-10T00:00:00Z",
                "America/New_York",
                "2026-09-15T23:00:00Z",
            ),
            (
                "You've hit your limit · resets 10pm",
                "2026-01-05T12:00:00Z",
                "Europe/Berlin",
                "2026-01-05T21:00:00Z",
            ),
            (
                "You're out of extra usage · resets 7pm (Asia/Seoul)",
                "2026-05-01T12:00:00Z",
                "UTC",
                "2026-05-02T10:00:00Z",
            ),
            (
                "Claude usage limit reached. Your limit will reset at 9am (America/Chicago).",
                "2026-03-01T12:00:00Z",
                "UTC",
                "2026-03-01T15:00:00Z",
            ),
            // A date without a year is its next occurrence: across the new year.
            (
                "You've hit your weekly limit · resets Jan 2, 1:36pm (Asia/Kolkata)",
                "2026-12-30T00:00:00Z",
                "UTC",
                "2027-01-02T08:06:00Z",
            ),
            // Claude Code names the year of a reset in the next calendar year.
            (
                "You've hit your weekly limit · resets Jan 2, 2027, 1:36pm (Asia/Kolkata)",
                "2026-12-30T00:00:00Z",
                "UTC",
                "2027-01-02T08:06:00Z",
            ),
            // Codex names a reset that is not today with its date and year.
            (
                "You've hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), visit https://chatgpt.com/settings/usage to purchase more credits or try again at Dec 9th, 2026 1:36 PM.",
                "2026-12-05T10:00:00Z",
                "UTC",
                "2026-12-09T13:36:00Z",
            ),
            // A clock time in the current minute is that minute's reset, read as its end.
            (
                "You've hit your session limit · resets 8:55am (UTC)",
                "2026-12-05T08:55:05Z",
                "UTC",
                "2026-12-05T08:56:00Z",
            ),
            // Gemini CLI's quota error.
            (
                "You have exhausted your capacity on this model. Your quota will reset after 4h28m20s.",
                "2026-12-05T10:00:00Z",
                "UTC",
                "2026-12-05T14:28:20Z",
            ),
            // Codex's wording, in the machine's local zone.
            (
                "You’ve hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), visit https://chatgpt.com/settings/usage to purchase more credits or try again at 8:06 AM.",
                "2026-12-02T05:06:24Z",
                "UTC",
                "2026-12-02T08:06:00Z",
            ),
        ];
        for (text, now, zone, want) in cases {
            assert_eq!(
                read(text, now.parse().unwrap(), zone).as_deref(),
                Some(want),
                "{text:?}"
            );
        }
    }

    #[test]
    fn a_clock_time_across_a_dst_change_is_the_zones_own() {
        // 2027-03-28 is a spring-forward day in Europe/Warsaw: 02:00 becomes 03:00, so 2:30am
        // does not exist and the reset is the first instant after the gap, 03:00 CEST.
        let text = "You've hit your session limit · resets 2:30am (Europe/Warsaw)";
        let now = local("2027-03-28T00:30", "Europe/Warsaw");
        assert_eq!(
            read(text, now, "UTC").as_deref(),
            Some("2027-03-28T01:30:00Z")
        );
        // The day before, 2:30am is CET (UTC+1); the day after, CEST (UTC+2).
        let now = local("2027-03-27T00:30", "Europe/Warsaw");
        assert_eq!(
            read(text, now, "UTC").as_deref(),
            Some("2027-03-27T01:30:00Z")
        );
        let now = local("2027-03-28T04:00", "Europe/Warsaw");
        assert_eq!(
            read(text, now, "UTC").as_deref(),
            Some("2027-03-29T00:30:00Z")
        );
        // Fall back: 2:30am happens twice on 2027-10-31; the first (CEST) is the reset.
        let now = local("2027-10-31T00:30", "Europe/Warsaw");
        assert_eq!(
            read(text, now, "UTC").as_deref(),
            Some("2027-10-31T00:30:00Z")
        );
    }

    #[test]
    fn a_weekly_reset_days_away_is_believed_and_beyond_the_horizon_is_not() {
        let now: Timestamp = "2026-07-01T00:00:00Z".parse().unwrap();
        assert_eq!(
            read(
                "You've hit your weekly limit · resets Jul 8, 11pm (UTC)",
                now,
                "UTC"
            )
            .as_deref(),
            Some("2026-07-08T23:00:00Z")
        );
        assert_eq!(
            read(
                "You've hit your weekly limit · resets Jul 12, 2am (UTC)",
                now,
                "UTC"
            ),
            None
        );
        assert_eq!(read("resets 1pm (Not/AZone)", now, "UTC"), None);
    }

    #[test]
    fn stdout_lines_that_signal_a_reset() {
        let now: Timestamp = "2026-12-02T05:06:00Z".parse().unwrap();
        let utc = TimeZone::UTC;
        let event = r#"{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1796198747,"rateLimitType":"five_hour","isUsingOverage":false},"uuid":"u","session_id":"s"}"#;
        assert_eq!(
            stdout_signal(event, now, &utc).map(|t| t.to_string()),
            Some("2026-12-02T08:05:47Z".into())
        );
        // A warning that a limit is near is not a limit.
        let warning = event.replace("rejected", "allowed_warning");
        assert_eq!(stdout_signal(&warning, now, &utc), None);
        let text = "You've hit your 5-hour limit · resets 8:05am (Europe/Lisbon)";
        assert_eq!(
            stdout_signal(text, now, &utc).map(|t| t.to_string()),
            Some("2026-12-02T08:05:00Z".into())
        );
        // Anything else the agent prints that mentions a time is not a signal.
        for line in [
            "The build resets at 9am (UTC) every day.",
            "I will retry in 5 minutes.",
            r#"{"type":"assistant","message":{"content":[{"type":"text","text":"resets 8:05am"}]}}"#,
            "",
            "{not json",
        ] {
            assert_eq!(stdout_signal(line, now, &utc), None, "{line:?}");
        }
    }
}
