//! The exit code tells the truth when the result cannot be printed.

use std::fs::File;
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
