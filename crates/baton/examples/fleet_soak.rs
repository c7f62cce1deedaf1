//! A fleet soak against one PostgreSQL store: simulated agents cycling
//! init / set / heartbeat / interrupt / accept on a few shared tickets, then a check of what
//! the journal says happened. `scripts/fleet.sh --soak SECONDS` runs it on two machines.
//!
//! ```text
//! fleet_soak agents --baton PATH --dir CLONE --machine M --agents N --first I --tickets T --seconds S --out FILE
//! fleet_soak check  --baton PATH --dir CLONE --tickets T --seconds S FILE...
//! fleet_soak hold   --seconds S
//! fleet_soak take   --seconds S
//! fleet_soak write  REV
//! ```
//!
//! `agents` runs N agents (sessions `agent-I` … `agent-(I+N-1)`) with `BATON_STORE` as it finds
//! it, and writes one line per command to FILE: `op exit micros [ticket iteration]`, the last
//! two for each `loop set` that exited 0 (an acknowledged write; each carries an iteration no
//! other write uses). `check` replays every ticket's journal from the server and fails unless
//! every acknowledged write is in it, epochs never go back, no two sessions wrote at one owner
//! epoch, each `set` starts from the iteration the one before it left, and the record ends
//! where its journal does; then it prints operations per second and latency percentiles.
//!
//! `hold`, `take` and `write` are a state lock and a fenced write through baton's own
//! connection to the server `BATON_STORE` names (project `fleet-vanish`, lock scope and loop
//! record `vanish`): `hold` takes the lock, reads the record (writing it first if there is
//! none), prints `held REV` and keeps the lock S seconds; `take` tries for the lock for up to
//! S seconds, prints `taken after SECONDS`, then writes the record at the revision it reads
//! and prints `wrote REV`; `write REV` writes the record only if it is still at REV (as a
//! machine that comes back with what it read before) and prints `wrote REV` or `refused`.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Iterations stay far below this, so every loop stays in automatic resume mode.
const MAX_ITERATIONS: &str = "100000000";
/// Each agent's iterations: `agent * STRIDE + n`.
const STRIDE: u64 = 1_000_000;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("agents") => agents(&Flags::parse(&args[1..])),
        Some("check") => check(&Flags::parse(&args[1..])),
        Some("hold") => hold(&Flags::parse(&args[1..])),
        Some("take") => take(&Flags::parse(&args[1..])),
        Some("write") => write(args.get(1).and_then(|r| r.parse().ok())),
        _ => Err("usage: fleet_soak agents|check [flags] (see the source's header)".into()),
    };
    if let Err(e) = result {
        eprintln!("fleet_soak: {e}");
        std::process::exit(1);
    }
}

#[derive(Default)]
struct Flags {
    baton: PathBuf,
    /// The clone of the project baton runs in.
    dir: PathBuf,
    machine: String,
    agents: u64,
    first: u64,
    tickets: u64,
    seconds: u64,
    out: PathBuf,
    files: Vec<PathBuf>,
}

impl Flags {
    fn parse(args: &[String]) -> Flags {
        let mut f = Flags {
            agents: 32,
            tickets: 16,
            seconds: 120,
            ..Flags::default()
        };
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let mut value = || it.next().cloned().unwrap_or_default();
            match a.as_str() {
                "--baton" => f.baton = value().into(),
                "--dir" => f.dir = value().into(),
                "--machine" => f.machine = value(),
                "--agents" => f.agents = value().parse().expect("--agents N"),
                "--first" => f.first = value().parse().expect("--first I"),
                "--tickets" => f.tickets = value().parse().expect("--tickets T"),
                "--seconds" => f.seconds = value().parse().expect("--seconds S"),
                "--out" => f.out = value().into(),
                other => f.files.push(other.into()),
            }
        }
        f
    }
}

/// Baton's connection to the server `BATON_STORE` names, for the project `fleet-vanish`.
fn vanish_db() -> Result<std::rc::Rc<baton_store::pg::backend::Db>, String> {
    use baton_store::pg;
    let url = std::env::var("BATON_STORE").map_err(|_| "BATON_STORE is not set")?;
    let host = baton_store::process::host();
    let db = pg::backend::Db::open(&url, &pg::config::Process, "fleet-vanish", &host)
        .map_err(|e| e.to_string())?;
    Ok(std::rc::Rc::new(db))
}

const VANISH: &str = "vanish";

fn hold(flags: &Flags) -> Result<(), String> {
    use baton_store::RecordKind;
    let db = vanish_db()?;
    let _lock = db
        .lock(VANISH, Duration::from_secs(5))
        .map_err(|e| e.to_string())?;
    let rev = match db
        .read(RecordKind::Loop, VANISH)
        .map_err(|e| e.to_string())?
    {
        Some(r) => r.rev,
        None => db
            .write_if(RecordKind::Loop, VANISH, "{}", 1, None)
            .map_err(|e| e.to_string())?
            .ok_or("the record was written meanwhile")?,
    };
    println!("held {rev}");
    std::io::stdout().flush().ok();
    std::thread::sleep(Duration::from_secs(flags.seconds));
    Ok(())
}

fn take(flags: &Flags) -> Result<(), String> {
    use baton_store::RecordKind;
    let db = vanish_db()?;
    let start = Instant::now();
    let _lock = loop {
        match db.lock(VANISH, Duration::from_millis(250)) {
            Ok(lock) => break lock,
            Err(baton_store::StoreError::LockBusy { .. })
                if start.elapsed() < Duration::from_secs(flags.seconds) => {}
            Err(e) => return Err(format!("after {:.1} s: {e}", start.elapsed().as_secs_f64())),
        }
    };
    println!("taken after {:.1}", start.elapsed().as_secs_f64());
    let read = db
        .read(RecordKind::Loop, VANISH)
        .map_err(|e| e.to_string())?
        .ok_or("no record")?;
    let rev = db
        .write_if(RecordKind::Loop, VANISH, "{\"by\":2}", 1, Some(read.rev))
        .map_err(|e| e.to_string())?
        .ok_or("the record was written meanwhile")?;
    println!("wrote {rev}");
    Ok(())
}

fn write(read: Option<i64>) -> Result<(), String> {
    use baton_store::RecordKind;
    let read = read.ok_or("usage: fleet_soak write REV")?;
    let db = vanish_db()?;
    match db
        .write_if(RecordKind::Loop, VANISH, "{\"by\":1}", 1, Some(read))
        .map_err(|e| e.to_string())?
    {
        Some(rev) => println!("wrote {rev}"),
        None => println!("refused"),
    }
    Ok(())
}

/// Runs baton as `session`; its exit code and how long it took.
fn baton(flags: &Flags, session: &str, args: &[&str]) -> (i32, Duration) {
    let start = Instant::now();
    let status = Command::new(&flags.baton)
        .current_dir(&flags.dir)
        .args(args)
        .env("BATON_SESSION", session)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("run baton");
    (status.code().unwrap_or(-1), start.elapsed())
}

/// A small xorshift generator: which ticket each cycle works on.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

fn agents(flags: &Flags) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(flags.seconds);
    let lines = std::thread::scope(|scope| {
        let handles: Vec<_> = (flags.first..flags.first + flags.agents)
            .map(|agent| scope.spawn(move || one_agent(flags, agent, deadline)))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("an agent thread"))
            .collect::<Vec<String>>()
    });
    let mut out = std::fs::File::create(&flags.out)
        .map_err(|e| format!("cannot write {}: {e}", flags.out.display()))?;
    for line in &lines {
        writeln!(out, "{line}").map_err(|e| e.to_string())?;
    }
    eprintln!(
        "fleet_soak: machine {}: {} agents, {} commands",
        flags.machine,
        flags.agents,
        lines.len()
    );
    Ok(())
}

fn one_agent(flags: &Flags, agent: u64, deadline: Instant) -> Vec<String> {
    let session = format!("agent-{agent}");
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (agent + 1).wrapping_mul(0x2545_F491_4F6C_DD1D));
    let mut n = 0;
    let mut lines = Vec::new();
    let mut record = |op: &str, (code, took): (i32, Duration), extra: String| {
        lines.push(format!("{op} {code} {}{extra}", took.as_micros()));
    };
    while Instant::now() < deadline {
        let ticket = format!("T-{}", rng.below(flags.tickets) + 1);
        let t = ticket.as_str();
        record(
            "init",
            baton(
                flags,
                &session,
                &["loop", "init", t, "--max-iterations", MAX_ITERATIONS],
            ),
            String::new(),
        );
        n += 1;
        let iteration = (agent * STRIDE + n).to_string();
        let set = baton(
            flags,
            &session,
            &[
                "loop",
                "set",
                t,
                "--phase",
                "qa",
                "--action",
                "returned",
                "--iteration",
                &iteration,
            ],
        );
        let acked = if set.0 == 0 {
            format!(" {t} {iteration}")
        } else {
            String::new()
        };
        record("set", set, acked);
        record(
            "heartbeat",
            baton(flags, &session, &["loop", "heartbeat", t]),
            String::new(),
        );
        record(
            "interrupt",
            baton(
                flags,
                &session,
                &["loop", "interrupt", t, "--reason", "unknown"],
            ),
            String::new(),
        );
        record(
            "accept",
            baton(flags, &session, &["resume", "accept", t]),
            String::new(),
        );
    }
    lines
}

/// One JSON answer of baton, which must exit 0.
fn baton_json(flags: &Flags, args: &[&str]) -> Result<serde_json::Value, String> {
    let out = Command::new(&flags.baton)
        .current_dir(&flags.dir)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run baton: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "baton {args:?} exited {:?}: {}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| format!("baton {args:?}: {e}"))
}

/// The value at `p` (0..=100) of sorted `v`, in milliseconds.
fn percentile(v: &[u64], p: f64) -> f64 {
    let at = ((v.len() as f64 - 1.0) * p / 100.0).round() as usize;
    v[at] as f64 / 1000.0
}

fn check(flags: &Flags) -> Result<(), String> {
    // What the agents were told.
    let mut latencies: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    let mut codes: BTreeMap<(String, i32), u64> = BTreeMap::new();
    let mut acked: Vec<(String, u64)> = Vec::new();
    for file in &flags.files {
        let text = std::fs::read_to_string(file)
            .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
        for line in text.lines() {
            let f: Vec<&str> = line.split(' ').collect();
            let [op, code, micros, rest @ ..] = f.as_slice() else {
                return Err(format!("{}: bad line {line:?}", file.display()));
            };
            let code: i32 = code.parse().map_err(|_| format!("bad line {line:?}"))?;
            latencies
                .entry(op.to_string())
                .or_default()
                .push(micros.parse().map_err(|_| format!("bad line {line:?}"))?);
            *codes.entry((op.to_string(), code)).or_default() += 1;
            if let [ticket, iteration] = rest {
                acked.push((ticket.to_string(), iteration.parse().unwrap()));
            }
        }
    }
    let crashed: Vec<_> = codes
        .iter()
        .filter(|((_, c), _)| ![0, 3, 4].contains(c))
        .collect();
    if !crashed.is_empty() {
        return Err(format!(
            "commands exited with other than 0, 3 or 4: {crashed:?}"
        ));
    }

    // What the journal says happened.
    let mut written: BTreeSet<(String, u64)> = BTreeSet::new();
    let mut events = 0;
    for t in 1..=flags.tickets {
        let ticket = format!("T-{t}");
        let log = baton_json(flags, &["--json", "log", &ticket])?;
        // Replayed in journal order: epochs never go back, one session per epoch, and each
        // `set` starts from the iteration the one before it left (a write lost or clobbered
        // in between would break the chain).
        let mut owners: BTreeMap<u64, BTreeSet<String>> = BTreeMap::new();
        let mut highest = 0;
        let mut iteration: Option<u64> = None;
        for e in log["events"].as_array().into_iter().flatten() {
            events += 1;
            let session = e["session"].as_str().unwrap_or_default().to_string();
            let epoch = e["epoch"]
                .as_u64()
                .ok_or_else(|| format!("{ticket}: an event without an epoch: {e}"))?;
            if epoch < highest {
                return Err(format!(
                    "{ticket}: {session} wrote at epoch {epoch} after epoch {highest}: {e}"
                ));
            }
            highest = epoch;
            owners.entry(epoch).or_default().insert(session);
            match e["event"].as_str() {
                Some("init") => iteration = e["iteration"].as_u64(),
                Some("set") => {
                    let from = e["from"]["iteration"].as_u64();
                    if iteration.is_some() && from != iteration {
                        return Err(format!(
                            "{ticket}: a set started from iteration {from:?}, but the one before left {iteration:?}: {e}"
                        ));
                    }
                    iteration = e["to"]["iteration"].as_u64();
                    if let Some(i) = iteration {
                        written.insert((ticket.clone(), i));
                    }
                }
                _ => {}
            }
        }
        if let Some((epoch, sessions)) = owners.iter().find(|(_, s)| s.len() > 1) {
            return Err(format!(
                "{ticket}: sessions {sessions:?} all wrote at owner epoch {epoch}"
            ));
        }
        // The record ends where its journal does.
        if iteration.is_some() {
            let shown = baton_json(flags, &["--json", "loop", "show", &ticket])?;
            let state = &shown["state"];
            if state["loop_state"]["iteration"].as_u64() != iteration
                || state["owner_epoch"].as_u64() != Some(highest)
            {
                return Err(format!(
                    "{ticket}: the record (iteration {}, epoch {}) is not where its journal ends (iteration {iteration:?}, epoch {highest})",
                    state["loop_state"]["iteration"], state["owner_epoch"]
                ));
            }
        }
    }
    let lost: Vec<_> = acked.iter().filter(|a| !written.contains(a)).collect();
    if !lost.is_empty() {
        return Err(format!(
            "{} acknowledged writes are not in the journal, first {:?}",
            lost.len(),
            lost[0]
        ));
    }

    let total: usize = latencies.values().map(Vec::len).sum();
    println!(
        "fleet soak: {total} commands in {} s = {:.0} ops/s; {} journal events; {} acknowledged sets, none lost; per ticket, epochs never went back, one session per epoch, each set from the iteration before it, the record where its journal ends",
        flags.seconds,
        total as f64 / flags.seconds as f64,
        events,
        acked.len()
    );
    println!("| command | runs | exit 0 | p50 ms | p90 ms | p99 ms | max ms |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    let mut all = Vec::new();
    for (op, v) in &mut latencies {
        v.sort_unstable();
        all.extend_from_slice(v);
        let ok = codes.get(&(op.clone(), 0)).copied().unwrap_or(0);
        println!(
            "| {op} | {} | {ok} | {:.1} | {:.1} | {:.1} | {:.1} |",
            v.len(),
            percentile(v, 50.0),
            percentile(v, 90.0),
            percentile(v, 99.0),
            percentile(v, 100.0)
        );
    }
    all.sort_unstable();
    println!(
        "| all | {} | | {:.1} | {:.1} | {:.1} | {:.1} |",
        all.len(),
        percentile(&all, 50.0),
        percentile(&all, 90.0),
        percentile(&all, 99.0),
        percentile(&all, 100.0)
    );
    Ok(())
}
