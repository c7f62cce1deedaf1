//! Hooks and a shared store across a network: a turn that changes nothing asks the server
//! nothing, and a failure hook records its interrupt on this machine (no round trip: Claude
//! Code kills a StopFailure hook after about 0.1 s), which reaches the server exactly once,
//! sent by the process the hook starts or by the next command that reads the state.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{TestEnv, at, to_run};
use crate::hooks::{fixture, run_hook};
use crate::store_network::migrated;

/// A URL no server answers at: a port just freed on loopback.
fn nobody_home() -> (u16, String) {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    (port, format!("postgres://baton@127.0.0.1:{port}/postgres"))
}

/// A client payload from the fixtures, for `session`.
fn payload(rel: &str, session: &str) -> Vec<u8> {
    let mut v: Value = serde_json::from_slice(&fixture(rel)).unwrap();
    v["session_id"] = session.into();
    if v.get("transcript_path").is_some() {
        v["transcript_path"] = "/nonexistent/transcript.jsonl".into();
    }
    serde_json::to_vec(&v).unwrap()
}

/// Runs the hook `client event` at `now` with `store` as BATON_STORE (the environment's own
/// when `None`).
fn hook(
    env: &TestEnv,
    (client, event): (&str, &str),
    body: &[u8],
    now: &str,
    store: Option<&str>,
) -> crate::common::Run {
    let vars: Vec<(&str, &std::ffi::OsStr)> = store
        .map(|s| ("BATON_STORE", std::ffi::OsStr::new(s)))
        .into_iter()
        .collect();
    run_hook(env, &["hook", client, event], body, now, &vars)
}

#[test]
fn a_turn_that_changes_nothing_asks_the_server_nothing() {
    let env = TestEnv::new();
    let (_, away) = nobody_home();
    let prompt = payload("claude-code-2.1.332/UserPromptSubmit.json", "s1");
    let stop = payload("claude-code-2.1.332/Stop.json", "s1");
    env.baton("s1", 0, &["loop", "init", "T-1"]).assert_code(0);
    // The first stop refreshes what the session owns, through the store.
    let first = hook(&env, ("claude", "Stop"), &stop, &at(1), None);
    first.assert_code(0);
    assert_eq!(first.stderr, "", "{first:?}");

    // With no server answering, a prompt and a stop inside the refresh window (a minute) are
    // silent: neither tried to reach it.
    for (event, body, now) in [
        ("UserPromptSubmit", &prompt, "2026-03-01T12:01:20Z"),
        ("Stop", &stop, "2026-03-01T12:01:50Z"),
    ] {
        let out = hook(&env, ("claude", event), body, now, Some(&away));
        out.assert_code(0);
        assert_eq!(out.stderr, "", "{event} asked the server: {out:?}");
    }
    // Past the window the stop must refresh, and says it could not reach the server.
    let late = hook(&env, ("claude", "Stop"), &stop, &at(3), Some(&away));
    late.assert_code(0);
    assert!(late.stderr.contains(&away), "{late:?}");
}

#[test]
fn a_repeated_pre_compress_asks_the_server_only_after_the_session_wrote() {
    let env = TestEnv::new();
    let (_, away) = nobody_home();
    let compress = payload("gemini-0.61.0/PreCompress.1.json", "g1");
    env.baton("g1", 0, &["loop", "init", "T-1"]).assert_code(0);
    let first = hook(&env, ("gemini", "PreCompress"), &compress, &at(1), None);
    first.assert_code(0);
    assert_eq!(first.stderr, "", "{first:?}");
    // Gemini CLI asks before every model call: nothing of the session was written since.
    let again = hook(
        &env,
        ("gemini", "PreCompress"),
        &compress,
        "2026-03-01T12:01:20Z",
        Some(&away),
    );
    again.assert_code(0);
    assert_eq!(again.stderr, "", "asked the server: {again:?}");
    // The session moved its loop: the next one must look.
    env.run(
        Some("g1"),
        "2026-03-01T12:01:30Z",
        &["loop", "set", "T-1", "--phase", "qa", "--action", "spawned"],
    )
    .assert_code(0);
    let moved = hook(
        &env,
        ("gemini", "PreCompress"),
        &compress,
        "2026-03-01T12:01:40Z",
        Some(&away),
    );
    moved.assert_code(0);
    assert!(moved.stderr.contains(&away), "{moved:?}");
    // And with the server there it records a checkpoint of the new position.
    hook(&env, ("gemini", "PreCompress"), &compress, &at(4), None).assert_code(0);
    let events: Vec<Value> = env.journal(baton_store::JournalTarget::Loop("T-1"));
    let checkpoints = events.iter().filter(|e| e["event"] == "checkpoint").count();
    assert_eq!(checkpoints, 2, "{events:?}");
}

/// `baton ARGS` as `session` at minute `m` through `url`.
fn through(env: &TestEnv, url: &str, session: &str, m: i64, args: &[&str]) -> crate::common::Run {
    let mut cmd = env.command(Some(session), &at(m));
    cmd.env("BATON_STORE", url).args(args);
    to_run(cmd.output().unwrap())
}

fn outbox(env: &TestEnv) -> Vec<PathBuf> {
    env.outbox()
}

/// Claude Code's StopFailure after a 429, of session `s1`, at minute 1, with `store`.
fn stop_failure(env: &TestEnv, store: &str) -> crate::common::Run {
    let failure = payload("claude-code-2.1.332/StopFailure.after-429.json", "s1");
    hook(
        env,
        ("claude", "StopFailure"),
        &failure,
        &at(1),
        Some(store),
    )
}

/// Waits up to 20 s for the outbox to empty itself.
fn drained(env: &TestEnv) -> bool {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(20) {
        if outbox(env).is_empty() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    false
}

fn interrupts(env: &TestEnv, url: &str, ticket: &str) -> usize {
    let log = through(env, url, "reader", 9, &["--json", "log", ticket]);
    log.assert_code(0);
    log.json()["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["event"] == "interrupt")
        .count()
}

fn loop_state(env: &TestEnv, url: &str, ticket: &str) -> Value {
    let show = through(env, url, "reader", 9, &["--json", "loop", "show", ticket]);
    show.assert_code(0);
    show.json()["state"].clone()
}

#[test]
fn a_failure_is_recorded_here_and_reaches_the_server_once_by_itself() {
    let Some((_server, env, url)) =
        migrated("a_failure_is_recorded_here_and_reaches_the_server_once_by_itself")
    else {
        return;
    };
    // A session as the client starts it.
    let start = payload("claude-code-2.1.332/SessionStart.json", "s1");
    hook(&env, ("claude", "SessionStart"), &start, &at(0), Some(&url)).assert_code(0);
    through(&env, &url, "s1", 0, &["loop", "init", "T-1"]).assert_code(0);
    let out = stop_failure(&env, &url);
    out.assert_code(0);
    assert_eq!(out.stderr, "", "{out:?}");
    // Nothing else runs: the process the hook started sends it.
    assert!(drained(&env), "still in the outbox: {:?}", outbox(&env));
    let state = loop_state(&env, &url, "T-1");
    assert_eq!(state["status"], "interrupted", "{state}");
    assert_eq!(state["interrupt_reason"], "rate_limit", "{state}");
    assert_eq!(interrupts(&env, &url, "T-1"), 1);
    // The session goes on: its next prompt is told what its failure interrupted, as with the
    // files.
    let note = env.state_dir().join("sessions/claude-s1.interrupted");
    assert_eq!(std::fs::read_to_string(note).unwrap(), "T-1\n");
    let again = through(&env, &url, "s1", 2, &["store", "forward"]);
    again.assert_code(0);
    assert_eq!(again.stdout.trim(), "nothing to forward");
    assert_eq!(interrupts(&env, &url, "T-1"), 1);
}

#[test]
fn a_forwarder_killed_after_the_commit_leaves_an_entry_applied_again_with_no_second_event() {
    let Some((_server, env, url)) = migrated(
        "a_forwarder_killed_after_the_commit_leaves_an_entry_applied_again_with_no_second_event",
    ) else {
        return;
    };
    through(&env, &url, "s1", 0, &["loop", "init", "T-1"]).assert_code(0);
    let failure = payload("claude-code-2.1.332/StopFailure.after-429.json", "s1");
    // The process the hook starts inherits the fault: it dies right after the server's
    // commit, before it removes the entry.
    let vars = [
        ("BATON_STORE", std::ffi::OsStr::new(&url)),
        (
            "BATON_FAULTS",
            std::ffi::OsStr::new("outbox.before-remove=crash"),
        ),
    ];
    run_hook(
        &env,
        &["hook", "claude", "StopFailure"],
        &failure,
        &at(1),
        &vars,
    )
    .assert_code(0);
    let start = Instant::now();
    while interrupts(&env, &url, "T-1") == 0 && start.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
    }
    // `log` forwarded nothing: the killed forwarder's entry is still there while it is
    // applied.
    assert_eq!(interrupts(&env, &url, "T-1"), 1);
    // The next command that reads applies it again (nothing left to change) and removes it.
    let resume = through(&env, &url, "s2", 2, &["--json", "resume", "T-1"]);
    resume.assert_code(0);
    assert!(outbox(&env).is_empty(), "{:?}", outbox(&env));
    assert_eq!(interrupts(&env, &url, "T-1"), 1);
}

/// Forwards every connection to `127.0.0.1:port` to `target`.
fn open_path(port: u16, target: u16) {
    let listener = TcpListener::bind(("127.0.0.1", port)).unwrap();
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(client) = client else { return };
            let server = TcpStream::connect(("127.0.0.1", target)).unwrap();
            for (mut from, mut to) in [
                (client.try_clone().unwrap(), server.try_clone().unwrap()),
                (server, client),
            ] {
                std::thread::spawn(move || {
                    let mut buf = vec![0; 64 * 1024];
                    while let Ok(n) = from.read(&mut buf) {
                        if n == 0 || to.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                    let _ = to.shutdown(std::net::Shutdown::Write);
                });
            }
        }
    });
}

#[test]
fn a_failure_while_the_server_is_out_of_reach_is_kept_and_sent_once_it_answers() {
    let Some((server, env, direct)) =
        migrated("a_failure_while_the_server_is_out_of_reach_is_kept_and_sent_once_it_answers")
    else {
        return;
    };
    let (port, url) = nobody_home();
    through(&env, &direct, "s1", 0, &["loop", "init", "T-1"]).assert_code(0);
    let out = stop_failure(&env, &url);
    out.assert_code(0);
    assert_eq!(
        out.stderr, "",
        "the hook itself never waits on the server: {out:?}"
    );
    // Its forwarder could not connect: the entry stays.
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(outbox(&env).len(), 1);
    let pending: Value = serde_json::from_slice(&std::fs::read(&outbox(&env)[0]).unwrap()).unwrap();
    assert_eq!(pending["session"], "s1");
    assert_eq!(pending["reason"], "rate_limit");
    assert_eq!(loop_state(&env, &direct, "T-1")["status"], "active");

    // A command meanwhile says so, and still works.
    let status = through(&env, &url, "s2", 2, &["store", "forward"]);
    assert_eq!(status.code, 1, "{status:?}");
    assert!(status.stderr.contains(&url), "{status:?}");
    assert_eq!(outbox(&env).len(), 1);
    // The session's next prompt cannot send it either: it keeps the note for a later prompt.
    let prompt = payload("claude-code-2.1.332/UserPromptSubmit.json", "s1");
    let early = hook(
        &env,
        ("claude", "UserPromptSubmit"),
        &prompt,
        &at(2),
        Some(&url),
    );
    early.assert_code(0);
    assert!(early.stderr.contains(&url), "{early:?}");
    let note = env.state_dir().join("sessions/claude-s1.interrupted");
    assert!(note.exists(), "the note waits");

    // The path is back: the process the hook started, still trying, sends it.
    open_path(port, server.port);
    assert!(drained(&env), "still in the outbox: {:?}", outbox(&env));
    let resume = through(&env, &url, "s2", 3, &["--json", "resume", "T-1"]);
    resume.assert_code(0);
    assert_eq!(resume.stderr, "", "{resume:?}");
    assert!(outbox(&env).is_empty());
    let state = loop_state(&env, &direct, "T-1");
    assert_eq!(state["status"], "interrupted", "{state}");
    assert_eq!(interrupts(&env, &direct, "T-1"), 1);
    // A prompt once the limit's wait is over takes the work back, as with the files.
    hook(
        &env,
        ("claude", "UserPromptSubmit"),
        &prompt,
        &at(9),
        Some(&url),
    )
    .assert_code(0);
    let state = loop_state(&env, &direct, "T-1");
    assert_eq!(state["status"], "active", "{state}");
    assert_eq!(state["session_id"], "s1", "{state}");
}

/// A hook killed while it recorded an interrupt leaves its temp file: the next command removes
/// it, and leaves alone the one a live writer may still be writing.
#[test]
fn a_killed_hooks_temp_file_in_the_outbox_is_cleaned() {
    let env = TestEnv::new();
    let outbox = env.state_dir().join("outbox");
    std::fs::create_dir_all(&outbox).unwrap();
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    let dead = gone.id();
    gone.wait().unwrap();
    let killed = format!(".20260301T120000Z-{dead}-00000000.json.tmp-{dead}-0a1b2c3d");
    let live = format!(
        ".20260301T120000Z-{0}-00000001.json.tmp-{0}-0a1b2c3d",
        std::process::id()
    );
    for name in [&killed, &live] {
        env.write(&format!(".agentic/outbox/{name}"), "{\"server\":");
        env.set_age(&format!(".agentic/outbox/{name}"), 5);
    }
    env.baton("s1", 0, &["status"]).assert_code(0);
    assert!(
        !outbox.join(&killed).exists(),
        "the killed writer's is removed"
    );
    assert!(outbox.join(&live).exists(), "a live writer's stays");
}
