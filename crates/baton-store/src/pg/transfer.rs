//! Moving state between the file store and PostgreSQL without loss: every state file, journal
//! and archived file, byte for byte. An import writes nothing unless the project holds nothing
//! on the server yet; an export writes nothing unless the state directory holds no state yet.
//! The whole import is one transaction.

use std::path::{Path, PathBuf};

use super::records::{Kind, Records};
use crate::StoreError;
use crate::journal::JOURNAL_DIR;
use crate::layout::{ARCHIVE_DIR, BATCH_FILE, LEGACY_LOOP_FILE, Layout, PAUSE_FILE, RUNS_DIR};
use baton_core::key::key_from_file_name;

/// What the file store holds, as it would go to the server.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Moved {
    /// `(kind, key, document)`.
    pub state: Vec<(Kind, String, String)>,
    /// `(target, lines)`: each journal file's name without `.jsonl`, and its lines.
    pub journals: Vec<(String, Vec<String>)>,
    /// `(file name, text)` under `archive/`.
    pub archive: Vec<(String, String)>,
}

impl Moved {
    pub fn is_empty(&self) -> bool {
        self.state.is_empty() && self.journals.is_empty() && self.archive.is_empty()
    }

    pub fn events(&self) -> usize {
        self.journals.iter().map(|(_, l)| l.len()).sum()
    }

    /// How many records an import writes: each state document, journal line and archived file.
    pub fn records(&self) -> usize {
        self.state.len() + self.events() + self.archive.len()
    }
}

/// A file to move, read as a state file is read: not through a symlink, not another user's
/// (a file planted in the state directory must not reach the shared store), and whole: the
/// cap only stops what no journal or state file comes near.
fn text(path: &Path) -> Result<String, StoreError> {
    const CAP: u64 = 1 << 30;
    let bytes = crate::read::read_state(path, CAP)?.ok_or_else(|| {
        StoreError::io("read", path)(std::io::Error::from(std::io::ErrorKind::NotFound))
    })?;
    String::from_utf8(bytes).map_err(|_| StoreError::Corrupt {
        path: path.into(),
        detail: "not UTF-8 text".into(),
    })
}

/// The regular files of a directory (none when it is missing), by name.
fn files(dir: &Path) -> Result<Vec<(String, PathBuf)>, StoreError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(StoreError::io("list", dir)(e)),
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.map_err(StoreError::io("list", dir))?;
        let meta = std::fs::symlink_metadata(entry.path())
            .map_err(StoreError::io("stat", entry.path()))?;
        if let (true, Some(name)) = (meta.is_file(), entry.file_name().to_str()) {
            // A writer's temp file is not state.
            if !name.starts_with('.') {
                out.push((name.to_string(), entry.path()));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Everything the file store under `layout` holds.
pub fn collect(layout: &Layout) -> Result<Moved, StoreError> {
    let mut moved = Moved::default();
    for (name, path) in files(&layout.state_dir)? {
        let entry = if name == LEGACY_LOOP_FILE {
            Some((Kind::LegacyLoop, String::new()))
        } else if name == BATCH_FILE {
            Some((Kind::Batch, String::new()))
        } else if name == PAUSE_FILE {
            Some((Kind::Pause, String::new()))
        } else {
            key_from_file_name(&name).map(|k| (Kind::Loop, k.to_string()))
        };
        if let Some((kind, key)) = entry {
            moved.state.push((kind, key, text(&path)?));
        }
    }
    for (name, path) in files(&layout.state_dir.join(RUNS_DIR))? {
        if let Some(id) = name.strip_suffix(".json") {
            moved.state.push((Kind::Run, id.to_string(), text(&path)?));
        }
    }
    for (name, path) in files(&layout.state_dir.join(JOURNAL_DIR))? {
        if let Some(target) = name.strip_suffix(".jsonl") {
            let lines = text(&path)?.lines().map(str::to_string).collect();
            moved.journals.push((target.to_string(), lines));
        }
    }
    for (name, path) in files(&layout.state_dir.join(ARCHIVE_DIR))? {
        moved.archive.push((name, text(&path)?));
    }
    Ok(moved)
}

/// The owner epoch a document holds (loops: `owner_epoch`; runs: `lease_epoch`), else 0.
pub(crate) fn epoch_of(doc: &str) -> i64 {
    let value: serde_json::Value = serde_json::from_str(doc).unwrap_or_default();
    ["owner_epoch", "lease_epoch"]
        .iter()
        .find_map(|k| value[k].as_i64())
        .unwrap_or(0)
}

/// Writes `moved` to the project on the server, in one transaction, calling `progress(done,
/// total)` after each record it writes (one round trip to the server each). Refused (nothing
/// written, `Ok(Some(n))`) when the project already holds `n` records there, including when
/// another import into it committed first.
pub fn import(
    records: &Records,
    moved: &Moved,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Option<i64>, StoreError> {
    let total = moved.records();
    let mut done = 0;
    let mut step = || {
        done += 1;
        progress(done, total);
    };
    // Imports into one project queue on the server for this lock, held to the transaction's
    // end: the emptiness check below then sees what an import before it committed, so exactly
    // one import into an empty project wins (a plain count under READ COMMITTED lets two
    // concurrent imports both find it empty).
    let key = records.lock_key("store-import");
    records.in_transaction(|tx, project, host| {
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&key])?;
        let held: i64 = tx
            .query_one(
                "SELECT (SELECT count(*) FROM baton_state WHERE project = $1) \
                      + (SELECT count(*) FROM baton_journal WHERE project = $1) \
                      + (SELECT count(*) FROM baton_archive WHERE project = $1)",
                &[&project],
            )?
            .get(0);
        if held > 0 {
            return Ok(Some(held));
        }
        for (kind, key, doc) in &moved.state {
            tx.execute(
                "INSERT INTO baton_state (project, kind, key, doc, epoch, host) \
                 VALUES ($1, $2, $3, $4, $5, $6)",
                &[&project, &kind.as_str(), key, doc, &epoch_of(doc), &host],
            )?;
            step();
        }
        for (target, lines) in &moved.journals {
            for line in lines {
                tx.execute(
                    "INSERT INTO baton_journal (project, target, event) VALUES ($1, $2, $3)",
                    &[&project, target, line],
                )?;
                step();
            }
        }
        for (name, doc) in &moved.archive {
            tx.execute(
                "INSERT INTO baton_archive (project, kind, key, doc) VALUES ($1, 'file', $2, $3)",
                &[&project, name, doc],
            )?;
            step();
        }
        Ok(None)
    })
}

/// What the project holds on the server, as files would hold it.
pub fn fetch(records: &Records) -> Result<Moved, StoreError> {
    records.in_transaction(|tx, project, _| {
        let mut moved = Moved::default();
        for row in tx.query(
            "SELECT kind, key, doc FROM baton_state WHERE project = $1 ORDER BY kind, key",
            &[&project],
        )? {
            let kind = match row.get::<_, &str>(0) {
                "loop" => Kind::Loop,
                "batch" => Kind::Batch,
                "run" => Kind::Run,
                "pause" => Kind::Pause,
                _ => Kind::LegacyLoop,
            };
            moved.state.push((kind, row.get(1), row.get(2)));
        }
        for row in tx.query(
            "SELECT target, event FROM baton_journal WHERE project = $1 ORDER BY target, seq",
            &[&project],
        )? {
            let target: String = row.get(0);
            match moved.journals.last_mut() {
                Some((t, lines)) if *t == target => lines.push(row.get(1)),
                _ => moved.journals.push((target, vec![row.get(1)])),
            }
        }
        for row in tx.query(
            "SELECT key, doc FROM baton_archive WHERE project = $1 ORDER BY key, archived_at",
            &[&project],
        )? {
            moved.archive.push((row.get(0), row.get(1)));
        }
        Ok(moved)
    })
}

/// The file `kind`/`key` is kept in.
fn state_path(layout: &Layout, kind: Kind, key: &str) -> PathBuf {
    match kind {
        Kind::Loop => layout.loop_file(key),
        Kind::LegacyLoop => layout.legacy_loop_file(),
        Kind::Batch => layout.batch_file(),
        Kind::Pause => layout.pause_file(),
        Kind::Run => layout.state_dir.join(RUNS_DIR).join(format!("{key}.json")),
    }
}

/// Writes `moved` as files under `layout` (0600 each), calling `progress(done, total)` after
/// each file it writes (an fsync each). Refused (nothing written, `Ok(false)`) when the state
/// directory already holds state.
///
/// All or nothing: every file is first written (and fsynced) into a hidden staging directory
/// inside the state directory, on the same file system; only when all are written are they
/// renamed into place, and a rename that fails takes back those before it. An export that
/// fails (a full disk, a file in the way) leaves no state behind, so it can be run again.
pub fn export(
    layout: &Layout,
    moved: &Moved,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<bool, StoreError> {
    if !collect(layout)?.is_empty() {
        return Ok(false);
    }
    // Every name is checked before anything is written: `(directory under the state
    // directory, or "" for itself; file name; bytes)`.
    let mut files: Vec<(&str, String, Vec<u8>)> = Vec::new();
    for (kind, key, doc) in &moved.state {
        // A key or id from the server becomes a file name only as the file store names it.
        let safe = match kind {
            Kind::Loop => key_from_file_name(&format!("loop-state-{key}.json")).is_some(),
            Kind::Run => baton_core::run_id::RunId::parse(key).is_ok(),
            _ => key.is_empty(),
        };
        if !safe {
            return Err(StoreError::Corrupt {
                path: state_path(layout, Kind::Batch, "").with_file_name(key),
                detail: format!(
                    "the server holds a {} named {key:?}, which is no file name baton writes",
                    kind.as_str()
                ),
            });
        }
        let path = state_path(layout, *kind, key);
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let dir = if *kind == Kind::Run { RUNS_DIR } else { "" };
        files.push((dir, name, doc.as_bytes().to_vec()));
    }
    for (target, lines) in &moved.journals {
        let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
        files.push((
            JOURNAL_DIR,
            format!("{}.jsonl", plain(target)?),
            body.into_bytes(),
        ));
    }
    for (name, doc) in &moved.archive {
        files.push((
            ARCHIVE_DIR,
            plain(name)?.to_string(),
            doc.as_bytes().to_vec(),
        ));
    }

    layout.ensure_state_dir()?;
    layout.ensure_ignore_file()?;
    let staging = layout.state_dir.join(format!(
        ".export-{}-{}",
        std::process::id(),
        crate::random_hex(4)
    ));
    crate::layout::make_dir(&staging)?;
    let result = stage_then_place(layout, &staging, &files, progress);
    let _ = std::fs::remove_dir_all(&staging);
    result.map(|()| true)
}

fn stage_then_place(
    layout: &Layout,
    staging: &Path,
    files: &[(&str, String, Vec<u8>)],
    progress: &mut dyn FnMut(usize, usize),
) -> Result<(), StoreError> {
    let in_dir = |base: &Path, dir: &str| -> Result<PathBuf, StoreError> {
        let d = base.join(dir);
        if !dir.is_empty() && !crate::layout::check_real_dir(&d)? {
            crate::layout::make_dir(&d)?;
        }
        Ok(d)
    };
    for (done, (dir, name, bytes)) in files.iter().enumerate() {
        crate::atomic::replace(&in_dir(staging, dir)?.join(name), bytes)?;
        progress(done + 1, files.len());
    }
    let mut placed: Vec<PathBuf> = Vec::new();
    let mut place = |dir: &str, name: &str| -> Result<(), StoreError> {
        let target = in_dir(&layout.state_dir, dir)?.join(name);
        if std::fs::symlink_metadata(&target).is_ok() {
            return Err(StoreError::io("rename into place", &target)(
                std::io::Error::from(std::io::ErrorKind::AlreadyExists),
            ));
        }
        std::fs::rename(staging.join(dir).join(name), &target)
            .map_err(StoreError::io("rename into place", &target))?;
        placed.push(target);
        Ok(())
    };
    let mut result = files.iter().try_for_each(|(dir, name, _)| place(dir, name));
    if result.is_ok() {
        let mut dirs: Vec<&str> = files.iter().map(|(d, _, _)| *d).collect();
        dirs.sort();
        dirs.dedup();
        result = dirs
            .iter()
            .try_for_each(|d| crate::atomic::sync_dir(&layout.state_dir.join(d)));
    }
    if result.is_err() {
        // Nothing of a failed export stays: the files already renamed into place go again.
        for target in &placed {
            let _ = std::fs::remove_file(target);
        }
    }
    result
}

/// A name from the server that is a plain file name: no separator, not hidden.
fn plain(name: &str) -> Result<&str, StoreError> {
    if name.is_empty() || name.starts_with('.') || name.contains('/') || name.contains('\0') {
        return Err(StoreError::Corrupt {
            path: PathBuf::from(name),
            detail: "the server holds a name that is no plain file name".into(),
        });
    }
    Ok(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `store import` moves nothing another user planted in the state directory: its first
    /// step refuses, naming the file.
    #[test]
    fn collect_refuses_another_users_file() {
        let tmp = tempfile::tempdir().unwrap();
        let layout = Layout {
            root: tmp.path().into(),
            state_dir: tmp.path().join(".agentic"),
        };
        std::fs::create_dir_all(&layout.state_dir).unwrap();
        let file = layout.state_dir.join("loop-state-P-1.json");
        std::fs::write(&file, "{}").unwrap();
        assert_eq!(collect(&layout).unwrap().state.len(), 1);
        let path = std::ffi::CString::new(file.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid C string; the call only changes the file's owner. Only root can.
        if unsafe { libc::chown(path.as_ptr(), 65534, 65534) } != 0 {
            return;
        }
        match collect(&layout) {
            Err(StoreError::ForeignFile { path, owner, .. }) => {
                assert_eq!((path, owner), (file, 65534));
            }
            other => panic!("another user's file was moved: {other:?}"),
        }
    }
}
