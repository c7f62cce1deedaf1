//! Claude Code started in a package of a monorepo, whose agent then moves into a nested
//! repository: `baton init claude` run in the package installs where the client reads, and the
//! 429 that ends the turn, whose hook runs in the nested repository, interrupts the loop of the
//! project the client started in.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::clients::{Client, Harness, baton_bin};
use crate::fake_api::Reply;

fn baton_in(h: &Harness, dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(baton_bin())
        .args(args)
        .current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &h.home)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn claude_in_a_package_moved_into_a_nested_repository_still_interrupts_its_loop() {
    let script = vec![
        Reply::Shell("baton loop init T-1".into()),
        Reply::Shell("cd vendor/lib".into()),
        Reply::Shell("pwd > ../../where.txt".into()),
        Reply::RateLimit,
    ];
    let Some(mut h) = Harness::new(Client::Claude, "monorepo", script) else {
        return;
    };
    h.start_in("packages/app");
    let nested = h.start.join("vendor/lib");
    std::fs::create_dir_all(&nested).unwrap();
    let git = Command::new("git")
        .args(["init", "-q"])
        .current_dir(&nested)
        .output()
        .unwrap();
    assert!(git.status.success(), "{git:?}");
    let (code, out, err) = baton_in(&h, &h.start, &["init", "claude"]);
    assert_eq!(code, 0, "baton init: {out}\n{err}");
    assert!(h.start.join(".claude/settings.json").is_file(), "{err}");

    let run = h.run("work on ticket T-1");
    assert_ne!(run.code, Some(0), "a 429 ends the run: {run}");
    // The tool call after the `cd` ran in the nested repository: the session's directory
    // followed the agent there.
    let pwd = std::fs::read_to_string(h.start.join("where.txt")).unwrap_or_default();
    assert_eq!(
        pwd.trim(),
        nested.to_str().unwrap(),
        "{run}\n{}",
        h.api.summary()
    );
    let (code, out, err) = baton_in(&h, &h.project, &["--json", "loop", "show", "T-1"]);
    assert_eq!(code, 0, "{out}\n{err}");
    let state = serde_json::from_str::<Value>(&out).unwrap()["state"].clone();
    assert_eq!(state["status"], "interrupted", "{state}\n{run}");
    assert_eq!(state["interrupt_reason"], "rate_limit", "{state}\n{run}");
    assert!(
        !nested.join(".agentic").exists(),
        "baton wrote into the nested repository"
    );
}
