//! The session ownership gate, applied to every write of a loop-state or the batch-state file.
//! The shell evaluates it under the exclusive lock that also covers the write it guards, so two
//! sessions can never both pass it.

use jiff::Timestamp;

use super::{Decision, Reason};
use crate::text::esc;
use crate::time::{age, human_age, is_live};

/// What the file on disk says about its owner.
#[derive(Debug, Clone, Copy)]
pub struct OwnerRecord<'a> {
    pub session: Option<&'a str>,
    /// `last_updated` of a loop-state, `updated_at` of batch-state.
    pub liveness: Option<Timestamp>,
    /// For batch-state only: whether its status is `active`. Loop-states skip this condition: a
    /// live session may hold a non-active loop, and a foreign session must not clobber it.
    pub batch_active: Option<bool>,
    /// The owner released it (an interrupted loop): its last write no longer makes it live.
    pub released: bool,
    pub epoch: u64,
}

/// Who is writing.
#[derive(Debug, Clone, Copy, Default)]
pub struct Writer<'a> {
    pub session: Option<&'a str>,
    /// The epoch this writer was handed when it took ownership, if it carries one.
    pub epoch: Option<u64>,
    /// `--force`: take over legacy state that has no owner.
    pub force: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GateOutcome {
    /// The writer already owns the file.
    Owner,
    /// The writer takes the file over; it must be written with this epoch and its session.
    Takeover {
        epoch: u64,
        reason: Reason,
    },
    Refused(Decision),
}

/// The gate. `what` names the file for messages; `show` is the command that shows it.
pub fn gate(file: OwnerRecord, me: Writer, now: Timestamp, what: &str, show: &str) -> GateOutcome {
    let me_session = me.session.filter(|s| !s.is_empty());
    let file_session = file.session.filter(|s| !s.is_empty());
    if let Some(held) = me.epoch
        && held != file.epoch
    {
        return GateOutcome::Refused(Decision::new(
            crate::Verdict::Refused,
            Reason::new(
                crate::Rule::GateStaleEpoch,
                format!(
                    "{what} is at owner epoch {}, this writer holds epoch {held}: another session took it over since",
                    file.epoch
                ),
            ),
            Some(format!(
                "re-read the state (`{show}`) and resume it deliberately; never write with epoch {held} again"
            )),
        ));
    }
    let Some(owner) = file_session else {
        if me_session.is_none() {
            return GateOutcome::Owner;
        }
        if me.force {
            return GateOutcome::Takeover {
                epoch: file.epoch + 1,
                reason: Reason::new(
                    crate::Rule::GateForcedTakeover,
                    format!("{what} had no owner session (legacy state); taken over with --force"),
                ),
            };
        }
        return GateOutcome::Refused(Decision::new(
            crate::Verdict::Refused,
            Reason::new(
                crate::Rule::GateNullOwner,
                format!(
                    "{what} has no owner session (legacy state): a write could clobber a session that never recorded its id"
                ),
            ),
            Some(format!(
                "check it with `{show}`; if no other session is working on it, repeat the command with `--force` to take it over"
            )),
        ));
    };
    if me_session == Some(owner) {
        return GateOutcome::Owner;
    }
    let live = !file.released && is_live(now, file.liveness);
    let owner = esc(owner);
    if live && file.batch_active.unwrap_or(true) {
        let seen = file
            .liveness
            .map(|t| format!("{} ago", human_age(age(now, t))))
            .unwrap_or_default();
        return GateOutcome::Refused(Decision::new(
            crate::Verdict::Refused,
            Reason::new(
                crate::Rule::GateForeignLiveOwner,
                format!(
                    "{what} is owned by live session {owner} (last write {seen}, within the 10-minute liveness window)"
                ),
            ),
            Some(format!(
                "leave it to session {owner} (`{show}`); if that session is gone, retry after its last write is 10 minutes old"
            )),
        ));
    }
    let why = if file.released {
        "released it (interrupted)".to_string()
    } else if file.liveness.is_none() {
        "has no liveness timestamp".to_string()
    } else if !live {
        format!(
            "was last written {} ago",
            human_age(age(now, file.liveness.unwrap_or(now)))
        )
    } else {
        "is not active".to_string()
    };
    GateOutcome::Takeover {
        epoch: file.epoch + 1,
        reason: Reason::new(
            crate::Rule::GateStaleTakeover,
            format!("{what} was owned by session {owner}, which {why}; taken over"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: &str = "2026-03-01T12:00:00Z";

    fn at(minutes_ago: i64) -> Option<Timestamp> {
        let now: Timestamp = NOW.parse().unwrap();
        Some(now - jiff::SignedDuration::from_mins(minutes_ago))
    }

    fn rule(outcome: &GateOutcome) -> &'static str {
        match outcome {
            GateOutcome::Owner => "owner",
            GateOutcome::Takeover { reason, .. } => reason.rule.id(),
            GateOutcome::Refused(d) => d.reasons[0].rule.id(),
        }
    }

    /// One row per rule of the ownership gate (docs/ticket-loop.md).
    #[test]
    fn ownership_gate_table() {
        let now: Timestamp = NOW.parse().unwrap();
        struct Row {
            name: &'static str,
            file_session: Option<&'static str>,
            liveness: Option<Timestamp>,
            batch_active: Option<bool>,
            file_epoch: u64,
            me: Option<&'static str>,
            held: Option<u64>,
            force: bool,
            want: &'static str,
        }
        let rows = [
            Row {
                name: "own file",
                file_session: Some("A"),
                liveness: at(1),
                batch_active: None,
                file_epoch: 0,
                me: Some("A"),
                held: None,
                force: false,
                want: "owner",
            },
            Row {
                name: "foreign, 5 min",
                file_session: Some("A"),
                liveness: at(5),
                batch_active: None,
                file_epoch: 0,
                me: Some("B"),
                held: None,
                force: false,
                want: "gate.foreign-live-owner",
            },
            Row {
                name: "foreign, exactly 10 min is live",
                file_session: Some("A"),
                liveness: at(10),
                batch_active: None,
                file_epoch: 0,
                me: Some("B"),
                held: None,
                force: false,
                want: "gate.foreign-live-owner",
            },
            Row {
                name: "foreign, 11 min",
                file_session: Some("A"),
                liveness: at(11),
                batch_active: None,
                file_epoch: 0,
                me: Some("B"),
                held: None,
                force: false,
                want: "gate.stale-takeover",
            },
            Row {
                name: "foreign, no timestamp is stale",
                file_session: Some("A"),
                liveness: None,
                batch_active: None,
                file_epoch: 0,
                me: Some("B"),
                held: None,
                force: false,
                want: "gate.stale-takeover",
            },
            Row {
                name: "foreign loop, fresh, force does not override",
                file_session: Some("A"),
                liveness: at(1),
                batch_active: None,
                file_epoch: 0,
                me: Some("B"),
                held: None,
                force: true,
                want: "gate.foreign-live-owner",
            },
            Row {
                name: "batch: fresh but not active",
                file_session: Some("A"),
                liveness: at(1),
                batch_active: Some(false),
                file_epoch: 0,
                me: Some("B"),
                held: None,
                force: false,
                want: "gate.stale-takeover",
            },
            Row {
                name: "batch: fresh and active",
                file_session: Some("A"),
                liveness: at(1),
                batch_active: Some(true),
                file_epoch: 0,
                me: Some("B"),
                held: None,
                force: false,
                want: "gate.foreign-live-owner",
            },
            Row {
                name: "null owner refuses",
                file_session: None,
                liveness: at(60),
                batch_active: None,
                file_epoch: 0,
                me: Some("B"),
                held: None,
                force: false,
                want: "gate.null-owner",
            },
            Row {
                name: "empty owner is null",
                file_session: Some(""),
                liveness: at(60),
                batch_active: None,
                file_epoch: 0,
                me: Some("B"),
                held: None,
                force: false,
                want: "gate.null-owner",
            },
            Row {
                name: "null owner, force",
                file_session: None,
                liveness: at(60),
                batch_active: None,
                file_epoch: 0,
                me: Some("B"),
                held: None,
                force: true,
                want: "gate.forced-takeover",
            },
            Row {
                name: "null owner, null me",
                file_session: None,
                liveness: at(0),
                batch_active: None,
                file_epoch: 0,
                me: None,
                held: None,
                force: false,
                want: "owner",
            },
            Row {
                name: "old epoch refused though fresh and mine",
                file_session: Some("A"),
                liveness: at(0),
                batch_active: None,
                file_epoch: 2,
                me: Some("A"),
                held: Some(1),
                force: false,
                want: "gate.stale-epoch",
            },
            Row {
                name: "current epoch",
                file_session: Some("A"),
                liveness: at(0),
                batch_active: None,
                file_epoch: 2,
                me: Some("A"),
                held: Some(2),
                force: false,
                want: "owner",
            },
        ];
        for row in rows {
            let out = gate(
                OwnerRecord {
                    session: row.file_session,
                    liveness: row.liveness,
                    batch_active: row.batch_active,
                    released: false,
                    epoch: row.file_epoch,
                },
                Writer {
                    session: row.me,
                    epoch: row.held,
                    force: row.force,
                },
                now,
                "loop-state-X.json",
                "baton loop show X",
            );
            assert_eq!(rule(&out), row.want, "{}", row.name);
        }
    }

    #[test]
    fn takeover_bumps_the_epoch_and_refusal_names_owner_and_age() {
        let now: Timestamp = NOW.parse().unwrap();
        let stale = OwnerRecord {
            session: Some("A"),
            liveness: at(30),
            batch_active: None,
            released: false,
            epoch: 4,
        };
        match gate(
            stale,
            Writer {
                session: Some("B"),
                ..Writer::default()
            },
            now,
            "f",
            "show",
        ) {
            GateOutcome::Takeover { epoch, .. } => assert_eq!(epoch, 5),
            other => panic!("{other:?}"),
        }
        let live = OwnerRecord {
            liveness: at(5),
            ..stale
        };
        match gate(
            live,
            Writer {
                session: Some("B"),
                ..Writer::default()
            },
            now,
            "f",
            "show",
        ) {
            GateOutcome::Refused(d) => {
                assert!(d.reasons[0].message.contains("session A"));
                assert!(d.reasons[0].message.contains("5m ago"));
            }
            other => panic!("{other:?}"),
        }
    }

    proptest::proptest! {
        /// Whatever the flags, a live foreign owner of a loop is never written over, and every
        /// takeover moves the epoch forward by exactly one.
        #[test]
        fn a_live_foreign_owner_always_wins(
            minutes_ago in 0i64..=10, epoch in 0u64..1000, held in proptest::option::of(0u64..1000),
            force: bool, me in "[a-z]{1,4}",
        ) {
            let now: Timestamp = NOW.parse().unwrap();
            let owner = format!("{me}-owner");
            let file = OwnerRecord { session: Some(&owner), liveness: at(minutes_ago), batch_active: None, released: false, epoch };
            let out = gate(file, Writer { session: Some(&me), epoch: held, force }, now, "f", "show");
            proptest::prop_assert!(matches!(out, GateOutcome::Refused(_)), "{:?}", out);
            let stale = OwnerRecord { liveness: at(11 + minutes_ago), ..file };
            if let GateOutcome::Takeover { epoch: next, .. } = gate(stale, Writer { session: Some(&me), epoch: held, force }, now, "f", "show") {
                proptest::prop_assert_eq!(next, epoch + 1);
            }
        }
    }
}
