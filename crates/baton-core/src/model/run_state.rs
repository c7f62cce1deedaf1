use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// `.agentic/runs/<run_id>.json`: one single-run pipeline, what it was planned against, how far
/// it got, and who holds its lock.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunState {
    #[serde(default = "super::schema_v1")]
    pub schema_version: u32,
    pub run_id: String,
    /// `active`, `complete` or `abandoned`.
    #[serde(default = "active_run")]
    #[schemars(with = "String")]
    pub status: RunStatus,
    #[serde(default)]
    pub created_at: Option<String>,
    #[serde(default)]
    pub updated_at: Option<String>,
    #[serde(default)]
    pub feature: Option<String>,
    #[serde(default)]
    pub mode: Option<String>,
    /// `PIPELINE_BASE_COMMIT`: HEAD when the run was planned.
    #[serde(default)]
    pub base_commit: Option<String>,
    #[serde(default)]
    pub branch: Option<String>,
    #[serde(default)]
    pub plan: Option<PlanRecord>,
    #[serde(default)]
    pub alignment: Option<AlignmentRecord>,
    /// The settings this run is resumed under.
    #[serde(default)]
    pub policy: RunPolicy,
    #[serde(default, deserialize_with = "super::null_as_default")]
    pub steps: Vec<StepRecord>,
    /// Completed agents, in order; never re-dispatched.
    #[serde(default, deserialize_with = "super::null_as_default")]
    pub completed_agents: Vec<Completion>,
    #[serde(default, deserialize_with = "super::null_as_default")]
    pub hard_gates: Vec<Completion>,
    /// The run lock. `None` when released.
    #[serde(default)]
    pub lease: Option<Lease>,
    /// Bumped by every lease takeover; survives a release so that a stale holder stays fenced.
    #[serde(default, deserialize_with = "super::null_as_default")]
    pub lease_epoch: u64,
    /// Set when the user confirmed the run against changed alignment: the cached plan owes one
    /// plan-critic round, recorded as an agent or gate whose name holds `critic`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub critic_owed: bool,
    /// Where an imported run came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub imported_from: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PlanRecord {
    /// Absolute path of the cached plan.
    pub path: String,
    pub sha256: Option<String>,
    /// The plan's mtime when recorded (RFC 3339).
    pub mtime: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AlignmentRecord {
    /// The project file, relative to the project root.
    pub path: String,
    /// One entry per section: GOALS, SCOPE, CONSTRAINTS.
    pub sections: Vec<SectionRecord>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SectionRecord {
    pub name: String,
    /// `None` when the section was absent.
    pub sha256: Option<String>,
    /// The text, so that a drift can be shown as a diff.
    #[serde(default)]
    pub text: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunPolicy {
    /// The verdict for a gap over 4 hours and at most 24 with no security-sensitive path:
    /// `critic` (the default) or `replan`. The protocol sanctions `ratify` only at 4 hours or
    /// less.
    #[serde(default = "critic")]
    pub mid_gap: String,
    /// Security-sensitive path globs; the protocol's list by default.
    #[serde(default = "default_globs")]
    pub security_globs: Vec<String>,
    /// Seconds without a heartbeat after which the run lock is stale.
    #[serde(default = "default_ttl")]
    pub lease_ttl_secs: u64,
}

fn critic() -> String {
    "critic".into()
}

fn default_globs() -> Vec<String> {
    crate::glob::DEFAULT_SECURITY_GLOBS
        .iter()
        .map(|g| g.to_string())
        .collect()
}

fn default_ttl() -> u64 {
    600
}

impl Default for RunPolicy {
    fn default() -> RunPolicy {
        RunPolicy {
            mid_gap: critic(),
            security_globs: default_globs(),
            lease_ttl_secs: default_ttl(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StepRecord {
    pub name: String,
    pub status: String,
    pub at: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Completion {
    pub name: String,
    pub at: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The run lock: a lease that outlives the command that took it. Its holder is the long-lived
/// agent process, never baton's own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Lease {
    pub session: Option<String>,
    pub host: String,
    pub boot_id: Option<String>,
    /// The holder process, when known.
    pub pid: Option<u32>,
    /// Its start time in clock ticks after boot (`/proc/<pid>/stat` field 22): a pid alone
    /// never proves liveness, since pids are reused.
    pub pid_start: Option<u64>,
    /// How the pid was found: `flag`, `CLAUDE_PID`, `ancestor`, or `none`.
    pub pid_source: String,
    pub acquired_at: String,
    pub heartbeat_at: String,
    pub epoch: u64,
    /// For a holder with neither a session nor a known process: the SHA-256 of the random
    /// lease token it was handed once at acquisition. Only that token proves it; the epoch,
    /// which anyone can read, never does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_sha256: Option<String>,
}

impl RunState {
    /// An empty run, for listing baton's own field names.
    pub fn placeholder() -> RunState {
        serde_json::from_value(serde_json::json!({ "run_id": "" }))
            .expect("every field has a default")
    }
}

/// A run's status: baton's three, and any other value another tool wrote, kept as it is
/// (written back unchanged).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum RunStatus {
    Active,
    Complete,
    Abandoned,
    Other(String),
}

impl RunStatus {
    /// The value in the file.
    pub fn as_str(&self) -> &str {
        match self {
            RunStatus::Active => "active",
            RunStatus::Complete => "complete",
            RunStatus::Abandoned => "abandoned",
            RunStatus::Other(s) => s,
        }
    }

    /// The status `raw` names; a value baton does not know is kept as `Other`.
    pub fn parse(raw: &str) -> RunStatus {
        match raw {
            "active" => RunStatus::Active,
            "complete" => RunStatus::Complete,
            "abandoned" => RunStatus::Abandoned,
            other => RunStatus::Other(other.to_string()),
        }
    }

    /// A finished run is complete or abandoned; anything else is live work.
    pub fn is_finished(&self) -> bool {
        matches!(self, RunStatus::Complete | RunStatus::Abandoned)
    }
}

impl From<String> for RunStatus {
    fn from(raw: String) -> RunStatus {
        match RunStatus::parse(&raw) {
            RunStatus::Other(_) => RunStatus::Other(raw),
            known => known,
        }
    }
}

impl From<RunStatus> for String {
    fn from(status: RunStatus) -> String {
        match status {
            RunStatus::Other(s) => s,
            known => known.as_str().to_string(),
        }
    }
}

impl std::fmt::Display for RunStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

fn active_run() -> RunStatus {
    RunStatus::Active
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A status another tool wrote reads as `Other` and is written back unchanged; a missing one
    /// reads as `active`.
    #[test]
    fn an_unknown_status_round_trips_unchanged() {
        let run: RunState =
            serde_json::from_value(serde_json::json!({ "run_id": "r", "status": "paused_by_ci" }))
                .unwrap();
        assert_eq!(run.status, RunStatus::Other("paused_by_ci".into()));
        assert!(!run.status.is_finished());
        assert_eq!(
            serde_json::to_value(&run).unwrap()["status"],
            "paused_by_ci"
        );
        assert_eq!(RunState::placeholder().status, RunStatus::Active);
        for known in ["active", "complete", "abandoned"] {
            assert_eq!(RunStatus::parse(known).as_str(), known);
            assert!(!matches!(RunStatus::parse(known), RunStatus::Other(_)));
        }
        assert!(RunStatus::Complete.is_finished() && RunStatus::Abandoned.is_finished());
    }
}
