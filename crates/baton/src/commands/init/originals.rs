//! What `baton init` remembers of each file it changed, so that `--remove` gives back the very
//! bytes the file had, whatever its formatting: its text before baton's first change, and the
//! digest of the text baton last wrote. When the file still holds exactly that text, `--remove`
//! writes the original back (or deletes a file baton created); when anyone changed it since,
//! `--remove` takes out baton's entries alone and keeps the rest as it now is.
//!
//! Kept in `<root>/.agentic/init/` for a project's files and in `$XDG_STATE_HOME/baton/init/`
//! (default `~/.local/state/baton/init/`) for the user's, one small JSON file per path.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::CommandError;
use baton_ops::env::Ctx;
use baton_store::{StoreError, atomic, sha256_hex};

#[derive(Debug, Serialize, Deserialize)]
struct Original {
    path: String,
    /// The file's text before baton first changed it; `None`: there was no file.
    original: Option<String>,
    /// The SHA-256 of the text baton last wrote.
    written_sha256: String,
}

pub struct Originals {
    dir: PathBuf,
}

impl Originals {
    pub fn for_scope(ctx: &Ctx, user: bool) -> Result<Originals, CommandError> {
        let dir = if user {
            let state = std::env::var_os("XDG_STATE_HOME")
                .map(PathBuf::from)
                .filter(|d| d.is_absolute())
                .or_else(|| {
                    std::env::var_os("HOME")
                        .map(PathBuf::from)
                        .map(|h| h.join(".local/state"))
                })
                .ok_or_else(|| {
                    CommandError::usage("HOME is not set to an absolute path")
                        .hint("set HOME to your home directory")
                })?;
            state.join("baton/init")
        } else {
            ctx.layout()?.state_dir.join("init")
        };
        Ok(Originals { dir })
    }

    fn file(&self, path: &Path) -> PathBuf {
        let digest = sha256_hex(path.as_os_str().as_encoded_bytes());
        self.dir.join(format!("{}.json", &digest[..32]))
    }

    fn read(&self, path: &Path) -> Option<Original> {
        let bytes = std::fs::read(self.file(path)).ok()?;
        serde_json::from_slice::<Original>(&bytes)
            .ok()
            .filter(|o| o.path == path.display().to_string())
    }

    /// The text `--remove` gives back for `path` when it still holds what baton wrote:
    /// `Some(original)` (`None` inside: delete the file); `None` when nothing is remembered or
    /// the file changed since.
    pub fn restore(&self, path: &Path, current: Option<&str>) -> Option<Option<String>> {
        let remembered = self.read(path)?;
        let current = current?;
        (sha256_hex(current.as_bytes()) == remembered.written_sha256).then_some(remembered.original)
    }

    /// Records that baton changed `path` from `old` to `new`. The first original stays while
    /// the file holds what baton last wrote; a file changed since starts from `old`.
    pub fn record(&self, path: &Path, old: Option<&str>, new: &str) -> Result<(), StoreError> {
        let original = match self.read(path) {
            Some(o) if old.is_some_and(|t| sha256_hex(t.as_bytes()) == o.written_sha256) => {
                o.original
            }
            _ => old.map(str::to_string),
        };
        let entry = Original {
            path: path.display().to_string(),
            original,
            written_sha256: sha256_hex(new.as_bytes()),
        };
        baton_store::sessions::ensure_dir(&self.dir)?;
        let bytes = serde_json::to_vec_pretty(&entry).unwrap_or_default();
        atomic::replace(&self.file(path), &bytes)
    }

    /// Forgets `path`, once its original is back.
    pub fn forget(&self, path: &Path) {
        let _ = std::fs::remove_file(self.file(path));
    }
}
