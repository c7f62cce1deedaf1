//! Crash safety: `baton` killed with SIGKILL at random moments of repeated transitions never
//! leaves a torn file, and never loses a transition it acknowledged (docs/reliability.md, the
//! crash harness).
//!
//! One checker, [`check_state_dir`], judges every run; a deliberately naive writer that
//! truncates in place must fail it, which proves the harness can see a torn file at all.
//!
//! The number of kills is `BATON_CRASH_TRIALS` (default 200; `scripts/long-tests.sh` runs
//! 5000). Kill moments come from a small PRNG seeded by `BATON_CRASH_SEED`, else the clock; the
//! seed is printed and named in every failure. The kills race real processes, so a seed
//! reproduces the plan (which runs die, after which delay), not the exact instants.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use baton_core::run_id::RunId;
use baton_store::JournalTarget;

use crate::common::{TestEnv, at, loop_key, run_key};

const TICKET: &str = "PROJ-1";
/// Kills land after a delay drawn uniformly from 0 to this many microseconds.
const MAX_KILL_DELAY_US: u64 = 3_000;

/// SplitMix64: tiny, deterministic for a seed, good enough to pick kill moments.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform enough in `0..=max` for a test.
    fn up_to(&mut self, max: u64) -> u64 {
        self.next() % (max + 1)
    }
}

fn seed() -> u64 {
    match std::env::var("BATON_CRASH_SEED") {
        Ok(raw) => raw
            .parse()
            .unwrap_or_else(|_| panic!("BATON_CRASH_SEED={raw:?} is not a number")),
        Err(_) => {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64;
            nanos ^ u64::from(std::process::id()).rotate_left(32)
        }
    }
}

fn crash_trials() -> u64 {
    match std::env::var("BATON_CRASH_TRIALS") {
        Ok(raw) => raw
            .parse()
            .unwrap_or_else(|_| panic!("BATON_CRASH_TRIALS={raw:?} is not a number")),
        Err(_) => 200,
    }
}

/// `.<name>.tmp-<anything>`: the temp file of an atomic replace. A writer killed between creating
/// it and renaming it over `<name>` leaves it behind; that is allowed, a torn `<name>` is not.
pub(crate) fn is_temp_file(name: &str) -> bool {
    name.strip_prefix('.')
        .and_then(|rest| rest.split_once(".tmp-"))
        .is_some_and(|(target, _)| !target.is_empty())
}

/// The crash checker: every file under `dir` (recursively) is non-empty, valid JSON, except the
/// lock sidecars under `locks/` and leftover temp files, and the journals (`*.jsonl`), which
/// are appended to, never replaced: every complete line of one is a JSON object, and only the
/// bytes after its last newline may be torn. Returns what is wrong, naming the file.
pub(crate) fn check_state_dir(dir: &Path) -> Result<(), String> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(format!("cannot list {}: {e}", dir.display())),
    };
    for entry in entries {
        let entry = entry.map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        let meta = std::fs::symlink_metadata(&path)
            .map_err(|e| format!("cannot stat {}: {e}", path.display()))?;
        if name == "locks" || name == ".gitignore" || is_temp_file(&name) {
            continue;
        }
        if meta.is_dir() {
            check_state_dir(&path)?;
            continue;
        }
        if !meta.is_file() {
            return Err(format!("{} is not a regular file", path.display()));
        }
        let bytes =
            std::fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        if name.ends_with(".jsonl") {
            check_journal(&path, &bytes)?;
            continue;
        }
        if bytes.is_empty() {
            return Err(format!("{} is empty", path.display()));
        }
        if let Err(e) = serde_json::from_slice::<serde_json::Value>(&bytes) {
            return Err(format!(
                "{} is not valid JSON ({e}); {} bytes, starting {:?}",
                path.display(),
                bytes.len(),
                String::from_utf8_lossy(&bytes[..bytes.len().min(120)])
            ));
        }
    }
    Ok(())
}

/// A journal: every line that ends in a newline is one JSON object. A journal killed before its
/// first line is empty, and one killed inside a `write` may end in a torn line; both are
/// allowed, a complete line that does not parse (a torn line written over, or sealed) is not.
fn check_journal(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let complete = match bytes.iter().rposition(|&b| b == b'\n') {
        Some(at) => &bytes[..at],
        None => return Ok(()),
    };
    for (n, line) in complete.split(|&b| b == b'\n').enumerate() {
        match serde_json::from_slice::<serde_json::Value>(line) {
            Ok(serde_json::Value::Object(_)) => {}
            _ => {
                return Err(format!(
                    "{} line {} is not a JSON object: {:?}",
                    path.display(),
                    n + 1,
                    String::from_utf8_lossy(line)
                ));
            }
        }
    }
    Ok(())
}

/// The iteration the last whole event of a loop's journal moved the loop to.
fn journal_iteration(env: &TestEnv) -> Option<u64> {
    env.journal(JournalTarget::Loop(TICKET))
        .iter()
        .rev()
        .find_map(|e| e["to"]["iteration"].as_u64())
}

/// `loop_state.iteration` of the loop's record, which the checker has already passed.
fn iteration_on_disk(env: &TestEnv) -> Result<u64, String> {
    let key = loop_key(TICKET);
    let bytes = env
        .record_bytes(&key)
        .ok_or_else(|| format!("no record {key:?}"))?;
    let value: serde_json::Value =
        serde_json::from_slice(&bytes).map_err(|e| format!("{key:?} is not valid JSON: {e}"))?;
    value["loop_state"]["iteration"]
        .as_u64()
        .ok_or_else(|| format!("{key:?} has no loop_state.iteration: {value}"))
}

/// Sends SIGKILL to a child that has not been waited for yet, so its pid cannot have been reused
/// (an exited, unreaped child is a zombie: the kill is a harmless no-op).
fn kill_hard(child: &Child) {
    let pid = libc::pid_t::try_from(child.id()).expect("pid fits pid_t");
    // SAFETY: kill(2) takes plain integers and touches no memory of ours.
    let rc = unsafe { libc::kill(pid, libc::SIGKILL) };
    assert_eq!(
        rc,
        0,
        "kill({pid}, SIGKILL): {}",
        std::io::Error::last_os_error()
    );
}

/// How the killed runs ended, to show that the kills spread over a transition.
#[derive(Debug, Default)]
struct Tally {
    runs: u64,
    kills: u64,
    killed_before_landing: u64,
    killed_after_landing: u64,
    finished_before_the_kill: u64,
    temp_files_left: usize,
}

/// One kind of write for [`kill_writes`]: write number `n` is acknowledged when it exits 0,
/// and the files say which write landed last.
struct Writer<'a> {
    session: &'a str,
    /// The arguments of write number `n`.
    args: &'a dyn Fn(u64) -> Vec<String>,
    /// The number of the last write the files hold.
    on_disk: &'a dyn Fn() -> Result<u64, String>,
    /// What else must hold after write `n` exited 0 (its journal event).
    acknowledged: &'a dyn Fn(u64) -> Result<(), String>,
}

/// Runs writes one after another, killing three in four after a random delay, and checks
/// after each that every file under the state directory reads, that an acknowledged write is
/// on disk, and that a killed one left either itself or the write before it.
fn kill_writes(env: &TestEnv, label: &str, writer: &Writer) -> Tally {
    let seed = seed();
    let trials = crash_trials();
    eprintln!("{label}: BATON_CRASH_SEED={seed} BATON_CRASH_TRIALS={trials}");
    let mut rng = Rng(seed);
    let state_dir = env.state_dir();
    let now = at(1);
    let mut on_disk = (writer.on_disk)().unwrap();
    let mut tally = Tally::default();
    let started = Instant::now();
    let mut n = on_disk;
    while tally.kills < trials {
        n += 1;
        tally.runs += 1;
        // Three runs in four die; the survivors prove that acknowledged writes land.
        let kill_delay = (rng.up_to(3) != 0).then(|| rng.up_to(MAX_KILL_DELAY_US));
        let mut child = env
            .command(Some(writer.session), &now)
            .args((writer.args)(n))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn baton");
        if let Some(delay) = kill_delay {
            std::thread::sleep(Duration::from_micros(delay));
            kill_hard(&child);
            tally.kills += 1;
        }
        let stderr = child.stderr.take();
        let status = child.wait().unwrap();
        let stderr = stderr
            .map(|mut s| {
                let mut text = String::new();
                std::io::Read::read_to_string(&mut s, &mut text).ok();
                text
            })
            .unwrap_or_default();
        let what = match kill_delay {
            Some(delay) => format!(
                "{label}: run {} (write {n}, SIGKILL after {delay}us)",
                tally.runs
            ),
            None => format!("{label}: run {} (write {n}, not killed)", tally.runs),
        };
        let fail = |problem: String| -> ! {
            panic!(
                "{what}: {problem}\nreproduce the plan with BATON_CRASH_SEED={seed} BATON_CRASH_TRIALS={trials}\nstderr of the run: {stderr}"
            )
        };
        if let Err(problem) = check_state_dir(&state_dir) {
            fail(problem);
        }
        let found = (writer.on_disk)().unwrap_or_else(|e| fail(e));
        match (status.code(), status.signal()) {
            (Some(0), _) => {
                if found != n {
                    fail(format!(
                        "exited 0, but the files hold write {found}: an acknowledged write is lost"
                    ));
                }
                (writer.acknowledged)(n).unwrap_or_else(|e| fail(e));
                if kill_delay.is_some() {
                    tally.finished_before_the_kill += 1;
                }
            }
            (None, Some(libc::SIGKILL)) if kill_delay.is_some() => {
                // A killed write may or may not have landed, but the files hold either it or
                // what was there before: never anything older, never anything else.
                if found == n {
                    tally.killed_after_landing += 1;
                } else if found == on_disk {
                    tally.killed_before_landing += 1;
                } else {
                    fail(format!(
                        "killed; the files hold write {found}, neither the previous {on_disk} nor this {n}"
                    ));
                }
            }
            _ => fail(format!(
                "ended with {status}, neither exit 0 nor the harness's SIGKILL"
            )),
        }
        on_disk = found;
    }
    // One more write after all the kills: no lock is stuck and the store still works.
    n += 1;
    let last = env
        .command(Some(writer.session), &now)
        .args((writer.args)(n))
        .output()
        .unwrap();
    assert!(
        last.status.success(),
        "{label}: the write after the kills failed (seed {seed})"
    );
    assert_eq!((writer.on_disk)(), Ok(n), "{label}: seed {seed}");
    // On a server, nothing of the state is in the directory.
    tally.temp_files_left = std::fs::read_dir(&state_dir).map_or(0, |entries| {
        entries
            .filter(|e| is_temp_file(&e.as_ref().unwrap().file_name().to_string_lossy()))
            .count()
    });
    eprintln!(
        "{label}: {tally:?} in {:.1}s",
        started.elapsed().as_secs_f64()
    );
    tally
}

#[test]
fn sigkill_during_loop_transitions_never_tears_a_file_or_loses_an_acknowledged_one() {
    let env = TestEnv::new();
    env.baton("owner", 0, &["loop", "init", TICKET])
        .assert_code(0);
    kill_writes(
        &env,
        "crash harness (loop set)",
        &Writer {
            session: "owner",
            args: &|n| {
                [
                    "loop",
                    "set",
                    TICKET,
                    "--phase",
                    "qa",
                    "--action",
                    "returned",
                    "--iteration",
                ]
                .iter()
                .map(|a| a.to_string())
                .chain([n.to_string()])
                .collect()
            },
            on_disk: &|| iteration_on_disk(&env),
            // The event is appended under the same lock, before the command reports success.
            acknowledged: &|n| match journal_iteration(&env) {
                Some(last) if last == n => Ok(()),
                last => Err(format!(
                    "exited 0, but the journal's last transition is to iteration {last:?}: its event is lost"
                )),
            },
        },
    );
}

/// The same for a run's record: each write records one more completed agent (`worker-N`)
/// under the run lock, so the run file says which write landed last.
#[test]
fn sigkill_during_run_records_never_tears_a_file_or_loses_an_acknowledged_one() {
    let env = TestEnv::new();
    let out = env.baton("owner", 0, &["--json", "run", "new"]);
    out.assert_code(0);
    let id = out.json()["run_id"].as_str().unwrap().to_string();
    let run_id = RunId::parse(&id).unwrap();
    let last_worker = |bytes: &[u8]| -> Result<u64, String> {
        let text = String::from_utf8_lossy(bytes);
        Ok(text
            .match_indices("worker-")
            .filter_map(|(at, _)| {
                let digits: String = text[at + 7..]
                    .chars()
                    .take_while(char::is_ascii_digit)
                    .collect();
                digits.parse().ok()
            })
            .max()
            .unwrap_or(0))
    };
    kill_writes(
        &env,
        "crash harness (run record)",
        &Writer {
            session: "owner",
            args: &|n| {
                ["run", "record", &id, "--agent", &format!("worker-{n}")]
                    .iter()
                    .map(|a| a.to_string())
                    .collect()
            },
            on_disk: &|| {
                let bytes = env
                    .record_bytes(&run_key(&id))
                    .ok_or_else(|| format!("no run {id}"))?;
                last_worker(&bytes)
            },
            acknowledged: &|n| {
                let events = env.journal(JournalTarget::Run(&run_id));
                let text: Vec<String> = events.iter().map(|e| e.to_string()).collect();
                match last_worker(text.join("\n").as_bytes())? {
                    last if last == n => Ok(()),
                    last => Err(format!(
                        "exited 0, but the journal's last recorded agent is worker-{last}: its event is lost"
                    )),
                }
            },
        },
    );
}

/// A writer that truncates its file in place and rewrites it, the bug baton's atomic replace
/// exists to avoid. Each write leaves the file empty between the truncation and the write.
const NAIVE_WRITER: &str = r#"i=0
while :; do
  i=$((i + 1))
  printf '{"iteration": %s, "pad": "%01000d"}' "$i" 0 > "$1"
done"#;

#[test]
fn the_crash_checker_catches_a_writer_that_truncates_in_place() {
    const KILLS: u32 = 200;
    let seed = seed();
    eprintln!("naive writer: BATON_CRASH_SEED={seed}");
    let mut rng = Rng(seed);
    let env = TestEnv::new();
    let state_dir = env.state_dir();
    std::fs::create_dir_all(&state_dir).unwrap();
    let file = env.loop_file(TICKET);
    let mut caught = 0;
    let mut first = None;
    for _ in 0..KILLS {
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(NAIVE_WRITER)
            .arg("naive-writer")
            .arg(&file)
            .stdin(Stdio::null())
            .spawn()
            .expect("spawn sh");
        std::thread::sleep(Duration::from_micros(rng.up_to(MAX_KILL_DELAY_US)));
        kill_hard(&child);
        child.wait().unwrap();
        if let Err(problem) = check_state_dir(&state_dir) {
            caught += 1;
            first.get_or_insert(problem);
            // Start the next kill from an intact file, so that each catch is a new tear.
            std::fs::write(&file, br#"{"iteration": 0}"#).unwrap();
        }
    }
    eprintln!(
        "naive writer: the checker caught a torn file after {caught} of {KILLS} kills; first: {}",
        first.as_deref().unwrap_or("none")
    );
    assert!(
        caught > 0,
        "the checker never caught the naive writer in {KILLS} kills (BATON_CRASH_SEED={seed}): the crash harness cannot see a torn file"
    );
}
