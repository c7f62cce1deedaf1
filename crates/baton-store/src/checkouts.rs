//! Where a directory's git repository keeps what every worktree of it shares, read from the
//! files git writes (no git process), and the registry of the sessions working in it: one small
//! file per session in `<git common dir>/baton-checkouts/`, which every linked worktree sees.

use std::path::{Component, Path, PathBuf};

use baton_core::guard::Checkout;

use crate::StoreError;

/// The directory, in the git common directory, that holds the registry.
pub const REGISTRY_DIR: &str = "baton-checkouts";

/// A worktree of a repository, as its files say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Worktree {
    /// The worktree's root (the directory holding `.git`).
    pub root: PathBuf,
    /// Its own git directory (`.git`, or `.git/worktrees/<name>` of a linked one).
    pub git_dir: PathBuf,
    /// The directory every worktree of the repository shares (refs, objects, the stash).
    pub common_dir: PathBuf,
}

impl Worktree {
    /// The worktree that holds `dir`: the nearest `.git` above it, a directory (a main
    /// worktree) or a file naming its git directory (a linked worktree, a submodule).
    pub fn of(dir: &Path) -> Option<Worktree> {
        let dir = absolute(dir)?;
        for root in dir.ancestors() {
            let dot_git = root.join(".git");
            let Ok(meta) = std::fs::metadata(&dot_git) else {
                continue;
            };
            let git_dir = if meta.is_dir() {
                dot_git
            } else {
                let text = std::fs::read_to_string(&dot_git).ok()?;
                let named = text.lines().next()?.strip_prefix("gitdir:")?.trim();
                normal(&root.join(named))
            };
            let common_dir = match std::fs::read_to_string(git_dir.join("commondir")) {
                Ok(text) => normal(&git_dir.join(text.trim())),
                Err(_) => git_dir.clone(),
            };
            return Some(Worktree {
                root: root.to_path_buf(),
                git_dir,
                common_dir,
            });
        }
        None
    }

    /// The branch checked out (`None` on a detached HEAD), and HEAD's commit when detached.
    pub fn head(&self) -> (Option<String>, Option<String>) {
        let Ok(text) = std::fs::read_to_string(self.git_dir.join("HEAD")) else {
            return (None, None);
        };
        let text = text.trim();
        match text.strip_prefix("ref: refs/heads/") {
            Some(branch) => (Some(branch.to_string()), None),
            None => (None, Some(text.to_string())),
        }
    }

    /// The index file.
    pub fn index(&self) -> PathBuf {
        self.git_dir.join("index")
    }

    /// The registry of the sessions working in the repository.
    pub fn registry(&self) -> PathBuf {
        self.common_dir.join(REGISTRY_DIR)
    }
}

/// `dir` from the root, without `.` and `..` (the directories need not exist).
fn absolute(dir: &Path) -> Option<PathBuf> {
    let joined = if dir.is_absolute() {
        dir.to_path_buf()
    } else {
        std::env::current_dir().ok()?.join(dir)
    };
    Some(normal(&joined))
}

/// A path with `.` and `..` resolved by its words alone, links left as they are; the real path
/// when the directory exists (a link to a worktree names the worktree).
pub fn normal(path: &Path) -> PathBuf {
    if let Ok(real) = std::fs::canonicalize(path) {
        return real;
    }
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

fn record_name(client: &str, session: &str) -> String {
    format!("{}.json", crate::sessions::record_name(client, session))
}

/// Writes `checkout` into the registry of `worktree`'s repository (no fsync: the record is a
/// hint the next refresh writes again).
pub fn register(worktree: &Worktree, checkout: &Checkout) -> Result<(), StoreError> {
    let dir = worktree.registry();
    if !crate::layout::check_real_dir(&dir)? {
        crate::layout::make_dir(&dir)?;
    }
    let text = serde_json::to_vec(checkout).expect("a checkout serializes");
    crate::atomic::replace_hint(
        &dir.join(record_name(&checkout.client, &checkout.session)),
        &text,
    )
}

/// The registered sessions of `worktree`'s repository, each record that can be read (one that
/// cannot is left out: a hint lost).
pub fn registered(worktree: &Worktree) -> Vec<Checkout> {
    let Ok(entries) = std::fs::read_dir(worktree.registry()) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
        .filter_map(|e| {
            let bytes = crate::read::read_state(&e.path(), crate::read::STATE_FILE_CAP).ok()??;
            serde_json::from_slice(&bytes).ok()
        })
        .collect()
}

/// One session's record in the registry, if it can be read.
pub fn registered_one(worktree: &Worktree, client: &str, session: &str) -> Option<Checkout> {
    let path = worktree.registry().join(record_name(client, session));
    let bytes = crate::read::read_state(&path, crate::read::STATE_FILE_CAP).ok()??;
    serde_json::from_slice(&bytes).ok()
}

/// Removes a session's record from the registry (its session ended).
pub fn unregister(worktree: &Worktree, client: &str, session: &str) {
    let _ = std::fs::remove_file(worktree.registry().join(record_name(client, session)));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &Path, args: &[&str]) {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
    }

    #[test]
    fn every_worktree_of_a_repository_finds_one_registry() {
        let tmp = tempfile::tempdir().unwrap();
        let main = tmp.path().join("main");
        std::fs::create_dir_all(main.join("sub/deeper")).unwrap();
        git(&main, &["init", "--quiet", "--initial-branch=main"]);
        git(
            &main,
            &[
                "-c",
                "user.email=a@b",
                "-c",
                "user.name=a",
                "commit",
                "--quiet",
                "--allow-empty",
                "-m",
                "x",
            ],
        );
        git(
            &main,
            &["worktree", "add", "--quiet", "../linked", "-b", "feature"],
        );
        let m = Worktree::of(&main.join("sub/deeper")).unwrap();
        let l = Worktree::of(&tmp.path().join("linked")).unwrap();
        let real = |p: &Path| std::fs::canonicalize(p).unwrap();
        assert_eq!(m.root, real(&main));
        assert_eq!(l.root, real(&tmp.path().join("linked")));
        assert_eq!(m.common_dir, l.common_dir);
        assert_eq!(m.registry(), l.registry());
        assert_ne!(m.git_dir, l.git_dir);
        assert_eq!(m.head().0.as_deref(), Some("main"));
        assert_eq!(l.head().0.as_deref(), Some("feature"));
        assert_eq!(Worktree::of(tmp.path()), None);

        let checkout = |session: &str, w: &Worktree| Checkout {
            client: "claude".into(),
            session: session.into(),
            host: "h".into(),
            boot_id: None,
            pid: None,
            pid_start: None,
            worktree: w.root.to_string_lossy().into_owned(),
            branch: w.head().0,
            head: None,
            index: w.index().to_string_lossy().into_owned(),
            owned: Vec::new(),
            refreshed: "2026-12-05T10:00:00Z".into(),
        };
        register(&m, &checkout("A", &m)).unwrap();
        register(&l, &checkout("B", &l)).unwrap();
        let mut seen: Vec<String> = registered(&l).into_iter().map(|c| c.session).collect();
        seen.sort();
        assert_eq!(seen, ["A", "B"]);
        unregister(&m, "claude", "A");
        let seen: Vec<String> = registered(&m).into_iter().map(|c| c.session).collect();
        assert_eq!(seen, ["B"]);
    }
}
