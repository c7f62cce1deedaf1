//! `baton supervise` with a stand-in for Claude Code: a script named `claude` that fires the
//! client's hooks (`baton hook claude …` with the payload shapes Claude Code sends) and runs
//! one scripted attempt per launch. Every stop condition, and the relaunch in the resume form
//! after a rate limit, on the fake clock.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::Value;

use crate::common::{Run, TestEnv, at, to_run};
use baton_core::client::Client;

/// The stand-in client: counts its launches, saves its argv and the packet its session start
/// printed, then sources `attempt-<n>.sh` with helpers for each way a run ends.
const FAKE_CLAUDE: &str = r#"#!/bin/bash
set -u
d="$FAKE_DIR"
n=$(( $(cat "$d/count" 2>/dev/null || echo 0) + 1 ))
echo "$n" > "$d/count"
# When it was launched: the fake clock supervise hands it, and the machine's.
printf '%s %s\n' "${BATON_NOW:-}" "$(date +%s.%N)" > "$d/launched-$n"
printf '%s\0' "$@" > "$d/argv-$n"
session="S$n"
prev=""
for a in "$@"; do
  if [ "$prev" = "--resume" ]; then session="$a"; fi
  prev="$a"
done
hook() { printf '%s' "$2" | baton hook claude "$1" >> "$d/hook-out-$n" 2>> "$d/hook-err-$n"; }
p() { printf '{"session_id":"%s","hook_event_name":"%s","cwd":"%s"%s}' "$session" "$1" "$PWD" "${2:-}"; }
rate_limit() {
  hook StopFailure "$(p StopFailure ',"error":"rate_limit","last_assistant_message":"API Error: Request rejected (429) · '"$1"'"')"
  hook SessionEnd "$(p SessionEnd ',"reason":"other"')"
  exit 1
}
finish() {
  hook Stop "$(p Stop ',"stop_hook_active":false')"
  hook SessionEnd "$(p SessionEnd ',"reason":"other"')"
  exit 0
}
hook SessionStart "$(p SessionStart ',"source":"startup"')"
hook UserPromptSubmit "$(p UserPromptSubmit ',"prompt":"task"')"
export BATON_SESSION="$session"
. "$d/attempt-$n.sh"
"#;

pub(crate) struct Fake {
    pub(crate) env: TestEnv,
    pub(crate) dir: PathBuf,
    bin: PathBuf,
    /// Variables every run gets on top of the environment's (`None`: unset).
    pub(crate) vars: Vec<(String, Option<String>)>,
}

impl Fake {
    /// A project with baton's Claude Code hooks installed and committed, and the stand-in.
    pub(crate) fn new() -> Fake {
        let env = TestEnv::new();
        let dir = env.home().join("fake");
        let bin = dir.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let claude = bin.join("claude");
        std::fs::write(&claude, FAKE_CLAUDE).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&claude, std::fs::Permissions::from_mode(0o755)).unwrap();
        let fake = Fake {
            env,
            dir,
            bin,
            vars: Vec::new(),
        };
        fake.run(&["init", "claude"]).assert_code(0);
        fake.env.git(&["add", "."]);
        fake.env.git(&["commit", "--quiet", "-m", "baton hooks"]);
        fake
    }

    pub(crate) fn attempt(&self, n: u32, script: &str) {
        std::fs::write(self.dir.join(format!("attempt-{n}.sh")), script).unwrap();
    }

    /// `baton` at minute 0 with the stand-in and baton on PATH, and no session.
    pub(crate) fn command(&self, args: &[&str]) -> Command {
        let mut cmd = self.env.command(None, &at(0));
        let baton_dir = Path::new(env!("CARGO_BIN_EXE_baton")).parent().unwrap();
        let path = format!(
            "{}:{}:{}",
            self.bin.display(),
            baton_dir.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        cmd.env("PATH", path).env("FAKE_DIR", &self.dir);
        for (name, value) in &self.vars {
            match value {
                Some(v) => cmd.env(name, v),
                None => cmd.env_remove(name),
            };
        }
        cmd.args(args);
        cmd
    }

    pub(crate) fn run(&self, args: &[&str]) -> Run {
        to_run(self.command(args).output().unwrap())
    }

    pub(crate) fn supervise(&self, extra: &[&str]) -> Run {
        self.supervise_command(extra, &["claude", "--allowedTools", "Bash", "-p", "do T-1"])
    }

    fn supervise_command(&self, extra: &[&str], command: &[&str]) -> Run {
        let mut args = vec!["--json", "supervise"];
        args.extend_from_slice(extra);
        args.push("--");
        args.extend_from_slice(command);
        self.run(&args)
    }

    /// The arguments of launch `n`.
    fn argv(&self, n: u32) -> Vec<String> {
        self.read(&format!("argv-{n}"))
            .split_terminator('\0')
            .map(String::from)
            .collect()
    }

    pub(crate) fn launches(&self) -> u32 {
        std::fs::read_to_string(self.dir.join("count"))
            .map(|s| s.trim().parse().unwrap())
            .unwrap_or(0)
    }

    pub(crate) fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.join(name)).unwrap_or_default()
    }

    fn loop_state(&self) -> Value {
        let shown = self.env.baton("X", 500, &["--json", "loop", "show", "T-1"]);
        shown.assert_code(0);
        shown.json()["state"].clone()
    }

    fn journal(&self) -> Vec<Value> {
        let log = self.env.baton("X", 500, &["--json", "log", "T-1"]);
        log.assert_code(0);
        log.json()["events"].as_array().unwrap().clone()
    }

    /// The journal's first `supervise.attempt` event.
    fn first_attempt(&self) -> Value {
        self.journal()
            .into_iter()
            .find(|e| e["event"] == "supervise.attempt")
            .expect("an attempt was journalled")
    }

    fn names(&self) -> Vec<String> {
        self.journal()
            .iter()
            .map(|e| e["event"].as_str().unwrap().to_string())
            .collect()
    }
}

pub(crate) const START: &str = "baton loop init T-1 >/dev/null\n\
    baton loop set T-1 --phase skeptic --action spawned >/dev/null\n";

#[test]
fn a_rate_limit_is_waited_out_and_the_session_resumed_to_the_finish() {
    let f = Fake::new();
    f.attempt(1, &format!("{START}rate_limit 'Please try again in 5m.'\n"));
    f.attempt(
        2,
        "baton resume accept T-1 >/dev/null\n\
         baton loop set T-1 --phase qa --action spawned >/dev/null\n\
         baton loop finish T-1 --status complete >/dev/null\n\
         finish\n",
    );
    let run = f.supervise(&[]);
    run.assert_code(0);
    let j = run.json();
    assert_eq!(j["verdict"], "finished", "{j}");
    assert_eq!(j["restarts"], 1, "{j}");
    assert_eq!(f.launches(), 2);
    // The relaunch is Claude Code's resume form of the same session, the task replaced.
    let argv: Vec<String> = f
        .read("argv-2")
        .split_terminator('\0')
        .map(String::from)
        .collect();
    assert_eq!(argv.len(), 6, "{argv:?}");
    assert_eq!(
        &argv[..5],
        ["--allowedTools", "Bash", "-p", "--resume", "S1"]
    );
    // The prompt: continue where the packet says, then the task as first given.
    assert!(argv[5].contains("baton resume accept"), "{argv:?}");
    assert!(
        argv[5].ends_with("The task, as first given:\ndo T-1"),
        "{argv:?}"
    );
    // Its session start was handed the packet with the interrupted loop.
    let packet = f.read("hook-out-2");
    assert!(
        packet.contains("T-1") && packet.contains("rate_limit"),
        "{packet}"
    );
    assert_eq!(f.loop_state()["status"], "complete");
    let events = f.journal();
    let names: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "init",
            "set",
            "interrupt",
            "supervise.attempt",
            "supervise.wait",
            "supervise.relaunch",
            "takeover",
            "set",
            "finish",
            "supervise.attempt",
            "supervise.stop"
        ],
        "{events:?}"
    );
    assert_eq!(events[3]["exit_code"], 1, "{}", events[3]);
    assert_eq!(events[3]["session"], "S1");
    assert_eq!(events[9]["exit_code"], 0);
    assert_eq!(events[9]["command"][5], "S1", "{}", events[9]);
    // The wait was for the reset the error named, on the fake clock: no real sleep.
    let wait = &events[4];
    assert_eq!(wait["until"], at(5), "{wait}");
    assert_eq!(events[10]["status"], 0);
    // `baton log` shows the supervisor's events in its text too.
    let log = f.env.baton("X", 500, &["log", "T-1"]);
    log.assert_code(0);
    assert!(
        log.stdout
            .contains("supervise.attempt  claude --allowedTools Bash -p --resume S1 'Continue"),
        "{}",
        log.stdout
    );
}

#[test]
fn a_rate_limit_with_no_reset_backs_off_doubling_and_the_loop_agrees() {
    let f = Fake::new();
    f.attempt(1, &format!("{START}rate_limit 'Slow down.'\n"));
    f.attempt(2, "rate_limit 'Slow down.'\n");
    f.attempt(3, "rate_limit 'Slow down.'\n");
    let run = f.supervise(&["--backoff", "10s,15s", "--max-restarts", "2"]);
    run.assert_code(1);
    let j = run.json();
    assert_eq!(j["verdict"], "stopped", "{j}");
    assert!(
        j["why"].as_str().unwrap().contains("--max-restarts of 2"),
        "{j}"
    );
    assert_eq!(j["restarts_counted"], 2, "{j}");
    assert_eq!(f.launches(), 3);
    let secs = |ts: &Value| {
        let t: jiff::Timestamp = ts.as_str().unwrap().parse().unwrap();
        let t0: jiff::Timestamp = at(0).parse().unwrap();
        t.duration_since(t0).as_secs_f64()
    };
    let waits: Vec<f64> = f
        .journal()
        .iter()
        .filter(|e| e["event"] == "supervise.wait")
        .map(|e| secs(&e["until"]))
        .collect();
    assert_eq!(waits.len(), 2);
    // 10 s x 0.8..1.2 (shorter than the loop protocol's own minute: the backoff is recorded
    // as the loop's reset), then doubled and capped at 15 s.
    assert!((8.0..=12.0).contains(&waits[0]), "{waits:?}");
    assert!((12.0..=15.0).contains(&(waits[1] - waits[0])), "{waits:?}");
    // The loop records each relaunch time as its reset, the latest last.
    let state = f.loop_state();
    assert_eq!(secs(&state["resume_after"]), waits[1], "{state}");
}

#[test]
fn a_relaunch_never_comes_before_the_work_may_resume() {
    let f = Fake::new();
    // The agent itself recorded a reset an hour away, and its hooks read none.
    f.attempt(
        1,
        &format!("{START}baton loop interrupt T-1 --reason rate_limit --resume-after 1h >/dev/null\nrate_limit 'Slow down.'\n"),
    );
    f.attempt(2, "baton resume accept T-1 >/dev/null\nbaton loop finish T-1 --status complete >/dev/null\nfinish\n");
    let run = f.supervise(&["--backoff", "10s"]);
    run.assert_code(0);
    let wait = f
        .journal()
        .into_iter()
        .find(|e| e["event"] == "supervise.wait")
        .unwrap();
    assert_eq!(wait["until"], at(60), "{wait}");
}

#[test]
fn a_rate_limit_before_any_work_is_heard_from_the_hooks_alone() {
    let f = Fake::new();
    // The task's first request is refused: the session owns nothing yet.
    f.attempt(1, "rate_limit 'Please try again in 5m.'\n");
    f.attempt(2, "finish\n");
    let run = f.supervise(&[]);
    run.assert_code(0);
    assert_eq!(f.launches(), 2);
    assert!(f.read("argv-2").contains("--resume\0S1\0"));
    let attempts = &run.json()["attempts"];
    assert_eq!(attempts[0]["rate_limited"], true, "{attempts}");
    assert_eq!(attempts[0]["exit_code"], 1, "{attempts}");
}

#[test]
fn a_crash_is_not_retried_and_its_work_is_marked_interrupted() {
    let f = Fake::new();
    f.attempt(1, &format!("{START}kill -9 $$\n"));
    f.attempt(2, "finish\n");
    let run = f.supervise(&[]);
    run.assert_code(4);
    let j = run.json();
    assert_eq!(j["verdict"], "ask_human");
    assert!(j["why"].as_str().unwrap().contains("signal 9"), "{j}");
    assert_eq!(f.launches(), 1, "never relaunched");
    let state = f.loop_state();
    assert_eq!(state["status"], "interrupted", "{state}");
    assert_eq!(state["interrupt_reason"], "unknown");
    assert_eq!(
        f.names()[f.names().len() - 2..],
        ["supervise.attempt", "supervise.stop"]
    );
    assert_eq!(f.journal()[3]["killed_by_signal"], 9);
}

/// The batch the dead agent ran stops with it, as at a session end: the next session is offered
/// it with `baton batch resume`.
#[test]
fn a_crash_interrupts_the_batch_its_agent_ran() {
    let f = Fake::new();
    f.attempt(
        1,
        &format!("baton batch start T-1 T-2 >/dev/null\n{START}kill -9 $$\n"),
    );
    let run = f.supervise(&[]);
    run.assert_code(4);
    let batch = f.env.read_batch();
    assert_eq!(batch["status"], "interrupted", "{batch}");
    assert_eq!(batch["interrupt_reason"], "unknown", "{batch}");
}

#[test]
fn a_crash_after_a_rate_limit_is_still_a_crash() {
    let f = Fake::new();
    // An interactive session: the failure hook interrupts the loop, the agent takes it back
    // when the person goes on, then dies of SIGABRT with the loop active.
    f.attempt(
        1,
        &format!(
            "{START}hook StopFailure \"$(p StopFailure ',\"error\":\"rate_limit\",\"last_assistant_message\":\"429\"')\"\n\
             baton resume accept T-1 >/dev/null\n\
             kill -ABRT $$\n"
        ),
    );
    f.attempt(2, "finish\n");
    let run = f.supervise(&[]);
    run.assert_code(4);
    assert!(run.json()["why"].as_str().unwrap().contains("signal 6"));
    assert_eq!(f.launches(), 1);
    let state = f.loop_state();
    assert_eq!(state["status"], "interrupted", "{state}");
    assert_eq!(
        state["interrupt_reason"], "unknown",
        "a crash, not a rate limit: {state}"
    );
}

#[test]
fn a_signal_during_the_wait_stops_it_and_leaves_the_work_interrupted() {
    let f = Fake::new();
    f.attempt(1, &format!("{START}rate_limit 'Please try again in 1h.'\n"));
    // The real clock: the wait is a real one, ended by SIGINT.
    let mut cmd = f.command(&["--json", "supervise", "--", "claude", "-p", "do T-1"]);
    cmd.env_remove("BATON_NOW")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = cmd.spawn().unwrap();
    let start = std::time::Instant::now();
    let waited = || {
        f.env
            .journal(baton_store::JournalTarget::Loop("T-1"))
            .iter()
            .any(|e| e.to_string().contains("supervise.wait"))
    };
    while !waited() {
        assert!(start.elapsed().as_secs() < 30, "supervise never waited");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // SAFETY: kill(2) on the supervisor this test started.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let run = to_run(child.wait_with_output().unwrap());
    run.assert_code(1);
    assert_eq!(run.json()["verdict"], "signalled");
    assert!(start.elapsed().as_secs() < 30, "the wait was not cut short");
    let state = f.loop_state();
    assert_eq!(state["interrupt_reason"], "rate_limit", "{state}");
    let stop = f.journal().last().unwrap().clone();
    assert_eq!(stop["event"], "supervise.stop");
    assert_eq!(stop["signal"], libc::SIGINT);
    assert_eq!(f.launches(), 1);
}

#[test]
fn partial_work_in_the_tree_after_a_rate_limit_is_for_a_person() {
    let f = Fake::new();
    f.attempt(
        1,
        &format!("{START}echo half > half-done.txt\nrate_limit 'Please try again in 5m.'\n"),
    );
    f.attempt(2, "finish\n");
    let run = f.supervise(&[]);
    run.assert_code(4);
    assert!(
        run.json()["why"]
            .as_str()
            .unwrap()
            .contains("needs a person")
    );
    assert_eq!(f.launches(), 1);
}

#[test]
fn an_ending_that_is_no_rate_limit_stops_it() {
    let f = Fake::new();
    // The agent ends its run with the loop neither finished nor interrupted by an error.
    f.attempt(1, &format!("{START}finish\n"));
    let run = f.supervise(&[]);
    run.assert_code(4);
    let why = run.json()["why"].as_str().unwrap().to_string();
    assert!(why.contains("before the work was finished"), "{why}");
    // And an agent with no baton work that exits 0 is simply done.
    let g = Fake::new();
    g.attempt(1, "finish\n");
    g.supervise(&[]).assert_code(0);
}

#[test]
fn it_never_runs_without_the_hooks_and_names_the_fix() {
    let f = Fake::new();
    f.run(&["init", "claude", "--remove"]).assert_code(0);
    f.attempt(1, "finish\n");
    let run = f.supervise(&[]);
    run.assert_code(2);
    let err = &run.json()["error"];
    assert!(
        err["message"].as_str().unwrap().contains("not installed"),
        "{err}"
    );
    assert!(
        err["hints"][0]
            .as_str()
            .unwrap()
            .contains("baton init claude")
    );
    assert_eq!(f.launches(), 0);
}

#[test]
fn commands_it_cannot_relaunch_are_refused_before_anything_runs() {
    let f = Fake::new();
    f.attempt(1, "finish\n");
    for args in [
        vec!["supervise", "--", "aider", "do it"],
        // Claude Code reads `do it` as a second tool: the command has no task.
        vec![
            "supervise",
            "--",
            "claude",
            "-p",
            "--allowedTools",
            "Bash",
            "do it",
        ],
        vec![
            "supervise",
            "--",
            "claude",
            "-p",
            "--unknown-option",
            "do it",
        ],
        vec![
            "supervise",
            "--task",
            "other",
            "--",
            "claude",
            "-p",
            "do it",
        ],
        vec!["supervise", "--backoff", "soon", "--", "claude", "-p", "x"],
        vec!["supervise", "--backoff", "5m,1m", "--", "claude", "-p", "x"],
    ] {
        let run = f.run(&args);
        run.assert_code(2);
        assert!(run.stderr.contains("hint:"), "{args:?}: {}", run.stderr);
    }
    assert_eq!(f.launches(), 0);
}

/// A command whose options switch the client's hooks off, or keep no session, is refused
/// before it runs, naming the option: it would work and then leave nothing to resume.
#[test]
fn a_command_that_switches_the_hooks_off_or_keeps_no_session_is_refused() {
    let f = Fake::new();
    f.attempt(1, "finish\n");
    for (command, option) in [
        (vec!["claude", "--bare", "-p", "do it"], "--bare"),
        (vec!["claude", "--safe-mode", "-p", "do it"], "--safe-mode"),
        (
            vec!["claude", "--setting-sources", "user", "-p", "do it"],
            "--setting-sources user",
        ),
        (
            vec!["claude", "--no-session-persistence", "-p", "do it"],
            "--no-session-persistence",
        ),
        (vec!["codex", "exec", "--ephemeral", "do it"], "--ephemeral"),
        (vec!["opencode", "run", "--pure", "do it"], "--pure"),
    ] {
        let run = f.supervise_command(&[], &command);
        run.assert_code(2);
        // Under `--json`, the error is the one object on stdout.
        assert!(
            run.stdout.contains(&format!("`{option}`")),
            "{command:?}: {}",
            run.stdout
        );
    }
    assert_eq!(f.launches(), 0);
    // Project settings among the sources keep the hooks.
    let kept = Client::Claude.disabling_option(&[
        "claude".into(),
        "--setting-sources".into(),
        "user,project".into(),
    ]);
    assert_eq!(kept, None);
}

/// Starts a supervisor whose first attempt waits for `go` to exist.
fn blocked_supervisor(f: &Fake, extra: &[&str]) -> Child {
    f.attempt(
        1,
        "baton loop init T-1 >/dev/null\n\
         trap 'hook SessionEnd \"$(p SessionEnd \",\\\"reason\\\":\\\"other\\\"\")\"; exit 143' TERM\n\
         echo up > \"$d/up\"\n\
         while [ ! -e \"$d/go\" ]; do sleep 0.05; done\n\
         finish\n",
    );
    let mut args = vec!["--json", "supervise"];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--", "claude", "-p", "do T-1"]);
    let child = f
        .command(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while !f.dir.join("up").exists() {
        assert!(
            start.elapsed().as_secs() < 30,
            "the first attempt never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child
}

#[test]
fn a_second_supervisor_for_the_same_work_is_refused() {
    let f = Fake::new();
    let first = blocked_supervisor(&f, &[]);
    let second = f.run(&["supervise", "--", "claude", "-p", "do T-1"]);
    second.assert_code(3);
    assert!(
        second.stderr.contains("already carries"),
        "{}",
        second.stderr
    );
    // A supervisor of one ticket is refused too while the project's is running.
    f.run(&["supervise", "--ticket", "T-2", "--", "claude", "-p", "x"])
        .assert_code(3);
    std::fs::write(f.dir.join("go"), "").unwrap();
    let first = to_run(first.wait_with_output().unwrap());
    // Its agent ended the run with T-1 unfinished: a person's call.
    first.assert_code(4);
    assert_eq!(f.launches(), 1, "the refused ones launched nothing");
    // Supervisors of different tickets run side by side.
    let g = Fake::new();
    let t1 = blocked_supervisor(&g, &["--ticket", "T-1"]);
    g.run(&["supervise", "--ticket", "T-1", "--", "claude", "-p", "x"])
        .assert_code(3);
    std::fs::write(g.dir.join("attempt-2.sh"), "finish\n").unwrap();
    g.run(&["supervise", "--ticket", "T-2", "--", "claude", "-p", "x"])
        .assert_code(0);
    std::fs::write(g.dir.join("go"), "").unwrap();
    let t1 = to_run(t1.wait_with_output().unwrap());
    t1.assert_code(4);
    assert!(
        t1.json()["why"]
            .as_str()
            .unwrap()
            .contains("before the work was finished"),
        "{}",
        t1.stdout
    );
}

#[test]
fn sigterm_is_passed_to_the_agent_and_recorded() {
    let f = Fake::new();
    let child = blocked_supervisor(&f, &[]);
    // SAFETY: kill(2) on the supervisor this test started.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    let run = to_run(child.wait_with_output().unwrap());
    run.assert_code(1);
    let j = run.json();
    assert_eq!(j["verdict"], "signalled", "{j}");
    let state = f.loop_state();
    assert_eq!(state["status"], "interrupted", "{state}");
    let stop = f.journal().last().unwrap().clone();
    assert_eq!(stop["event"], "supervise.stop");
    assert_eq!(stop["signal"], libc::SIGTERM);
    assert_eq!(f.launches(), 1);
}

#[test]
fn the_relaunch_keeps_every_option_of_the_command_and_replaces_only_the_task() {
    // (the command as the user runs it, `--task` if any, the relaunch's words before the prompt)
    let rows: &[(&[&str], Option<&str>, &[&str])] = &[
        (
            &["claude", "-p", "do T-1", "--allowedTools", "Bash", "Edit"],
            None,
            &["-p", "--allowedTools", "Bash", "Edit", "--resume", "S1"],
        ),
        (
            &[
                "claude",
                "--model",
                "opus",
                "--allowedTools",
                "Bash",
                "Edit",
                "-p",
                "--permission-mode",
                "acceptEdits",
                "--",
                "do T-1",
            ],
            None,
            &[
                "--model",
                "opus",
                "--allowedTools",
                "Bash",
                "Edit",
                "-p",
                "--permission-mode",
                "acceptEdits",
                "--resume",
                "S1",
            ],
        ),
        (
            &[
                "claude",
                "do T-1",
                "--dangerously-skip-permissions",
                "-p",
                "--session-id",
                "OLD",
            ],
            None,
            &["--dangerously-skip-permissions", "-p", "--resume", "S1"],
        ),
        (
            &["claude", "--team-preset", "night", "-p", "do T-1"],
            Some("do T-1"),
            &["--team-preset", "night", "-p", "--resume", "S1"],
        ),
    ];
    for (command, task, want) in rows {
        let f = Fake::new();
        f.attempt(1, "rate_limit 'Please try again in 5m.'\n");
        f.attempt(2, "finish\n");
        let extra: Vec<&str> = task.iter().flat_map(|t| ["--task", *t]).collect();
        let run = f.supervise_command(&extra, command);
        run.assert_code(0);
        assert_eq!(
            f.argv(1),
            command[1..],
            "the first launch is the command itself"
        );
        let argv = f.argv(2);
        assert_eq!(argv[..argv.len() - 1], **want, "{command:?}");
        assert!(
            argv.last()
                .unwrap()
                .ends_with("The task, as first given:\ndo T-1"),
            "{argv:?}"
        );
    }
}

#[test]
fn a_reset_days_away_is_waited_for_and_not_counted_as_a_restart() {
    let f = Fake::new();
    // A weekly limit three days away, then another after it: neither relaunch is blind.
    let days = |d: i64| at(d * 24 * 60);
    f.attempt(
        1,
        &format!(
            "{START}rate_limit 'Weekly limit reached. The limit resets at {}.'\n",
            days(3)
        ),
    );
    f.attempt(
        2,
        &format!(
            "baton resume accept T-1 >/dev/null\nrate_limit 'The limit resets at {}.'\n",
            days(6)
        ),
    );
    f.attempt(
        3,
        "baton resume accept T-1 >/dev/null\nbaton loop finish T-1 --status complete >/dev/null\nfinish\n",
    );
    let run = f.supervise(&["--max-restarts", "0"]);
    run.assert_code(0);
    let j = run.json();
    assert_eq!(j["restarts"], 2, "{j}");
    assert_eq!(j["restarts_counted"], 0, "{j}");
    assert_eq!(f.launches(), 3);
    let waits: Vec<Value> = f
        .journal()
        .into_iter()
        .filter(|e| e["event"] == "supervise.wait")
        .collect();
    assert_eq!(waits.len(), 2);
    for (wait, d) in waits.iter().zip([3, 6]) {
        assert_eq!(wait["until"], days(d), "{wait}");
        assert_eq!(wait["reset"], days(d), "{wait}");
        assert_eq!(wait["source"], "error", "{wait}");
        assert_eq!(wait["counted"], false, "{wait}");
    }
    // The agent was started with the clock moved on to the reset.
    assert!(
        run.stderr.contains("relaunching at 2026-"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains(" UTC"), "{}", run.stderr);
}

#[test]
fn blind_retries_give_up_on_time_after_the_horizon() {
    let f = Fake::new();
    for n in 1..=6 {
        f.attempt(
            n,
            &format!(
                "{}rate_limit 'Slow down.'\n",
                if n == 1 { START } else { "" }
            ),
        );
    }
    let run = f.supervise(&["--backoff", "5m", "--give-up-after", "20m"]);
    run.assert_code(1);
    let j = run.json();
    let why = j["why"].as_str().unwrap();
    assert!(why.contains("--give-up-after of 20m"), "{why}");
    // 4..6m, then 8..12m, then 16..24m after: the third relaunch lands past the horizon, and
    // the limit it meets stops supervise.
    assert_eq!(f.launches(), 4, "{j}");
    assert_eq!(j["restarts_counted"], 3, "{j}");
    let waits: Vec<Value> = f
        .journal()
        .into_iter()
        .filter(|e| e["event"] == "supervise.wait")
        .collect();
    assert!(
        waits
            .iter()
            .all(|w| w["source"] == "backoff" && w["counted"] == true && w["reset"].is_null()),
        "{waits:?}"
    );
    let last: jiff::Timestamp = waits[2]["until"].as_str().unwrap().parse().unwrap();
    let t0: jiff::Timestamp = at(0).parse().unwrap();
    assert!(last.duration_since(t0).as_secs() >= 20 * 60, "{waits:?}");
    // A horizon that is no duration is refused.
    f.supervise(&["--give-up-after", "soon"]).assert_code(2);
}

#[test]
fn an_overloaded_api_is_retried_with_the_backoff() {
    let f = Fake::new();
    // The hook's line to the supervisor names the overload (HTTP 529); Claude Code's failure
    // hook records the dead turn.
    let overloaded = "hook StopFailure \"$(p StopFailure ',\"error\":\"overloaded\",\"last_assistant_message\":\"API Error: 529 Overloaded\"')\"\n\
        for log in .agentic/supervise/*.jsonl; do\n\
          printf '{\"event\":\"failure\",\"client\":\"claude\",\"session\":\"%s\",\"error\":\"overloaded\"}\\n' \"$session\" >> \"$log\"\n\
        done\n\
        hook SessionEnd \"$(p SessionEnd ',\"reason\":\"other\"')\"\n\
        exit 1\n";
    f.attempt(1, overloaded);
    f.attempt(2, "finish\n");
    let run = f.supervise(&["--backoff", "10s"]);
    run.assert_code(0);
    let j = run.json();
    assert_eq!(j["verdict"], "finished", "{j}");
    assert_eq!(j["restarts_counted"], 1, "{j}");
    assert_eq!(f.launches(), 2);
    assert!(f.read("argv-2").contains("--resume\0S1\0"));
    // Counted: with no relaunch allowed, the overload stops it.
    let g = Fake::new();
    g.attempt(1, overloaded);
    g.attempt(2, "finish\n");
    let run = g.supervise(&["--max-restarts", "0"]);
    run.assert_code(1);
    assert!(
        run.json()["why"].as_str().unwrap().contains("overloaded"),
        "{}",
        run.stdout
    );
    assert_eq!(g.launches(), 1);
}

/// The agent's stdout, passed through: a line that signals a limit's reset (Claude Code's
/// stream-json `rate_limit_event`, its limit text) sets the relaunch time, even when the hooks
/// read none.
fn relaunch_after_printing(line: &str) -> (Run, Value) {
    let f = Fake::new();
    let printed = f.dir.join("printed.txt");
    std::fs::write(&printed, format!("{line}\n")).unwrap();
    f.attempt(
        1,
        &format!(
            "{START}cat '{}'\nrate_limit 'Slow down.'\n",
            printed.display()
        ),
    );
    f.attempt(
        2,
        "baton resume accept T-1 >/dev/null\nbaton loop finish T-1 --status complete >/dev/null\nfinish\n",
    );
    let run = f.supervise(&["--backoff", "10s"]);
    run.assert_code(0);
    let wait = f
        .journal()
        .into_iter()
        .find(|e| e["event"] == "supervise.wait")
        .unwrap();
    (run, wait)
}

#[test]
fn a_stream_json_rate_limit_event_on_stdout_sets_the_relaunch() {
    // The captured event, its `resetsAt` moved to the test's clock: T0 plus two hours.
    let captured = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "../../fixtures/clients/transcripts/claude-code-2.1.332.stream-json-rate-limit.jsonl",
    ))
    .unwrap();
    let event = captured
        .lines()
        .find(|l| l.contains("\"rate_limit_event\""))
        .unwrap();
    let t0: jiff::Timestamp = at(0).parse().unwrap();
    let line = event.replace("1796198747", &(t0.as_second() + 7200).to_string());
    let (run, wait) = relaunch_after_printing(&line);
    assert_eq!(wait["until"], at(120), "{wait}");
    // Passed through unchanged (to stderr under `--json`).
    assert!(run.stderr.contains(&line), "{}", run.stderr);
}

#[test]
fn a_limit_text_on_stdout_sets_the_relaunch() {
    let line = "You've hit your 5-hour limit · resets 2:30pm (UTC)";
    let (run, wait) = relaunch_after_printing(line);
    assert_eq!(wait["until"], at(150), "{wait}");
    assert!(run.stderr.contains(line), "{}", run.stderr);
}

/// Every Claude Code limit text of the table in docs/hooks.md ("Limit signals, client by
/// client"), as its StopFailure hook receives it: `baton wait`, asked right after the hook,
/// and supervise, deciding its relaunch, name the same reset, the one the text states (the next
/// occurrence of that wall-clock time in that zone, at T0 = 2026-03-01 12:00 UTC, a Sunday).
#[test]
fn baton_wait_and_supervise_agree_on_every_claude_limit_text() {
    let rows = [
        (
            "You've hit your limit · resets 1pm (Europe/Lisbon)",
            "2026-03-01T13:00:00Z",
        ),
        (
            "You've hit your session limit · resets 4:20am (Europe/Warsaw)",
            "2026-03-02T03:20:00Z",
        ),
        (
            "You've hit your weekly limit · resets Mar 5, 2am (UTC)",
            "2026-03-05T02:00:00Z",
        ),
        (
            "You've hit your weekly limit · resets Mar 4 at 4:30am (Asia/Calcutta)",
            "2026-03-03T23:00:00Z",
        ),
        (
            "You're out of extra usage · resets 7pm (Asia/Seoul)",
            "2026-03-02T10:00:00Z",
        ),
        (
            "Claude usage limit reached. Your limit will reset at 9am (America/Chicago).",
            "2026-03-01T15:00:00Z",
        ),
        (
            "Claude AI usage limit reached|1772370000",
            "2026-03-01T13:00:00Z",
        ),
    ];
    for (text, reset) in rows {
        let f = Fake::new();
        let payload = serde_json::json!({
            "session_id": "S1",
            "hook_event_name": "StopFailure",
            "cwd": f.env.repo.to_str().unwrap(),
            "error": "rate_limit",
            "last_assistant_message": text,
        });
        let file = f.dir.join("failure.json");
        std::fs::write(&file, payload.to_string()).unwrap();
        f.attempt(
            1,
            &format!(
                "{START}baton hook claude StopFailure < '{}'\n\
                 baton --json wait T-1 > \"$d/wait.json\"\n\
                 hook SessionEnd \"$(p SessionEnd ',\"reason\":\"other\"')\"\n\
                 exit 1\n",
                file.display()
            ),
        );
        f.attempt(
            2,
            "baton resume accept T-1 >/dev/null\nbaton loop finish T-1 --status complete >/dev/null\nfinish\n",
        );
        let run = f.supervise(&[]);
        run.assert_code(0);
        let wait: Value = serde_json::from_str(&f.read("wait.json")).unwrap();
        assert_eq!(wait["verdict"], "wait", "{text}: {wait}");
        assert_eq!(wait["until"], reset, "{text}: {wait}");
        let relaunch = f
            .journal()
            .into_iter()
            .find(|e| e["event"] == "supervise.wait")
            .unwrap();
        assert_eq!(relaunch["until"], reset, "{text}: {relaunch}");
        assert_eq!(relaunch["counted"], false, "{text}: {relaunch}");
    }
}

/// Whether the process whose pid `file` holds still runs (a zombie does not count).
fn still_runs(file: &Path) -> bool {
    let pid: u32 = std::fs::read_to_string(file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    baton_store::platform::stat(pid).is_some_and(|s| !s.zombie)
}

/// Stopping supervise stops the agent it launched and everything the agent started, not only
/// its direct child: under a launcher (a wrapper script, npm's loader) the agent is a
/// grandchild. What the agent leaves running after it exits is stopped too, and the journal
/// names what was stopped.
#[test]
fn stopping_supervise_stops_the_agents_whole_tree() {
    let f = Fake::new();
    f.attempt(
        1,
        "baton loop init T-1 >/dev/null\n\
         sh -c 'sleep 300' &\n\
         echo $! > \"$d/bg\"\n\
         echo up > \"$d/up\"\n\
         while [ ! -e \"$d/go\" ]; do sleep 0.05; done\n\
         finish\n",
    );
    let child = f
        .command(&["--json", "supervise", "--", "claude", "-p", "do T-1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while !f.dir.join("up").exists() {
        assert!(start.elapsed().as_secs() < 30, "the attempt never started");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(still_runs(&f.dir.join("bg")));
    // SAFETY: kill(2) on the supervisor this test started.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    let run = to_run(child.wait_with_output().unwrap());
    run.assert_code(1);
    assert!(
        !still_runs(&f.dir.join("bg")),
        "the agent's job works on unsupervised"
    );
    let attempt = f.first_attempt();
    assert!(
        attempt["stopped"].to_string().contains("sleep"),
        "{attempt}"
    );

    // supervise itself killed (SIGKILL: nothing of it runs): the agent under its launcher
    // and the agent's job are stopped all the same, even when the agent ends at once with
    // supervise (as one does at its next write to the stdout supervise was reading).
    let k = Fake::new();
    k.attempt(
        1,
        "baton loop init T-1 >/dev/null\n\
         sh -c 'sleep 300' &\n\
         echo $! > \"$d/bg\"\n\
         echo $$ > \"$d/agent\"\n\
         while [ ! -s \"$d/supervisor\" ]; do sleep 0.01; done\n\
         s=$(cat \"$d/supervisor\")\n\
         while kill -0 \"$s\" 2>/dev/null; do :; done\n\
         exit 0\n",
    );
    let wrapper = k.dir.join("launch.sh");
    std::fs::write(&wrapper, "#!/bin/sh\nclaude \"$@\"\necho launcher-done\n").unwrap();
    std::fs::set_permissions(
        &wrapper,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let mut child = k
        .command(&["supervise", "--client", "claude", "--"])
        .arg(&wrapper)
        .args(["-p", "do T-1"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::fs::write(k.dir.join("supervisor"), child.id().to_string()).unwrap();
    let start = std::time::Instant::now();
    while !k.dir.join("agent").exists() {
        assert!(start.elapsed().as_secs() < 30, "the attempt never started");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let start = std::time::Instant::now();
    while still_runs(&k.dir.join("agent")) || still_runs(&k.dir.join("bg")) {
        if start.elapsed().as_secs() >= 30 {
            // Nothing of a failed run is left behind.
            for file in ["agent", "bg"] {
                let pid: i32 = std::fs::read_to_string(k.dir.join(file))
                    .unwrap()
                    .trim()
                    .parse()
                    .unwrap();
                // SAFETY: kill(2) on a process this test's attempt started.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
            }
            panic!("the agent works on after supervise was killed");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }

    // An agent that exits and leaves a job running: the job is stopped after the attempt.
    let g = Fake::new();
    g.attempt(
        1,
        "baton loop init T-1 >/dev/null\nsh -c 'sleep 300' &\necho $! > \"$d/bg\"\nfinish\n",
    );
    g.supervise(&[]);
    assert!(
        !still_runs(&g.dir.join("bg")),
        "left running after the attempt"
    );
    let attempt = g.first_attempt();
    assert!(
        attempt["stopped"].to_string().contains("sleep"),
        "{attempt}"
    );
}
