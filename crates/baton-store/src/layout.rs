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

    /// Refuses a state directory that is a symlink (it could point anywhere, including into
    /// another project's state), one every user may write to and one another user owns
    /// (`check_real_dir`).
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

/// `Ok(true)` for a real directory, `Ok(false)` when missing; an error for a link, a file, and
/// a directory another user could plant a file in: one every user may write to (mode `o+w`,
/// sticky or not) or one another user owns, root included. Every directory baton keeps state
/// in (the state directory, `locks/`, `runs/`, `journal/`, `archive/`, `sessions/`, `init/`,
/// `supervise/`) is checked here before anything in it is read or created; the check costs
/// the one `lstat` it always did. A git checkout's 0755 or 0775 directories pass.
pub fn check_real_dir(path: &Path) -> Result<bool, StoreError> {
    use std::os::unix::fs::MetadataExt;
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => Err(StoreError::Symlink { path: path.into() }),
        Ok(meta) if !meta.is_dir() => Err(StoreError::NotADirectory { path: path.into() }),
        Ok(meta) if meta.mode() & 0o002 != 0 => Err(StoreError::OpenDir {
            path: path.into(),
            mode: meta.mode() & 0o7777,
        }),
        Ok(meta) if meta.uid() != crate::read::euid() => Err(StoreError::ForeignDir {
            path: path.into(),
            owner: meta.uid(),
            me: crate::read::euid(),
        }),
        Ok(_) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(StoreError::io("stat", path)(e)),
    }
}

/// Creates a directory (0700) that `check_real_dir` found missing, and any missing parent. The
/// directory itself is made by one `mkdir`, never taken over: one that appeared since the
/// check (another process made it) is checked again before it is used.
pub fn make_dir(path: &Path) -> Result<(), StoreError> {
    use std::os::unix::fs::DirBuilderExt;
    let mkdir = |recursive: bool, dir: &Path| {
        crate::faults::point("dir.create").and_then(|()| {
            std::fs::DirBuilder::new()
                .recursive(recursive)
                .mode(0o700)
                .create(dir)
        })
    };
    let made = match mkdir(false, path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => match path.parent() {
            Some(parent) => mkdir(true, parent)
                .map_err(StoreError::io("create directory", parent))
                .map(|()| mkdir(false, path))?,
            None => Err(e),
        },
        other => other,
    };
    match made {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => check_real_dir(path).map(drop),
        Err(e) => Err(StoreError::io("create directory", path)(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_directory_other_users_may_write_to_is_refused_and_a_checkout_s_is_not() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("state");
        assert!(!check_real_dir(&dir).unwrap(), "missing");
        make_dir(&dir).unwrap();
        assert!(check_real_dir(&dir).unwrap());
        for (mode, ok) in [
            (0o755, true),
            (0o775, true),
            (0o777, false),
            (0o1777, false),
        ] {
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(mode)).unwrap();
            match check_real_dir(&dir) {
                Ok(true) if ok => {}
                Err(StoreError::OpenDir { mode: found, .. }) if !ok => assert_eq!(found, mode),
                other => panic!("mode {mode:o}: {other:?}"),
            }
            // One that appeared after the check is checked again, never taken over.
            assert_eq!(make_dir(&dir).is_ok(), ok, "mode {mode:o}");
        }
        if crate::read::euid() == 0 {
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
            std::os::unix::fs::chown(&dir, Some(65534), None).unwrap();
            assert!(matches!(
                check_real_dir(&dir),
                Err(StoreError::ForeignDir {
                    owner: 65534,
                    me: 0,
                    ..
                })
            ));
        }
    }
}
