//! What the agent clients' hooks keep between one hook call and the next, one session at a
//! time, under `.agentic/sessions/`:
//!
//! - `<client>-<session>.json`, the session record: when the session started, its client
//!   process, when its hooks last refreshed what it owns, and its last checkpoint;
//! - `<client>-<session>.turn`, present while a turn is open (from the prompt hook to the stop
//!   hook): a turn still open when the session ends is a turn that died;
//! - `pid-<pid>-<start>`, the session of a client process, for a tool call that cannot name its
//!   session otherwise (Gemini CLI gives its tool calls no session id);
//! - `ledger-<digest of the plan directory>.json`, the session that last appended to a plan
//!   ledger through baton, and the ledger's length right after, so that the session-start
//!   survey tells a session's own ledger (after a compaction) from another session's.
//!
//! These files are hints, not state: losing one costs a heartbeat, a class or a ledger's owner,
//! never work. The turn mark, the process map and the ledger writer are therefore written
//! without fsync; the per-turn hook runs on every turn of every session and must cost no more
//! than starting the process.

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::layout::{Layout, check_real_dir, make_dir};
use crate::{StoreError, sha256_hex};

pub const SESSIONS_DIR: &str = "sessions";

/// What one session's hooks remember.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionRecord {
    pub client: String,
    pub session_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    /// The client process, with its start time, when the hook found it among its ancestors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_pid: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_pid_start: Option<u64>,
    /// When the hooks last refreshed the liveness of everything this session owns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swept_at: Option<String>,
    /// The refresh window in seconds when a lease the session holds needs a shorter one than
    /// the default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_secs: Option<i64>,
    /// The position of everything this session owned at its last checkpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<String>,
    /// The session's write mark (`write_mark`) when that checkpoint was taken: while it is the
    /// same, no loop of the session was written since, and a checkpoint has nothing to record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint_mark: Option<String>,
    /// The account the session spends (docs/window.md), once a stop needed it: read from the
    /// client's files once per start, not at every turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account: Option<baton_core::breaker::Account>,
}

/// A turn left open, as a reader finds it: the session's record (its client and client
/// process), when the turn was opened (the mark's modification time) and the transcript its
/// prompt hook named.
#[derive(Debug, Clone)]
pub struct TurnMark {
    pub record: SessionRecord,
    pub opened: std::time::SystemTime,
    pub transcript: Option<String>,
}

/// The turns open in this project whose session recorded its client process: at most `limit`,
/// the most recently opened first. A mark with no readable record is left out (nothing tells
/// whose process to look for). One directory read, and a small read for each open turn.
pub fn open_turns(layout: &Layout, limit: usize) -> Vec<TurnMark> {
    let dir = layout.state_dir.join(SESSIONS_DIR);
    if !matches!(check_real_dir(&dir), Ok(true)) {
        return Vec::new();
    }
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut found: Vec<TurnMark> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name();
            let stem = name.to_str()?.strip_suffix(".turn")?.to_string();
            let meta = e.metadata().ok().filter(|m| m.is_file())?;
            let bytes = crate::read::read_state(&e.path(), 64 * 1024).ok()??;
            let text = String::from_utf8_lossy(&bytes);
            let transcript = text
                .lines()
                .nth(1)
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(str::to_string);
            let record_path = dir.join(format!("{stem}.json"));
            let record: SessionRecord = serde_json::from_slice(
                &crate::read::read_state(&record_path, crate::read::STATE_FILE_CAP).ok()??,
            )
            .ok()?;
            // The record must be the one whose files these are.
            let files = SessionFiles::new(layout, &record.client, &record.session_id);
            (files.stem == stem).then_some(())?;
            Some(TurnMark {
                record,
                opened: meta.modified().ok()?,
                transcript,
            })
        })
        .collect();
    found.sort_by_key(|t| std::cmp::Reverse(t.opened));
    found.truncate(limit);
    found
}

/// The names (`<client>-<session>`) of the session records kept here, from one read of the
/// directory: a caller looking up many sessions opens only the records that exist.
pub fn recorded(layout: &Layout) -> std::collections::HashSet<String> {
    let Ok(dir) = std::fs::read_dir(layout.state_dir.join(SESSIONS_DIR)) else {
        return Default::default();
    };
    dir.flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            name.strip_suffix(".json").map(str::to_string)
        })
        .collect()
}

/// One session's files.
pub struct SessionFiles {
    dir: PathBuf,
    stem: String,
}

/// The name the record of `client`'s session `session_id` has among `recorded`'s.
pub fn record_name(client: &str, session_id: &str) -> String {
    format!("{client}-{}", file_safe(session_id))
}

impl SessionFiles {
    pub fn new(layout: &Layout, client: &str, session_id: &str) -> SessionFiles {
        SessionFiles {
            dir: layout.state_dir.join(SESSIONS_DIR),
            stem: record_name(client, session_id),
        }
    }

    /// The name its record has among `recorded`'s.
    pub fn name(&self) -> &str {
        &self.stem
    }

    fn record_path(&self) -> PathBuf {
        self.dir.join(format!("{}.json", self.stem))
    }

    fn turn_path(&self) -> PathBuf {
        self.dir.join(format!("{}.turn", self.stem))
    }

    /// The record, or `None` when there is none or it cannot be read (a hint lost, not an
    /// error).
    pub fn read_record(&self) -> Option<SessionRecord> {
        // As every session file: never through a link, never a FIFO (which would hang the hook
        // and the client waiting for it), never more than a record could be.
        let bytes =
            crate::read::read_state(&self.record_path(), crate::read::STATE_FILE_CAP).ok()??;
        serde_json::from_slice(&bytes).ok()
    }

    pub fn write_record(&self, record: &SessionRecord) -> Result<(), StoreError> {
        ensure_dir(&self.dir)?;
        let mut bytes = serde_json::to_vec_pretty(record).map_err(|e| StoreError::Corrupt {
            path: self.record_path(),
            detail: format!("cannot serialize: {e}"),
        })?;
        bytes.push(b'\n');
        crate::atomic::replace(&self.record_path(), &bytes)
    }

    /// Marks a turn open, with where the client writes its transcript when that is known: a
    /// reader that finds the turn open after the client's process has gone reads there how the
    /// turn died (`TurnMark`). Replaced whole, so that a link planted at the mark's name is
    /// replaced rather than written through.
    pub fn open_turn(&self, opened_at: &str, transcript: Option<&str>) -> Result<(), StoreError> {
        ensure_dir(&self.dir)?;
        // A path is one line: one with a line break in it is not kept.
        let transcript = transcript.filter(|t| !t.contains(['\n', '\r']));
        let text = match transcript {
            Some(t) => format!("{opened_at}\n{t}\n"),
            None => format!("{opened_at}\n"),
        };
        crate::atomic::replace_hint(&self.turn_path(), text.as_bytes())
    }

    fn goal_scan_path(&self) -> PathBuf {
        self.dir.join(format!("{}.goal", self.stem))
    }

    /// How far the last long search of the session's transcript for its goal went, if one was
    /// kept (a hint: lost, the next search reads the whole transcript again).
    pub fn goal_scan(&self) -> Option<GoalScan> {
        let bytes =
            crate::read::read_state(&self.goal_scan_path(), crate::read::STATE_FILE_CAP).ok()??;
        serde_json::from_slice(&bytes).ok()
    }

    /// Keeps how far a search of the transcript for the goal went (no fsync: a hint).
    pub fn keep_goal_scan(&self, scan: &GoalScan) -> Result<(), StoreError> {
        ensure_dir(&self.dir)?;
        let text = serde_json::to_vec(scan).expect("a goal scan serializes");
        crate::atomic::replace_hint(&self.goal_scan_path(), &text)
    }

    /// Whether a turn is open.
    pub fn turn_open(&self) -> bool {
        std::fs::symlink_metadata(self.turn_path()).is_ok()
    }

    /// When the open turn was opened, by its mark's modification time.
    pub fn turn_opened_at(&self) -> Option<std::time::SystemTime> {
        std::fs::symlink_metadata(self.turn_path())
            .and_then(|m| m.modified())
            .ok()
    }

    /// Closes the turn; true when one was open.
    pub fn close_turn(&self) -> Result<bool, StoreError> {
        let path = self.turn_path();
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(StoreError::io("remove", &path)(e)),
        }
    }

    fn interrupted_path(&self) -> PathBuf {
        self.dir.join(format!("{}.interrupted", self.stem))
    }

    /// Notes tickets this session's failure hook interrupted, for its next prompt to hear
    /// about: one line each, appended without fsync (the failure hook has 0.1 s). With no
    /// tickets, makes the note empty: an interrupt forwarded later adds to it
    /// (`note_interrupted_if_kept`), unless the session's end has removed it meanwhile.
    pub fn note_interrupted(&self, tickets: &[String]) -> Result<(), StoreError> {
        ensure_dir(&self.dir)?;
        self.append_interrupted(tickets, true).map(drop)
    }

    /// `note_interrupted` into a note that is still there; false when there is none (the
    /// session has ended since its failure, and forgot it).
    pub fn note_interrupted_if_kept(&self, tickets: &[String]) -> Result<bool, StoreError> {
        self.append_interrupted(tickets, false)
    }

    fn append_interrupted(&self, tickets: &[String], create: bool) -> Result<bool, StoreError> {
        use std::os::unix::fs::OpenOptionsExt;
        let path = self.interrupted_path();
        let lines: String = tickets
            .iter()
            .map(|t| format!("{}\n", t.replace('\n', " ")))
            .collect();
        // Non-blocking and only a regular file: a FIFO planted here must not hang the hook.
        let mut file = match std::fs::OpenOptions::new()
            .append(true)
            .create(create)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(&path)
        {
            Ok(file) => file,
            Err(e) if !create && e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(StoreError::io("append", &path)(e)),
        };
        let meta = file.metadata().map_err(StoreError::io("stat", &path))?;
        if !meta.is_file() {
            return Err(StoreError::NotRegular { path });
        }
        crate::read::refuse_foreign(&meta, &path)?;
        file.write_all(lines.as_bytes())
            .map_err(StoreError::io("append", &path))?;
        Ok(true)
    }

    /// The tickets noted since the last call, each once, in order; the note is gone after.
    pub fn take_interrupted(&self) -> Vec<String> {
        let path = self.interrupted_path();
        let Some(text) = read_small(&path) else {
            return Vec::new();
        };
        let _ = std::fs::remove_file(&path);
        let mut out: Vec<String> = Vec::new();
        for line in text.lines().filter(|l| !l.is_empty()) {
            if !out.iter().any(|t| t == line) {
                out.push(line.to_string());
            }
        }
        out
    }

    /// Removes the session's record, its turn mark, its write mark, its goal search and the map
    /// entry of its client process.
    pub fn remove(&self, record: Option<&SessionRecord>) {
        let _ = std::fs::remove_file(self.turn_path());
        let _ = std::fs::remove_file(self.goal_scan_path());
        if let Some(id) = record.map(|r| r.session_id.as_str()) {
            let _ = std::fs::remove_file(self.dir.join(write_mark_name(id)));
        }
        let _ = std::fs::remove_file(self.record_path());
        let _ = std::fs::remove_file(self.interrupted_path());
        if let Some((pid, start)) = record.and_then(|r| Some((r.client_pid?, r.client_pid_start?)))
        {
            let map = self.dir.join(pid_map_name(pid, start));
            // Only this session's entry: the client may have started another session since.
            if read_small(&map).is_some_and(|s| s.lines().nth(1) == Some(&*self.session_line())) {
                let _ = std::fs::remove_file(map);
            }
        }
    }

    fn session_line(&self) -> String {
        self.stem.clone()
    }

    /// Records that `client` process `(pid, start)` runs this session now.
    pub fn map_process(
        &self,
        client: &str,
        session_id: &str,
        pid: u32,
        start: u64,
    ) -> Result<(), StoreError> {
        ensure_dir(&self.dir)?;
        let path = self.dir.join(pid_map_name(pid, start));
        let body = format!("{client}\n{}\n{session_id}\n", self.session_line());
        crate::atomic::replace_hint(&path, body.as_bytes())
    }
}

fn write_mark_name(session: &str) -> String {
    format!("wrote-{}", file_safe(session))
}

/// Marks that a loop `session` owns was written on this machine, when the session's hooks keep a
/// write mark (`ensure_write_mark`): a new mark each time, so that a pre-compaction hook tells,
/// without asking the store, whether anything it would checkpoint changed since its last
/// checkpoint. A hint: a lost mark costs one round trip.
pub fn mark_write(layout: &Layout, session: &str) -> Result<(), StoreError> {
    let path = layout
        .state_dir
        .join(SESSIONS_DIR)
        .join(write_mark_name(session));
    if !std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file()) {
        return Ok(());
    }
    new_mark(&path).map(drop)
}

fn new_mark(path: &Path) -> Result<String, StoreError> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let mark = format!("{nanos}-{}", std::process::id());
    crate::atomic::replace_hint(path, format!("{mark}\n").as_bytes())?;
    Ok(mark)
}

/// The session's write mark, made when there is none yet (from then on every write of a loop
/// the session owns changes it).
pub fn ensure_write_mark(layout: &Layout, session: &str) -> Result<String, StoreError> {
    if let Some(mark) = write_mark(layout, session) {
        return Ok(mark);
    }
    let dir = layout.state_dir.join(SESSIONS_DIR);
    ensure_dir(&dir)?;
    new_mark(&dir.join(write_mark_name(session)))
}

/// The session's last write mark, `None` when none is kept here.
pub fn write_mark(layout: &Layout, session: &str) -> Option<String> {
    read_small(
        &layout
            .state_dir
            .join(SESSIONS_DIR)
            .join(write_mark_name(session)),
    )
    .map(|s| s.trim().to_string())
}

/// The session that last appended to a plan ledger through baton.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LedgerWriter {
    /// The plan directory, relative to the project root.
    pub plan: String,
    pub session: String,
    /// When it appended.
    pub at: String,
    /// The ledger's length in bytes right after its line.
    pub len: u64,
}

fn ledger_writer_path(layout: &Layout, plan: &str) -> PathBuf {
    layout.state_dir.join(SESSIONS_DIR).join(format!(
        "ledger-{}.json",
        &sha256_hex(plan.as_bytes())[..32]
    ))
}

/// Records who appended to a plan ledger last (a hint: no fsync, and a lost one only means the
/// survey cannot tell whose the ledger is).
pub fn record_ledger_writer(layout: &Layout, writer: &LedgerWriter) -> Result<(), StoreError> {
    let dir = layout.state_dir.join(SESSIONS_DIR);
    ensure_dir(&dir)?;
    let path = ledger_writer_path(layout, &writer.plan);
    let body = serde_json::to_vec(writer).map_err(|e| StoreError::Corrupt {
        path: path.clone(),
        detail: format!("cannot serialize: {e}"),
    })?;
    // A whole file or none: written aside, then renamed over the last one.
    crate::atomic::replace_hint(&path, &body)
}

/// How long a temp file in `sessions/` is left alone even when its writer's pid is gone: a
/// hint is written in microseconds, so only a writer in another pid namespace sharing the
/// directory could still be writing one this old, and none that much older.
const SESSION_TEMP_GRACE: std::time::Duration = std::time::Duration::from_secs(60);

/// Removes the temp files that writers of session files killed mid-write left in
/// `sessions/` (a record's, a turn mark's, a process map's, a ledger writer's). These hints
/// are written without a lock, so a temp file is a dead writer's only when the pid its name
/// carries runs no process and it is older than a live writer could take: never one another
/// live writer is still writing.
pub fn clear_orphans(layout: &Layout) {
    clear_orphans_in(&layout.state_dir.join(SESSIONS_DIR));
}

/// `clear_orphans` for another directory of baton's own whose files are written by replace
/// (the outbox).
pub fn clear_orphans_in(dir: &Path) {
    let dir = dir.to_path_buf();
    if !matches!(check_real_dir(&dir), Ok(true)) {
        return;
    }
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return;
    };
    let now = std::time::SystemTime::now();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let pid = match crate::atomic::temp_target(&name) {
            Some((_, pid)) => pid,
            // What an older baton named a ledger writer's temp file: `.ledger-<digest>.<pid>`.
            None => match name
                .to_str()
                .and_then(|n| n.strip_prefix(".ledger-"))
                .and_then(|n| n.split_once('.'))
                .and_then(|(_, pid)| pid.parse().ok())
            {
                Some(pid) => pid,
                None => continue,
            },
        };
        if pid == std::process::id() || crate::process::start_time(pid).is_some() {
            continue;
        }
        let old = std::fs::symlink_metadata(entry.path())
            .and_then(|m| m.modified())
            .is_ok_and(|at| {
                now.duration_since(at)
                    .is_ok_and(|age| age >= SESSION_TEMP_GRACE)
            });
        if old {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Who appended to the ledger of `plan` last, as recorded; `None` when nobody with a session
/// did, or the hint is lost.
pub fn ledger_writer(layout: &Layout, plan: &str) -> Option<LedgerWriter> {
    let text = read_small(&ledger_writer_path(layout, plan))?;
    serde_json::from_str::<LedgerWriter>(&text)
        .ok()
        .filter(|w| w.plan == plan && !w.session.is_empty())
}

/// How many gate results a plan's evidence keeps: the newest.
pub const GATE_EVIDENCE_CAP: usize = 512;

fn gate_evidence_path(layout: &Layout, plan: &str) -> PathBuf {
    layout
        .state_dir
        .join(SESSIONS_DIR)
        .join(format!("gates-{}.json", &sha256_hex(plan.as_bytes())[..32]))
}

/// The gate results `baton gate run` recorded for a plan, with the tree each ran on, oldest
/// first: the judge's evidence (a line in the ledger, which anyone can write, is not). Empty when
/// there is none or it cannot be read.
pub fn gate_evidence(layout: &Layout, plan: &str) -> Vec<baton_core::judge::GateResult> {
    crate::read::read_state(&gate_evidence_path(layout, plan), 4 * 1024 * 1024)
        .ok()
        .flatten()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

/// Adds gate results to a plan's evidence, keeping the newest `GATE_EVIDENCE_CAP`.
pub fn record_gate_evidence(
    layout: &Layout,
    plan: &str,
    results: &[baton_core::judge::GateResult],
) -> Result<(), StoreError> {
    let dir = layout.state_dir.join(SESSIONS_DIR);
    ensure_dir(&dir)?;
    let mut all = gate_evidence(layout, plan);
    all.extend_from_slice(results);
    let excess = all.len().saturating_sub(GATE_EVIDENCE_CAP);
    all.drain(..excess);
    let path = gate_evidence_path(layout, plan);
    let body = serde_json::to_vec(&all).map_err(|e| StoreError::Corrupt {
        path: path.clone(),
        detail: format!("cannot serialize: {e}"),
    })?;
    crate::atomic::replace_hint(&path, &body)
}

fn judge_path(layout: &Layout, session: &str) -> PathBuf {
    layout.state_dir.join(SESSIONS_DIR).join(format!(
        "judge-{}.json",
        &sha256_hex(session.as_bytes())[..32]
    ))
}

/// What the judge keeps for a session: its claims and its refused stops. `None` when it has
/// never claimed anything (one failed `open`: a stop with nothing claimed costs no more).
pub fn judge_record(layout: &Layout, session: &str) -> Option<baton_core::judge::JudgeRecord> {
    let bytes = crate::read::read_state(&judge_path(layout, session), 256 * 1024).ok()??;
    serde_json::from_slice::<baton_core::judge::JudgeRecord>(&bytes)
        .ok()
        .filter(|r| r.session == session)
}

/// Replaces a session's judge record (whole or not at all; no fsync: a lost record loses a
/// check of the session's claims, never work).
pub fn write_judge_record(
    layout: &Layout,
    record: &baton_core::judge::JudgeRecord,
) -> Result<(), StoreError> {
    let dir = layout.state_dir.join(SESSIONS_DIR);
    ensure_dir(&dir)?;
    let path = judge_path(layout, &record.session);
    let body = serde_json::to_vec(record).map_err(|e| StoreError::Corrupt {
        path: path.clone(),
        detail: format!("cannot serialize: {e}"),
    })?;
    crate::atomic::replace_hint(&path, &body)
}

/// The session a client process runs, as its session-start hook recorded it.
pub fn session_of_process(layout: &Layout, pid: u32, start: u64) -> Option<String> {
    let text = read_small(
        &layout
            .state_dir
            .join(SESSIONS_DIR)
            .join(pid_map_name(pid, start)),
    )?;
    let id = text.lines().nth(2)?.trim();
    (!id.is_empty()).then(|| id.to_string())
}

fn pid_map_name(pid: u32, start: u64) -> String {
    format!("pid-{pid}-{start}")
}

/// A session file's text, read as a state file is: not through a symlink, not another user's
/// file, at most 4 KiB. Anything else is no record at all, so a planted file cannot name the
/// session a tool call belongs to.
fn read_small(path: &Path) -> Option<String> {
    let bytes = crate::read::read_state(path, 4096).ok()??;
    String::from_utf8(bytes).ok()
}

/// A session id as a file name: kept when it is short and plain (the clients send UUIDs),
/// hashed otherwise, so no id can reach outside the directory.
pub fn file_safe(id: &str) -> String {
    let plain = !id.is_empty()
        && id.len() <= 80
        && !id.starts_with('.')
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if plain {
        id.to_string()
    } else {
        format!("h{}", &sha256_hex(id.as_bytes())[..32])
    }
}

/// Creates a directory of baton's own under `.agentic/` (`sessions/`, `init/`), 0700, with an
/// ignore file of its own, so that a project whose `.agentic/.gitignore` predates the directory
/// never commits what is in it.
pub fn ensure_dir(dir: &Path) -> Result<(), StoreError> {
    if check_real_dir(dir)? {
        return Ok(());
    }
    make_dir(dir)?;
    let ignore = dir.join(".gitignore");
    use std::os::unix::fs::OpenOptionsExt;
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&ignore)
    {
        Ok(mut file) => file
            .write_all(b"*\n")
            .map_err(StoreError::io("write", &ignore)),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(StoreError::io("create", &ignore)(e)),
    }
}

/// The text of each regular file in `dir` named `<prefix>…<suffix>`, modified at or after
/// `since` and at most `cap` bytes long, newest first, at most `limit` of them: a client's
/// error reports, read for evidence of how a turn ended. Anything unreadable is left out.
pub fn recent_reports(
    dir: &Path,
    (prefix, suffix): (&str, &str),
    since: std::time::SystemTime,
    cap: u64,
    limit: usize,
) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<(std::time::SystemTime, PathBuf)> = entries
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.starts_with(prefix) && n.ends_with(suffix))
        })
        .filter_map(|e| {
            let meta = std::fs::symlink_metadata(e.path()).ok()?;
            let modified = meta.modified().ok()?;
            (meta.is_file() && meta.len() <= cap && modified >= since).then(|| (modified, e.path()))
        })
        .collect();
    found.sort_by_key(|f| std::cmp::Reverse(f.0));
    found
        .into_iter()
        .take(limit)
        .filter_map(|(_, path)| crate::read::read_capped(&path, cap).ok().flatten())
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
        .collect()
}

/// What `last_line_where` found, and how far the file's whole lines went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found<T> {
    pub found: Option<T>,
    /// The offset just past the file's last line break (`from` when there is none after it): a
    /// later search from there sees every line it has not.
    pub upto: u64,
}

/// Reads a file's lines backwards, from its end down to the line that starts at `from`, in
/// blocks, and gives `take` each line that holds `needle` until it returns `Some`: the last
/// record of a kind in a transcript of any length, without reading more than the lines after
/// it (nor keeping more than one block and the line in hand).
pub fn last_line_where<T>(
    path: &Path,
    needle: &[u8],
    from: u64,
    mut take: impl FnMut(&str) -> Option<T>,
) -> Result<Found<T>, StoreError> {
    const BLOCK: u64 = 256 * 1024;
    let mut file = open_regular(path)?;
    let mut end = file.metadata().map_err(StoreError::io("stat", path))?.len();
    let from = from.min(end);
    let finder = memchr::memmem::FinderRev::new(needle);
    let mut upto = None;
    // The bytes after the last newline seen so far: the end of a line whose start is earlier.
    let mut carry: Vec<u8> = Vec::new();
    while end > from {
        let start = end.saturating_sub(BLOCK).max(from);
        let mut block = vec![0; (end - start) as usize];
        file.seek(SeekFrom::Start(start))
            .map_err(StoreError::io("seek", path))?;
        file.read_exact(&mut block)
            .map_err(StoreError::io("read", path))?;
        if upto.is_none() {
            upto = memchr::memrchr(b'\n', &block).map(|i| start + i as u64 + 1);
        }
        block.extend_from_slice(&carry);
        // Whole lines are those after the block's first newline (all of it at `from`).
        let whole_from = if start == from {
            0
        } else {
            match memchr::memchr(b'\n', &block) {
                Some(i) => i + 1,
                None => {
                    carry = block;
                    end = start;
                    continue;
                }
            }
        };
        let mut line_end = block.len();
        while let Some(at) = finder.rfind(&block[whole_from..line_end]) {
            let at = whole_from + at;
            let line_start = memchr::memrchr(b'\n', &block[..at]).map_or(0, |i| i + 1);
            let stop = memchr::memchr(b'\n', &block[at..line_end]).map_or(line_end, |i| at + i);
            if let Some(found) = take(&String::from_utf8_lossy(&block[line_start..stop])) {
                return Ok(Found {
                    found: Some(found),
                    upto: upto.unwrap_or(from),
                });
            }
            line_end = line_start;
        }
        block.truncate(whole_from);
        carry = block;
        end = start;
    }
    Ok(Found {
        found: None,
        upto: upto.unwrap_or(from),
    })
}

/// How far a search of the session's transcript for its goal went, and the goal's last line up
/// to there (`SessionFiles::goal_scan`): the next search reads only what the client wrote since.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GoalScan {
    pub transcript: String,
    pub upto: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<String>,
}

/// Opens a file for reading, non-blocking, and only a regular file: a FIFO or a device named as
/// the transcript must not hang a hook the client waits for.
fn open_regular(path: &Path) -> Result<std::fs::File, StoreError> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::File::options()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(StoreError::io("open", path))?;
    let meta = file.metadata().map_err(StoreError::io("stat", path))?;
    if !meta.is_file() {
        return Err(StoreError::NotRegular { path: path.into() });
    }
    Ok(file)
}

/// The last `max` bytes of a file, from the start of the first whole line in them: enough of a
/// transcript to see how its last turn ended without reading the whole of it.
pub fn read_tail(path: &Path, max: u64) -> Result<String, StoreError> {
    let mut file = open_regular(path)?;
    let len = file.metadata().map_err(StoreError::io("stat", path))?.len();
    let from = len.saturating_sub(max);
    file.seek(SeekFrom::Start(from))
        .map_err(StoreError::io("seek", path))?;
    let mut bytes = Vec::new();
    file.take(max)
        .read_to_end(&mut bytes)
        .map_err(StoreError::io("read", path))?;
    let start = if from == 0 {
        0
    } else {
        bytes
            .iter()
            .position(|&b| b == b'\n')
            .map_or(bytes.len(), |i| i + 1)
    };
    Ok(String::from_utf8_lossy(&bytes[start..]).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(dir: &Path) -> Layout {
        Layout {
            root: dir.into(),
            state_dir: dir.join(".agentic"),
        }
    }

    #[test]
    fn a_session_file_is_read_only_when_it_is_a_small_file_of_this_user() {
        let tmp = tempfile::tempdir().unwrap();
        let layout = layout(tmp.path());
        let files = SessionFiles::new(&layout, "gemini", "s-1");
        files.map_process("gemini", "s-1", 42, 7).unwrap();
        assert_eq!(session_of_process(&layout, 42, 7).as_deref(), Some("s-1"));
        let map = layout
            .state_dir
            .join(SESSIONS_DIR)
            .join(pid_map_name(42, 7));
        // A symlink to a file that names another session is not followed.
        let elsewhere = tmp.path().join("planted");
        std::fs::write(&elsewhere, "gemini\nx\nsomeone-else\n").unwrap();
        std::fs::remove_file(&map).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &map).unwrap();
        assert_eq!(session_of_process(&layout, 42, 7), None);
        // Nor is a file larger than any record baton writes.
        std::fs::remove_file(&map).unwrap();
        std::fs::write(&map, format!("gemini\nx\ns-1\n{}", " ".repeat(5000))).unwrap();
        assert_eq!(session_of_process(&layout, 42, 7), None);
        // Nor, when it can be made here (as root), another user's file.
        std::fs::write(&map, "gemini\nx\ns-1\n").unwrap();
        let path = std::ffi::CString::new(map.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid C string; the call only changes the file's owner.
        if unsafe { libc::chown(path.as_ptr(), 65534, 65534) } == 0 {
            assert_eq!(session_of_process(&layout, 42, 7), None);
        }
    }

    #[test]
    fn a_turn_opens_and_closes() {
        let tmp = tempfile::tempdir().unwrap();
        let files = SessionFiles::new(&layout(tmp.path()), "codex", "abc-1");
        assert!(!files.turn_open());
        files.open_turn("2026-01-01T00:00:00Z", None).unwrap();
        assert!(files.turn_open());
        assert!(files.close_turn().unwrap());
        assert!(!files.close_turn().unwrap());
        let ignore = tmp.path().join(".agentic/sessions/.gitignore");
        assert_eq!(std::fs::read_to_string(ignore).unwrap(), "*\n");
    }

    #[test]
    fn a_process_maps_to_its_session_until_the_session_ends() {
        let tmp = tempfile::tempdir().unwrap();
        let l = layout(tmp.path());
        let files = SessionFiles::new(&l, "gemini", "s-1");
        files.map_process("gemini", "s-1", 42, 7).unwrap();
        assert_eq!(session_of_process(&l, 42, 7).as_deref(), Some("s-1"));
        assert_eq!(session_of_process(&l, 42, 8), None);
        // A later session of the same process takes the entry over; the first one's end leaves
        // it alone.
        let later = SessionFiles::new(&l, "gemini", "s-2");
        later.map_process("gemini", "s-2", 42, 7).unwrap();
        let record = SessionRecord {
            client_pid: Some(42),
            client_pid_start: Some(7),
            ..SessionRecord::default()
        };
        files.remove(Some(&record));
        assert_eq!(session_of_process(&l, 42, 7).as_deref(), Some("s-2"));
        later.remove(Some(&record));
        assert_eq!(session_of_process(&l, 42, 7), None);
    }

    #[test]
    fn hostile_session_ids_stay_inside_the_directory() {
        assert_eq!(file_safe("01a22c0a-85ba"), "01a22c0a-85ba");
        for id in ["../../etc/x", "", ".hidden", "a/b", &"x".repeat(200)] {
            let safe = file_safe(id);
            assert!(
                safe.starts_with('h') && safe.len() == 33,
                "{id:?} -> {safe}"
            );
        }
    }

    #[test]
    fn a_transcript_that_is_no_regular_file_is_refused_at_once() {
        let tmp = tempfile::tempdir().unwrap();
        let fifo = tmp.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(read_tail(&fifo, 100).is_err());
        assert!(read_tail(Path::new("/dev/zero"), 100).is_err());
        assert!(last_line_where(&fifo, b"x", 0, |_| Some(())).is_err());
    }

    /// The last line holding the needle that `take` accepts, found from the end, in a file of
    /// many blocks, with lines that span blocks, and with or without a final newline.
    #[test]
    fn the_last_line_of_a_kind_is_found_from_the_end() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("t.jsonl");
        let filler = "f".repeat(100_000);
        let mut text = String::new();
        for i in 0..20 {
            text.push_str(&format!("{filler} {i}\n"));
            if i % 7 == 0 {
                text.push_str(&format!("mark {i}\n"));
            }
        }
        // A line of a million bytes holding the needle, which `take` turns down.
        text.push_str(&format!("mark {} no\n", "m".repeat(1_000_000)));
        let whole = text.len() as u64;
        text.push_str("tail");
        std::fs::write(&path, &text).unwrap();
        let all = |needle: &[u8], from: u64| {
            last_line_where(&path, needle, from, |l| Some(l.to_string())).unwrap()
        };
        let take = |l: &str| (!l.ends_with("no")).then(|| l.to_string());
        assert_eq!(
            last_line_where(&path, b"mark", 0, take).unwrap(),
            Found {
                found: Some("mark 14".to_string()),
                upto: whole
            }
        );
        assert_eq!(all(b"tail", 0).found.as_deref(), Some("tail"));
        assert_eq!(all(b"mark 0", 0).found.as_deref(), Some("mark 0"));
        let mut seen = Vec::new();
        let none: Found<()> = last_line_where(&path, b"mark", 0, |l| {
            seen.push(l.len());
            None
        })
        .unwrap();
        assert_eq!(
            none,
            Found {
                found: None,
                upto: whole
            }
        );
        assert_eq!(seen, [1_000_008, 7, 6, 6]);
        assert_eq!(all(b"absent", 0).found, None);
        // From a line's start on, the lines before it are not read.
        let at_14 = text.find("mark 14").unwrap() as u64;
        assert_eq!(all(b"mark 7", at_14).found, None);
        assert_eq!(all(b"mark 14", at_14).found.as_deref(), Some("mark 14"));
        assert_eq!(all(b"mark", whole).found, None);
        assert_eq!(
            all(b"tail", whole),
            Found {
                found: Some("tail".into()),
                upto: whole
            }
        );
        std::fs::write(&path, "").unwrap();
        assert_eq!(
            all(b"x", 0),
            Found {
                found: None,
                upto: 0
            }
        );
        // Past the end (a file rewritten shorter): nothing, from its end.
        std::fs::write(&path, "x\n").unwrap();
        assert_eq!(
            all(b"x", 9),
            Found {
                found: None,
                upto: 2
            }
        );
    }

    #[test]
    fn the_tail_starts_at_a_whole_line() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("t.jsonl");
        std::fs::write(&path, "first line\nsecond\nthird\n").unwrap();
        assert_eq!(
            read_tail(&path, 100).unwrap(),
            "first line\nsecond\nthird\n"
        );
        assert_eq!(read_tail(&path, 10).unwrap(), "third\n");
    }
}
