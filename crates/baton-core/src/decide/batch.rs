//! The batch rules: one batch per project root, and what a single-ticket loop does beside a
//! foreign batch.

use jiff::Timestamp;

use super::loop_write::REFUSED;
use super::{Decision, Reason};
use crate::model::BatchState;
use crate::text::esc;
use crate::time::{age, human_age, is_live};

/// Whether `existing` is an active batch whose live owner is another session.
fn foreign_live(existing: &BatchState, me: Option<&str>, now: Timestamp) -> bool {
    let me = me.filter(|s| !s.is_empty());
    existing.is_active()
        && existing.owner().is_some()
        && existing.owner() != me
        && is_live(now, existing.liveness(now))
}

fn owner_age(existing: &BatchState, now: Timestamp) -> String {
    existing.liveness(now).map_or_else(
        || "no last-write time".into(),
        |t| format!("last write {} ago", human_age(age(now, t))),
    )
}

/// `batch start` with `n` tickets against the batch already on disk.
pub fn decide_batch_start(
    existing: Option<&BatchState>,
    n: usize,
    me: Option<&str>,
    now: Timestamp,
) -> Result<(), Decision> {
    if n < 2 {
        return Err(Decision::new(
            crate::Verdict::Invalid,
            Reason::new(
                crate::Rule::BatchSingleTicket,
                "a batch needs 2 or more tickets; a single ticket never creates batch-state",
            ),
            Some("run the ticket alone with `baton loop init <TICKET>`".into()),
        ));
    }
    let Some(existing) = existing else {
        return Ok(());
    };
    if foreign_live(existing, me, now) {
        return Err(Decision::new(
            REFUSED,
            Reason::new(
                crate::Rule::BatchForeignActive,
                format!(
                    "Another batch session is active in this project: batch {} owned by session {} ({}). Only one batch per project root is supported.",
                    esc(&existing.batch_id),
                    esc(existing.owner().unwrap_or_default()),
                    owner_age(existing, now)
                ),
            ),
            Some("see it with `baton batch show`; wait for it to finish, or run these tickets one at a time with `baton loop init <TICKET>`".into()),
        ));
    }
    let me_session = me.filter(|s| !s.is_empty());
    if existing.is_active() && me_session.is_some() && existing.owner() == me_session {
        return Err(Decision::new(
            REFUSED,
            Reason::new(
                crate::Rule::BatchOwnActive,
                format!(
                    "this session already runs batch {}",
                    esc(&existing.batch_id)
                ),
            ),
            Some(
                "finish it first with `baton batch finish`, or carry on with `baton batch show`"
                    .into(),
            ),
        ));
    }
    Ok(())
}

/// A single-ticket `loop init` beside a foreign active batch warns and proceeds.
pub fn single_ticket_warning(
    existing: Option<&BatchState>,
    me: Option<&str>,
    now: Timestamp,
) -> Option<Reason> {
    let existing = existing?;
    foreign_live(existing, me, now).then(|| {
        Reason::new(
            crate::Rule::BatchForeignActiveWarning,
            format!(
                "batch {} of session {} is active in this project ({}); this single ticket proceeds beside it (`baton batch show`)",
                esc(&existing.batch_id),
                esc(existing.owner().unwrap_or_default()),
                owner_age(existing, now)
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> Timestamp {
        "2026-03-01T12:00:00Z".parse().unwrap()
    }

    fn batch(owner: &str, status: &str, minutes_ago: i64) -> BatchState {
        serde_json::from_value(serde_json::json!({
            "schema_version": 1, "session_id": owner, "batch_id": "PROJ-batch-x-abcd", "status": status,
            "updated_at": crate::time::format_ts(now() - jiff::SignedDuration::from_mins(minutes_ago)),
        }))
        .unwrap()
    }

    /// One row per batch rule (docs/ticket-loop.md, "Batches").
    #[test]
    fn batch_start_table() {
        let rule = |r: Result<(), Decision>| r.err().map(|d| d.reasons[0].rule.id());
        assert_eq!(
            rule(decide_batch_start(None, 1, Some("B"), now())),
            Some("batch.single-ticket")
        );
        assert_eq!(rule(decide_batch_start(None, 2, Some("B"), now())), None);
        assert_eq!(
            rule(decide_batch_start(
                Some(&batch("A", "active", 2)),
                2,
                Some("B"),
                now()
            )),
            Some("batch.foreign-active")
        );
        assert_eq!(
            rule(decide_batch_start(
                Some(&batch("A", "active", 20)),
                2,
                Some("B"),
                now()
            )),
            None,
            "stale foreign"
        );
        assert_eq!(
            rule(decide_batch_start(
                Some(&batch("A", "complete", 1)),
                2,
                Some("B"),
                now()
            )),
            None,
            "finished foreign"
        );
        assert_eq!(
            rule(decide_batch_start(
                Some(&batch("B", "active", 1)),
                3,
                Some("B"),
                now()
            )),
            Some("batch.own-active")
        );
    }

    #[test]
    fn single_ticket_warns_only_beside_a_live_foreign_batch() {
        assert!(single_ticket_warning(Some(&batch("A", "active", 2)), Some("B"), now()).is_some());
        assert!(single_ticket_warning(Some(&batch("A", "active", 20)), Some("B"), now()).is_none());
        assert!(single_ticket_warning(Some(&batch("B", "active", 2)), Some("B"), now()).is_none());
        assert!(single_ticket_warning(None, Some("B"), now()).is_none());
    }

    #[test]
    fn foreign_active_message_is_the_protocols() {
        let d =
            decide_batch_start(Some(&batch("A", "active", 2)), 2, Some("B"), now()).unwrap_err();
        assert!(
            d.reasons[0]
                .message
                .starts_with("Another batch session is active")
        );
    }
}
