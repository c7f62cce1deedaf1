//! Every decision of the protocols as a pure function of facts, each reason carrying a stable
//! rule id so that a verdict explains itself and a table test can pin each rule.

pub mod batch;
pub mod continuation;
pub mod lease;
pub mod loop_resume;
pub mod loop_write;
pub mod ownership;
pub mod run_resume;
pub mod supervise;
pub mod wait;

use serde::Serialize;

/// One rule that fired, with its stable id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Reason {
    pub rule: &'static str,
    pub message: String,
}

impl Reason {
    pub fn new(rule: &'static str, message: impl Into<String>) -> Reason {
        Reason {
            rule,
            message: message.into(),
        }
    }
}

/// A verdict, why, and what to do next.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Decision {
    pub verdict: &'static str,
    pub reasons: Vec<Reason>,
    pub next: Option<String>,
}

impl Decision {
    pub fn new(verdict: &'static str, reason: Reason, next: Option<String>) -> Decision {
        Decision {
            verdict,
            reasons: vec![reason],
            next,
        }
    }

    /// The rule ids, in order; what the table tests compare.
    pub fn rules(&self) -> Vec<&'static str> {
        self.reasons.iter().map(|r| r.rule).collect()
    }
}
