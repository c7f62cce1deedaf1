//! The state files: a loop-state, the batch-state and a run-state, as `parse_state` reads them,
//! and a journal as `journal::parse` reads it.

use std::path::Path;

use baton_core::decide::batch::{decide_batch_start, single_ticket_warning};
use baton_core::decide::lease::{Here, LeaseState, lease_state};
use baton_core::decide::loop_resume::{
    self, OtherLoop, ResumeFacts, branch_step, brief_step, decide_loop_resume, is_resumable,
    last_write, resume_step,
};
use baton_core::decide::loop_write::{
    check_key_collision, check_reset, check_transition, decide_init,
};
use baton_core::decide::ownership::{OwnerRecord, Writer, gate};
use baton_core::decide::run_resume::{
    PlanNow, RunFacts, SectionNow, critic_recorded, decide_run_resume, restoration,
};
use baton_core::model::{BatchState, LoopState, Phase, RunState};
use baton_store::read::{Access, parse_state};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// The first byte picks the file: a loop-state, the batch-state, a run-state or a journal.
pub fn state_json(data: &[u8]) {
    let (which, bytes) = crate::split_selector(data, 4);
    match which {
        0 => {
            if let Some(state) = round_trip::<LoopState>(bytes) {
                decide_loop(&state);
            }
        }
        1 => {
            if let Some(state) = round_trip::<BatchState>(bytes) {
                decide_batch(&state);
            }
        }
        2 => {
            if let Some(state) = round_trip::<RunState>(bytes) {
                decide_run(&state);
            }
        }
        _ => journal(bytes),
    }
}

/// Parses as the store reads a state file, writes it back as the store writes one, and reads
/// that again: the same state, with the same access.
fn round_trip<T: DeserializeOwned + Serialize + PartialEq + std::fmt::Debug>(
    bytes: &[u8],
) -> Option<T> {
    let path = Path::new("state.json");
    let (state, access) = parse_state::<T>(path, bytes).ok()?;
    let mut written = serde_json::to_vec_pretty(&state).expect("a parsed state serializes");
    written.push(b'\n');
    let (again, access_again) =
        parse_state::<T>(path, &written).expect("a written state reads back");
    assert_eq!(state, again, "a state changed through a write and a read");
    assert_eq!(
        access, access_again,
        "a state's access changed through a rewrite"
    );
    // A state of a newer schema is only shown, never decided on or rewritten.
    (access == Access::ReadWrite).then_some(state)
}

fn decide_loop(state: &LoopState) {
    let mut touched = state.clone();
    let others = [OtherLoop {
        key: "OTHER-1".into(),
        status: state.status,
        last_updated: state.liveness(crate::nows()[0]),
    }];
    for now in crate::nows() {
        let _ = is_resumable(state, now);
        let _ = loop_resume::resume_after(state);
        let _ = last_write(state, now);
        let _ = brief_step(state, "PROJ-1");
        let _ = resume_step(state);
        let _ = state.breadcrumb();
        let _ = state.position();
        let _ = state.open_findings();
        for checked_out in [None, Some("main"), state.branch.as_deref()] {
            let _ = branch_step(state, checked_out);
        }
        for me in [None, Some("other-session"), state.session_id.as_deref()] {
            for tree_dirty in [None, Some(false), Some(true)] {
                for work_committed in [None, Some(false), Some(true)] {
                    let facts = ResumeFacts {
                        ticket_arg: "PROJ-1",
                        state: Some(state),
                        me,
                        now,
                        tree_dirty,
                        checked_out: state.branch.as_deref(),
                        work_committed,
                        others: &others,
                    };
                    let decision = decide_loop_resume(&facts);
                    assert!(!decision.decision.verdict.as_str().is_empty());
                }
            }
            let _ = decide_init(Some(state), me, now, "PROJ-1");
            let _ = check_reset(state, me, now, false, "PROJ-1");
            let record = OwnerRecord {
                session: state.session_id.as_deref(),
                liveness: state.liveness(now),
                batch_active: None,
                released: state.status == baton_core::model::LoopStatus::Interrupted,
                epoch: state.owner_epoch,
            };
            for force in [false, true] {
                let writer = Writer {
                    session: me,
                    epoch: Some(state.owner_epoch),
                    force,
                };
                let _ = gate(record, writer, now, "loop-state", "baton loop show");
            }
        }
        for phase in Phase::NAMES {
            for action in [None, Some("spawned"), Some("engineer_spawned")] {
                let _ = check_transition(state, phase, action, "PROJ-1");
            }
        }
        touched.touch(now);
    }
    let _ = check_key_collision(state, "PROJ-1", "PROJ-1");
    if let Some(ticket) = state.ticket_id.as_deref() {
        let _ = check_key_collision(state, ticket, "PROJ-1");
    }
    // A heartbeat's write reads back too.
    let written = serde_json::to_vec_pretty(&touched).expect("a touched state serializes");
    let (again, _) = parse_state::<LoopState>(Path::new("state.json"), &written)
        .expect("a touched state reads back");
    assert_eq!(
        touched, again,
        "a touched state changed through a write and a read"
    );
}

fn decide_batch(state: &BatchState) {
    let _ = state.next_ticket();
    let _ = state.blocked().count();
    let _ = state.is_finished();
    for now in crate::nows() {
        for me in [None, Some("other-session"), state.session_id.as_deref()] {
            for n in [1, 2, 5] {
                let _ = decide_batch_start(Some(state), n, me, now);
            }
            let _ = single_ticket_warning(Some(state), me, now);
            let record = OwnerRecord {
                session: state.session_id.as_deref(),
                liveness: state.liveness(now),
                batch_active: Some(state.is_active()),
                released: false,
                epoch: state.owner_epoch,
            };
            let writer = Writer {
                session: me,
                epoch: None,
                force: false,
            };
            let _ = gate(record, writer, now, "batch-state", "baton batch show");
        }
    }
}

fn decide_run(run: &RunState) {
    let _ = restoration(run);
    let sha = run
        .plan
        .as_ref()
        .and_then(|p| p.sha256.clone())
        .unwrap_or_default();
    let _ = critic_recorded(run, &sha);
    let sections: Option<Vec<SectionNow>> = run.alignment.as_ref().map(|a| {
        a.sections
            .iter()
            .map(|s| SectionNow {
                name: s.name.clone(),
                sha256: Some("0".repeat(64)),
                text: Some("changed\ntext\n".into()),
            })
            .collect()
    });
    for now in crate::nows() {
        let here = Here {
            host: "host".into(),
            boot_id: Some("boot".into()),
            session: Some("session".into()),
            pid: Some((42, 4242)),
            token_sha256: None,
            shared_store: false,
        };
        let ttl = jiff::SignedDuration::from_secs(
            i64::try_from(run.policy.lease_ttl_secs).unwrap_or(i64::MAX),
        );
        for alive in [None, Some(false), Some(true)] {
            let _ = lease_state(run.lease.as_ref(), &here, alive, now, ttl);
        }
        let plans = [
            None,
            Some(PlanNow {
                sha256: sha.clone(),
                mtime: now,
                sensitive: Vec::new(),
            }),
            Some(PlanNow {
                sha256: "f".repeat(64),
                mtime: jiff::Timestamp::UNIX_EPOCH,
                sensitive: vec!["hooks/x.py".into()],
            }),
        ];
        for plan in plans {
            for lease in [
                LeaseState::Free,
                LeaseState::Mine,
                LeaseState::Live("held".into()),
                LeaseState::Stale("gone".into()),
            ] {
                let facts = RunFacts {
                    run,
                    head: run.base_commit.clone(),
                    staged: vec!["src/lib.rs".into()],
                    allow_staged: false,
                    sections: sections.clone(),
                    lease,
                    plan: plan.clone(),
                    now,
                };
                let decision = decide_run_resume(&facts);
                assert!(!decision.decision.verdict.as_str().is_empty());
            }
        }
    }
}

/// A journal: every line that is not blank is an event or is counted as skipped, and an event
/// appended as one line reads back as itself.
fn journal(bytes: &[u8]) {
    let (events, skipped) = baton_store::journal::parse(bytes);
    let lines = bytes
        .split(|&b| b == b'\n')
        .filter(|l| !l.iter().all(u8::is_ascii_whitespace))
        .count();
    assert_eq!(
        events.len() + skipped,
        lines,
        "a journal line was neither read nor counted"
    );
    for event in &events {
        let line = serde_json::to_string(event).expect("an event serializes");
        assert!(!line.contains('\n'), "an event is written on one line");
        let (again, skipped) = baton_store::journal::parse(line.as_bytes());
        assert_eq!(
            (again.as_slice(), skipped),
            (std::slice::from_ref(event), 0)
        );
    }
}
