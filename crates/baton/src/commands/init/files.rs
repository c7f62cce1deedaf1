//! Where `baton init` writes for each client and scope, and how it reads and writes those
//! files.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::error::CommandError;
use baton_ops::install::Targets;
use baton_store::{StoreError, atomic};

/// One file's text before and after (`None`: no file).
pub struct Change {
    pub path: PathBuf,
    pub old: Option<String>,
    pub new: Option<String>,
    /// A program git runs (a hook): written executable.
    pub executable: bool,
}

impl Change {
    pub fn new(path: PathBuf, old: Option<String>, new: Option<String>) -> Change {
        Change {
            path,
            old,
            new,
            executable: false,
        }
    }

    /// A hook git runs, written executable.
    pub fn program(path: PathBuf, old: Option<String>, new: Option<String>) -> Change {
        Change {
            executable: true,
            ..Change::new(path, old, new)
        }
    }

    pub fn changed(&self) -> bool {
        self.old != self.new
    }

    pub fn action(&self) -> &'static str {
        match (&self.old, &self.new) {
            _ if !self.changed() => "unchanged",
            (None, Some(_)) => "created",
            (Some(_), None) => "deleted",
            _ => "updated",
        }
    }

    /// A unified diff of the change, empty when there is none.
    pub fn diff(&self, targets: &Targets) -> String {
        if !self.changed() {
            return String::new();
        }
        let name = targets.display(&self.path);
        // `a/` and `b/` before a relative path, as git writes them; an absolute path as it is.
        let side = |prefix: &str, present: bool| match present {
            false => "/dev/null".to_string(),
            true if name.starts_with('/') => name.clone(),
            true => format!("{prefix}/{name}"),
        };
        let (old_name, new_name) = (side("a", self.old.is_some()), side("b", self.new.is_some()));
        let old = self.old.as_deref().unwrap_or_default();
        let new = self.new.as_deref().unwrap_or_default();
        similar::TextDiff::from_lines(old, new)
            .unified_diff()
            .context_radius(3)
            .header(&old_name, &new_name)
            .missing_newline_hint(true)
            .to_string()
    }

    /// Writes the new text in one atomic replace (through a symlink to its target), or
    /// deletes the file and the directories its removal leaves empty.
    pub fn apply(&self, targets: &Targets) -> Result<(), CommandError> {
        if !self.changed() {
            return Ok(());
        }
        let target = write_target(&self.path);
        match &self.new {
            Some(text) => {
                if let Some(dir) = target.parent() {
                    std::fs::create_dir_all(dir)
                        .map_err(StoreError::io("create directory", dir))?;
                }
                let mode = target
                    .metadata()
                    .map(|m| m.permissions().mode() & 0o7777)
                    .unwrap_or(0o644)
                    | if self.executable { 0o755 } else { 0 };
                atomic::replace_with_mode(&target, text.as_bytes(), mode)?;
            }
            None => {
                std::fs::remove_file(&target).map_err(StoreError::io("remove", &target))?;
                if let Some(parent) = target.parent() {
                    atomic::sync_dir(parent)?;
                }
                let mut dir = self.path.parent();
                while let Some(d) = dir {
                    if d == targets.base || !d.starts_with(&targets.base) {
                        break;
                    }
                    // Only an empty directory goes; anything else stops the walk.
                    if std::fs::remove_dir(d).is_err() {
                        break;
                    }
                    dir = d.parent();
                }
            }
        }
        Ok(())
    }
}

/// A settings file kept as a symlink (a dotfiles repository) is written through the link.
fn write_target(path: &Path) -> PathBuf {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => {
            std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
        }
        _ => path.to_path_buf(),
    }
}

/// A file's text, `None` when there is none.
pub fn read(path: &Path) -> Result<Option<String>, CommandError> {
    match std::fs::read(path) {
        Ok(bytes) => String::from_utf8(bytes).map(Some).map_err(|_| {
            CommandError::usage(format!("{} is not UTF-8 text", path.display())).hint(
                "fix the file (or move it aside) and run the command again; nothing was changed",
            )
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(StoreError::io("read", path)(e).into()),
    }
}
