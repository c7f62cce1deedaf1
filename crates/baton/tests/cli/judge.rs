//! The judge of "done" as users meet it (docs/judge.md): `ledger complete` says its verdict at
//! once, `baton verdict` and `baton goal`, and each client's stop hook, fed the payloads the
//! real clients send, refusing a stop on unverified claimed work in the client's own shape.

use serde_json::Value;

use crate::common::{Run, TestEnv, at};
use crate::hooks::{fixture, run_hook};

const PLAN: &str = "plans/x";

/// A plan whose phase 1 declares one gate (`ok.txt` exists), started, worked on and claimed
/// complete by `session`.
fn claimed(session: &str) -> (TestEnv, Run) {
    let env = TestEnv::new();
    env.write("plans/x/plan.md", "# X\n## Phase 1\n");
    env.write(
        "plans/x/phase-1.md",
        "# Phase 1\n```gates\nunit: test -f ok.txt → exit 0\n```\n",
    );
    env.git(&["add", "-A"]);
    env.git(&["commit", "--quiet", "-m", "plan"]);
    env.baton(session, 0, &["ledger", "init", PLAN])
        .assert_code(0);
    env.baton(session, 1, &["ledger", "start", PLAN, "--phase", "1"])
        .assert_code(0);
    env.write("src.txt", "work\n");
    env.git(&["add", "src.txt"]);
    env.git(&["commit", "--quiet", "-m", "work"]);
    let complete = env.baton(
        session,
        2,
        &["ledger", "complete", PLAN, "--phase", "1", "--tests", "1/1"],
    );
    complete.assert_code(0);
    (env, complete)
}

fn payload(rel: &str, changes: &[(&str, Value)]) -> (Vec<u8>, String) {
    let mut v: Value = serde_json::from_slice(&fixture(rel)).unwrap();
    for (key, value) in changes {
        v[*key] = value.clone();
    }
    let session = ["session_id", "conversation_id", "sessionId"]
        .iter()
        .find_map(|k| v.get(*k).and_then(Value::as_str))
        .unwrap()
        .to_string();
    (serde_json::to_vec(&v).unwrap(), session)
}

fn stop(env: &TestEnv, client: &str, event: &str, payload: &[u8]) -> Run {
    let run = run_hook(env, &["hook", client, event], payload, &at(3), &[]);
    run.assert_code(0);
    run
}

fn verdict(env: &TestEnv, session: &str) -> Value {
    let run = env.baton(session, 4, &["--json", "verdict"]);
    run.assert_code(0);
    run.json()
}

#[test]
fn a_completion_says_its_verdict_at_once() {
    let (env, complete) = claimed("S-1");
    assert!(
        complete.stdout.contains("verdict: unverified on tree ")
            && complete
                .stdout
                .contains("run `baton gate run plans/x --phase 1`"),
        "{}",
        complete.stdout
    );
    // The gate fails, then passes once the tree has what it checks.
    env.baton("S-1", 3, &["gate", "run", PLAN, "--phase", "1"])
        .assert_code(0);
    assert_eq!(verdict(&env, "S-1")["verdict"], "failed");
    env.write("ok.txt", "");
    assert_eq!(verdict(&env, "S-1")["verdict"], "unverified");
    env.baton("S-1", 3, &["gate", "run", PLAN, "--phase", "1"])
        .assert_code(0);
    let v = verdict(&env, "S-1");
    assert_eq!(v["verdict"], "verified", "{v}");
    // The phase judged whoever claimed it, and the tree is the one its gate line names.
    let phase = env.baton("other", 4, &["--json", "verdict", PLAN, "--phase", "1"]);
    assert_eq!(phase.json()["verdict"], "verified");
    let ledger = std::fs::read_to_string(env.repo.join("plans/x/STATE.md")).unwrap();
    let tree = v["tree"].as_str().unwrap();
    assert!(
        ledger.contains(&format!("exit 0 on tree {tree})")),
        "{tree} in {ledger}"
    );
}

#[test]
fn each_client_refuses_a_stop_on_unverified_work_in_its_own_shape() {
    let cases: [(&str, &str, &str, &str); 4] = [
        ("claude", "Stop", "claude-code-2.1.332/Stop.json", "block"),
        ("codex", "Stop", "codex-0.171.0/Stop.json", "block"),
        (
            "gemini",
            "AfterAgent",
            "gemini-0.61.0/AfterAgent.json",
            "deny",
        ),
        ("cursor", "stop", "cursor-reference/stop.json", "followup"),
    ];
    for (client, event, rel, shape) in cases {
        let (bytes, session) = payload(rel, &[]);
        let (env, _) = claimed(&session);
        let run = stop(&env, client, event, &bytes);
        let out: Value = serde_json::from_str(run.stdout.trim())
            .unwrap_or_else(|e| panic!("{client}: {e}: {:?}", run.stdout));
        let reason = match shape {
            "followup" => out["followup_message"].as_str(),
            decision => {
                assert_eq!(out["decision"], decision, "{client}: {out}");
                out["reason"].as_str()
            }
        }
        .unwrap_or_default();
        assert!(
            reason.contains("Phase 1 of plans/x")
                && reason.contains("`baton gate run plans/x --phase 1`"),
            "{client}: {reason}"
        );
        // Another session's stop is not judged on this claim.
        let (other, _) = payload(rel, &[("session_id", "someone-else".into())]);
        let other = if client == "cursor" {
            payload(rel, &[("conversation_id", "someone-else".into())]).0
        } else {
            other
        };
        assert_eq!(stop(&env, client, event, &other).stdout, "", "{client}");
    }
}

#[test]
fn a_stop_on_verified_work_passes_silently_and_the_guards_let_others_through() {
    let (bytes, session) = payload("claude-code-2.1.332/Stop.json", &[]);
    let (env, _) = claimed(&session);
    let with = |changes: &[(&str, Value)]| payload("claude-code-2.1.332/Stop.json", changes).0;
    // Plan mode, background tasks, the judge turned off: let through, nothing said.
    for guarded in [
        with(&[("permission_mode", "plan".into())]),
        with(&[("background_tasks", serde_json::json!([{"id": "t1"}]))]),
    ] {
        assert_eq!(stop(&env, "claude", "Stop", &guarded).stdout, "");
    }
    let off = run_hook(
        &env,
        &["hook", "claude", "Stop"],
        &bytes,
        &at(3),
        &[("BATON_JUDGE", std::ffi::OsStr::new("off"))],
    );
    assert_eq!(off.stdout, "");
    // Refused once; back at once on the same tree: let through, for a person to confirm.
    assert!(
        stop(&env, "claude", "Stop", &bytes)
            .stdout
            .contains("block")
    );
    let again = stop(
        &env,
        "claude",
        "Stop",
        &with(&[("stop_hook_active", true.into())]),
    );
    assert_eq!(again.stdout, "");
    assert!(again.stderr.contains("confirm"), "{}", again.stderr);
    let v = verdict(&env, &session);
    assert_eq!(v["claims"][0]["confirm"], "judge.unchanged", "{v}");
    assert_eq!(stop(&env, "claude", "Stop", &bytes).stdout, "");
    // Claimed again and verified: the stop passes silently.
    env.write("ok.txt", "");
    env.baton(&session, 3, &["gate", "run", PLAN, "--phase", "1"])
        .assert_code(0);
    env.baton(
        &session,
        3,
        &["ledger", "complete", PLAN, "--phase", "1", "--tests", "1/1"],
    )
    .assert_code(0);
    assert_eq!(stop(&env, "claude", "Stop", &bytes).stdout, "");
    assert_eq!(verdict(&env, &session)["verdict"], "unclaimed");
}

#[test]
fn a_goal_names_the_verdict_that_meets_it() {
    let (env, _) = claimed("S-1");
    let goal = env.baton("S-1", 3, &["goal", PLAN, "--phase", "1"]);
    goal.assert_code(0);
    assert!(
        goal.stdout
            .contains("`baton verdict plans/x --phase 1` starts with `verified:`"),
        "{}",
        goal.stdout
    );
    let bad = env.baton("S-1", 3, &["goal", PLAN, "--phase", "9"]);
    bad.assert_code(2);
    assert!(bad.stderr.contains("no phase 9"), "{}", bad.stderr);
}

/// A goal set to `baton goal`'s condition, with nothing recorded: Claude Code's stop is refused
/// from the goal alone, read from the transcript the payload names; `verdict` shows the claim
/// and `log` the goal's claim among the plan's lines.
#[test]
fn a_goal_alone_claims_its_work_at_the_stop() {
    let env = TestEnv::new();
    env.write("plans/x/plan.md", "# X\n## Phase 1\n");
    env.write(
        "plans/x/phase-1.md",
        "# Phase 1\n```gates\nunit: test -f ok.txt → exit 0\n```\n",
    );
    env.baton("S-1", 0, &["ledger", "init", PLAN])
        .assert_code(0);
    env.git(&["add", "-A"]);
    env.git(&["commit", "--quiet", "-m", "plan"]);
    let goal = env.baton("S-1", 1, &["goal", PLAN, "--phase", "1"]);
    goal.assert_code(0);
    let line = serde_json::json!({"type": "attachment", "uuid": "u-1",
        "attachment": {"type": "goal_status", "met": false, "sentinel": true,
            "condition": goal.stdout.trim()}});
    env.write("transcript.jsonl", &format!("{line}\n"));
    let transcript = env.repo.join("transcript.jsonl");
    let (bytes, session) = payload(
        "claude-code-2.1.332/Stop.json",
        &[
            ("cwd", env.repo.to_string_lossy().into_owned().into()),
            (
                "transcript_path",
                transcript.to_string_lossy().into_owned().into(),
            ),
        ],
    );
    let run = stop(&env, "claude", "Stop", &bytes);
    let out: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(out["decision"], "block", "{}", run.stdout);
    let reason = out["reason"].as_str().unwrap();
    assert!(
        reason.contains("Phase 1 of plans/x is the session's goal, but it is not recorded complete: finish it, record it with `baton ledger complete plans/x --phase 1 --tests <passed>/<run>`, then run `baton gate run plans/x --phase 1`."),
        "{reason}"
    );
    let v = verdict(&env, &session);
    assert_eq!(v["verdict"], "unverified", "{v}");
    assert_eq!(v["claims"][0]["plan"], PLAN, "{v}");
    let log = env.baton("S-1", 4, &["log", PLAN]);
    log.assert_code(0);
    assert!(
        log.stdout
            .contains("claimed  phase 1 of plans/x unverified on tree")
            && log.stdout.contains("by the session's goal"),
        "{}",
        log.stdout
    );
}

/// A client whose stop cannot be refused (Copilot CLI) hears the verdict at its next prompt;
/// one that can (Claude Code) is not told twice.
#[test]
fn a_client_that_cannot_refuse_a_stop_hears_the_verdict_at_its_next_prompt() {
    let (bytes, session) = payload("copilot-1.0.102/userPromptSubmitted.json", &[]);
    let (env, _) = claimed(&session);
    let run = stop(&env, "copilot", "userPromptSubmitted", &bytes);
    assert!(
        run.stdout.contains("baton gate run plans/x --phase 1"),
        "{}",
        run.stdout
    );
    let (bytes, session) = payload("claude-code-2.1.332/UserPromptSubmit.json", &[]);
    let (env, _) = claimed(&session);
    assert_eq!(stop(&env, "claude", "UserPromptSubmit", &bytes).stdout, "");
}

/// Cursor: a stop the user made (`status: aborted`) is never refused, and a stop that follows
/// baton's own follow-up (`loop_count` above 0) on the same tree is let through.
#[test]
fn cursor_never_refuses_the_users_stop_and_counts_its_follow_ups() {
    let (bytes, session) = payload("cursor-reference/stop.json", &[]);
    let (env, _) = claimed(&session);
    let (aborted, _) = payload(
        "cursor-reference/stop.json",
        &[("status", "aborted".into())],
    );
    assert_eq!(stop(&env, "cursor", "stop", &aborted).stdout, "");
    assert!(
        stop(&env, "cursor", "stop", &bytes)
            .stdout
            .contains("followup_message")
    );
    let (follow_up, _) = payload("cursor-reference/stop.json", &[("loop_count", 1.into())]);
    let again = stop(&env, "cursor", "stop", &follow_up);
    assert_eq!(again.stdout, "");
    assert!(again.stderr.contains("confirm"), "{}", again.stderr);
}

/// A ticket's loop finished complete is a claim where the project declares its gates: judged by
/// `gate run --ticket`, refused at a stop until verified. Where none are declared, finishing a
/// loop claims nothing and no stop is refused.
#[test]
fn a_loop_finished_complete_is_judged_by_the_projects_gates() {
    let (bytes, session) = payload("claude-code-2.1.332/Stop.json", &[]);
    let env = TestEnv::new();
    env.baton(&session, 0, &["loop", "init", "PROJ-1"])
        .assert_code(0);
    let finish = env.baton(
        &session,
        1,
        &["loop", "finish", "PROJ-1", "--status", "complete"],
    );
    finish.assert_code(0);
    assert!(!finish.stdout.contains("verdict:"), "{}", finish.stdout);
    assert_eq!(stop(&env, "claude", "Stop", &bytes).stdout, "");
    let none = env.baton(&session, 1, &["verdict", "--ticket", "PROJ-1"]);
    none.assert_code(2);
    assert!(none.stderr.contains("[judge.gates]"), "{}", none.stderr);

    let env = TestEnv::new();
    env.write(".baton.toml", "[judge.gates]\nunit = \"test -f ok.txt\"\n");
    env.git(&["add", "-A"]);
    env.git(&["commit", "--quiet", "-m", "gates"]);
    env.baton(&session, 0, &["loop", "init", "PROJ-1"])
        .assert_code(0);
    let finish = env.baton(
        &session,
        1,
        &["loop", "finish", "PROJ-1", "--status", "complete"],
    );
    assert!(
        finish.stdout.contains("verdict: unverified on tree")
            && finish.stdout.contains("`baton gate run --ticket PROJ-1`"),
        "{}",
        finish.stdout
    );
    let refused: Value =
        serde_json::from_str(stop(&env, "claude", "Stop", &bytes).stdout.trim()).unwrap();
    assert_eq!(refused["decision"], "block");
    assert!(
        refused["reason"]
            .as_str()
            .unwrap()
            .contains("The loop of PROJ-1")
    );
    env.baton(&session, 2, &["gate", "run", "--ticket", "PROJ-1"])
        .assert_code(0);
    let v = env.baton(&session, 2, &["--json", "verdict", "--ticket", "PROJ-1"]);
    assert_eq!(v.json()["verdict"], "failed", "{}", v.stdout);
    env.write("ok.txt", "");
    env.baton(&session, 2, &["gate", "run", "--ticket", "PROJ-1"])
        .assert_code(0);
    assert_eq!(verdict(&env, &session)["verdict"], "verified");
    assert_eq!(stop(&env, "claude", "Stop", &bytes).stdout, "");
    // The loop's row says so too.
    let status = env.baton(&session, 3, &["status"]);
    assert!(status.stdout.contains(": verified"), "{}", status.stdout);
    let goal = env.baton(&session, 3, &["goal", "--ticket", "PROJ-1"]);
    assert!(
        goal.stdout
            .contains("`baton verdict --ticket PROJ-1` starts with `verified:`"),
        "{}",
        goal.stdout
    );
    let log = env.baton(&session, 3, &["log", "PROJ-1"]);
    assert!(
        log.stdout
            .contains("claimed  the loop of PROJ-1 unverified"),
        "{}",
        log.stdout
    );
}

/// A single run finished complete is a claim, by the project's gates, as a loop is.
#[test]
fn a_run_finished_complete_is_judged_by_the_projects_gates() {
    let (bytes, session) = payload("claude-code-2.1.332/Stop.json", &[]);
    let env = TestEnv::new();
    env.write(".baton.toml", "[judge.gates]\nunit = \"test -f ok.txt\"\n");
    env.git(&["add", "-A"]);
    env.git(&["commit", "--quiet", "-m", "gates"]);
    let new = env.baton(&session, 0, &["run", "new", "--feature", "f"]);
    new.assert_code(0);
    let id = new.stdout.lines().next().unwrap().trim().to_string();
    let finish = env.baton(&session, 1, &["run", "finish", &id]);
    finish.assert_code(0);
    assert!(
        finish
            .stdout
            .contains(&format!("`baton gate run --run {id}`")),
        "{}",
        finish.stdout
    );
    assert!(
        stop(&env, "claude", "Stop", &bytes)
            .stdout
            .contains("block")
    );
    env.write("ok.txt", "");
    env.baton(&session, 2, &["gate", "run", "--run", &id])
        .assert_code(0);
    let v = env.baton(&session, 2, &["--json", "verdict", "--run", &id]);
    assert_eq!(v.json()["verdict"], "verified", "{}", v.stdout);
    assert_eq!(stop(&env, "claude", "Stop", &bytes).stdout, "");
}

/// SPEC section 9: a failure of the judge lets the stop through. A setting baton cannot read is
/// one stderr line naming the file; the hook exits 0 and refuses nothing.
#[test]
fn a_judge_that_cannot_judge_lets_the_stop_through_with_one_line() {
    let (bytes, session) = payload("claude-code-2.1.332/Stop.json", &[]);
    let (env, _) = claimed(&session);
    env.write(".baton.toml", "[judge]\nenabled = \"maybe\"\n");
    let run = stop(&env, "claude", "Stop", &bytes);
    assert_eq!(run.stdout, "");
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(
        run.stderr.contains(".baton.toml") && run.stderr.contains("let through"),
        "{}",
        run.stderr
    );
}
