//! The accounts' breakers on one machine (SPEC section 11): one file, `breakers.json`, in the
//! machine's own directory (`$XDG_STATE_HOME/baton`, else `~/.local/state/baton`), shared by
//! every project on the machine, since an account's window is the same whichever project spends
//! it. Every change reads, changes and replaces it under an `flock` on `breakers.lock` beside
//! it, so exactly one waiter becomes a window's probe.
//!
//! A breaker lives hours or days and guards launches, not work: a file that cannot be read as
//! breakers is read as none (nothing is held by it), and the next change moves it aside to
//! `breakers.json.bad` before it writes, so one bad file never stops a launch, a hook or a
//! command of any project on the machine.

use std::path::{Path, PathBuf};
use std::time::Duration;

use baton_core::breaker::Breaker;
use serde::{Deserialize, Serialize};

use crate::StoreError;

/// The file the breakers are kept in, in the machine's directory.
pub const FILE: &str = "breakers.json";

#[derive(Debug, Default, Serialize, Deserialize)]
struct Book {
    #[serde(default)]
    breakers: Vec<Breaker>,
}

/// Where the breakers of the machine whose directory is `dir` are kept.
pub fn file(dir: &Path) -> PathBuf {
    dir.join(FILE)
}

/// The breakers kept in `dir`: none when there is no file yet, or when it cannot be read as
/// breakers (the next `change` moves it aside).
pub fn read(dir: &Path) -> Result<Vec<Breaker>, StoreError> {
    Ok(read_strict(dir).unwrap_or_default())
}

fn read_strict(dir: &Path) -> Result<Vec<Breaker>, StoreError> {
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
    let mut book = match read_strict(dir) {
        Ok(book) => book,
        Err(_) => {
            // Kept for a look, out of the way: the breakers start again empty.
            let path = file(dir);
            let _ = std::fs::rename(&path, path.with_extension("json.bad"));
            Vec::new()
        }
    };
    if change(&mut book) {
        crate::atomic::replace(&file(dir), render(&book).as_bytes())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use baton_core::breaker::{self, Account, Basis, Breaker, Gate, Who};

    /// Eight processes' worth of waiters ask at the reset at once: the lock makes exactly one
    /// the probe, and the file holds it.
    #[test]
    fn at_a_reset_exactly_one_waiter_becomes_the_probe() {
        let dir = tempfile::tempdir().unwrap();
        let account = Account::new("claude", Basis::Account, "acct");
        let reset: jiff::Timestamp = "2026-12-05T15:00:00Z".parse().unwrap();
        let who = |id: &str| Who {
            id: id.into(),
            host: "h".into(),
            since: "2026-12-05T10:00:00Z".into(),
        };
        change(dir.path(), Duration::from_secs(5), &mut |book| {
            book.push(Breaker::new(&account, "5h", reset, who("tripper")));
            true
        })
        .unwrap();
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(8));
        let handles: Vec<_> = (0..8)
            .map(|i| {
                let (dir, account, barrier) =
                    (dir.path().to_path_buf(), account.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    let mut gate = Gate::Open;
                    change(&dir, Duration::from_secs(5), &mut |book| {
                        let (g, changed) =
                            breaker::claim(book, &account, &who(&format!("w{i}")), reset);
                        gate = g;
                        changed
                    })
                    .unwrap();
                    matches!(gate, Gate::Probing { me: true, .. })
                })
            })
            .collect();
        let probes = handles
            .into_iter()
            .map(|h| h.join().unwrap())
            .filter(|p| *p)
            .count();
        assert_eq!(probes, 1);
        let book = read(dir.path()).unwrap();
        assert!(book[0].probe.is_some());
        // A file that is not breakers holds nothing, and the next change moves it aside.
        std::fs::write(file(dir.path()), "{not json").unwrap();
        assert!(read(dir.path()).unwrap().is_empty());
        change(dir.path(), Duration::from_secs(5), &mut |book| {
            book.push(Breaker::new(&account, "5h", reset, who("again")));
            true
        })
        .unwrap();
        assert_eq!(read(dir.path()).unwrap().len(), 1);
        let bad = std::fs::read_to_string(dir.path().join("breakers.json.bad")).unwrap();
        assert_eq!(bad, "{not json");
        std::fs::write(file(dir.path()), "{}").unwrap();
        assert!(read_strict(dir.path()).unwrap().is_empty());
    }
}
