//! baton with the real OpenCode 2 (2.0.15, `clients::OPENCODE_V2`), offline against the fake
//! API, as `opencode` proves it with 1.18.33: `baton init opencode` writes the one plugin
//! module both lines load (`.opencode/plugins/baton.js`, whose default export's `setup` is what
//! 2.x runs); a run's tool calls (2.x names its shell tool `shell`) drive a ticket loop through
//! two phases, the loop owned by OpenCode's own session id, which the plugin gives the tool
//! calls; then the API answers the next model call with a spent quota (a 429 with
//! `insufficient_quota`, which 2.x does not retry: `session.execution.failed`, `provider.quota`,
//! exit 1; a plain 429 it retries ten times, over a minute or more): the loop is interrupted as
//! a rate limit, and a second run's request carries the packet as system text, once.
//!
//! Every run is `opencode run --standalone`: a server of the run's own, which ends with it.
//! Without it 2.x starts (once per user) a background service that outlives the run; no test
//! may leave one, which each run checks.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::clients::{Harness, Outcome};
use crate::fake_api::Reply;
use crate::flow::{baton, journal, loop_state};

/// How long the processes of a run may outlive it: its server (`serve --stdio`, a session of
/// its own) shuts down after the run has printed its last part, and so do the hooks it runs.
const SETTLE: Duration = Duration::from_secs(15);

/// The state of loop T-1 once it is interrupted, or (after `within`) as it is then.
fn interrupted_within(h: &Harness, within: Duration) -> Value {
    let start = Instant::now();
    let deadline = start + within;
    loop {
        let (code, out, err) = baton(h, &["--json", "loop", "show", "T-1"]);
        assert_eq!(
            code, 0,
            "no loop T-1 (did the tool calls run with a session?): {out}\n{err}"
        );
        let state = loop_state(h);
        if state["status"] == "interrupted" || Instant::now() >= deadline {
            eprintln!(
                "loop T-1 {} {:.1?} after the run's exit",
                state["status"],
                start.elapsed()
            );
            return state;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// What a failure shows of OpenCode's own log (`$XDG_DATA_HOME/opencode/log/`): its warnings
/// and errors, and every line about plugins, the last 60.
fn opencode_log(h: &Harness) -> String {
    let dir = h.home.join(".local/share/opencode/log");
    let mut lines: Vec<String> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .flat_map(|e| {
            std::fs::read_to_string(e.path())
                .unwrap_or_default()
                .lines()
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .filter(|l| {
            l.contains("level=WARN")
                || l.contains("level=ERROR")
                || l.to_ascii_lowercase().contains("plugin")
        })
        .collect();
    let skip = lines.len().saturating_sub(60);
    lines.drain(..skip);
    format!(
        "--- OpenCode's log ({})\n{}",
        dir.display(),
        lines.join("\n")
    )
}

/// The session every part of a `--format json` run names.
fn session_of(run: &Outcome) -> Option<String> {
    run.stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find_map(|v| v["sessionID"].as_str().map(str::to_string))
}

/// The `shell` tool calls of a `--format json` run that completed, by command.
fn shell_calls(run: &Outcome) -> Vec<String> {
    run.stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["type"] == "tool_use" && v["part"]["tool"] == "shell")
        .filter(|v| v["part"]["state"]["status"] == "completed")
        .filter_map(|v| {
            v["part"]["state"]["input"]["command"]
                .as_str()
                .map(str::to_string)
        })
        .collect()
}

/// The harness itself with 2.x, no baton: the fake API's tool call runs in OpenCode's `shell`
/// tool, the text reply ends the run with 0, and the run leaves no server behind.
#[test]
fn opencode_v2_runs_a_shell_call_offline_and_leaves_no_server() {
    let test = "opencode_v2_runs_a_shell_call_offline_and_leaves_no_server";
    let script = vec![
        Reply::Shell("echo from-the-tool > tool.txt".into()),
        Reply::Text("all done".into()),
    ];
    let Some(h) = Harness::opencode_v2(test, script) else {
        return;
    };
    let run = h.run_args(&[
        "run".into(),
        "--standalone".into(),
        "--format".into(),
        "json".into(),
        "write the file".into(),
    ]);
    eprintln!("{test}: {:?} after {:.1?}", run.code, run.elapsed);
    assert_eq!(
        run.code,
        Some(0),
        "{run}\n{}\n{}",
        h.api.summary(),
        opencode_log(&h)
    );
    assert_eq!(
        shell_calls(&run),
        ["echo from-the-tool > tool.txt"],
        "{run}\n{}",
        h.api.summary()
    );
    assert_eq!(h.read("tool.txt"), "from-the-tool\n", "{run}");
    assert!(run.stdout.contains("all done"), "{run}");
    assert_eq!(h.api.remaining(), 0, "{}", h.api.summary());
    let main = h.api.main_requests();
    let offered: Value = serde_json::from_str(&main[0].body).unwrap();
    let tools: Vec<&str> = offered["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(
        tools.contains(&"shell") && !tools.contains(&"bash"),
        "{tools:?}"
    );
    let left = h.settle(SETTLE);
    assert!(left.is_empty(), "the run left processes: {left:?}");
}

#[test]
fn opencode_v2_loop_is_interrupted_by_a_spent_quota_and_resumed() {
    let test = "opencode_v2_loop_is_interrupted_by_a_spent_quota_and_resumed";
    let script = vec![
        Reply::Shell("baton loop init T-1".into()),
        Reply::Shell("baton loop set T-1 --phase skeptic --action spawned".into()),
        Reply::Shell("baton loop set T-1 --phase qa --action spawned".into()),
        Reply::Quota,
        Reply::Text("resumed".into()),
    ];
    let Some(h) = Harness::opencode_v2(test, script) else {
        return;
    };
    let (code, out, err) = baton(&h, &["init", "opencode"]);
    assert_eq!(code, 0, "baton init: {out}\n{err}");
    let plugin = h.read(".opencode/plugins/baton.js");
    assert!(plugin.contains("\"hook\", \"opencode\""), "{out}\n{err}");

    let first = h.run_args(&[
        "run".into(),
        "--standalone".into(),
        "--format".into(),
        "json".into(),
        "work on ticket T-1".into(),
    ]);
    eprintln!(
        "{test}: session 1 {:?} after {:.1?}",
        first.code, first.elapsed
    );
    let context = || format!("{first}\n{}\n{}", h.api.summary(), opencode_log(&h));
    assert_eq!(
        first.code,
        Some(1),
        "a spent quota ends the run: {}",
        context()
    );
    // 2.x reports the failure as it classed it: a quota, not a rate limit it would retry.
    assert!(
        first.stdout.lines().any(|l| {
            serde_json::from_str::<Value>(l)
                .is_ok_and(|v| v["type"] == "error" && v["error"]["type"] == "provider.quota")
        }),
        "{}",
        context()
    );
    assert_eq!(shell_calls(&first).len(), 3, "{}", context());
    let session = session_of(&first).unwrap_or_else(|| panic!("no session named: {}", context()));
    // The plugin hears of the failure from its event stream, as the run does, which then
    // exits: its record may land just after (the hook it runs as the server shuts down),
    // waited for within bounds, as the servers' end is.
    let state = interrupted_within(&h, SETTLE);
    let left = h.settle(SETTLE);
    assert!(left.is_empty(), "the run left processes: {left:?}");
    assert_eq!(state["last_phase"], "qa", "{state}\n{}", context());
    // Owned by OpenCode's own session: the plugin gave the tool calls its id.
    assert_eq!(
        state["session_id"],
        session.as_str(),
        "{state}\n{}",
        context()
    );
    assert_eq!(state["status"], "interrupted", "{state}\n{}", context());
    assert_eq!(
        state["interrupt_reason"],
        "rate_limit",
        "{state}\n{}",
        context()
    );
    // One of each: a plugin loaded twice would record the failure twice.
    let events: Vec<String> = journal(&h).into_iter().map(|(e, _)| e).collect();
    assert_eq!(events, ["init", "set", "set", "interrupt"], "{}", context());

    let seen_before = h.api.requests().len();
    let second = h.run("carry on");
    eprintln!(
        "{test}: session 2 {:?} after {:.1?}",
        second.code, second.elapsed
    );
    assert_eq!(
        second.code,
        Some(0),
        "{second}\n{}\n{}",
        h.api.summary(),
        opencode_log(&h)
    );
    let left = h.settle(SETTLE);
    assert!(left.is_empty(), "the run left processes: {left:?}");
    let packet = crate::opencode::packet_request(&h, seen_before).unwrap_or_else(|| {
        panic!(
            "no request of session 2 carries the packet:\n{second}\n{}\n{}",
            h.api.summary(),
            opencode_log(&h)
        )
    });
    // In the system text, not the user's, and once: the plugin's context hook ran once.
    let system = crate::opencode::system_text(&packet);
    assert!(system.contains("EXPECTED OUTCOME"), "{packet}");
    assert!(system.contains("baton resume accept"), "{packet}");
    assert_eq!(
        system.matches("EXPECTED OUTCOME").count(),
        1,
        "the packet more than once: {packet}"
    );
    assert_eq!(
        packet.matches("EXPECTED OUTCOME").count(),
        1,
        "the packet outside the system text too: {packet}"
    );
}
