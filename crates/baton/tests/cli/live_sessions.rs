//! A live session is never clobbered, and no work is lost on the way back: legacy adoption,
//! batch resumes and ownerless batches pass the ownership gate; git and its hooks run outside
//! the lock; a sessionless caller is warned; resume and accept judge the loop's own branch,
//! keep the Brief out of a stash, wait out a rate limit and put an owed Brief first.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::process::Stdio;

use serde_json::{Value, json};

use baton_store::RecordKey;

use crate::common::{TestEnv, at, rules};

#[test]
fn a_live_legacy_loop_of_another_session_is_left_where_it_is() {
    let env = TestEnv::new();
    let legacy = RecordKey::LegacyLoop;
    env.write_legacy_loop(&json!({
        "schema_version": 1, "session_id": "A", "ticket_id": "PROJ-1", "branch": "main",
        "repo": "acme/app", "base_branch": "main", "status": "active",
        "interrupted_at": null, "interrupt_reason": null,
        "last_phase": "skeptic", "last_phase_action": "spawned",
        "loop_state": {"phase": "skeptic", "iteration": 1, "max_iterations": 3,
                       "findings_log": [], "qa_failures_log": [],
                       "last_engineer_summary": null, "termination_reason": null},
        "last_updated": at(0)
    }));
    let before = env.record_bytes(&legacy);

    let out = env.baton("B", 2, &["resume", "PROJ-1"]);
    out.assert_code(0);
    assert!(out.stdout.contains("verdict: live"), "{}", out.stdout);
    assert!(out.stdout.contains("left in place"), "{}", out.stdout);
    assert_eq!(env.record_bytes(&legacy), before, "not moved");
    assert!(!env.has_loop("PROJ-1"));
    env.baton("B", 3, &["loop", "init", "PROJ-1"])
        .assert_code(3);
    env.set_phase("B", 3, "PROJ-1", "skeptic", "returned")
        .assert_code(3);
    assert_eq!(env.record_bytes(&legacy), before);

    // Once that session has gone quiet, the legacy loop is adopted and offered.
    let out = env.baton("B", 20, &["--json", "resume", "PROJ-1"]);
    assert_eq!(out.json()["verdict"], "offer");
    assert!(!env.has_record(&legacy));
    assert!(env.has_loop("PROJ-1"));
}

/// What the originating Stop hook writes into an active batch when its session ends.
fn interrupted_batch(env: &TestEnv, session: Option<&str>, status: &str, minute: i64) {
    env.write_batch(&json!({
        "schema_version": 1, "session_id": session,
        "batch_id": "PROJ-batch-2026-03-01T11:00:00Z-1a2b", "status": status,
        "created_at": at(minute - 30), "updated_at": at(minute),
        "interrupted_at": if status == "interrupted" { json!(at(minute)) } else { json!(null) },
        "interrupt_reason": if status == "interrupted" { json!("unknown") } else { json!(null) },
        "paused_at": null, "pause_reason": null,
        "wallclock_cap_min": 90, "wallclock_started_at": at(minute - 30),
        "tickets": [{"ticket_id": "PROJ-1", "status": "complete"},
                    {"ticket_id": "PROJ-2", "status": "pending"}],
        "replan_log": []
    }));
}

#[test]
fn a_resumed_interrupted_batch_is_active_under_its_new_owner() {
    let env = TestEnv::new();
    interrupted_batch(&env, Some("A"), "interrupted", 0);
    let out = env.baton("B", 1, &["--json", "batch", "resume"]);
    out.assert_code(0);
    let v = out.json();
    assert_eq!(v["status"], "active");
    assert_eq!(v["epoch"], 1);
    assert!(v["next"].as_str().unwrap().contains("PROJ-2"));
    let batch = env.read_batch();
    assert_eq!(
        (
            &batch["status"],
            &batch["session_id"],
            &batch["owner_epoch"]
        ),
        (&json!("active"), &json!("B"), &json!(1))
    );
    assert_eq!(batch["interrupted_at"], Value::Null);
    assert_eq!(
        batch["wallclock_started_at"],
        at(-30),
        "the wall clock is kept"
    );

    // A third session cannot archive it now.
    let out = env.baton("C", 2, &["batch", "start", "PROJ-7", "PROJ-8"]);
    out.assert_code(3);
    assert!(out.stdout.contains("Another batch session is active"));
    // The old owner's epoch no longer writes.
    env.baton(
        "A",
        3,
        &[
            "batch",
            "ticket",
            "PROJ-2",
            "--status",
            "in_progress",
            "--epoch",
            "0",
        ],
    )
    .assert_code(3);

    // The originating Stop hook marks its own session's batch interrupted after every turn: that
    // session's next ticket write runs on.
    interrupted_batch(&env, Some("B"), "interrupted", 4);
    let ticket = ["batch", "ticket", "PROJ-2", "--status", "in_progress"];
    env.baton("B", 5, &ticket).assert_code(0);
    assert_eq!(env.read_batch()["status"], "active");
    // A batch the operator paused, or one that stalled, moves only after `batch resume`; so does
    // one another session interrupted.
    for (owner, status) in [("B", "paused"), ("B", "stalled"), ("A", "interrupted")] {
        interrupted_batch(&env, Some(owner), status, 4);
        let before = env.snapshot();
        let out = env.baton("B", 30, &ticket);
        out.assert_code(3);
        assert!(
            out.stdout.contains("baton batch resume"),
            "{status}: {}",
            out.stdout
        );
        assert_eq!(env.snapshot(), before, "{status}");
        env.baton("B", 30, &["batch", "resume"]).assert_code(0);
        assert_eq!(env.read_batch()["status"], "active", "{status}");
        env.baton("B", 30, &ticket).assert_code(0);
    }
}

#[test]
fn an_ownerless_batch_in_any_status_needs_force() {
    for status in ["complete", "stalled", "interrupted", "active"] {
        let env = TestEnv::new();
        interrupted_batch(&env, None, status, 0);
        let out = env.baton("B", 30, &["batch", "start", "PROJ-7", "PROJ-8"]);
        out.assert_code(3);
        assert!(
            out.stdout.contains("gate.null-owner"),
            "{status}: {}",
            out.stdout
        );
        env.baton("B", 30, &["batch", "start", "PROJ-7", "PROJ-8", "--force"])
            .assert_code(0);
    }
}

/// An interrupted loop of session A with partial work in the tree, at minute 0.
fn interrupted_dirty(env: &TestEnv, ticket: &str) {
    env.baton("A", 0, &["loop", "init", ticket]).assert_code(0);
    env.set_phase("A", 0, ticket, "qa", "engineer_spawned")
        .assert_code(0);
    env.baton("A", 0, &["loop", "interrupt", ticket])
        .assert_code(0);
    env.write("partial.rs", "// half done\n");
}

#[test]
fn a_slow_commit_hook_runs_outside_the_lock_and_other_tickets_go_on() {
    let env = TestEnv::new();
    env.baton("C", 0, &["loop", "init", "PROJ-2"])
        .assert_code(0);
    interrupted_dirty(&env, "PROJ-1");
    // The hook runs while `resume accept --commit` is in git: it heartbeats another ticket and
    // looks at the accepted loop itself. With the lock held across git, both would wait on it.
    let hook = env.repo.join(".git/hooks/pre-commit");
    let log = env.repo.parent().unwrap().join("hook.log");
    std::fs::write(
        &hook,
        format!(
            "#!/bin/sh\nexec >>{log} 2>&1\nBATON_LOCK_WAIT=2s timeout 10 \"$BATON\" --session C loop heartbeat PROJ-2; echo \"heartbeat exit $?\"\nBATON_LOCK_WAIT=2s timeout 10 \"$BATON\" --session D --json resume PROJ-1; echo \"resume exit $?\"\n",
            log = log.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = env
        .command(Some("B"), &at(20))
        .env("BATON", env!("CARGO_BIN_EXE_baton"))
        .args(["--json", "resume", "accept", "PROJ-1", "--commit"])
        .output()
        .unwrap();
    let out = crate::common::to_run(out);
    out.assert_code(0);
    let log = std::fs::read_to_string(&log).unwrap();
    assert!(log.contains("heartbeat exit 0"), "{log}");
    assert!(log.contains("heartbeat: PROJ-2"), "{log}");
    // While git ran, the loop was already claimed: another session sees it live.
    assert!(log.contains("\"verdict\":\"live\""), "{log}");
    assert!(log.contains("resume exit 0"), "{log}");
    let state = env.read_loop("PROJ-1");
    assert_eq!(
        (
            &state["session_id"],
            &state["owner_epoch"],
            &state["resume_count"]
        ),
        (&json!("B"), &json!(1), &json!(1))
    );
}

#[test]
fn a_refused_commit_gives_the_loop_back_unchanged() {
    let env = TestEnv::new();
    interrupted_dirty(&env, "PROJ-1");
    let hook = env.repo.join(".git/hooks/pre-commit");
    std::fs::write(&hook, "#!/bin/sh\necho 'lint failed' >&2\nexit 1\n").unwrap();
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    let before = env.snapshot();
    let out = env.baton("B", 20, &["resume", "accept", "PROJ-1", "--commit"]);
    out.assert_code(1);
    assert!(out.stderr.contains("lint failed"), "{}", out.stderr);
    assert_eq!(env.snapshot(), before, "the claim was given back");
}

#[test]
fn a_lock_that_is_not_released_answers_exit_3_with_the_holders_pid() {
    crate::files_only!("the test holds the flock of a state file");
    let env = TestEnv::new();
    env.baton("A", 0, &["loop", "init", "PROJ-1"])
        .assert_code(0);
    let path = env.state_dir().join("locks/loop-state-PROJ-1.json.lock");
    let mut held = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
        .unwrap();
    held.lock().unwrap();
    held.set_len(0).unwrap();
    writeln!(held, "{}", std::process::id()).unwrap();
    let before = env.snapshot();
    let out = env
        .command(Some("A"), &at(1))
        .env("BATON_LOCK_WAIT", "200ms")
        .args([
            "loop", "set", "PROJ-1", "--phase", "qa", "--action", "returned",
        ])
        .output()
        .unwrap();
    let out = crate::common::to_run(out);
    out.assert_code(3);
    assert!(
        out.stderr
            .contains(&format!("is locked by pid {}", std::process::id())),
        "{}",
        out.stderr
    );
    assert_eq!(env.snapshot(), before);
    // Another ticket does not contend with it.
    env.baton("A", 1, &["loop", "init", "PROJ-2"])
        .assert_code(0);
    drop(held);
}

#[test]
fn no_session_at_all_owns_its_own_loop_and_is_told_nothing_protects_it() {
    let env = TestEnv::new();
    let out = env.run(None, &at(0), &["loop", "init", "PROJ-1"]);
    out.assert_code(0);
    assert!(
        out.stderr
            .contains("warning: no session id (`--session`, `BATON_SESSION` or `CLAUDE_CODE_SESSION_ID`): nothing protects this loop"),
        "{}",
        out.stderr
    );
    let out = env.run(None, &at(1), &["--json", "resume", "PROJ-1"]);
    out.assert_code(0);
    let v = out.json();
    assert_eq!(v["verdict"], "own", "{}", out.stdout);
    assert!(rules(&v).contains(&"loop.no-session".to_string()));
    let out = env.run(
        None,
        &at(2),
        &[
            "loop", "set", "PROJ-1", "--phase", "qa", "--action", "returned",
        ],
    );
    out.assert_code(0);
    assert!(out.stderr.contains("nothing protects this loop"));

    // Neither a ticket nor a session: a random key no later call could address.
    let out = env.run(None, &at(3), &["loop", "init", ""]);
    out.assert_code(2);
    assert!(out.stderr.contains("BATON_SESSION"), "{}", out.stderr);
    assert!(!env.has_loop("session-nosid"));

    // An empty BATON_SESSION does not hide CLAUDE_CODE_SESSION_ID.
    let out = env
        .command(None, &at(4))
        .env("BATON_SESSION", "")
        .env("CLAUDE_CODE_SESSION_ID", "claude-1")
        .args(["loop", "init", "PROJ-9"])
        .output()
        .unwrap();
    crate::common::to_run(out).assert_code(0);
    assert_eq!(env.read_loop("PROJ-9")["session_id"], "claude-1");
}

#[test]
fn resume_and_accept_judge_the_loops_own_branch() {
    let env = TestEnv::new();
    env.git(&["switch", "--quiet", "-c", "proj-1"]);
    env.baton("A", 0, &["loop", "init", "PROJ-1"])
        .assert_code(0);
    env.write("feature.rs", "fn f() {}\n");
    env.git(&["add", "feature.rs"]);
    env.git(&["commit", "--quiet", "-m", "engineer output"]);
    env.set_phase("A", 1, "PROJ-1", "engineer", "returned")
        .assert_code(0);
    env.baton("A", 2, &["loop", "interrupt", "PROJ-1"])
        .assert_code(0);
    env.git(&["switch", "--quiet", "main"]);

    let out = env.baton("B", 20, &["--json", "resume", "PROJ-1"]);
    let v = out.json();
    assert!(rules(&v).contains(&"loop.other-branch".to_string()), "{v}");
    assert!(
        v["next"]
            .as_str()
            .unwrap()
            .starts_with("switch to its branch first (`git switch proj-1`)"),
        "{v}"
    );
    let out = env.baton("B", 20, &["--json", "resume", "accept", "PROJ-1"]);
    out.assert_code(0);
    let v = out.json();
    let fired = rules(&v);
    assert!(!fired.contains(&"loop.lost-work".to_string()), "{fired:?}");
    assert!(v["next"].as_str().unwrap().contains("git switch proj-1"));
}

#[test]
fn lost_work_is_flagged_for_engineer_returned_with_or_without_a_summary() {
    for summary in [None, Some("fixed the null deref")] {
        let env = TestEnv::new();
        env.git(&["switch", "--quiet", "-c", "proj-1"]);
        env.baton("A", 0, &["loop", "init", "PROJ-1"])
            .assert_code(0);
        let mut args = vec![
            "loop", "set", "PROJ-1", "--phase", "engineer", "--action", "returned",
        ];
        if let Some(s) = summary {
            args.extend(["--engineer-summary", s]);
        }
        env.baton("A", 1, &args).assert_code(0);
        env.baton("A", 2, &["loop", "interrupt", "PROJ-1"])
            .assert_code(0);
        let out = env.baton("B", 20, &["--json", "resume", "accept", "PROJ-1"]);
        out.assert_code(0);
        let v = out.json();
        assert!(
            rules(&v).contains(&"loop.lost-work".to_string()),
            "{summary:?}: {v}"
        );
        assert!(v["next"].as_str().unwrap().contains("find the lost work"));
    }
}

#[test]
fn discard_keeps_the_brief_and_records_the_stash_before_making_it() {
    crate::files_only!("the git stand-in reads the loop file while the command runs");
    let env = TestEnv::new();
    // An untracked Brief, as a conductor authors it mid-loop.
    env.write("briefs/proj-1.md", "# Brief\nGoal: fix it\n");
    env.baton("A", 0, &["loop", "init", "PROJ-1"])
        .assert_code(0);
    env.baton(
        "A",
        0,
        &[
            "loop",
            "artifact",
            "PROJ-1",
            "--tier",
            "brief",
            "--brief",
            "briefs/proj-1.md",
        ],
    )
    .assert_code(0);
    env.set_phase("A", 0, "PROJ-1", "qa", "engineer_spawned")
        .assert_code(0);
    env.baton("A", 0, &["loop", "interrupt", "PROJ-1"])
        .assert_code(0);
    env.write("partial.rs", "// half done\n");

    // A `git` in front of the real one copies the loop-state as it is when the stash is made.
    let bin = env.repo.parent().unwrap().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let real_git = String::from_utf8(
        std::process::Command::new("sh")
            .args(["-c", "command -v git"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let seen = env.repo.parent().unwrap().join("seen-at-stash.json");
    std::fs::write(
        bin.join("git"),
        format!(
            "#!/bin/sh\nif [ \"$1\" = stash ] && [ \"$2\" = push ]; then cp {loop_file} {seen}; fi\nexec {real} \"$@\"\n",
            loop_file = env.loop_file("PROJ-1").display(),
            seen = seen.display(),
            real = real_git.trim()
        ),
    )
    .unwrap();
    std::fs::set_permissions(bin.join("git"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let out = env
        .command(Some("B"), &at(20))
        .env("PATH", path)
        .args(["--json", "resume", "accept", "PROJ-1", "--discard"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let out = crate::common::to_run(out);
    out.assert_code(0);

    let at_stash: Value = serde_json::from_slice(&std::fs::read(&seen).unwrap()).unwrap();
    let message = at_stash["discarded_work"]["message"].as_str().unwrap();
    assert!(message.contains("PROJ-1"), "{at_stash}");
    assert_eq!(at_stash["discarded_work"]["stash"], Value::Null);
    let after = env.read_loop("PROJ-1");
    assert_eq!(after["discarded_work"]["message"], message);
    let stash = after["discarded_work"]["stash"].as_str().unwrap();
    assert!(env.git(&["stash", "list"]).contains(message));
    assert!(env.git(&["rev-parse", "--short", "stash@{0}"]).trim() == stash);

    assert!(
        env.repo.join("briefs/proj-1.md").exists(),
        "the Brief stays"
    );
    assert!(
        !env.repo.join("partial.rs").exists(),
        "the partial work is stashed"
    );
    assert!(out.stdout.contains("Goal: fix it"), "the Brief is printed");

    // The next session is told where the work went.
    env.set_phase("B", 21, "PROJ-1", "qa", "engineer_spawned")
        .assert_code(0);
    let out = env.baton("C", 40, &["resume", "PROJ-1"]);
    assert!(
        out.stdout.contains(&format!("in git stash {stash}")),
        "{}",
        out.stdout
    );
}

#[test]
fn a_rate_limit_with_no_reset_time_waits_60_seconds_and_accept_keeps_the_wait() {
    let env = TestEnv::new();
    env.baton("A", 0, &["loop", "init", "PROJ-1"])
        .assert_code(0);
    env.set_phase("A", 0, "PROJ-1", "qa", "returned")
        .assert_code(0);
    env.baton(
        "A",
        1,
        &["loop", "interrupt", "PROJ-1", "--reason", "rate_limit"],
    )
    .assert_code(0);
    let reset = "2026-03-01T12:02:00Z";
    let half_way = "2026-03-01T12:01:30Z";
    let out = env.run(Some("B"), half_way, &["--json", "resume", "PROJ-1"]);
    let v = out.json();
    assert_eq!(v["resume_after"], reset);
    assert!(rules(&v).contains(&"loop.rate-limit-wait".to_string()));
    assert!(
        v["next"]
            .as_str()
            .unwrap()
            .starts_with(&format!("wait until {reset}"))
    );
    // Another session waits for the reset; the loop's own session may resume at once, told to
    // wait before it spawns.
    env.run(Some("B"), half_way, &["resume", "accept", "PROJ-1"])
        .assert_code(3);
    let out = env.run(
        Some("A"),
        half_way,
        &["--json", "resume", "accept", "PROJ-1"],
    );
    out.assert_code(0);
    assert!(
        out.json()["next"]
            .as_str()
            .unwrap()
            .starts_with(&format!("wait until {reset}")),
        "{}",
        out.stdout
    );
}

#[test]
fn an_owed_brief_is_the_next_step_in_resume_and_accept() {
    let env = TestEnv::new();
    env.baton("A", 0, &["loop", "init", "PROJ-1"])
        .assert_code(0);
    env.set_phase("A", 0, "PROJ-1", "qa", "returned")
        .assert_code(0);
    env.baton("A", 0, &["loop", "artifact", "PROJ-1", "--tier", "brief"])
        .assert_code(0);
    let out = env.baton("A", 1, &["--json", "resume", "PROJ-1"]);
    assert_eq!(out.json()["verdict"], "own");
    assert!(
        out.json()["next"]
            .as_str()
            .unwrap()
            .contains("retroactive Brief")
    );
    env.baton("A", 2, &["loop", "interrupt", "PROJ-1"])
        .assert_code(0);
    let out = env.baton("B", 20, &["--json", "resume", "PROJ-1"]);
    let next = out.json()["next"].as_str().unwrap().to_string();
    assert!(
        next.starts_with("`baton resume accept PROJ-1`, then author the retroactive Brief"),
        "{next}"
    );
    let (brief, spawn) = (next.find("retroactive Brief"), next.find("spawn"));
    assert!(brief < spawn, "{next}");
    let out = env.baton("B", 20, &["--json", "resume", "accept", "PROJ-1"]);
    let next = out.json()["next"].as_str().unwrap().to_string();
    let brief = next.find("retroactive Brief").expect(&next);
    let spawn = next.find("spawn the engineer").expect(&next);
    assert!(brief < spawn, "{next}");
}

#[test]
fn finishing_a_finished_loop_changes_nothing_and_tier_none_clears_the_brief_debt() {
    let env = TestEnv::new();
    env.baton("A", 0, &["loop", "init", "PROJ-1"])
        .assert_code(0);
    env.baton("A", 0, &["loop", "artifact", "PROJ-1", "--tier", "plan"])
        .assert_code(0);
    let out = env.baton("A", 1, &["loop", "artifact", "PROJ-1", "--tier", "none"]);
    out.assert_code(0);
    assert!(out.stdout.contains("loop.brief-paid"), "{}", out.stdout);
    assert!(!out.stdout.contains("is refused"), "{}", out.stdout);
    assert!(env.read_loop("PROJ-1").get("brief_owed").is_none());
    env.set_phase("A", 2, "PROJ-1", "qa", "engineer_spawned")
        .assert_code(0);

    env.baton(
        "A",
        3,
        &["loop", "finish", "PROJ-1", "--status", "complete"],
    )
    .assert_code(0);
    let before = env.snapshot();
    let out = env.baton(
        "A",
        4,
        &["--json", "loop", "finish", "PROJ-1", "--status", "stalled"],
    );
    out.assert_code(0);
    assert_eq!(out.json()["changed"], false);
    assert_eq!(env.snapshot(), before);
    let out = env.baton(
        "A",
        4,
        &["loop", "finish", "PROJ-1", "--status", "complete"],
    );
    assert!(
        out.stdout.contains("already complete; nothing changed"),
        "{}",
        out.stdout
    );
}

/// A legacy `loop-state.json` of `session`, as the originating conductor and Stop hook leave it.
fn legacy(env: &TestEnv, session: Option<&str>, status: &str, minute: i64) -> RecordKey {
    env.write_legacy_loop(
        &json!({
            "schema_version": 1, "session_id": session, "ticket_id": "PROJ-1",
            "branch": "main", "repo": "acme/app", "base_branch": "main", "status": status,
            "interrupted_at": if status == "interrupted" { json!(at(minute).replace('Z', ".000Z")) } else { json!(null) },
            "interrupt_reason": if status == "interrupted" { json!("unknown") } else { json!(null) },
            "last_phase": "qa", "last_phase_action": "returned",
            "loop_state": {"phase": "qa", "iteration": 2, "max_iterations": 3,
                           "findings_log": [], "qa_failures_log": [],
                           "last_engineer_summary": null, "termination_reason": null},
            "last_updated": at(minute)
        }),
    );
    RecordKey::LegacyLoop
}

#[test]
fn a_legacy_loop_the_stop_hook_just_marked_is_still_its_sessions() {
    // The originating Stop hook marks the legacy file interrupted after every turn of a
    // session that goes on working.
    let env = TestEnv::new();
    let path = legacy(&env, Some("A"), "interrupted", 0);
    let out = env.baton("B", 2, &["--json", "resume", "PROJ-1"]);
    assert_eq!(out.json()["verdict"], "live", "{}", out.stdout);
    assert!(rules(&out.json()).contains(&"loop.legacy-held".to_string()));
    assert!(env.has_record(&path) && !env.has_loop("PROJ-1"));
    env.baton("B", 2, &["resume", "accept", "PROJ-1"])
        .assert_code(3);
    env.baton("B", 2, &["resume", "fresh", "PROJ-1"])
        .assert_code(3);
    // `loop show` and the list see it.
    let out = env.baton("B", 2, &["loop", "show", "PROJ-1"]);
    out.assert_code(0);
    assert!(out.stdout.contains("the legacy file"), "{}", out.stdout);
    let out = env.baton("B", 2, &["resume"]);
    assert!(
        out.stdout.contains("PROJ-1: live (legacy loop-state.json)"),
        "{}",
        out.stdout
    );

    // A stale keyed file for the same ticket does not make it resumable.
    let mut keyed = env.record(&path).unwrap();
    keyed["last_updated"] = json!(at(-60));
    keyed["status"] = json!("active");
    env.write_loop("PROJ-1", &keyed);
    let out = env.baton("B", 3, &["--json", "resume", "PROJ-1"]);
    assert_eq!(out.json()["verdict"], "live", "{}", out.stdout);
    env.baton("B", 3, &["resume", "accept", "PROJ-1"])
        .assert_code(3);
}

#[test]
fn a_sessionless_caller_adopts_its_own_sessionless_legacy_loop() {
    let env = TestEnv::new();
    let path = legacy(&env, None, "active", 0);
    let out = env.run(None, &at(1), &["--json", "resume", "PROJ-1"]);
    assert_eq!(out.json()["verdict"], "own", "{}", out.stdout);
    assert!(!env.has_record(&path));
    env.run(
        None,
        &at(2),
        &[
            "loop", "set", "PROJ-1", "--phase", "qa", "--action", "spawned",
        ],
    )
    .assert_code(0);
}

#[test]
fn discard_on_another_branch_is_refused_and_stashes_nothing() {
    let env = TestEnv::new();
    env.git(&["switch", "--quiet", "-c", "feat"]);
    interrupted_dirty(&env, "PROJ-1");
    std::fs::remove_file(env.repo.join("partial.rs")).unwrap();
    env.git(&["switch", "--quiet", "main"]);
    env.write("other.txt", "someone else's work\n");
    let before = env.snapshot();
    let out = env.baton("B", 30, &["resume", "accept", "PROJ-1", "--discard"]);
    out.assert_code(4);
    assert!(out.stdout.contains("git switch feat"), "{}", out.stdout);
    assert!(env.repo.join("other.txt").exists());
    assert!(env.git(&["stash", "list"]).is_empty());
    assert_eq!(env.snapshot(), before);
}

#[test]
fn an_accept_stopped_after_its_claim_is_finished_by_its_session() {
    let env = TestEnv::new();
    env.baton("A", 0, &["loop", "init", "PROJ-1"])
        .assert_code(0);
    env.set_phase("A", 0, "PROJ-1", "qa", "returned")
        .assert_code(0);
    env.baton("A", 0, &["loop", "interrupt", "PROJ-1"])
        .assert_code(0);
    // What a claim leaves when the accept dies during git: this session's, active, fresh, and
    // still carrying the interrupt.
    let mut state = env.read_loop("PROJ-1");
    state["session_id"] = json!("B");
    state["owner_epoch"] = json!(1);
    state["status"] = json!("active");
    state["last_updated"] = json!(at(20));
    state["discarded_work"] =
        json!({"message": "baton: partial work of PROJ-1 set aside", "stash": null, "at": at(20)});
    env.write_loop("PROJ-1", &state);
    env.baton("C", 21, &["resume", "accept", "PROJ-1"])
        .assert_code(3);
    let out = env.baton("B", 21, &["resume", "accept", "PROJ-1"]);
    out.assert_code(0);
    assert!(out.stdout.contains("resumed PROJ-1"), "{}", out.stdout);
    assert!(out.stdout.contains("did not confirm it"), "{}", out.stdout);
    let after = env.read_loop("PROJ-1");
    assert_eq!(
        (
            &after["resume_count"],
            &after["interrupted_at"],
            &after["owner_epoch"]
        ),
        (&json!(1), &Value::Null, &json!(1))
    );
}

#[test]
fn a_write_that_changes_nothing_takes_nothing_over() {
    let env = TestEnv::new();
    env.baton("A", 0, &["loop", "init", "PROJ-1"])
        .assert_code(0);
    env.baton(
        "A",
        1,
        &["loop", "finish", "PROJ-1", "--status", "complete"],
    )
    .assert_code(0);
    let before = env.snapshot();
    let out = env.baton(
        "B",
        30,
        &["loop", "finish", "PROJ-1", "--status", "stalled"],
    );
    out.assert_code(0);
    assert!(out.stdout.contains("nothing changed"));
    assert!(!out.stdout.contains("taken over"), "{}", out.stdout);
    assert_eq!(env.snapshot(), before);
}

#[test]
fn an_ownerless_finished_loop_points_at_fresh_with_force() {
    let env = TestEnv::new();
    env.baton("A", 0, &["loop", "init", "PROJ-1"])
        .assert_code(0);
    let mut state = env.read_loop("PROJ-1");
    state["session_id"] = Value::Null;
    state["status"] = json!("complete");
    env.write_loop("PROJ-1", &state);
    let out = env.baton("B", 60, &["--json", "resume", "PROJ-1"]);
    let next = out.json()["next"].as_str().unwrap().to_string();
    assert!(next.contains("baton resume fresh PROJ-1 --force"), "{next}");
    env.baton("B", 60, &["resume", "fresh", "PROJ-1", "--force"])
        .assert_code(0);
    env.baton("B", 60, &["loop", "init", "PROJ-1"])
        .assert_code(0);
}

#[test]
fn every_finding_keeps_an_id_of_its_own() {
    let env = TestEnv::new();
    env.baton("A", 0, &["loop", "init", "PROJ-1"])
        .assert_code(0);
    let long = "the session cache is never invalidated after the user changes a password";
    env.baton(
        "A",
        1,
        &[
            "loop",
            "set",
            "PROJ-1",
            "--phase",
            "skeptic",
            "--action",
            "returned",
            "--finding",
            long,
            "--finding",
            long,
        ],
    )
    .assert_code(0);
    let log = &env.read_loop("PROJ-1")["loop_state"]["findings_log"];
    let (a, b) = (
        log[0]["id"].as_str().unwrap(),
        log[1]["id"].as_str().unwrap(),
    );
    assert_ne!(a, b);
    assert_eq!(b, format!("{a}-2"));
    let status = format!("{b}=closed");
    env.baton(
        "A",
        2,
        &[
            "loop",
            "set",
            "PROJ-1",
            "--phase",
            "engineer",
            "--action",
            "returned",
            "--finding-status",
            &status,
        ],
    )
    .assert_code(0);
    let log = &env.read_loop("PROJ-1")["loop_state"]["findings_log"];
    assert_eq!(
        (&log[0]["status"], &log[1]["status"]),
        (&json!("open"), &json!("closed"))
    );
}

#[test]
fn an_engineer_that_returned_with_nothing_committed_is_not_an_automatic_resume() {
    for (phase, action) in [
        ("engineer", "returned"),
        ("quality_gate", "engineer_returned"),
    ] {
        let env = TestEnv::new();
        env.git(&["switch", "--quiet", "-c", "proj-1"]);
        env.baton("A", 0, &["loop", "init", "PROJ-1"])
            .assert_code(0);
        env.set_phase("A", 1, "PROJ-1", phase, action)
            .assert_code(0);
        env.baton("A", 2, &["loop", "interrupt", "PROJ-1"])
            .assert_code(0);
        let v = env.baton("B", 20, &["--json", "resume", "PROJ-1"]).json();
        assert_eq!(v["mode"], "respawn", "{phase}/{action}: {v}");
        assert!(rules(&v).contains(&"loop.lost-work".to_string()), "{v}");
        env.write("partial.rs", "x\n");
        let v = env.baton("B", 20, &["--json", "resume", "PROJ-1"]).json();
        assert_eq!(v["mode"], "confirm", "{phase}/{action}: {v}");
        // With the work committed, the boundary holds.
        env.git(&["add", "partial.rs"]);
        env.git(&["commit", "--quiet", "-m", "engineer output"]);
        let v = env.baton("B", 20, &["--json", "resume", "PROJ-1"]).json();
        assert_eq!(v["mode"], "automatic", "{phase}/{action}: {v}");
    }
}

#[test]
fn the_batch_stays_live_while_its_owner_works_a_ticket() {
    let env = TestEnv::new();
    env.baton("A", 0, &["batch", "start", "PROJ-1", "PROJ-2"])
        .assert_code(0);
    env.baton("A", 1, &["loop", "init", "PROJ-1"])
        .assert_code(0);
    for minute in [8, 16, 24] {
        env.set_phase("A", minute, "PROJ-1", "qa", "returned")
            .assert_code(0);
        env.baton("A", minute + 2, &["loop", "heartbeat", "PROJ-1"])
            .assert_code(0);
    }
    let batch = env.read_batch();
    assert_eq!(batch["updated_at"], at(26), "{batch}");
    let out = env.baton("B", 30, &["batch", "start", "PROJ-7", "PROJ-8"]);
    out.assert_code(3);
    assert!(out.stdout.contains("Another batch session is active"));
    // A loop outside the batch keeps nothing live.
    env.baton("A", 31, &["loop", "init", "OTHER-1"])
        .assert_code(0);
    env.baton("A", 45, &["loop", "heartbeat", "OTHER-1"])
        .assert_code(0);
    env.baton("B", 45, &["batch", "start", "PROJ-7", "PROJ-8"])
        .assert_code(0);
}

#[test]
fn a_human_may_take_a_rate_limited_loop_before_its_reset_with_force() {
    let env = TestEnv::new();
    env.baton("A", 0, &["loop", "init", "PROJ-1"])
        .assert_code(0);
    env.set_phase("A", 0, "PROJ-1", "qa", "returned")
        .assert_code(0);
    env.baton(
        "A",
        1,
        &[
            "loop",
            "interrupt",
            "PROJ-1",
            "--reason",
            "rate_limit",
            "--resume-after",
            "2h",
        ],
    )
    .assert_code(0);
    let out = env.baton("B", 5, &["resume", "accept", "PROJ-1"]);
    out.assert_code(3);
    assert!(
        out.stdout.contains("2026-03-01T14:01:00Z"),
        "the time it opens: {}",
        out.stdout
    );
    env.set_phase("B", 5, "PROJ-1", "qa", "spawned")
        .assert_code(3);
    env.baton("B", 5, &["resume", "accept", "PROJ-1", "--force"])
        .assert_code(0);
}
