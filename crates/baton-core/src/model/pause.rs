use jiff::Timestamp;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::time::parse_ts;

/// `.agentic/pause.json`: the explicit pauses (`baton pause`), one per session, so one
/// session's pause never replaces another's. Work a pausing session owned and last wrote
/// before its pause is classified `pause`, not `crash`, by the next session.
///
/// It also keeps the interrupt of the active feature's work (`feature_interrupt`): the
/// continuation protocol's own files (the feature pointer, `TASKS.md`) have no place for how
/// or when the work stopped, so baton keeps it here, beside the pauses, under the same lock.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Pauses {
    #[serde(default = "super::schema_v1")]
    pub schema_version: u32,
    #[serde(default)]
    pub marks: Vec<PauseMark>,
    /// The rate limit that stopped the session working on the active feature, the latest one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feature_interrupt: Option<FeatureInterrupt>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Default for Pauses {
    fn default() -> Pauses {
        Pauses {
            schema_version: super::SCHEMA_VERSION,
            marks: Vec::new(),
            feature_interrupt: None,
            extra: Map::new(),
        }
    }
}

impl Pauses {
    /// The latest pause that covers work owned by `owner` and last written at `last_write`.
    pub fn covering(
        &self,
        owner: Option<&str>,
        last_write: Option<Timestamp>,
    ) -> Option<&PauseMark> {
        self.marks
            .iter()
            .filter(|m| m.covers(owner, last_write))
            .max_by_key(|m| parse_ts(Some(&m.paused_at)))
    }

    /// Records `mark` in place of the same session's earlier one.
    pub fn set(&mut self, mark: PauseMark) {
        self.marks.retain(|m| m.session_id != mark.session_id);
        self.marks.push(mark);
    }

    /// Whether the record holds nothing: no mark and no feature interrupt.
    pub fn is_empty(&self) -> bool {
        self.marks.is_empty() && self.feature_interrupt.is_none()
    }

    /// The feature interrupt that covers the feature `id` last written at `last_write`:
    /// recorded for that feature (or for none named), and no write of the feature since.
    pub fn feature_interrupt_of(
        &self,
        id: Option<&str>,
        last_write: Option<Timestamp>,
    ) -> Option<&FeatureInterrupt> {
        self.feature_interrupt
            .as_ref()
            .filter(|i| i.covers(id, last_write))
    }

    /// Removes `session`'s mark; whether there was one.
    pub fn clear(&mut self, session: Option<&str>) -> bool {
        let before = self.marks.len();
        self.marks.retain(|m| m.session_id.as_deref() != session);
        self.marks.len() != before
    }
}

/// One session's pause.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PauseMark {
    pub paused_at: String,
    /// The session that paused; `None` pauses every session's work.
    #[serde(default)]
    pub session_id: Option<String>,
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl PauseMark {
    /// Whether the pause covers work owned by `owner` and last written at `last_write`: the
    /// pausing session's own work (every session's, for a sessionless pause), and work that
    /// records no owner (the feature, ledgers), written no later than the pause. Work written
    /// after the pause was resumed since; work with no known last write is not covered.
    pub fn covers(&self, owner: Option<&str>, last_write: Option<Timestamp>) -> bool {
        let Some(paused) = parse_ts(Some(&self.paused_at)) else {
            return false;
        };
        let owned = match (&self.session_id, owner) {
            (None, _) => true,
            (Some(mine), Some(owner)) => mine == owner,
            (Some(_), None) => true,
        };
        // The mark keeps whole seconds; a write in the same second as the pause came before it
        // (a pause is the session's last act), so the comparison is in whole seconds too.
        owned && last_write.is_some_and(|t| t.as_second() <= paused.as_second())
    }
}

/// How the active feature's work stopped when no explicit pause says so: an API rate limit
/// ended the turn of the session working on it (seed 004 work, no ticket loop of its own).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FeatureInterrupt {
    /// The feature's id (the pointer's `id`) when it has one.
    #[serde(default)]
    pub feature: Option<String>,
    /// The session whose turn the limit ended.
    #[serde(default)]
    pub session_id: Option<String>,
    pub interrupted_at: String,
    /// `rate_limit`, the loop-state files' value.
    pub reason: String,
    /// When the limit resets, when the evidence said.
    #[serde(default)]
    pub resume_after: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl FeatureInterrupt {
    /// Whether it is the interrupt of the feature `id`, last written at `last_write`: the same
    /// feature, and nothing of it written after the interrupt (whole seconds, as with a pause).
    /// A write of the feature since means someone went on with it; a feature with no known last
    /// write is covered (the interrupt is the last word on it).
    pub fn covers(&self, id: Option<&str>, last_write: Option<Timestamp>) -> bool {
        let Some(at) = parse_ts(Some(&self.interrupted_at)) else {
            return false;
        };
        let same = match (self.feature.as_deref(), id) {
            (Some(mine), Some(id)) => mine == id,
            _ => true,
        };
        same && last_write.is_none_or(|t| t.as_second() <= at.as_second())
    }

    pub fn resume_after(&self) -> Option<Timestamp> {
        parse_ts(self.resume_after.as_deref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pause_covers_the_pausing_sessions_work_written_before_it() {
        let mark = PauseMark {
            paused_at: "2026-03-01T12:00:00Z".into(),
            session_id: Some("A".into()),
            reason: None,
            extra: Map::new(),
        };
        let before = parse_ts(Some("2026-03-01T11:59:00Z"));
        let after = parse_ts(Some("2026-03-01T12:01:00Z"));
        assert!(mark.covers(Some("A"), before));
        assert!(mark.covers(None, before), "sessionless work");
        assert!(!mark.covers(Some("B"), before), "another session's work");
        assert!(!mark.covers(Some("A"), after), "resumed since");
        let everyone = PauseMark {
            session_id: None,
            ..mark
        };
        assert!(everyone.covers(Some("B"), before));
    }

    #[test]
    fn a_feature_interrupt_covers_its_feature_until_it_is_written_again() {
        let i = FeatureInterrupt {
            feature: Some("F-1".into()),
            session_id: Some("A".into()),
            interrupted_at: "2026-03-01T12:00:00Z".into(),
            reason: "rate_limit".into(),
            resume_after: Some("2026-03-01T13:00:00Z".into()),
            extra: Map::new(),
        };
        let before = parse_ts(Some("2026-03-01T11:59:00Z"));
        let after = parse_ts(Some("2026-03-01T12:01:00Z"));
        assert!(i.covers(Some("F-1"), before));
        assert!(i.covers(None, before), "a pointer with no id");
        assert!(i.covers(Some("F-1"), None), "no known write");
        assert!(!i.covers(Some("F-2"), before), "another feature");
        assert!(!i.covers(Some("F-1"), after), "written since");
    }
}
