//! When a rate limit resets, as the clients' error texts say it. Read from a failure hook's
//! message, a transcript's error or a client's error report; `None` when the text names no
//! time, and then the caller keeps none (the loop protocol's default wait applies).
//!
//! The forms read, case aside:
//! - `limit reached|<unix seconds>` (Claude Code's usage-limit message);
//! - `retry in <duration>`, `retry after <duration>`, `try again in <duration>`, where a
//!   duration is one or more `<number><unit>` (`31.5s`, `2 hours 5 minutes`, `1h30m`; units
//!   s, sec, second, m, min, minute, h, hr, hour, d, day, with or without a plural `s`);
//! - `reset(s) at <RFC 3339 time>`, `retry after <RFC 3339 time>`, `try again at <RFC 3339
//!   time>`.
//!
//! A clock time without a date and zone (`resets 3pm`) is not read: the client's time zone is
//! not known here, and a wrong guess would resume into the limit.

use jiff::{SignedDuration, Timestamp};

/// The reset time a text states, if it states one. A time in the past or more than a week
/// ahead is not believed.
pub fn reset_time(text: &str, now: Timestamp) -> Option<Timestamp> {
    let lower = text.to_ascii_lowercase();
    let found = unix_after_bar(&lower)
        .or_else(|| after_phrase(&lower, &["retry in ", "retry after ", "try again in "], now))
        .or_else(|| {
            timestamp_after(
                text,
                &lower,
                &["resets at ", "reset at ", "retry after ", "try again at "],
            )
        })?;
    let horizon = now.checked_add(SignedDuration::from_hours(24 * 7)).ok()?;
    (found > now && found <= horizon).then_some(found)
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

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: &str = "2026-03-01T12:00:00Z";

    fn at(text: &str) -> Option<String> {
        reset_time(text, NOW.parse().unwrap()).map(|t| t.to_string())
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
            ("5-hour limit reached ∙ resets 3pm", None),
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
        ] {
            let _ = at(text);
        }
    }
}
