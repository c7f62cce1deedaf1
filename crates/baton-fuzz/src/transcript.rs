//! The evidence of how a turn ended: a client's transcript tail, a Gemini CLI error report,
//! and the reset time a rate-limit message states.

use baton_core::client::{Client, TranscriptEnd};
use baton_core::reset::reset_time;

/// The first byte picks the client whose transcript the rest is.
pub fn transcript(data: &[u8]) {
    let (which, bytes) = crate::split_selector(data, 3);
    let client = Client::ALL[usize::from(which)];
    let tail = String::from_utf8_lossy(bytes);
    let end = client.def().transcript_end(&tail);
    if client == Client::Gemini {
        assert_eq!(
            end,
            TranscriptEnd::Unknown,
            "Gemini CLI records no 429 in a transcript"
        );
    }
    for root in [
        "/p/project",
        "/",
        "",
        tail.lines().next().unwrap_or_default(),
    ] {
        let _ = Client::Gemini.def().error_report(&tail, root);
    }

    for now in crate::nows() {
        if let Some(at) = reset_time(&tail, now) {
            assert!(at > now, "a reset time {at} not after {now}");
            assert!(
                at.duration_since(now) <= jiff::SignedDuration::from_hours(24 * 7),
                "a reset time {at} more than a week after {now}"
            );
        }
    }
}
