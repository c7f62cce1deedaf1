//! The harness works with each client: scripted shell calls run, a rate limit ends the run
//! quickly, a SessionStart hook's context reaches the model, and tool calls and hooks agree on
//! the session.

use std::time::Duration;

use serde_json::Value;

use crate::clients::{Client, Harness, baton_bin, shell_quote};
use crate::fake_api::Reply;

const MARKER: &str = "PACKET-MARKER-123";
const RESUME_MARKER: &str = "PACKET-MARKER-456";

/// A hook command that prints `additionalContext` for SessionStart in the JSON shape all three
/// clients read: `{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":..}}`.
/// The marker's digits are computed by the shell, so the marker itself appears in no settings
/// file and reaches the model only as the hook's output.
fn context_hook(number: u32) -> String {
    let template = r#"{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":"PACKET-MARKER-%s"}}"#;
    format!("printf {} \"$(({number} + 0))\"", shell_quote(template))
}

fn shell_call_runs(client: Client, test: &str) {
    let script = vec![
        // No `$(...)` here: Gemini CLI refuses every command holding command-substitution
        // syntax, even `$((...))`.
        Reply::Shell("echo hello > marker.txt; printf 'TOOL-OUTPUT-%s' 42".into()),
        Reply::Text("done".into()),
    ];
    let Some(h) = Harness::new(client, test, script) else {
        return;
    };
    let out = h.run("write the marker");
    eprintln!("{test}: {:.1?}", out.elapsed);
    assert_eq!(out.code, Some(0), "{out}\n{}", h.api.summary());
    assert_eq!(
        h.read("marker.txt"),
        "hello\n",
        "{out}\n{}",
        h.api.summary()
    );
    assert_eq!(h.api.remaining(), 0, "{}", h.api.summary());
    // The tool call's output went back to the model.
    assert!(h.api.saw("TOOL-OUTPUT-42"), "{}", h.api.summary());
}

#[test]
fn claude_runs_a_scripted_shell_call() {
    shell_call_runs(Client::Claude, "claude_runs_a_scripted_shell_call");
}

#[test]
fn codex_runs_a_scripted_shell_call() {
    shell_call_runs(Client::Codex, "codex_runs_a_scripted_shell_call");
}

#[test]
fn gemini_runs_a_scripted_shell_call() {
    shell_call_runs(Client::Gemini, "gemini_runs_a_scripted_shell_call");
}

fn rate_limit_ends_the_run(client: Client, test: &str) {
    let Some(h) = Harness::new(client, test, vec![Reply::RateLimit]) else {
        return;
    };
    let out = h.run("hello");
    eprintln!("{test}: exit {:?} after {:.1?}", out.code, out.elapsed);
    assert_ne!(out.code, Some(0), "{out}\n{}", h.api.summary());
    // One request, no retry: the harness turns each client's retries off.
    assert_eq!(h.api.main_requests().len(), 1, "{out}\n{}", h.api.summary());
    // Far below the 75-90 s a default Gemini CLI spends retrying, with room for a slow machine.
    assert!(
        out.elapsed < Duration::from_secs(45),
        "a rate limit took {:.1?} to end the run: {out}\n{}",
        out.elapsed,
        h.api.summary()
    );
    assert_eq!(h.api.remaining(), 0, "{}", h.api.summary());
}

#[test]
fn claude_exits_on_a_rate_limit() {
    rate_limit_ends_the_run(Client::Claude, "claude_exits_on_a_rate_limit");
}

#[test]
fn codex_exits_on_a_rate_limit() {
    rate_limit_ends_the_run(Client::Codex, "codex_exits_on_a_rate_limit");
}

#[test]
fn gemini_exits_on_a_rate_limit() {
    rate_limit_ends_the_run(Client::Gemini, "gemini_exits_on_a_rate_limit");
}

fn session_start_context_reaches_the_model(client: Client, test: &str) {
    let script = vec![Reply::Text("FIRST-ANSWER".into())];
    let Some(mut h) = Harness::new(client, test, script) else {
        return;
    };
    h.add_hook("SessionStart", &context_hook(123));
    let out = h.run("first prompt");
    eprintln!("{test}: {:.1?}", out.elapsed);
    assert_eq!(out.code, Some(0), "{out}\n{}", h.api.summary());
    let first = h.api.main_requests();
    assert!(
        first.first().is_some_and(|r| r.body.contains(MARKER)),
        "the first main request lacks the hook's context: {out}\n{}",
        h.api.summary()
    );
    // On resume the hook runs again (now printing another marker) and its context reaches the
    // model beside the old turn.
    h.clear_hooks();
    h.add_hook("SessionStart", &context_hook(456));
    let out = h.resume("second prompt");
    eprintln!("{test} (resume): {:.1?}", out.elapsed);
    assert_eq!(out.code, Some(0), "{out}\n{}", h.api.summary());
    let resumed = &h.api.main_requests()[first.len()..];
    let request = resumed
        .first()
        .unwrap_or_else(|| panic!("no request on resume: {out}\n{}", h.api.summary()));
    assert!(
        request.body.contains("FIRST-ANSWER") && request.body.contains("second prompt"),
        "the resumed session lacks its first turn: {}",
        request.body
    );
    assert!(
        request.body.contains(RESUME_MARKER),
        "the hook's context was not added on resume: {}",
        request.body
    );
    let still = |text: &str| {
        if request.body.contains(text) {
            "still"
        } else {
            "no longer"
        }
    };
    eprintln!(
        "{test}: the first prompt is {} and its hook context {} in the resumed request",
        still("first prompt"),
        still(MARKER)
    );
}

#[test]
fn claude_session_start_context_reaches_the_model() {
    session_start_context_reaches_the_model(
        Client::Claude,
        "claude_session_start_context_reaches_the_model",
    );
}

#[test]
fn codex_session_start_context_reaches_the_model() {
    session_start_context_reaches_the_model(
        Client::Codex,
        "codex_session_start_context_reaches_the_model",
    );
}

#[test]
fn gemini_session_start_context_reaches_the_model() {
    session_start_context_reaches_the_model(
        Client::Gemini,
        "gemini_session_start_context_reaches_the_model",
    );
}

/// The trust entries are what lets Codex run a project hook: with the hash of another command
/// in them, the same hook does not run and the session goes on without it.
#[test]
fn codex_runs_no_hook_whose_trusted_hash_differs() {
    let test = "codex_runs_no_hook_whose_trusted_hash_differs";
    let Some(mut h) = Harness::new(Client::Codex, test, vec![]) else {
        return;
    };
    let ran = h.project.join("hook-ran");
    h.add_hook(
        "SessionStart",
        &format!("touch {}", shell_quote(&ran.to_string_lossy())),
    );
    h.spoil_codex_trust();
    let out = h.run("hello");
    eprintln!("{test}: {:.1?}", out.elapsed);
    assert_eq!(out.code, Some(0), "{out}\n{}", h.api.summary());
    assert!(!ran.exists(), "an untrusted hook ran: {out}");
    assert_eq!(h.api.main_requests().len(), 1, "{}", h.api.summary());
}

/// `NAME=value` lines of an `env` dump.
fn env_var(dump: &str, name: &str) -> Option<String> {
    dump.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}=")).map(str::to_string))
}

/// Runs one session where a SessionStart hook appends its payload to `hook-stdin.log` and a
/// tool call dumps its environment to `env.txt` and the baton it finds to `which-baton.txt`.
/// Returns the harness (for its files) and the session id the hook was given.
fn session_seen_by_hook_and_tool(client: Client, test: &str) -> Option<(Harness, String)> {
    let script = vec![
        Reply::Shell("env > env.txt; command -v baton > which-baton.txt".into()),
        Reply::Text("done".into()),
    ];
    let mut h = Harness::new(client, test, script)?;
    let log = h.project.join("hook-stdin.log");
    h.add_hook(
        "SessionStart",
        &format!(
            "cat >> {}; echo >> {}",
            shell_quote(&log.to_string_lossy()),
            shell_quote(&log.to_string_lossy())
        ),
    );
    let out = h.run("dump the environment");
    eprintln!("{test}: {:.1?}", out.elapsed);
    assert_eq!(out.code, Some(0), "{out}\n{}", h.api.summary());
    let payload: Value = serde_json::from_str(h.read("hook-stdin.log").trim())
        .unwrap_or_else(|e| panic!("hook payload ({e}): {}\n{out}", h.read("hook-stdin.log")));
    let session = payload["session_id"].as_str().unwrap().to_string();
    assert_eq!(
        h.read("which-baton.txt").trim(),
        baton_bin().to_string_lossy(),
        "a tool call finds the baton under test on its PATH; env:\n{}",
        h.read("env.txt")
    );
    Some((h, session))
}

#[test]
fn claude_tool_calls_carry_the_hook_session_id() {
    let Some((h, session)) = session_seen_by_hook_and_tool(
        Client::Claude,
        "claude_tool_calls_carry_the_hook_session_id",
    ) else {
        return;
    };
    let env = h.read("env.txt");
    assert_eq!(
        env_var(&env, "CLAUDE_CODE_SESSION_ID").as_deref(),
        Some(session.as_str()),
        "{env}"
    );
}

#[test]
fn codex_tool_calls_carry_the_hook_session_id() {
    let Some((h, session)) =
        session_seen_by_hook_and_tool(Client::Codex, "codex_tool_calls_carry_the_hook_session_id")
    else {
        return;
    };
    let env = h.read("env.txt");
    assert_eq!(
        env_var(&env, "CODEX_SESSION_ID").as_deref(),
        Some(session.as_str()),
        "{env}"
    );
    assert_eq!(
        env_var(&env, "CODEX_THREAD_ID").as_deref(),
        Some(session.as_str()),
        "{env}"
    );
}

/// A shell script that prints its own ancestry, one `pid comm args` line per process from its
/// parent up to pid 1, read from /proc.
const ANCESTRY: &str = r#"p=$PPID
while [ "$p" -gt 1 ]; do
  printf '%s %s\n' "$p" "$(tr '\0' ' ' < /proc/$p/cmdline)"
  p=$(awk '/^PPid:/ {print $2}' /proc/$p/status)
done
"#;

/// An ancestry listing cut after this test process: what lies above it is no business of the
/// client's.
fn up_to_this_test(tree: &str) -> String {
    let me = std::process::id().to_string();
    let mut out = String::new();
    for line in tree.lines() {
        out += line;
        out.push('\n');
        if line.split(' ').next() == Some(me.as_str()) {
            break;
        }
    }
    out
}

/// The pids of an ancestry listing, nearest first.
fn pids(tree: &str) -> Vec<&str> {
    tree.lines().filter_map(|l| l.split(' ').next()).collect()
}

#[test]
fn gemini_tool_calls_and_hooks_share_the_client_process() {
    let test = "gemini_tool_calls_and_hooks_share_the_client_process";
    let script = vec![
        Reply::Shell("env > tool-env.txt; sh ancestry.sh > tool-tree.txt".into()),
        Reply::Text("done".into()),
    ];
    let Some(mut h) = Harness::new(Client::Gemini, test, script) else {
        return;
    };
    std::fs::write(h.project.join("ancestry.sh"), ANCESTRY).unwrap();
    let dir = shell_quote(&h.project.to_string_lossy());
    h.add_hook(
        "SessionStart",
        &format!("cat > {dir}/hook-stdin.json; env > {dir}/hook-env.txt; sh {dir}/ancestry.sh > {dir}/hook-tree.txt"),
    );
    let out = h.run("show the process tree");
    eprintln!("{test}: {:.1?}", out.elapsed);
    assert_eq!(out.code, Some(0), "{out}\n{}", h.api.summary());
    let (hook_tree, tool_tree) = (
        up_to_this_test(&h.read("hook-tree.txt")),
        up_to_this_test(&h.read("tool-tree.txt")),
    );
    eprintln!("hook ancestry:\n{hook_tree}tool ancestry:\n{tool_tree}");
    let payload: Value = serde_json::from_str(&h.read("hook-stdin.json")).unwrap();
    let session = payload["session_id"].as_str().unwrap();
    let (hook_env, tool_env) = (h.read("hook-env.txt"), h.read("tool-env.txt"));
    assert_eq!(
        env_var(&hook_env, "GEMINI_SESSION_ID").as_deref(),
        Some(session),
        "{hook_env}"
    );
    eprintln!(
        "tool call: GEMINI_SESSION_ID={:?} GEMINI_CLI={:?}",
        env_var(&tool_env, "GEMINI_SESSION_ID"),
        env_var(&tool_env, "GEMINI_CLI")
    );
    // The nearest process both have as an ancestor is the Gemini CLI's own node process.
    let tool_pids = pids(&tool_tree);
    let common = pids(&hook_tree)
        .into_iter()
        .find(|p| tool_pids.contains(p))
        .unwrap_or_else(|| panic!("no common ancestor:\n{hook_tree}\n{tool_tree}"));
    let line = hook_tree
        .lines()
        .find(|l| l.split(' ').next() == Some(common))
        .unwrap();
    assert!(line.contains("gemini"), "common ancestor {line}");
}
