//! The evidence of how a turn ended: a client's transcript tail, a Gemini CLI error report,
//! and the reset time a rate-limit message states.

use baton_core::client::{Client, Evidence, TranscriptEnd};
use baton_core::reset::{HORIZON_HOURS, reset_time, stdout_signal};
use jiff::tz::TimeZone;

/// The first byte picks the client whose transcript the rest is.
pub fn transcript(data: &[u8]) {
    let (which, bytes) = crate::split_selector(data, Client::ALL.len() as u8);
    let client = Client::ALL[usize::from(which)];
    let tail = String::from_utf8_lossy(bytes);
    let zone = TimeZone::UTC;
    let now = crate::nows()[0];
    let end = client.def().transcript_end(&tail, now, &zone);
    if client.def().evidence() != Evidence::Transcript {
        assert_eq!(
            end,
            TranscriptEnd::Unknown,
            "a client whose evidence is not its transcript reads none there"
        );
    }
    for root in [
        "/p/project",
        "/",
        "",
        tail.lines().next().unwrap_or_default(),
    ] {
        for client in Client::ALL {
            let _ = client.def().error_report(&tail, root, now, &zone);
        }
    }

    for now in crate::nows() {
        let found = [
            reset_time(&tail, now, &zone),
            tail.lines().find_map(|l| stdout_signal(l, now, &zone)),
        ];
        for at in found.into_iter().flatten() {
            assert!(at > now, "a reset time {at} not after {now}");
            assert!(
                at.duration_since(now) <= jiff::SignedDuration::from_hours(HORIZON_HOURS),
                "a reset time {at} beyond the horizon after {now}"
            );
        }
    }
}
