//! The judge of "done" (docs/judge.md) with the real clients: a session claims phase 1 of a plan
//! complete through `baton ledger complete` from its shell tool while the phase's exit gate
//! fails, and says "Done.". The stop hook that `baton init` installed refuses the stop, and the
//! next model request carries baton's reason; once the gate passed on the tree, the stop goes
//! through and the session ends. With Claude Code's `/goal` set to `baton goal`'s condition,
//! the goal's evaluator (a model request of its own) reads baton's refusal and the verdict in
//! the transcript, and the goal clears only once the verdict is verified; the goal alone, with
//! nothing recorded, is a claim too (read from Claude Code's transcript, and from Codex's goal
//! table when its model marks the goal complete by itself). A model that says
//! "Done." again without changing anything is let through once refused, and the claim is handed
//! to a person (`judge.unchanged`).
//!
//! Every assertion is on what reached the model (the fake API's recorded requests), on the
//! client's own transcript, or on baton's verdict afterwards.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};

use crate::clients::{Client, Harness};
use crate::fake_api::{Reply, Request};
use crate::flow::{baton, git};

const PLAN: &str = "plans/x";

/// Where every refusal of the judge starts: no tool output or prompt says it.
const REFUSAL: &str = "baton: this session claimed work complete that is not verified";

/// The one command the refusal names.
const SETTLE: &str = "`baton gate run plans/x --phase 1`";

/// The shell call that starts phase 1, commits its work, claims the phase complete and runs its
/// gate, which fails: `ok.txt` is absent.
const CLAIM: &str = "baton ledger init plans/x && baton ledger start plans/x --phase 1 && echo work > src.txt && git add src.txt && git commit -q -m work && baton ledger complete plans/x --phase 1 --tests 1/1 && baton gate run plans/x --phase 1";

/// The shell call that makes the gate pass on the tree and records it.
const FIX: &str = "touch ok.txt && baton gate run plans/x --phase 1";

/// A project holding plan `plans/x`, whose phase 1 declares one gate (`ok.txt` exists), with
/// baton installed for the harness's client by `baton init` (Codex: `--trust-project`), all of
/// it committed.
fn project(h: &Harness) {
    std::fs::create_dir_all(h.project.join(PLAN)).unwrap();
    std::fs::write(h.project.join("plans/x/plan.md"), "# X\n## Phase 1\n").unwrap();
    std::fs::write(
        h.project.join("plans/x/phase-1.md"),
        "# Phase 1\n```gates\nunit: test -f ok.txt → exit 0\n```\n",
    )
    .unwrap();
    let mut init = vec!["init", h.client.program()];
    if h.client == Client::Codex {
        init.push("--trust-project");
    }
    let (code, out, err) = baton(h, &init);
    assert_eq!(code, 0, "baton init: {out}\n{err}");
    git(h, &["config", "user.email", "dev@example.com"]);
    git(h, &["config", "user.name", "dev"]);
    git(h, &["add", "-A"]);
    git(h, &["commit", "-q", "-m", "plan"]);
}

/// Every string in `v`, depth first.
fn strings(v: &Value) -> Vec<String> {
    fn walk(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::String(s) => out.push(s.clone()),
            Value::Array(items) => items.iter().for_each(|i| walk(i, out)),
            Value::Object(map) => map.values().for_each(|i| walk(i, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(v, &mut out);
    out
}

/// Every string of a request's conversation (Anthropic `messages`, OpenAI Responses `input`):
/// texts, tool calls and their outputs, hook feedback.
fn conversation(r: &Request) -> Vec<String> {
    let body: Value = serde_json::from_str(&r.body).unwrap_or(Value::Null);
    let mut out = strings(&body["messages"]);
    out.extend(strings(&body["input"]));
    out
}

/// The text in a request's conversation that holds the judge's refusal, if any.
fn refusal_in(r: &Request) -> Option<String> {
    conversation(r).into_iter().find(|s| s.contains(REFUSAL))
}

/// baton's verdict on the phase, whoever claimed it.
fn phase_verdict(h: &Harness) -> String {
    let (code, out, err) = baton(h, &["verdict", PLAN, "--phase", "1"]);
    assert_eq!(code, 0, "baton verdict: {out}\n{err}");
    out
}

/// Claude Code's transcript of the one session the harness ran, and its session id.
fn claude_transcript(h: &Harness) -> (PathBuf, String) {
    let projects = h.home.join(".claude/projects");
    let mut found = Vec::new();
    for dir in std::fs::read_dir(&projects).unwrap().flatten() {
        for file in std::fs::read_dir(dir.path()).unwrap().flatten() {
            let path = file.path();
            if path.extension().is_some_and(|e| e == "jsonl") {
                found.push(path);
            }
        }
    }
    assert_eq!(found.len(), 1, "one session's transcript: {found:?}");
    let path = found.remove(0);
    let id = path.file_stem().unwrap().to_string_lossy().into_owned();
    (path, id)
}

/// Claimed while the gate fails, refused, fixed, let through.
fn refused_until_verified(client: Client, test: &str) {
    let script = vec![
        Reply::Shell(CLAIM.into()),
        Reply::Text("Done.".into()),
        Reply::Shell(FIX.into()),
        Reply::Text("Done.".into()),
    ];
    let Some(h) = Harness::new(client, test, script) else {
        return;
    };
    project(&h);
    let run = h.run("finish phase 1 of plans/x");
    let main = h.api.main_requests();
    let context = || format!("{run}\n{}", h.api.summary());
    assert_eq!(run.code, Some(0), "{}", context());
    // Request 2 carries the claim's tool output, request 3 follows the refused stop: the
    // reason reached the model with it, and not before.
    assert_eq!(
        main.len(),
        4,
        "the script's four replies, and no request after the last \"Done.\": {}",
        context()
    );
    assert_eq!(h.api.remaining(), 0, "{}", context());
    assert_eq!(
        refusal_in(&main[1]),
        None,
        "no refusal before the stop: {}",
        context()
    );
    let reason = refusal_in(&main[2]).unwrap_or_else(|| {
        panic!(
            "the request after the refused stop has no refusal: {}",
            context()
        )
    });
    assert!(
        reason.contains("Phase 1 of plans/x is claimed complete, but its gate unit failed")
            && reason.contains("test -f ok.txt → exit 1")
            && reason.contains(SETTLE),
        "{reason}"
    );
    // The model's next turn ran the gate and it passed: the stop went through.
    assert!(
        conversation(&main[3])
            .iter()
            .any(|s| s.contains("phase 1: gate unit → PASS")),
        "the gate did not pass: {}",
        context()
    );
    let verdict = phase_verdict(&h);
    assert!(
        verdict.starts_with("verified: phase 1 of plans/x"),
        "{verdict}"
    );
    eprintln!("{test}: {:.1?}", run.elapsed);
}

/// Claude Code's Stop hook, as `baton init claude` installs it, refuses the stop on an
/// unverified claim with the reason in the next model request, and lets the session end once the
/// gate passed on the tree.
#[test]
fn claude_stop_on_an_unverified_claim_is_refused_until_its_gate_passes() {
    refused_until_verified(
        Client::Claude,
        "claude_stop_on_an_unverified_claim_is_refused_until_its_gate_passes",
    );
}

/// The same with Codex's Stop hook, as `baton init codex --trust-project` installs it.
#[test]
fn codex_stop_on_an_unverified_claim_is_refused_until_its_gate_passes() {
    refused_until_verified(
        Client::Codex,
        "codex_stop_on_an_unverified_claim_is_refused_until_its_gate_passes",
    );
}

/// Marks Claude Code's evaluator of a `/goal` (a stop hook of type `prompt`), in its system
/// prompt.
const EVALUATOR: &str = "You are evaluating a stop-condition hook in Claude Code";

/// The last line in the texts that is a verdict of `baton verdict <plan> --phase N`.
fn last_verdict(texts: &[String]) -> Option<String> {
    texts
        .iter()
        .flat_map(|t| t.lines())
        .rfind(|l| {
            ["verified: ", "failed: ", "unverified: "]
                .iter()
                .any(|p| l.starts_with(p))
        })
        .map(str::to_string)
}

/// Answers Claude Code's evaluator of a `/goal` as a careful one would: met only when the last
/// `baton verdict` in the transcript starts with `verified:`. A session that never gets there
/// would be held until the run's timeout: past three evaluations the goal gives up, and the
/// test's assertions say why.
fn answer_the_goal_evaluator(h: &Harness) {
    let counted = AtomicUsize::new(0);
    h.api.answer_others(move |body| {
        if !body["system"].to_string().contains(EVALUATOR) {
            return None;
        }
        if counted.fetch_add(1, Ordering::SeqCst) >= 3 {
            return Some(json!({"ok": true, "reason": "EVALUATOR-GAVE-UP"}).to_string());
        }
        let texts = strings(&body["messages"]);
        Some(
            match last_verdict(&texts) {
                Some(v) if v.starts_with("verified: ") => json!({"ok": true, "reason": v}),
                Some(v) => {
                    json!({"ok": false, "reason": format!("the last verdict is not verified: {v}")})
                }
                None => json!({"ok": false, "reason": "no verdict in the transcript"}),
            }
            .to_string(),
        )
    });
}

/// `claude -p "/goal <condition>"` with the condition `baton goal` prints. The goal is a stop
/// hook whose evaluator is a model request of its own; the fake API answers it as a faithful
/// evaluator of that condition would: met when the last `baton verdict` output in the transcript
/// starts with `verified:`. The first stop is refused by both baton and the goal; the evaluation
/// at the second stop reads baton's refusal and the verified verdict in the transcript, and the
/// goal clears (the client's transcript records it met) only then.
#[test]
fn claude_goal_from_baton_clears_only_on_a_verified_verdict() {
    let script = vec![
        Reply::Shell(format!("{CLAIM}; baton verdict plans/x --phase 1")),
        Reply::Text("Done.".into()),
        Reply::Shell(format!("{FIX} && baton verdict plans/x --phase 1")),
        Reply::Text("Done.".into()),
    ];
    let Some(h) = Harness::new(
        Client::Claude,
        "claude_goal_from_baton_clears_only_on_a_verified_verdict",
        script,
    ) else {
        return;
    };
    answer_the_goal_evaluator(&h);
    project(&h);
    let (code, goal, err) = baton(&h, &["goal", PLAN, "--phase", "1"]);
    assert_eq!(code, 0, "baton goal: {goal}\n{err}");
    let condition = goal.trim().to_string();
    let run = h.run(&format!("/goal {condition}"));
    let context = || format!("{run}\n{}", h.api.summary());
    assert_eq!(run.code, Some(0), "{}", context());

    let evaluated: Vec<Request> = h
        .api
        .requests()
        .into_iter()
        .filter(|r| r.body.contains(EVALUATOR))
        .collect();
    assert_eq!(
        evaluated.len(),
        2,
        "one evaluation at each stop: {}",
        context()
    );
    for e in &evaluated {
        let texts = conversation(e).join("\n");
        assert!(
            texts.contains(&format!("Condition: {condition}")),
            "the evaluator is asked baton's condition: {texts}"
        );
    }
    // First stop: the claim's output holds a failed verdict. baton's refusal of this stop is not
    // there: the goal is evaluated on the transcript as the stop found it, beside baton's hook,
    // so it reads a refusal from the next stop on.
    let first = conversation(&evaluated[0]).join("\n");
    assert!(first.contains("failed: phase 1 of plans/x"), "{first}");
    assert!(!first.contains("verified: phase 1 of plans/x"), "{first}");
    assert!(!first.contains(REFUSAL), "{first}");
    // Second stop: baton's refusal of the first, and the verified verdict after the fix.
    let second = conversation(&evaluated[1]);
    let reason = second
        .iter()
        .find(|s| s.contains(REFUSAL))
        .unwrap_or_else(|| panic!("the evaluator did not get baton's refusal: {second:?}"));
    assert!(reason.contains(SETTLE), "{reason}");
    assert!(
        second
            .iter()
            .any(|s| s.contains("verified: phase 1 of plans/x")),
        "{second:?}"
    );

    // The model got both refusals before its fix, and nothing after its last "Done.".
    let main = h.api.main_requests();
    assert_eq!(main.len(), 4, "{}", context());
    let after_stop = conversation(&main[2]).join("\n");
    assert!(after_stop.contains(REFUSAL), "{after_stop}");
    assert!(
        after_stop.contains("the last verdict is not verified: failed: phase 1 of plans/x"),
        "{after_stop}"
    );

    // The client's own record of the goal: not met at the first stop, met at the second, with
    // the verified verdict as its evidence.
    let (transcript, _) = claude_transcript(&h);
    let statuses: Vec<Value> = std::fs::read_to_string(&transcript)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["attachment"]["type"] == "goal_status" && v["attachment"]["sentinel"] != true)
        .map(|v| v["attachment"].clone())
        .collect();
    assert_eq!(statuses.len(), 2, "{statuses:?}");
    assert_eq!(statuses[0]["met"], false, "{statuses:?}");
    assert_eq!(statuses[1]["met"], true, "{statuses:?}");
    assert!(
        statuses[1]["reason"]
            .as_str()
            .is_some_and(|r| r.starts_with("verified: phase 1 of plans/x")),
        "{statuses:?}"
    );
    let verdict = phase_verdict(&h);
    assert!(verdict.starts_with("verified: "), "{verdict}");
    eprintln!(
        "claude_goal_from_baton_clears_only_on_a_verified_verdict: {:.1?}",
        run.elapsed
    );
}

/// The loop guard: the model answers "Done." again without changing anything. The first stop is
/// refused; the second comes back with `stop_hook_active` on the same tree and is let through,
/// the session ends, and the claim waits for a person (`judge.unchanged`).
#[test]
fn claude_done_again_on_an_unchanged_tree_is_let_through_for_a_person() {
    let script = vec![
        Reply::Shell(CLAIM.into()),
        Reply::Text("Done.".into()),
        Reply::Text("Done.".into()),
    ];
    let Some(h) = Harness::new(
        Client::Claude,
        "claude_done_again_on_an_unchanged_tree_is_let_through_for_a_person",
        script,
    ) else {
        return;
    };
    project(&h);
    let run = h.run("finish phase 1 of plans/x");
    let context = || format!("{run}\n{}", h.api.summary());
    assert_eq!(run.code, Some(0), "{}", context());
    let main = h.api.main_requests();
    assert_eq!(
        main.len(),
        3,
        "refused once, then let through: {}",
        context()
    );
    assert_eq!(refusal_in(&main[1]), None, "{}", context());
    let reason = refusal_in(&main[2]).unwrap_or_else(|| panic!("no refusal: {}", context()));
    assert!(reason.contains(SETTLE), "{reason}");

    let (_, session) = claude_transcript(&h);
    let (code, out, err) = baton(&h, &["verdict", "--session", &session, "--json"]);
    assert_eq!(code, 0, "{out}\n{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["claims"][0]["confirm"], "judge.unchanged", "{v}");
    assert_eq!(v["claims"][0]["plan"], PLAN, "{v}");
    assert_eq!(v["verdict"], "failed", "{v}");
    assert_eq!(v["claims"][0]["verdict"], "failed", "{v}");
    eprintln!(
        "claude_done_again_on_an_unchanged_tree_is_let_through_for_a_person: {:.1?}",
        run.elapsed
    );
}

/// Claude Code's `/goal` set to `baton goal`'s condition, and a model that answers "Done." with
/// nothing done: the stop is refused from the goal alone (read from the transcript, where
/// Claude Code keeps it), before its evaluator's check; once the work is recorded and its gate
/// passed, the stop passes and the goal clears.
#[test]
fn claude_goal_alone_is_a_claim_that_refuses_the_stop() {
    let script = vec![
        Reply::Text("Done.".into()),
        Reply::Shell(format!("{CLAIM}; {FIX} && baton verdict plans/x --phase 1")),
        Reply::Text("Done.".into()),
    ];
    let Some(h) = Harness::new(
        Client::Claude,
        "claude_goal_alone_is_a_claim_that_refuses_the_stop",
        script,
    ) else {
        return;
    };
    answer_the_goal_evaluator(&h);
    project(&h);
    let (code, goal, err) = baton(&h, &["goal", PLAN, "--phase", "1"]);
    assert_eq!(code, 0, "baton goal: {goal}\n{err}");
    let run = h.run(&format!("/goal {}", goal.trim()));
    let context = || format!("{run}\n{}", h.api.summary());
    assert_eq!(run.code, Some(0), "{}", context());
    let main = h.api.main_requests();
    assert_eq!(main.len(), 3, "{}", context());
    assert_eq!(refusal_in(&main[0]), None, "{}", context());
    let reason = refusal_in(&main[1])
        .unwrap_or_else(|| panic!("the stop on the goal alone was not refused: {}", context()));
    assert!(
        reason
            .contains("Phase 1 of plans/x is the session's goal, but it is not recorded complete")
            && reason.contains(SETTLE),
        "{reason}"
    );
    let verdict = phase_verdict(&h);
    assert!(verdict.starts_with("verified: "), "{verdict}");
    eprintln!(
        "claude_goal_alone_is_a_claim_that_refuses_the_stop: {:.1?}",
        run.elapsed
    );
}

/// Codex's goal, set by the model (`create_goal`) to `baton goal`'s condition and marked
/// complete by the model alone (`update_goal`) with nothing done: its Stop is refused, since the
/// goal names phase 1 and nothing records it complete. The model records the work and makes the
/// gate pass; the next stop is let through. Codex's own record of the goal (its
/// `goals_1.sqlite`) says complete throughout: only baton's verdict checked it.
#[test]
fn codex_goal_marked_complete_by_the_model_is_judged_by_the_verdict() {
    let Some(h) = Harness::new(
        Client::Codex,
        "codex_goal_marked_complete_by_the_model_is_judged_by_the_verdict",
        Vec::new(),
    ) else {
        return;
    };
    project(&h);
    let (code, goal, err) = baton(&h, &["goal", PLAN, "--phase", "1"]);
    assert_eq!(code, 0, "baton goal: {goal}\n{err}");
    let condition = goal.trim().to_string();
    h.api.push_script(vec![
        Reply::Tool("create_goal", json!({ "objective": condition })),
        Reply::Tool("update_goal", json!({ "status": "complete" })),
        Reply::Text("Done.".into()),
        Reply::Shell(format!("{CLAIM}; {FIX}")),
        Reply::Text("Done.".into()),
    ]);
    let run = h.run("finish phase 1 of plans/x");
    let main = h.api.main_requests();
    let context = || format!("{run}\n{}", h.api.summary());
    assert_eq!(run.code, Some(0), "{}", context());
    assert_eq!(
        main.len(),
        5,
        "the script's five replies, and no request after the last \"Done.\": {}",
        context()
    );
    assert_eq!(h.api.remaining(), 0, "{}", context());
    assert!(
        main[0].body.contains("\"create_goal\""),
        "Codex offers no goal tool: {}",
        context()
    );
    assert_eq!(refusal_in(&main[2]), None, "{}", context());
    let reason = refusal_in(&main[3])
        .unwrap_or_else(|| panic!("the stop after the goal was not refused: {}", context()));
    assert!(
        reason
            .contains("Phase 1 of plans/x is the session's goal, but it is not recorded complete")
            && reason.contains(SETTLE),
        "{reason}"
    );
    let verdict = phase_verdict(&h);
    assert!(verdict.starts_with("verified: "), "{verdict}");

    // Codex's own record: the goal, complete, on the session's thread.
    let sessions = h.home.join(".codex/sessions");
    let rollout = walk(&sessions)
        .into_iter()
        .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .unwrap_or_else(|| panic!("no rollout under {}", sessions.display()));
    let stem = rollout.file_stem().unwrap().to_string_lossy().into_owned();
    let thread = &stem[stem.len() - 36..];
    let row = baton_store::goals::thread_goal(&h.home.join(".codex/goals_1.sqlite"), thread)
        .unwrap()
        .unwrap_or_else(|| panic!("no goal row for thread {thread}"));
    assert_eq!(row.status, "complete");
    assert_eq!(row.objective, condition);
    eprintln!(
        "codex_goal_marked_complete_by_the_model_is_judged_by_the_verdict: {:.1?}",
        run.elapsed
    );
}

/// Every file under `dir`.
fn walk(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(walk(&path));
        } else {
            found.push(path);
        }
    }
    found
}
