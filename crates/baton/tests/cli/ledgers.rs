//! The plan ledger (`plans/<plan>/STATE.md`, SPEC §3) and `baton gate run`, end to end.
//!
//! Concurrency and crash safety are proven with appenders that are this test binary itself:
//! a test re-executes `current_exe()` with `BATON_TEST_APPENDER=<role>,<writer>,<count>,<ledger>`
//! and a filter selecting [`appender_helper`], which then appends in a loop through the public
//! library function `baton_store::ledger::append` (spawning 80,000 `baton` processes would take
//! minutes). Without that variable the helper does nothing.
//!
//! `BATON_LEDGER_LINES` (default 10000) sets the lines each of the 8 concurrent appenders
//! writes; `BATON_LEDGER_KILLS` (default 100) the SIGKILLs of the crash test. Every line an
//! appender writes is unique and self-checking: the checker rebuilds it from its writer and
//! index and compares bytes.
//!
//! A single small `write` with `O_APPEND` is not torn by a SIGKILL, so the crash test's killed
//! appenders also make torn writes on purpose: under the ledger's own `flock`, part of a line, a
//! pause, the rest. A kill in the pause leaves a fragment without its newline, as a writer
//! killed mid-line would; sealing it is then the library append's job alone. Their lines are
//! gate lines, whose every strict prefix is grammatically invalid, so `ledger check` can count
//! each fragment as a bad line. The kill moments come from a seed printed by the test.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::FileExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use baton_core::ledger::{Event, parse_ledger, parse_line};
use serde_json::Value;

use crate::common::{TestEnv, at, rules, to_run, without_trees};

const PLAN: &str = "plans/x";
const HEADER: &str = "# run-state — plan: plans/x";
/// The five-line re-include stanza of SPEC §3, the directory line first.
const STANZA: [&str; 5] = [
    "plans/**/*",
    "!plans/**/",
    "!plans/**/plan.md",
    "!plans/**/phase-*.md",
    "!plans/**/STATE.md",
];
/// Bytes of a generated line, without its newline.
const LINE_WIDTH: usize = 100;

fn env_count(name: &str, default: usize) -> usize {
    match std::env::var(name) {
        Ok(raw) => raw
            .parse()
            .unwrap_or_else(|_| panic!("{name}={raw:?} is not a number")),
        Err(_) => default,
    }
}

fn lines_per_writer() -> usize {
    env_count("BATON_LEDGER_LINES", 10_000)
}

fn kills() -> usize {
    env_count("BATON_LEDGER_KILLS", 100)
}

/// SplitMix64, for kill moments and cut points.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

fn clock_seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        ^ u64::from(std::process::id()).rotate_left(32)
}

/// `head`, a space, then a letter chosen by `(writer, index)` up to [`LINE_WIDTH`] bytes: a
/// line whose every byte follows from its id.
fn padded(head: String, writer: usize, index: usize) -> String {
    let fill = char::from(b'a' + ((writer * 7 + index) % 26) as u8);
    let mut line = head;
    line.push(' ');
    while line.len() < LINE_WIDTH {
        line.push(fill);
    }
    line
}

/// Line `index` of concurrent writer `writer`.
fn writer_line(writer: usize, index: usize) -> String {
    padded(
        format!("phase 1: BLOCKED — writer {writer} line {index:06}"),
        writer,
        index,
    )
}

/// Line `index` of the surviving appender of the kill test.
fn survivor_line(index: usize) -> String {
    padded(
        format!("phase 1: BLOCKED — survivor line {index:06}"),
        1000,
        index,
    )
}

/// What every line of a killed appender starts with, before its ids.
const KILLED_PREFIX: &str = "phase 2: gate killed → PASS (evidence: echo killed ";
/// What every line of a killed appender ends with.
const KILLED_TAIL: &str = " → exit 0)";

/// Line `index` of killed appender `k`: a gate line, so that no strict prefix of it is a valid
/// event (a fragment of free text, like a BLOCKED reason cut short, would still parse), with
/// fixed-width ids, so a fragment too short to hold its id can still be matched against the
/// template.
fn killed_line(k: usize, index: usize) -> String {
    let mut line = padded(format!("{KILLED_PREFIX}{k:04} line {index:06}"), k, index);
    line.truncate(LINE_WIDTH - KILLED_TAIL.len());
    line.push_str(KILLED_TAIL);
    line
}

/// The bytes of `killed_line` before its padding.
fn killed_head_len() -> usize {
    KILLED_PREFIX.len() + "0000 line 000000 ".len()
}

/// The line a writer of the CLI variant appends with `baton ledger block`.
fn cli_line(writer: usize, n: usize) -> String {
    format!("phase 9: BLOCKED — cli writer {writer} n {n} @ {}", at(0))
}

/// Where the cut of killed writer `k`'s torn write of line `index` falls: 1 to the line's length
/// minus 1, so the fragment is a strict prefix.
fn cut_point(k: usize, index: usize) -> usize {
    let mut rng = Rng((k as u64) << 32 | index as u64);
    1 + (rng.next() % (LINE_WIDTH as u64 - 1)) as usize
}

/// A plan directory `plans/x` with its ledger started by `baton ledger init`.
fn ledger_env() -> (TestEnv, PathBuf) {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.repo.join(PLAN)).unwrap();
    env.baton("s", 0, &["ledger", "init", PLAN]).assert_code(0);
    let ledger = env.repo.join(PLAN).join("STATE.md");
    assert_eq!(read(&ledger), format!("{HEADER}\n"));
    (env, ledger)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The ledger's lines after the header.
/// The ledger's event lines, each gate result's tree left out (`without_trees`).
fn events_of(path: &Path) -> Vec<String> {
    without_trees(&read(path))
        .lines()
        .skip(1)
        .map(String::from)
        .collect()
}

/// This test binary, re-executed to run [`appender_helper`] as `role`, with the hermetic
/// environment and working directory of `env.command`.
fn appender(
    env: &TestEnv,
    role: &str,
    writer: usize,
    count: usize,
    ledger: &Path,
    control: &Path,
) -> Command {
    let inner = env.command(None, &at(0));
    let mut cmd = crate::common::like(&inner, std::env::current_exe().unwrap());
    cmd.env(
        "BATON_TEST_APPENDER",
        format!("{role},{writer},{count},{}", ledger.display()),
    )
    .env("BATON_TEST_CONTROL", control)
    .args([
        "--exact",
        "ledgers::appender_helper",
        "--nocapture",
        "--test-threads=1",
    ])
    .stdin(Stdio::null());
    cmd
}

/// Waits for `path` to exist (a start barrier or a stop signal).
fn wait_for(path: &Path) {
    let start = Instant::now();
    while !path.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn lib_append(ledger: &Path, line: &str) {
    baton_store::ledger::append(ledger, line, |_| Ok(()))
        .unwrap_or_else(|e| panic!("append {line:?}: {e:?}"));
}

/// A torn write under the ledger's own lock: part of the line, a pause, then the rest with its
/// newline, so a SIGKILL in the pause leaves a fragment without a newline. It never seals a torn
/// tail itself: if the ledger ends in one, the line goes through the library append instead,
/// which must seal it.
fn torn_append(ledger: &Path, line: &str, cut: usize) {
    let mut file = File::options()
        .read(true)
        .append(true)
        .open(ledger)
        .unwrap();
    file.lock().unwrap();
    let len = file.metadata().unwrap().len();
    let mut last = [0u8; 1];
    file.read_exact_at(&mut last, len - 1).unwrap();
    if last[0] != b'\n' {
        drop(file);
        lib_append(ledger, line);
        return;
    }
    let bytes = format!("{line}\n").into_bytes();
    file.write_all(&bytes[..cut]).unwrap();
    std::thread::sleep(Duration::from_micros(300));
    file.write_all(&bytes[cut..]).unwrap();
}

/// Not a test of its own: the appender loop the tests below start as separate processes. Does
/// nothing unless `BATON_TEST_APPENDER` is set.
///
/// Roles: `plain` appends `count` [`writer_line`]s; `cli` does the same and, every
/// `count / CLI_APPENDS` lines, one `baton ledger block` through the real CLI; `survivor`
/// appends [`survivor_line`]s until the stop file exists (then one more), and prints `DONE <n>`;
/// `killed` prints `READY`, then alternates library appends and torn writes of
/// [`killed_line`]s forever, printing `ACK <i>` after each line is whole.
#[test]
fn appender_helper() {
    let Ok(spec) = std::env::var("BATON_TEST_APPENDER") else {
        return;
    };
    let mut parts = spec.splitn(4, ',');
    let role = parts.next().unwrap().to_string();
    let writer: usize = parts.next().unwrap().parse().unwrap();
    let count: usize = parts.next().unwrap().parse().unwrap();
    let ledger = PathBuf::from(parts.next().unwrap());
    let control = PathBuf::from(std::env::var_os("BATON_TEST_CONTROL").unwrap());
    let mut out = std::io::stdout().lock();
    match role.as_str() {
        "plain" | "cli" => {
            wait_for(&control.join("go"));
            let every = (count / CLI_APPENDS).max(1);
            let mut cli = 0;
            for i in 0..count {
                lib_append(&ledger, &writer_line(writer, i));
                if role == "cli" && i % every == 0 && cli < CLI_APPENDS {
                    let reason = format!("cli writer {writer} n {cli}");
                    let plan = ledger.parent().unwrap();
                    let run = to_run(
                        Command::new(env!("CARGO_BIN_EXE_baton"))
                            .args(["ledger", "block"])
                            .arg(plan)
                            .args(["--phase", "9", "--reason", &reason])
                            .output()
                            .unwrap(),
                    );
                    run.assert_code(0);
                    cli += 1;
                }
            }
        }
        "survivor" => {
            let stop = control.join("stop");
            let start = Instant::now();
            let mut i = 0;
            loop {
                assert!(
                    start.elapsed() < Duration::from_secs(300),
                    "the survivor was never stopped"
                );
                let stopping = stop.exists() && i >= count;
                lib_append(&ledger, &survivor_line(i));
                i += 1;
                if stopping {
                    break;
                }
            }
            // The harness prints `test … ... ` without a newline before a test's own output.
            writeln!(out, "\nDONE {i}").unwrap();
        }
        "killed" => {
            writeln!(out, "\nREADY").unwrap();
            out.flush().unwrap();
            // Killed within milliseconds; the bound only stops a runaway if the test is gone.
            for i in 0..KILLED_MAX_LINES {
                let line = killed_line(writer, i);
                if i % 2 == 0 {
                    lib_append(&ledger, &line);
                } else {
                    torn_append(&ledger, &line, cut_point(writer, i));
                }
                writeln!(out, "ACK {i}").unwrap();
                out.flush().unwrap();
            }
        }
        other => panic!("unknown appender role {other:?}"),
    }
}

/// A killed appender that reaches this many lines was never killed: it stops, and the test
/// fails on its clean exit.
const KILLED_MAX_LINES: usize = 50_000;

/// `baton ledger block` calls each appender of the CLI variant makes.
const CLI_APPENDS: usize = 40;

/// Starts `writers` appenders of `role` behind a start barrier, releases them together and
/// waits for all; returns the wall time.
fn run_appenders(
    env: &TestEnv,
    ledger: &Path,
    role: &str,
    writers: usize,
    count: usize,
) -> Duration {
    let control = tempfile::tempdir().unwrap();
    let children: Vec<Child> = (0..writers)
        .map(|w| {
            appender(env, role, w, count, ledger, control.path())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let start = Instant::now();
    std::fs::write(control.path().join("go"), "").unwrap();
    for (w, child) in children.into_iter().enumerate() {
        let run = to_run(child.wait_with_output().unwrap());
        assert_eq!(
            run.code, 0,
            "appender {w} ({role}) failed:\nstdout:\n{}\nstderr:\n{}",
            run.stdout, run.stderr
        );
    }
    start.elapsed()
}

/// Checks every line after the header is one whole line of a concurrent writer (or, with
/// `cli`, of a `baton ledger block` call), byte for byte, that each writer's lines are all
/// there exactly once, and that the writers really interleaved. Returns how often consecutive
/// lines came from different writers.
fn check_concurrent(ledger: &Path, writers: usize, count: usize, cli: bool) -> usize {
    let text = read(ledger);
    assert!(text.ends_with('\n'), "the ledger ends in a torn line");
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some(HEADER), "the header was disturbed");
    let mut seen = vec![vec![false; count]; writers];
    let mut cli_seen = vec![vec![false; CLI_APPENDS]; writers];
    let (mut switches, mut previous) = (0, None);
    for (n, line) in lines.enumerate() {
        let n = n + 2;
        parse_line(line).unwrap_or_else(|e| panic!("line {n} does not parse ({e}): {line:?}"));
        let who = if let Some(rest) = line.strip_prefix("phase 1: BLOCKED — writer ") {
            let mut words = rest.split(' ');
            let w: usize = words.next().unwrap().parse().unwrap();
            let i: usize = words.nth(1).unwrap().parse().unwrap();
            assert!(
                w < writers && i < count,
                "line {n} names writer {w} line {i}: {line:?}"
            );
            assert_eq!(line, writer_line(w, i), "line {n} is torn or interleaved");
            assert!(!seen[w][i], "line {n} is a duplicate: {line:?}");
            seen[w][i] = true;
            w
        } else if cli && let Some(rest) = line.strip_prefix("phase 9: BLOCKED — cli writer ") {
            let mut words = rest.split(' ');
            let w: usize = words.next().unwrap().parse().unwrap();
            let k: usize = words.nth(1).unwrap().parse().unwrap();
            assert!(w < writers && k < CLI_APPENDS, "line {n}: {line:?}");
            assert_eq!(line, cli_line(w, k), "line {n} is torn or interleaved");
            assert!(!cli_seen[w][k], "line {n} is a duplicate: {line:?}");
            cli_seen[w][k] = true;
            w
        } else {
            panic!("line {n} is no writer's line: {line:?}");
        };
        if previous.is_some_and(|p| p != who) {
            switches += 1;
        }
        previous = Some(who);
    }
    for (w, lines) in seen.iter().enumerate() {
        let missing = lines.iter().filter(|s| !**s).count();
        assert_eq!(missing, 0, "writer {w} lost {missing} of its {count} lines");
    }
    if cli {
        for (w, lines) in cli_seen.iter().enumerate() {
            let missing = lines.iter().filter(|s| !**s).count();
            assert_eq!(missing, 0, "writer {w} lost {missing} of its CLI appends");
        }
    }
    switches
}

/// 8 processes append 10,000 lines each to one ledger at once: all 80,000 are there, whole,
/// once each, and every one parses.
#[test]
fn eight_concurrent_appenders_never_tear_interleave_or_lose_a_line() {
    let (env, ledger) = ledger_env();
    let (writers, count) = (8, lines_per_writer());
    let took = run_appenders(&env, &ledger, "plain", writers, count);
    let switches = check_concurrent(&ledger, writers, count, false);
    let total = events_of(&ledger).len();
    assert_eq!(total, writers * count);
    eprintln!(
        "concurrency: {writers} appenders x {count} lines = {total} lines in {:.2} s, {switches} writer switches",
        took.as_secs_f64()
    );
    assert!(
        switches >= writers,
        "the appenders barely overlapped ({switches} switches): the test proves nothing"
    );
    let check = env.baton("s", 1, &["--json", "ledger", "check", PLAN]);
    check.assert_code(0);
    let json = check.json();
    assert_eq!(json["events"], total, "{json}");
    assert_eq!(json["bad"], Value::Array(vec![]), "{json}");
}

/// The same race with real `baton ledger block` calls mixed in (40 per appender): the CLI path
/// takes the same lock, so its lines are as whole as the library's.
#[test]
fn cli_appends_racing_library_appends_stay_whole() {
    let (env, ledger) = ledger_env();
    let (writers, count) = (8, 400);
    let took = run_appenders(&env, &ledger, "cli", writers, count);
    let switches = check_concurrent(&ledger, writers, count, true);
    let total = events_of(&ledger).len();
    assert_eq!(total, writers * (count + CLI_APPENDS));
    eprintln!(
        "concurrency with the CLI: {writers} appenders x ({count} library + {CLI_APPENDS} CLI) = {total} lines in {:.2} s, {switches} writer switches",
        took.as_secs_f64()
    );
}

/// While another holder has the ledger's `flock`, a CLI append waits and writes nothing; it
/// lands whole once the lock is released.
#[test]
fn a_cli_append_waits_for_the_ledger_lock() {
    let (env, ledger) = ledger_env();
    let holder = File::options()
        .read(true)
        .append(true)
        .open(&ledger)
        .unwrap();
    holder.lock().unwrap();
    let before = read(&ledger);
    let mut child = env
        .command(Some("s"), &at(1))
        .args(["ledger", "block", PLAN, "--phase", "1", "--reason", "held"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    let early = child.try_wait().unwrap();
    if early.is_some() {
        let run = to_run(child.wait_with_output().unwrap());
        panic!("`baton ledger block` did not wait for the ledger lock: {run:?}");
    }
    assert_eq!(read(&ledger), before, "written while the lock was held");
    holder.unlock().unwrap();
    let run = to_run(child.wait_with_output().unwrap());
    run.assert_code(0);
    assert_eq!(
        read(&ledger),
        format!("{before}phase 1: BLOCKED — held @ {}\n", at(1))
    );
}

/// A child killed and reaped when dropped, so that a failing test leaves no appender running.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// What one line of the ledger after the kill test is.
#[derive(Debug, PartialEq)]
enum KillLine {
    Survivor(usize),
    Killed(usize, usize),
    /// A strict prefix of a killed writer's line, with that writer when the fragment is long
    /// enough to name it.
    Fragment(Option<usize>),
}

/// Classifies one line (without its newline), or says why it is none of the allowed kinds:
/// a glued line (a fragment with another event after it) is neither a whole line nor a prefix.
fn classify(raw: &[u8], kills: usize) -> Result<KillLine, String> {
    if let Ok(line) = std::str::from_utf8(raw) {
        if let Some(rest) = line.strip_prefix("phase 1: BLOCKED — survivor line ")
            && let Some(i) = rest.get(..6).and_then(|d| d.parse().ok())
            && line == survivor_line(i)
        {
            return Ok(KillLine::Survivor(i));
        }
        if let Some(rest) = line.strip_prefix(KILLED_PREFIX)
            && let (Some(k), Some(i)) = (
                rest.get(..4).and_then(|d| d.parse::<usize>().ok()),
                rest.get(10..16).and_then(|d| d.parse().ok()),
            )
            && k < kills
            && line == killed_line(k, i)
        {
            return Ok(KillLine::Killed(k, i));
        }
    }
    let head = killed_head_len();
    if raw.is_empty() || raw.len() >= LINE_WIDTH {
        return Err("neither a whole line nor a fragment".into());
    }
    if raw.len() >= head {
        let text = std::str::from_utf8(&raw[..head]).map_err(|e| e.to_string())?;
        let rest = text
            .strip_prefix(KILLED_PREFIX)
            .ok_or("not a killed writer's fragment")?;
        let k: usize = rest[..4].parse().map_err(|_| "no writer id")?;
        let i: usize = rest[10..16].parse().map_err(|_| "no line index")?;
        if k >= kills || !killed_line(k, i).as_bytes().starts_with(raw) {
            return Err("not a prefix of a killed writer's line".into());
        }
        return Ok(KillLine::Fragment(Some(k)));
    }
    // Too short to name its writer: a prefix of the template, digits where the ids go.
    let template = killed_line(0, 0);
    let matches = raw
        .iter()
        .zip(template.as_bytes())
        .enumerate()
        .all(|(pos, (b, t))| {
            if *t == b'0' && pos < head {
                b.is_ascii_digit()
            } else {
                b == t
            }
        });
    if matches {
        Ok(KillLine::Fragment(None))
    } else {
        Err("not a prefix of a killed writer's line".into())
    }
}

/// Appenders killed with SIGKILL mid-run, most often in the middle of a torn write under the
/// lock, while one survivor appends throughout: the survivor loses nothing, no acknowledged
/// line of a killed writer is lost, every fragment is sealed by the next append (so no line
/// holds two events glued together), and `baton ledger check` counts the fragments as bad
/// lines without failing.
#[test]
fn sigkilled_appenders_leave_only_sealed_fragments_and_the_survivor_loses_nothing() {
    // The premise: a killed writer's line parses, and no strict prefix of it does, so every
    // fragment is a bad line for `ledger check`.
    let sample = killed_line(3, 7);
    assert_eq!(sample.len(), LINE_WIDTH);
    parse_line(&sample).unwrap();
    for cut in (1..sample.len()).filter(|c| sample.is_char_boundary(*c)) {
        assert!(parse_line(&sample[..cut]).is_err(), "{:?}", &sample[..cut]);
    }
    let (env, ledger) = ledger_env();
    let kills = kills();
    let seed = clock_seed();
    let mut rng = Rng(seed);
    eprintln!("kill test: seed {seed}, {kills} kills");
    let control = tempfile::tempdir().unwrap();
    let mut survivor = Reaped(
        appender(&env, "survivor", 0, 200, &ledger, control.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let start = Instant::now();
    let mut acked: Vec<(usize, usize)> = Vec::new();
    for k in 0..kills {
        let mut child = Reaped(
            appender(&env, "killed", k, 0, &ledger, control.path())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap(),
        );
        let mut stdout = BufReader::new(child.0.stdout.take().unwrap());
        let mut line = String::new();
        loop {
            line.clear();
            let n = stdout.read_line(&mut line).unwrap();
            assert!(n > 0, "seed {seed}: killed appender {k} ended before READY");
            if line.trim_end() == "READY" {
                break;
            }
        }
        std::thread::sleep(Duration::from_micros(rng.next() % 5_000));
        child.0.kill().unwrap();
        let status = child.0.wait().unwrap();
        let mut stderr = String::new();
        child
            .0
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        assert_eq!(
            status.signal(),
            Some(libc::SIGKILL),
            "seed {seed}: killed appender {k} ended by itself: {status:?}\n{stderr}"
        );
        let mut rest = String::new();
        stdout.read_to_string(&mut rest).unwrap();
        acked.extend(
            rest.lines()
                .filter_map(|l| l.strip_prefix("ACK "))
                .map(|i| (k, i.trim().parse().unwrap())),
        );
    }
    std::fs::write(control.path().join("stop"), "").unwrap();
    let mut survivor_out = String::new();
    survivor
        .0
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut survivor_out)
        .unwrap();
    let status = survivor.0.wait().unwrap();
    assert!(
        status.success(),
        "seed {seed}: the survivor failed: {status:?}\n{survivor_out}"
    );
    let took = start.elapsed();
    let written: usize = survivor_out
        .lines()
        .find_map(|l| l.strip_prefix("DONE "))
        .unwrap_or_else(|| panic!("the survivor did not report:\n{survivor_out}"))
        .parse()
        .unwrap();

    let bytes = std::fs::read(&ledger).unwrap();
    assert!(
        bytes.ends_with(b"\n"),
        "seed {seed}: the ledger ends in an unsealed fragment"
    );
    let mut lines = bytes[..bytes.len() - 1].split(|b| *b == b'\n');
    assert_eq!(lines.next(), Some(HEADER.as_bytes()));
    let mut survivor_seen = vec![false; written];
    let mut killed_seen = std::collections::HashSet::new();
    let mut fragment_writers = std::collections::HashSet::new();
    let (mut fragments, mut whole) = (0, 0);
    for (n, raw) in lines.enumerate() {
        let n = n + 2;
        let kind = classify(raw, kills).unwrap_or_else(|why| {
            panic!(
                "seed {seed}: line {n} {why}: {:?}",
                String::from_utf8_lossy(raw)
            )
        });
        match kind {
            KillLine::Survivor(i) => {
                assert!(i < written, "line {n}: survivor line {i} of {written}");
                assert!(!survivor_seen[i], "line {n}: survivor line {i} twice");
                survivor_seen[i] = true;
                whole += 1;
            }
            KillLine::Killed(k, i) => {
                assert!(
                    killed_seen.insert((k, i)),
                    "line {n}: killed {k} line {i} twice"
                );
                whole += 1;
            }
            KillLine::Fragment(k) => {
                if let Some(k) = k {
                    assert!(
                        fragment_writers.insert(k),
                        "seed {seed}: line {n}: killed appender {k} left two fragments"
                    );
                }
                fragments += 1;
            }
        }
        if let KillLine::Survivor(_) | KillLine::Killed(..) = kind {
            let text = std::str::from_utf8(raw).unwrap();
            parse_line(text).unwrap_or_else(|e| panic!("line {n} does not parse ({e})"));
        }
    }
    let lost: Vec<usize> = (0..written).filter(|i| !survivor_seen[*i]).collect();
    assert!(
        lost.is_empty(),
        "seed {seed}: the survivor lost lines {lost:?}"
    );
    let lost_acked: Vec<_> = acked
        .iter()
        .filter(|id| !killed_seen.contains(id))
        .collect();
    assert!(
        lost_acked.is_empty(),
        "seed {seed}: acknowledged lines of killed appenders are missing: {lost_acked:?}"
    );
    eprintln!(
        "kill test: {kills} SIGKILLs in {:.2} s; survivor wrote {written} lines, killed appenders acknowledged {}, {fragments} torn fragments sealed",
        took.as_secs_f64(),
        acked.len()
    );
    if kills >= 20 {
        assert!(
            fragments > 0,
            "seed {seed}: no kill landed in a torn write: the test proves nothing about sealing"
        );
    }

    let check = env.baton("s", 1, &["--json", "ledger", "check", PLAN]);
    check.assert_code(0);
    let json = check.json();
    assert_eq!(json["events"], whole, "{json}");
    assert_eq!(
        json["bad"].as_array().map(Vec::len),
        Some(fragments),
        "every fragment is a bad line: {json}"
    );
    let text = env.baton("s", 1, &["ledger", "check", PLAN]);
    text.assert_code(0);
    assert!(
        text.stdout
            .contains(&format!("{whole} events, {fragments} bad lines")),
        "{}",
        text.stdout
    );
}

// ---------------------------------------------------------------------------------------------
// Derivation

/// A plan `plans/p` whose phase 1 and 2 declare a gate on a marker file and whose phase 3
/// declares none, committed, with its ledger started.
fn derive_env() -> TestEnv {
    let env = TestEnv::new();
    env.write(
        "plans/p/plan.md",
        "# Plan p\n\nThree phases; the gates are in the phase files.\n",
    );
    env.write(
        "plans/p/phase-1.md",
        "# Phase 1\n\n```gates\ntests: test -f phase1.ok → exit 0\n```\n",
    );
    env.write(
        "plans/p/phase-2-api.md",
        "# Phase 2\n\n```gates\ntests: test -f phase2.ok -> exit 0\n```\n",
    );
    env.write(
        "plans/p/phase-3.md",
        "# Phase 3\n\nNo exit gates: checked by hand.\n\n```sh\ntrue → exit 0\n```\n",
    );
    env.git(&["add", "plans"]);
    env.git(&["commit", "--quiet", "-m", "plan p"]);
    env.baton("s", 0, &["ledger", "init", "plans/p"])
        .assert_code(0);
    env
}

/// Records phase `n` started, one commit adding `marker`, and the phase complete.
fn do_phase(env: &TestEnv, n: &str, marker: &str, minute: i64) {
    env.baton("s", minute, &["ledger", "start", "plans/p", "--phase", n])
        .assert_code(0);
    env.write(marker, &format!("phase {n}\n"));
    env.git(&["add", marker]);
    env.git(&["commit", "--quiet", "-m", &format!("phase {n}")]);
    env.baton(
        "s",
        minute,
        &[
            "ledger", "complete", "plans/p", "--phase", n, "--tests", "3/3",
        ],
    )
    .assert_code(0);
}

fn derive(env: &TestEnv, extra: &[&str]) -> Value {
    let mut args = vec!["--json", "ledger", "derive", "plans/p"];
    args.extend_from_slice(extra);
    let run = env.baton("s", 9, &args);
    run.assert_code(0);
    run.json()
}

/// `(phase, verdict)` of every row.
fn verdicts(json: &Value) -> Vec<(String, String)> {
    json["rows"]
        .as_array()
        .unwrap_or_else(|| panic!("no rows: {json}"))
        .iter()
        .map(|r| {
            (
                r["phase"].as_str().unwrap().to_string(),
                r["verdict"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn pairs(rows: &[(&str, &str)]) -> Vec<(String, String)> {
    rows.iter()
        .map(|(p, v)| (p.to_string(), v.to_string()))
        .collect()
}

fn ledger_p(env: &TestEnv) -> PathBuf {
    env.repo.join("plans/p/STATE.md")
}

/// Phase 1 (gate passes) CONFIRMED, phase 3 (no gates) STALE; phase 2, whose gate fails now,
/// CONTRADICTED and the resume point; `--append` writes exactly the resumed line; `--no-gates`
/// confirms nothing; without `--append` nothing is written.
#[test]
fn derive_confirms_passing_phases_and_reopens_one_whose_gate_fails_now() {
    let env = derive_env();
    do_phase(&env, "1", "phase1.ok", 1);
    do_phase(&env, "2", "phase2.ok", 2);
    do_phase(&env, "3", "phase3.md", 3);
    let ledger = ledger_p(&env);
    let before = read(&ledger);

    let all = derive(&env, &[]);
    assert_eq!(
        verdicts(&all),
        pairs(&[("1", "CONFIRMED"), ("2", "CONFIRMED"), ("3", "STALE")]),
        "{all}"
    );
    assert_eq!(all["confirmed"], 2, "{all}");
    assert_eq!(all["resume_at"], "3", "{all}");
    assert_eq!(all["rows"][0]["claim"], "complete", "{all}");
    assert_eq!(all["rows"][0]["gates"], "tests PASS", "{all}");
    assert_eq!(all["rows"][2]["gates"], "none declared", "{all}");
    assert_eq!(read(&ledger), before, "derive without --append wrote");

    // Phase 2's gate fails now (its marker was removed by a later commit; its own commits are
    // still there). The tree is clean, so a passing gate still confirms.
    env.git(&["rm", "--quiet", "phase2.ok"]);
    env.git(&["commit", "--quiet", "-m", "drop phase 2's marker"]);
    let broken = derive(&env, &[]);
    assert_eq!(
        verdicts(&broken),
        pairs(&[("1", "CONFIRMED"), ("2", "CONTRADICTED"), ("3", "STALE")]),
        "{broken}"
    );
    assert_eq!(broken["resume_at"], "2", "{broken}");
    assert_eq!(broken["confirmed"], 1, "{broken}");
    assert_eq!(broken["rows"][1]["gates"], "tests FAIL", "{broken}");
    let why = broken["rows"][1]["why"].as_str().unwrap();
    assert!(why.contains("fails now"), "{broken}");
    let table = env.baton("s", 9, &["ledger", "derive", "plans/p"]);
    table.assert_code(0);
    assert!(
        table
            .stdout
            .contains("phase · ledger claim · gate re-run · verdict\n"),
        "{}",
        table.stdout
    );
    assert!(
        table
            .stdout
            .contains("2 · complete · tests FAIL · CONTRADICTED\n"),
        "{}",
        table.stdout
    );
    assert_eq!(read(&ledger), before, "derive without --append wrote");

    // --no-gates: nothing can be confirmed.
    let stale = derive(&env, &["--no-gates"]);
    assert_eq!(
        verdicts(&stale),
        pairs(&[("1", "STALE"), ("2", "STALE"), ("3", "STALE")]),
        "{stale}"
    );
    assert_eq!(stale["confirmed"], 0, "{stale}");
    assert_eq!(stale["resume_at"], "1", "{stale}");
    assert_eq!(stale["rows"][0]["gates"], "not run", "{stale}");

    // --append: exactly one line, the resume point with the count of confirmed phases.
    let appended = derive(&env, &["--append"]);
    assert_eq!(appended["resume_at"], "2", "{appended}");
    assert_eq!(
        read(&ledger),
        format!(
            "{before}phase 2: resumed (derived from ledger + gates, 1 phases confirmed) @ {}\n",
            at(9)
        )
    );
    // The resumed line does not take the claims back.
    assert_eq!(
        verdicts(&derive(&env, &[])),
        pairs(&[("1", "CONFIRMED"), ("2", "CONTRADICTED"), ("3", "STALE")])
    );
}

/// Phase 2 complete, then its commit rewritten away (`git reset --hard HEAD~1` and a new
/// commit that makes its gate pass again): CONTRADICTED for the unreachable commit.
#[test]
fn derive_contradicts_a_phase_whose_commits_were_rewritten_away() {
    let env = derive_env();
    do_phase(&env, "1", "phase1.ok", 1);
    do_phase(&env, "2", "phase2.ok", 2);
    assert_eq!(
        verdicts(&derive(&env, &[])),
        pairs(&[("1", "CONFIRMED"), ("2", "CONFIRMED"), ("3", "OPEN")]),
        "phase 3 is declared by its phase file, never started: open work"
    );
    env.git(&["reset", "--quiet", "--hard", "HEAD~1"]);
    env.write("phase2.ok", "rewritten\n");
    env.git(&["add", "phase2.ok"]);
    env.git(&["commit", "--quiet", "-m", "phase 2, rewritten"]);
    let json = derive(&env, &[]);
    assert_eq!(
        verdicts(&json),
        pairs(&[("1", "CONFIRMED"), ("2", "CONTRADICTED"), ("3", "OPEN")]),
        "{json}"
    );
    assert_eq!(
        json["rows"][1]["gates"], "tests PASS",
        "the gate passes: only the history refutes the claim: {json}"
    );
    assert!(
        json["rows"][1]["why"]
            .as_str()
            .unwrap()
            .contains("not reachable"),
        "{json}"
    );
    assert_eq!(json["resume_at"], "2", "{json}");
    assert_eq!(json["confirmed"], 1, "{json}");
}

/// A phase claimed complete with no gates declared anywhere (no phase file at all) is STALE,
/// and being the first phase, the resume point: nothing unconfirmed is skipped.
#[test]
fn derive_calls_a_claim_without_gates_stale() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.repo.join("plans/p")).unwrap();
    env.baton("s", 0, &["ledger", "init", "plans/p"])
        .assert_code(0);
    do_phase(&env, "1", "one.txt", 1);
    let json = derive(&env, &[]);
    assert_eq!(verdicts(&json), pairs(&[("1", "STALE")]), "{json}");
    assert_eq!(json["resume_at"], "1", "{json}");
    assert_eq!(json["confirmed"], 0, "{json}");
    let before = read(&ledger_p(&env));
    derive(&env, &["--append"]);
    assert_eq!(
        read(&ledger_p(&env)),
        format!(
            "{before}phase 1: resumed (derived from ledger + gates, 0 phases confirmed) @ {}\n",
            at(9)
        )
    );
}

// ---------------------------------------------------------------------------------------------
// check, append, writers

/// Asserts that `text` holds the five lines of the stanza exactly once, consecutive and in
/// order.
fn assert_stanza_once(text: &str) {
    let lines: Vec<&str> = text.lines().collect();
    let starts: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| **l == STANZA[0])
        .map(|(i, _)| i)
        .collect();
    assert_eq!(starts.len(), 1, "the stanza must appear once:\n{text}");
    let i = starts[0];
    assert_eq!(
        lines.get(i..i + 5),
        Some(&STANZA[..]),
        "the stanza's five lines, in order:\n{text}"
    );
    for line in &STANZA[1..] {
        assert_eq!(
            lines.iter().filter(|l| *l == line).count(),
            1,
            "{line} repeated:\n{text}"
        );
    }
}

/// An ignored ledger: `ledger check` prints the five-line re-include stanza once and still
/// exits 0; with the stanza as the .gitignore, it does not warn.
#[test]
fn check_warns_once_with_the_exact_stanza_when_git_ignores_the_ledger() {
    let (env, _) = ledger_env();
    env.write(".gitignore", "target/\nplans/\n");
    let run = env.baton("s", 1, &["ledger", "check", PLAN]);
    run.assert_code(0);
    let all = format!("{}{}", run.stdout, run.stderr);
    assert_stanza_once(&all);
    assert_eq!(all.matches("warning: git ignores").count(), 1, "{all}");
    let json = env.baton("s", 1, &["--json", "ledger", "check", PLAN]);
    json.assert_code(0);
    assert_eq!(json.json()["ignored"], true);
    // `init` of a new ledger under the ignore warns the same way, once.
    std::fs::create_dir_all(env.repo.join("plans/y")).unwrap();
    let init = env.baton("s", 1, &["ledger", "init", "plans/y"]);
    init.assert_code(0);
    assert_stanza_once(&format!("{}{}", init.stdout, init.stderr));

    env.write(".gitignore", &format!("target/\n{}\n", STANZA.join("\n")));
    let run = env.baton("s", 1, &["ledger", "check", PLAN]);
    run.assert_code(0);
    let all = format!("{}{}", run.stdout, run.stderr);
    assert!(!all.contains("warning"), "{all}");
    assert!(!all.contains(STANZA[0]), "{all}");
    assert_eq!(
        env.baton("s", 1, &["--json", "ledger", "check", PLAN])
            .json()["ignored"],
        false
    );
    // The stanza really re-includes the plan files and the ledger.
    let listed = env.git(&["status", "--porcelain", "--untracked-files=all"]);
    assert!(listed.contains("plans/x/STATE.md"), "{listed}");
}

/// An ignored ledger cannot be committed: `ledger commit` refuses (exit 2) with the stanza.
#[test]
fn commit_refuses_an_ignored_ledger_and_names_the_fix() {
    let (env, _) = ledger_env();
    env.write(".gitignore", "plans/\n");
    let head = env.git(&["rev-parse", "HEAD"]);
    let run = env.baton("s", 1, &["ledger", "commit", PLAN]);
    run.assert_code(2);
    assert_stanza_once(&format!("{}{}", run.stdout, run.stderr));
    assert_eq!(env.git(&["rev-parse", "HEAD"]), head);
}

/// `ledger check` counts bad lines and shows them, never failing on them, and flags a missing
/// header.
#[test]
fn check_counts_and_shows_bad_lines_without_failing() {
    let (env, ledger) = ledger_env();
    let mut f = File::options().append(true).open(&ledger).unwrap();
    f.write_all(
        "phase 1: started (base abc1234)\nnot an event\nphase 1: gate t → PASS (evidence:  → exit 0)\nphase 1: BLOCKED — x\n"
            .as_bytes(),
    )
    .unwrap();
    let run = env.baton("s", 1, &["--json", "ledger", "check", PLAN]);
    run.assert_code(0);
    let json = run.json();
    assert_eq!(json["events"], 2, "{json}");
    let bad: Vec<u64> = json["bad"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["line"].as_u64().unwrap())
        .collect();
    assert_eq!(bad, [3, 4], "{json}");
    assert_eq!(json["header"], "ok", "{json}");
    let text = env.baton("s", 1, &["ledger", "check", PLAN]);
    text.assert_code(0);
    assert!(
        text.stdout.contains("2 events, 2 bad lines"),
        "{}",
        text.stdout
    );
    assert!(text.stdout.contains("not an event"), "{}", text.stdout);
}

/// A raw append validates the line: invalid ones exit 2 and write nothing, `->` is accepted,
/// and a gate line without its command is refused.
#[test]
fn append_validates_the_line_against_the_grammar() {
    let (env, ledger) = ledger_env();
    let invalid = [
        "random prose",
        "phase 1: done",
        "phase 1: gate tests → PASS",
        "phase 1: gate tests → PASS (evidence:  → exit 0)",
        "phase 1: gate tests -> PASS (evidence:  -> exit 0)",
        "phase 1: gate tests → MAYBE (evidence: cargo test → exit 0)",
        "phase 1: started (base nothex!)",
        "phase 1: BLOCKED — a\nphase 1: BLOCKED — b",
        "# run-state — plan: plans/other",
        "",
    ];
    for line in invalid {
        let before = std::fs::read(&ledger).unwrap();
        let run = env.baton("s", 1, &["ledger", "append", PLAN, line]);
        assert_eq!(run.code, 2, "{line:?} was not refused as usage: {run:?}");
        assert_eq!(
            std::fs::read(&ledger).unwrap(),
            before,
            "{line:?} was refused but something was written"
        );
    }
    assert_eq!(events_of(&ledger), Vec::<String>::new());

    let arrows = "phase 1: gate tests -> PASS (evidence: cargo test -> exit 0: ok)";
    env.baton("s", 1, &["ledger", "append", PLAN, arrows])
        .assert_code(0);
    let env_line = "env: model fallback opus->sonnet -- 529 overloaded";
    env.baton("s", 1, &["ledger", "append", PLAN, env_line])
        .assert_code(0);
    let written = events_of(&ledger);
    assert_eq!(written.len(), 2, "{written:?}");
    assert_eq!(
        parse_line(&written[0]).unwrap().event,
        Event::Gate {
            phase: "1".into(),
            name: "tests".into(),
            pass: true,
            cmd: "cargo test".into(),
            result: "exit 0: ok".into(),
        },
        "{written:?}"
    );
    assert_eq!(
        parse_line(&written[1]).unwrap().event,
        parse_line(env_line).unwrap().event,
        "{written:?}"
    );
}

/// The ten structured writers each append one line that `ledger check` counts as valid, in
/// the order written, stamped with the time; values that would not read back are refused.
#[test]
fn every_structured_writer_writes_a_valid_line() {
    let (env, ledger) = ledger_env();
    let writers: [&[&str]; 10] = [
        &["start", PLAN, "--phase", "1"],
        &[
            "gate",
            PLAN,
            "--phase",
            "1",
            "--name",
            "tests",
            "--pass",
            "--cmd",
            "cargo test",
            "--result",
            "exit 0: ok",
        ],
        &["complete", PLAN, "--phase", "1", "--tests", "41/42"],
        &[
            "park",
            PLAN,
            "--phase",
            "1",
            "--finding",
            "flaky test in CI",
            "--ruling",
            "out of scope",
        ],
        &[
            "block",
            PLAN,
            "--phase",
            "2",
            "--reason",
            "waiting for the API key",
        ],
        &["died", PLAN, "--phase", "2"],
        &[
            "waiver",
            PLAN,
            "--phase",
            "2",
            "--rule",
            "no-new-deps",
            "--who",
            "approved by alice / vendored",
        ],
        &["baseline", PLAN, "--tests", "40/42"],
        &[
            "env",
            PLAN,
            "--from",
            "opus",
            "--to",
            "sonnet",
            "--reason",
            "529 overloaded",
        ],
        &["finish", PLAN, "--step", "changelog", "--outcome", "done"],
    ];
    for (n, args) in writers.iter().enumerate() {
        if args[0] == "complete" {
            // A phase is complete with its work committed.
            env.write("work.txt", "phase 1\n");
            env.git(&["add", "work.txt"]);
            env.git(&["commit", "--quiet", "-m", "phase 1"]);
        }
        let mut full = vec!["ledger"];
        full.extend_from_slice(args);
        env.baton("s", n as i64, &full).assert_code(0);
    }
    let check = env.baton("s", 20, &["--json", "ledger", "check", PLAN]);
    check.assert_code(0);
    let json = check.json();
    assert_eq!(json["events"], 10, "{json}");
    assert_eq!(json["bad"], Value::Array(vec![]), "{json}");
    assert_eq!(json["header"], "ok", "{json}");
    let parsed = parse_ledger(&read(&ledger));
    assert!(parsed.bad.is_empty(), "{:?}", parsed.bad);
    let kinds: Vec<&str> = parsed.events.iter().map(|(_, l)| l.event.kind()).collect();
    assert_eq!(
        kinds,
        [
            "started",
            "gate",
            "complete",
            "parked",
            "blocked",
            "agent-died",
            "waiver",
            "baseline",
            "env",
            "finish"
        ]
    );
    for (n, (_, line)) in parsed.events.iter().enumerate() {
        assert_eq!(line.at.as_deref(), Some(at(n as i64).as_str()), "{line:?}");
    }
    // The phase started before its commit.
    let head = env.git(&["rev-parse", "--short=7", "HEAD~1"]);
    assert_eq!(
        parsed.events[0].1.event,
        Event::Started {
            phase: "1".into(),
            base: head.trim().into()
        }
    );

    // Values that would not read back as written are refused, and nothing is written.
    let before = std::fs::read(&ledger).unwrap();
    let refused: [&[&str]; 5] = [
        &[
            "gate", PLAN, "--phase", "1", "--name", "tests", "--pass", "--cmd", "  ", "--result",
            "exit 0",
        ],
        &[
            "gate", PLAN, "--phase", "1", "--name", "tests", "--fail", "--cmd", "", "--result",
            "exit 1",
        ],
        &[
            "park",
            PLAN,
            "--phase",
            "1",
            "--finding",
            "a — b",
            "--ruling",
            "x",
        ],
        &["block", PLAN, "--phase", "1", "--reason", "two\nlines"],
        &["block", PLAN, "--phase", "1 2", "--reason", "x"],
    ];
    for args in refused {
        let mut full = vec!["ledger"];
        full.extend_from_slice(args);
        let run = env.baton("s", 30, &full);
        assert_eq!(run.code, 2, "{args:?} was not refused: {run:?}");
        assert_eq!(std::fs::read(&ledger).unwrap(), before, "{args:?} wrote");
    }
}

// ---------------------------------------------------------------------------------------------
// A ledger of another plan

/// A ledger whose header names another plan is another run's record: `append`, `init`, every
/// writer, `gate run` and `derive --append` exit 3 and write nothing.
#[test]
fn a_ledger_naming_another_plan_is_never_written() {
    let env = TestEnv::new();
    env.write("plans/x/phase-1.md", "```gates\nok: true → exit 0\n```\n");
    let foreign = "# run-state — plan: plans/other/plan.md\nphase 1: started (base abc1234)\n";
    env.write("plans/x/STATE.md", foreign);
    let ledger = env.repo.join("plans/x/STATE.md");
    let attempts: [&[&str]; 15] = [
        &["ledger", "append", PLAN, "phase 1: BLOCKED — x"],
        &["ledger", "init", PLAN],
        &["ledger", "start", PLAN, "--phase", "1"],
        &[
            "ledger", "gate", PLAN, "--phase", "1", "--name", "t", "--pass", "--cmd", "true",
            "--result", "exit 0",
        ],
        &[
            "ledger",
            "complete",
            PLAN,
            "--phase",
            "1",
            "--commits",
            "abc1234..abc1234",
            "--tests",
            "1/1",
        ],
        &[
            "ledger",
            "park",
            PLAN,
            "--phase",
            "1",
            "--finding",
            "f",
            "--ruling",
            "r",
        ],
        &["ledger", "block", PLAN, "--phase", "1", "--reason", "r"],
        &["ledger", "died", PLAN, "--phase", "1"],
        &[
            "ledger", "waiver", PLAN, "--phase", "1", "--rule", "r", "--who", "w",
        ],
        &["ledger", "baseline", PLAN, "--tests", "1/1"],
        &[
            "ledger", "env", PLAN, "--from", "a", "--to", "b", "--reason", "r",
        ],
        &["ledger", "finish", PLAN, "--step", "s", "--outcome", "done"],
        &["gate", "run", PLAN, "--phase", "1"],
        &["ledger", "derive", PLAN, "--append"],
        &["ledger", "derive", PLAN, "--append", "--no-gates"],
    ];
    for args in attempts {
        let mut full = vec!["--json"];
        full.extend_from_slice(args);
        let run = env.baton("s", 1, &full);
        assert_eq!(run.code, 3, "{args:?} was not refused: {run:?}");
        let json = run.json();
        assert_eq!(json["verdict"], "refused", "{args:?}: {json}");
        assert_eq!(
            json["reasons"][0]["rule"], "ledger.foreign-plan",
            "{args:?}: {json}"
        );
        assert_eq!(
            read(&ledger),
            foreign,
            "{args:?} wrote to another run's record"
        );
    }
    // Reading it is fine, and says whose it is.
    let check = env.baton("s", 1, &["--json", "ledger", "check", PLAN]);
    check.assert_code(0);
    assert_eq!(check.json()["header"], "foreign");
}

// ---------------------------------------------------------------------------------------------
// gate run

/// `gate run` appends one line per gate with verbatim evidence, exits 3 when one fails, hands
/// the gate BATON_PHASE and friends, and `--gate` runs one gate only.
#[test]
fn gate_run_records_verbatim_evidence_and_fails_on_a_failing_gate() {
    let (env, ledger) = ledger_env();
    env.write(
        "plans/x/phase-1-setup.md",
        "# Phase 1\n\n```gates\nok: true → exit 0\nboom: echo first; echo boom >&2; exit 4 → exit 0\nabsent: test -f nope -> exit 1\nwho: echo \"$BATON_PHASE $BATON_GATE $BATON_PLAN_DIR\" → exit 0\n```\n",
    );
    // Another phase's file is not read for phase 1.
    env.write(
        "plans/x/phase-10.md",
        "```gates\nten: false → exit 0\n```\n",
    );
    let run = env.baton("s", 1, &["gate", "run", PLAN, "--phase", "1"]);
    // A failed gate is a verdict, recorded: exit 0, and the verdict says fail.
    run.assert_code(0);
    assert!(run.stdout.contains("verdict: fail"), "{}", run.stdout);
    let ts = at(1);
    let expected = [
        format!("phase 1: gate ok → PASS (evidence: true → exit 0) @ {ts}"),
        format!(
            "phase 1: gate boom → FAIL (evidence: echo first; echo boom >&2; exit 4 → exit 4: boom) @ {ts}"
        ),
        format!("phase 1: gate absent → PASS (evidence: test -f nope → exit 1) @ {ts}"),
        format!(
            "phase 1: gate who → PASS (evidence: echo \"$BATON_PHASE $BATON_GATE $BATON_PLAN_DIR\" → exit 0: 1 who plans/x) @ {ts}"
        ),
    ];
    assert_eq!(events_of(&ledger), expected, "stdout:\n{}", run.stdout);
    for line in &expected {
        assert!(
            without_trees(&run.stdout).contains(line.as_str()),
            "{}",
            run.stdout
        );
    }

    // --gate: only that gate, and all pass: exit 0.
    let only = env.baton(
        "s",
        2,
        &[
            "--json", "gate", "run", PLAN, "--phase", "1", "--gate", "who",
        ],
    );
    only.assert_code(0);
    assert_eq!(only.json()["verdict"], "pass");
    let after = events_of(&ledger);
    assert_eq!(after.len(), 5, "{after:?}");
    assert_eq!(
        after[4],
        format!(
            "phase 1: gate who → PASS (evidence: echo \"$BATON_PHASE $BATON_GATE $BATON_PLAN_DIR\" → exit 0: 1 who plans/x) @ {}",
            at(2)
        )
    );
    let failing = env.baton(
        "s",
        3,
        &["gate", "run", PLAN, "--phase", "1", "--gate", "boom"],
    );
    failing.assert_code(0);
    assert!(failing.stdout.contains("verdict: fail"));
    assert_eq!(events_of(&ledger).len(), 6);

    // Gates are declared per phase: phase 10 runs its own, no others.
    env.baton("s", 4, &["gate", "run", PLAN, "--phase", "10"])
        .assert_code(0);
    let all = events_of(&ledger);
    assert_eq!(
        all.last().unwrap(),
        &format!(
            "phase 10: gate ten → FAIL (evidence: false → exit 1) @ {}",
            at(4)
        )
    );
    assert_eq!(all.len(), 7);

    // No such gate, or no gates at all: usage, nothing written.
    let before = read(&ledger);
    env.baton(
        "s",
        5,
        &["gate", "run", PLAN, "--phase", "1", "--gate", "nope"],
    )
    .assert_code(2);
    env.baton("s", 5, &["gate", "run", PLAN, "--phase", "7"])
        .assert_code(2);
    assert_eq!(read(&ledger), before);
}

/// A gate past `--timeout` is killed, with the processes it started, and recorded as failed,
/// long before it would have ended.
#[test]
fn gate_run_honours_the_timeout() {
    let (env, ledger) = ledger_env();
    env.write(
        "plans/x/phase-2.md",
        "```gates\nslow: sleep 30 → exit 0\ngroup: sleep 30 & echo $! > bg.pid; wait → exit 0\n```\n",
    );
    let start = Instant::now();
    let run = env.baton(
        "s",
        1,
        &["gate", "run", PLAN, "--phase", "2", "--timeout", "1"],
    );
    let took = start.elapsed();
    run.assert_code(0);
    assert!(took < Duration::from_secs(10), "the run took {took:?}");
    assert_eq!(
        events_of(&ledger),
        [
            format!(
                "phase 2: gate slow → FAIL (evidence: sleep 30 → timed out after 1s) @ {}",
                at(1)
            ),
            format!(
                "phase 2: gate group → FAIL (evidence: sleep 30 & echo $! > bg.pid; wait → timed out after 1s) @ {}",
                at(1)
            ),
        ]
    );
    // The gate's background child went with it (gone, or a zombie nobody reaped yet).
    let pid = read(&env.repo.join("bg.pid")).trim().to_string();
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let alive = match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Ok(stat) => !stat
                .rsplit_once(") ")
                .is_some_and(|(_, rest)| rest.starts_with('Z')),
            Err(_) => false,
        };
        if !alive {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the gate's background `sleep 30` (pid {pid}) outlived its timeout"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// docs/ledger.md: "the expectation is after the last arrow, so a command may hold arrows
/// itself", and `gate run` appends each result verbatim. A declared gate whose command holds an
/// arrow must therefore be recorded, and read back as the same command and result.
#[test]
fn gate_run_records_a_gate_whose_command_holds_an_arrow() {
    let (env, ledger) = ledger_env();
    env.write(
        "plans/x/phase-1.md",
        "```gates\nflow: echo a → b → exit 0\n```\n",
    );
    let run = env.baton("s", 1, &["gate", "run", PLAN, "--phase", "1"]);
    run.assert_code(0);
    let lines = events_of(&ledger);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(
        parse_line(&lines[0]).unwrap().event,
        Event::Gate {
            phase: "1".into(),
            name: "flow".into(),
            pass: true,
            cmd: "echo a → b".into(),
            result: "exit 0: a → b".into(),
        }
    );
}

/// The ledger is never opened through a link: a `STATE.md` symlink is refused and its target
/// left alone.
#[test]
fn a_symlinked_ledger_is_never_written_through() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.repo.join(PLAN)).unwrap();
    let target = env.repo.join("elsewhere.md");
    std::fs::write(&target, format!("{HEADER}\n")).unwrap();
    std::os::unix::fs::symlink(&target, env.repo.join(PLAN).join("STATE.md")).unwrap();
    for args in [
        vec!["ledger", "append", PLAN, "phase 1: BLOCKED — x"],
        vec!["ledger", "block", PLAN, "--phase", "1", "--reason", "x"],
    ] {
        let run = env.baton("s", 1, &args);
        assert_ne!(run.code, 0, "{args:?} wrote through a symlink: {run:?}");
        assert_eq!(read(&target), format!("{HEADER}\n"), "{args:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// commit

/// `ledger commit` commits the ledger and nothing else: another staged file stays staged; the
/// message names the last phase.
#[test]
fn commit_commits_only_the_ledger() {
    let (env, ledger) = ledger_env();
    env.baton("s", 1, &["ledger", "start", PLAN, "--phase", "1"])
        .assert_code(0);
    env.baton(
        "s",
        2,
        &["ledger", "block", PLAN, "--phase", "2", "--reason", "x"],
    )
    .assert_code(0);
    env.baton("s", 3, &["ledger", "baseline", PLAN, "--tests", "1/1"])
        .assert_code(0);
    env.write("other.txt", "staged, not the ledger's\n");
    env.git(&["add", "other.txt"]);
    env.write("README.md", "# changed, unstaged\n");
    let parent = env.git(&["rev-parse", "HEAD"]);

    let run = env.baton("s", 4, &["--json", "ledger", "commit", PLAN]);
    run.assert_code(0);
    let files = env.git(&["show", "--name-only", "--format=", "HEAD"]);
    assert_eq!(files.trim(), "plans/x/STATE.md");
    let subject = env.git(&["log", "-1", "--format=%s"]);
    assert!(subject.contains("phase 2"), "message: {subject}");
    assert_eq!(run.json()["message"], subject.trim());
    assert_eq!(env.git(&["rev-parse", "HEAD~1"]), parent);
    assert_eq!(
        env.git(&["show", "HEAD:plans/x/STATE.md"]),
        read(&ledger),
        "the committed ledger is the file"
    );
    assert_eq!(
        env.git(&["diff", "--cached", "--name-only"]).trim(),
        "other.txt",
        "the other staged file must stay staged"
    );
    assert_eq!(
        env.git(&["diff", "--name-only"]).trim(),
        "README.md",
        "the unstaged change must stay unstaged"
    );
}

/// Plan directories outside the project, as `../x` or through a symlink, exit 2 and touch
/// nothing.
#[test]
fn plan_directories_outside_the_project_are_refused() {
    let (env, _) = ledger_env();
    let outside = env.repo.parent().unwrap().join("x");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("STATE.md"), "# run-state — plan: ../x\n").unwrap();
    std::os::unix::fs::symlink(&outside, env.repo.join("plans/out")).unwrap();
    let fresh = env.repo.parent().unwrap().join("y");
    std::fs::create_dir_all(&fresh).unwrap();
    let head = env.git(&["rev-parse", "HEAD"]);
    for plan in ["../x", "plans/out"] {
        for args in [
            vec!["ledger", "commit", plan],
            vec!["ledger", "append", plan, "phase 1: BLOCKED — x"],
            vec!["ledger", "block", plan, "--phase", "1", "--reason", "x"],
            vec!["ledger", "check", plan],
        ] {
            let run = env.baton("s", 1, &args);
            assert_eq!(run.code, 2, "{args:?}: {run:?}");
        }
    }
    env.baton("s", 1, &["ledger", "init", "../y"])
        .assert_code(2);
    assert!(
        !fresh.join("STATE.md").exists(),
        "init wrote outside the project"
    );
    assert_eq!(
        read(&outside.join("STATE.md")),
        "# run-state — plan: ../x\n"
    );
    assert_eq!(env.git(&["rev-parse", "HEAD"]), head);
}

// Regressions, each named after the defect it pins.

#[test]
fn a_tracked_ledger_is_not_reported_as_ignored() {
    let (env, _) = ledger_env();
    env.write(".gitignore", "plans/\n");
    env.git(&["add", "-f", "plans/x/STATE.md", ".gitignore"]);
    env.git(&["commit", "--quiet", "-m", "ledger"]);
    let out = env.baton("s", 1, &["--json", "ledger", "check", PLAN]);
    assert_eq!(out.json()["ignored"], false, "{}", out.stdout);
    env.baton(
        "s",
        1,
        &["ledger", "block", PLAN, "--phase", "1", "--reason", "x"],
    )
    .assert_code(0);
    env.baton("s", 1, &["ledger", "commit", PLAN])
        .assert_code(0);
}

#[test]
fn a_refused_ledger_commit_leaves_the_index_as_it_was() {
    let (env, _) = ledger_env();
    let hook = env.repo.join(".git/hooks/pre-commit");
    std::fs::write(&hook, "#!/bin/sh\nexit 1\n").unwrap();
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let before = env.git(&["status", "--porcelain"]);
    env.baton("s", 1, &["ledger", "commit", PLAN])
        .assert_code(1);
    assert_eq!(env.git(&["status", "--porcelain"]), before);
}

#[test]
fn the_ledgers_own_appends_do_not_make_the_tree_dirty() {
    let (env, _) = ledger_env();
    env.git(&["add", "."]);
    env.git(&["commit", "--quiet", "-m", "ledger"]);
    env.baton(
        "s",
        1,
        &["ledger", "block", PLAN, "--phase", "1", "--reason", "x"],
    )
    .assert_code(0);
    let out = env.baton("s", 1, &["--json", "ledger", "derive", PLAN, "--no-gates"]);
    assert_eq!(out.json()["tree_dirty"], false, "{}", out.stdout);
}

#[test]
fn a_gate_that_cannot_be_recorded_is_never_run() {
    let (env, ledger) = ledger_env();
    env.write(
        "plans/x/phase-1.md",
        "```gates\nfirst: touch ran-first → exit 0\narrow: echo \"a → exit 1\" → exit 0\n```\n",
    );
    let before = read(&ledger);
    env.baton("s", 1, &["gate", "run", PLAN, "--phase", "1"])
        .assert_code(2);
    assert!(!env.repo.join("ran-first").exists(), "no gate ran");
    assert_eq!(read(&ledger), before);
}

#[test]
fn the_project_root_and_gits_own_directory_are_no_plan_directories() {
    let env = TestEnv::new();
    env.baton("s", 0, &["ledger", "init", "."]).assert_code(2);
    env.baton("s", 0, &["ledger", "init", ".git"])
        .assert_code(2);
    assert!(!env.repo.join("STATE.md").exists());
}

#[test]
fn writers_refuse_a_commit_the_repository_does_not_have() {
    let (env, ledger) = ledger_env();
    let before = read(&ledger);
    env.baton(
        "s",
        1,
        &["ledger", "start", PLAN, "--phase", "1", "--base", "0000000"],
    )
    .assert_code(2);
    env.baton(
        "s",
        1,
        &[
            "ledger",
            "complete",
            PLAN,
            "--phase",
            "1",
            "--commits",
            "deadbee..deadbee",
            "--tests",
            "1/1",
        ],
    )
    .assert_code(2);
    assert_eq!(read(&ledger), before);
}

#[test]
fn a_declared_phase_the_ledger_never_names_is_the_resume_point() {
    let (env, _) = ledger_env();
    env.write("plans/x/phase-1.md", "```gates\nok: true → exit 0\n```\n");
    env.write("plans/x/phase-2.md", "```gates\nok: true → exit 0\n```\n");
    env.git(&["add", "."]);
    env.git(&["commit", "--quiet", "-m", "plan"]);
    env.baton("s", 1, &["ledger", "start", PLAN, "--phase", "1"])
        .assert_code(0);
    env.write("src.txt", "phase 1's work\n");
    env.git(&["add", "src.txt"]);
    env.git(&["commit", "--quiet", "-m", "phase 1"]);
    env.baton(
        "s",
        1,
        &["ledger", "complete", PLAN, "--phase", "1", "--tests", "1/1"],
    )
    .assert_code(0);
    let out = env
        .baton("s", 2, &["--json", "ledger", "derive", PLAN])
        .json();
    assert_eq!(out["resume_at"], "2", "{out}");
    assert_eq!(out["verdict"], "resume");
    assert!(
        out["reasons"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["rule"] == "ledger.not-started"),
        "{out}"
    );
}

/// Commits the ledger of `plans/p` as it stands.
fn commit_ledger(env: &TestEnv, message: &str) {
    env.git(&["add", "plans/p/STATE.md"]);
    env.git(&["commit", "--quiet", "-m", message]);
}

#[test]
fn appends_on_two_machines_merge_by_union_and_derive_the_same_either_way() {
    let env = derive_env();
    // `baton init` puts the union merge rule for ledgers in .gitattributes.
    env.baton("s", 0, &["init", "claude"]).assert_code(0);
    env.git(&["add", "."]);
    env.git(&["commit", "--quiet", "-m", "baton"]);
    do_phase(&env, "1", "phase1.ok", 1);
    env.baton("s", 1, &["ledger", "start", "plans/p", "--phase", "2"])
        .assert_code(0);
    commit_ledger(&env, "phase 1 done, phase 2 started");
    // Machine B: its agent died on phase 2 at minute 2, with nothing to show.
    env.git(&["checkout", "--quiet", "-b", "b"]);
    env.baton("s", 2, &["ledger", "died", "plans/p", "--phase", "2"])
        .assert_code(0);
    commit_ledger(&env, "B: phase 2 died");
    // Machine A: redid phase 2 and completed it at minute 3.
    env.git(&["checkout", "--quiet", "-b", "a", "main"]);
    env.write("phase2.ok", "phase 2\n");
    env.git(&["add", "phase2.ok"]);
    env.git(&["commit", "--quiet", "-m", "phase 2"]);
    env.baton(
        "s",
        3,
        &[
            "ledger", "complete", "plans/p", "--phase", "2", "--tests", "3/3",
        ],
    )
    .assert_code(0);
    commit_ledger(&env, "A: phase 2 complete");

    let mut seen = Vec::new();
    for (into, from) in [("a", "b"), ("b", "a")] {
        env.git(&["checkout", "--quiet", "-b", &format!("{into}-{from}"), into]);
        // No conflict: git keeps both sides' appended lines.
        env.git(&["merge", "--quiet", "--no-edit", from]);
        let text = read(&ledger_p(&env));
        assert!(!text.contains("<<<<<<<"), "{text}");
        seen.push((text, verdicts(&derive(&env, &[]))));
    }
    let ((ab_text, ab), (ba_text, ba)) = (&seen[0], &seen[1]);
    assert_ne!(ab_text, ba_text, "git put the two blocks in either order");
    assert_eq!(ab, ba, "{ab_text}\n{ba_text}");
    // The history by time: phase 2 died, was redone and completed.
    assert_eq!(
        ab,
        &pairs(&[("1", "CONFIRMED"), ("2", "CONFIRMED"), ("3", "OPEN")])
    );
}

/// Seed 003: "On starting a run whose plan directory already has a STATE.md", the resume
/// protocol runs: `ledger init` of a plan with its ledger re-derives from the ledger, git and
/// the re-run gates, prints the derived-state table and appends where the run resumes, rather
/// than saying only that the file exists.
#[test]
fn ledger_init_on_an_existing_ledger_runs_the_resume_protocol() {
    let env = derive_env();
    do_phase(&env, "1", "phase1.ok", 1);
    let again = env.baton("s", 9, &["--json", "ledger", "init", "plans/p"]);
    again.assert_code(0);
    let json = again.json();
    assert_eq!(json["created"], false, "{json}");
    assert_eq!(
        verdicts(&json),
        pairs(&[("1", "CONFIRMED"), ("2", "OPEN"), ("3", "OPEN")]),
        "{json}"
    );
    assert_eq!(json["resume_at"], "2", "{json}");
    let last = read(&ledger_p(&env)).lines().last().unwrap().to_string();
    assert!(
        last.contains("resumed (derived from ledger + gates, 1 phases confirmed)"),
        "{last}"
    );
    let text = env.baton("s", 10, &["ledger", "init", "plans/p"]);
    text.assert_code(0);
    assert!(
        text.stdout
            .contains("phase · ledger claim · gate re-run · verdict"),
        "{}",
        text.stdout
    );
    assert!(
        text.stderr
            .contains("already exists for this plan: the run resumes from it")
    );
}

/// Seed 003's "zero re-implementation of confirmed work": right after a derive confirmed a
/// phase, `ledger start` of that phase is refused with the phase to start instead; the resume
/// point itself starts, and so does a phase with events of its own since the derive.
#[test]
fn a_phase_the_derive_confirmed_is_not_started_again() {
    let env = derive_env();
    do_phase(&env, "1", "phase1.ok", 1);
    do_phase(&env, "2", "phase2.ok", 2);
    let derived = derive(&env, &["--append"]);
    assert_eq!(derived["resume_at"], "3", "{derived}");
    let before = read(&ledger_p(&env));
    let again = env.baton(
        "s",
        10,
        &["--json", "ledger", "start", "plans/p", "--phase", "1"],
    );
    again.assert_code(3);
    assert_eq!(
        rules(&again.json()),
        ["ledger.start-confirmed"],
        "{}",
        again.stdout
    );
    assert!(
        again.json()["next"].as_str().unwrap().contains("--phase 3"),
        "{}",
        again.stdout
    );
    assert_eq!(read(&ledger_p(&env)), before, "nothing written");
    env.baton("s", 10, &["ledger", "start", "plans/p", "--phase", "3"])
        .assert_code(0);
}
