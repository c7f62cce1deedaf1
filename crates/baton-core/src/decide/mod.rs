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
pub mod survey;
pub mod wait;

use serde::Serialize;

pub use crate::rules::Rule;

/// One rule that fired, with its stable id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Reason {
    pub rule: Rule,
    pub message: String,
}

impl Reason {
    pub fn new(rule: Rule, message: impl Into<String>) -> Reason {
        Reason {
            rule,
            message: message.into(),
        }
    }
}

/// How a verdict ends the command that printed it: the exit status of the contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// 0: done, including every query that computed a verdict.
    Success,
    /// 2: invalid input or usage.
    Usage,
    /// 3: refused by a gate.
    Refused,
    /// 4: a human must decide first.
    AskHuman,
}

macro_rules! verdicts {
    ($($variant:ident => $name:literal, $exit:ident: $meaning:literal,)+) => {
        /// What a decision concludes. Each verdict names its exit status here, so a new one
        /// cannot exit 0 by accident: the match below has no catch-all.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Verdict {
            $(
                #[doc = $meaning]
                $variant,
            )+
        }

        impl Verdict {
            /// Every verdict.
            pub const ALL: &[Verdict] = &[$(Verdict::$variant,)+];

            /// The word printed (`verdict: offer`) and in `--json`.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Verdict::$variant => $name,)+
                }
            }

            /// The exit status a command deciding this verdict ends with.
            pub fn exit(self) -> Exit {
                match self {
                    $(Verdict::$variant => Exit::$exit,)+
                }
            }

            /// What the verdict means, in one line.
            pub fn meaning(self) -> &'static str {
                match self {
                    $(Verdict::$variant => $meaning,)+
                }
            }
        }
    };
}

verdicts! {
    None => "none", Success: "nothing to resume",
    Offer => "offer", Success: "interrupted or silent: resume it as the mode says",
    Live => "live", Success: "another session works on it: hands off",
    Own => "own", Success: "this session runs it: carry on",
    Ok => "ok", Success: "the change is made",
    Archived => "archived", Success: "the state was moved to the archive",
    Accepted => "accepted", Success: "the resume is accepted: this session owns the work",
    Resume => "resume", Success: "the ledger's claims are checked: resume at the point named",
    Confirmed => "confirmed", Success: "every phase the ledger claims is confirmed",
    Replan => "replan", Success: "the run's cached plan cannot be trusted: plan again",
    Critic => "critic", Success: "the run goes on after one critic round",
    Ratify => "ratify", Success: "the run's cached plan is ratified: go on",
    Refused => "refused", Refused: "a gate refused the change: nothing changed",
    Blocked => "blocked", Refused: "the run cannot go on until what blocks it is cleared",
    Ask => "ask", AskHuman: "a human must decide first",
    Confirm => "confirm", AskHuman: "a human must confirm before the run goes on",
    Invalid => "invalid", Usage: "the input is not valid: nothing changed",
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

impl Serialize for Verdict {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl PartialEq<&str> for Verdict {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// A verdict, why, and what to do next.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Decision {
    pub verdict: Verdict,
    pub reasons: Vec<Reason>,
    pub next: Option<String>,
}

impl Decision {
    pub fn new(verdict: Verdict, reason: Reason, next: Option<String>) -> Decision {
        Decision {
            verdict,
            reasons: vec![reason],
            next,
        }
    }

    /// The rule ids, in order; what the table tests compare.
    pub fn rules(&self) -> Vec<&'static str> {
        self.reasons.iter().map(|r| r.rule.id()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The exit code contract, verdict by verdict: a gate's refusal is 3, a human's decision 4,
    /// bad input 2, and every computed answer 0.
    #[test]
    fn every_verdict_has_its_exit() {
        let table = [
            ("none", Exit::Success),
            ("offer", Exit::Success),
            ("live", Exit::Success),
            ("own", Exit::Success),
            ("ok", Exit::Success),
            ("archived", Exit::Success),
            ("accepted", Exit::Success),
            ("resume", Exit::Success),
            ("confirmed", Exit::Success),
            ("replan", Exit::Success),
            ("critic", Exit::Success),
            ("ratify", Exit::Success),
            ("refused", Exit::Refused),
            ("blocked", Exit::Refused),
            ("ask", Exit::AskHuman),
            ("confirm", Exit::AskHuman),
            ("invalid", Exit::Usage),
        ];
        assert_eq!(
            Verdict::ALL.len(),
            table.len(),
            "a verdict with no row here"
        );
        for (name, exit) in table {
            let verdict = Verdict::ALL
                .iter()
                .find(|v| v.as_str() == name)
                .unwrap_or_else(|| panic!("no verdict {name}"));
            assert_eq!(verdict.exit(), exit, "{name}");
            assert_eq!(serde_json::to_value(verdict).unwrap(), name);
        }
    }
}
