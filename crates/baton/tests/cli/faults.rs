//! Injected I/O faults and named crash points at every step of every write protocol
//! (docs/reliability.md, "Faults at every step").
//!
//! The binary the tests run is built with baton-store's `faults` feature: every step that
//! touches the disk or starts git is a named point (`crates/baton-store/src/faults.rs`). For
//! each scenario, a clean run with `BATON_FAULTS_TRACE` lists the points the command passes,
//! in order; then, from the same starting files, the command is run once per point and fault:
//! an I/O error (`eio`), a full disk (`enospc`, a write writing half first) and a crash
//! (`crash`, SIGKILL at that step). Every case must end one of the ways the docs allow:
//!
//! - an injected error: exit 1, an error naming a file of the project and a hint, and every
//!   file as it was; or exit 0 with a warning, when only the journal missed its event; the one
//!   exception is a failed directory fsync after the rename, which says the change is in place
//!   but not confirmed;
//! - a crash: every state file readable (the crash harness's checker), and after the next
//!   command, the files as before or as after the command, at most missing its journal event.
//!
//! In every case the next command reads what was left (exit 0), and running the command again
//! ends where a clean run ends.
//!
//! `BATON_FAULT_CASES=all` runs every point with every fault (`scripts/long-tests.sh`); by
//! default each point gets one fault, the three taking turns, so that CI covers every step.

use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{TestEnv, at};

const FAULTS: [&str; 3] = ["eio", "enospc", "crash"];
/// Git's clock, fixed so that a commit made by two runs has one id.
const GIT_DATE: &str = "2026-01-01T00:00:00Z";

/// The command under test, as a session at a minute.
struct Cmd {
    session: &'static str,
    minute: i64,
    args: Vec<String>,
}

impl Cmd {
    fn new(session: &'static str, minute: i64, args: &[&str]) -> Cmd {
        Cmd {
            session,
            minute,
            args: args.iter().map(|a| a.to_string()).collect(),
        }
    }
}

struct Scenario {
    name: &'static str,
    /// Builds the starting files and returns the command under test.
    setup: fn(&TestEnv) -> Cmd,
    /// Project files outside `.agentic/` that belong to the state.
    files: &'static [&'static str],
    /// What a session runs next; it must read what the command left (exit 0).
    next: &'static [&'static str],
    /// How the command's writes are ordered, which decides what a fault between them leaves.
    steps: Steps,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Steps {
    /// One replace (and its journal event): a fault leaves the old state or the new.
    One,
    /// Each run appends a line: a run killed after its line landed and run again appends it
    /// twice.
    Append,
    /// A claim, git with the lock released, then the result: a fault between the two leaves
    /// the claim, which running the command again completes (recording the finish of a claim
    /// in the journal, not the takeover).
    Claim,
    /// A roll-forward record, then the files: once the record is down, the next command
    /// completes it, so a fault after it leaves the change to be completed.
    RollForward,
}

/// A live loop of session A, and the transition it records next.
fn a_transition(env: &TestEnv) -> Cmd {
    env.baton("A", 0, &["loop", "init", "PROJ-1"])
        .assert_code(0);
    Cmd::new(
        "A",
        1,
        &[
            "loop", "set", "PROJ-1", "--phase", "qa", "--action", "returned",
        ],
    )
}

fn scenarios() -> Vec<Scenario> {
    vec![
        Scenario {
            name: "loop init (creates the state directory)",
            setup: |_| Cmd::new("A", 0, &["loop", "init", "PROJ-1"]),
            files: &[],
            next: &["resume", "PROJ-1"],
            steps: Steps::One,
        },
        Scenario {
            name: "loop set (a transition)",
            setup: a_transition,
            files: &[],
            next: &["resume", "PROJ-1"],
            steps: Steps::One,
        },
        Scenario {
            name: "loop set (a takeover of a stale loop)",
            setup: |env| {
                env.baton("A", 0, &["loop", "init", "PROJ-1"])
                    .assert_code(0);
                Cmd::new(
                    "B",
                    40,
                    &[
                        "loop", "set", "PROJ-1", "--phase", "qa", "--action", "spawned",
                    ],
                )
            },
            files: &[],
            next: &["resume", "PROJ-1"],
            steps: Steps::One,
        },
        Scenario {
            name: "resume accept --commit (git between two writes)",
            setup: |env| {
                env.baton("A", 0, &["loop", "init", "PROJ-1"])
                    .assert_code(0);
                env.set_phase("A", 0, "PROJ-1", "qa", "engineer_spawned")
                    .assert_code(0);
                env.baton("A", 0, &["loop", "interrupt", "PROJ-1"])
                    .assert_code(0);
                env.write("partial.rs", "// half done\n");
                Cmd::new("B", 20, &["resume", "accept", "PROJ-1", "--commit"])
            },
            files: &["partial.rs"],
            next: &["resume", "PROJ-1"],
            steps: Steps::Claim,
        },
        Scenario {
            name: "ledger append (a phase start)",
            setup: |env| {
                std::fs::create_dir_all(env.repo.join("plans/x")).unwrap();
                env.baton("s", 0, &["ledger", "init", "plans/x"])
                    .assert_code(0);
                Cmd::new("s", 1, &["ledger", "start", "plans/x", "--phase", "1"])
            },
            files: &["plans/x/STATE.md"],
            next: &["ledger", "check", "plans/x"],
            steps: Steps::Append,
        },
        Scenario {
            name: "continue --set-resume-point (two project files, rolled forward)",
            setup: |env| {
                crate::continuation_files::feature_setup(env);
                Cmd::new("s1", 0, &["continue", "--set-resume-point"])
            },
            files: &[
                crate::continuation_files::POINTER,
                crate::continuation_files::TASKS_PATH,
            ],
            next: &["continue"],
            steps: Steps::RollForward,
        },
    ]
}

/// The state a case is judged on: the state directory (without the lock sidecars and temp
/// files), the scenario's project files, and git's HEAD; the journals apart.
#[derive(Debug, Clone, PartialEq, Eq)]
struct State {
    files: BTreeMap<String, Vec<u8>>,
    journals: BTreeMap<String, Vec<u8>>,
}

impl State {
    fn read(env: &TestEnv, scenario: &Scenario) -> State {
        fn walk(root: &Path, dir: &Path, state: &mut State) {
            let Ok(entries) = std::fs::read_dir(dir) else {
                return;
            };
            for entry in entries {
                let path = entry.unwrap().path();
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                let rel = path
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                // The lock sidecars and the `.gitignore` are made on first use and hold no state;
                // the sessions' files are hints (a ledger's last writer), never state.
                if rel == "locks"
                    || rel == ".gitignore"
                    || rel == "sessions"
                    || crate::crash::is_temp_file(&name)
                {
                    continue;
                }
                if path.is_dir() {
                    walk(root, &path, state);
                } else if rel.starts_with("journal/") {
                    state.journals.insert(rel, std::fs::read(&path).unwrap());
                } else {
                    state.files.insert(rel, std::fs::read(&path).unwrap());
                }
            }
        }
        let mut state = State {
            files: BTreeMap::new(),
            journals: BTreeMap::new(),
        };
        walk(&env.state_dir(), &env.state_dir(), &mut state);
        for rel in scenario.files {
            if let Ok(bytes) = std::fs::read(env.repo.join(rel)) {
                state.files.insert(rel.to_string(), bytes);
            }
        }
        state
            .files
            .insert("HEAD".into(), env.git(&["rev-parse", "HEAD"]).into_bytes());
        state
    }
}

/// How a case ended, against the states before and after a clean run.
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    Before,
    After,
    /// The command's files, without its journal events or some of them (a takeover records
    /// two).
    AfterWithoutEvent,
    Neither,
}

fn outcome(now: &State, before: &State, after: &State) -> Outcome {
    // Every journal holds what it held before, then some of what the command appends.
    let partly_journalled = || {
        let names: std::collections::BTreeSet<&String> =
            now.journals.keys().chain(after.journals.keys()).collect();
        names.into_iter().all(|name| {
            let get = |s: &State| s.journals.get(name).cloned().unwrap_or_default();
            let (was, is, will) = (get(before), get(now), get(after));
            is.starts_with(&was) && will.starts_with(&is)
        })
    };
    match (now.files == before.files, now.files == after.files) {
        (true, _) if now.journals == before.journals => Outcome::Before,
        (_, true) if now.journals == after.journals => Outcome::After,
        (_, true) if partly_journalled() => Outcome::AfterWithoutEvent,
        _ => Outcome::Neither,
    }
}

struct Ran {
    code: Option<i32>,
    signal: Option<i32>,
    stderr: String,
}

fn run(env: &TestEnv, cmd: &Cmd, args: &[String], vars: &[(&str, &str)]) -> Ran {
    let mut command: Command = env.command(Some(cmd.session), &at(cmd.minute));
    command
        .args(args)
        .env("GIT_AUTHOR_DATE", GIT_DATE)
        .env("GIT_COMMITTER_DATE", GIT_DATE);
    for (k, v) in vars {
        command.env(k, v);
    }
    let out = command.output().unwrap();
    Ran {
        code: out.status.code(),
        signal: out.status.signal(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Puts `repo` back to `template`, byte for byte, at the same path.
fn restore(repo: &Path, template: &Path) {
    std::fs::remove_dir_all(repo).unwrap();
    copy_tree(template, repo);
}

fn copy_tree(from: &Path, to: &Path) {
    let status = Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .status()
        .unwrap();
    assert!(
        status.success(),
        "cp -a {} {}",
        from.display(),
        to.display()
    );
}

/// The points a clean run passes, each with the pass it is (`POINT@N`), in order.
fn steps(trace: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(trace).unwrap_or_default();
    let mut passes: BTreeMap<&str, u32> = BTreeMap::new();
    text.lines()
        .map(|point| {
            let n = passes.entry(point).or_default();
            *n += 1;
            format!("{point}@{n}")
        })
        .collect()
}

struct Tally {
    cases: usize,
    outcomes: BTreeMap<String, usize>,
    /// Each point with the faults tried on it and how each ended, for docs/reliability.md.
    table: Vec<String>,
}

/// Runs `scenario` with each fault of `faults_for(step index)` at every step.
fn check_scenario(scenario: &Scenario, all: bool) -> Result<Tally, String> {
    let env = TestEnv::new();
    let cmd = (scenario.setup)(&env);
    let template = env.repo.with_file_name("template");
    copy_tree(&env.repo, &template);
    let before = State::read(&env, scenario);
    let trace = env.repo.with_file_name("trace");
    let trace_var = trace.to_string_lossy().into_owned();
    let clean = run(&env, &cmd, &cmd.args, &[("BATON_FAULTS_TRACE", &trace_var)]);
    if clean.code != Some(0) {
        return Err(format!("the clean run failed: {}", clean.stderr));
    }
    let after = State::read(&env, scenario);
    if after == before {
        return Err("the clean run changed nothing".into());
    }
    let steps = steps(&trace);
    // The comparisons mean something only if the command always writes the same bytes.
    restore(&env.repo, &template);
    run(&env, &cmd, &cmd.args, &[]);
    if State::read(&env, scenario) != after {
        return Err("two clean runs wrote different files".into());
    }
    let mut tally = Tally {
        cases: 0,
        outcomes: BTreeMap::new(),
        table: Vec::new(),
    };
    let repo_name = env.repo.to_string_lossy().into_owned();
    let next: Vec<String> = scenario.next.iter().map(|a| a.to_string()).collect();
    for (i, step) in steps.iter().enumerate() {
        let faults: Vec<&str> = if all {
            FAULTS.to_vec()
        } else {
            vec![FAULTS[i % FAULTS.len()]]
        };
        let mut row = Vec::new();
        for fault in faults {
            restore(&env.repo, &template);
            let spec = format!("{step}={fault}");
            let what = format!("{}: {spec}", scenario.name);
            let ran = run(&env, &cmd, &cmd.args, &[("BATON_FAULTS", &spec)]);
            let now = State::read(&env, scenario);
            let ended = if fault == "crash" {
                if ran.signal != Some(libc::SIGKILL) {
                    return Err(format!("{what}: no crash ({:?}): {}", ran.code, ran.stderr));
                }
                crate::crash::check_state_dir(&env.state_dir())
                    .map_err(|e| format!("{what}: {e}"))?;
                "killed".to_string()
            } else {
                let got = outcome(&now, &before, &after);
                match ran.code {
                    Some(0) => {
                        let ok = got == Outcome::After
                            || (got == Outcome::AfterWithoutEvent
                                && ran.stderr.contains("warning: ")
                                && ran.stderr.contains(&repo_name));
                        if !ok {
                            return Err(format!("{what}: exit 0 and {got:?}: {}", ran.stderr));
                        }
                        if got == Outcome::After {
                            "no effect".to_string()
                        } else {
                            "exit 0, warning, event not journalled".to_string()
                        }
                    }
                    Some(1) => {
                        if !(ran.stderr.contains("error: ")
                            && ran.stderr.contains(&repo_name)
                            && ran.stderr.contains("hint: "))
                        {
                            return Err(format!(
                                "{what}: the error names no file or no fix: {}",
                                ran.stderr
                            ));
                        }
                        // A directory fsync fails after its rename: the change is in place, as
                        // if the command had been killed there; the next command settles it.
                        let allowed = got == Outcome::Before
                            || step.starts_with("dir.fsync@")
                            || matches!(scenario.steps, Steps::Claim | Steps::RollForward);
                        if !allowed {
                            return Err(format!("{what}: exit 1 and {got:?}: {}", ran.stderr));
                        }
                        if got == Outcome::Before {
                            "exit 1, unchanged".to_string()
                        } else if step.starts_with("dir.fsync@") {
                            "exit 1, written, not confirmed".to_string()
                        } else {
                            "exit 1, completed by the next command".to_string()
                        }
                    }
                    code => return Err(format!("{what}: exit {code:?}: {}", ran.stderr)),
                }
            };
            // The next command reads what is there.
            let follow = run(&env, &cmd, &next, &[]);
            if follow.code != Some(0) {
                return Err(format!(
                    "{what}: `baton {}` after it: exit {:?}: {}",
                    next.join(" "),
                    follow.code,
                    follow.stderr
                ));
            }
            let settled = outcome(&State::read(&env, scenario), &before, &after);
            if settled == Outcome::Neither && scenario.steps != Steps::Claim {
                return Err(format!(
                    "{what}: after `baton {}`, neither the old state nor the new",
                    next.join(" ")
                ));
            }
            // Running the command again ends where a clean run ends; an append that landed
            // before the crash is appended again, and the file still reads.
            let again = run(&env, &cmd, &cmd.args, &[]);
            let last = outcome(&State::read(&env, scenario), &before, &after);
            let done = match scenario.steps {
                Steps::Append if settled != Outcome::Before => {
                    run(&env, &cmd, &next, &[]).code == Some(0)
                }
                Steps::Claim => State::read(&env, scenario).files == after.files,
                _ => matches!(last, Outcome::After | Outcome::AfterWithoutEvent),
            };
            if again.code != Some(0) || !done {
                return Err(format!(
                    "{what}: run again: exit {:?}, {last:?}: {}",
                    again.code, again.stderr
                ));
            }
            let ended = if fault == "crash" {
                format!("{ended}, then {settled:?}")
            } else {
                ended
            };
            *tally
                .outcomes
                .entry(format!("{fault}: {ended}"))
                .or_default() += 1;
            tally.cases += 1;
            row.push(format!("{fault}: {ended}"));
        }
        tally.table.push(format!("{step} | {}", row.join("; ")));
    }
    Ok(tally)
}

#[test]
fn every_step_of_every_write_fails_cleanly_and_every_crash_point_recovers() {
    crate::files_only!("faults are injected into the file store's steps");
    let all = std::env::var("BATON_FAULT_CASES").is_ok_and(|v| v == "all");
    let mut failures = Vec::new();
    let mut cases = 0;
    for scenario in scenarios() {
        match check_scenario(&scenario, all) {
            Ok(tally) => {
                cases += tally.cases;
                eprintln!("{}: {} cases", scenario.name, tally.cases);
                for line in &tally.table {
                    eprintln!("  {line}");
                }
                for (outcome, n) in &tally.outcomes {
                    eprintln!("  {n:>4} x {outcome}");
                }
            }
            Err(e) => failures.push(e),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    eprintln!("faults: {cases} cases, every one ended as the docs say");
}

#[test]
fn a_crash_point_kills_and_an_armed_fault_fails_the_step_it_names() {
    // The harness above means something only if the points fire: this pins that they do.
    crate::files_only!("faults are injected into the file store's steps");
    let env = TestEnv::new();
    let cmd = a_transition(&env);
    let ran = run(
        &env,
        &cmd,
        &cmd.args,
        &[("BATON_FAULTS", "atomic.rename=crash")],
    );
    assert_eq!(ran.signal, Some(libc::SIGKILL), "{}", ran.stderr);
    let ran = run(
        &env,
        &cmd,
        &cmd.args,
        &[("BATON_FAULTS", "atomic.fsync=eio")],
    );
    assert_eq!(ran.code, Some(1));
    assert!(
        ran.stderr.contains("cannot fsync") && ran.stderr.contains("Input/output error"),
        "{}",
        ran.stderr
    );
}

/// The steps of a transition, in order: the order is what makes it crash-safe (the temp file
/// synced before the rename, the directory synced after it, the journal only after the state),
/// so a step dropped or moved fails here.
#[test]
fn a_transition_takes_its_steps_in_the_safe_order() {
    crate::files_only!("the file store's steps");
    let env = TestEnv::new();
    let cmd = a_transition(&env);
    let trace: PathBuf = env.repo.with_file_name("trace");
    let ran = run(
        &env,
        &cmd,
        &cmd.args,
        &[("BATON_FAULTS_TRACE", &trace.to_string_lossy())],
    );
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let steps = std::fs::read_to_string(&trace).unwrap();
    let steps: Vec<&str> = steps.lines().collect();
    assert_eq!(
        steps,
        [
            "lock.open",
            "lock.flock",
            "atomic.create",
            "atomic.write",
            "atomic.fsync",
            "atomic.rename",
            "dir.fsync",
            "append.open",
            "append.flock",
            "append.read_tail",
            "append.write",
            "append.fdatasync",
        ]
    );
}

/// The same order seen from outside, in the system calls themselves (`strace`), so that a step
/// whose call was dropped while its fault point stayed is caught too: the lock, the temp file
/// written and synced, the rename, the directory synced, then the journal locked, appended and
/// synced; and the state file itself is never opened for writing.
#[test]
fn the_system_calls_of_a_transition_make_it_durable_in_order() {
    crate::files_only!("the file store's system calls");
    if Command::new("strace").arg("-V").output().is_err() {
        crate::common::skipped("strace is not installed (apt-get install strace)");
        return;
    }
    let env = TestEnv::new();
    env.baton("A", 0, &["loop", "init", "PROJ-1"])
        .assert_code(0);
    let log = env.repo.with_file_name("strace.log");
    let out = env
        .command(Some("A"), &at(1))
        .args([
            "loop", "set", "PROJ-1", "--phase", "qa", "--action", "returned",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let mut traced = crate::common::like(&env.command(Some("A"), &at(2)), "strace");
    traced
        .args(["-f", "-qq", "-e", "signal=none", "-o"])
        .arg(&log)
        .args([
            "-e",
            "trace=openat,rename,renameat,renameat2,fsync,fdatasync,write,flock",
        ])
        .arg(env!("CARGO_BIN_EXE_baton"))
        .args([
            "loop", "set", "PROJ-1", "--phase", "engineer", "--action", "spawned",
        ]);
    let out = traced.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let state = env.state_dir().to_string_lossy().into_owned();
    let loop_file = format!("{state}/loop-state-PROJ-1.json");
    let mut fds: BTreeMap<String, String> = BTreeMap::new();
    let mut calls: Vec<(String, String)> = Vec::new();
    for line in std::fs::read_to_string(&log).unwrap().lines() {
        // `PID call(...)`, or `call(...)` alone when strace gives no pid.
        let call = line
            .trim_start_matches(|c: char| c.is_ascii_digit())
            .trim_start();
        let Some((name, rest)) = call.split_once('(') else {
            continue;
        };
        let quoted: Vec<&str> = rest.split('"').skip(1).step_by(2).collect();
        let result = rest.rsplit("= ").next().unwrap_or("").trim().to_string();
        let fd = rest.split([',', ')']).next().unwrap_or("").to_string();
        match name {
            "openat" => {
                let path = quoted.first().copied().unwrap_or("").to_string();
                if path == loop_file {
                    assert!(
                        !rest.contains("O_WRONLY") && !rest.contains("O_RDWR"),
                        "the state file was opened for writing in place: {line}"
                    );
                }
                fds.insert(result, path);
            }
            "rename" | "renameat" | "renameat2" => {
                calls.push(("rename".into(), quoted.last().copied().unwrap_or("").into()))
            }
            "write" | "fsync" | "fdatasync" | "flock" => {
                let path = fds.get(&fd).cloned().unwrap_or_default();
                calls.push((name.to_string(), path));
            }
            _ => {}
        }
    }
    let is_tmp = |p: &str| p.contains("/.loop-state-PROJ-1.json.tmp-");
    let journal = format!("{state}/journal/loop-PROJ-1.jsonl");
    type Is<'a> = &'a dyn Fn(&str) -> bool;
    let want: [(&str, Is); 8] = [
        ("flock", &|p| {
            p.ends_with("/locks/loop-state-PROJ-1.json.lock")
        }),
        ("write", &is_tmp),
        ("fsync", &is_tmp),
        ("rename", &|p| p == loop_file),
        ("fsync", &|p| p == state),
        ("flock", &|p| p == journal),
        ("write", &|p| p == journal),
        ("fdatasync", &|p| p == journal),
    ];
    if calls.is_empty() {
        // strace ran but recorded none of baton's calls (seen once in CI): say so rather than
        // judge an order from nothing.
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        eprintln!(
            "skipped: strace recorded no system call of baton; its log starts: {:?}",
            text.chars().take(400).collect::<String>()
        );
        return;
    }
    let mut at_call = 0;
    for (name, matches) in want {
        match calls[at_call..]
            .iter()
            .position(|(n, p)| n == name && matches(p))
        {
            Some(i) => at_call += i + 1,
            None => panic!("no {name} in order after call {at_call}; the calls: {calls:#?}"),
        }
    }
}
