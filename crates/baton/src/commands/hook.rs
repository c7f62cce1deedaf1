//! `baton hook <client> <event>`: what an agent client's hook does. The client's definition
//! (`baton_core::client`) maps its payload to one set of actions, carried out here the same for
//! every client, and says where its evidence is and the shape its output takes (docs/hooks.md).
//!
//! A hook fails open: whatever goes wrong is one line on stderr and exit 0. It never exits 2,
//! and prints on stdout only context for the model (a session start's packet, a note after a
//! failure), in the shape the client injects, and one decision: the judge's refusal of a stop
//! on claimed work that is not verified (`baton_ops::judge`), in the client's own shape.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use jiff::Timestamp;
use serde_json::json;

use crate::error::CommandError;
use crate::error::ExitStatus;
use baton_core::client::{Action, Client, Definition, Evidence, TranscriptEnd};
use baton_core::hook::{
    HEARTBEAT_COALESCE_SECS, HOOK_STDIN_CAP, HookEvent, Interrupt, interrupt_for, parse_payload,
};
use baton_core::model::Pauses;
use baton_core::reset::reset_time_in;
use baton_core::time::{format_ts, parse_ts};
use baton_ops::env::Ctx;
use baton_ops::forward::{self, Stop};
use baton_ops::owned::{Checkpointed, Owned, checkpoint, owned};
use baton_ops::ticket_loop::{TakeBack, take_back};
use baton_store::layout::LayoutError;
use baton_store::sessions::{SessionFiles, SessionRecord};
use baton_store::{Layout, StateStore, process};

/// Run by an agent client's hook (installed by `baton init`): reads the client's JSON payload
/// on stdin and keeps baton's state in step with the session. Always exits 0.
///
/// Session start prints the resume packet for the client to put in front of the model (when
/// anything is resumable, with a line for each piece of another session's quiet work); a turn's
/// prompt and stop open and close the turn and refresh what the session owns; a failure (Claude
/// Code's StopFailure) or a session end marks what the session owns as interrupted, with the
/// class the evidence supports; a pre-compaction hook records a checkpoint. The session is the payload's `session_id`, whatever `--session` says.
#[derive(Debug, Args)]
pub struct HookArgs {
    /// The client that runs the hook: `claude`, `codex`, `gemini`, `cursor`, `antigravity`,
    /// `copilot` or `opencode`.
    client: String,
    /// The client's event, as its settings name it (`SessionStart`, `Stop`, `StopFailure`,
    /// `BeforeAgent`, …; case and dashes are ignored).
    event: String,
}

/// Runs the hook; its errors and its panics alike end as one stderr line and exit 0.
pub fn run(dir: Option<PathBuf>, args: HookArgs) -> ExitCode {
    let label = format!(
        "baton hook {} {}",
        baton_core::text::esc(&args.client),
        baton_core::text::esc(&args.event)
    );
    std::panic::set_hook(Box::new(|_| {}));
    let outcome = std::panic::catch_unwind(|| hook(dir, &args));
    let (stdout, error) = match outcome {
        Ok(Ok(out)) => (out.stdout, out.warning),
        Ok(Err(e)) => (None, Some(e)),
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            (None, Some(format!("internal error: {what}")))
        }
    };
    if let Some(out) = stdout {
        let mut lock = std::io::stdout().lock();
        let _ = lock
            .write_all(out.as_bytes())
            .and_then(|()| lock.write_all(b"\n"))
            .and_then(|()| lock.flush());
    }
    if let Some(e) = error {
        let line = e.lines().next().unwrap_or_default().to_string();
        crate::output::to_stderr(&format!("{label}: {}\n", baton_core::text::esc(&line)));
    }
    ExitCode::SUCCESS
}

fn hook(dir: Option<PathBuf>, args: &HookArgs) -> Result<Outcome, String> {
    let client = Client::parse(&args.client).ok_or_else(|| {
        format!(
            "no client {:?}: pass one of {}",
            args.client,
            Client::NAMES.join(", ")
        )
    })?;
    if std::io::IsTerminal::is_terminal(&std::io::stdin()) {
        return Err(
            "the client's JSON payload goes on stdin, which is a terminal: run by the client's hook settings (`baton init`), or pipe a payload in"
                .into(),
        );
    }
    let mut bytes = Vec::new();
    std::io::stdin()
        .take(HOOK_STDIN_CAP as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read the payload on stdin: {e}"))?;
    let event = parse_payload(client, &args.event, &bytes).map_err(|e| e.to_string())?;
    let nothing = Outcome {
        stdout: None,
        warning: None,
    };
    if event.action == Action::Ignored {
        return Ok(nothing);
    }
    if let Action::ToolCall {
        command,
        dir: call_dir,
    } = &event.action
    {
        return Ok(guard_tool(dir, &event, command, call_dir.as_deref()));
    }
    // The session's project: `-C`, else the directory the client says it was started in (the
    // payload's `cwd` follows the agent into a nested repository, where its work is not),
    // else the payload's `cwd`, else where the hook runs.
    let dir = dir.or_else(|| {
        let started = client
            .def()
            .project_dir_variable()
            .and_then(std::env::var_os)
            .map(PathBuf::from);
        let cwd = event.cwd.as_deref().map(PathBuf::from);
        started.into_iter().chain(cwd).find(|d| d.is_dir())
    });
    let ctx = Ctx::from_env(dir, Some(event.session_id.clone())).map_err(|e| e.message)?;
    // Outside a git repository there is no project, so nothing to keep: not an error.
    let layout = match Layout::discover(&ctx.dir, ctx.settings.state_dir.clone()) {
        Ok(layout) => layout,
        Err(LayoutError::NotARepo(_)) => return Ok(nothing),
        Err(e) => return Err(e.to_string()),
    };
    let files = SessionFiles::new(&layout, client.as_str(), &event.session_id);
    let session = Session {
        ctx: &ctx,
        layout,
        connected: std::cell::OnceCell::new(),
        files,
        event: &event,
        warning: std::cell::RefCell::new(None),
    };
    let out = session.act().map_err(|e| e.message)?;
    Ok(Outcome {
        stdout: out,
        warning: session.warning.into_inner(),
    })
}

/// The guard of shared checkouts at a pre-tool hook (docs/guard.md): a command line with no
/// git command the table names passes on its words alone, reading nothing; one that would
/// destroy or move another live session's work is refused in the client's own shape. Whatever
/// goes wrong lets the command run, with one stderr line.
fn guard_tool(
    dir: Option<PathBuf>,
    event: &HookEvent,
    command: &str,
    call_dir: Option<&str>,
) -> Outcome {
    use baton_ops::guard::{Call, Caller, at_tool, planned};
    let mut out = Outcome {
        stdout: None,
        warning: None,
    };
    // Where the agent's shell is (the payload's `cwd` follows its `cd`), and the directory
    // the call names under it.
    let Some(base) = event
        .cwd
        .as_deref()
        .map(PathBuf::from)
        .or(dir)
        .or_else(|| std::env::current_dir().ok())
    else {
        return out;
    };
    let cwd = match call_dir {
        Some(d) => base.join(d),
        None => base,
    };
    let planned = planned(command, &cwd);
    if planned.is_empty() {
        return out;
    }
    let ctx = match Ctx::from_env(Some(cwd), Some(event.session_id.clone())) {
        Ok(ctx) => ctx,
        Err(e) => {
            out.warning = Some(format!(
                "guard: {} (the command was let through)",
                e.message
            ));
            return out;
        }
    };
    let mut lost = None;
    let mut journal = |e: serde_json::Value| {
        let kept = ctx
            .clone()
            .store()
            .map_err(|e| e.message)
            .and_then(|store| {
                store
                    .append_journal(baton_store::JournalTarget::Guard, &e)
                    .map_err(|e| e.to_string())
            });
        if let Err(e) = kept {
            lost = Some(format!("guard: the refusal was not journaled: {e}"));
        }
    };
    let caller = Caller {
        client: event.client.as_str(),
        session: &event.session_id,
    };
    match at_tool(&ctx, &planned, caller, &mut journal) {
        Ok(Call::Refuse { reason, .. }) => {
            out.stdout = event.client.def().tool_refusal(&event.event, &reason);
        }
        Ok(Call::Pass) => {}
        Err(e) => {
            out.warning = Some(format!(
                "guard: {} (the command was let through)",
                e.message
            ));
        }
    }
    out.warning = out.warning.or(lost);
    out
}

/// What a hook prints: on stdout for the client, and at most one line on stderr.
struct Outcome {
    stdout: Option<String>,
    warning: Option<String>,
}

struct Session<'a> {
    /// The hook's surroundings, with this machine's clock: what the session's own files (the
    /// turn mark, the refresh window) are kept by.
    ctx: &'a Ctx,
    layout: Layout,
    /// The store and the context with its clock (the server's, with a shared store), opened
    /// only when the hook has something to read or write there: a turn that changes nothing
    /// makes no round trip.
    connected: std::cell::OnceCell<(Ctx, std::rc::Rc<dyn StateStore>)>,
    files: SessionFiles,
    event: &'a HookEvent,
    /// What went wrong without stopping the hook, for its one stderr line.
    warning: std::cell::RefCell<Option<String>>,
}

impl Session<'_> {
    /// The store, opened on first use, and the context whose clock is the store's. Interrupts
    /// this machine recorded for the server and has not forwarded yet are forwarded first, so
    /// that what the hook reads includes them.
    fn connected(&self) -> Result<(&Ctx, &dyn StateStore), CommandError> {
        if self.connected.get().is_none() {
            // The context's own store (`self.layout` is the one `ctx` finds): the operations
            // run with this context get the same handle.
            let mut ctx = self.ctx.clone();
            let store = ctx.store()?;
            ctx.clock_of(&*store)?;
            if forward::anything_pending(&ctx, &self.layout) {
                match forward::forward(&ctx, &|| ctx.store()) {
                    Ok(done) => {
                        if let Some(w) = done.all_warnings().into_iter().next() {
                            self.warn(w);
                        }
                    }
                    Err(e) => self.warn(e.message),
                }
            }
            let _ = self.connected.set((ctx, store));
        }
        let (ctx, store) = self.connected.get().expect("set above");
        Ok((ctx, &**store))
    }

    fn act(&self) -> Result<Option<String>, CommandError> {
        match &self.event.action {
            Action::SessionStart { .. } => return self.start(),
            Action::TurnOpen => {
                let transcript = self.transcript();
                self.files
                    .open_turn(&format_ts(self.ctx.now), transcript.as_deref())?;
                return Ok(self.after_failure().or_else(|| self.unverified_claims()));
            }
            Action::TurnEnd => {
                self.files.close_turn()?;
                let owned = self.sweep()?;
                self.register_checkout(owned);
                self.turn_ran();
                return Ok(self.judge_stop());
            }
            Action::Failure { .. } | Action::SessionEnd { .. } => self.end()?,
            Action::Checkpoint => self.checkpoint()?,
            // A tool call is the guard's, before any session file is read (`guard_tool`).
            Action::Ignored | Action::ToolCall { .. } => {}
        }
        Ok(None)
    }

    /// Records the session and its client process, and hands over the packet when anything
    /// is resumable. The session's files are hints: failing to keep them is a warning, and the
    /// packet is printed all the same.
    fn start(&self) -> Result<Option<String>, CommandError> {
        // A turn an earlier process of this session left open, its client gone, is read for how
        // it died before this start closes it (`forward::record_dead_turns`).
        forward::record_dead_turns(self.ctx, &self.layout);
        if let Err(e) = self.record_start() {
            self.warn(e.message);
        }
        self.register_checkout(None);
        let source = match &self.event.action {
            Action::SessionStart { source } => source.as_str(),
            _ => "",
        };
        self.tell_supervisor("start", json!({ "source": source }));
        let (ctx, store) = self.connected()?;
        let mut survey = baton_ops::survey::survey(ctx, store)?;
        // The session hears of its own client's windows: another client's account is not what
        // it spends.
        survey.windows.retain(|w| w.client == self.event.client);
        let (packet, markdown) = crate::view::packet_of(&survey);
        // Another session's quiet work is told as information; nothing at all, nothing.
        if packet.items.is_empty()
            && packet.not_offered.is_empty()
            && survey.claims.is_none()
            && survey.windows.is_empty()
        {
            return Ok(None);
        }
        Ok(Some(self.def().session_start_output(&markdown)))
    }

    fn record_start(&self) -> Result<(), CommandError> {
        let layout = &self.layout;
        layout.ensure_state_dir()?;
        layout.ensure_ignore_file()?;
        // What writers of session files killed mid-write left behind, once per session.
        baton_store::sessions::clear_orphans(layout);
        // Where a failure of the session is recorded, made now: the failure hook has 0.1 s.
        baton_store::outbox::ensure(layout)?;
        let previous = self.files.read_record();
        let here = self.client_process();
        let mut record = previous.clone().unwrap_or_else(|| self.new_record());
        record.started_at = Some(format_ts(self.ctx.now));
        // A new start reads the account again (a login may have changed in between).
        record.account = None;
        // A turn left open by an earlier process of this session, killed before its session
        // end, is not this one's. A compaction happens inside a running turn (Codex and Claude
        // Code start the session again with `source: compact`): that turn stays open, and so
        // does any turn of the same client process.
        let compacting =
            matches!(&self.event.action, Action::SessionStart { source } if source == "compact");
        let before = previous
            .as_ref()
            .and_then(|p| Some((p.client_pid?, p.client_pid_start?)));
        let same_process = here.is_some() && before == here;
        if !compacting && !same_process {
            self.files.close_turn()?;
        }
        if let Some((pid, start)) = here {
            record.client_pid = Some(pid);
            record.client_pid_start = Some(start);
            self.files.map_process(
                self.event.client.as_str(),
                &self.event.session_id,
                pid,
                start,
            )?;
        }
        Ok(self.files.write_record(&record)?)
    }

    /// The client process that runs this session: the one a client names to its hooks
    /// (Claude Code's `CLAUDE_PID`), else the nearest agent among the hook's ancestors. A
    /// `CLAUDE_PID` inherited from an outer Claude Code never names another client's process.
    fn client_process(&self) -> Option<(u32, u64)> {
        if self.event.process_shared {
            return None;
        }
        match self.def().pid_variable() {
            Some(variable) => {
                let named = self
                    .ctx
                    .settings
                    .client_pids
                    .iter()
                    .find(|(v, _)| *v == variable)
                    .map(|(v, value)| (*v, value.as_str()));
                process::resolve_holder(None, named)
                    .ok()
                    .and_then(|(found, _)| found)
            }
            None => process::agent_ancestor()
                .and_then(|pid| process::start_time(pid).map(|start| (pid, start))),
        }
    }

    /// The definition of the client that runs the hook.
    fn def(&self) -> &'static dyn Definition {
        self.event.client.def()
    }

    fn new_record(&self) -> SessionRecord {
        SessionRecord {
            client: self.event.client.as_str().into(),
            session_id: self.event.session_id.clone(),
            ..SessionRecord::default()
        }
    }

    /// The judge of "done" at a stop the client lets baton refuse: claimed work that is failed
    /// or unverified on this tree refuses the stop with the evidence. Any failure of the judge
    /// lets the stop through, with one stderr line.
    fn judge_stop(&self) -> Option<String> {
        use baton_core::judge::StopCall;
        use baton_ops::judge::{AtStop, StopContext, at_stop};
        let event = &self.event.event;
        // A client whose stop cannot be refused hears the verdict at its next prompt and start.
        self.def().stop_refusal(event, "")?;
        let signals = self.event.stop;
        // A stop the guards let through unjudged reads no goal.
        let guarded = signals.plan_mode || signals.background || signals.interrupted;
        let stop = StopContext {
            again: signals.again,
            plan_mode: signals.plan_mode,
            background: signals.background,
            interrupted: signals.interrupted,
            goal: if guarded || self.ctx.settings.judge_off {
                None
            } else {
                self.goal()
            },
        };
        // Every verdict the stop acts on goes to the plan's journal, the store opened only then.
        let mut journal = |plan: &str, event: serde_json::Value| {
            let kept = self
                .connected()
                .map_err(|e| e.message)
                .and_then(|(_, store)| {
                    store
                        .append_journal(baton_store::JournalTarget::Judge(plan), &event)
                        .map_err(|e| e.to_string())
                });
            if let Err(e) = kept {
                self.warn(format!("judge: the verdict was not journaled: {e}"));
            }
        };
        let store = || {
            self.connected()
                .map(|(_, store)| store)
                .map_err(|e| baton_ops::error::OpError::broken(e.message))
        };
        match at_stop(
            self.ctx,
            &self.event.session_id,
            &stop,
            &store,
            &mut journal,
        ) {
            Ok(AtStop::Judged(StopCall::Refuse { reason })) => {
                self.def().stop_refusal(event, &reason)
            }
            Ok(AtStop::Judged(StopCall::HandOver { note, .. })) => {
                self.warn(format!("judge: {note}"));
                None
            }
            Ok(_) => None,
            Err(e) => {
                self.warn(format!("judge: {} (the stop was let through)", e.message));
                None
            }
        }
    }

    /// The goal the session works toward, as its client records it; a transcript that cannot
    /// be read is one stderr line, and no goal.
    fn goal(&self) -> Option<baton_core::client::ClientGoal> {
        if self.def().goal_source() == baton_core::client::GoalSource::None {
            return None;
        }
        let transcript = self.transcript();
        match baton_ops::evidence::client_goal(
            self.def(),
            &self.ctx.settings,
            &self.ctx.dir,
            &self.files,
            &self.event.session_id,
            transcript.as_deref().map(std::path::Path::new),
        ) {
            Ok(goal) => goal,
            Err(e) => {
                self.warn(format!("judge: the session's goal was not read: {e}"));
                None
            }
        }
    }

    /// For a client whose stop cannot be refused, its session's claims the judge does not find
    /// verified, told at its next prompt instead (nothing to read for a session that claimed
    /// nothing).
    fn unverified_claims(&self) -> Option<String> {
        let def = self.def();
        if def
            .hook_events()
            .iter()
            .any(|e| def.stop_refusal(e, "").is_some())
        {
            return None;
        }
        let verdicts = match baton_ops::judge::verdicts(self.ctx, &self.event.session_id) {
            Ok(v) => v?,
            Err(e) => {
                self.warn(format!("judge: {}", e.message));
                return None;
            }
        };
        let lines: Vec<String> = verdicts
            .judged
            .iter()
            .filter(|(c, j)| c.confirm.is_none() && *j != baton_core::judge::Judged::Verified)
            .map(|(c, j)| format!("- {}", baton_core::judge::why(c, j)))
            .collect();
        if lines.is_empty() {
            return None;
        }
        let text = format!(
            "baton: this session claimed work complete that is not verified on {}. Do not report it done until `baton verdict` says verified.\n{}",
            verdicts.tree,
            lines.join("\n")
        );
        Some(def.turn_context(&self.event.event, &text))
    }

    /// Keeps the first warning, for the hook's one stderr line.
    fn warn(&self, message: String) {
        self.warning.borrow_mut().get_or_insert(message);
    }

    /// Refreshes what the session owns, at most once per coalescing window (by this machine's
    /// clock, as the session record keeps it: inside the window, no round trip).
    /// Returns the keys of what the session owns, when it refreshed them.
    fn sweep(&self) -> Result<Option<Vec<String>>, CommandError> {
        let swept = self.ctx.now;
        let mut record = self
            .files
            .read_record()
            .unwrap_or_else(|| self.new_record());
        let window = record.window_secs.unwrap_or(HEARTBEAT_COALESCE_SECS);
        if fresh(record.swept_at.as_deref(), swept, window) {
            return Ok(None);
        }
        let (ctx, store) = self.connected()?;
        let owned = self.owned()?;
        let pauses = self.pauses(store);
        let refreshed = baton_ops::owned::refresh(ctx, store, &owned, pauses.as_ref());
        record.window_secs = refreshed.window;
        record.swept_at = Some(format_ts(swept));
        self.files.write_record(&record)?;
        let keys = owned
            .loops
            .iter()
            .map(|(key, _)| key.clone())
            .chain(owned.runs.iter().map(|r| r.run_id.to_string()))
            .collect();
        owned.outcome(refreshed.error)?;
        Ok(Some(keys))
    }

    /// Keeps the session in its repository's registry of checkouts (docs/guard.md), with what
    /// it owns when `owned` says; a failure is the hook's warning.
    fn register_checkout(&self, owned: Option<Vec<String>>) {
        let record = self.files.read_record();
        let checkout = baton_core::guard::Checkout {
            client: self.event.client.as_str().into(),
            session: self.event.session_id.clone(),
            host: process::host(),
            boot_id: process::boot_id(),
            pid: record.as_ref().and_then(|r| r.client_pid),
            pid_start: record.as_ref().and_then(|r| r.client_pid_start),
            worktree: String::new(),
            branch: None,
            head: None,
            index: String::new(),
            owned: Vec::new(),
            refreshed: format_ts(self.ctx.now),
        };
        if let Err(e) = baton_ops::guard::keep_registered(
            &self.ctx.dir,
            checkout,
            owned,
            self.ctx.now,
            baton_ops::guard::REFRESH_SECS,
        ) {
            self.warn(format!(
                "guard: this session was not registered: {}",
                e.message
            ));
        }
    }

    /// A turn ended without a limit: an account window of this client whose reset has passed
    /// is open again, and whoever waits on it follows (`baton_ops::window::turn_ran`). With
    /// the files, a look at the machine's breakers (a `stat` when there are none) decides
    /// whether to open the store; with a server, it is asked only when this hook connected
    /// already (the refresh, once per coalescing window).
    fn turn_ran(&self) {
        let server = forward::shared_server(self.ctx, &self.layout)
            .ok()
            .flatten();
        if server.is_none() {
            let Some(dir) = &self.ctx.settings.machine_dir else {
                return;
            };
            let now = self.ctx.now;
            let book = baton_store::breakers::read(dir).unwrap_or_default();
            let account = || self.session_account();
            // Most turns: no file, or nothing waiting; then the session's own account only.
            let awaiting: Vec<_> = book
                .iter()
                .filter(|b| b.client == self.event.client.as_str() && b.awaits_turn(now))
                .collect();
            let waiting = !awaiting.is_empty() && {
                let account = account();
                awaiting.iter().any(|b| b.of(&account))
            };
            if !waiting {
                return;
            }
        } else if self.connected.get().is_none() {
            return;
        }
        let result = self.connected().and_then(|(ctx, store)| {
            let account = self.session_account();
            let me = baton_ops::window::who(&self.event.session_id, ctx.now);
            Ok(baton_ops::window::turn_ran(store, &account, &me, ctx.now)?)
        });
        if let Err(e) = result {
            self.warn(format!(
                "the account's window was not recorded open: {}",
                e.message
            ));
        }
    }

    /// The account the session spends: kept in its record once read from the client's files,
    /// so that a stop reads them once per start at most.
    fn session_account(&self) -> baton_core::breaker::Account {
        let record = self.files.read_record();
        if let Some(account) = record.as_ref().and_then(|r| r.account.clone()) {
            return account;
        }
        let account = baton_ops::window::ctx_account(self.ctx, self.event.client);
        let mut record = record.unwrap_or_else(|| self.new_record());
        record.account = Some(account.clone());
        if let Err(e) = self.files.write_record(&record) {
            self.warn(e.to_string());
        }
        account
    }

    /// A failure or a session end: one record of it first (its class from the evidence the
    /// hook has, its reset), then what that record implies for the session's work, then the
    /// rest (the supervisor's line, the turn's mark); a session end then forgets the session.
    fn end(&self) -> Result<(), CommandError> {
        let turn_open = self.files.turn_open();
        let now = self.ctx.now;
        // The machine's zone, for a reset named as a clock time with no zone: looked up only
        // when such a time is found (`TZ`, else /etc/localtime: no zoneinfo walk).
        let local = baton_store::local_zone::local_zone;
        // The transcript is read only when it can decide something: a turn that died. The
        // evidence also says when the limit resets, from its own fields where it has them.
        let def = self.def();
        let (transcript, failure_reset) = match (&self.event.action, &self.event.transcript_path) {
            (Action::Failure { error, message }, _) if error == "rate_limit" => {
                // The message names the reset to the minute; the transcript's API-error line,
                // written before the hook runs, holds it to the second (`resetsAt`).
                let stated = self.transcript().and_then(|path| {
                    match baton_ops::evidence::read_transcript(
                        def,
                        std::path::Path::new(&path),
                        now,
                        std::time::Duration::ZERO,
                        &local,
                    ) {
                        TranscriptEnd::RateLimit { resets } => resets,
                        TranscriptEnd::PersonStopped | TranscriptEnd::Unknown => None,
                    }
                });
                (
                    TranscriptEnd::Unknown,
                    stated.or_else(|| reset_time_in(message, now, &local)),
                )
            }
            (Action::SessionEnd { .. }, _)
                if turn_open && matches!(def.evidence(), Evidence::ErrorReports { .. }) =>
            {
                let end = self
                    .files
                    .turn_opened_at()
                    .map_or(TranscriptEnd::Unknown, |opened| {
                        baton_ops::evidence::report_evidence(def, &self.layout, opened, now)
                    });
                (end, None)
            }
            (Action::SessionEnd { reason, .. }, _) if turn_open => match self.transcript() {
                Some(path) => (
                    baton_ops::evidence::read_transcript(
                        def,
                        std::path::Path::new(&path),
                        now,
                        def.transcript_wait(reason),
                        &local,
                    ),
                    None,
                ),
                None => (TranscriptEnd::Unknown, None),
            },
            _ => (TranscriptEnd::Unknown, None),
        };
        let interrupt = interrupt_for(&self.event.action, turn_open, transcript);
        let rate_limited = interrupt.as_ref().is_some_and(|i| i.reason == "rate_limit");
        let resume_after = match transcript {
            TranscriptEnd::RateLimit { resets } => resets,
            TranscriptEnd::PersonStopped | TranscriptEnd::Unknown => failure_reset,
        }
        .filter(|_| rate_limited);
        let result = match &interrupt {
            Some(i) => self.interrupt_owned(i, resume_after),
            None => Ok(()),
        };
        let what = match &self.event.action {
            Action::Failure { .. } => "failure",
            _ => "end",
        };
        let mut details = json!({
            "reason": interrupt.as_ref().map(|i| i.reason),
            "resume_after": resume_after.map(format_ts),
        });
        // The failure's class (`rate_limit`, `overloaded`, …): an overloaded API is a transient
        // failure the supervisor may retry.
        if let (Action::Failure { error, .. }, Some(d)) =
            (&self.event.action, details.as_object_mut())
        {
            d.insert("error".into(), json!(error));
        }
        self.tell_supervisor(what, details);
        match &self.event.action {
            Action::SessionEnd { terminal: true, .. } => {
                let record = self.files.read_record();
                self.files.remove(record.as_ref());
                baton_ops::guard::forget(
                    &self.ctx.dir,
                    self.event.client.as_str(),
                    &self.event.session_id,
                );
            }
            Action::Failure { .. } => {
                self.files.close_turn()?;
            }
            _ => {}
        }
        result
    }

    /// The session's transcript: the payload's, else where the client keeps it
    /// (`Definition::session_transcript`).
    fn transcript(&self) -> Option<String> {
        self.event.transcript_path.clone().or_else(|| {
            baton_ops::evidence::session_transcript(
                self.def(),
                &self.ctx.settings,
                &self.ctx.dir,
                &self.event.session_id,
            )
            .map(|p| p.to_string_lossy().into_owned())
        })
    }

    /// Tells the `baton supervise` this agent runs under, if any, what this hook saw: the
    /// session's id and how its turns ended, even when it owned no work yet. A failure to tell
    /// is the hook's warning.
    fn tell_supervisor(&self, what: &str, details: serde_json::Value) {
        let mut line = json!({
            "ts": format_ts(self.ctx.now),
            "event": what,
            "client": self.event.client.as_str(),
            "session": self.event.session_id,
        });
        if let (Some(line), serde_json::Value::Object(details)) = (line.as_object_mut(), details) {
            line.extend(details);
        }
        if let Err(e) = baton_store::supervise::note_to_supervisor(&self.layout, &line) {
            self.warn(e.to_string());
        }
    }

    /// A session that goes on after its own failure hook interrupted its work (Claude Code's
    /// auto-continue once a usage limit resets, or the person typing again) takes back, as
    /// itself, each loop that failure interrupted, once the loop's recorded reset has passed and
    /// when the prompt comes from the same client process that started the session. What it
    /// cannot take back yet is named in one note with how to take it back (writes to
    /// interrupted work are refused until then); a loop still waiting for its reset is kept for
    /// the next prompt.
    fn after_failure(&self) -> Option<String> {
        // A failure of this session recorded for the server and not forwarded yet: forwarded
        // now (it adds the tickets to the note), and while it cannot be, the note waits for a
        // later prompt.
        if forward::anything_pending(self.ctx, &self.layout) {
            if let Err(e) = self.connected() {
                self.warn(e.message);
                return None;
            }
            if !baton_store::outbox::pending(&self.layout).is_empty() {
                return None;
            }
        }
        let tickets = self.files.take_interrupted();
        if tickets.is_empty() {
            return None;
        }
        let same_process = self.same_process();
        let how = baton_core::hook::how_continued(self.event.prompt.as_deref());
        let connected = if same_process {
            match self.connected() {
                Ok(connected) => Some(connected),
                Err(e) => {
                    self.warn(e.message);
                    None
                }
            }
        } else {
            None
        };
        let mut waiting = Vec::new();
        let mut taken = Vec::new();
        let mut lines = Vec::new();
        for t in &tickets {
            let arg = baton_core::text::shell_quote(&baton_core::text::esc(t));
            let shown = baton_core::text::esc(t);
            let outcome = if let Some((ctx, store)) = connected {
                match take_back(ctx, store, std::ffi::OsStr::new(t), how) {
                    Ok(outcome) => Some(outcome),
                    Err(e) => {
                        self.warn(e.message);
                        None
                    }
                }
            } else {
                None
            };
            match outcome {
                Some(TakeBack::Taken { .. }) => taken.push(t.clone()),
                Some(TakeBack::NotYet { until }) => {
                    waiting.push(t.clone());
                    lines.push(format!(
                        "- {shown}: its rate limit resets at {}; it goes on as this session's own at the first prompt after that (or `baton resume accept {arg}` then)",
                        format_ts(until)
                    ));
                }
                Some(TakeBack::NotOwn { why }) => lines.push(format!(
                    "- {shown}: not this session's to take back ({}); `baton resume {arg}` says who has it",
                    baton_core::text::esc(&why)
                )),
                None => lines.push(format!(
                    "- {shown}: `baton resume {arg}`, then `baton resume accept {arg}`"
                )),
            }
        }
        if !taken.is_empty() {
            self.tell_supervisor("continued", json!({ "how": how, "tickets": taken }));
        }
        if !waiting.is_empty()
            && let Err(e) = self.files.note_interrupted(&waiting)
        {
            self.warn(e.to_string());
        }
        if lines.is_empty() {
            return None;
        }
        let note = format!(
            "baton: an API error ended this session's last turn, and baton marked its work interrupted. Before writing to it again, take it back (writes to interrupted work are refused):\n{}",
            lines.join("\n")
        );
        Some(self.def().turn_context(&self.event.event, &note))
    }

    /// Whether this hook runs in the client process that started the session, as the session
    /// start recorded it. With no process recorded (the client names none and none was found
    /// among the hook's ancestors) the session id alone decides: the failure's note is the
    /// session's own, and it goes with the session's end.
    fn same_process(&self) -> bool {
        let recorded = self
            .files
            .read_record()
            .and_then(|r| Some((r.client_pid?, r.client_pid_start?)));
        match recorded {
            Some(recorded) => self.client_process() == Some(recorded),
            None => true,
        }
    }

    /// Interrupts what the session owns. The failure is recorded first, synced, in this
    /// machine's outbox (a fixed number of syncs and nothing read before it: the client kills
    /// a failure hook after about 0.1 s, and a busy machine may give it less), then applied:
    /// with the files here and now, with a shared store by a process of its own that forwards
    /// it to the server. Killed before it is applied, the record is applied by whatever reads
    /// the state next.
    fn interrupt_owned(
        &self,
        interrupt: &Interrupt,
        resume_after: Option<Timestamp>,
    ) -> Result<(), CommandError> {
        let stop = Stop {
            client: self.event.client.as_str().to_string(),
            session: self.event.session_id.clone(),
            event: self.event.event.clone(),
            end: matches!(self.event.action, Action::SessionEnd { .. }),
            reason: interrupt.reason,
            evidence: interrupt.evidence.clone(),
            resume_after,
            // What the limit said names its window (its first KiB: a message is a line or two).
            message: match &self.event.action {
                Action::Failure { message, .. } if !message.is_empty() => {
                    let end = (0..=message.len().min(1024))
                        .rev()
                        .find(|i| message.is_char_boundary(*i))
                        .unwrap_or(0);
                    Some(message[..end].to_string())
                }
                _ => None,
            },
            before: None,
        };
        let server = forward::shared_server(self.ctx, &self.layout)?;
        forward::record(self.ctx, &self.layout, server.as_deref(), &stop)?;
        // The note the applied interrupt adds its tickets to, for the next prompt; the
        // session's end removes it, as it would remove a full one.
        if !stop.end
            && let Err(e) = self.files.note_interrupted(&[])
        {
            self.warn(e.to_string());
        }
        if server.is_some() {
            return spawn_forwarder(&self.layout);
        }
        // Opening the store applies every record here, this one included; a store opened
        // before (by an earlier step of this hook) is given this one now.
        let (ctx, _) = self.connected()?;
        if baton_store::outbox::anything(&self.layout) {
            let done = forward::forward(ctx, &|| ctx.store())?;
            if let Some(w) = done.all_warnings().into_iter().next() {
                self.warn(w);
            }
        }
        Ok(())
    }

    /// Before a compaction: one `checkpoint` event in the journal of each loop the session
    /// owns, when the positions changed since the session's last checkpoint. Gemini CLI asks
    /// before every model call; a repeat changes nothing, and when no loop of the session was
    /// written on this machine since the last checkpoint (its write mark is the same), it asks
    /// the store nothing either.
    fn checkpoint(&self) -> Result<(), CommandError> {
        let mut record = self
            .files
            .read_record()
            .unwrap_or_else(|| self.new_record());
        let session = &self.event.session_id;
        let mark = baton_store::sessions::write_mark(&self.layout, session);
        if record.checkpoint.is_none() || mark.is_none() || record.checkpoint_mark != mark {
            // The mark first: a write after it changes it, and the next checkpoint looks again.
            let mark = match baton_store::sessions::ensure_write_mark(&self.layout, session) {
                Ok(mark) => Some(mark),
                Err(e) => {
                    self.warn(e.to_string());
                    None
                }
            };
            let (ctx, store) = self.connected()?;
            let owned = owned(store, &self.event.session_id)?;
            let checked = checkpoint(
                ctx,
                store,
                &owned,
                &self.event.event,
                record.checkpoint.as_deref(),
            )?;
            if let Checkpointed::Recorded { fingerprint, .. } = checked {
                record.checkpoint = Some(fingerprint);
            }
            record.checkpoint_mark = mark;
            self.files.write_record(&record)?;
        }
        self.sweep().map(drop)
    }

    /// The pause marks (`baton pause`), when there are any and they can be read.
    fn pauses(&self, store: &dyn StateStore) -> Option<Pauses> {
        match store.read_pause() {
            Ok(found) => found.map(|v| v.state),
            Err(e) => {
                self.warn(e.to_string());
                None
            }
        }
    }

    /// The loops and runs this session owns.
    fn owned(&self) -> Result<Owned, CommandError> {
        Ok(owned(self.connected()?.1, &self.event.session_id)?)
    }
}

/// Starts `baton store forward` for the project at `root` as a process of its own: a session
/// of its own, with none of the hook's standard streams (the client reading the hook's output
/// waits for them to close), so that it outlives the hook and the client that kills it.
fn spawn_forwarder(layout: &Layout) -> Result<(), CommandError> {
    use std::os::unix::process::CommandExt;
    use std::process::Stdio;
    let exe = std::env::current_exe().map_err(|e| {
        CommandError::new(
            ExitStatus::Failure,
            format!("cannot find baton's own executable: {e}"),
        )
    })?;
    let mut cmd = std::process::Command::new(exe);
    cmd.arg("-C")
        .arg(&layout.root)
        .args(["store", "forward", "--retry", "10m"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: setsid and close_descriptors_from are async-signal-safe and touch no memory of
    // the parent. No descriptor the client left open past the standard streams is held: a
    // client waiting for such a pipe to close must not wait for this process.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            baton_store::platform::close_descriptors_from(3);
            Ok(())
        });
    }
    cmd.spawn().map(drop).map_err(|e| {
        CommandError::new(
            ExitStatus::Failure,
            format!(
                "the interrupt is recorded in {}, and `baton store forward` could not be started ({e}); the next baton command here forwards it",
                layout.state_dir.join(baton_store::outbox::OUTBOX_DIR).display()
            ),
        )
    })
}

/// Whether a refresh at `at` is still under `window` seconds old at `now`.
fn fresh(at: Option<&str>, now: Timestamp, window: i64) -> bool {
    baton_ops::owned::fresh(parse_ts(at), now, window)
}
