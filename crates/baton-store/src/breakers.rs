//! The accounts' breakers on one machine (SPEC section 11): one file, `breakers.json`, in the
//! machine's own directory (`$XDG_STATE_HOME/baton`, else `~/.local/state/baton`), shared by
//! every project on the machine, since an account's window is the same whichever project spends
//! it. Every change reads, changes and replaces it under an `flock` on `breakers.lock` beside
//! it, so exactly one waiter becomes a window's probe.

use std::path::{Path, PathBuf};
use std::time::Duration;

use baton_core::breaker::Breaker;
use serde::{Deserialize, Serialize};

use crate::StoreError;

/// The file the breakers are kept in, in the machine's directory.
pub const FILE: &str = "breakers.json";

#[derive(Debug, Default, Serialize, Deserialize)]
struct Book {
    breakers: Vec<Breaker>,
}

/// Where the breakers of the machine whose directory is `dir` are kept.
pub fn file(dir: &Path) -> PathBuf {
    dir.join(FILE)
}

/// The breakers kept in `dir` (none when there is no file yet).
pub fn read(dir: &Path) -> Result<Vec<Breaker>, StoreError> {
    let path = file(dir);
    let Some(bytes) = crate::read::read_state(&path, crate::read::STATE_FILE_CAP)? else {
        return Ok(Vec::new());
    };
    parse(&bytes, &path)
}

/// The breakers a document holds.
pub fn parse(bytes: &[u8], path: &Path) -> Result<Vec<Breaker>, StoreError> {
    serde_json::from_slice::<Book>(bytes)
        .map(|b| b.breakers)
        .map_err(|e| StoreError::Corrupt {
            path: path.into(),
            detail: e.to_string(),
        })
}

/// The document of `breakers`.
pub fn render(breakers: &[Breaker]) -> String {
    serde_json::to_string_pretty(&serde_json::json!({ "breakers": breakers }))
        .expect("breakers serialize")
        + "\n"
}

/// Runs `change` on the breakers kept in `dir` under their lock (waiting at most `wait`), and
/// writes them back, durably, when it says they changed.
pub fn change(
    dir: &Path,
    wait: Duration,
    change: &mut dyn FnMut(&mut Vec<Breaker>) -> bool,
) -> Result<(), StoreError> {
    if !crate::layout::check_real_dir(dir)? {
        crate::layout::make_dir(dir)?;
    }
    let _lock = crate::lock::DirLock::acquire(&dir.join("breakers.lock"), wait)?;
    let mut book = read(dir)?;
    if change(&mut book) {
        crate::atomic::replace(&file(dir), render(&book).as_bytes())?;
    }
    Ok(())
}
