//! Files planted where baton keeps its own or reads the project's: a link is never written
//! through, a FIFO or a device is never read (so nothing hangs), and what a killed writer left
//! half-written is cleared by the next command that may.

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::common::{Holder, Run, TestEnv, at};

const SESSION: &str = "5ba716a7-9ce8-4b0f-8d6e-35de294ea197";

fn fixture(event: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/clients/claude-code-2.1.332")
        .join(format!("{event}.json"));
    std::fs::read(path).unwrap()
}

fn sessions_dir(env: &TestEnv) -> PathBuf {
    env.state_dir().join("sessions")
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid C string; the call only makes a FIFO.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
}

/// Waits for `child` at most `secs` seconds; a child still running then is killed and the
/// test fails, naming what hung.
#[track_caller]
fn within(mut child: Child, secs: u64, what: &str) -> Run {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if child.try_wait().unwrap().is_some() {
            return crate::common::to_run(child.wait_with_output().unwrap());
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} still ran after {secs} s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A Claude Code hook, stdin from `payload`, with the client process `holder`, waited for at
/// most ten seconds.
fn hook(env: &TestEnv, event: &str, minute: i64, holder: &Holder) -> Run {
    use std::io::Write;
    let mut child = env
        .command(None, &at(minute))
        .args(["hook", "claude", event])
        .env("CLAUDE_PID", holder.pid())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let _ = child.stdin.take().unwrap().write_all(&fixture(event));
    within(child, 10, &format!("the {event} hook"))
}

/// The hooks' turn mark and process map are written by replacing the file, so a link planted
/// at either name is replaced, never written through to the file it points at.
#[test]
fn a_link_planted_at_the_turn_mark_or_the_process_map_is_not_written_through() {
    let env = TestEnv::new();
    let holder = Holder::start();
    hook(&env, "SessionStart", 0, &holder).assert_code(0);
    let pid: u32 = holder.pid().parse().unwrap();
    let start = baton_store::process::start_time(pid).unwrap();
    let outside = env.home().join("outside.txt");
    std::fs::write(&outside, "mine\n").unwrap();
    let turn = sessions_dir(&env).join(format!("claude-{SESSION}.turn"));
    let map = sessions_dir(&env).join(format!("pid-{pid}-{start}"));
    assert!(map.exists(), "the session start maps its client process");
    std::fs::remove_file(&map).unwrap();
    std::os::unix::fs::symlink(&outside, &map).unwrap();
    std::os::unix::fs::symlink(&outside, &turn).unwrap();

    hook(&env, "UserPromptSubmit", 1, &holder).assert_code(0);
    hook(&env, "SessionStart", 2, &holder).assert_code(0);
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "mine\n");
    for path in [&turn, &map] {
        let meta = std::fs::symlink_metadata(path).unwrap();
        assert!(
            meta.is_file(),
            "{} is baton's own file again",
            path.display()
        );
    }
}

/// A FIFO where the session record lives would block its read for ever, and the client with
/// the hook; it is no record at all, and the hook answers at once.
#[test]
fn a_fifo_at_the_session_record_does_not_hang_the_session_start() {
    let env = TestEnv::new();
    let holder = Holder::start();
    hook(&env, "SessionStart", 0, &holder).assert_code(0);
    let record = sessions_dir(&env).join(format!("claude-{SESSION}.json"));
    std::fs::remove_file(&record).unwrap();
    mkfifo(&record);
    let out = hook(&env, "SessionStart", 1, &holder);
    out.assert_code(0);
    // The next prompt and stop hooks do not hang on it either.
    hook(&env, "UserPromptSubmit", 2, &holder).assert_code(0);
    hook(&env, "Stop", 3, &holder).assert_code(0);
}

/// A committed `.baton.toml` that links to `/dev/zero`, or is a FIFO, is refused at once with
/// an error naming it and the fix, rather than read until memory runs out or for ever.
#[test]
fn a_project_settings_file_that_is_a_device_or_a_fifo_is_refused_at_once() {
    crate::files_only!("the project's settings are read only when no store is named");
    let env = TestEnv::new();
    let settings = env.repo.join(".baton.toml");
    std::os::unix::fs::symlink("/dev/zero", &settings).unwrap();
    let run = |what: &str| {
        let child = env
            .command(Some("A"), &at(0))
            .args(["loop", "init", "PROJ-1"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        within(child, 10, what)
    };
    for what in ["a link to /dev/zero", "a FIFO"] {
        if what == "a FIFO" {
            std::fs::remove_file(&settings).unwrap();
            mkfifo(&settings);
        }
        let out = run(what);
        out.assert_code(1);
        assert!(
            out.stderr.contains(".baton.toml") && out.stderr.contains("not a regular file"),
            "{what}: {}",
            out.stderr
        );
        assert!(
            out.stderr.contains("hint: ") && out.stderr.contains("out of the way"),
            "{what}: {}",
            out.stderr
        );
        assert!(!env.has_loop("PROJ-1"), "{what}: nothing was written");
        // What was being done, then what it met: the cause chain, before the fix.
        let lines: Vec<&str> = out.stderr.lines().collect();
        assert!(
            lines.len() >= 3
                && lines[0] == "error: cannot read the project's settings"
                && lines[1].starts_with("caused by: ")
                && lines[1].contains("not a regular file")
                && lines[2].starts_with("hint: "),
            "{what}: {}",
            out.stderr
        );
    }
    // Under `--json`, the chain is the error object's `causes`, nearest first.
    let out = env
        .command(Some("A"), &at(0))
        .args(["--json", "loop", "init", "PROJ-1"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = within(out, 10, "--json");
    out.assert_code(1);
    let error = &out.json()["error"];
    assert_eq!(
        error["message"], "cannot read the project's settings",
        "{error}"
    );
    assert!(
        error["causes"][0]
            .as_str()
            .is_some_and(|c| c.contains("not a regular file")),
        "{error}"
    );
}

/// A writer of a run killed between its temp file and the rename leaves
/// `.agentic/runs/.<id>.json.tmp-*`; the next command that takes the runs' lock removes it.
#[test]
fn a_killed_run_writer_s_temp_file_is_removed_by_the_next_command_taking_the_runs_lock() {
    crate::files_only!("a test of the file store itself");
    let env = TestEnv::new();
    let first = env.baton("A", 0, &["--json", "run", "new"]);
    first.assert_code(0);
    let id = first.json()["run_id"].as_str().unwrap().to_string();
    let runs = env.state_dir().join("runs");
    let left = runs.join(format!(".{id}.json.tmp-4194303-abcd1234"));
    std::fs::write(&left, "{\"half\":").unwrap();
    // Not a temp file of a run: left alone.
    let other = runs.join("notes.txt");
    std::fs::write(&other, "mine").unwrap();
    env.baton("B", 1, &["--json", "run", "new"]).assert_code(0);
    assert!(!left.exists(), "the orphan temp file is gone");
    assert!(other.exists());
}

/// Temp files of killed writers of session files (a record, a turn mark, a ledger's last
/// writer) are removed by the next session start, but only once their writer's pid runs no
/// process: a live writer's temp file stays.
#[test]
fn a_killed_session_writer_s_temp_files_are_removed_and_a_live_one_s_kept() {
    let env = TestEnv::new();
    let holder = Holder::start();
    hook(&env, "SessionStart", 0, &holder).assert_code(0);
    let dead = {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        pid
    };
    let dir = sessions_dir(&env);
    let old = std::time::SystemTime::now() - Duration::from_secs(3600);
    let plant = |name: String| {
        let path = dir.join(name);
        let file = std::fs::File::create(&path).unwrap();
        file.set_modified(old).unwrap();
        path
    };
    let record = plant(format!(".claude-{SESSION}.json.tmp-{dead}-ab12cd34"));
    let turn = plant(format!(".claude-x.turn.tmp-{dead}-ab12cd34"));
    let ledger = plant(format!(".ledger-{}.{dead}", "0".repeat(32)));
    let live = plant(format!(".claude-y.json.tmp-{}-ab12cd34", holder.pid()));
    hook(&env, "SessionStart", 1, &holder).assert_code(0);
    for path in [&record, &turn, &ledger] {
        assert!(!path.exists(), "{} is removed", path.display());
    }
    assert!(live.exists(), "a live writer's temp file stays");
}
