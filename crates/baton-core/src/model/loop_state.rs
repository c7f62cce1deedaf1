use jiff::Timestamp;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::text::{esc, esc_or};
use crate::time::{format_ts, newest_plausible, parse_ts};

/// `.agentic/loop-state-<LOOP_KEY>.json`: one ticket's Skeptic/QA/engineer loop cursor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LoopState {
    #[serde(default = "super::schema_v1")]
    pub schema_version: u32,
    /// The owning session; null is legacy state that only `--force` takes over.
    #[serde(default)]
    pub session_id: Option<String>,
    /// The raw ticket id, kept so that two ids sharing a key never share the file.
    #[serde(default)]
    pub ticket_id: Option<String>,
    #[serde(default)]
    pub loop_key: Option<String>,
    #[serde(default)]
    pub branch: Option<String>,
    #[serde(default)]
    pub repo: Option<String>,
    #[serde(default)]
    pub base_branch: Option<String>,
    pub status: LoopStatus,
    #[serde(default)]
    pub interrupted_at: Option<String>,
    /// `rate_limit`, `session_expiry`, `unknown` or null.
    #[serde(default)]
    pub interrupt_reason: Option<String>,
    /// The authoritative resume key: `skeptic`, `qa`, `engineer` or `quality_gate`.
    #[serde(default)]
    pub last_phase: Option<String>,
    /// `spawned`, `returned`, `engineer_spawned`, `engineer_returned`, `rerun_pending`; others
    /// are accepted and kept.
    #[serde(default)]
    pub last_phase_action: Option<String>,
    #[serde(default)]
    pub loop_state: LoopProgress,
    /// Liveness: refreshed by every transition and heartbeat, never by an interrupt.
    #[serde(default)]
    pub last_updated: Option<String>,
    #[serde(default, deserialize_with = "super::null_as_default")]
    pub resume_count: u64,
    #[serde(default)]
    pub brief_path: Option<String>,
    #[serde(default)]
    pub plan_path: Option<String>,
    /// `none`, `brief` or `plan`.
    #[serde(default)]
    pub promotion_tier: Option<String>,
    /// Fencing token: bumped by every takeover; a writer holding an older one is refused.
    #[serde(default, deserialize_with = "super::null_as_default")]
    pub owner_epoch: u64,
    /// When a rate-limited loop may be resumed, if the limit said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume_after: Option<String>,
    /// Set when the tier was raised with no Brief recorded: the next engineer spawn waits for it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub brief_owed: bool,
    /// Partial work that `resume accept --discard` set aside in a git stash. Written before the
    /// stash is made, so a kill in between still leaves the next session a pointer to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discarded_work: Option<DiscardedWork>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Where `resume accept --discard` put the partial work.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DiscardedWork {
    /// The stash's message, unique to this resume: `git stash list` finds it by this.
    pub message: String,
    /// The stash commit, once made; null while (or if) the stash was never confirmed.
    #[serde(default)]
    pub stash: Option<String>,
    pub at: String,
}

impl DiscardedWork {
    /// Where an earlier `resume accept --discard` put the partial work, as one line.
    pub fn describe(&self) -> String {
        match &self.stash {
            Some(stash) => format!(
                "set aside: partial work of an earlier resume is in git stash {} ({:?}; `git stash list`)",
                esc(stash),
                esc(&self.message)
            ),
            None => format!(
                "set aside: an earlier resume was stashing partial work as {:?} and did not confirm it; look for it with `git stash list`",
                esc(&self.message)
            ),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LoopProgress {
    /// Which loop runs: `skeptic` (Phase 6) or `qa` (Phase 6b). The engineer runs inside it and
    /// the quality gate after it, so neither ever replaces it; `last_phase` says where it is.
    #[serde(default)]
    pub phase: Option<String>,
    #[serde(default, deserialize_with = "super::null_as_default")]
    pub iteration: u64,
    #[serde(default, deserialize_with = "super::null_as_default")]
    pub max_iterations: u64,
    #[serde(default, deserialize_with = "super::null_as_default")]
    pub findings_log: Vec<Value>,
    #[serde(default, deserialize_with = "super::null_as_default")]
    pub qa_failures_log: Vec<Value>,
    #[serde(default)]
    pub last_engineer_summary: Option<String>,
    #[serde(default)]
    pub termination_reason: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LoopStatus {
    Active,
    Interrupted,
    Complete,
    Stalled,
}

impl LoopStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            LoopStatus::Active => "active",
            LoopStatus::Interrupted => "interrupted",
            LoopStatus::Complete => "complete",
            LoopStatus::Stalled => "stalled",
        }
    }

    pub fn is_terminal(self) -> bool {
        matches!(self, LoopStatus::Complete | LoopStatus::Stalled)
    }
}

/// The phases a loop-state records, with the breadcrumb label of each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Skeptic,
    Qa,
    Engineer,
    QualityGate,
    /// Phase 10: the CI fix loop.
    CiLoop,
    /// Phase 10: waiting for CI.
    CiWait,
}

impl Phase {
    pub const ALL: [Phase; 6] = [
        Phase::Skeptic,
        Phase::Qa,
        Phase::Engineer,
        Phase::QualityGate,
        Phase::CiLoop,
        Phase::CiWait,
    ];

    /// The names `loop set --phase` takes.
    pub const NAMES: [&'static str; 6] = [
        "skeptic",
        "qa",
        "engineer",
        "quality_gate",
        "ci_loop",
        "ci_wait",
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Skeptic => "skeptic",
            Phase::Qa => "qa",
            Phase::Engineer => "engineer",
            Phase::QualityGate => "quality_gate",
            Phase::CiLoop => "ci_loop",
            Phase::CiWait => "ci_wait",
        }
    }

    pub fn parse(raw: &str) -> Option<Phase> {
        Phase::ALL.into_iter().find(|p| p.as_str() == raw)
    }

    /// The label of the protocol's phase map: 6 and 6b are the Skeptic and QA loops (the
    /// engineer's fix pass belongs to whichever of them runs), 7 the quality gate, 10 CI.
    pub fn label(self, loop_phase: Option<&str>) -> &'static str {
        match self {
            Phase::Skeptic => "6 skeptic",
            Phase::Qa => "6b qa",
            Phase::Engineer if loop_phase == Some("qa") => "6b engineer",
            Phase::Engineer => "6 engineer",
            Phase::QualityGate => "7 quality gate",
            Phase::CiLoop => "10 ci loop",
            Phase::CiWait => "10 ci wait",
        }
    }

    /// Whether this phase names one of the two loops that `loop_state.phase` records.
    pub fn is_loop(self) -> bool {
        matches!(self, Phase::Skeptic | Phase::Qa)
    }
}

/// The `status` values of a `findings_log` entry that still need work.
pub const OPEN_FINDING: [&str; 2] = ["open", "addressed"];

/// The governing artifact's tier, ordered so that a raise can be detected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum PromotionTier {
    None,
    Brief,
    Plan,
}

impl PromotionTier {
    pub fn as_str(self) -> &'static str {
        match self {
            PromotionTier::None => "none",
            PromotionTier::Brief => "brief",
            PromotionTier::Plan => "plan",
        }
    }

    /// A missing or unknown tier reads as `none`.
    pub fn parse_lenient(raw: Option<&str>) -> PromotionTier {
        match raw {
            Some("brief") => PromotionTier::Brief,
            Some("plan") => PromotionTier::Plan,
            _ => PromotionTier::None,
        }
    }
}

impl LoopState {
    /// A new loop, as `baton loop init` writes it.
    pub fn new(ticket_id: String, loop_key: String, session_id: Option<String>) -> LoopState {
        LoopState {
            schema_version: super::SCHEMA_VERSION,
            session_id,
            ticket_id: Some(ticket_id),
            loop_key: Some(loop_key),
            branch: None,
            repo: None,
            base_branch: None,
            status: LoopStatus::Active,
            interrupted_at: None,
            interrupt_reason: None,
            last_phase: None,
            last_phase_action: None,
            loop_state: LoopProgress::default(),
            last_updated: None,
            resume_count: 0,
            brief_path: None,
            plan_path: None,
            promotion_tier: None,
            owner_epoch: 0,
            resume_after: None,
            brief_owed: false,
            discarded_work: None,
            extra: Map::new(),
        }
    }

    /// The session id, with an empty string read as null.
    pub fn owner(&self) -> Option<&str> {
        self.session_id.as_deref().filter(|s| !s.is_empty())
    }

    pub fn phase(&self) -> Option<Phase> {
        self.last_phase.as_deref().and_then(Phase::parse)
    }

    /// Liveness: the newer of `last_updated` and `updated_at`. The originating protocol names
    /// both fields for the loop-state (its resume check reads `last_updated`, its write contract
    /// sets `updated_at`), so a file that carries only one is still read as written.
    pub fn liveness(&self, now: Timestamp) -> Option<Timestamp> {
        let updated_at = self.extra.get("updated_at").and_then(Value::as_str);
        newest_plausible(
            [parse_ts(self.last_updated.as_deref()), parse_ts(updated_at)],
            now,
        )
    }

    /// Records a write at `now`: `last_updated`, and `updated_at` too when the file carries it,
    /// so that a reader of either field sees the same liveness.
    pub fn touch(&mut self, now: Timestamp) {
        let stamp = format_ts(now);
        if self.extra.contains_key("updated_at") {
            self.extra
                .insert("updated_at".into(), Value::String(stamp.clone()));
        }
        self.last_updated = Some(stamp);
    }

    /// The findings that still need work: entries whose `status` is open or addressed, and
    /// entries with no status at all (a bare string, as older writers recorded them).
    pub fn open_findings(&self) -> usize {
        self.loop_state
            .findings_log
            .iter()
            .filter(|f| match f.get("status").and_then(Value::as_str) {
                Some(status) => OPEN_FINDING.contains(&status),
                None => true,
            })
            .count()
    }

    /// `[phase: 6b qa · iteration 2/5 · returned]`: the breadcrumb of every transition.
    pub fn breadcrumb(&self) -> String {
        let label = match self.phase() {
            Some(p) => p.label(self.loop_state.phase.as_deref()).into(),
            None => esc_or(self.last_phase.as_deref(), "no phase"),
        };
        let mut crumb = format!("[phase: {label}");
        let progress = &self.loop_state;
        if progress.iteration > 0 {
            crumb.push_str(&format!(" · iteration {}", progress.iteration));
            if progress.max_iterations > 0 {
                crumb.push_str(&format!("/{}", progress.max_iterations));
            }
        }
        if let Some(action) = &self.last_phase_action {
            crumb.push_str(&format!(" · {}", esc(action)));
        }
        crumb.push(']');
        crumb
    }

    /// `qa iteration 2/5 · returned`, for messages.
    pub fn position(&self) -> String {
        let mut out = esc_or(self.last_phase.as_deref(), "no phase").into_owned();
        if self.loop_state.iteration > 0 {
            out.push_str(&format!(" iteration {}", self.loop_state.iteration));
            if self.loop_state.max_iterations > 0 {
                out.push_str(&format!("/{}", self.loop_state.max_iterations));
            }
        }
        if let Some(action) = &self.last_phase_action {
            out.push_str(&format!(" · {}", esc(action)));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_fields_survive_a_round_trip() {
        let raw = r#"{"schema_version":1,"session_id":null,"status":"interrupted",
            "custom_top":{"a":1},"loop_state":{"iteration":2,"custom_inner":"x"}}"#;
        let state: LoopState = serde_json::from_str(raw).unwrap();
        let back = serde_json::to_value(&state).unwrap();
        assert_eq!(back["custom_top"]["a"], 1);
        assert_eq!(back["loop_state"]["custom_inner"], "x");
        assert_eq!(back["loop_state"]["iteration"], 2);
        assert!(
            back.get("brief_owed").is_none(),
            "baton's flags stay out of files that lack them"
        );
    }

    #[test]
    fn null_counters_read_as_zero() {
        let raw = r#"{"status":"active","resume_count":null,"owner_epoch":null,
            "loop_state":{"iteration":null,"max_iterations":null,"findings_log":null}}"#;
        let state: LoopState = serde_json::from_str(raw).unwrap();
        assert_eq!((state.loop_state.max_iterations, state.owner_epoch), (0, 0));
    }

    #[test]
    fn tiers_order_for_escalation() {
        assert!(PromotionTier::Brief > PromotionTier::None);
        assert!(PromotionTier::Plan > PromotionTier::Brief);
        assert_eq!(PromotionTier::parse_lenient(None), PromotionTier::None);
    }
}
