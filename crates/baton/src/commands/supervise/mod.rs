//! `baton supervise -- <agent command>`: runs an agent, and when a rate limit stops it, waits
//! for the reset and relaunches the same client in its resume form, so its session-start hook
//! hands it the packet. The decisions are pure (`baton_core::decide::supervise`); this is the
//! process plumbing around them: the child, the signals, the waits, the journal.

use std::collections::BTreeSet;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

use clap::Args;

mod guard;
pub use guard::{COMMAND as GUARD_COMMAND, GuardArgs, run as run_guard};
use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};

use crate::error::{CommandError, ExitStatus};
use crate::output::Report;
use baton_core::client::{Action, Client};
use baton_core::decide::supervise::{
    Attempt, BACKOFF_CAP, Carried, Exit, Next, Outcome, Policy, Tally, continue_prompt, countdown,
    next_step, not_before, outcome,
};
use baton_core::decide::wait::{Wait, decide_wait};
use baton_core::install::settings;
use baton_core::journal::JournalEvent;
use baton_core::model::{InterruptReason, LoopStatus};
use baton_core::text::esc;
use baton_core::time::{format_ts, parse_ts};
use baton_ops::env::Ctx;
use baton_ops::install::Targets;
use baton_ops::owned::owned;
use baton_ops::ticket_loop::Target;
use baton_ops::ticket_loop::gather;
use baton_store::supervise as files;
use baton_store::{StateStore, platform, process};

/// Run an agent, and when a rate limit stops it, wait for the reset and relaunch it where it
/// stopped.
///
/// Give the command that starts the task, after `--`, as you run it: `claude [OPTIONS] -p
/// "<task>"`, `codex [OPTIONS] exec [OPTIONS] "<task>"` or `gemini [OPTIONS] -p "<task>"`,
/// options in any order. supervise finds the task as the client's own parser does (a prompt
/// written right after a variadic option such as `--allowedTools Bash Edit` is one of its
/// values, so it is refused: put it before the option or after `--`); a command it cannot read
/// is refused (exit 2) unless `--task` names the task. The relaunch keeps every option of the
/// command and replaces only the task and the session options: `claude … --resume <session>
/// "<continue>"`, `codex … exec … resume <session> "<continue>"`, `gemini … -p "<continue>" -r
/// <session>`. Its session-start hook hands the model the resume packet.
///
/// When the agent ends with its work interrupted by a rate limit whose error named a reset,
/// supervise waits for it however far off (a 5-hour window, a weekly limit days away), with a
/// countdown on a terminal, and the relaunch is not counted as a restart. A rate limit with no
/// reset named, and an overloaded API (HTTP 529), are retried with a backoff of 1 minute
/// doubling to 30, with jitter, and counted: supervise gives up (exit 1) on one that comes
/// `--give-up-after` (6h) after the first of the run, or after `--max-restarts` counted
/// relaunches.
///
/// It stops, saying why, when the work is finished (exit 0), when the work needs a person
/// (a crash, an ending no rule covers, `never` or `confirm` mode: exit 4), when another live
/// session or supervisor has the work (exit 3), when it gives up, or on SIGINT or SIGTERM,
/// which it passes to the agent (exit 1). It never retries a crash, never takes work over from
/// a live owner, and never runs an agent whose hooks are not installed (`baton init
/// <client>`). Every relaunch, wait and stop is in the work's journal (`baton log`). See
/// docs/supervise.md.
#[derive(Debug, Args)]
pub struct SuperviseArgs {
    /// Give up after N relaunches that did not get past the limit (after a rate limit that
    /// named no reset still to come, or an overloaded API), exit 1. A relaunch after waiting
    /// out a reset the error named is not counted [default: no limit by count, only
    /// `--give-up-after`].
    #[arg(long, value_name = "N")]
    max_restarts: Option<u32>,
    /// Give up (exit 1) on a rate limit with no reset named, or an overload, that comes this
    /// long after the first of a run of such retries. The default outlasts a 5-hour usage
    /// window; a reset the error names is waited for however far off, a weekly limit's days
    /// included. A duration such as `90m`, `6h`, `2d`.
    #[arg(long, value_name = "DURATION", default_value = "6h")]
    give_up_after: String,
    /// The wait after a rate limit that named no reset time, or an overloaded API: FIRST,
    /// doubling with each counted relaunch up to CAP, times a jitter of 0.8 to 1.2. Durations
    /// such as `30s`, `1m`, `2h`.
    #[arg(long, value_name = "FIRST[,CAP]", default_value = "1m,30m")]
    backoff: String,
    /// Supervise only this ticket's loop, so that other supervisors may carry other tickets
    /// of the project [default: the whole project, one supervisor at a time].
    #[arg(long, value_name = "TICKET")]
    ticket: Option<String>,
    /// The agent client, when the program's own name (`claude`, `codex`, `gemini`) does not
    /// say it (a wrapper script).
    #[arg(long, value_parser = Client::NAMES, value_name = "CLIENT")]
    client: Option<String>,
    /// The task, exactly as the agent command passes it, for a command whose options baton
    /// does not know (a wrapper script's own): the relaunch replaces that word and keeps every
    /// other [default: found as the client's own parser finds it].
    #[arg(long, value_name = "TEXT")]
    task: Option<String>,
    /// What a relaunched agent is told in place of the task [default: continue from where it
    /// stopped, following the resume packet, then the task as first given].
    #[arg(long, value_name = "TEXT")]
    resume_prompt: Option<String>,
    /// The agent command and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "AGENT COMMAND")]
    command: Vec<String>,
}

/// The first signal supervise was sent (SIGINT, SIGTERM, SIGHUP), 0 until then, and how many
/// it has been sent.
static SIGNALLED: AtomicI32 = AtomicI32::new(0);
static SIGNALS: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    let _ = SIGNALLED.compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst);
    SIGNALS.fetch_add(1, Ordering::SeqCst);
}

fn catch_signals() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: the handler only stores into an atomic, which is async-signal-safe; the
        // struct is fully initialised before the call.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as *const () as usize;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(sig, &action, std::ptr::null_mut());
        }
    }
}

fn signalled() -> Option<i32> {
    Some(SIGNALLED.load(Ordering::SeqCst)).filter(|&s| s != 0)
}

/// How long what the agent left running has to end after SIGTERM, and after SIGKILL.
const LEFTOVER_GRACE: std::time::Duration = std::time::Duration::from_secs(3);

/// How often the child and the signals are looked at, and how often a wait rereads the state.
const POLL: Duration = Duration::from_millis(50);
const RECHECK: SignedDuration = SignedDuration::from_secs(5);
/// How often a wait for the account's window reads the breakers again.
const WINDOW_RECHECK: SignedDuration = SignedDuration::from_mins(1);
/// How long a probe's agent runs with no limit before its window counts as open again, when
/// no turn of it has ended yet (`claude -p` ends its one turn with the run).
const PROBE_PROOF: Duration = Duration::from_secs(60);

pub fn cmd_supervise(ctx: &Ctx, args: SuperviseArgs) -> Result<Report, CommandError> {
    let client = client_of(&args)?;
    // A run whose hooks are off, or which keeps no session, would work and then leave nothing
    // to resume: refused before anything runs.
    if let Some((option, why)) = client.disabling_option(&args.command) {
        return Err(CommandError::usage(format!(
            "cannot supervise a command with `{}`: {why}",
            esc(&option)
        ))
        .hint(format!(
            "drop `{}`: supervise needs the client's hooks to hear how each run ends, and a session to resume",
            esc(&option)
        )));
    }
    client
        .check_command(&args.command, args.task.as_deref())
        .map_err(|e| {
            CommandError::usage(format!(
                "cannot supervise `{}`: {}",
                esc(&args
                    .command
                    .iter()
                    .map(|a| baton_core::text::shell_quote(a))
                    .collect::<Vec<_>>()
                    .join(" ")),
                e.0
            ))
            .hint("supervise relaunches the agent in its resume form with every option kept and only the task replaced, so it must find the task as the client does: put the prompt where the client reads it, or, for options baton does not know (a wrapper's own), name it with `--task \"<task>\"`")
        })?;
    let policy = Policy {
        backoff: parse_backoff(&args.backoff)?,
        give_up_after: parse_give_up(&args.give_up_after)?,
        max_restarts: args.max_restarts,
    };
    let store = ctx.store()?;
    check_hooks(ctx, client)?;
    let me = process::start_time(std::process::id())
        .map(|start| (std::process::id(), start))
        .ok_or_else(|| {
            CommandError::new(
                ExitStatus::Failure,
                "cannot read this process's start time in /proc",
            )
        })?;
    let ticket_key = args
        .ticket
        .as_deref()
        .map(|t| baton_ops::ticket_loop::Target::derive(ctx, std::ffi::OsStr::new(t)).key);
    store.layout().ensure_state_dir()?;
    store.layout().ensure_ignore_file()?;
    let mut claim = match files::claim(store.layout(), ticket_key.as_deref())? {
        Ok(claim) => claim,
        Err(busy) => return Err(refused_busy(&busy, args.ticket.as_deref())),
    };
    let log = files::create_log(store.layout(), me)?;
    catch_signals();
    // What the agent starts stays under supervise even when its launcher exits, so that
    // stopping supervise stops the agent, whatever launched it.
    baton_store::platform::become_subreaper();
    let mut sup = Supervisor {
        ctx,
        store,
        client,
        args: &args,
        log,
        offset: 0,
        session: None,
        carried: ticket_key.iter().cloned().collect(),
        claimed: ticket_key.into_iter().collect(),
        now: ctx.now,
        fake_clock: ctx.fixed_clock,
        attempts: Vec::new(),
        tally: Tally::default(),
        json: crate::output::wants_json(),
        stdout_resets: Vec::new(),
        stopped: Vec::new(),
        account: baton_ops::window::ctx_account(ctx, client),
        me: format!("supervise:{}:{}", process::host(), me.0),
        probing: false,
    };
    let result = sup.run(&policy, &mut claim);
    if let Err(e) = baton_ops::window::leave(&*sup.store, &sup.me) {
        say(&format!("warning: {}", e.message));
    }
    if let Err(e) = &result {
        // An error ends supervision too: the journal says so.
        sup.journal(
            JournalEvent::SuperviseStop,
            json!({ "status": e.status as u8, "why": e.message, "signal": signalled() }),
        );
    }
    let _ = std::fs::remove_file(&sup.log);
    result
}

struct Supervisor<'a> {
    ctx: &'a Ctx,
    store: std::rc::Rc<dyn StateStore>,
    client: Client,
    args: &'a SuperviseArgs,
    log: PathBuf,
    offset: u64,
    /// The agent's session, as its session-start hook reported it.
    session: Option<String>,
    /// The loop keys of the work the agent has touched.
    carried: BTreeSet<String>,
    claimed: BTreeSet<String>,
    now: Timestamp,
    fake_clock: bool,
    attempts: Vec<Value>,
    /// The relaunches counted against `--max-restarts` and `--give-up-after`.
    tally: Tally,
    /// `--json` was given.
    json: bool,
    /// The resets the agent's stdout signalled in the last attempt.
    stdout_resets: Vec<Timestamp>,
    /// The processes of the last attempt that supervise stopped (`<pid> <name>`): the agent's
    /// tree on a signal, and what the agent left running after it exited.
    stopped: Vec<String>,
    /// The account the agent spends, whose window every launch waits for.
    account: baton_core::breaker::Account,
    /// This supervisor, as the account's breakers name their waiters and probes.
    me: String,
    /// The launch about to run, or running, is its window's probe.
    probing: bool,
}

/// How long supervise waits for a hook still running after its agent exited.
const HOOK_GRACE: Duration = Duration::from_secs(5);

/// Whether `pid` runs `baton hook …`.
fn is_baton_hook(pid: u32) -> bool {
    let args = platform::cmdline(pid);
    args.get(1).is_some_and(|a| a == "hook")
        && args.first().is_some_and(|p| {
            std::path::Path::new(p)
                .file_name()
                .is_some_and(|n| n == "baton")
        })
}

/// `<pid> <name>` of a process, for the journal, or nothing for one already gone.
fn named(pid: u32) -> Option<String> {
    baton_store::platform::comm(pid).map(|name| format!("{pid} {name}"))
}

/// Signals each of `pids`.
fn signal_all(pids: &[u32], sig: libc::c_int) {
    for pid in pids {
        // SAFETY: kill(2) on a process of the agent's tree, found under supervise just now.
        unsafe {
            libc::kill(*pid as i32, sig);
        }
    }
}

impl Supervisor<'_> {
    fn run(&mut self, policy: &Policy, claim: &mut files::Claim) -> Result<Report, CommandError> {
        let mut restarts = 0;
        loop {
            // The account's window first: nothing is said of a launch that waits for it.
            if let Some(stop) = self.wait_for_window(restarts)? {
                return Ok(stop);
            }
            let argv = if restarts == 0 {
                self.args.command.clone()
            } else {
                let prompt = match &self.args.resume_prompt {
                    Some(p) => p.clone(),
                    None => continue_prompt(
                        &self
                            .client
                            .task_of(&self.args.command, self.args.task.as_deref())
                            .map_err(|e| CommandError::usage(e.0))?,
                    ),
                };
                let session = self.session_to_resume()?;
                self.client
                    .def()
                    .resume_command(
                        &self.args.command,
                        self.args.task.as_deref(),
                        session.as_deref(),
                        &prompt,
                    )
                    .map_err(|e| CommandError::usage(e.0))?
            };
            if restarts > 0 {
                self.journal(
                    JournalEvent::SuperviseRelaunch,
                    json!({ "attempt": restarts + 1 }),
                );
            }
            say(&format!(
                "attempt {}: {}",
                restarts + 1,
                esc(&argv
                    .iter()
                    .map(|a| baton_core::text::shell_quote(a))
                    .collect::<Vec<_>>()
                    .join(" "))
            ));
            let started = self.now();
            self.stopped.clear();
            let exit = self.run_child(&argv)?;
            self.probing = false;
            let attempt = self.look_back(exit)?;
            let how = exit_json(exit);
            let mut details = json!({
                "attempt": restarts + 1,
                "started": format_ts(started),
                "session": self.session,
                "command": argv,
            });
            if let (Some(d), Value::Object(how)) = (details.as_object_mut(), how) {
                d.extend(how);
                if !self.stopped.is_empty() {
                    d.insert("stopped".into(), json!(self.stopped));
                }
            }
            self.journal(JournalEvent::SuperviseAttempt, details);
            if let Err(busy) = self.claim_carried(claim)? {
                let err = refused_busy(&busy, None);
                return Ok(self.stop(3, err.message.clone(), &attempt));
            }
            let outcome = outcome(&attempt);
            let now = self.now();
            self.tell_window(&outcome, !attempt.hook_resets.is_empty(), now);
            let next = next_step(&outcome, self.tally, policy, now, jitter());
            // The relaunch time is the best word on when the limit resets (a reset named, else
            // the backoff): each rate-limited loop that records an earlier one (or none) takes
            // it, so every command (the relaunched agent's packet, `baton wait`) agrees.
            let mut carried = attempt.carried.clone();
            if let (Outcome::RateLimited { .. }, Next::Relaunch { at, .. }) = (&outcome, &next) {
                self.record_reset(*at);
                carried = self.carried_now(&BTreeSet::new())?;
            }
            let next = not_before(next, &carried);
            self.tally = self.tally.after(&next, now);
            match next {
                Next::Stop { status, why } => return Ok(self.stop(status, why, &attempt)),
                Next::Relaunch {
                    at,
                    why,
                    reset,
                    source,
                    counted,
                } => {
                    self.journal(
                        JournalEvent::SuperviseWait,
                        json!({
                            "until": format_ts(at),
                            "why": why,
                            "attempt": restarts + 1,
                            "reset": reset.map(format_ts),
                            "source": source.as_str(),
                            "counted": counted,
                        }),
                    );
                    say(&format!("{why}; relaunching at {}", self.ctx.shown(at)));
                    if let Some(stop) = self.wait_until(at, at, &attempt)? {
                        return Ok(stop);
                    }
                    restarts += 1;
                }
            }
        }
    }

    /// The clock: the real one (the server's with a store), or `BATON_NOW` moved on by the
    /// waits. A server that cannot be reached falls back to this machine's clock: the store
    /// call that follows reports it.
    fn now(&self) -> Timestamp {
        if self.fake_clock {
            self.now
        } else {
            self.ctx.clock().unwrap_or_else(|_| Timestamp::now())
        }
    }

    fn at_now(&self, session: Option<String>) -> Ctx {
        let mut ctx = self.ctx.clone();
        ctx.session = session;
        ctx.now = self.now();
        ctx
    }

    /// Runs one attempt to its end, passing on SIGINT and SIGTERM. The agent runs under the
    /// guard (`guard.rs`), which stops its tree should supervise itself be killed.
    fn run_child(&mut self, argv: &[String]) -> Result<Exit, CommandError> {
        let cannot_run = |e: &dyn std::fmt::Display| {
            CommandError::new(
                ExitStatus::Failure,
                format!("cannot run {}: {e}", esc(&argv[0])),
            )
            .hint("is the agent installed and on PATH?")
        };
        let program = &argv[0];
        let found = if program.contains('/') {
            baton_ops::install::is_executable(&self.ctx.dir.join(program))
        } else {
            baton_ops::install::which(program, std::env::var_os("PATH").as_deref()).is_some()
        };
        if !found {
            return Err(cannot_run(&"no such executable"));
        }
        // This very executable: by its path, or, once a newer baton replaced that file during
        // a long wait (the path then ends in ` (deleted)`), through /proc.
        let exe = std::env::current_exe()
            .ok()
            .filter(|p| p.is_file())
            .unwrap_or_else(|| PathBuf::from("/proc/self/exe"));
        let mut cmd = Command::new(&exe);
        cmd.arg(guard::COMMAND)
            .arg("--parent")
            .arg(std::process::id().to_string())
            .arg("--")
            .args(argv)
            .current_dir(&self.ctx.dir);
        // The agent's stdout is passed through as it comes (under `--json`, to stderr: stdout
        // carries supervise's one object), and each line is read for a limit's reset.
        cmd.stdout(std::process::Stdio::piped());
        if self.fake_clock {
            cmd.env("BATON_NOW", format_ts(self.now));
        }
        let mut child = cmd.spawn().map_err(|e| {
            CommandError::new(
                ExitStatus::Failure,
                format!(
                    "baton cannot start its guard for the agent ({}): {e}",
                    exe.display()
                ),
            )
        })?;
        let (found, heard) = std::sync::mpsc::channel();
        if let Some(out) = child.stdout.take() {
            let to_stderr = self.json;
            let clock = self.fake_clock.then_some(self.now);
            let zone = baton_store::local_zone::local_zone();
            std::thread::spawn(move || pass_through(out, to_stderr, clock, &zone, &found));
        }
        let mut forwarded = 0;
        let launched = std::time::Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().map_err(|e| {
                CommandError::new(ExitStatus::Failure, format!("waiting for the agent: {e}"))
            })? {
                break status;
            }
            // A probe whose agent has run a minute without meeting the limit proved the window
            // open (a limit ends a run in seconds, and re-opens the window as it does).
            if self.probing && launched.elapsed() >= PROBE_PROOF {
                self.probing = false;
                let now = self.now();
                let me = baton_ops::window::who(&self.me, now);
                if let Err(e) = baton_ops::window::turn_ran(&*self.store, &self.account, &me, now) {
                    say(&format!("warning: {}", e.message));
                }
            }
            // The first signal is passed on for the agent to end cleanly (its hooks record the
            // interrupt); a second one kills it.
            let sent = SIGNALS.load(Ordering::SeqCst);
            if sent > forwarded {
                let sig = if sent == 1 {
                    signalled().unwrap_or(libc::SIGTERM)
                } else {
                    libc::SIGKILL
                };
                // Everything under the guard: under a launcher (a wrapper script, npm's loader)
                // the agent is further down. The guard exits as the agent does. Until the
                // guard has started the agent, the signal waits.
                let tree = platform::descendants_in_session(child.id(), false);
                if tree.is_empty() {
                    std::thread::sleep(POLL);
                    continue;
                }
                forwarded = sent;
                self.note_stopped(&tree);
                signal_all(&tree, sig);
            }
            std::thread::sleep(POLL);
        };
        self.stop_leftovers();
        // The rest of the agent's output; a process it left behind holding the pipe open is
        // not waited for.
        let deadline = std::time::Instant::now() + STDOUT_DRAIN;
        self.stdout_resets.clear();
        while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
            match heard.recv_timeout(left) {
                Ok(at) => self.stdout_resets.push(at),
                Err(_) => break,
            }
        }
        use std::os::unix::process::ExitStatusExt;
        Ok(match (status.code(), status.signal()) {
            (Some(code), _) => Exit::Code(code),
            (None, Some(sig)) => Exit::Signal(sig),
            (None, None) => Exit::Code(1),
        })
    }

    /// Names `pids` in the attempt's list of stopped processes, before they are signalled: a
    /// process that ends is gone, name and all.
    fn note_stopped(&mut self, pids: &[u32]) {
        for name in pids.iter().filter_map(|pid| named(*pid)) {
            if !self.stopped.contains(&name) {
                self.stopped.push(name);
            }
        }
    }

    /// What the agent left running after it exited (a launcher's agent, a tool call's
    /// background job, now supervise's as their subreaper): asked to end with SIGTERM, killed
    /// after a grace, and reaped, so that nothing works on unsupervised after the attempt is
    /// journalled.
    fn stop_leftovers(&mut self) {
        let left = platform::descendants_in_session(std::process::id(), false);
        self.note_stopped(&left);
        baton_store::platform::stop_processes(&left, LEFTOVER_GRACE);
        // Orphans that had already exited when they were given to supervise.
        platform::reap_children(|_, _| {});
        // A hook still recording when the agent exited (one in a session of its own, such as
        // OpenCode 2.x's, whose server signals its group as the run ends) is waited for,
        // briefly, so that what the attempt left is read after it.
        let deadline = std::time::Instant::now() + HOOK_GRACE;
        while std::time::Instant::now() < deadline
            && platform::descendants(std::process::id())
                .into_iter()
                .any(is_baton_hook)
        {
            std::thread::sleep(POLL);
            platform::reap_children(|_, _| {});
        }
    }

    /// What the attempt left: what its hooks reported, and the work its sessions touched
    /// (work still active after the agent ended is marked interrupted first).
    fn look_back(&mut self, exit: Exit) -> Result<Attempt, CommandError> {
        // With a server store the attempt's failure hooks recorded their interrupts here:
        // they reach the server before the state is read, the process a hook started for one
        // waited for (a lock's wait and the grace at most) while it holds it.
        let layout = self.store.layout().clone();
        let waited = std::time::Instant::now();
        while baton_ops::forward::anything_pending(self.ctx, &layout) {
            let warnings = match baton_ops::forward::forward(&self.at_now(None), &|| {
                Ok(std::rc::Rc::clone(&self.store))
            }) {
                Ok(done) if done.unreachable.is_none() && done.left == 0 => done.warnings,
                Ok(done) => done.all_warnings(),
                Err(e) => vec![e.message],
            };
            let pending = !baton_store::outbox::pending(&layout).is_empty();
            if !pending || waited.elapsed() > self.ctx.lock_wait + std::time::Duration::from_secs(3)
            {
                warnings.iter().for_each(|w| say(&format!("warning: {w}")));
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let (events, offset) = files::read_log(&self.log, self.offset)?;
        self.offset = offset;
        let field = |e: &Value, k: &str| e[k].as_str().map(str::to_string);
        let mut sessions: Vec<String> = Vec::new();
        // The agent's own session is the first to start in the attempt: another client started
        // from one of its tool calls finds this log too, and neither names the session to
        // resume nor says how the agent's turn ended.
        let agent = events
            .iter()
            .find(|e| e["event"] == "start")
            .and_then(|e| field(e, "session"));
        if agent.is_some() {
            self.session = agent.clone();
        }
        let (mut rate_limited, mut resets, mut other) = (false, Vec::new(), None);
        for e in &events {
            let Some(session) = field(e, "session") else {
                continue;
            };
            if !sessions.contains(&session) {
                sessions.push(session.clone());
            }
            if Some(&session) != agent.as_ref() {
                continue;
            }
            match e["reason"].as_str() {
                Some("rate_limit") => rate_limited = true,
                Some("unknown") => other = Some("unknown".to_string()),
                _ => {}
            }
            resets.extend(parse_ts(e["resume_after"].as_str()));
        }
        // A reset the agent printed (Claude Code's limit text, its stream-json
        // `rate_limit_event`).
        resets.append(&mut self.stdout_resets);
        let mut left_active = BTreeSet::new();
        for session in &sessions {
            let owned = owned(&*self.store, session)?;
            for (key, state) in &owned.loops {
                self.carried.insert(key.clone());
                if state.status == LoopStatus::Active {
                    left_active.insert(key.clone());
                }
            }
            if owned
                .loops
                .iter()
                .any(|(_, s)| s.status == LoopStatus::Active)
                || !owned.runs.is_empty()
                || owned.batch.is_some()
            {
                // The agent is gone and nothing recorded how: a crash, never a guess.
                let why = match exit {
                    Exit::Signal(sig) => format!("the agent was killed by signal {sig}"),
                    Exit::Code(code) => format!("the agent exited {code} with its work active"),
                };
                // Only an ordinary exit after a rate limit is one; a signal is a crash.
                let reason =
                    if rate_limited && matches!(exit, Exit::Code(_)) && signalled().is_none() {
                        InterruptReason::RateLimit
                    } else {
                        InterruptReason::Unknown
                    };
                // As the forwarder does for a session that ended: its loops and leases, and
                // the batch it ran unless a pause covers it.
                let stop = baton_ops::forward::Stop {
                    client: self.client.as_str().to_string(),
                    session: session.clone(),
                    event: "supervise".into(),
                    end: true,
                    reason,
                    evidence: why,
                    resume_after: None,
                    message: None,
                    before: None,
                };
                let (stopped, result) =
                    baton_ops::forward::interrupt_session(&self.at_now(None), &*self.store, &stop);
                let failed = result.err().map(|e| e.message);
                for w in stopped.warnings.iter().chain(&failed) {
                    say(&format!("warning: {w}"));
                }
            }
        }
        let carried = self.carried_now(&left_active)?;
        let mut summary = exit_json(exit);
        if let Some(o) = summary.as_object_mut() {
            o.insert("session".into(), json!(agent));
            o.insert("sessions".into(), json!(sessions));
            o.insert("rate_limited".into(), rate_limited.into());
        }
        self.attempts.push(summary);
        Ok(Attempt {
            exit,
            heard: !events.is_empty(),
            signalled: signalled(),
            hook_rate_limit: rate_limited,
            hook_resets: resets,
            hook_other: other,
            hook_overloaded: overloaded_turn(&events, agent.as_deref()),
            carried,
        })
    }

    /// The session the relaunch resumes: the agent's, unless its client keeps nothing of a
    /// session none of whose requests was answered (Gemini CLI) and the session owns no work,
    /// the sign that it got that far. Then none: the relaunch starts a new session, told the
    /// task again.
    fn session_to_resume(&self) -> Result<Option<String>, CommandError> {
        let Some(session) = &self.session else {
            return Ok(None);
        };
        if self.client.def().keeps_unanswered_sessions() {
            return Ok(Some(session.clone()));
        }
        let work = owned(&*self.store, session)?;
        Ok(
            (!work.loops.is_empty() || !work.runs.is_empty() || work.batch.is_some())
                .then(|| session.clone()),
        )
    }

    /// Each carried loop as it stands now, with what waiting for it gives.
    fn carried_now(&self, left_active: &BTreeSet<String>) -> Result<Vec<Carried>, CommandError> {
        let mut out = Vec::new();
        for key in &self.carried {
            let Some(loaded) = self.store.read_loop(key)? else {
                continue;
            };
            let state = loaded.state;
            // The verdict is asked as nobody's session, as a newcomer would see it.
            let target = Target::of_record(key, &state);
            let name = format!("loop {}", target.shown());
            let ctx = self.at_now(None);
            let d = gather(&ctx, &*self.store, target)?.decision;
            let wait = decide_wait(
                d.decision.verdict,
                d.mode,
                parse_ts(d.resume_after.as_deref()),
                ctx.now,
                None,
            );
            out.push(Carried {
                name,
                interrupted: (state.status == LoopStatus::Interrupted).then(|| {
                    state
                        .interrupt_reason
                        .clone()
                        .unwrap_or_else(|| InterruptReason::Unknown.as_str().into())
                }),
                wait: Some(wait),
                left_active: left_active.contains(key),
            });
        }
        Ok(out)
    }

    /// Records `at` as the reset time of each carried loop interrupted by a rate limit that
    /// records none or an earlier one, as the session that owns it (the hooks write for it the
    /// same way).
    fn record_reset(&self, at: Timestamp) {
        for key in &self.carried {
            let Ok(Some(loaded)) = self.store.read_loop(key) else {
                continue;
            };
            let state = loaded.state;
            if state.status != LoopStatus::Interrupted
                || state.interrupt_reason.as_deref() != Some("rate_limit")
                || parse_ts(state.resume_after.as_deref()).is_some_and(|t| t >= at)
            {
                continue;
            }
            let ctx = self.at_now(state.owner().map(str::to_string));
            if let Err(e) = baton_ops::ticket_loop::interrupt(
                &ctx,
                &*self.store,
                Target::of_record(key, &state),
                InterruptReason::RateLimit,
                Some(at),
                &baton_ops::ticket_loop::Ownership::default(),
            ) {
                say(&format!("warning: {}", e.message));
            }
        }
    }

    /// Claims each carried loop this supervisor has not claimed yet (a supervisor of the whole
    /// project already holds them all).
    fn claim_carried(
        &mut self,
        claim: &mut files::Claim,
    ) -> Result<Result<(), files::Busy>, CommandError> {
        if self.args.ticket.is_none() {
            return Ok(Ok(()));
        }
        for key in self.carried.clone() {
            if self.claimed.contains(&key) {
                continue;
            }
            if self.args.ticket.as_deref().is_some_and(|t| {
                baton_ops::ticket_loop::Target::derive(self.ctx, std::ffi::OsStr::new(t)).key == key
            }) {
                self.claimed.insert(key);
                continue;
            }
            match files::claim_more(self.store.layout(), &key)? {
                Ok(file) => {
                    claim.add(file);
                    self.claimed.insert(key);
                }
                Err(busy) => return Ok(Err(busy)),
            }
        }
        Ok(Ok(()))
    }

    /// Waits until `at` (the countdown counting to `shown`), reading the work again every few
    /// seconds: a takeover or a person's
    /// decision meanwhile, or a signal, ends the wait with the stop it calls for.
    fn wait_until(
        &mut self,
        at: Timestamp,
        shown: Timestamp,
        attempt: &Attempt,
    ) -> Result<Option<Report>, CommandError> {
        let progress = std::io::stderr().is_terminal();
        loop {
            if signalled().is_some() {
                if progress {
                    crate::output::to_stderr("\n");
                }
                let why = "stopped by a signal while waiting for the rate limit to reset; the work stays interrupted".to_string();
                return Ok(Some(self.stop(1, why, attempt)));
            }
            let now = self.now();
            if now >= at {
                break;
            }
            if progress {
                // `\x1b[K` clears what a longer line before left.
                crate::output::to_stderr(&format!("\r{}\x1b[K", countdown(shown, now)));
            }
            if self.fake_clock {
                self.now = at;
            } else {
                // Each step is a short monotonic sleep, and the clock is read again after it:
                // the wait is measured in wall-clock time, so a machine suspended for hours
                // relaunches as soon as it wakes past the reset.
                let step = at
                    .duration_since(now)
                    .clamp(SignedDuration::from_millis(10), RECHECK);
                let deadline = std::time::Instant::now() + step.unsigned_abs();
                while std::time::Instant::now() < deadline && signalled().is_none() {
                    std::thread::sleep(POLL.min(deadline - std::time::Instant::now()));
                }
            }
            // Someone may have taken the work, or made it a person's call, meanwhile.
            for c in self.carried_now(&BTreeSet::new())? {
                let stop = match c.wait {
                    Some(Wait::TakenOver) => Some((
                        3,
                        format!("{} is owned by another live session now", c.name),
                    )),
                    Some(Wait::HumanFirst) => Some((
                        4,
                        format!(
                            "{} needs a person before it resumes (`baton resume` says why)",
                            c.name
                        ),
                    )),
                    _ => None,
                };
                if let Some((status, why)) = stop {
                    if progress {
                        crate::output::to_stderr("\n");
                    }
                    return Ok(Some(self.stop(status, why, attempt)));
                }
            }
        }
        if progress {
            crate::output::to_stderr("\n");
        }
        Ok(None)
    }

    /// Waits until the account's window is open for this supervisor (SPEC section 11): while
    /// a window of the account is closed, until its reset (journaled, not counted as a
    /// restart); then while another waiter probes it; then for this supervisor's place among
    /// those that follow. `Some`: a signal or the work ended the wait.
    fn wait_for_window(&mut self, restarts: u32) -> Result<Option<Report>, CommandError> {
        use baton_core::breaker::Gate;
        if self.ctx.settings.window_off {
            return Ok(None);
        }
        let no_attempt = Attempt {
            exit: Exit::Code(0),
            heard: false,
            signalled: None,
            hook_rate_limit: false,
            hook_resets: Vec::new(),
            hook_other: None,
            hook_overloaded: false,
            carried: Vec::new(),
        };
        let mut said = None;
        loop {
            let now = self.now();
            let me = baton_ops::window::who(&self.me, now);
            let gate = baton_ops::window::gate(&*self.store, &self.account, &me, now, true, true)?;
            let (until, line, source) = match &gate {
                Gate::Open => break,
                Gate::Probing { me: true, .. } => {
                    self.probing = true;
                    say(&format!(
                        "{}: the window's reset has passed; this supervisor probes it first",
                        self.account.label
                    ));
                    break;
                }
                Gate::Closed {
                    until,
                    window,
                    label,
                } => (
                    *until,
                    format!(
                        "{label}: the {window} window is closed until {}",
                        self.ctx.shown(*until)
                    ),
                    "account",
                ),
                Gate::Probing { by, .. } => (
                    now + RECHECK,
                    format!(
                        "{}: the window's reset has passed; waiting for the probe ({} on {}) to run a turn",
                        self.account.label, by.id, by.host
                    ),
                    "probe",
                ),
                Gate::Follow { at } => (
                    *at,
                    format!(
                        "{}: the window is open again; following the probe at {}",
                        self.account.label,
                        self.ctx.shown(*at)
                    ),
                    "follow",
                ),
                Gate::Unprobed => (now + RECHECK, String::new(), "probe"),
            };
            if !line.is_empty() && said.as_ref() != Some(&line) {
                say(&line);
                if source != "probe" {
                    self.journal(
                        JournalEvent::SuperviseWait,
                        json!({ "until": format_ts(until), "why": line, "attempt": restarts + 1, "source": source, "account": self.account.label, "counted": false }),
                    );
                }
                said = Some(line);
            }
            // A minute at most between looks: a person's `baton window reopen`, or a probe
            // that went well, ends the wait before the reset.
            let step = until.min(now + WINDOW_RECHECK);
            if let Some(stop) = self.wait_until(step, until, &no_attempt)? {
                return Ok(Some(stop));
            }
        }
        baton_ops::window::leave(&*self.store, &self.me)?;
        Ok(None)
    }

    /// Tells the account's breakers how the attempt ended: a rate limit whose reset only the
    /// agent's output named closes the window (one the hooks reported closed it already), and
    /// a finished run opens a window whose reset passed.
    fn tell_window(&self, outcome: &Outcome, hook_reported: bool, now: Timestamp) {
        let me = baton_ops::window::who(&self.me, now);
        let told = match outcome {
            // A reset the hooks reported closed the window already, with the limit's own
            // words; one read from the agent's output alone is news.
            Outcome::RateLimited { reset: Some(reset) }
                if *reset > now && !self.stdout_resets.is_empty() && !hook_reported =>
            {
                baton_ops::window::trip(&*self.store, &self.account, "", *reset, me, now).map(drop)
            }
            // A run that finished spent the account without a limit. Any other end (a crash,
            // a person's call) says nothing of the window.
            Outcome::Finished => {
                baton_ops::window::turn_ran(&*self.store, &self.account, &me, now).map(drop)
            }
            _ => Ok(()),
        };
        if let Err(e) = told {
            say(&format!("warning: {}", e.message));
        }
    }

    /// Ends supervision: journals the stop and reports it.
    fn stop(&self, status: u8, why: String, attempt: &Attempt) -> Report {
        let signal = attempt.signalled.or_else(signalled);
        self.journal(
            JournalEvent::SuperviseStop,
            json!({ "status": status, "why": why, "signal": signal }),
        );
        let exit = match status {
            0 => ExitStatus::Success,
            3 => ExitStatus::Refused,
            4 => ExitStatus::AskHuman,
            _ => ExitStatus::Failure,
        };
        let verdict = match status {
            0 => "finished",
            3 => "taken_over",
            4 => "ask_human",
            _ if signal.is_some() => "signalled",
            _ => "stopped",
        };
        let work: Vec<String> = self.carried.iter().cloned().collect();
        let mut text = format!("baton supervise: {why}");
        if status != 0 && !work.is_empty() {
            text.push_str("\nnext: `baton resume` shows where the work stands");
        }
        Report::new(
            exit,
            json!({
                "verdict": verdict,
                "why": why,
                "restarts": self.attempts.len().saturating_sub(1),
                "restarts_counted": self.tally.counted,
                "attempts": self.attempts,
                "session": self.session,
                "work": work,
            }),
            text,
        )
    }

    /// Appends one event to the journal of every carried loop; a failure is a warning.
    fn journal(&self, name: JournalEvent, details: Value) {
        let mut details = details;
        if let Some(d) = details.as_object_mut() {
            d.insert("supervisor".into(), std::process::id().into());
            d.insert("client".into(), self.client.as_str().into());
        }
        let ctx = self.at_now(None);
        for w in
            baton_ops::journal::record_attempt(&ctx, &*self.store, &self.carried, name, details)
        {
            say(&format!("warning: {w}"));
        }
    }
}

/// Whether the agent's own session reported a turn ended by an overloaded API (the hook's
/// `"error": "overloaded"`, an HTTP 529).
fn overloaded_turn(events: &[Value], agent: Option<&str>) -> bool {
    events
        .iter()
        .any(|e| agent.is_some() && e["session"].as_str() == agent && e["error"] == "overloaded")
}

/// How the agent ended, as the journal and `--json` say it.
/// How long the agent's output is still read after it exits.
const STDOUT_DRAIN: Duration = Duration::from_secs(2);

/// Passes the agent's stdout through to ours (to stderr with `to_stderr`) as it comes, and
/// sends the reset each line signals (`baton_core::reset::stdout_signal`, at `clock` or the
/// real time). A line is read for a signal up to its first 64 KiB.
fn pass_through(
    mut out: std::process::ChildStdout,
    to_stderr: bool,
    clock: Option<Timestamp>,
    zone: &jiff::tz::TimeZone,
    found: &std::sync::mpsc::Sender<Timestamp>,
) {
    use std::io::{Read, Write};
    const LINE_CAP: usize = 64 * 1024;
    let mut buf = [0u8; 8192];
    let mut line = Vec::new();
    let scan = |line: &[u8]| {
        let now = clock.unwrap_or_else(Timestamp::now);
        if let Some(at) =
            baton_core::reset::stdout_signal(&String::from_utf8_lossy(line), now, zone)
        {
            let _ = found.send(at);
        }
    };
    loop {
        let n = match out.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        let chunk = &buf[..n];
        // Nowhere to write (a closed stdout) is no reason to stop reading: the agent would
        // block on a full pipe.
        let _ = if to_stderr {
            let mut err = std::io::stderr().lock();
            err.write_all(chunk).and_then(|()| err.flush())
        } else {
            let mut stdout = std::io::stdout().lock();
            stdout.write_all(chunk).and_then(|()| stdout.flush())
        };
        for piece in chunk.split_inclusive(|b| *b == b'\n') {
            let room = LINE_CAP.saturating_sub(line.len());
            let ends = piece.last() == Some(&b'\n');
            let body = if ends {
                &piece[..piece.len() - 1]
            } else {
                piece
            };
            line.extend_from_slice(&body[..body.len().min(room)]);
            if ends {
                scan(&line);
                line.clear();
            }
        }
    }
    if !line.is_empty() {
        scan(&line);
    }
}

fn exit_json(exit: Exit) -> Value {
    match exit {
        Exit::Code(code) => json!({ "exit_code": code }),
        Exit::Signal(sig) => json!({ "killed_by_signal": sig }),
    }
}

/// One line of supervise's own on stderr, between the agent's output.
fn say(line: &str) {
    crate::output::to_stderr(&format!("baton supervise: {line}\n"));
}

fn client_of(args: &SuperviseArgs) -> Result<Client, CommandError> {
    if let Some(name) = &args.client {
        return Client::parse(name)
            .ok_or_else(|| CommandError::usage(format!("unknown client {name:?}")));
    }
    let program = args.command.first().map(String::as_str).unwrap_or_default();
    Client::of_program(program).ok_or_else(|| {
        let (last, rest) = Client::NAMES.split_last().unwrap_or((&"", &[]));
        CommandError::usage(format!(
            "supervise does not know the agent `{}`: it relaunches {} and {last}",
            esc(program),
            rest.join(", ")
        ))
        .hint(format!(
            "for a wrapper script, name the client with `--client {}`",
            Client::NAMES.join("|")
        ))
    })
}

fn parse_give_up(raw: &str) -> Result<SignedDuration, CommandError> {
    baton_core::time::parse_duration(raw)
        .filter(|d| !d.is_zero())
        .ok_or_else(|| {
            CommandError::usage(format!("--give-up-after {raw:?} is not a duration"))
                .hint("pass a duration such as `--give-up-after 6h` or `--give-up-after 2d`")
        })
}

fn parse_backoff(raw: &str) -> Result<(SignedDuration, SignedDuration), CommandError> {
    let bad = || {
        CommandError::usage(format!("--backoff {raw:?} is not FIRST[,CAP]"))
            .hint("pass durations such as `--backoff 1m,30m` or `--backoff 5s`")
    };
    let one = |s: &str| baton_core::time::parse_duration(s).filter(|d| !d.is_zero());
    let (first, cap) = match raw.split_once(',') {
        Some((f, c)) => (one(f).ok_or_else(bad)?, one(c).ok_or_else(bad)?),
        None => {
            let first = one(raw).ok_or_else(bad)?;
            (first, BACKOFF_CAP.max(first))
        }
    };
    if cap < first {
        return Err(bad());
    }
    Ok((first, cap))
}

/// Refuses to run an agent whose client has none of baton's hooks for the events supervise
/// relies on, in the project's settings or the user's.
fn check_hooks(ctx: &Ctx, client: Client) -> Result<(), CommandError> {
    let mut found: BTreeSet<String> = BTreeSet::new();
    for user in [false, true] {
        let Ok(targets) = Targets::resolve(ctx, client, user) else {
            continue;
        };
        let Ok(text) = std::fs::read_to_string(&targets.settings) else {
            continue;
        };
        if let Ok(events) = settings::installed_events(&text, client) {
            found.extend(events);
        }
    }
    // Installed as the client's plugin (`baton init <client> --plugin`, then its own install).
    for plugin in baton_ops::install::plugin_hooks(ctx, client) {
        found.extend(plugin.hooks.into_iter().map(|(event, _)| event));
    }
    // A checkpoint's hook (before a compaction) is not how a stop is seen.
    let def = client.def();
    let needed: Vec<&str> = def
        .hook_events()
        .iter()
        .copied()
        .filter(|e| def.action(e, &serde_json::Map::new()) != Some(Action::Checkpoint))
        .collect();
    let missing: Vec<&str> = needed
        .iter()
        .copied()
        .filter(|e| !found.contains(*e))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let name = client.as_str();
    let mut message = format!(
        "baton's {name} hooks are not installed (missing: {}): without them nothing would record why the agent stopped, so supervise does not run it",
        missing.join(", ")
    );
    // Installed at the repository's root, which a client started here does not read.
    if let Ok(layout) = ctx.layout() {
        let here = baton_ops::install::settings_dir(ctx, client, &layout.root);
        let at_root = layout.root.join(def.files(false).settings);
        let installed_at_root = here != layout.root
            && std::fs::read_to_string(&at_root)
                .ok()
                .and_then(|text| settings::installed_events(&text, client).ok())
                .is_some_and(|events| !events.is_empty());
        if installed_at_root {
            message = format!(
                "baton's {name} hooks are installed in {}, but {} started in {} reads only {}: it would run with no hooks, so supervise does not run it",
                at_root.display(),
                def.title(),
                here.display(),
                here.join(def.files(false).settings).display()
            );
        }
    }
    Err(CommandError::usage(message).hint(format!(
        "run `baton init {name}{}` in this directory (or with `--user`), then supervise again",
        if def.keeps_hook_trust() {
            " --trust-project"
        } else {
            ""
        }
    )))
}

fn refused_busy(busy: &files::Busy, ticket: Option<&str>) -> CommandError {
    let who = busy
        .holder
        .map(|p| format!("another `baton supervise` (pid {p})"))
        .unwrap_or_else(|| "another `baton supervise`".into());
    let what = match ticket {
        Some(t) => format!("ticket {}", esc(t)),
        None => "this work".into(),
    };
    CommandError::new(
        ExitStatus::Refused,
        format!(
            "{who} already carries {what} in this project ({})",
            busy.path.display()
        ),
    )
    .hint("one supervisor per piece of work: stop the other one, or give each its own `--ticket`")
}

/// A number in [0, 1) that differs between supervisors and between calls.
fn jitter() -> f64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let mixed = (u64::from(nanos) ^ (u64::from(std::process::id()) << 20))
        .wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (mixed >> 11) as f64 / (1u64 << 53) as f64
}
