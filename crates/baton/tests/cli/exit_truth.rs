//! The exit code tells the truth when the result cannot be printed, and a liveness stamp is the
//! time it is written.

use std::fs::File;
use std::os::unix::fs::PermissionsExt;
use std::process::Stdio;

use crate::common::{TestEnv, at, to_run};

fn dev_full() -> Stdio {
    Stdio::from(File::options().write(true).open("/dev/full").unwrap())
}

/// `loop init` whose stdout is a full disk: the loop is made, and exit 5 says so (exit 1 would
/// say nothing changed), with stderr naming what could not be printed.
#[test]
fn a_change_whose_result_cannot_be_printed_exits_5_and_says_so() {
    let env = TestEnv::new();
    let out = env
        .command(Some("A"), &at(0))
        .args(["loop", "init", "PROJ-1"])
        .stdout(dev_full())
        .output()
        .unwrap();
    let out = to_run(out);
    out.assert_code(5);
    assert!(
        out.stderr.contains("could not be printed") && out.stderr.contains("stdout"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    assert_eq!(env.read_loop("PROJ-1")["session_id"], "A");

    // Under --json too; and a refusal whose text is lost keeps its own code: nothing changed.
    let out = env
        .command(Some("B"), &at(1))
        .args(["--json", "loop", "init", "PROJ-2"])
        .stdout(dev_full())
        .output()
        .unwrap();
    to_run(out).assert_code(5);
    assert!(env.has_loop("PROJ-2"));
    let before = env.snapshot();
    let out = env
        .command(Some("B"), &at(2))
        .args([
            "--json", "loop", "set", "PROJ-1", "--phase", "qa", "--action", "returned",
        ])
        .stdout(dev_full())
        .output()
        .unwrap();
    let out = to_run(out);
    assert_eq!(env.snapshot(), before, "a foreign live loop is not written");
    out.assert_code(3);
}

/// With stdout and stderr both on a full disk, nothing can be said, and baton does not panic.
#[test]
fn with_stdout_and_stderr_full_there_is_no_panic() {
    let env = TestEnv::new();
    // No session: `loop init` warns on stderr as well.
    let out = env
        .command(None, &at(0))
        .args(["loop", "init", "PROJ-1"])
        .stdout(dev_full())
        .stderr(dev_full())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(5), "{out:?}");
    assert!(env.has_loop("PROJ-1"));
    // An error with nowhere to go keeps its code.
    let out = env
        .command(None, &at(0))
        .args(["loop", "show", "NOPE-1"])
        .stdout(dev_full())
        .stderr(dev_full())
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(101), "{out:?}");
    assert_ne!(out.status.code(), Some(0), "{out:?}");
}

/// Both streams closed by their reader (`baton … 2>&1 | head -0`): the command's own code, no
/// panic, for a change and for a read alike.
#[test]
fn closed_pipes_keep_the_commands_code_without_a_panic() {
    let env = TestEnv::new();
    for (args, code) in [
        (&["loop", "init", "PROJ-1"][..], 0),
        (&["status"][..], 0),
        (&["loop", "show", "NOPE-1"][..], 2),
    ] {
        let mut child = env
            .command(None, &at(0))
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        drop(child.stderr.take());
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(code), "{args:?}");
    }
    assert!(env.has_loop("PROJ-1"));
}

/// `resume accept --commit` runs the project's commit hook, here a slow one: the loop it hands
/// back is stamped live when it is written, after the hook, not when the command started. The
/// real clock (no `BATON_NOW`): the hook writes the time it ended.
#[test]
fn a_slow_commit_hook_does_not_hand_back_a_loop_that_looks_old() {
    let env = TestEnv::new();
    env.baton("A", 0, &["loop", "init", "PROJ-1"])
        .assert_code(0);
    env.set_phase("A", 0, "PROJ-1", "qa", "engineer_spawned")
        .assert_code(0);
    env.baton("A", 0, &["loop", "interrupt", "PROJ-1"])
        .assert_code(0);
    env.write("partial.rs", "// half done\n");
    let hook = env.repo.join(".git/hooks/pre-commit");
    let ended = env.repo.parent().unwrap().join("hook-ended");
    std::fs::write(
        &hook,
        format!("#!/bin/sh\nsleep 2\ndate -u +%s > {}\n", ended.display()),
    )
    .unwrap();
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = env
        .command(Some("B"), &at(0))
        .env_remove("BATON_NOW")
        .args(["resume", "accept", "PROJ-1", "--commit"])
        .output()
        .unwrap();
    to_run(out).assert_code(0);
    let ended: i64 = std::fs::read_to_string(&ended)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let state = env.read_loop("PROJ-1");
    let stamp: jiff::Timestamp = state["last_updated"]
        .as_str()
        .unwrap_or_else(|| panic!("{state}"))
        .parse()
        .unwrap();
    assert!(
        stamp.as_second() >= ended,
        "last_updated {stamp} is before the commit hook ended ({ended})"
    );
    assert_eq!(state["session_id"], "B");
}

/// `gate run` appends each gate's line when the gate is done: a slow gate's line carries the
/// time it ended, not the time the command started. The real clock; the gate writes its end.
#[test]
fn a_slow_gates_ledger_line_is_stamped_when_it_is_written() {
    let env = TestEnv::new();
    env.write("plans/p/plan.md", "# Plan p\n\nOne phase.\n");
    env.write(
        "plans/p/phase-1.md",
        "# Phase 1\n\n```gates\nslow: sleep 2 && date -u +%s > gate-ended → exit 0\n```\n",
    );
    env.git(&["add", "plans"]);
    env.git(&["commit", "--quiet", "-m", "plan p"]);
    env.baton("s", 0, &["ledger", "init", "plans/p"])
        .assert_code(0);
    let out = env
        .command(Some("s"), &at(0))
        .env_remove("BATON_NOW")
        .args(["gate", "run", "plans/p", "--phase", "1"])
        .output()
        .unwrap();
    to_run(out).assert_code(0);
    let ended = ["gate-ended", "plans/p/gate-ended"]
        .iter()
        .find_map(|f| std::fs::read_to_string(env.repo.join(f)).ok())
        .expect("the gate ran");
    let ended: i64 = ended.trim().parse().unwrap();
    let ledger = std::fs::read_to_string(env.repo.join("plans/p/STATE.md")).unwrap();
    let line = ledger
        .lines()
        .rfind(|l| l.contains("gate slow"))
        .unwrap_or_else(|| panic!("{ledger}"));
    let stamp: jiff::Timestamp = line
        .split(|c: char| c.is_whitespace() || c == '[' || c == ']' || c == '@')
        .find_map(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("no time in {line}"));
    assert!(
        stamp.as_second() >= ended,
        "the gate's line {line:?} is stamped before the gate ended ({ended})"
    );
}
