//! `baton hook <client> <event>` fed the payloads the real clients sent: every one gives its
//! documented action, bad input changes nothing and exits 0, the open-turn rule classes a turn
//! that died from the evidence, and a tool call finds its session without `--session`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::Value;

use crate::common::{Run, TestEnv, at, like, loop_key, named, to_run};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/clients")
}

pub(crate) fn fixture(rel: &str) -> Vec<u8> {
    std::fs::read(fixtures().join(rel)).unwrap()
}

fn session_of(payload: &[u8]) -> String {
    let v: Value = serde_json::from_slice(payload).unwrap();
    // Cursor's session is the chat's `conversation_id`, which every payload of its carries;
    // Antigravity's its `conversationId`; Copilot CLI's its `sessionId`.
    v.get("conversation_id")
        .or_else(|| v.get("conversationId"))
        .or_else(|| v.get("sessionId"))
        .unwrap_or(&v["session_id"])
        .as_str()
        .unwrap()
        .to_string()
}

/// A payload with its `transcript_path` pointing at `transcript`.
fn with_transcript(payload: &[u8], transcript: &Path) -> Vec<u8> {
    let mut v: Value = serde_json::from_slice(payload).unwrap();
    v["transcript_path"] = transcript.to_str().unwrap().into();
    serde_json::to_vec(&v).unwrap()
}

/// Runs `baton hook <client> <event>` at `now` with `payload` on stdin, with no session in the
/// environment: the hook's session is the payload's.
fn hook(env: &TestEnv, client: &str, event: &str, payload: &[u8], now: &str) -> Run {
    hook_with(env, &["hook", client, event], payload, now)
}

fn hook_with(env: &TestEnv, args: &[&str], payload: &[u8], now: &str) -> Run {
    run_hook(env, args, payload, now, &[])
}

/// Runs `baton <args>` at `now` with `payload` on stdin and `vars` set, as a client runs its
/// hook.
pub fn run_hook(
    env: &TestEnv,
    args: &[&str],
    payload: &[u8],
    now: &str,
    vars: &[(&str, &std::ffi::OsStr)],
) -> Run {
    let mut cmd = env.command(None, now);
    cmd.args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (name, value) in vars {
        cmd.env(name, value);
    }
    let mut child = cmd.spawn().unwrap();
    // A hook may stop reading early (a payload over the cap): a broken pipe is its answer.
    let _ = child.stdin.take().unwrap().write_all(payload);
    to_run(child.wait_with_output().unwrap())
}

fn loop_state(env: &TestEnv, ticket: &str) -> Value {
    let out = env.run(None, &at(60), &["--json", "loop", "show", ticket]);
    out.assert_code(0);
    out.json()["state"].clone()
}

fn journal_events(env: &TestEnv, ticket: &str) -> Vec<String> {
    let out = env.run(None, &at(60), &["--json", "log", ticket]);
    out.assert_code(0);
    out.json()["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event"].as_str().unwrap().to_string())
        .collect()
}

fn turn_file(env: &TestEnv, client: &str, session: &str) -> PathBuf {
    env.state_dir()
        .join("sessions")
        .join(format!("{client}-{session}.turn"))
}

/// What the fixtures README and docs/hooks.md say each event does.
fn documented(client: &str, event: &str) -> &'static str {
    match (client, event) {
        (_, "SessionStart") | ("cursor", "sessionStart") | ("copilot", "sessionStart") => "start",
        ("claude" | "codex", "UserPromptSubmit")
        | ("gemini", "BeforeAgent")
        | ("cursor", "beforeSubmitPrompt")
        | ("copilot", "userPromptSubmitted") => "open",
        ("claude" | "codex", "Stop") | ("gemini", "AfterAgent") | ("copilot", "agentStop") => "end",
        ("cursor", "sessionEnd") => "session-end",
        // Cursor's stop: a turn's end, or with `status: error` a failure of unknown class;
        // Antigravity's Stop, with `error`, a failure.
        ("cursor", "stop") | ("antigravity", "Stop") => "stop",
        // Antigravity's first invocation starts the session, a later one opens a turn.
        ("antigravity", "PreInvocation") => "invocation",
        (_, "StopFailure") => "failure",
        (_, "SessionEnd") | ("copilot", "sessionEnd") => "session-end",
        (_, "PreCompact" | "PreCompress") => "checkpoint",
        _ => "ignored",
    }
}

/// A loop the payload's session owns (T-1, written at minute 0) and one another session left
/// interrupted (T-2), so that a session start has something to hand over.
fn two_loops(env: &TestEnv, session: &str) {
    env.baton(session, 0, &["loop", "init", "T-1"])
        .assert_code(0);
    env.baton("earlier-session", 0, &["loop", "init", "T-2"])
        .assert_code(0);
    env.baton(
        "earlier-session",
        1,
        &["loop", "interrupt", "T-2", "--reason", "rate_limit"],
    )
    .assert_code(0);
}

#[test]
fn every_captured_payload_gives_its_documented_action() {
    let mut seen = 0;
    for dir in std::fs::read_dir(fixtures()).unwrap() {
        let dir = dir.unwrap().path();
        let name = dir.file_name().unwrap().to_str().unwrap().to_string();
        let Some(client) = [
            "claude",
            "codex",
            "gemini",
            "cursor",
            "antigravity",
            "copilot",
        ]
        .into_iter()
        .find(|c| name.starts_with(c)) else {
            continue;
        };
        for file in std::fs::read_dir(&dir).unwrap() {
            let file = file.unwrap().file_name().into_string().unwrap();
            let event = file.split('.').next().unwrap();
            let payload = fixture(&format!("{name}/{file}"));
            let session = session_of(&payload);
            let env = TestEnv::new();
            two_loops(&env, &session);
            let what = format!("{name}/{file}");
            let before = env.snapshot();
            let out = hook(&env, client, event, &payload, &at(5));
            out.assert_code(0);
            assert_eq!(out.stderr, "", "{what}");
            let t1 = loop_state(&env, "T-1");
            let documented = match documented(client, event) {
                "stop" if file.contains("error") => "failure",
                "stop" => "end",
                "invocation" if file.contains("first") => "start",
                "invocation" => "open",
                other => other,
            };
            match documented {
                "start" if client == "antigravity" => {
                    let injected: Value = serde_json::from_str(&out.stdout)
                        .unwrap_or_else(|e| panic!("{what}: {e}: {}", out.stdout));
                    let context = injected["injectSteps"][0]["ephemeralMessage"]
                        .as_str()
                        .unwrap();
                    assert!(context.contains("T-2"), "{what}: {context}");
                }
                "start" if client == "cursor" => {
                    let injected: Value = serde_json::from_str(&out.stdout)
                        .unwrap_or_else(|e| panic!("{what}: {e}: {}", out.stdout));
                    assert_eq!(injected["continue"], true, "{what}");
                    let context = injected["additional_context"].as_str().unwrap();
                    assert!(context.contains("T-2"), "{what}: {context}");
                }
                "start" => {
                    let injected: Value = serde_json::from_str(&out.stdout)
                        .unwrap_or_else(|e| panic!("{what}: {e}: {}", out.stdout));
                    // Copilot CLI reads a bare `{"additionalContext": …}`.
                    let context = injected["hookSpecificOutput"]["additionalContext"]
                        .as_str()
                        .or(injected["additionalContext"].as_str())
                        .unwrap();
                    assert!(context.contains("T-2"), "{what}: {context}");
                    assert!(context.contains("rate_limit"), "{what}: {context}");
                    if client != "copilot" {
                        assert_eq!(
                            injected["hookSpecificOutput"]["hookEventName"],
                            "SessionStart"
                        );
                    }
                }
                "open" => {
                    assert!(turn_file(&env, client, &session).exists(), "{what}");
                    assert_eq!(out.stdout, "", "{what}");
                }
                "end" => {
                    assert_eq!(t1["last_updated"], at(5), "{what}: a heartbeat");
                    assert_eq!(t1["status"], "active", "{what}");
                }
                "failure" => {
                    assert_eq!(t1["status"], "interrupted", "{what}");
                    // An overloaded API (HTTP 529) is no rate limit, and Cursor's failed turn
                    // names no error.
                    let want = if file.contains("overloaded")
                        || client == "cursor"
                        || (client == "antigravity" && !file.contains("429"))
                    {
                        "unknown"
                    } else {
                        "rate_limit"
                    };
                    assert_eq!(t1["interrupt_reason"], want, "{what}");
                }
                "session-end" => {
                    // No turn was open: the session ended between turns.
                    assert_eq!(t1["status"], "interrupted", "{what}");
                    assert_eq!(t1["interrupt_reason"], "session_expiry", "{what}");
                }
                "checkpoint" => {
                    assert_eq!(
                        journal_events(&env, "T-1"),
                        ["init", "checkpoint"],
                        "{what}"
                    );
                    // Gemini asks before every model call: a repeat changes nothing.
                    let snap = env.snapshot();
                    hook(&env, client, event, &payload, &at(5)).assert_code(0);
                    assert_eq!(env.snapshot(), snap, "{what}: a repeated checkpoint");
                }
                _ => assert_eq!(env.snapshot(), before, "{what}: an ignored event"),
            }
            if documented != "start" {
                assert_eq!(out.stdout, "", "{what}");
            }
            // The other session's interrupted loop is never touched.
            assert_eq!(loop_state(&env, "T-2")["interrupted_at"], at(1), "{what}");
            seen += 1;
        }
    }
    assert!(seen >= 50, "only {seen} payloads");
}

/// Malformed, empty, huge or unknown input: one stderr line, exit 0, nothing on stdout and
/// nothing changed.
#[test]
fn bad_input_exits_zero_with_one_line_and_changes_nothing() {
    let env = TestEnv::new();
    let stop = fixture("claude-code-2.1.332/Stop.json");
    let session = session_of(&stop);
    two_loops(&env, &session);
    let mut huge = b"{\"session_id\":\"x\",\"hook_event_name\":\"Stop\",\"pad\":\"".to_vec();
    huge.extend(std::iter::repeat_n(b'a', 1024 * 1024 + 10));
    huge.extend(b"\"}");
    let unknown = br#"{"session_id":"x","hook_event_name":"Teleport"}"#.to_vec();
    let cases: Vec<(&str, Vec<&str>, Vec<u8>, &str)> = vec![
        (
            "empty",
            vec!["hook", "claude", "Stop"],
            Vec::new(),
            "not JSON",
        ),
        (
            "malformed",
            vec!["hook", "claude", "Stop"],
            b"{\"session_id\": ".to_vec(),
            "not JSON",
        ),
        ("huge", vec!["hook", "claude", "Stop"], huge, "cap"),
        (
            "unknown event",
            vec!["hook", "claude", "Teleport"],
            unknown,
            "not a hook event",
        ),
        (
            "another event's payload",
            vec!["hook", "claude", "SessionEnd"],
            stop.clone(),
            "installed for",
        ),
        (
            "unknown client",
            vec!["hook", "zed", "Stop"],
            stop.clone(),
            "no client",
        ),
        (
            "not an object",
            vec!["hook", "codex", "Stop"],
            b"[1, 2]".to_vec(),
            "not a JSON object",
        ),
    ];
    for (what, args, payload, says) in cases {
        let before = env.snapshot();
        let out = hook_with(&env, &args, &payload, &at(5));
        out.assert_code(0);
        assert_eq!(out.stdout, "", "{what}");
        assert_eq!(out.stderr.lines().count(), 1, "{what}: {}", out.stderr);
        assert!(out.stderr.contains(says), "{what}: {}", out.stderr);
        assert_eq!(env.snapshot(), before, "{what}");
    }
}

/// Codex and Gemini have no failure hook: a turn opened by the prompt hook and never closed
/// by the stop hook died, and its class comes from the evidence.
#[test]
fn an_open_turn_at_session_end_is_classed_from_the_evidence() {
    let transcripts = fixtures().join("transcripts");
    let codex_429 = transcripts.join("codex-0.171.0.rate-limit-tail.jsonl");
    let claude_429 = transcripts.join("claude-code-2.1.332.rate-limit-line.json");
    // (client, prompt payload, its event, end payload, transcript, the reason wanted)
    type Case<'a> = (
        &'a str,
        &'a str,
        &'a str,
        &'a str,
        Option<&'a Path>,
        &'a str,
    );
    let cases: Vec<Case> = vec![
        // Codex: the transcript's last task_complete carries HTTP 429.
        (
            "codex",
            "codex-0.171.0/UserPromptSubmit.after-429.json",
            "UserPromptSubmit",
            "codex-0.171.0/SessionEnd.after-429.json",
            Some(&codex_429),
            "rate_limit",
        ),
        // Nothing known: a crash.
        (
            "codex",
            "codex-0.171.0/UserPromptSubmit.after-429.json",
            "UserPromptSubmit",
            "codex-0.171.0/SessionEnd.after-429.json",
            None,
            "unknown",
        ),
        // Gemini records nothing of a 429 for its hooks: never guessed as a rate limit.
        (
            "gemini",
            "gemini-0.61.0/BeforeAgent.after-429.json",
            "BeforeAgent",
            "gemini-0.61.0/SessionEnd.after-429.json",
            Some(&codex_429),
            "unknown",
        ),
        // Claude Code's StopFailure did not run: its transcript line backs it up.
        (
            "claude",
            "claude-code-2.1.332/UserPromptSubmit.after-429.json",
            "UserPromptSubmit",
            "claude-code-2.1.332/SessionEnd.after-429.json",
            Some(&claude_429),
            "rate_limit",
        ),
    ];
    for (client, open, open_event, end, transcript, want) in cases {
        let env = TestEnv::new();
        let open_payload = fixture(open);
        let session = session_of(&open_payload);
        two_loops(&env, &session);
        hook(&env, client, open_event, &open_payload, &at(3)).assert_code(0);
        let mut end_payload = fixture(end);
        let mut v: Value = serde_json::from_slice(&end_payload).unwrap();
        v["session_id"] = session.clone().into();
        end_payload = serde_json::to_vec(&v).unwrap();
        if let Some(t) = transcript {
            end_payload = with_transcript(&end_payload, t);
        }
        let out = hook(&env, client, "SessionEnd", &end_payload, &at(4));
        out.assert_code(0);
        assert_eq!(out.stderr, "", "{client} {end}");
        let t1 = loop_state(&env, "T-1");
        assert_eq!(t1["status"], "interrupted", "{client} {end}");
        assert_eq!(
            t1["interrupt_reason"], want,
            "{client} {end} {transcript:?}"
        );
        // The session is forgotten with its end.
        assert!(!turn_file(&env, client, &session).exists());
        assert!(
            !env.state_dir()
                .join("sessions")
                .join(format!("{client}-{session}.json"))
                .exists()
        );
    }
}

/// A stop closes the turn the prompt opened: the session's end is then an end between turns.
#[test]
fn a_closed_turn_is_not_a_death() {
    let env = TestEnv::new();
    let open = fixture("gemini-0.61.0/BeforeAgent.json");
    let session = session_of(&open);
    two_loops(&env, &session);
    hook(&env, "gemini", "BeforeAgent", &open, &at(2)).assert_code(0);
    assert!(turn_file(&env, "gemini", &session).exists());
    hook(
        &env,
        "gemini",
        "AfterAgent",
        &fixture("gemini-0.61.0/AfterAgent.json"),
        &at(3),
    )
    .assert_code(0);
    assert!(!turn_file(&env, "gemini", &session).exists());
    hook(
        &env,
        "gemini",
        "SessionEnd",
        &fixture("gemini-0.61.0/SessionEnd.json"),
        &at(4),
    )
    .assert_code(0);
    assert_eq!(
        loop_state(&env, "T-1")["interrupt_reason"],
        "session_expiry"
    );
}

/// Claude Code ends a session with `resume` when it goes on elsewhere: nothing stopped.
#[test]
fn a_session_end_that_resumes_changes_nothing() {
    let env = TestEnv::new();
    let mut v: Value =
        serde_json::from_slice(&fixture("claude-code-2.1.332/SessionEnd.json")).unwrap();
    v["reason"] = "resume".into();
    let payload = serde_json::to_vec(&v).unwrap();
    two_loops(&env, &session_of(&payload));
    let before = env.snapshot();
    hook(&env, "claude", "SessionEnd", &payload, &at(5)).assert_code(0);
    assert_eq!(env.snapshot(), before);
}

/// The per-turn hook refreshes what the session owns at most once a minute: a second stop
/// within the window rewrites nothing.
#[test]
fn the_per_turn_heartbeat_is_coalesced() {
    let env = TestEnv::new();
    let stop = fixture("codex-0.171.0/Stop.json");
    let session = session_of(&stop);
    two_loops(&env, &session);
    hook(&env, "codex", "Stop", &stop, &at(5)).assert_code(0);
    assert_eq!(loop_state(&env, "T-1")["last_updated"], at(5));
    let after_first = env.snapshot();
    let half_a_minute_later = "2026-03-01T12:05:30Z";
    hook(&env, "codex", "Stop", &stop, half_a_minute_later).assert_code(0);
    assert_eq!(env.snapshot(), after_first, "a stop inside the window");
    hook(&env, "codex", "Stop", &stop, &at(7)).assert_code(0);
    assert_eq!(loop_state(&env, "T-1")["last_updated"], at(7));
}

/// A run lease the session holds is refreshed by the per-turn hook and released, with the
/// reason, by a failure: the next session finds the run free and knows why.
#[test]
fn the_hooks_keep_and_end_the_sessions_run_lease() {
    let env = TestEnv::new();
    env.write("plan.md", "# plan\n");
    env.git(&["add", "plan.md"]);
    env.git(&["commit", "--quiet", "-m", "plan"]);
    let failure = fixture("claude-code-2.1.332/StopFailure.after-429.json");
    let session = session_of(&failure);
    let out = env.baton(&session, 0, &["--json", "run", "new", "--plan", "plan.md"]);
    out.assert_code(0);
    let id = out.json()["run_id"].as_str().unwrap().to_string();
    let mut stop: Value =
        serde_json::from_slice(&fixture("claude-code-2.1.332/Stop.json")).unwrap();
    stop["session_id"] = session.clone().into();
    hook(
        &env,
        "claude",
        "Stop",
        &serde_json::to_vec(&stop).unwrap(),
        &at(5),
    )
    .assert_code(0);
    let run = env.read_run(&id);
    assert_eq!(run["lease"]["heartbeat_at"], at(5));
    hook(&env, "claude", "StopFailure", &failure, &at(6)).assert_code(0);
    let run = env.read_run(&id);
    assert!(run["lease"].is_null(), "{run}");
    assert_eq!(run["interrupt_reason"], "rate_limit");
    let resume = env.baton("next-session", 7, &["--json", "resume"]);
    resume.assert_code(0);
    let text = resume.stdout;
    assert!(text.contains("rate_limit"), "{text}");
}

/// A tool call finds its session without `--session`: Codex names it in the environment, and
/// a Gemini CLI tool call finds the session its client process's hook recorded.
#[test]
fn a_tool_call_is_attributed_to_its_session() {
    let env = TestEnv::new();
    let out = env
        .command(None, &at(0))
        .env("CODEX_THREAD_ID", "codex-thread-7")
        .args(["--json", "loop", "init", "T-1"])
        .output()
        .unwrap();
    to_run(out).assert_code(0);
    assert_eq!(loop_state(&env, "T-1")["session_id"], "codex-thread-7");

    // A stand-in client: a script named `gemini` runs the session-start hook, then a tool call
    // with only GEMINI_CLI=1, both as its children.
    let start = fixture("gemini-0.61.0/SessionStart.json");
    let session = session_of(&start);
    let dir = env.repo.parent().unwrap().join("bin");
    std::fs::create_dir_all(&dir).unwrap();
    let payload = dir.join("start.json");
    std::fs::write(&payload, &start).unwrap();
    let script = dir.join("gemini");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\n\"$BATON\" hook gemini SessionStart < '{}' || exit 9\nGEMINI_CLI=1 \"$BATON\" --json loop init T-2\n",
            payload.display()
        ),
    )
    .unwrap();
    let base = env.command(None, &at(1));
    let out = like(&base, "sh")
        .arg(&script)
        .env("BATON", env!("CARGO_BIN_EXE_baton"))
        .output()
        .unwrap();
    to_run(out).assert_code(0);
    assert_eq!(loop_state(&env, "T-2")["session_id"], session.as_str());

    // A Codex run from a Claude Code tool call inherits Claude Code's session variable beside
    // its own: the nearest agent process says whose tool call it is.
    let nested = dir.join("codex");
    std::fs::write(
        &nested,
        "#!/bin/sh
\"$BATON\" --json loop init T-3\n",
    )
    .unwrap();
    let out = like(&base, "sh")
        .arg(&nested)
        .env("BATON", env!("CARGO_BIN_EXE_baton"))
        .env("CLAUDE_CODE_SESSION_ID", "outer-claude")
        .env("CODEX_THREAD_ID", "inner-codex")
        .output()
        .unwrap();
    to_run(out).assert_code(0);
    assert_eq!(loop_state(&env, "T-3")["session_id"], "inner-codex");
}

/// A state file the hook cannot read is named on the one stderr line; the session's other
/// work is still interrupted.
#[test]
fn an_unreadable_file_is_named_and_the_rest_still_interrupted() {
    let env = TestEnv::new();
    let failure = fixture("claude-code-2.1.332/StopFailure.after-429.json");
    let session = session_of(&failure);
    two_loops(&env, &session);
    env.set_record_bytes(
        &loop_key("TORN"),
        format!("{{\"session_id\": \"{session}\", \"phase\"").as_bytes(),
    );
    let out = hook(&env, "claude", "StopFailure", &failure, &at(5));
    out.assert_code(0);
    assert_eq!(out.stdout, "");
    // On a server the hook only records the interrupt (docs/hooks.md), and the process it
    // starts meets the unreadable record, with no stderr anyone reads.
    if crate::common::pg_mode() {
        assert_eq!(out.stderr, "");
    } else {
        assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
        assert!(
            out.stderr.contains(&named("loop-state-TORN.json")),
            "{}",
            out.stderr
        );
    }
    assert_eq!(loop_state(&env, "T-1")["interrupt_reason"], "rate_limit");
}

/// A Gemini CLI session whose turn dies after the client wrote an error report naming
/// `named` (or none): the reason its loop is left with.
fn gemini_turn_dies(named: Option<&Path>) -> String {
    let env = TestEnv::new();
    let reports = tempfile::tempdir().unwrap();
    let open = fixture("gemini-0.61.0/BeforeAgent.after-429.json");
    let session = session_of(&open);
    let mut end: Value =
        serde_json::from_slice(&fixture("gemini-0.61.0/SessionEnd.after-429.json")).unwrap();
    end["session_id"] = session.clone().into();
    let end = serde_json::to_vec(&end).unwrap();
    two_loops(&env, &session);
    let run = |event: &str, payload: &[u8], now: &str| {
        let mut child = env
            .command(None, now)
            .args(["hook", "gemini", event])
            .env("TMPDIR", reports.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(payload).unwrap();
        to_run(child.wait_with_output().unwrap())
    };
    run("BeforeAgent", &open, &at(3)).assert_code(0);
    if let Some(dir) = named {
        let dir = if dir.is_relative() {
            env.repo.canonicalize().unwrap().join(dir)
        } else {
            dir.to_path_buf()
        };
        let report = serde_json::json!({
            "error": {
                "message": "Resource has been exhausted (e.g. check quota).",
                "stack": "RetryableQuotaError: Resource has been exhausted (e.g. check quota).\n    at classifyGoogleError",
            },
            "context": [{ "role": "user", "parts": [{ "text": format!("I'm currently working in the directory: {}", dir.display()) }] }],
        });
        std::fs::write(
            reports
                .path()
                .join("gemini-client-error-Turn.run-sendMessageStream-1.json"),
            report.to_string(),
        )
        .unwrap();
    }
    let out = run("SessionEnd", &end, &at(4));
    out.assert_code(0);
    assert_eq!(out.stderr, "");
    loop_state(&env, "T-1")["interrupt_reason"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Gemini CLI's own error report, written in its temp directory while the turn was open and
/// naming this project, is the evidence of a rate limit its hooks are not given; with no
/// report, or a report of another project, the turn's death stays unknown.
#[test]
fn a_gemini_error_report_of_this_project_classes_the_turn_as_a_rate_limit() {
    assert_eq!(gemini_turn_dies(Some(Path::new(""))), "rate_limit");
    assert_eq!(
        gemini_turn_dies(Some(Path::new("/elsewhere/project"))),
        "unknown"
    );
    assert_eq!(gemini_turn_dies(None), "unknown");
}

/// However much is resumable, the packet a session start injects stays under Claude Code's
/// 10,000-character limit for hook context (the tightest of the three clients), and says how
/// to list the rest.
#[test]
fn the_injected_packet_stays_under_the_clients_limit() {
    let env = TestEnv::new();
    for i in 0..40 {
        let ticket = format!("PROJ-{i}-{}", "long-ticket-name-".repeat(5));
        let session = format!("earlier-{i}");
        env.baton(&session, 0, &["loop", "init", &ticket])
            .assert_code(0);
        env.baton(
            &session,
            1,
            &["loop", "interrupt", &ticket, "--reason", "rate_limit"],
        )
        .assert_code(0);
    }
    let start = fixture("claude-code-2.1.332/SessionStart.json");
    let out = hook(&env, "claude", "SessionStart", &start, &at(30));
    out.assert_code(0);
    let injected: Value = serde_json::from_str(&out.stdout).unwrap();
    let context = injected["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(context.chars().count() <= 10_000, "{}", context.len());
    // Some were left out to keep within the limit, and the packet says where they are.
    assert!(
        context.contains(" more: `baton status` lists them"),
        "{context}"
    );
}

/// A compaction happens inside a running turn (Codex starts the session again with `source:
/// compact`): the turn stays open, so a rate limit later in it is still found.
#[test]
fn a_compaction_keeps_the_turn_it_interrupts() {
    let env = TestEnv::new();
    let open = fixture("codex-0.171.0/UserPromptSubmit.json");
    let session = session_of(&open);
    two_loops(&env, &session);
    hook(&env, "codex", "UserPromptSubmit", &open, &at(2)).assert_code(0);
    let mut compact: Value =
        serde_json::from_slice(&fixture("codex-0.171.0/SessionStart.compact.json")).unwrap();
    compact["session_id"] = session.clone().into();
    hook(
        &env,
        "codex",
        "SessionStart",
        &serde_json::to_vec(&compact).unwrap(),
        &at(3),
    )
    .assert_code(0);
    assert!(
        turn_file(&env, "codex", &session).exists(),
        "the turn goes on"
    );
    let mut end: Value =
        serde_json::from_slice(&fixture("codex-0.171.0/SessionEnd.after-429.json")).unwrap();
    end["session_id"] = session.into();
    let end = with_transcript(
        &serde_json::to_vec(&end).unwrap(),
        &fixtures().join("transcripts/codex-0.171.0.rate-limit-tail.jsonl"),
    );
    hook(&env, "codex", "SessionEnd", &end, &at(4)).assert_code(0);
    assert_eq!(loop_state(&env, "T-1")["interrupt_reason"], "rate_limit");
}

/// The session's files are hints: when they cannot be written, the session start still hands
/// over the packet, and says what went wrong on its one stderr line.
#[test]
fn a_session_start_hands_over_the_packet_even_when_its_files_cannot_be_kept() {
    let env = TestEnv::new();
    let start = fixture("claude-code-2.1.332/SessionStart.json");
    two_loops(&env, &session_of(&start));
    let elsewhere = env.repo.parent().unwrap().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    // The sessions' files stay in the project beside either store.
    std::fs::create_dir_all(env.state_dir()).unwrap();
    std::os::unix::fs::symlink(&elsewhere, env.state_dir().join("sessions")).unwrap();
    let out = hook(&env, "claude", "SessionStart", &start, &at(5));
    out.assert_code(0);
    let injected: Value = serde_json::from_str(&out.stdout).unwrap();
    assert!(
        injected["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .unwrap()
            .contains("T-2")
    );
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(out.stderr.contains("sessions"), "{}", out.stderr);
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
}

/// A bad command line for a hook (a missing event, an extra word, an unknown option) is one
/// stderr line and exit 0, never clap's exit 2, which a client reads as "keep going".
#[test]
fn a_bad_hook_command_line_exits_zero() {
    let env = TestEnv::new();
    let stop = fixture("claude-code-2.1.332/Stop.json");
    for args in [
        vec!["hook", "claude"],
        vec!["hook", "claude", "Stop", "extra"],
        vec!["hook", "claude", "Stop", "--bogus"],
        vec!["-C", ".", "hook"],
    ] {
        let out = hook_with(&env, &args, &stop, &at(5));
        out.assert_code(0);
        assert_eq!(out.stdout, "", "{args:?}");
        assert_eq!(out.stderr.lines().count(), 1, "{args:?}: {}", out.stderr);
    }
    // Any other command keeps clap's usage error.
    env.run(None, &at(5), &["loop", "init"]).assert_code(2);
}

/// A lease shorter than a loop's window (`--lease-ttl 60`) is refreshed once a quarter of its
/// TTL has passed, and the session's refresh window shrinks to match.
#[test]
fn a_short_lease_is_refreshed_within_its_ttl() {
    let env = TestEnv::new();
    let stop = fixture("claude-code-2.1.332/Stop.json");
    let session = session_of(&stop);
    let out = env.baton(
        &session,
        0,
        &[
            "--json",
            "run",
            "new",
            "--feature",
            "short",
            "--lease-ttl",
            "60",
        ],
    );
    out.assert_code(0);
    let id = out.json()["run_id"].as_str().unwrap().to_string();
    let beat = || {
        env.read_run(&id)["lease"]["heartbeat_at"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let (t20, t40) = ("2026-03-01T12:00:20Z", "2026-03-01T12:00:40Z");
    hook(&env, "claude", "Stop", &stop, t20).assert_code(0);
    assert_eq!(beat(), t20, "20 s is over a quarter of a 60 s TTL");
    hook(&env, "claude", "Stop", &stop, t40).assert_code(0);
    assert_eq!(beat(), t40, "the session's window is 15 s, not 60 s");
}

/// A session that goes on after its own failure (the person types again, or Claude Code
/// continues it by itself) takes back, as itself, what that failure interrupted: its next
/// prompt hook makes the loop active again with no note, and another session's loop is left
/// alone. (hook_sequences.rs holds the reset time, the client process and the second waker.)
#[test]
fn a_session_that_goes_on_after_its_failure_takes_its_work_back() {
    let env = TestEnv::new();
    let failure = fixture("claude-code-2.1.332/StopFailure.after-429.json");
    let session = session_of(&failure);
    two_loops(&env, &session);
    let mut prompt: Value =
        serde_json::from_slice(&fixture("claude-code-2.1.332/UserPromptSubmit.json")).unwrap();
    prompt["session_id"] = session.into();
    let prompt = serde_json::to_vec(&prompt).unwrap();
    let first = hook(&env, "claude", "UserPromptSubmit", &prompt, &at(2));
    assert_eq!(first.stdout, "");
    hook(&env, "claude", "StopFailure", &failure, &at(3)).assert_code(0);
    assert_eq!(loop_state(&env, "T-1")["status"], "interrupted");
    let next = hook(&env, "claude", "UserPromptSubmit", &prompt, &at(9));
    next.assert_code(0);
    assert_eq!(next.stdout, "");
    assert_eq!(loop_state(&env, "T-1")["status"], "active");
    assert_eq!(loop_state(&env, "T-2")["status"], "interrupted");
}

/// A failure message that says when the limit resets sets the loop's `resume_after`; one that
/// says nothing leaves the protocol's default wait.
#[test]
fn a_reset_time_in_the_failure_message_is_kept() {
    let env = TestEnv::new();
    let mut failure: Value =
        serde_json::from_slice(&fixture("claude-code-2.1.332/StopFailure.after-429.json")).unwrap();
    let session = failure["session_id"].as_str().unwrap().to_string();
    two_loops(&env, &session);
    // T0 + 3 minutes is 12:03; the limit resets at 13:00.
    failure["last_assistant_message"] = "Claude AI usage limit reached|1772370000".into();
    hook(
        &env,
        "claude",
        "StopFailure",
        &serde_json::to_vec(&failure).unwrap(),
        &at(3),
    )
    .assert_code(0);
    let t1 = loop_state(&env, "T-1");
    assert_eq!(t1["interrupt_reason"], "rate_limit");
    assert_eq!(t1["resume_after"], "2026-03-01T13:00:00Z");

    let env = TestEnv::new();
    two_loops(&env, &session);
    let plain = fixture("claude-code-2.1.332/StopFailure.after-429.json");
    hook(&env, "claude", "StopFailure", &plain, &at(3)).assert_code(0);
    assert!(loop_state(&env, "T-1")["resume_after"].is_null());
}

// The rows of docs/hooks.md's table of limit signals, each fed to the hook as the real client
// sent it, at the moment it was captured (2026-12-02T05:06Z).

/// When the fixtures under `transcripts/` and the limit payloads were captured.
const CAPTURED: &str = "2026-12-02T05:06:00Z";

/// Runs `baton hook <client> <event>` at `now` with `payload` on stdin and `vars` set.
fn hook_env(
    env: &TestEnv,
    client: &str,
    event: &str,
    payload: &[u8],
    now: &str,
    vars: &[(&str, &std::ffi::OsStr)],
) -> Run {
    run_hook(env, &["hook", client, event], payload, now, vars)
}

/// A StopFailure fixture (its message replaced by `message` when given) sent at `now` in the
/// zone `tz`: the loop's interrupt reason and `resume_after`.
fn claude_failure(rel: &str, message: Option<(&str, &str)>, now: &str, tz: &str) -> (Value, Value) {
    let env = TestEnv::new();
    let mut failure: Value = serde_json::from_slice(&fixture(rel)).unwrap();
    if let Some((error, text)) = message {
        failure["error"] = error.into();
        failure["last_assistant_message"] = text.into();
    }
    let session = failure["session_id"].as_str().unwrap().to_string();
    two_loops(&env, &session);
    let out = hook_env(
        &env,
        "claude",
        "StopFailure",
        &serde_json::to_vec(&failure).unwrap(),
        now,
        &[("TZ", tz.as_ref())],
    );
    out.assert_code(0);
    assert_eq!(out.stderr, "");
    let t1 = loop_state(&env, "T-1");
    (t1["interrupt_reason"].clone(), t1["resume_after"].clone())
}

#[test]
fn signal_claude_subscription_limit_stop_failure_keeps_its_reset() {
    // `You've hit your 5-hour limit · resets 8:05am (Europe/Lisbon)`, whatever the machine's
    // zone.
    let (reason, after) = claude_failure(
        "claude-code-2.1.332/StopFailure.subscription-limit.json",
        None,
        CAPTURED,
        "Asia/Tokyo",
    );
    assert_eq!(reason, "rate_limit");
    assert_eq!(after, "2026-12-02T08:05:00Z");
}

#[test]
fn signal_claude_weekly_limit_stop_failure_keeps_a_reset_days_away() {
    let (reason, after) = claude_failure(
        "claude-code-2.1.332/StopFailure.weekly-limit.json",
        None,
        CAPTURED,
        "UTC",
    );
    assert_eq!(reason, "rate_limit");
    assert_eq!(after, "2026-12-05T08:06:00Z");
}

#[test]
fn signal_claude_limit_texts_users_report_keep_their_reset() {
    let rel = "claude-code-2.1.332/StopFailure.subscription-limit.json";
    // (error sent, text, now, machine zone, reset)
    let cases = [
        (
            "rate_limit",
            "You've hit your limit · resets 1pm (Europe/Lisbon)",
            "2026-07-10T12:30:00Z",
            "UTC",
            "2026-07-11T12:00:00Z",
        ),
        (
            "unknown",
            "You've hit your weekly limit · resets Sep 15 at 7pm",
            "2026-09-10T00:00:00Z",
            "America/New_York",
            "2026-09-15T23:00:00Z",
        ),
        (
            "rate_limit",
            "You've hit your weekly limit · resets Jul 27 at 4:30am (Asia/Calcutta)",
            "2026-07-22T00:00:00Z",
            "UTC",
            "2026-07-26T23:00:00Z",
        ),
        (
            "billing_error",
            "You're out of extra usage · resets 7pm (Asia/Seoul)",
            "2026-05-01T12:00:00Z",
            "UTC",
            "2026-05-02T10:00:00Z",
        ),
        (
            "rate_limit",
            "Claude usage limit reached. Your limit will reset at 9am (America/Chicago).",
            "2026-03-01T12:00:00Z",
            "UTC",
            "2026-03-01T15:00:00Z",
        ),
    ];
    for (error, text, now, tz, want) in cases {
        let (reason, after) = claude_failure(rel, Some((error, text)), now, tz);
        assert_eq!(reason, "rate_limit", "{text}");
        assert_eq!(after, want, "{text}");
    }
}

#[test]
fn signal_claude_overloaded_529_is_an_unknown_interrupt_with_no_reset() {
    let (reason, after) = claude_failure(
        "claude-code-2.1.332/StopFailure.overloaded-529.json",
        None,
        CAPTURED,
        "UTC",
    );
    assert_eq!(reason, "unknown");
    assert!(after.is_null());
    // A run lease's journal keeps the evidence: the API was overloaded.
    let env = TestEnv::new();
    env.write("plan.md", "# plan\n");
    env.git(&["add", "plan.md"]);
    env.git(&["commit", "--quiet", "-m", "plan"]);
    let failure = fixture("claude-code-2.1.332/StopFailure.overloaded-529.json");
    let session = session_of(&failure);
    let out = env.baton(&session, 0, &["--json", "run", "new", "--plan", "plan.md"]);
    out.assert_code(0);
    let id = out.json()["run_id"].as_str().unwrap().to_string();
    hook(&env, "claude", "StopFailure", &failure, &at(6)).assert_code(0);
    assert_eq!(env.read_run(&id)["interrupt_reason"], "unknown");
    let run_id = baton_core::run_id::RunId::parse(&id).unwrap();
    let events = env.journal(baton_store::JournalTarget::Run(&run_id));
    let evidence = events
        .iter()
        .find_map(|e| e["evidence"].as_str())
        .unwrap_or_default()
        .to_string();
    assert!(evidence.contains("overloaded (HTTP 529)"), "{events:?}");
}

/// A session end with a turn open, the transcript at `transcript`: the loop's interrupt reason
/// and `resume_after`.
fn dies_with(
    client: &str,
    open: &str,
    open_event: &str,
    end: &str,
    transcript: &str,
) -> (Value, Value) {
    let env = TestEnv::new();
    let open_payload = fixture(open);
    let session = session_of(&open_payload);
    two_loops(&env, &session);
    hook(&env, client, open_event, &open_payload, CAPTURED).assert_code(0);
    let mut v: Value = serde_json::from_slice(&fixture(end)).unwrap();
    v["session_id"] = session.into();
    let end_payload = with_transcript(
        &serde_json::to_vec(&v).unwrap(),
        &fixtures().join("transcripts").join(transcript),
    );
    let out = hook(&env, client, "SessionEnd", &end_payload, CAPTURED);
    out.assert_code(0);
    assert_eq!(out.stderr, "");
    let t1 = loop_state(&env, "T-1");
    (t1["interrupt_reason"].clone(), t1["resume_after"].clone())
}

#[test]
fn signal_claude_subscription_limit_in_the_transcript_keeps_its_reset_to_the_second() {
    let (reason, after) = dies_with(
        "claude",
        "claude-code-2.1.332/UserPromptSubmit.after-429.json",
        "UserPromptSubmit",
        "claude-code-2.1.332/SessionEnd.after-429.json",
        "claude-code-2.1.332.subscription-limit-line.json",
    );
    assert_eq!(reason, "rate_limit");
    assert_eq!(after, "2026-12-02T08:05:47Z");
}

#[test]
fn signal_codex_usage_limit_keeps_its_reset() {
    let (reason, after) = dies_with(
        "codex",
        "codex-0.171.0/UserPromptSubmit.after-429.json",
        "UserPromptSubmit",
        "codex-0.171.0/SessionEnd.after-429.json",
        "codex-0.171.0.usage-limit-tail.jsonl",
    );
    assert_eq!(reason, "rate_limit");
    assert_eq!(after, "2026-12-02T08:06:23Z");
}

#[test]
fn signal_gemini_quota_retry_delay_keeps_its_reset() {
    let env = TestEnv::new();
    let reports = tempfile::tempdir().unwrap();
    let open = fixture("gemini-0.61.0/BeforeAgent.after-429.json");
    let session = session_of(&open);
    let mut end: Value =
        serde_json::from_slice(&fixture("gemini-0.61.0/SessionEnd.after-429.json")).unwrap();
    end["session_id"] = session.clone().into();
    let end = serde_json::to_vec(&end).unwrap();
    two_loops(&env, &session);
    let tmp = [("TMPDIR", reports.path().as_os_str())];
    hook_env(&env, "gemini", "BeforeAgent", &open, CAPTURED, &tmp).assert_code(0);
    // The captured report, naming this project's root.
    let root = env.repo.canonicalize().unwrap();
    let report = String::from_utf8(fixture("transcripts/gemini-0.61.0.quota-retry-report.json"))
        .unwrap()
        .replace("/home/dev/project", root.to_str().unwrap());
    std::fs::write(
        reports
            .path()
            .join("gemini-client-error-Turn.run-sendMessageStream-1.json"),
        report,
    )
    .unwrap();
    let out = hook_env(&env, "gemini", "SessionEnd", &end, CAPTURED, &tmp);
    out.assert_code(0);
    assert_eq!(out.stderr, "");
    let t1 = loop_state(&env, "T-1");
    assert_eq!(t1["interrupt_reason"], "rate_limit");
    // `Suggested retry after 31s.`
    assert_eq!(t1["resume_after"], "2026-12-02T05:06:31Z");
}

/// Under `baton supervise`, a failure's line in the supervisor's log carries its class: an
/// overloaded API (`"error": "overloaded"`, a transient failure to retry) apart from a rate
/// limit with its reset.
#[test]
fn signal_the_supervisors_line_carries_the_failures_class() {
    let line_of = |rel: &str| -> Value {
        let env = TestEnv::new();
        let failure = fixture(rel);
        two_loops(&env, &session_of(&failure));
        // This test's process stands for the supervisor: the hook finds its log among its
        // ancestors.
        let me = std::process::id();
        let start = baton_store::process::start_time(me).unwrap();
        let dir = env.state_dir().join("supervise");
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join(format!("{me}-{start}.jsonl"));
        std::fs::write(&log, "").unwrap();
        hook(&env, "claude", "StopFailure", &failure, CAPTURED).assert_code(0);
        let text = std::fs::read_to_string(&log).unwrap();
        serde_json::from_str(text.lines().next().unwrap()).unwrap()
    };
    let overloaded = line_of("claude-code-2.1.332/StopFailure.overloaded-529.json");
    assert_eq!(overloaded["event"], "failure", "{overloaded}");
    assert_eq!(overloaded["error"], "overloaded", "{overloaded}");
    assert_eq!(overloaded["reason"], "unknown", "{overloaded}");
    assert!(overloaded["resume_after"].is_null(), "{overloaded}");
    let limit = line_of("claude-code-2.1.332/StopFailure.subscription-limit.json");
    assert_eq!(limit["error"], "rate_limit", "{limit}");
    assert_eq!(limit["reason"], "rate_limit", "{limit}");
    assert_eq!(limit["resume_after"], "2026-12-02T08:05:00Z", "{limit}");
}

/// A per-minute 429 whose response said when to retry (`retry-after: 120`, the
/// `anthropic-ratelimit-*-reset` headers): Claude Code 2.1.332 passes no time on to its
/// StopFailure hook (captured), so the interrupt is a rate limit with no reset of its own, and
/// the loop keeps the protocol's default wait.
#[test]
fn a_429s_retry_after_header_never_reaches_the_hook() {
    let env = TestEnv::new();
    let failure = fixture("claude-code-2.1.332/StopFailure.after-429-retry-after.json");
    let session = session_of(&failure);
    two_loops(&env, &session);
    hook(&env, "claude", "StopFailure", &failure, &at(3)).assert_code(0);
    let t1 = loop_state(&env, "T-1");
    assert_eq!(t1["interrupt_reason"], "rate_limit", "{t1}");
    assert!(t1["resume_after"].is_null(), "{t1}");
}
