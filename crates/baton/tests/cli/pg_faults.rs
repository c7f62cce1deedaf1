//! Faults at every step of a PostgreSQL write (docs/reliability.md, "Faults at every step of
//! a server write"): the connection lost before the write, after it but before the commit, and
//! after the commit but before its answer, for each command that changes state. Each leaves
//! the old state or the new one, the record always with its journal events, the command says
//! which, and running it again is safe.
//!
//! These need a server: they run in the suite's PostgreSQL pass (`BATON_TEST_STORE`, as
//! `scripts/pg-suite.sh pg_faults` sets it), and the files pass says they are skipped there.

use baton_store::{Expect, JournalTarget, RecordKey, StoreError};
use serde_json::Value;

use crate::common::{TestEnv, loop_key, pg_mode, run_key};

const PLAN: &str = "docs/plan.md";
const PROJECT: &str = crate::runs::PROJECT;

/// Whether this is the suite's PostgreSQL pass; in the files pass, says why the test is
/// skipped (`scripts/pg-suite.sh`, which CI runs, is the pass that runs it).
fn server() -> bool {
    if pg_mode() {
        return true;
    }
    crate::common::skipped(
        "in the files pass: it runs in the PostgreSQL pass (scripts/pg-suite.sh pg_faults)",
    );
    false
}

/// A state-changing command, from the state its setup leaves.
struct Case {
    name: &'static str,
    /// Builds the starting state; gives the command's session, minute and arguments.
    setup: fn(&TestEnv) -> (&'static str, i64, Vec<String>),
    record: fn(&TestEnv) -> RecordKey,
}

fn owned(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| a.to_string()).collect()
}

fn the_run(env: &TestEnv) -> String {
    let runs = env.store().list_runs(None).unwrap();
    assert_eq!(runs.len(), 1, "one run");
    runs[0].0.clone()
}

/// A run session A started at minute 0 on a committed plan; its id.
fn planned_run(env: &TestEnv) -> String {
    env.write(".claude/PROJECT.md", PROJECT);
    env.write(PLAN, "# Plan\n\n1. Edit src/run.rs.\n");
    env.git(&["add", "."]);
    env.git(&["commit", "--quiet", "-m", "plan"]);
    env.baton("A", 0, &["run", "new", "--plan", PLAN])
        .assert_code(0);
    the_run(env)
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "loop set",
            setup: |env| {
                env.baton("A", 0, &["loop", "init", "PROJ-1"])
                    .assert_code(0);
                (
                    "A",
                    1,
                    owned(&[
                        "loop", "set", "PROJ-1", "--phase", "qa", "--action", "returned",
                    ]),
                )
            },
            record: |_| loop_key("PROJ-1"),
        },
        Case {
            name: "loop interrupt",
            setup: |env| {
                env.baton("A", 0, &["loop", "init", "PROJ-1"])
                    .assert_code(0);
                env.set_phase("A", 0, "PROJ-1", "qa", "engineer_spawned")
                    .assert_code(0);
                ("A", 1, owned(&["loop", "interrupt", "PROJ-1"]))
            },
            record: |_| loop_key("PROJ-1"),
        },
        Case {
            name: "resume accept",
            setup: |env| {
                env.baton("A", 0, &["loop", "init", "PROJ-1"])
                    .assert_code(0);
                env.set_phase("A", 0, "PROJ-1", "qa", "engineer_spawned")
                    .assert_code(0);
                env.baton("A", 0, &["loop", "interrupt", "PROJ-1"])
                    .assert_code(0);
                ("B", 20, owned(&["resume", "accept", "PROJ-1"]))
            },
            record: |_| loop_key("PROJ-1"),
        },
        Case {
            name: "batch start",
            setup: |_| ("A", 0, owned(&["batch", "start", "PROJ-1", "PROJ-2"])),
            record: |_| RecordKey::Batch,
        },
        Case {
            name: "run record",
            setup: |env| {
                let id = planned_run(env);
                ("A", 1, owned(&["run", "record", &id, "--agent", "planner"]))
            },
            record: |env| run_key(&the_run(env)),
        },
        Case {
            name: "run finish",
            setup: |env| {
                let id = planned_run(env);
                ("A", 1, owned(&["run", "finish", &id]))
            },
            record: |env| run_key(&the_run(env)),
        },
        Case {
            name: "resume fresh",
            setup: |env| {
                env.baton("A", 0, &["loop", "init", "PROJ-1"])
                    .assert_code(0);
                ("A", 1, owned(&["resume", "fresh", "PROJ-1"]))
            },
            record: |_| loop_key("PROJ-1"),
        },
    ]
}

/// The journal of a record.
fn journal(env: &TestEnv, key: &RecordKey) -> Vec<Value> {
    match key {
        RecordKey::Loop(k) => env.journal(JournalTarget::Loop(k)),
        RecordKey::Batch => env.journal(JournalTarget::Batch),
        RecordKey::Run(id) => env.journal(JournalTarget::Run(id)),
        _ => unreachable!(),
    }
}

/// A record and its journal.
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    doc: Option<Vec<u8>>,
    journal: Vec<Value>,
}

fn seen(env: &TestEnv, key: &RecordKey) -> Seen {
    Seen {
        doc: env.record_bytes(key),
        journal: journal(env, key),
    }
}

/// Runs `case`'s command with `faults` armed, from its setup; gives the run, the record and
/// journal before and after it, and the environment.
fn fault(case: &Case, faults: &str) -> (crate::common::Run, Seen, Seen, TestEnv, Vec<String>) {
    let env = TestEnv::new();
    let (session, minute, args) = (case.setup)(&env);
    let key = (case.record)(&env);
    let before = seen(&env, &key);
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = crate::common::to_run(
        env.command(Some(session), &crate::common::at(minute))
            .env("BATON_FAULTS", faults)
            .args(&argv)
            .output()
            .unwrap(),
    );
    let now = seen(&env, &key);
    (out, before, now, env, args)
}

#[test]
fn a_lost_connection_at_each_step_leaves_the_old_state_or_the_new_with_its_journal() {
    if !server() {
        return;
    }
    for case in cases() {
        // A clean run: what the command writes and appends.
        let (clean, before, after, _, _) = fault(&case, "");
        clean.assert_code(0);
        assert_ne!(before.doc, after.doc, "{}: the command writes", case.name);
        let added = after.journal.len() - before.journal.len();
        assert!(added > 0, "{}: the command journals", case.name);

        for ((point, landed), action) in [
            ("pg.write.before", false),
            ("pg.write.before-commit", false),
            ("pg.write.after-commit", true),
        ]
        .into_iter()
        .flat_map(|p| [(p, "eio"), (p, "crash")])
        {
            let what = format!("{} at {point}={action}", case.name);
            let (out, before, now, env, args) = fault(&case, &format!("{point}={action}"));
            let key = (case.record)(&env);
            // Old or new, never a write without its events nor events without their write.
            if landed {
                assert_ne!(now.doc, before.doc, "{what}: the commit landed");
                assert_eq!(
                    now.journal.len(),
                    before.journal.len() + added,
                    "{what}: the write landed with its events"
                );
            } else {
                assert_eq!(now, before, "{what}: nothing landed");
            }
            if action == "crash" {
                // Killed at that step: the server saw the connection drop.
                assert_eq!(out.code, -1, "{what}: killed\n{}", out.stderr);
            } else if landed {
                assert_eq!(out.code, 1, "{what}: exit\n{}", out.stderr);
                assert!(
                    out.stderr.contains("commit outcome unknown")
                        && out.stderr.contains("may or may not have landed"),
                    "{what}: says it may have landed\n{}",
                    out.stderr
                );
                let check = match &key {
                    RecordKey::Loop(_) => "baton loop show PROJ-1",
                    RecordKey::Batch => "baton batch show",
                    _ => "baton run show",
                };
                assert!(
                    out.stderr.contains(check),
                    "{what}: says how to check\n{}",
                    out.stderr
                );
            } else {
                assert_eq!(out.code, 1, "{what}: exit\n{}", out.stderr);
                assert!(
                    out.stderr.contains("nothing was written"),
                    "{what}: says nothing landed\n{}",
                    out.stderr
                );
            }
            // Running it again is safe: it lands once, with its events once.
            let (session, minute) = match case.name {
                "resume accept" => ("B", 20),
                "loop set" | "loop interrupt" | "run record" | "run finish" | "resume fresh" => {
                    ("A", 1)
                }
                _ => ("A", 0),
            };
            let argv: Vec<&str> = args.iter().map(String::as_str).collect();
            let again = env.baton(session, minute, &argv);
            let then = seen(&env, &key);
            if landed {
                // The change is there: a retry changes nothing more or is refused cleanly.
                assert!(
                    matches!(again.code, 0 | 3),
                    "{what}: the retry\n{}",
                    again.stderr
                );
                assert_eq!(
                    then.journal.len(),
                    now.journal.len(),
                    "{what}: the retry appends nothing twice\n{}",
                    again.stderr
                );
            } else {
                again.assert_code(0);
                assert_ne!(then.doc, before.doc, "{what}: the retry lands");
                assert_eq!(
                    then.journal.len(),
                    before.journal.len() + added,
                    "{what}: the retry lands with its events"
                );
            }
        }
    }
}

/// A write whose journal event the server refuses does not land: the record and its history
/// are one transaction.
#[test]
fn a_refused_journal_event_leaves_the_write_undone() {
    if !server() {
        return;
    }
    let env = TestEnv::new();
    env.baton("A", 0, &["loop", "init", "PROJ-1"])
        .assert_code(0);
    let key = loop_key("PROJ-1");
    let before = seen(&env, &key);
    let (url, project) = env.pg_project().unwrap();
    let settings =
        baton_store::pg::config::resolve(url, &baton_store::pg::config::Process).unwrap();
    let mut sql = baton_store::pg::connect(&settings).unwrap();
    let trigger = format!(
        "refuse_{}",
        project.replace(|c: char| !c.is_ascii_alphanumeric(), "_")
    );
    sql.batch_execute(&format!(
        "CREATE OR REPLACE FUNCTION baton_test_refuse_journal() RETURNS trigger \
           LANGUAGE plpgsql AS $$ BEGIN \
             IF NEW.project = TG_ARGV[0] THEN RAISE EXCEPTION 'journal refused'; END IF; \
             RETURN NEW; END $$; \
         CREATE TRIGGER {trigger} BEFORE INSERT ON baton_journal FOR EACH ROW \
           EXECUTE FUNCTION baton_test_refuse_journal('{project}');"
    ))
    .unwrap();
    let out = env.baton(
        "A",
        1,
        &[
            "loop", "set", "PROJ-1", "--phase", "qa", "--action", "returned",
        ],
    );
    sql.batch_execute(&format!("DROP TRIGGER {trigger} ON baton_journal"))
        .unwrap();
    assert_eq!(
        seen(&env, &key),
        before,
        "the loop was written without its journal event\nstdout:\n{}\nstderr:\n{}",
        out.stdout,
        out.stderr
    );
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(out.stderr.contains("journal refused"), "{}", out.stderr);
    // With the server taking events again, the same command lands with its event.
    env.baton(
        "A",
        1,
        &[
            "loop", "set", "PROJ-1", "--phase", "qa", "--action", "returned",
        ],
    )
    .assert_code(0);
    let after = seen(&env, &key);
    assert_ne!(after.doc, before.doc);
    assert_eq!(after.journal.len(), before.journal.len() + 1);
}

/// A write retried on the revision it read after it landed is refused by the fence: it is
/// never applied twice, and its events are not appended twice.
#[test]
fn a_stale_retry_of_a_journaled_write_is_refused_cleanly() {
    if !server() {
        return;
    }
    let env = TestEnv::new();
    env.baton("A", 0, &["loop", "init", "PROJ-1"])
        .assert_code(0);
    let store = env.store();
    let read = store.read_loop("PROJ-1").unwrap().unwrap();
    let mut state = read.state.clone();
    state.resume_count += 1;
    let event = serde_json::json!({"event": "set", "n": 1});
    let before = store.read_journal(JournalTarget::Loop("PROJ-1")).unwrap();
    let (_, appended) = store
        .write_loop_journaled(
            "PROJ-1",
            &state,
            &read.expect(),
            std::slice::from_ref(&event),
        )
        .unwrap();
    appended.unwrap();
    let again = store.write_loop_journaled(
        "PROJ-1",
        &state,
        &read.expect(),
        std::slice::from_ref(&event),
    );
    assert!(
        matches!(again, Err(StoreError::Conflict { .. })),
        "{again:?}"
    );
    let after = store.read_journal(JournalTarget::Loop("PROJ-1")).unwrap();
    assert_eq!(after.events.len(), before.events.len() + 1);
    // A record that is not there yet: created once.
    let fresh = store.write_loop_journaled(
        "PROJ-2",
        &state,
        &Expect::Absent,
        std::slice::from_ref(&event),
    );
    assert!(fresh.is_ok(), "{fresh:?}");
    let twice = store.write_loop_journaled("PROJ-2", &state, &Expect::Absent, &[event]);
    assert!(
        matches!(twice, Err(StoreError::Conflict { .. })),
        "{twice:?}"
    );
    assert_eq!(
        store
            .read_journal(JournalTarget::Loop("PROJ-2"))
            .unwrap()
            .events
            .len(),
        1
    );
}
