//! Where each file lives: the project root, the state directory and the names inside it.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::StoreError;
use baton_core::key::loop_file_name;
use baton_core::run_id::RunId;

/// What a lock protects: one state file, so that work on different files never contends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockScope<'a> {
    /// One ticket's `loop-state-<KEY>.json`.
    Loop(&'a str),
    /// The legacy `loop-state.json`.
    LegacyLoop,
    Batch,
    /// Every run under `runs/`.
    Runs,
    /// The feature pointer and its `TASKS.md`, changed together by `continue --set-resume-point`.
    Feature,
}

#[derive(Debug, Clone)]
pub struct Layout {
    /// The top of the git work tree.
    pub root: PathBuf,
    /// `<root>/.agentic`, or `BATON_STATE_DIR`.
    pub state_dir: PathBuf,
}

/// Why no project could be found.
#[derive(Debug, thiserror::Error)]
pub enum LayoutError {
    #[error("{0} is not inside a git repository")]
    NotARepo(PathBuf),
    #[error("cannot use directory {0}: {1}")]
    BadDir(PathBuf, std::io::Error),
    #[error(transparent)]
    Store(#[from] StoreError),
}

pub const LEGACY_LOOP_FILE: &str = "loop-state.json";
pub const BATCH_FILE: &str = "batch-state.json";
pub const PAUSE_FILE: &str = "pause.json";
/// The directory of the lock sidecars; they are never deleted.
pub const LOCKS_DIR: &str = "locks";
pub const ARCHIVE_DIR: &str = "archive";
pub const RUNS_DIR: &str = "runs";

/// What `.agentic/.gitignore` holds: baton's own files, and nothing else of the directory.
pub const STATE_IGNORE: &str = "# Written by baton: its state stays out of commits. Other files here are left to the project.\n/.gitignore\n/locks/\n/runs/\n/archive/\n/journal/\n/loop-state*.json\n/batch-state.json\n/pause.json\n/resume-point.json\n/sessions/\n/init/\n/supervise/\n/.*.tmp-*\n";

impl Layout {
    /// Finds the project root from `dir` as `git rev-parse --show-toplevel` would. The common
    /// case (a `.git` directory or file in `dir` or above) is answered without starting git,
    /// which keeps hooks fast; `GIT_DIR` and `GIT_WORK_TREE` change git's answer, so with
    /// either set git itself is asked.
    pub fn discover(
        dir: &Path,
        state_dir_override: Option<OsString>,
    ) -> Result<Layout, LayoutError> {
        let dir = dir
            .canonicalize()
            .map_err(|e| LayoutError::BadDir(dir.into(), e))?;
        let root = if std::env::var_os("GIT_DIR").is_some()
            || std::env::var_os("GIT_WORK_TREE").is_some()
        {
            crate::git::toplevel(&dir)?
        } else {
            dir.ancestors()
                .find(|d| d.join(".git").exists())
                .map(Path::to_path_buf)
        }
        .ok_or_else(|| LayoutError::NotARepo(dir.clone()))?;
        let state_dir = match state_dir_override.filter(|s| !s.is_empty()) {
            Some(custom) => {
                let custom = PathBuf::from(custom);
                if custom.is_absolute() {
                    custom
                } else {
                    root.join(custom)
                }
            }
            None => root.join(".agentic"),
        };
        Ok(Layout { root, state_dir })
    }

    pub fn loop_file(&self, key: &str) -> PathBuf {
        self.state_dir.join(loop_file_name(key))
    }

    pub fn legacy_loop_file(&self) -> PathBuf {
        self.state_dir.join(LEGACY_LOOP_FILE)
    }

    pub fn batch_file(&self) -> PathBuf {
        self.state_dir.join(BATCH_FILE)
    }

    /// The lock sidecar of one state file, named after it.
    pub fn lock_file(&self, scope: LockScope) -> PathBuf {
        let name = match scope {
            LockScope::Loop(key) => format!("{}.lock", loop_file_name(key)),
            LockScope::LegacyLoop => format!("{LEGACY_LOOP_FILE}.lock"),
            LockScope::Batch => format!("{BATCH_FILE}.lock"),
            LockScope::Runs => "runs.lock".into(),
            LockScope::Feature => "feature.lock".into(),
        };
        self.state_dir.join(LOCKS_DIR).join(name)
    }

    /// `.agentic/pause.json`, the explicit pause mark.
    pub fn pause_file(&self) -> PathBuf {
        self.state_dir.join(PAUSE_FILE)
    }

    pub fn archive_dir(&self) -> PathBuf {
        self.state_dir.join(ARCHIVE_DIR)
    }

    /// `.agentic/runs/`, mode 0700: run state names no other user may read or plant.
    pub fn runs_dir(&self) -> PathBuf {
        self.state_dir.join(RUNS_DIR)
    }

    pub fn run_file(&self, id: &RunId) -> PathBuf {
        self.runs_dir().join(format!("{id}.json"))
    }

    /// The state directory relative to the root, when it lies inside the work tree: git
    /// commands exclude it so that baton's own files never count as work.
    pub fn state_dir_in_tree(&self) -> Option<PathBuf> {
        self.state_dir
            .strip_prefix(&self.root)
            .ok()
            .filter(|p| !p.as_os_str().is_empty())
            .map(Path::to_path_buf)
    }

    /// Refuses a state directory that is a symlink: it could point anywhere, including into
    /// another project's state.
    pub fn check_state_dir(&self) -> Result<bool, StoreError> {
        check_real_dir(&self.state_dir)
    }

    /// Creates the state directory (0700) if it is missing, with the ignore file that keeps
    /// baton's state out of the user's commits.
    pub fn ensure_state_dir(&self) -> Result<(), StoreError> {
        if self.check_state_dir()? {
            return Ok(());
        }
        make_dir(&self.state_dir)
    }

    /// Writes `.agentic/.gitignore` unless one is there: `git add -A` then never stages a lock,
    /// a run or a loop-state, and the staging check never blocks on baton's own files. Only
    /// baton's own names are listed (other tools keep files in the same directory that their
    /// projects commit), and the project's own ignore files are never touched.
    pub fn ensure_ignore_file(&self) -> Result<(), StoreError> {
        use std::io::Write;
        let path = self.state_dir.join(".gitignore");
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(mut file) => file
                .write_all(STATE_IGNORE.as_bytes())
                .map_err(StoreError::io("write", &path)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
            Err(e) => Err(StoreError::io("create", &path)(e)),
        }
    }
}

/// `Ok(true)` for a real directory, `Ok(false)` when missing; an error for a link or a file.
pub fn check_real_dir(path: &Path) -> Result<bool, StoreError> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => Err(StoreError::Symlink { path: path.into() }),
        Ok(meta) if !meta.is_dir() => Err(StoreError::NotADirectory { path: path.into() }),
        Ok(_) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(StoreError::io("stat", path)(e)),
    }
}

pub fn make_dir(path: &Path) -> Result<(), StoreError> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
        .map_err(StoreError::io("create directory", path))
}
