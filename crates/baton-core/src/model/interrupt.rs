//! Why baton records a piece of work as interrupted: the values the loop-state files use for
//! `interrupt_reason`. State written by the originating projects may hold others (`pause`,
//! `agent_died`); those are read as the strings they are.

use serde::Serialize;

/// An interrupt reason baton writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InterruptReason {
    /// A rate limit or usage limit: the work waits for its reset, then resumes.
    RateLimit,
    /// The session ended (its process exited, its client closed it) with the work active.
    SessionExpiry,
    /// Nothing says what happened: a crash, as far as anyone can tell.
    Unknown,
}

impl InterruptReason {
    pub const ALL: [InterruptReason; 3] = [
        InterruptReason::RateLimit,
        InterruptReason::SessionExpiry,
        InterruptReason::Unknown,
    ];

    /// The value written to `interrupt_reason`.
    pub fn as_str(self) -> &'static str {
        match self {
            InterruptReason::RateLimit => "rate_limit",
            InterruptReason::SessionExpiry => "session_expiry",
            InterruptReason::Unknown => "unknown",
        }
    }

    /// The reason `raw` names, if baton writes it.
    pub fn parse(raw: &str) -> Option<InterruptReason> {
        Self::ALL.into_iter().find(|r| r.as_str() == raw)
    }
}

impl std::fmt::Display for InterruptReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

impl Serialize for InterruptReason {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl PartialEq<&str> for InterruptReason {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_reads_back() {
        for reason in InterruptReason::ALL {
            assert_eq!(InterruptReason::parse(reason.as_str()), Some(reason));
        }
        assert_eq!(InterruptReason::parse("pause"), None);
    }
}
