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
    assert_eq!(v["guard_refused"], 8, "{v}");
    crate::snapshots::assert_matches_schema(&env, "status", &v);
    let text = env.run(Some(B), &at(2), &["status"]).stdout;
    assert!(
        text.contains("checkouts (live sessions of this repository")
            && text.contains("aaaaaaaa… claude in ")
            && text.contains(" on main seen ")
            && text.contains("the guard refused 8 git command(s)"),
        "{text}"
    );
    // The timeline draws them on a lane of the guard's own.
    let page = env
        .run(Some(B), &at(2), &["--json", "status", "--html"])
        .json();
    let html = page["html"].as_str().unwrap();
    assert!(
        html.contains("refused: guard.shared-tree"),
        "no refusal on the page"
    );
    assert!(html.contains("8 refused"), "no guard lane");
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
    // What it would have refused is journaled.
    assert_eq!(guard_events(&env, "guard-off").len(), 1);
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

/// git itself, whatever ran it, with `vars` set and baton on PATH, in the checkout.
fn git_as(env: &TestEnv, vars: &[(&str, &str)], args: &[&str]) -> Run {
    let mut cmd = crate::common::like(&env.command(None, &at(1)), "git");
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_baton"))
        .parent()
        .unwrap()
        .to_path_buf();
    let path = std::env::join_paths(std::iter::once(bin).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .unwrap();
    cmd.env("PATH", path).args(args).current_dir(&env.repo);
    for (k, v) in vars {
        cmd.env(k, v);
    }
    crate::common::to_run(cmd.output().unwrap())
}

/// The backstop `baton init` installs in git (`reference-transaction`): whatever runs git, an
/// agent session's ref update that would move A's branch or A's HEAD, or a stash that would
/// reset A's files, is aborted by git itself, A's work intact; a person's never is. The hook that was there runs first, and
/// `--remove` puts it back.
#[test]
fn the_backstop_in_git_refuses_an_agents_ref_updates_and_never_a_persons() {
    let env = repo();
    env.write("b.txt", "one\n");
    env.git(&["add", "-A"]);
    env.git(&["commit", "--quiet", "-m", "two"]);
    let hooks = env.repo.join(".git/hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    std::fs::write(
        hooks.join("reference-transaction"),
        "#!/bin/sh\necho \"theirs $1\" >> \"$(git rev-parse --git-common-dir)/theirs.log\"\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        hooks.join("reference-transaction"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    env.run(None, &at(1), &["init", "claude"]).assert_code(0);
    let hook = hooks.join("reference-transaction");
    assert!(
        std::fs::read_to_string(&hook)
            .unwrap()
            .contains("baton guard ref-update")
    );
    assert!(hooks.join("reference-transaction.before-baton").exists());
    start(&env, "claude", A, std::process::id());
    let agent = [("CLAUDE_CODE_SESSION_ID", B)];
    // A's uncommitted work, and an entry of A's in the stash.
    env.write("a.txt", "A's stash\n");
    git_as(&env, &[], &["stash", "-q"]).assert_code(0);
    env.write("a.txt", "A's edit\n");
    let status = env.git(&["status", "--porcelain"]);
    // In A's checkout: a stash would reset A's files after it records its entry.
    let run = git_as(&env, &agent, &["stash"]);
    assert_ne!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("baton refused this command (guard.shared-tree)"),
        "{}",
        run.stderr
    );
    assert_eq!(env.git(&["status", "--porcelain"]), status);
    // A branch of B's own made in A's checkout would carry A's work under it (the first half of
    // `git checkout -b x && git reset --hard HEAD~1`): refused before HEAD moves.
    for args in [&["checkout", "-b", "x"][..], &["switch", "-c", "y"]] {
        let run = git_as(&env, &agent, args);
        assert_ne!(run.code, 0, "{args:?}: {}", run.stderr);
        assert!(
            run.stderr
                .contains("baton refused this command (guard.shared-tree)"),
            "{args:?}: {}",
            run.stderr
        );
        assert_eq!(env.git(&["branch", "--show-current"]).trim(), "main");
        assert_eq!(env.git(&["status", "--porcelain"]), status);
    }
    // From a worktree of B's own: moving A's branch back, or deleting it.
    env.git(&["worktree", "add", "--quiet", "../wt", "-b", "feature"]);
    let wt = env.repo.with_file_name("wt");
    let in_wt = |args: &[&str]| {
        let mut all = vec!["-C", wt.to_str().unwrap()];
        all.extend_from_slice(args);
        git_as(&env, &agent, &all)
    };
    for args in [
        &["update-ref", "refs/heads/main", "HEAD~1"][..],
        &["update-ref", "-d", "refs/heads/main"],
    ] {
        let run = in_wt(args);
        assert_ne!(run.code, 0, "{args:?}: {}", run.stderr);
        assert!(
            run.stderr.contains("baton refused this command"),
            "{args:?}: {}",
            run.stderr
        );
    }
    assert_eq!(env.git(&["stash", "list"]).lines().count(), 1);
    assert_eq!(
        env.git(&["rev-parse", "main"]),
        env.git(&["rev-parse", "HEAD"]),
        "A's branch moved"
    );
    // B's own commits pass; the hook that was there ran first.
    std::fs::write(wt.join("c.txt"), "B's file\n").unwrap();
    in_wt(&["add", "c.txt"]).assert_code(0);
    in_wt(&["commit", "-q", "-m", "B's"]).assert_code(0);
    let theirs = std::fs::read_to_string(env.repo.join(".git/theirs.log")).unwrap();
    assert!(theirs.contains("theirs prepared"), "{theirs}");
    // A person is never refused.
    let run = git_as(
        &env,
        &[],
        &["-C", wt.to_str().unwrap(), "stash", "drop", "-q"],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    // `--remove` takes it out and puts theirs back.
    env.run(None, &at(1), &["init", "claude", "--remove"])
        .assert_code(0);
    let back = std::fs::read_to_string(&hook).unwrap();
    assert!(back.contains("theirs"), "{back}");
    assert!(!hooks.join("reference-transaction.before-baton").exists());
}

/// A repository whose hooks live elsewhere (`core.hooksPath`, as husky sets it): the backstop
/// goes where git runs hooks from, after the hook already there, and works from there.
#[test]
fn the_backstop_follows_core_hooks_path() {
    let env = repo();
    env.git(&["config", "core.hooksPath", ".husky"]);
    std::fs::create_dir_all(env.repo.join(".husky")).unwrap();
    env.write(
        ".husky/reference-transaction",
        "#!/bin/sh\necho \"husky $1\" >> \"$(git rev-parse --git-common-dir)/husky.log\"\n",
    );
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        env.repo.join(".husky/reference-transaction"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    let init = env.run(None, &at(1), &["--json", "init", "claude"]);
    init.assert_code(0);
    assert!(!env.repo.join(".git/hooks/reference-transaction").exists());
    let ours = std::fs::read_to_string(env.repo.join(".husky/reference-transaction")).unwrap();
    assert!(ours.contains("baton guard ref-update"), "{ours}");
    assert!(
        env.repo
            .join(".husky/reference-transaction.before-baton")
            .exists()
    );
    // In the tree: the note says to commit it.
    let notes = init.json()["notes"].to_string();
    assert!(notes.contains(".husky/reference-transaction"), "{notes}");
    start(&env, "claude", A, std::process::id());
    env.write("a.txt", "A's edit\n");
    let run = git_as(&env, &[("CLAUDE_CODE_SESSION_ID", B)], &["stash"]);
    assert_ne!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        std::fs::read_to_string(env.repo.join("a.txt")).unwrap(),
        "A's edit\n"
    );
    let husky = std::fs::read_to_string(env.repo.join(".git/husky.log")).unwrap();
    assert!(husky.contains("husky prepared"), "{husky}");
}
