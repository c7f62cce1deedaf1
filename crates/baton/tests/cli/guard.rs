//! The guard of shared checkouts (docs/guard.md) as the clients' pre-tool hooks meet it: two
//! sessions in one repository, each registered by its session-start hook; a git command that
//! would destroy the other's work is refused in the client's own shape, anything else passes;
//! a dead session never blocks; a person lets one refused command through.

use std::ffi::OsStr;

use serde_json::{Value, json};

use crate::common::{Run, TestEnv, at};
use crate::hooks::run_hook;

/// A hook of `client` for `session`, whose client process is `pid` (`CLAUDE_PID`; for Codex,
/// the hook's nearest agent ancestor, which a test has none of).
fn hook(env: &TestEnv, client: &str, event: &str, payload: Value, pid: u32) -> Run {
    let pid = pid.to_string();
    let run = run_hook(
        env,
        &["hook", client, event],
        &serde_json::to_vec(&payload).unwrap(),
        &at(1),
        &[("CLAUDE_PID", OsStr::new(&pid))],
    );
    run.assert_code(0);
    run
}

fn start(env: &TestEnv, client: &str, session: &str, pid: u32) {
    let payload = json!({
        "session_id": session,
        "cwd": env.repo.to_string_lossy(),
        "hook_event_name": "SessionStart",
        "source": "startup",
    });
    let run = hook(env, client, "SessionStart", payload, pid);
    assert_eq!(run.stderr, "", "{}", run.stderr);
}

fn pre_tool(env: &TestEnv, client: &str, session: &str, command: &str) -> Run {
    let payload = json!({
        "session_id": session,
        "cwd": env.repo.to_string_lossy(),
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": { "command": command },
    });
    hook(env, client, "PreToolUse", payload, std::process::id())
}

fn denied(run: &Run) -> String {
    let v: Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("not a refusal ({e}): {:?} {:?}", run.stdout, run.stderr));
    assert_eq!(
        v["hookSpecificOutput"]["hookEventName"], "PreToolUse",
        "{v}"
    );
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny", "{v}");
    v["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap()
        .to_string()
}

fn repo() -> TestEnv {
    let env = TestEnv::new();
    env.write("a.txt", "one\n");
    env.git(&["add", "-A"]);
    env.git(&["commit", "--quiet", "-m", "one"]);
    env
}

const A: &str = "aaaaaaaa-1111-2222-3333-444444444444";
const B: &str = "bbbbbbbb-1111-2222-3333-444444444444";

/// Session A is live in the checkout; B's destructive git commands are refused in Claude
/// Code's and Codex's shape, naming A; what destroys nothing passes with no output.
#[test]
fn a_command_that_would_destroy_a_live_sessions_work_is_refused() {
    let env = repo();
    start(&env, "claude", A, std::process::id());
    for client in ["claude", "codex"] {
        for line in [
            "git stash",
            "cd . && git checkout -b x && git reset --hard HEAD~1",
            "git status; (git clean -fd)",
            "bash -c 'git stash pop'",
        ] {
            let reason = denied(&pre_tool(&env, client, B, line));
            assert!(
                reason.contains("session aaaaaaaa… (claude, on branch main, last seen"),
                "{line}: {reason}"
            );
            assert!(reason.contains("guard.shared-tree"), "{reason}");
            assert!(!reason.contains(line), "the command is echoed: {reason}");
        }
        for line in [
            "git status",
            "git log --oneline | head",
            "git commit -am x",
            "ls",
        ] {
            let run = pre_tool(&env, client, B, line);
            assert_eq!(
                (run.stdout.as_str(), run.stderr.as_str()),
                ("", ""),
                "{line}"
            );
        }
    }
    // `status` shows who works where: the JSON as its schema says, a line per session.
    let status = env.run(Some(B), &at(2), &["--json", "status"]);
    status.assert_code(0);
    let v = status.json();
    assert_eq!(v["checkouts"][0]["session"], A, "{v}");
    assert_eq!(v["checkouts"][0]["branch"], "main", "{v}");
    crate::snapshots::assert_matches_schema(&env, "status", &v);
    let text = env.run(Some(B), &at(2), &["status"]).stdout;
    assert!(
        text.contains("checkouts (live sessions of this repository")
            && text.contains("aaaaaaaa… claude in ")
            && text.contains(" on main seen "),
        "{text}"
    );
    // A's own commands are A's: alone with its own work, nothing is refused.
    assert_eq!(pre_tool(&env, "claude", A, "git stash").stdout, "");
    // Every refusal is journaled, with the other session and the rule.
    let refused = guard_events(&env, "refused");
    assert_eq!(refused.len(), 8, "{refused:?}");
    assert_eq!(refused[0]["other"], A);
    assert_eq!(refused[0]["session"], B);
    assert_eq!(refused[0]["rule"], "guard.shared-tree");
}

/// The guard's journal events named `name`.
fn guard_events(env: &TestEnv, name: &str) -> Vec<Value> {
    let log = env.run(None, &at(2), &["--json", "log", "guard"]);
    log.assert_code(0);
    log.json()["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["event"] == name)
        .cloned()
        .collect()
}

/// A session whose client process is gone never blocks, and its record goes.
#[test]
fn a_dead_sessions_record_never_blocks() {
    let env = repo();
    let mut child = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    start(&env, "claude", A, child.id());
    denied(&pre_tool(&env, "claude", B, "git stash"));
    child.kill().unwrap();
    child.wait().unwrap();
    let run = pre_tool(&env, "claude", B, "git stash");
    assert_eq!(run.stdout, "", "{}", run.stderr);
    let registry = env.repo.join(".git/baton-checkouts");
    let left: Vec<String> = std::fs::read_dir(&registry)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(left.iter().all(|n| !n.contains(A)), "{left:?}");
}

/// A person lets one refused command through; the next is refused again. Both are journaled.
#[test]
fn a_person_lets_one_refused_command_through() {
    let env = repo();
    start(&env, "claude", A, std::process::id());
    let allow = env.run(None, &at(1), &["--json", "guard", "allow", B]);
    allow.assert_code(0);
    assert_eq!(allow.json()["session"], B);
    let run = pre_tool(&env, "claude", B, "git stash");
    assert_eq!(run.stdout, "", "allowed once: {}", run.stderr);
    let reason = denied(&pre_tool(&env, "claude", B, "git stash"));
    assert!(
        reason.contains(&format!("`baton guard allow {B}`")),
        "{reason}"
    );
    assert_eq!(guard_events(&env, "allow").len(), 1);
    assert_eq!(guard_events(&env, "allowed").len(), 1);
    let none = env.run(None, &at(1), &["guard", "allow"]);
    none.assert_code(2);
    assert!(none.stderr.contains("no session named"), "{}", none.stderr);
}

/// Turned off for the project or for one run, the guard refuses nothing.
#[test]
fn the_guard_turned_off_refuses_nothing() {
    let env = repo();
    start(&env, "claude", A, std::process::id());
    let pid = std::process::id().to_string();
    let payload = serde_json::to_vec(&json!({
        "session_id": B,
        "cwd": env.repo.to_string_lossy(),
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": { "command": "git stash" },
    }))
    .unwrap();
    let off = run_hook(
        &env,
        &["hook", "claude", "PreToolUse"],
        &payload,
        &at(1),
        &[
            ("CLAUDE_PID", OsStr::new(&pid)),
            ("BATON_GUARD", OsStr::new("off")),
        ],
    );
    assert_eq!(off.stdout, "");
    env.write(".baton.toml", "[guard]\nenabled = false\n");
    assert_eq!(pre_tool(&env, "claude", B, "git stash").stdout, "");
    env.write(".baton.toml", "[guard]\nenabled = \"no\"\n");
    let bad = pre_tool(&env, "claude", B, "git stash");
    assert_eq!(bad.stdout, "", "an unreadable setting lets the command run");
    assert!(
        bad.stderr
            .contains("[guard] `enabled` is not true or false"),
        "{}",
        bad.stderr
    );
}

/// Each client's pre-tool payload, as it sends it for its shell tool, refused in the client's
/// own shape: Gemini CLI's and Antigravity's `decision`, Copilot CLI's flat
/// `permissionDecision`, Cursor's `permission` with the reason for the agent, and for baton's
/// OpenCode plugin the reason it throws.
#[test]
fn each_client_refuses_in_its_own_shape() {
    let env = repo();
    std::fs::create_dir_all(env.repo.join("sub")).unwrap();
    start(&env, "claude", A, std::process::id());
    let repo = env.repo.to_string_lossy().into_owned();
    let cases = [
        (
            "gemini",
            "BeforeTool",
            json!({"session_id": B, "cwd": repo, "hook_event_name": "BeforeTool",
                "tool_name": "run_shell_command",
                "tool_input": {"command": "git stash", "dir_path": "sub"}}),
            "/reason",
            "/decision",
            "deny",
        ),
        (
            "copilot",
            "preToolUse",
            json!({"sessionId": B, "timestamp": 1, "cwd": repo, "toolName": "bash",
                "toolArgs": {"command": "git stash", "mode": "sync"}}),
            "/permissionDecisionReason",
            "/permissionDecision",
            "deny",
        ),
        (
            "cursor",
            "beforeShellExecution",
            json!({"hook_event_name": "beforeShellExecution", "conversation_id": B,
                "generation_id": "g", "workspace_roots": [repo], "command": "git stash",
                "cwd": repo}),
            "/agent_message",
            "/permission",
            "deny",
        ),
        (
            "opencode",
            "tool.execute.before",
            json!({"sessionID": B, "command": "git stash", "workdir": "sub", "cwd": repo}),
            "/deny",
            "/deny",
            "",
        ),
        (
            "antigravity",
            "PreToolUse",
            json!({"conversationId": B, "workspacePaths": [repo], "stepIdx": 4,
                "toolCall": {"name": "run_command",
                    "args": {"CommandLine": "git stash", "Cwd": repo}}}),
            "/reason",
            "/decision",
            "deny",
        ),
    ];
    for (client, event, payload, reason_at, decision_at, decision) in cases {
        let run = hook(&env, client, event, payload.clone(), std::process::id());
        let out: Value = serde_json::from_str(&run.stdout)
            .unwrap_or_else(|e| panic!("{client}: {e}: {:?} {:?}", run.stdout, run.stderr));
        if !decision.is_empty() {
            assert_eq!(
                out.pointer(decision_at).unwrap(),
                decision,
                "{client}: {out}"
            );
        }
        let reason = out.pointer(reason_at).unwrap().as_str().unwrap();
        assert!(reason.contains("session aaaaaaaa…"), "{client}: {reason}");
        // The same tool with a command that destroys nothing: nothing printed.
        let mut harmless = payload.to_string();
        harmless = harmless.replace("git stash", "git status");
        let run = hook(
            &env,
            client,
            event,
            serde_json::from_str(&harmless).unwrap(),
            std::process::id(),
        );
        assert_eq!(
            (run.stdout.as_str(), run.stderr.as_str()),
            ("", ""),
            "{client}"
        );
    }
}
