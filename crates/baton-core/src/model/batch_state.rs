use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

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
    /// `active`, `complete` or `abandoned`.
    pub status: String,
    #[serde(default)]
    pub mode: Option<String>,
    #[serde(default)]
    pub created_at: Option<String>,
    /// Liveness of the batch session.
    #[serde(default)]
    pub updated_at: Option<String>,
    #[serde(default)]
    pub tickets: Vec<BatchTicket>,
    /// Append-only.
    #[serde(default)]
    pub replan_log: Vec<ReplanEntry>,
    #[serde(default, deserialize_with = "super::null_as_default")]
    pub owner_epoch: u64,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BatchTicket {
    pub ticket_id: String,
    #[serde(default)]
    pub loop_key: Option<String>,
    /// `pending`, `in_progress`, `complete`, `stalled` or `skipped`.
    pub status: String,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReplanEntry {
    pub at: String,
    #[serde(default)]
    pub ticket_id: Option<String>,
    pub note: String,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Per-ticket statuses after which a batch moves on.
pub const TICKET_DONE: [&str; 3] = ["complete", "stalled", "skipped"];

impl BatchState {
    pub fn owner(&self) -> Option<&str> {
        self.session_id.as_deref().filter(|s| !s.is_empty())
    }

    pub fn is_active(&self) -> bool {
        self.status == "active"
    }

    /// The ticket a batch resume picks: the first one not yet done.
    pub fn next_ticket(&self) -> Option<&BatchTicket> {
        self.tickets
            .iter()
            .find(|t| !TICKET_DONE.contains(&t.status.as_str()))
    }
}
