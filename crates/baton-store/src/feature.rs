//! The active feature's files (session continuation): the pointer, its `TASKS.md`, the
//! `REVIEW_NEEDED.md` and `HANDOVER.md` artifacts, and the one step that changes the pointer and
//! `TASKS.md` together.
//!
//! These are the project's own files, not baton's state: they live in the work tree where the
//! originating project keeps them, and any of them may be hand-edited, missing, a link or
//! garbage. Reading never fails on them: what is wrong becomes a problem (a degraded pointer)
//! or a warning, and no path read from the pointer ever leads outside the project root.
//!
//! # One step across two files
//!
//! `set --resume-point` changes the pointer's phase and the task markers. Two renames are not
//! one, so under the feature lock baton first writes a roll-forward record
//! (`<state dir>/resume-point.json`: each file's path, the SHA-256 of what it held before, and
//! what it must hold after), then replaces the pointer, then `TASKS.md`, then removes the
//! record. A process killed anywhere in between leaves the record behind, and the next call
//! that reads the feature completes it under the lock: a file still holding its `before` bytes
//! gets its `after` bytes, one already holding `after` is left, and one edited since (neither)
//! is left alone with a warning. Either both files change or, when killed before the record
//! landed, neither.

use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use jiff::Timestamp;
use serde::Serialize;

use crate::git::Changes;
use crate::layout::{Layout, LockScope, check_real_dir, make_dir};
use crate::lock::DirLock;
use crate::read::{STATE_FILE_CAP, read_capped, read_state};
use crate::{StoreError, atomic, sha256_hex};
use baton_core::Reason;
use baton_core::feature::{
    FeaturePointer, PointerFacts, ResumePointFile, ResumePointRecord, ReviewNeeded, TaskList,
    feature_dir, parse_review_needed, parse_tasks, pointer_problems,
};
use baton_core::model::SCHEMA_VERSION;

pub use baton_core::feature::POINTER_PATH;

/// The cap artifact, in the feature directory.
pub const REVIEW_NEEDED_FILE: &str = "REVIEW_NEEDED.md";
pub const TASKS_FILE: &str = "TASKS.md";
/// The originating project's checkpoint artifact, in the feature directory.
pub const HANDOVER_FILE: &str = "HANDOVER.md";
/// The roll-forward record, in the state directory.
pub const RESUME_POINT_RECORD: &str = "resume-point.json";

/// A pointer is a few hundred bytes; anything near this is not one.
pub const POINTER_CAP: u64 = 1024 * 1024;
/// A `TASKS.md` of a large feature is tens of kilobytes.
pub const TASKS_CAP: u64 = 4 * 1024 * 1024;
pub const REVIEW_NEEDED_CAP: u64 = 1024 * 1024;

/// Everything read about the active feature. Paths are relative to the project root.
#[derive(Debug, Clone, Serialize)]
pub struct FeatureFacts {
    pub pointer_path: PathBuf,
    /// `None` when the pointer could not be read (a `feature.unreadable` problem says why).
    #[serde(skip)]
    pub pointer: Option<FeaturePointer>,
    /// The pointer's bytes as read, for the rewrite to check against.
    #[serde(skip)]
    pub pointer_bytes: Option<Vec<u8>>,
    /// What is wrong with the pointer; any problem makes it degraded.
    pub problems: Vec<Reason>,
    /// The feature directory, when the pointer names one that exists inside the root.
    pub dir: Option<PathBuf>,
    /// `<dir>/TASKS.md`, when there is a directory.
    pub tasks_path: Option<PathBuf>,
    #[serde(skip)]
    pub tasks_text: Option<String>,
    /// `None` when there is no `TASKS.md` or it cannot be read.
    pub tasks: Option<TaskList>,
    /// Changed paths inside the feature directory (baton's own state left out).
    pub dirty: Vec<String>,
    /// Changed paths inside the pointer's `scope` (its `allowed` globs, less its `forbidden`
    /// ones), when it declares a non-empty `allowed` list.
    pub scope_dirty: Option<Vec<String>>,
    pub review_needed_path: Option<PathBuf>,
    pub review_needed: Option<ReviewNeeded>,
    /// `<dir>/HANDOVER.md`, when there is one.
    pub handover: Option<PathBuf>,
    /// Things worth knowing that do not degrade the pointer.
    pub warnings: Vec<String>,
}

impl FeatureFacts {
    pub fn is_degraded(&self) -> bool {
        !self.problems.is_empty()
    }

    /// The task the next session resumes, as the markers stand: the first in progress, else
    /// the first open one not blocked.
    pub fn resume_task(&self) -> Option<&baton_core::feature::Task> {
        let tasks = self.tasks.as_ref()?;
        tasks
            .first_in_progress()
            .or_else(|| tasks.first_open_unblocked())
    }

    /// A readable pointer whose phase is not terminal.
    pub fn is_active(&self) -> bool {
        self.pointer.as_ref().is_some_and(|p| !p.is_terminal())
    }
}

/// The feature lock, held for a read-check-write of the feature's files.
#[derive(Debug)]
pub struct FeatureLock {
    _lock: DirLock,
}

/// Takes the feature lock, creating the state directory and its ignore file as every store lock
/// does.
pub fn lock_feature(layout: &Layout, wait: Duration) -> Result<FeatureLock, StoreError> {
    layout.ensure_state_dir()?;
    layout.ensure_ignore_file()?;
    let path = layout.lock_file(LockScope::Feature);
    if let Some(dir) = path.parent()
        && !check_real_dir(dir)?
    {
        make_dir(dir)?;
    }
    Ok(FeatureLock {
        _lock: DirLock::acquire(&path, wait)?,
    })
}

/// What reading a project file found.
enum Found {
    Missing,
    Bytes(Vec<u8>),
    /// Why it was not read.
    Refused(String),
}

/// Whether `rel` can be reached from `root` without passing a symbolic link: `Err` names the
/// link. Components that do not exist end the walk (nothing beyond them exists either).
fn walk_without_links(root: &Path, rel: &Path) -> Result<(), String> {
    let mut at = root.to_path_buf();
    for part in rel.components() {
        match part {
            Component::Normal(p) => at.push(p),
            _ => return Err(format!("{} is not a plain relative path", rel.display())),
        }
        match std::fs::symlink_metadata(&at) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let shown = at.strip_prefix(root).unwrap_or(&at);
                return Err(format!("{} is a symbolic link", shown.display()));
            }
            Ok(_) => {}
            Err(_) => return Ok(()),
        }
    }
    Ok(())
}

/// Reads `root/rel` with a cap, never through a link, never anything but a regular file.
fn read_in_root(root: &Path, rel: &Path, cap: u64) -> Found {
    if let Err(why) = walk_without_links(root, rel) {
        return Found::Refused(format!(
            "{why}; baton never reads a project file through a link"
        ));
    }
    match read_capped(&root.join(rel), cap) {
        Ok(None) => Found::Missing,
        Ok(Some(bytes)) => Found::Bytes(bytes),
        Err(StoreError::Symlink { .. }) => Found::Refused(
            "it is a symbolic link; baton never reads a project file through a link".into(),
        ),
        Err(StoreError::TooLarge { size, cap, .. }) => {
            Found::Refused(format!("it is {size} bytes, over the {cap}-byte cap"))
        }
        Err(StoreError::NotRegular { .. }) => Found::Refused("it is not a regular file".into()),
        Err(e) => Found::Refused(e.to_string()),
    }
}

fn unreadable(rule: baton_core::Rule, rel: &Path, why: &str, fix: &str) -> Reason {
    Reason::new(
        rule,
        format!(
            "{}: cannot be read: {}; {fix}",
            baton_core::text::esc(&rel.to_string_lossy()),
            baton_core::text::esc(why)
        ),
    )
}

/// Reads the active feature. `None` when there is no pointer file. `changes` is the one `git
/// status` of the caller (a session-start scan asks git once for everything). A roll-forward
/// record left by a killed `--set-resume-point` is completed first, under the feature lock.
///
/// Once anything has ever taken the feature lock (its sidecar exists), the read itself runs
/// under it, so that it never sees the pointer changed and `TASKS.md` not yet: a writer holds
/// the lock for the whole of its two-file change, for milliseconds. A project that never set a
/// resume point has no sidecar, and the read creates nothing.
pub fn read_feature(
    layout: &Layout,
    changes: &Changes,
    now: Timestamp,
    lock_wait: std::time::Duration,
) -> Result<Option<FeatureFacts>, StoreError> {
    if layout.check_state_dir()?
        && (layout.lock_file(LockScope::Feature).exists() || pending_record(layout)?)
    {
        let lock = lock_feature(layout, lock_wait)?;
        return read_feature_locked(layout, changes, now, &lock);
    }
    read_facts(layout, changes, None, Vec::new())
}

/// `read_feature` for a caller that already holds the feature lock.
pub fn read_feature_locked(
    layout: &Layout,
    changes: &Changes,
    now: Timestamp,
    lock: &FeatureLock,
) -> Result<Option<FeatureFacts>, StoreError> {
    let warnings = complete_pending(layout, lock, now)?;
    read_facts(layout, changes, Some(lock), warnings)
}

/// The feature pointer alone, parsed; `None` when there is none, or it cannot be read or
/// parsed (a degraded pointer is for `read_feature` to report, not for a hook to act on).
pub fn read_pointer(layout: &Layout) -> Result<Option<FeaturePointer>, StoreError> {
    Ok(
        match read_in_root(&layout.root, Path::new(POINTER_PATH), POINTER_CAP) {
            Found::Bytes(bytes) => FeaturePointer::parse(&bytes).ok(),
            Found::Missing | Found::Refused(_) => None,
        },
    )
}

fn read_facts(
    layout: &Layout,
    changes: &Changes,
    lock: Option<&FeatureLock>,
    warnings: Vec<String>,
) -> Result<Option<FeatureFacts>, StoreError> {
    let root = &layout.root;
    let pointer_path = PathBuf::from(POINTER_PATH);
    let mut facts = FeatureFacts {
        pointer_path: pointer_path.clone(),
        pointer: None,
        pointer_bytes: None,
        problems: Vec::new(),
        dir: None,
        tasks_path: None,
        tasks_text: None,
        tasks: None,
        dirty: Vec::new(),
        scope_dirty: None,
        review_needed_path: None,
        review_needed: None,
        handover: None,
        warnings,
    };
    let mut orphan_dirs = vec![PathBuf::from(".aspis/current")];
    match read_in_root(root, &pointer_path, POINTER_CAP) {
        Found::Missing => {
            // No pointer, no feature; a killed write may still have left its temp file.
            clear_orphans(layout, &orphan_dirs, lock);
            return Ok(None);
        }
        Found::Refused(why) => facts.problems.push(unreadable(
            baton_core::Rule::FeatureUnreadable,
            &pointer_path,
            &why,
            "replace it with the real file (the feature scaffold writes it)",
        )),
        Found::Bytes(bytes) => match FeaturePointer::parse(&bytes) {
            Ok(pointer) => {
                facts.pointer = Some(pointer);
                facts.pointer_bytes = Some(bytes);
            }
            Err(why) => facts.problems.push(unreadable(
                baton_core::Rule::FeatureUnreadable,
                &pointer_path,
                &why,
                "fix the JSON by hand, or re-create it with the feature scaffold",
            )),
        },
    }
    if let Some(pointer) = &facts.pointer {
        if let Some(scope) = pointer.scope().filter(|s| !s.allowed.is_empty()) {
            let state = layout.state_dir_in_tree();
            facts.scope_dirty = Some(
                changes
                    .paths
                    .iter()
                    .filter(|p| !state.as_ref().is_some_and(|s| Path::new(p).starts_with(s)))
                    .filter(|p| scope.contains(p))
                    .cloned()
                    .collect(),
            );
        }
        let rel = pointer.path().and_then(|p| feature_dir(p).ok());
        let (inside, is_dir) = match &rel {
            Some(rel) => match walk_without_links(root, rel) {
                Ok(()) => (true, root.join(rel).is_dir()),
                Err(_) => (false, false),
            },
            None => (true, false),
        };
        facts.problems.extend(pointer_problems(
            pointer,
            PointerFacts {
                path_is_dir: is_dir,
                path_inside_root: inside,
                checked_out: changes.branch.as_deref(),
            },
        ));
        if let Some(rel) = rel.filter(|_| inside && is_dir) {
            read_feature_dir(layout, changes, &rel, &mut facts);
            orphan_dirs.push(rel.clone());
            facts.dir = Some(rel);
        }
    }
    clear_orphans(layout, &orphan_dirs, lock);
    Ok(Some(facts))
}

fn read_feature_dir(layout: &Layout, changes: &Changes, dir: &Path, facts: &mut FeatureFacts) {
    let root = &layout.root;
    let tasks_path = dir.join(TASKS_FILE);
    match read_in_root(root, &tasks_path, TASKS_CAP) {
        Found::Missing => {}
        Found::Refused(why) => facts.problems.push(unreadable(
            baton_core::Rule::FeatureTasksUnreadable,
            &tasks_path,
            &why,
            "replace it with the real file",
        )),
        Found::Bytes(bytes) => match String::from_utf8(bytes) {
            Ok(text) => {
                let list = parse_tasks(&text);
                let dup = list.duplicate_ids();
                if !dup.is_empty() {
                    facts.warnings.push(format!(
                        "{}: task ids on more than one line: {}; a marker baton sets is set on each",
                        tasks_path.display(),
                        baton_core::text::esc_join(dup)
                    ));
                }
                facts.tasks = Some(list);
                facts.tasks_text = Some(text);
            }
            Err(e) => facts.problems.push(unreadable(
                baton_core::Rule::FeatureTasksUnreadable,
                &tasks_path,
                &format!("it is not UTF-8 text ({})", e.utf8_error()),
                "save it as UTF-8",
            )),
        },
    }
    facts.tasks_path = Some(tasks_path);
    let state = layout.state_dir_in_tree();
    let excluded: Vec<&Path> = state.iter().map(PathBuf::as_path).collect();
    facts.dirty = changes
        .inside(dir, &excluded)
        .into_iter()
        .map(String::from)
        .collect();
    let review_path = dir.join(REVIEW_NEEDED_FILE);
    match read_in_root(root, &review_path, REVIEW_NEEDED_CAP) {
        Found::Missing => {}
        Found::Refused(why) => facts.warnings.push(format!(
            "{}: not read: {}",
            review_path.display(),
            baton_core::text::esc(&why)
        )),
        Found::Bytes(bytes) => {
            facts.review_needed = Some(parse_review_needed(&String::from_utf8_lossy(&bytes)));
            facts.review_needed_path = Some(review_path);
        }
    }
    let handover = dir.join(HANDOVER_FILE);
    if walk_without_links(root, &handover).is_ok() && root.join(&handover).is_file() {
        facts.handover = Some(handover);
    }
}

/// The names `atomic::replace` gives its temp files for the feature's files.
fn is_feature_temp(name: &str) -> bool {
    [
        "active_feature.json",
        TASKS_FILE,
        REVIEW_NEEDED_FILE,
        RESUME_POINT_RECORD,
    ]
    .iter()
    .any(|target| {
        name.strip_prefix('.')
            .and_then(|rest| rest.strip_prefix(target))
            .is_some_and(|rest| rest.starts_with(".tmp-"))
    })
}

/// Removes the temp files a writer killed mid-replace left beside the feature's files (and the
/// record's in the state directory). Every such writer holds the feature lock, so a temp file
/// found while the lock is free (or held by this caller) belongs to a dead writer.
fn clear_orphans(layout: &Layout, dirs: &[PathBuf], held: Option<&FeatureLock>) {
    let mut found = Vec::new();
    let mut look = |dir: PathBuf| {
        if let Ok(entries) = std::fs::read_dir(&dir) {
            for entry in entries.flatten() {
                if entry.file_name().to_str().is_some_and(is_feature_temp) {
                    found.push(entry.path());
                }
            }
        }
    };
    for dir in dirs {
        if walk_without_links(&layout.root, dir).is_ok() {
            look(layout.root.join(dir));
        }
    }
    if matches!(layout.check_state_dir(), Ok(true)) {
        look(layout.state_dir.clone());
    }
    if found.is_empty() {
        return;
    }
    let lock_path = layout.lock_file(LockScope::Feature);
    // A writer creates the lock file before its temp file.
    let _free = match held {
        Some(_) => None,
        None if !lock_path.exists() => None,
        None => match DirLock::try_acquire(&lock_path) {
            Ok(Some(guard)) => Some(guard),
            _ => return,
        },
    };
    for path in found {
        let _ = std::fs::remove_file(path);
    }
}

/// One file of a resume point: what it holds now, and what it will hold.
#[derive(Debug, Clone)]
pub struct FileEdit {
    /// Relative to the project root.
    pub path: PathBuf,
    pub before: Vec<u8>,
    pub after: Vec<u8>,
}

fn record_path(layout: &Layout) -> PathBuf {
    layout.state_dir.join(RESUME_POINT_RECORD)
}

fn pending_record(layout: &Layout) -> Result<bool, StoreError> {
    if !layout.check_state_dir()? {
        return Ok(false);
    }
    Ok(std::fs::symlink_metadata(record_path(layout)).is_ok())
}

/// Changes the files in one step (see the module docs): record, each file in order, then the
/// record removed. Returns warnings (none unless a file changed in between). Each file must still hold its `before` bytes (checked under the lock, since
/// the project's own tools do not take baton's lock), or nothing is written.
pub fn apply_resume_point(
    layout: &Layout,
    lock: &FeatureLock,
    now: Timestamp,
    edits: &[FileEdit],
) -> Result<Vec<String>, StoreError> {
    let mut files = Vec::new();
    for edit in edits {
        let path = checked_edit_path(layout, &edit.path.to_string_lossy()).map_err(|why| {
            StoreError::Corrupt {
                path: edit.path.clone(),
                detail: why,
            }
        })?;
        match read_in_root(&layout.root, &path, TASKS_CAP) {
            Found::Bytes(now) if now == edit.before => {}
            _ => {
                return Err(StoreError::ChangedUnderfoot {
                    path: layout.root.join(&path),
                });
            }
        }
        let after = String::from_utf8(edit.after.clone()).map_err(|_| StoreError::Corrupt {
            path: edit.path.clone(),
            detail: "the new content is not UTF-8".into(),
        })?;
        files.push(ResumePointFile {
            path: path.to_string_lossy().into_owned(),
            before_sha256: sha256_hex(&edit.before),
            after,
        });
    }
    let record = ResumePointRecord {
        schema_version: SCHEMA_VERSION,
        created_at: baton_core::time::format_ts(now),
        files,
    };
    let mut bytes = serde_json::to_vec_pretty(&record).map_err(|e| StoreError::Corrupt {
        path: record_path(layout),
        detail: format!("cannot serialize: {e}"),
    })?;
    bytes.push(b'\n');
    if bytes.len() as u64 > STATE_FILE_CAP {
        return Err(StoreError::TooLargeToWrite {
            path: record_path(layout),
            size: bytes.len() as u64,
            cap: STATE_FILE_CAP,
        });
    }
    atomic::replace(&record_path(layout), &bytes)?;
    roll_forward(layout, lock, &record)
}

/// A record's path, checked before anything is written to it: only the pointer or a
/// `TASKS.md`, relative, inside the root and reached without a link. A record is baton's own
/// file, but the state directory may be shared or planted; it never steers a write elsewhere.
fn checked_edit_path(layout: &Layout, raw: &str) -> Result<PathBuf, String> {
    let rel = feature_dir(raw)?;
    let is_pointer = rel == Path::new(POINTER_PATH);
    let is_tasks = rel.file_name().is_some_and(|n| n == TASKS_FILE);
    if !is_pointer && !is_tasks {
        return Err(format!(
            "{raw:?} is neither the feature pointer nor a {TASKS_FILE}"
        ));
    }
    walk_without_links(&layout.root, &rel)?;
    Ok(rel)
}

/// Completes a record found on disk, under the lock. Returns warnings.
fn complete_pending(
    layout: &Layout,
    lock: &FeatureLock,
    now: Timestamp,
) -> Result<Vec<String>, StoreError> {
    if !pending_record(layout)? {
        return Ok(Vec::new());
    }
    let path = record_path(layout);
    let bytes = match read_state(&path, STATE_FILE_CAP) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => return Ok(Vec::new()),
        Err(e) => {
            return Ok(vec![format!(
                "a resume-point record was left, but {e}; move it aside once the pointer and TASKS.md are checked: `mv {0} {0}.bad`",
                path.display()
            )]);
        }
    };
    let record: ResumePointRecord = match serde_json::from_slice(&bytes) {
        Ok(r) => r,
        Err(e) => {
            return Ok(vec![format!(
                "{} is not a resume-point record ({e}); it was left alone: check the pointer and TASKS.md, then `mv {0} {0}.bad`",
                path.display()
            )]);
        }
    };
    if record.schema_version > SCHEMA_VERSION {
        return Ok(vec![format!(
            "{} has schema_version {}; this baton knows up to {SCHEMA_VERSION} and left it alone",
            path.display(),
            record.schema_version
        )]);
    }
    let mut warnings = roll_forward(layout, lock, &record)?;
    let when = baton_core::time::parse_ts(Some(&record.created_at))
        .map(|t| {
            format!(
                " from {} ago",
                baton_core::time::human_age(baton_core::time::age(now, t))
            )
        })
        .unwrap_or_default();
    warnings.insert(
        0,
        format!("completed a resume point{when} that a killed `baton continue --set-resume-point` left half done"),
    );
    Ok(warnings)
}

/// Brings each file of `record` to its `after` bytes when it still holds its `before` bytes,
/// then removes the record. Returns a warning for each file left alone.
fn roll_forward(
    layout: &Layout,
    _lock: &FeatureLock,
    record: &ResumePointRecord,
) -> Result<Vec<String>, StoreError> {
    use std::os::unix::fs::PermissionsExt;
    let mut warnings = Vec::new();
    for file in &record.files {
        let rel = match checked_edit_path(layout, &file.path) {
            Ok(rel) => rel,
            Err(why) => {
                warnings.push(format!(
                    "resume-point record: {why}; that file was left alone"
                ));
                continue;
            }
        };
        let full = layout.root.join(&rel);
        let current = match read_in_root(&layout.root, &rel, TASKS_CAP) {
            Found::Bytes(bytes) => bytes,
            Found::Missing => {
                warnings.push(format!(
                    "{} is gone since the resume point was set; it was not re-created",
                    rel.display()
                ));
                continue;
            }
            Found::Refused(why) => {
                warnings.push(format!("{}: {why}; it was left alone", rel.display()));
                continue;
            }
        };
        let hash = sha256_hex(&current);
        if hash == sha256_hex(file.after.as_bytes()) {
            continue;
        }
        if hash != file.before_sha256 {
            warnings.push(format!(
                "{} was edited after the resume point was set; it was left as it is, check its markers",
                rel.display()
            ));
            continue;
        }
        let mode = std::fs::metadata(&full)
            .map(|m| m.permissions().mode() & 0o777)
            .unwrap_or(0o644);
        atomic::replace_with_mode(&full, file.after.as_bytes(), mode)?;
        // The umask may have narrowed the mode asked for; the project's own mode wins.
        let _ = std::fs::set_permissions(&full, std::fs::Permissions::from_mode(mode));
    }
    let path = record_path(layout);
    crate::faults::point("remove")
        .and_then(|()| std::fs::remove_file(&path))
        .map_err(StoreError::io("remove", &path))?;
    atomic::sync_dir(&layout.state_dir)?;
    Ok(warnings)
}

/// Writes `<dir>/REVIEW_NEEDED.md` atomically, under the feature lock. Returns its path,
/// relative to the root.
pub fn write_review_needed(
    layout: &Layout,
    _lock: &FeatureLock,
    dir: &Path,
    text: &str,
) -> Result<PathBuf, StoreError> {
    let rel = dir.join(REVIEW_NEEDED_FILE);
    walk_without_links(&layout.root, &rel).map_err(|_| StoreError::Symlink {
        path: layout.root.join(&rel),
    })?;
    if text.len() as u64 > REVIEW_NEEDED_CAP {
        return Err(StoreError::TooLargeToWrite {
            path: layout.root.join(&rel),
            size: text.len() as u64,
            cap: REVIEW_NEEDED_CAP,
        });
    }
    atomic::replace_with_mode(&layout.root.join(&rel), text.as_bytes(), 0o644)?;
    Ok(rel)
}

/// Removes `<dir>/REVIEW_NEEDED.md`; `false` when there was none.
pub fn clear_review_needed(
    layout: &Layout,
    _lock: &FeatureLock,
    dir: &Path,
) -> Result<bool, StoreError> {
    let rel = dir.join(REVIEW_NEEDED_FILE);
    walk_without_links(&layout.root, dir).map_err(|_| StoreError::Symlink {
        path: layout.root.join(dir),
    })?;
    let full = layout.root.join(&rel);
    match std::fs::remove_file(&full) {
        Ok(()) => {
            atomic::sync_dir(&layout.root.join(dir))?;
            Ok(true)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(StoreError::io("remove", &full)(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The feature as read at the epoch with the default lock wait.
    fn read(layout: &Layout) -> Result<Option<FeatureFacts>, StoreError> {
        read_feature(layout, &changes(), Timestamp::UNIX_EPOCH, DEFAULT_LOCK_WAIT)
    }
    use crate::lock::DEFAULT_LOCK_WAIT;

    const POINTER: &str = "{\n  \"id\": \"F-001\",\n  \"slug\": \"x\",\n  \"title\": \"X\",\n  \"path\": \".aspis/features/F-001-x\",\n  \"branch\": \"main\",\n  \"mode\": \"mvp\",\n  \"phase\": \"plan\"\n}\n";

    fn project() -> (tempfile::TempDir, Layout) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join(".aspis/current")).unwrap();
        std::fs::create_dir_all(root.join(".aspis/features/F-001-x")).unwrap();
        std::fs::write(root.join(POINTER_PATH), POINTER).unwrap();
        std::fs::write(
            root.join(".aspis/features/F-001-x/TASKS.md"),
            "- [~] T-01 a\n- [ ] T-02 b\n",
        )
        .unwrap();
        let layout = Layout {
            state_dir: root.join(".agentic"),
            root,
        };
        (dir, layout)
    }

    fn changes() -> Changes {
        Changes {
            branch: Some("main".into()),
            paths: vec![
                ".aspis/features/F-001-x/TASKS.md".into(),
                "README.md".into(),
            ],
            ..Changes::default()
        }
    }

    #[test]
    fn reads_a_good_feature() {
        let (_d, layout) = project();
        let with_scope = POINTER.replace(
            "\"phase\": \"plan\"",
            "\"phase\": \"plan\",\n  \"scope\": {\"allowed\": [\"*.md\"], \"forbidden\": [\".aspis/**\"]}",
        );
        std::fs::write(layout.root.join(POINTER_PATH), with_scope).unwrap();
        let facts = read(&layout).unwrap().unwrap();
        assert!(facts.problems.is_empty(), "{:?}", facts.problems);
        assert_eq!(
            facts.dir.as_deref(),
            Some(Path::new(".aspis/features/F-001-x"))
        );
        assert_eq!(facts.tasks.unwrap().tasks.len(), 2);
        assert_eq!(facts.dirty, [".aspis/features/F-001-x/TASKS.md"]);
        assert_eq!(facts.scope_dirty, Some(vec!["README.md".to_string()]));
        assert!(facts.review_needed.is_none());
    }

    #[test]
    fn no_pointer_is_no_feature() {
        let (_d, layout) = project();
        std::fs::remove_file(layout.root.join(POINTER_PATH)).unwrap();
        assert!(read(&layout).unwrap().is_none());
    }

    /// A pointer's path never leads a read outside the root, whichever way it tries.
    #[test]
    fn hostile_paths_are_problems_and_nothing_outside_is_read() {
        let (_d, layout) = project();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("TASKS.md"), "- [ ] T-01 secret\n").unwrap();
        std::os::unix::fs::symlink(outside.path(), layout.root.join(".aspis/features/link"))
            .unwrap();
        for path in [
            "../../etc".to_string(),
            "/etc".to_string(),
            outside.path().display().to_string(),
            ".aspis/features/link".to_string(),
        ] {
            let pointer = POINTER.replace(".aspis/features/F-001-x", &path);
            std::fs::write(layout.root.join(POINTER_PATH), pointer).unwrap();
            let facts = read(&layout).unwrap().unwrap();
            let rules: Vec<_> = facts.problems.iter().map(|r| r.rule).collect();
            assert_eq!(rules, ["feature.path-missing"], "{path}");
            assert!(facts.tasks.is_none() && facts.dir.is_none(), "{path}");
        }
    }

    #[test]
    fn a_symlinked_pointer_or_tasks_file_is_refused() {
        let (_d, layout) = project();
        let real = layout.root.join("elsewhere.json");
        std::fs::rename(layout.root.join(POINTER_PATH), &real).unwrap();
        std::os::unix::fs::symlink(&real, layout.root.join(POINTER_PATH)).unwrap();
        let facts = read(&layout).unwrap().unwrap();
        assert_eq!(facts.problems[0].rule, "feature.unreadable");
        assert!(facts.pointer.is_none());

        std::fs::remove_file(layout.root.join(POINTER_PATH)).unwrap();
        std::fs::rename(&real, layout.root.join(POINTER_PATH)).unwrap();
        let tasks = layout.root.join(".aspis/features/F-001-x/TASKS.md");
        std::fs::rename(&tasks, layout.root.join("t.md")).unwrap();
        std::os::unix::fs::symlink(layout.root.join("t.md"), &tasks).unwrap();
        let facts = read(&layout).unwrap().unwrap();
        assert_eq!(facts.problems[0].rule, "feature.tasks-unreadable");
        assert!(facts.tasks.is_none());
    }

    #[test]
    fn a_huge_or_binary_tasks_file_is_a_problem() {
        let (_d, layout) = project();
        let tasks = layout.root.join(".aspis/features/F-001-x/TASKS.md");
        std::fs::write(&tasks, b"- [ ] T-01 \xff\xfe\n").unwrap();
        let facts = read(&layout).unwrap().unwrap();
        assert_eq!(facts.problems[0].rule, "feature.tasks-unreadable");
        assert!(facts.problems[0].message.contains("UTF-8"));
        std::fs::File::create(&tasks)
            .unwrap()
            .set_len(TASKS_CAP + 1)
            .unwrap();
        let facts = read(&layout).unwrap().unwrap();
        assert!(
            facts.problems[0].message.contains("cap"),
            "{:?}",
            facts.problems
        );
    }

    /// The record left by a writer killed after the pointer landed is completed by the next
    /// read: both files end up new.
    #[test]
    fn a_left_record_is_rolled_forward_and_an_edited_file_left_alone() {
        let (_d, layout) = project();
        let tasks_rel = PathBuf::from(".aspis/features/F-001-x/TASKS.md");
        let old_tasks = std::fs::read(layout.root.join(&tasks_rel)).unwrap();
        let new_pointer = POINTER.replace("plan", "build");
        let new_tasks = "- [x] T-01 a\n- [~] T-02 b\n";
        let record = ResumePointRecord {
            schema_version: 1,
            created_at: "1970-01-01T00:00:00Z".into(),
            files: vec![
                ResumePointFile {
                    path: POINTER_PATH.into(),
                    before_sha256: sha256_hex(POINTER.as_bytes()),
                    after: new_pointer.clone(),
                },
                ResumePointFile {
                    path: tasks_rel.to_string_lossy().into(),
                    before_sha256: sha256_hex(&old_tasks),
                    after: new_tasks.into(),
                },
            ],
        };
        layout.ensure_state_dir().unwrap();
        // Killed after the pointer was replaced, before TASKS.md was.
        std::fs::write(layout.root.join(POINTER_PATH), &new_pointer).unwrap();
        std::fs::write(record_path(&layout), serde_json::to_vec(&record).unwrap()).unwrap();
        let facts = read(&layout).unwrap().unwrap();
        assert_eq!(
            std::fs::read_to_string(layout.root.join(&tasks_rel)).unwrap(),
            new_tasks
        );
        assert_eq!(facts.pointer.unwrap().phase(), Some("build"));
        assert!(!record_path(&layout).exists());
        assert!(facts.warnings[0].contains("completed a resume point"));

        // A file edited by hand since is left alone, with a warning.
        std::fs::write(layout.root.join(&tasks_rel), "- [ ] T-01 hand edit\n").unwrap();
        std::fs::write(record_path(&layout), serde_json::to_vec(&record).unwrap()).unwrap();
        let facts = read(&layout).unwrap().unwrap();
        assert_eq!(
            std::fs::read_to_string(layout.root.join(&tasks_rel)).unwrap(),
            "- [ ] T-01 hand edit\n"
        );
        assert!(
            facts.warnings.iter().any(|w| w.contains("edited after")),
            "{:?}",
            facts.warnings
        );
        assert!(!record_path(&layout).exists());
    }

    /// A planted record cannot steer a write to any other file.
    #[test]
    fn a_record_never_writes_outside_the_feature_files() {
        let (_d, layout) = project();
        layout.ensure_state_dir().unwrap();
        let readme = layout.root.join("README.md");
        std::fs::write(&readme, "mine\n").unwrap();
        let record = ResumePointRecord {
            schema_version: 1,
            created_at: "x".into(),
            files: ["README.md", "../TASKS.md", "/tmp/TASKS.md"]
                .iter()
                .map(|p| ResumePointFile {
                    path: p.to_string(),
                    before_sha256: sha256_hex(b"mine\n"),
                    after: "owned\n".into(),
                })
                .collect(),
        };
        std::fs::write(record_path(&layout), serde_json::to_vec(&record).unwrap()).unwrap();
        let facts = read(&layout).unwrap().unwrap();
        assert_eq!(std::fs::read_to_string(&readme).unwrap(), "mine\n");
        assert_eq!(
            facts
                .warnings
                .iter()
                .filter(|w| w.contains("left alone"))
                .count(),
            3,
            "{:?}",
            facts.warnings
        );
    }

    #[test]
    fn apply_changes_both_files_and_keeps_their_mode() {
        use std::os::unix::fs::PermissionsExt;
        let (_d, layout) = project();
        let tasks_rel = PathBuf::from(".aspis/features/F-001-x/TASKS.md");
        std::fs::set_permissions(
            layout.root.join(&tasks_rel),
            std::fs::Permissions::from_mode(0o640),
        )
        .unwrap();
        let old_tasks = std::fs::read(layout.root.join(&tasks_rel)).unwrap();
        let lock = lock_feature(&layout, DEFAULT_LOCK_WAIT).unwrap();
        let edits = [
            FileEdit {
                path: POINTER_PATH.into(),
                before: POINTER.into(),
                after: POINTER.replace("plan", "build").into(),
            },
            FileEdit {
                path: tasks_rel.clone(),
                before: old_tasks.clone(),
                after: b"- [x] T-01 a\n- [~] T-02 b\n".to_vec(),
            },
        ];
        apply_resume_point(&layout, &lock, Timestamp::UNIX_EPOCH, &edits).unwrap();
        assert_eq!(
            std::fs::read(layout.root.join(&tasks_rel)).unwrap(),
            edits[1].after
        );
        let mode = std::fs::metadata(layout.root.join(&tasks_rel))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o640);
        assert!(!record_path(&layout).exists());
        // A second apply from the old bytes finds them changed and writes nothing.
        let err = apply_resume_point(&layout, &lock, Timestamp::UNIX_EPOCH, &edits).unwrap_err();
        assert!(matches!(err, StoreError::ChangedUnderfoot { .. }), "{err}");
        assert!(!record_path(&layout).exists());
    }

    #[test]
    fn orphan_temp_files_are_cleared_when_the_lock_is_free() {
        let (_d, layout) = project();
        let orphan = layout
            .root
            .join(".aspis/features/F-001-x/.TASKS.md.tmp-123-abcd");
        let pointer_orphan = layout
            .root
            .join(".aspis/current/.active_feature.json.tmp-1-ff");
        std::fs::write(&orphan, "half").unwrap();
        std::fs::write(&pointer_orphan, "half").unwrap();
        let lock = lock_feature(&layout, DEFAULT_LOCK_WAIT).unwrap();
        // A live holder may be writing it: left alone.
        read_facts(&layout, &changes(), None, Vec::new()).unwrap();
        assert!(orphan.exists());
        drop(lock);
        read(&layout).unwrap();
        assert!(!orphan.exists() && !pointer_orphan.exists());
    }
}
