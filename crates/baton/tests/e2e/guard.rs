//! The guard of shared checkouts (docs/guard.md) with the real clients (Claude Code, Codex,
//! Gemini CLI, Copilot CLI, OpenCode 1.18 and 2.x): session A is live in
//! the checkout with uncommitted work (registered by its session-start hook, its client process
//! a stand-in that runs for the test); session B, the real client, has its model run `git
//! stash`, then `git checkout -b x && git reset --hard HEAD~1`. Both are refused by the
//! pre-tool hook `baton init` installed: A's files stay as they were, and B's next model
//! request carries the reason, which names A.

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::json;

use crate::clients::{Client, Harness, baton_bin};
use crate::fake_api::Reply;
use crate::flow::{baton, git};

const A: &str = "aaaaaaaa-1111-2222-3333-444444444444";

/// Session A's start, as Claude Code's hook sends it, its client process `pid`.
fn register_a(h: &Harness, pid: u32) {
    let payload = json!({
        "session_id": A,
        "cwd": h.project.to_string_lossy(),
        "hook_event_name": "SessionStart",
        "source": "startup",
    });
    let mut child = Command::new(baton_bin())
        .args(["hook", "claude", "SessionStart"])
        .current_dir(&h.project)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &h.home)
        .env("CLAUDE_PID", pid.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(payload.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// What session B's model runs.
fn script() -> Vec<Reply> {
    vec![
        Reply::Shell("git stash".into()),
        Reply::Shell("git checkout -b x && git reset --hard HEAD~1".into()),
        Reply::Text("Done.".into()),
    ]
}

fn two_sessions_one_checkout(client: Client, test: &str) {
    if let Some(h) = Harness::new(client, test, script()) {
        b_is_refused(&h, test);
    }
}

fn b_is_refused(h: &Harness, test: &str) {
    let client = h.client;
    let mut init = vec!["init", client.program()];
    if client == Client::Codex {
        init.push("--trust-project");
    }
    let (code, out, err) = baton(h, &init);
    assert_eq!(code, 0, "baton init: {out}\n{err}");
    git(h, &["config", "user.email", "dev@example.com"]);
    git(h, &["config", "user.name", "dev"]);
    std::fs::write(h.project.join("a.txt"), "one\n").unwrap();
    git(h, &["add", "-A"]);
    git(h, &["commit", "-q", "-m", "one"]);
    std::fs::write(h.project.join("a.txt"), "two\n").unwrap();
    git(h, &["add", "-A"]);
    git(h, &["commit", "-q", "-m", "two"]);
    // A's uncommitted work: an edit, a staged file and an untracked one.
    std::fs::write(h.project.join("a.txt"), "A's edit\n").unwrap();
    std::fs::write(h.project.join("staged.txt"), "A's staged file\n").unwrap();
    git(h, &["add", "staged.txt"]);
    std::fs::write(h.project.join("new.txt"), "A's new file\n").unwrap();
    let mut a_client = Command::new("sleep").arg("600").spawn().unwrap();
    register_a(h, a_client.id());
    let status_before = git(h, &["status", "--porcelain"]);
    let head_before = git(h, &["rev-parse", "HEAD"]);
    let branch_before = git(h, &["branch", "--show-current"]);

    let run = h.run("tidy up the checkout");
    let _ = a_client.kill();
    let _ = a_client.wait();
    let context = || format!("{run}\n{}", h.api.summary());
    assert_eq!(run.code, Some(0), "{}", context());
    let main = h.api.main_requests();
    assert_eq!(main.len(), 3, "{}", context());

    // A's work is as it was: no stash, no reset, no branch switch.
    assert_eq!(git(h, &["status", "--porcelain"]), status_before);
    assert_eq!(git(h, &["rev-parse", "HEAD"]), head_before);
    assert_eq!(git(h, &["stash", "list"]), "");
    assert_eq!(git(h, &["branch", "--show-current"]), branch_before);
    assert_eq!(git(h, &["branch", "--list", "x"]), "", "branch x was made");
    assert_eq!(
        std::fs::read_to_string(h.project.join("a.txt")).unwrap(),
        "A's edit\n"
    );
    // B was told why, at each refused command.
    for (i, request) in main[1..].iter().enumerate() {
        assert!(
            request.body.contains("guard.shared-tree") && request.body.contains("session aaaaaaaa"),
            "request {} carries no refusal: {}",
            i + 1,
            context()
        );
    }
    let (code, out, err) = baton(h, &["--json", "log", "guard"]);
    assert_eq!(code, 0, "{out}\n{err}");
    let log: serde_json::Value = serde_json::from_str(&out).unwrap();
    let refused = log["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["event"] == "refused")
        .count();
    assert_eq!(refused, 2, "{log}");
    eprintln!("{test}: {:.1?}", run.elapsed);
}

#[test]
fn claude_session_b_cannot_stash_or_reset_session_as_work() {
    two_sessions_one_checkout(
        Client::Claude,
        "claude_session_b_cannot_stash_or_reset_session_as_work",
    );
}

#[test]
fn codex_session_b_cannot_stash_or_reset_session_as_work() {
    two_sessions_one_checkout(
        Client::Codex,
        "codex_session_b_cannot_stash_or_reset_session_as_work",
    );
}

#[test]
fn opencode_session_b_cannot_stash_or_reset_session_as_work() {
    two_sessions_one_checkout(
        Client::OpenCode,
        "opencode_session_b_cannot_stash_or_reset_session_as_work",
    );
}

#[test]
fn opencode_v2_session_b_cannot_stash_or_reset_session_as_work() {
    let test = "opencode_v2_session_b_cannot_stash_or_reset_session_as_work";
    if let Some(h) = Harness::opencode_v2(test, script()) {
        b_is_refused(&h, test);
    }
}

#[test]
fn gemini_session_b_cannot_stash_or_reset_session_as_work() {
    two_sessions_one_checkout(
        Client::Gemini,
        "gemini_session_b_cannot_stash_or_reset_session_as_work",
    );
}

#[test]
fn copilot_session_b_cannot_stash_or_reset_session_as_work() {
    two_sessions_one_checkout(
        Client::Copilot,
        "copilot_session_b_cannot_stash_or_reset_session_as_work",
    );
}
