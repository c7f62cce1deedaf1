use jiff::Timestamp;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::time::{newest_plausible, parse_ts};

/// `.agentic/batch-state.json`: the cursor over the tickets of a batch run. Each ticket keeps
/// its own loop-state; this file only says which ticket is next.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BatchState {
    #[serde(default = "super::schema_v1")]
    pub schema_version: u32,
    #[serde(default)]
    pub session_id: Option<String>,
    /// `<first-ticket-prefix>-batch-<ISO8601>-<4hex>`.
    pub batch_id: String,
    /// One of the originating schema's `active`, `paused`, `interrupted`, `complete`, `stalled`.
    #[schemars(with = "String")]
    pub status: BatchStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    #[serde(default)]
    pub created_at: Option<String>,
    /// Liveness of the batch session.
    #[serde(default)]
    pub updated_at: Option<String>,
    #[serde(default)]
    pub tickets: Vec<BatchTicket>,
    /// Append-only. Entries are `{ts, action, ticket_id, detail}`; entries of any other shape
    /// are kept as they are.
    #[serde(default, deserialize_with = "super::null_as_default")]
    pub replan_log: Vec<Value>,
    #[serde(default, deserialize_with = "super::null_as_default")]
    pub owner_epoch: u64,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BatchTicket {
    pub ticket_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loop_key: Option<String>,
    /// One of `TICKET_STATUSES`.
    pub status: String,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A batch's status: the originating schema's, the `abandoned` earlier baton versions wrote,
/// and any other value another tool wrote, kept as it is (written back unchanged).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum BatchStatus {
    Active,
    Paused,
    Interrupted,
    Complete,
    Stalled,
    Abandoned,
    Other(String),
}

impl BatchStatus {
    /// The value in the file.
    pub fn as_str(&self) -> &str {
        match self {
            BatchStatus::Active => "active",
            BatchStatus::Paused => "paused",
            BatchStatus::Interrupted => "interrupted",
            BatchStatus::Complete => "complete",
            BatchStatus::Stalled => "stalled",
            BatchStatus::Abandoned => "abandoned",
            BatchStatus::Other(s) => s,
        }
    }

    /// The status `raw` names; a value baton does not know is kept as `Other`.
    pub fn parse(raw: &str) -> BatchStatus {
        match raw {
            "active" => BatchStatus::Active,
            "paused" => BatchStatus::Paused,
            "interrupted" => BatchStatus::Interrupted,
            "complete" => BatchStatus::Complete,
            "stalled" => BatchStatus::Stalled,
            "abandoned" => BatchStatus::Abandoned,
            other => BatchStatus::Other(other.to_string()),
        }
    }
}

impl From<String> for BatchStatus {
    fn from(raw: String) -> BatchStatus {
        match BatchStatus::parse(&raw) {
            BatchStatus::Other(_) => BatchStatus::Other(raw),
            known => known,
        }
    }
}

impl From<BatchStatus> for String {
    fn from(status: BatchStatus) -> String {
        match status {
            BatchStatus::Other(s) => s,
            known => known.as_str().to_string(),
        }
    }
}

impl std::fmt::Display for BatchStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

/// The per-ticket statuses of the originating schema.
pub const TICKET_STATUSES: [&str; 5] = [
    "pending",
    "in_progress",
    "complete",
    "blocked",
    "skipped_already_merged",
];

/// Per-ticket statuses the cursor still has to run.
const TICKET_OPEN: [&str; 2] = ["pending", "in_progress"];

/// A `replan_log` entry in the originating shape.
pub fn replan_entry(ts: &str, action: &str, ticket_id: Option<&str>, detail: &str) -> Value {
    json!({ "ts": ts, "action": action, "ticket_id": ticket_id, "detail": detail })
}

impl BatchState {
    pub fn owner(&self) -> Option<&str> {
        self.session_id.as_deref().filter(|s| !s.is_empty())
    }

    pub fn is_active(&self) -> bool {
        self.status == BatchStatus::Active
    }

    /// Whether the batch ended. Besides the schema's `complete` and `stalled`, the `abandoned`
    /// that earlier baton versions wrote counts as ended.
    pub fn is_finished(&self) -> bool {
        matches!(
            self.status,
            BatchStatus::Complete | BatchStatus::Stalled | BatchStatus::Abandoned
        )
    }

    /// Liveness: the newer of `updated_at` (what the schema names) and `last_updated` (what the
    /// originating batch-refusal text reads), so a file carrying either is read as written.
    pub fn liveness(&self, now: Timestamp) -> Option<Timestamp> {
        let last_updated = self.extra.get("last_updated").and_then(Value::as_str);
        newest_plausible(
            [parse_ts(self.updated_at.as_deref()), parse_ts(last_updated)],
            now,
        )
    }

    /// Records a write: `updated_at`, and `last_updated` too when the file carries it.
    pub fn touch(&mut self, stamp: &str) {
        if self.extra.contains_key("last_updated") {
            self.extra
                .insert("last_updated".into(), Value::String(stamp.into()));
        }
        self.updated_at = Some(stamp.into());
    }

    /// The ticket a batch resume picks: the first one, in array order, still to run.
    pub fn next_ticket(&self) -> Option<&BatchTicket> {
        self.tickets
            .iter()
            .find(|t| TICKET_OPEN.contains(&t.status.as_str()))
    }

    /// Tickets that cannot run until something changes (a replan, a human).
    pub fn blocked(&self) -> impl Iterator<Item = &BatchTicket> {
        self.tickets.iter().filter(|t| t.status == "blocked")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A status another tool wrote reads as `Other` and is written back byte for byte; the
    /// known ones read as themselves.
    #[test]
    fn an_unknown_status_round_trips_unchanged() {
        let raw = json!({ "batch_id": "b", "status": "on_hold_by_ops" });
        let state: BatchState = serde_json::from_value(raw).unwrap();
        assert_eq!(state.status, BatchStatus::Other("on_hold_by_ops".into()));
        assert!(!state.is_active() && !state.is_finished());
        let back = serde_json::to_value(&state).unwrap();
        assert_eq!(back["status"], "on_hold_by_ops");
        for known in [
            "active",
            "paused",
            "interrupted",
            "complete",
            "stalled",
            "abandoned",
        ] {
            let status = BatchStatus::parse(known);
            assert!(!matches!(status, BatchStatus::Other(_)), "{known}");
            assert_eq!(status.as_str(), known);
            assert_eq!(serde_json::to_value(&status).unwrap(), known);
        }
    }

    /// A batch-state exactly as the originating conductor writes it: replan entries in its
    /// shape, its extra fields, its ticket fields.
    #[test]
    fn the_originating_shape_loads_and_round_trips() {
        let raw = json!({
            "schema_version": 1, "session_id": "A", "batch_id": "ABC-batch-2026-03-01T12:00:00Z-1a2b",
            "status": "interrupted", "created_at": "2026-03-01T11:00:00Z", "updated_at": "2026-03-01T12:00:00Z",
            "last_updated_phase": "phase-6", "interrupted_at": "2026-03-01T12:00:00Z", "interrupt_reason": "unknown",
            "paused_at": null, "pause_reason": null, "wallclock_cap_min": 90,
            "wallclock_started_at": "2026-03-01T11:00:00Z",
            "tickets": [{"ticket_id": "ABC-1", "status": "skipped_already_merged", "cluster_id": "c1",
                         "depends_on": [], "started_at": null, "ended_at": null, "branch": null,
                         "pr_number": null, "last_summary": null},
                        {"ticket_id": "ABC-2", "status": "blocked", "cluster_id": "c1", "depends_on": ["ABC-1"]},
                        {"ticket_id": "ABC-3", "status": "pending"}],
            "replan_log": [{"ts": "2026-03-01T11:30:00Z", "action": "drop_merged", "ticket_id": "ABC-1", "detail": "merged in #12"}],
            "resume_invocation_hint": "/implement-ticket"
        });
        let state: BatchState = serde_json::from_value(raw.clone()).unwrap();
        assert_eq!(state.next_ticket().unwrap().ticket_id, "ABC-3");
        assert_eq!(state.blocked().count(), 1);
        let back = serde_json::to_value(&state).unwrap();
        for (k, v) in raw.as_object().unwrap() {
            assert_eq!(&back[k], v, "{k} survives");
        }
    }

    #[test]
    fn liveness_is_the_newer_of_both_fields() {
        let state: BatchState = serde_json::from_value(json!({
            "batch_id": "b", "status": "active", "updated_at": "2026-03-01T11:00:00Z",
            "last_updated": "2026-03-01T12:00:00Z"
        }))
        .unwrap();
        let now = parse_ts(Some("2026-03-01T12:05:00Z")).unwrap();
        assert_eq!(state.liveness(now), parse_ts(Some("2026-03-01T12:00:00Z")));
        // A far-future value in one field never hides a fresh one in the other.
        let poisoned: BatchState = serde_json::from_value(json!({
            "batch_id": "b", "status": "active", "updated_at": "2026-03-01T12:04:00Z",
            "last_updated": "2099-01-01T00:00:00Z"
        }))
        .unwrap();
        assert_eq!(
            poisoned.liveness(now),
            parse_ts(Some("2026-03-01T12:04:00Z"))
        );
    }
}
