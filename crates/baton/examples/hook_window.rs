//! How long Claude Code's StopFailure hook takes with the store on a PostgreSQL server a few
//! milliseconds away, whether the interrupt it records reaches the server exactly once, and
//! whether the per-turn hooks that change nothing connect to the server at all.
//! `scripts/hook-window.sh` starts a server and runs it.
//!
//! ```text
//! hook_window --baton PATH --url URL [--delay-ms 20] [--runs 300] [--window-ms 100]
//!             [--no-window] [--expect-no-roundtrip]
//! ```
//!
//! `URL` names the server directly (`postgres://baton@127.0.0.1:PORT/postgres`, its schema
//! migrated). The harness puts a delay proxy of its own in front of it, on 127.0.0.1: every
//! chunk read in either direction is delivered `--delay-ms` after it was read, in order, and a
//! connection's first chunk from the client waits one more round trip, as the TCP handshake
//! costs on a real path. The hooks run with `BATON_STORE` naming the proxy; everything the
//! harness sets up and checks goes to the server directly. The proxy counts the connections
//! it accepts, so the harness sees whether a hook connected at all. The delay is checked
//! first: a `SELECT 1` through the proxy takes about twice `--delay-ms`.
//!
//! Every harness run works in a temp git repository and a project of its own
//! (`BATON_PROJECT`), so runs never see each other's state. It then:
//!
//! - per-turn hooks, in a few sessions that each own a loop: `UserPromptSubmit`, then `Stop`
//!   twice, each with the connections it made (counted a moment after it exits, so that a
//!   process it left behind is counted too) and its wall time. The first `Stop` of a session
//!   may connect (it refreshes the work the session owns); the prompt with nothing pending and
//!   the second `Stop`, within the 5-minute sweep window, need nothing from the server. With
//!   `--expect-no-roundtrip` a connection by either fails the run;
//! - `--runs` times: session `s-I` starts loop `T-I` (`baton loop init`, untimed), then
//!   `baton hook claude StopFailure` runs with the payload Claude Code 2.1.332 sends for a 429
//!   rate limit, timed from spawn to exit; the harness then reads the server (up to 15 s)
//!   until loop `T-I` is interrupted, and its journal must hold exactly one `interrupt` event.
//!   The hook may write the server itself or leave the interrupt to a process that outlives
//!   it: either way, what counts is the hook's own time and the interrupt on the server.
//!
//! Then it prints the wall time of the StopFailure hook (min, p50, p99, max), how many runs
//! took longer than `--window-ms`, how long after the hook's exit the interrupt was on the
//! server, and the per-turn connection counts. It exits 1 when a run took longer than the
//! window (unless `--no-window`: CI's short run on a debug build reports the times only), a
//! hook exited non-zero, an interrupt never arrived or arrived more than once, or a no-op
//! per-turn hook connected under `--expect-no-roundtrip`; 2 when the harness itself could not
//! run.

use std::io::Write;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use baton_store::RecordKind;
use baton_store::pg;
use serde_json::{Value, json};

/// The sessions of the per-turn measurements.
const TURN_SESSIONS: usize = 5;
/// How long the harness waits for an interrupt to reach the server.
const ARRIVAL_BOUND: Duration = Duration::from_secs(15);
/// How long after a hook's exit its connections are counted: a process it left behind
/// connects within this.
const SETTLE: Duration = Duration::from_millis(300);

const USER_PROMPT_SUBMIT: &str =
    include_str!("../../../fixtures/clients/claude-code-2.1.332/UserPromptSubmit.json");
const STOP: &str = include_str!("../../../fixtures/clients/claude-code-2.1.332/Stop.json");
const RATE_LIMIT_MESSAGE: &str = "API Error: Request rejected (429) · Number of request tokens has exceeded your per-minute rate limit";

fn main() {
    let flags = match Flags::parse(std::env::args().skip(1)) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("hook_window: {e} (see the source's header)");
            std::process::exit(2);
        }
    };
    match run(&flags) {
        Ok(true) => {}
        Ok(false) => std::process::exit(1),
        Err(e) => {
            eprintln!("hook_window: {e}");
            std::process::exit(2);
        }
    }
}

struct Flags {
    baton: PathBuf,
    url: String,
    delay: Duration,
    runs: usize,
    window: Duration,
    no_window: bool,
    expect_no_roundtrip: bool,
}

impl Flags {
    fn parse(args: impl Iterator<Item = String>) -> Result<Flags, String> {
        let mut f = Flags {
            baton: PathBuf::new(),
            url: String::new(),
            delay: Duration::from_millis(20),
            runs: 300,
            window: Duration::from_millis(100),
            no_window: false,
            expect_no_roundtrip: false,
        };
        let mut it = args;
        while let Some(a) = it.next() {
            let mut value = || it.next().ok_or_else(|| format!("{a} takes a value"));
            let number = |v: String| v.parse::<u64>().map_err(|_| format!("{a}: not a number"));
            match a.as_str() {
                "--baton" => f.baton = value()?.into(),
                "--url" => f.url = value()?,
                "--delay-ms" => f.delay = Duration::from_millis(number(value()?)?),
                "--runs" => f.runs = number(value()?)? as usize,
                "--window-ms" => f.window = Duration::from_millis(number(value()?)?),
                "--no-window" => f.no_window = true,
                "--expect-no-roundtrip" => f.expect_no_roundtrip = true,
                other => return Err(format!("unknown argument {other:?}")),
            }
        }
        if f.baton.as_os_str().is_empty() || f.url.is_empty() {
            return Err("--baton PATH and --url URL are required".into());
        }
        // Every baton runs in the temp repository: a relative path would not name it there.
        f.baton = std::fs::canonicalize(&f.baton)
            .map_err(|e| format!("--baton {}: {e}", f.baton.display()))?;
        Ok(f)
    }
}

#[path = "../tests/support/delay_proxy.rs"]
#[allow(dead_code)]
mod delay_proxy;

/// `url` with its host and port replaced by 127.0.0.1:`port`.
fn through(url: &str, port: u16) -> Result<String, String> {
    let (scheme, rest) = url.split_once("://").ok_or("the URL has no scheme")?;
    let (authority, path) = rest.split_at(rest.find(['/', '?']).unwrap_or(rest.len()));
    let user = authority.rsplit_once('@').map(|(u, _)| format!("{u}@"));
    Ok(format!(
        "{scheme}://{}127.0.0.1:{port}{path}",
        user.unwrap_or_default()
    ))
}

/// The server's address in `url`: its host and port (5432 when it names none).
fn server_addr(url: &str) -> Result<SocketAddr, String> {
    let rest = url.split_once("://").ok_or("the URL has no scheme")?.1;
    let authority = &rest[..rest.find(['/', '?']).unwrap_or(rest.len())];
    let hostport = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let with_port = if hostport.contains(':') {
        hostport.to_string()
    } else {
        format!("{hostport}:5432")
    };
    with_port
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {with_port}: {e}"))?
        .next()
        .ok_or_else(|| format!("{with_port} resolves to nothing"))
}

/// The median and the fastest of a few `SELECT 1` round trips through `url`.
fn round_trip(url: &str) -> Result<(Duration, Duration), String> {
    let settings = pg::config::resolve(url, &pg::config::Process)?;
    let mut client = pg::connect(&settings).map_err(|e| e.to_string())?;
    let mut times = Vec::new();
    for _ in 0..7 {
        let start = Instant::now();
        client
            .batch_execute("SELECT 1")
            .map_err(|e| e.to_string())?;
        times.push(start.elapsed());
    }
    times.sort();
    Ok((times[times.len() / 2], times[0]))
}

// ---------------------------------------------------------------------------------------------
// The project and baton

struct Project {
    _dir: tempfile::TempDir,
    repo: PathBuf,
    home: PathBuf,
    out: PathBuf,
    name: String,
}

impl Project {
    fn new() -> Result<Project, String> {
        let dir = tempfile::tempdir().map_err(|e| format!("cannot make a temp dir: {e}"))?;
        let repo = dir.path().join("repo");
        let home = dir.path().join("home");
        for d in [&repo, &home] {
            std::fs::create_dir_all(d).map_err(|e| format!("cannot make {}: {e}", d.display()))?;
        }
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        let name = format!("hook-window-{}-{nanos}", std::process::id());
        let project = Project {
            out: dir.path().join("out"),
            _dir: dir,
            repo,
            home,
            name,
        };
        project.git(&["init", "--quiet", "--initial-branch=main"])?;
        std::fs::write(project.repo.join("README.md"), "# hook window\n")
            .map_err(|e| format!("cannot write README.md: {e}"))?;
        project.git(&["add", "."])?;
        project.git(&["commit", "--quiet", "-m", "initial"])?;
        Ok(project)
    }

    /// A command in the repository with a cleared environment: no git configuration of the
    /// machine, a `HOME` of its own, and the project's name.
    fn command(&self, program: &Path) -> Command {
        let mut cmd = Command::new(program);
        cmd.current_dir(&self.repo)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "Hook Window")
            .env("GIT_AUTHOR_EMAIL", "hook-window@example.invalid")
            .env("GIT_COMMITTER_NAME", "Hook Window")
            .env("GIT_COMMITTER_EMAIL", "hook-window@example.invalid")
            .env("BATON_PROJECT", &self.name);
        cmd
    }

    fn git(&self, args: &[&str]) -> Result<(), String> {
        let out = self
            .command(Path::new("git"))
            .args(args)
            .output()
            .map_err(|e| format!("cannot run git: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "git {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(())
    }

    /// `baton ARGS` as `session` on the server `url`; it must exit 0.
    fn baton(&self, flags: &Flags, url: &str, session: &str, args: &[&str]) -> Result<(), String> {
        let out = self
            .command(&flags.baton)
            .args(args)
            .env("BATON_STORE", url)
            .env("BATON_SESSION", session)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run baton: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "baton {args:?} exited {:?}: {}",
                out.status.code(),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(())
    }

    /// `baton hook claude EVENT` fed `payload`, with `BATON_STORE` = `url` and no
    /// `BATON_SESSION` (the payload names the session), timed from spawn to exit. Its output
    /// goes to files, so that a process it leaves behind holding them does not hold up the
    /// timing.
    fn hook(
        &self,
        flags: &Flags,
        url: &str,
        event: &str,
        payload: &Value,
    ) -> Result<Hooked, String> {
        let stdout_path = self.out.with_extension("stdout");
        let stderr_path = self.out.with_extension("stderr");
        let file = |p: &Path| {
            std::fs::File::create(p).map_err(|e| format!("cannot write {}: {e}", p.display()))
        };
        let (stdout, stderr) = (file(&stdout_path)?, file(&stderr_path)?);
        let bytes = payload.to_string();
        let start = Instant::now();
        let mut child = self
            .command(&flags.baton)
            .args(["hook", "claude", event])
            .env("BATON_STORE", url)
            .stdin(Stdio::piped())
            .stdout(stdout)
            .stderr(stderr)
            .spawn()
            .map_err(|e| format!("cannot run baton: {e}"))?;
        if let Some(mut stdin) = child.stdin.take() {
            // A hook that exits before reading its payload is seen in its exit code.
            let _ = stdin.write_all(bytes.as_bytes());
        }
        let status = child.wait().map_err(|e| format!("baton hook: {e}"))?;
        let took = start.elapsed();
        let exited = Instant::now();
        let stderr = std::fs::read_to_string(&stderr_path).unwrap_or_default();
        Ok(Hooked {
            code: status.code().unwrap_or(-1),
            took,
            exited,
            stderr,
        })
    }

    fn payload_of(&self, fixture: &str, session: &str) -> Result<Value, String> {
        let mut p: Value = serde_json::from_str(fixture).map_err(|e| format!("a fixture: {e}"))?;
        p["session_id"] = json!(session);
        p["cwd"] = json!(self.repo);
        p["transcript_path"] = json!(self.repo.join("none.jsonl"));
        Ok(p)
    }
}

struct Hooked {
    code: i32,
    took: Duration,
    exited: Instant,
    stderr: String,
}

// ---------------------------------------------------------------------------------------------
// The server, read directly

struct Server {
    records: pg::records::Records,
}

impl Server {
    fn open(url: &str, project: &str) -> Result<Server, String> {
        let settings = pg::config::resolve(url, &pg::config::Process)?;
        let client = pg::connect(&settings).map_err(|e| e.to_string())?;
        Ok(Server {
            records: pg::records::Records::new(client, settings, project, "hook-window"),
        })
    }

    /// Loop `key`'s status, as the server holds it.
    fn status(&self, key: &str) -> Result<Option<String>, String> {
        let record = self
            .records
            .read(RecordKind::Loop, key)
            .map_err(|e| e.to_string())?;
        Ok(record.and_then(|r| {
            serde_json::from_str::<Value>(&r.doc).ok()?["status"]
                .as_str()
                .map(String::from)
        }))
    }

    /// How many `interrupt` events loop `key`'s journal holds.
    fn interrupts(&self, key: &str) -> Result<usize, String> {
        let lines = self
            .records
            .read_journal(&format!("loop-{key}"))
            .map_err(|e| e.to_string())?;
        Ok(lines
            .iter()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|e| e["event"] == "interrupt")
            .count())
    }
}

// ---------------------------------------------------------------------------------------------
// The measurements

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The value at `p` (0..=100) of sorted `v`, in milliseconds.
fn percentile(v: &[Duration], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let at = ((v.len() as f64 - 1.0) * p / 100.0).round() as usize;
    millis(v[at])
}

/// One per-turn hook: its event, the connections it made and its wall time.
struct Turn {
    what: &'static str,
    event: &'static str,
    /// The payload it gets, with the session and the repository put in.
    fixture: &'static str,
    /// Whether it needs nothing from the server.
    no_op: bool,
    connections: Vec<usize>,
    times: Vec<Duration>,
    codes: Vec<i32>,
}

fn run(flags: &Flags) -> Result<bool, String> {
    let target = server_addr(&flags.url)?;
    let proxy = delay_proxy::DelayProxy::start(target, flags.delay)
        .map_err(|e| format!("the proxy: {e}"))?;
    let proxied = through(&flags.url, proxy.port)?;
    let (direct_rt, _) = round_trip(&flags.url).map_err(|e| format!("{}: {e}", flags.url))?;
    let (proxied_rt, proxied_min) =
        round_trip(&proxied).map_err(|e| format!("through the proxy: {e}"))?;
    println!(
        "hook_window: SELECT 1 directly {:.2} ms, through the proxy {:.1} ms (fastest {:.1} ms; \
         {} ms each way, expected about {} ms)",
        millis(direct_rt),
        millis(proxied_rt),
        millis(proxied_min),
        flags.delay.as_millis(),
        2 * flags.delay.as_millis()
    );
    if proxied_min < 2 * flags.delay {
        return Err(format!(
            "a round trip through the proxy took {:.1} ms, less than twice the delay",
            millis(proxied_min)
        ));
    }

    let project = Project::new()?;
    let server = Server::open(&flags.url, &project.name)?;
    println!(
        "hook_window: project {} in {}",
        project.name,
        project.repo.display()
    );
    let mut ok = true;

    // Per-turn hooks, before any StopFailure could leave a process behind that connects late.
    let mut turns = [
        (
            "UserPromptSubmit",
            "UserPromptSubmit",
            true,
            USER_PROMPT_SUBMIT,
        ),
        ("Stop (first)", "Stop", false, STOP),
        ("Stop (again)", "Stop", true, STOP),
    ]
    .map(|(what, event, no_op, fixture)| Turn {
        what,
        event,
        fixture,
        no_op,
        connections: Vec::new(),
        times: Vec::new(),
        codes: Vec::new(),
    });
    for k in 0..TURN_SESSIONS {
        let session = format!("u-{k}");
        project.baton(
            flags,
            &flags.url,
            &session,
            &["loop", "init", &format!("U-{k}")],
        )?;
        for turn in turns.iter_mut() {
            let payload = project.payload_of(turn.fixture, &session)?;
            let before = proxy.accepted();
            let hooked = project.hook(flags, &proxied, turn.event, &payload)?;
            std::thread::sleep(SETTLE);
            turn.connections.push(proxy.accepted() - before);
            turn.times.push(hooked.took);
            turn.codes.push(hooked.code);
            if hooked.code != 0 {
                eprintln!(
                    "hook_window: {} of {session} exited {}: {}",
                    turn.what,
                    hooked.code,
                    hooked.stderr.trim()
                );
            }
        }
    }

    // StopFailure.
    let mut times = Vec::with_capacity(flags.runs);
    let mut arrivals = Vec::with_capacity(flags.runs);
    let mut connections = Vec::with_capacity(flags.runs);
    let (mut failed_hooks, mut missing, mut duplicated) = (0, 0, 0);
    // Runs whose interrupt was on the server at the first read after the hook's exit.
    let mut at_exit = 0;
    let started = Instant::now();
    for i in 0..flags.runs {
        let (session, ticket) = (format!("s-{i}"), format!("T-{i}"));
        project.baton(flags, &flags.url, &session, &["loop", "init", &ticket])?;
        let payload = json!({
            "session_id": session,
            "transcript_path": project.repo.join("none.jsonl"),
            "cwd": project.repo,
            "prompt_id": format!("p-{i}"),
            "hook_event_name": "StopFailure",
            "error": "rate_limit",
            "last_assistant_message": RATE_LIMIT_MESSAGE,
        });
        let before = proxy.accepted();
        let hooked = project.hook(flags, &proxied, "StopFailure", &payload)?;
        times.push(hooked.took);
        if hooked.code != 0 {
            failed_hooks += 1;
            eprintln!(
                "hook_window: run {i}: the hook exited {}: {}",
                hooked.code,
                hooked.stderr.trim()
            );
        }
        // Until the interrupt is on the server.
        let mut first = true;
        let arrived = loop {
            if server.status(&ticket)?.as_deref() == Some("interrupted") {
                if first {
                    at_exit += 1;
                }
                break Some(hooked.exited.elapsed());
            }
            first = false;
            if hooked.exited.elapsed() > ARRIVAL_BOUND {
                break None;
            }
            std::thread::sleep(Duration::from_millis(1));
        };
        match arrived {
            Some(after) => {
                arrivals.push(after);
                let n = server.interrupts(&ticket)?;
                if n != 1 {
                    duplicated += 1;
                    eprintln!("hook_window: run {i}: {n} interrupt events in {ticket}'s journal");
                }
            }
            None => {
                missing += 1;
                eprintln!(
                    "hook_window: run {i}: {ticket} not interrupted on the server {} s after the hook exited",
                    ARRIVAL_BOUND.as_secs()
                );
            }
        }
        connections.push(proxy.accepted() - before);
        if flags.runs >= 10 && (i + 1) % (flags.runs / 10) == 0 {
            eprintln!(
                "hook_window: {} of {} runs ({:.0} s)",
                i + 1,
                flags.runs,
                started.elapsed().as_secs_f64()
            );
        }
    }
    // A second write of an interrupt that arrives late is a duplicate too.
    std::thread::sleep(Duration::from_secs(1));
    let mut late = 0;
    for i in 0..flags.runs {
        if server.interrupts(&format!("T-{i}"))? > 1 {
            late += 1;
        }
    }

    // The summary.
    let mut sorted = times.clone();
    sorted.sort();
    arrivals.sort();
    let over = times.iter().filter(|t| **t > flags.window).count();
    println!();
    println!(
        "StopFailure hook, {} runs, store {} ms away each way (SELECT 1 through the proxy: {:.1} ms)",
        flags.runs,
        flags.delay.as_millis(),
        millis(proxied_rt)
    );
    println!(
        "  wall time (spawn to exit): min {:.1} ms, p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        percentile(&sorted, 0.0),
        percentile(&sorted, 50.0),
        percentile(&sorted, 99.0),
        percentile(&sorted, 100.0)
    );
    println!(
        "  over the {} ms window: {over} of {}{}",
        flags.window.as_millis(),
        flags.runs,
        if flags.no_window {
            " (reported only: --no-window)"
        } else {
            ""
        }
    );
    println!(
        "  interrupt on the server after the hook's exit: p50 {:.1} ms, max {:.1} ms; \
         arrived {} of {}, never {missing}, more than once {}",
        percentile(&arrivals, 50.0),
        percentile(&arrivals, 100.0),
        arrivals.len(),
        flags.runs,
        duplicated.max(late)
    );
    println!(
        "  already there at the first read after the exit: {at_exit} of {}",
        flags.runs
    );
    connections.sort();
    println!(
        "  connections through the proxy per run (hook and anything it left behind): min {}, max {}",
        connections.first().unwrap_or(&0),
        connections.last().unwrap_or(&0)
    );
    if failed_hooks > 0 {
        println!("  the hook exited non-zero in {failed_hooks} runs");
    }
    println!();
    println!("Per-turn hooks, {TURN_SESSIONS} sessions each owning a loop:");
    let mut roundtrips = 0;
    for turn in &turns {
        let mut t = turn.times.clone();
        t.sort();
        let connected = turn.connections.iter().filter(|c| **c > 0).count();
        println!(
            "  {:<17} connections {:?}, wall time p50 {:.1} ms, max {:.1} ms{}",
            turn.what,
            turn.connections,
            percentile(&t, 50.0),
            percentile(&t, 100.0),
            if turn.no_op {
                " (changes nothing: expected 0 connections)"
            } else {
                " (may refresh owned work)"
            }
        );
        if turn.no_op {
            roundtrips += connected;
        }
        if turn.codes.iter().any(|c| *c != 0) {
            println!("    exit codes {:?}", turn.codes);
            ok = false;
        }
    }

    println!();
    if over > 0 && !flags.no_window {
        println!(
            "FAIL: {over} of {} StopFailure hooks took longer than {} ms",
            flags.runs,
            flags.window.as_millis()
        );
        ok = false;
    }
    if failed_hooks > 0 {
        println!("FAIL: the StopFailure hook exited non-zero in {failed_hooks} runs");
        ok = false;
    }
    if missing > 0 || duplicated > 0 || late > 0 {
        println!(
            "FAIL: interrupts never on the server {missing}, more than once {}",
            duplicated.max(late)
        );
        ok = false;
    }
    if roundtrips > 0 {
        if flags.expect_no_roundtrip {
            println!(
                "FAIL: {roundtrips} per-turn hooks that change nothing connected to the server"
            );
            ok = false;
        } else {
            println!(
                "note: {roundtrips} per-turn hooks that change nothing connected to the server"
            );
        }
    }
    if ok {
        println!("PASS");
    }
    Ok(ok)
}
