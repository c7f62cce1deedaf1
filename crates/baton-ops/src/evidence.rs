//! The evidence an agent client leaves of how a turn died: its transcript's tail, or its error
//! reports (Gemini CLI's), read the same way by the hook that hears the session end and by the
//! reader that finds a turn whose client has gone with no hook heard (`forward`).

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use jiff::Timestamp;
use jiff::tz::TimeZone;

use crate::env::Settings;
use baton_core::client::{ClientGoal, Definition, Evidence, GoalSource, TranscriptEnd, UserDir};
use baton_core::hook::{HOOK_STDIN_CAP, TRANSCRIPT_TAIL_BYTES};
use baton_store::Layout;
use baton_store::sessions::{GoalScan, SessionFiles, last_line_where, read_tail, recent_reports};

/// The session's transcript where the client keeps it when its payload names none
/// (`Definition::session_transcript`, under the client's user directory).
pub fn session_transcript(
    def: &dyn Definition,
    settings: &Settings,
    dir: &Path,
    session: &str,
) -> Option<PathBuf> {
    let rel = def.session_transcript()?;
    // A session id is one path component, never a way out of the directory.
    if session.contains('/') || session == ".." || session == "." {
        return None;
    }
    Some(user_dir(def, settings, dir)?.join(rel.replace("{session}", session)))
}

/// The client's user directory (`Definition::user_dir`; a relative one is taken from `dir`).
pub fn user_dir(def: &dyn Definition, settings: &Settings, dir: &Path) -> Option<PathBuf> {
    match def.user_dir() {
        UserDir::Variable { variable, default } => settings
            .client_dirs
            .iter()
            .find(|(v, d)| *v == variable && !d.is_empty())
            .map(|(_, d)| dir.join(d))
            .or_else(|| {
                let home = settings.home.as_ref().filter(|h| !h.is_empty())?;
                Some(PathBuf::from(home).join(default))
            }),
        UserDir::Home => settings
            .home
            .as_ref()
            .filter(|h| !h.is_empty())
            .map(PathBuf::from),
    }
}

/// How much of a transcript a search for the goal reads before it keeps how far it went
/// (`SessionFiles::keep_goal_scan`), so that the next stop reads only what is new.
const GOAL_SCAN_KEPT_AFTER: u64 = 256 * 1024;

/// The goal the session works toward, as its client records it (`Definition::goal_source`):
/// the last record of it in the session's transcript, read from the end (down to where the
/// session's last long search stopped, `files`), or the session's row of the client's goal
/// table.
pub fn client_goal(
    def: &dyn Definition,
    settings: &Settings,
    dir: &Path,
    files: &SessionFiles,
    session: &str,
    transcript: Option<&Path>,
) -> Result<Option<ClientGoal>, baton_store::StoreError> {
    match def.goal_source() {
        GoalSource::None => Ok(None),
        GoalSource::Transcript { marker } => match transcript {
            Some(path) => transcript_goal(def, marker, files, path),
            None => Ok(None),
        },
        GoalSource::ThreadGoals { file } => {
            let Some(user) = user_dir(def, settings, dir) else {
                return Ok(None);
            };
            Ok(baton_store::goals::thread_goal(&user.join(file), session)?
                .and_then(|row| def.goal_row(&row.id, &row.objective, &row.status)))
        }
    }
}

fn transcript_goal(
    def: &dyn Definition,
    marker: &str,
    files: &SessionFiles,
    path: &Path,
) -> Result<Option<ClientGoal>, baton_store::StoreError> {
    let len = match std::fs::metadata(path) {
        Ok(meta) => meta.len(),
        // A transcript not written yet holds no goal.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(baton_store::StoreError::io("stat", path)(e)),
    };
    let name = path.to_string_lossy();
    let kept = files
        .goal_scan()
        .filter(|k| k.transcript == name && k.upto <= len);
    let from = kept.as_ref().map_or(0, |k| k.upto);
    let scan = last_line_where(path, marker.as_bytes(), from, |line| {
        def.goal(line).map(|goal| (line.to_string(), goal))
    })?;
    let (line, goal) = match scan.found {
        Some((line, goal)) => (Some(line), goal),
        // Nothing new: the goal is the one the kept line records.
        None => {
            let line = kept.and_then(|k| k.line);
            let goal = line.as_deref().and_then(|l| def.goal(l)).flatten();
            (line, goal)
        }
    };
    if scan.upto - from > GOAL_SCAN_KEPT_AFTER {
        // A hint: lost, the next stop reads the transcript again.
        let _ = files.keep_goal_scan(&GoalScan {
            transcript: name.into_owned(),
            upto: scan.upto,
            line,
        });
    }
    Ok(goal)
}

/// What the transcript's tail says of the dead turn, read again for up to `wait` while the
/// client may still be writing it (`Definition::transcript_wait`). `local` gives the machine's
/// zone, asked for only when a reset names a clock time without one.
pub fn read_transcript(
    def: &dyn Definition,
    path: &Path,
    now: Timestamp,
    wait: Duration,
    local: &dyn Fn() -> TimeZone,
) -> TranscriptEnd {
    let started = std::time::Instant::now();
    loop {
        let end = match read_tail(path, TRANSCRIPT_TAIL_BYTES) {
            Ok(tail) => def.transcript_end(&tail, now, &local()),
            Err(_) => TranscriptEnd::Unknown,
        };
        if end != TranscriptEnd::Unknown || started.elapsed() >= wait {
            return end;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The client's error reports (Gemini CLI's) written in the temporary directory since `opened`
/// (the turn's opening), read for a rate limit of this project and its reset
/// (`Definition::error_report`).
pub fn report_evidence(
    def: &dyn Definition,
    layout: &Layout,
    opened: SystemTime,
    now: Timestamp,
) -> TranscriptEnd {
    let Evidence::ErrorReports { prefix, suffix } = def.evidence() else {
        return TranscriptEnd::Unknown;
    };
    let root = layout.root.to_string_lossy();
    let reports = recent_reports(
        &std::env::temp_dir(),
        (prefix, suffix),
        opened.checked_sub(Duration::from_secs(1)).unwrap_or(opened),
        HOOK_STDIN_CAP as u64,
        16,
    );
    let zone = baton_store::local_zone::local_zone();
    reports
        .into_iter()
        .map(|report| def.error_report(&report, &root, now, &zone))
        .find(|end| matches!(end, TranscriptEnd::RateLimit { .. }))
        .unwrap_or(TranscriptEnd::Unknown)
}
