//! The real Claude Code with the state on a PostgreSQL server 20 ms away (each way, through a
//! delay proxy on loopback): a 429 ends the turn, the StopFailure hook records the interrupt
//! inside the 0.1 s Claude Code gives it, and the process it starts sends it to the server
//! after the client has exited, once.

use std::process::Command;
use std::time::{Duration, Instant};

use crate::clients::{Client, Harness};
use crate::fake_api::Reply;
use crate::flow::{baton, journal, loop_state};

#[path = "../support/delay_proxy.rs"]
#[allow(dead_code)]
mod delay_proxy;
#[path = "../../../baton-store/tests/support/pg_server.rs"]
#[allow(dead_code)]
mod pg_server;

#[test]
fn claude_rate_limit_reaches_a_distant_server_once() {
    let script = vec![Reply::Shell("baton loop init T-1".into()), Reply::RateLimit];
    let Some(h) = Harness::new(
        Client::Claude,
        "claude_rate_limit_reaches_a_distant_server_once",
        script,
    ) else {
        return;
    };
    let Some(server) =
        pg_server::PgServer::start("claude_rate_limit_reaches_a_distant_server_once")
    else {
        return;
    };
    let target = std::net::SocketAddr::from(([127, 0, 0, 1], server.port));
    let proxy = delay_proxy::DelayProxy::start(target, Duration::from_millis(20)).unwrap();
    // The project's name on the server is its first commit; the store, its committed setting.
    std::fs::write(
        h.project.join(".baton.toml"),
        format!("store = \"{}\"\n", proxy.url()),
    )
    .unwrap();
    let git = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
        .args(["commit", "-q", "--allow-empty", "-m", "initial"])
        .current_dir(&h.project)
        .output()
        .unwrap();
    assert!(git.status.success(), "{git:?}");
    let (code, out, err) = baton(&h, &["store", "migrate"]);
    assert_eq!(code, 0, "{out}\n{err}");
    let (code, out, err) = baton(&h, &["init", "claude"]);
    assert_eq!(code, 0, "baton init: {out}\n{err}");
    // Only StopFailure may record the interrupt: without the session-end hook, a StopFailure
    // hook killed by the client leaves the loop active.
    let settings = h.project.join(".claude/settings.json");
    let mut v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&settings).unwrap()).unwrap();
    v["hooks"].as_object_mut().unwrap().remove("SessionEnd");
    std::fs::write(&settings, serde_json::to_vec_pretty(&v).unwrap()).unwrap();

    let run = h.run("work on ticket T-1");
    assert_ne!(run.code, Some(0), "a 429 ends the run: {run}");
    // Nothing of baton runs after the client: the forwarder the hook started sends it.
    let outbox = h.project.join(".agentic/outbox");
    let entries = || {
        std::fs::read_dir(&outbox)
            .map(|d| {
                d.flatten()
                    .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
                    .count()
            })
            .unwrap_or(0)
    };
    // The forwarder usually delivers it within a second. On a busy machine the client may kill
    // the hook between its record and the forwarder's start; then the record waits for the
    // next reader, which is what the design promises: the command below reads it first.
    let start = Instant::now();
    while entries() > 0 && start.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
    }
    eprintln!(
        "claude_rate_limit_reaches_a_distant_server_once: {} entries left after {:.1?}",
        entries(),
        start.elapsed()
    );
    // A hook killed before it recorded anything: the transcript the client left says how the
    // turn died, and the same reader records it.
    let state = loop_state(&h);
    assert_eq!(entries(), 0, "the reader applied what was pending\n{run}");
    assert_eq!(state["status"], "interrupted", "{state}\n{run}");
    assert_eq!(state["interrupt_reason"], "rate_limit", "{state}\n{run}");
    let interrupts = journal(&h)
        .iter()
        .filter(|(event, _)| event == "interrupt")
        .count();
    assert_eq!(interrupts, 1, "{:?}", journal(&h));
}
