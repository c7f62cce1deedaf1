//! Facts from git, by running `git` itself: one call per fact set, `GIT_OPTIONAL_LOCKS=0` so a
//! read never contends with the user's own git, and every path or id passed as an argument,
//! never through a shell.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::StoreError;

fn git(dir: &Path) -> Command {
    let mut cmd = Command::new("git");
    cmd.current_dir(dir)
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("LC_ALL", "C");
    cmd
}

fn run(dir: &Path, args: &[&str]) -> Result<Output, StoreError> {
    crate::faults::point("git.run")
        .and_then(|()| git(dir).args(args).output())
        .map_err(|e| StoreError::Git {
            args: args.join(" "),
            dir: dir.into(),
            detail: format!("cannot start git: {e}"),
        })
}

fn run_ok(dir: &Path, args: &[&str]) -> Result<String, StoreError> {
    let out = run(dir, args)?;
    if !out.status.success() {
        // Hooks and some porcelain report on stdout; show whichever said something, its first
        // line (what follows is git's own advice, which the error's hint gives as a command).
        let detail = [&out.stderr, &out.stdout]
            .into_iter()
            .map(|b| String::from_utf8_lossy(b).trim().to_string())
            .find(|s| !s.is_empty())
            .map(|s| s.lines().next().unwrap_or_default().trim().to_string())
            .unwrap_or_else(|| format!("exit status {}", out.status));
        return Err(StoreError::Git {
            args: args.join(" "),
            dir: dir.into(),
            detail,
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `git rev-parse --show-toplevel`, `None` outside a repository.
pub fn toplevel(dir: &Path) -> Result<Option<PathBuf>, StoreError> {
    let out = run(dir, &["rev-parse", "--show-toplevel"])?;
    Ok(out
        .status
        .success()
        .then(|| PathBuf::from(String::from_utf8_lossy(&out.stdout).trim_end())))
}

fn exclude_all(paths: &[&Path]) -> Vec<String> {
    let mut spec = vec![".".to_string()];
    spec.extend(
        paths
            .iter()
            .map(|p| format!(":(exclude,literal){}", p.display())),
    );
    spec
}

/// Whether anything in the work tree changed, leaving out `excluded` paths (baton's own files).
pub fn tree_dirty(root: &Path, excluded: &[&Path]) -> Result<bool, StoreError> {
    let mut args = vec![
        "status",
        "--porcelain",
        "-z",
        "--untracked-files=normal",
        "--",
    ];
    let spec = exclude_all(excluded);
    args.extend(spec.iter().map(String::as_str));
    Ok(!run_ok(root, &args)?.is_empty())
}

/// Whether `commit` names a commit of this repository.
pub fn commit_exists(root: &Path, commit: &str) -> Result<bool, StoreError> {
    let spec = format!("{commit}^{{commit}}");
    Ok(run(root, &["rev-parse", "--verify", "--quiet", &spec])?
        .status
        .success())
}

/// The working tree: its branch and whether anything outside the state directory changed.
#[derive(Debug, Clone, Default)]
pub struct TreeStatus {
    pub branch: Option<String>,
    pub dirty: bool,
}

/// One `git status --porcelain=v2 --branch -z` call, leaving out `excluded` paths (baton's own
/// files, and the artifacts a loop points to).
pub fn tree_status(root: &Path, excluded: &[&Path]) -> Result<TreeStatus, StoreError> {
    let mut args = vec![
        "status",
        "--porcelain=v2",
        "--branch",
        "-z",
        "--untracked-files=normal",
        "--",
    ];
    let spec = exclude_all(excluded);
    args.extend(spec.iter().map(String::as_str));
    let out = run_ok(root, &args)?;
    let mut status = TreeStatus::default();
    for entry in out.split('\0').filter(|e| !e.is_empty()) {
        if let Some(head) = entry.strip_prefix("# branch.head ") {
            status.branch = (head != "(detached)").then(|| head.to_string());
        } else if !entry.starts_with('#') {
            status.dirty = true;
        }
    }
    Ok(status)
}

/// The name of a plan's ledger: its lines record the work, so a ledger (a file of this name
/// whose first line is the run-state header) is never part of the tree the work is judged on
/// (appending a gate's line must not change what the gate ran on).
pub const LEDGER_FILE_NAME: &str = "STATE.md";

/// Exactly which tree a gate ran on, or a claim is judged on: HEAD, the index and the working
/// tree (untracked files included, ignored ones not), leaving out baton's state directory and
/// every plan ledger.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeId {
    /// HEAD's commit; `None` before the first commit.
    pub head: Option<String>,
    /// 8 hex digits of a SHA-256 over every change git reports against HEAD (with the index's
    /// object ids) and the bytes of every changed file in the working tree; `None` when
    /// nothing differs from HEAD.
    pub changes: Option<String>,
    /// How many paths differ from HEAD.
    pub changed: usize,
}

impl TreeId {
    /// `<HEAD, 7 digits>` for a clean tree, `<HEAD>+<changes>` otherwise (`0000000` before the
    /// first commit): what a gate result records and a verdict shows.
    pub fn id(&self) -> String {
        let head: String = self
            .head
            .as_deref()
            .map_or_else(|| "0000000".into(), |h| h.chars().take(7).collect());
        match &self.changes {
            Some(c) => format!("{head}+{c}"),
            None => head,
        }
    }
}

/// A changed file larger than this is identified by its size and modification time, not its
/// bytes: a tree id is computed at every judged stop.
const TREE_ID_HASHED_FILE_CAP: u64 = 16 * 1024 * 1024;

/// The tree's identity (`TreeId`), from one `git status` call and a read of each changed file.
/// `excluded` are paths relative to the root (baton's state directory when it is in the tree).
pub fn tree_id(root: &Path, excluded: &[&Path]) -> Result<TreeId, StoreError> {
    tree_id_within(root, excluded, 0)
}

/// How deep submodules and repositories nested in the tree are followed.
const TREE_ID_NESTING: u32 = 4;

/// Whether `path` (under `root`) is a plan ledger now: named `STATE.md`, its first line the
/// run-state header. A file of that name that is no ledger is work like any other.
fn is_ledger(root: &Path, path: &str) -> bool {
    if Path::new(path).file_name().and_then(|n| n.to_str()) != Some(LEDGER_FILE_NAME) {
        return false;
    }
    crate::ledger::read_head(&root.join(path))
        .ok()
        .flatten()
        .is_some_and(|first| baton_core::ledger::parse_header(&first).is_some())
}

fn tree_id_within(root: &Path, excluded: &[&Path], depth: u32) -> Result<TreeId, StoreError> {
    use sha2::Digest;
    let mut args = vec![
        "status",
        "--porcelain=v2",
        "--branch",
        "-z",
        "--untracked-files=all",
        "--no-renames",
        "--",
        ".",
    ];
    let spec: Vec<String> = excluded
        .iter()
        .map(|p| format!(":(exclude,literal){}", p.display()))
        .collect();
    args.extend(spec.iter().map(String::as_str));
    let out = run_ok(root, &args)?;
    let mut hasher = sha2::Sha256::new();
    let (mut head, mut changed) = (None, 0);
    for entry in out.split('\0').filter(|e| !e.is_empty()) {
        if let Some(oid) = entry.strip_prefix("# branch.oid ") {
            head = (oid != "(initial)").then(|| oid.to_string());
            continue;
        }
        // `1 XY sub mH mI mW hH hI path`, `u XY sub m1 m2 m3 mW h1 h2 h3 path`, `? path`: the
        // line names HEAD's and the index's objects; the working tree's side is read here.
        let (fields, worktree_differs) = match entry.as_bytes().first() {
            Some(b'1') => (8, entry.as_bytes().get(3) != Some(&b'.')),
            Some(b'u') => (10, true),
            Some(b'?') => (1, true),
            _ => continue,
        };
        let Some(path) = entry.splitn(fields + 1, ' ').nth(fields) else {
            continue;
        };
        if is_ledger(root, path) {
            continue;
        }
        changed += 1;
        hasher.update(entry.as_bytes());
        hasher.update(b"\0");
        // A submodule (`sub` is `S…`) or a repository nested in the tree (an untracked
        // directory with its own `.git`) is what its own HEAD and changes are.
        let submodule = entry
            .split(' ')
            .nth(2)
            .is_some_and(|sub| sub.starts_with('S'));
        let nested = path.ends_with('/') && root.join(path).join(".git").exists();
        if (submodule || nested) && depth < TREE_ID_NESTING {
            let inner = tree_id_within(&root.join(path), &[], depth + 1)
                .map_or_else(|e| format!("unknown {e}"), |t| t.id());
            hasher.update(inner.as_bytes());
            hasher.update(b"\0");
        } else if worktree_differs {
            hasher.update(file_identity(&root.join(path)).as_bytes());
            hasher.update(b"\0");
        }
    }
    let changes = (changed > 0).then(|| {
        hasher
            .finalize()
            .iter()
            .take(4)
            .map(|b| format!("{b:02x}"))
            .collect()
    });
    Ok(TreeId {
        head,
        changes,
        changed,
    })
}

/// Whether commits `from` and `to` hold the same files but for plan ledgers (a ledger committed
/// after its phase's gates ran leaves the work as it was); `false` when git cannot say.
pub fn only_ledgers_between(root: &Path, from: &str, to: &str) -> bool {
    match run_ok(root, &["diff", "--name-only", "-z", from, to, "--"]) {
        Ok(out) => out
            .split('\0')
            .filter(|p| !p.is_empty())
            .all(|p| is_ledger(root, p)),
        Err(_) => false,
    }
}

/// What a changed path holds now: its bytes' digest, a symlink's target, or why neither.
fn file_identity(path: &Path) -> String {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return "absent".into();
    };
    if meta.file_type().is_symlink() {
        return match std::fs::read_link(path) {
            Ok(target) => format!("link {}", target.display()),
            Err(_) => "link ?".into(),
        };
    }
    if !meta.is_file() {
        return format!("mode {:o}", meta.mode());
    }
    if meta.len() > TREE_ID_HASHED_FILE_CAP {
        return format!(
            "size {} mtime {}.{}",
            meta.len(),
            meta.mtime(),
            meta.mtime_nsec()
        );
    }
    match std::fs::read(path) {
        Ok(bytes) => format!(
            "mode {:o} sha256 {}",
            meta.mode(),
            crate::sha256_hex(&bytes)
        ),
        Err(e) => format!("unreadable {}", e.kind()),
    }
}

/// Every changed path of the work tree, from one `git status` call: the session-start scan asks
/// git once and each consumer (a loop's tree check, the feature's scope) filters the list, so
/// the scan costs one status whatever it finds.
#[derive(Debug, Clone, Default)]
pub struct Changes {
    /// The checked-out branch; `None` on a detached HEAD.
    pub branch: Option<String>,
    /// HEAD's commit; `None` before the first commit.
    pub head: Option<String>,
    /// Paths with staged changes (new names of renames).
    pub staged: Vec<String>,
    /// Changed, staged, unmerged and untracked paths, relative to the root (an untracked
    /// directory is one entry ending in `/`); a rename lists both names.
    pub paths: Vec<String>,
}

impl Changes {
    /// Whether any changed path lies outside every one of `excluded`.
    pub fn dirty_excluding(&self, excluded: &[&Path]) -> bool {
        self.paths
            .iter()
            .any(|p| !excluded.iter().any(|x| Path::new(p).starts_with(x)))
    }

    /// The changed paths inside `dir` (or an untracked directory that holds `dir`), leaving out
    /// those inside any of `excluded`.
    pub fn inside(&self, dir: &Path, excluded: &[&Path]) -> Vec<&str> {
        self.paths
            .iter()
            .filter(|p| {
                let p = Path::new(p.as_str());
                (p.starts_with(dir) || (dir.starts_with(p) && !p.as_os_str().is_empty()))
                    && !excluded.iter().any(|x| p.starts_with(x))
            })
            .map(String::as_str)
            .collect()
    }

    /// HEAD and the index, as `head_and_index` would report them.
    pub fn head_and_index(&self) -> HeadAndIndex {
        HeadAndIndex {
            head: self.head.clone(),
            branch: self.branch.clone(),
            staged: self.staged.clone(),
        }
    }

    pub fn tree_status(&self, excluded: &[&Path]) -> TreeStatus {
        TreeStatus {
            branch: self.branch.clone(),
            dirty: self.dirty_excluding(excluded),
        }
    }
}

/// One `git status --porcelain=v2 --branch -z` of the whole tree.
pub fn changes(root: &Path) -> Result<Changes, StoreError> {
    status_v2(root, "--untracked-files=normal")
}

fn status_v2(root: &Path, untracked: &str) -> Result<Changes, StoreError> {
    let out = run_ok(
        root,
        &["status", "--porcelain=v2", "--branch", "-z", untracked],
    )?;
    Ok(parse_changes(&out))
}

fn parse_changes(out: &str) -> Changes {
    let mut changes = Changes::default();
    let mut entries = out.split('\0').filter(|e| !e.is_empty());
    while let Some(entry) = entries.next() {
        if let Some(head) = entry.strip_prefix("# branch.head ") {
            changes.branch = (head != "(detached)").then(|| head.to_string());
            continue;
        }
        if let Some(oid) = entry.strip_prefix("# branch.oid ") {
            changes.head = (oid != "(initial)").then(|| oid.to_string());
            continue;
        }
        // `1 XY sub mH mI mW hH hI path`, `2 XY sub mH mI mW hH hI Xscore path` then the
        // original path as its own entry, `u XY sub m1 m2 m3 mW h1 h2 h3 path`, `? path`.
        let (fields, renamed) = match entry.as_bytes().first() {
            Some(b'1') => (8, false),
            Some(b'2') => (9, true),
            Some(b'u') => (10, false),
            Some(b'?') => (1, false),
            _ => continue,
        };
        if let Some(path) = entry.splitn(fields + 1, ' ').nth(fields) {
            // `XY`: X is the index's side; `.` means nothing staged.
            let staged = matches!(entry.as_bytes().first(), Some(b'u'))
                || (entry.as_bytes().first() != Some(&b'?')
                    && entry.as_bytes().get(2) != Some(&b'.'));
            if staged {
                changes.staged.push(path.to_string());
            }
            changes.paths.push(path.to_string());
        }
        if renamed && let Some(orig) = entries.next() {
            changes.paths.push(orig.to_string());
        }
    }
    changes
}

/// Commits on `tip` that `base` lacks; `None` when either does not resolve.
pub fn commits_beyond(root: &Path, base: &str, tip: &str) -> Result<Option<u64>, StoreError> {
    let range = format!("{base}..{tip}");
    let out = run(root, &["rev-list", "--count", &range, "--"])?;
    if !out.status.success() {
        return Ok(None);
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().parse().ok())
}

/// A base branch as the originating protocol records it: the branch name (`main`), never a
/// remote-tracking name (`origin/main`, `refs/remotes/<remote>/main`).
pub fn branch_name(raw: &str) -> &str {
    if let Some(rest) = raw.strip_prefix("refs/heads/") {
        return rest;
    }
    if let Some(rest) = raw.strip_prefix("refs/remotes/") {
        return rest.split_once('/').map_or(rest, |(_, name)| name);
    }
    raw.strip_prefix("origin/").unwrap_or(raw)
}

/// What a recorded base branch is compared against: `origin/<base>` when that exists (the
/// protocol diffs against it), else the local branch. A base recorded as `origin/main` by an
/// earlier writer resolves to the same.
pub fn base_ref(root: &Path, base: &str) -> String {
    let name = branch_name(base);
    let remote = format!("refs/remotes/origin/{name}");
    if ref_exists(root, &remote).unwrap_or(false) {
        format!("origin/{name}")
    } else {
        name.to_string()
    }
}

/// Whether `refname` (fully qualified) exists; an error when git cannot be run at all, so that
/// a broken git is never taken for a missing branch.
pub fn ref_exists(root: &Path, refname: &str) -> Result<bool, StoreError> {
    Ok(run(root, &["show-ref", "--verify", "--quiet", refname])?
        .status
        .success())
}

/// The branch new loops are measured against, as a branch name: the branch of `origin/HEAD`,
/// else `main`, else `master`, when it exists.
pub fn default_base(root: &Path) -> Result<Option<String>, StoreError> {
    if let Ok(out) = run_ok(
        root,
        &[
            "symbolic-ref",
            "--quiet",
            "--short",
            "refs/remotes/origin/HEAD",
        ],
    ) {
        let name = branch_name(out.trim());
        if !name.is_empty() {
            return Ok(Some(name.to_string()));
        }
    }
    for name in ["main", "master"] {
        if ref_exists(root, &format!("refs/heads/{name}"))? {
            return Ok(Some(name.to_string()));
        }
    }
    Ok(None)
}

/// Stashes every change outside `excluded` (baton's own files, the artifacts a loop points
/// to), untracked files included, so that discarded work stays recoverable with
/// `git stash list`. Returns the stash's commit.
pub fn stash_push(root: &Path, message: &str, excluded: &[&Path]) -> Result<String, StoreError> {
    let mut args = vec![
        "stash",
        "push",
        "--include-untracked",
        "--message",
        message,
        "--",
    ];
    let spec = exclude_all(excluded);
    args.extend(spec.iter().map(String::as_str));
    let top = |root: &Path| -> Option<String> {
        let out = run(
            root,
            &["rev-parse", "--quiet", "--verify", "--short", "stash@{0}"],
        )
        .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    let before = top(root);
    run_ok(root, &args)?;
    // `git stash push` succeeds with nothing to stash; the stash on top is then an older one.
    match top(root) {
        Some(stash) if Some(&stash) != before.as_ref() => Ok(stash),
        _ => Err(StoreError::Git {
            args: args.join(" "),
            dir: root.into(),
            detail: "nothing was stashed: no local changes outside the excluded paths".into(),
        }),
    }
}

/// Commits every change outside `excluded`. Returns the new commit's short id. When the commit
/// fails (a hook refuses it, no identity is set), the index is put back as it was, so a failed
/// command leaves the user's staging untouched.
pub fn commit_all(root: &Path, message: &str, excluded: &[&Path]) -> Result<String, StoreError> {
    let mut add = vec!["add", "--all", "--"];
    let spec = exclude_all(excluded);
    add.extend(spec.iter().map(String::as_str));
    committing(root, || {
        run_ok(root, &add)?;
        run_ok(root, &["commit", "--quiet", "--message", message])
    })
}

/// Runs a staging-and-commit sequence; when it fails (a hook refuses it, no identity is set)
/// the index is put back as it was, so a failed command leaves the user's staging untouched.
/// Returns the new commit's short id.
fn committing(
    root: &Path,
    stage_and_commit: impl FnOnce() -> Result<String, StoreError>,
) -> Result<String, StoreError> {
    let index = root.join(run_ok(root, &["rev-parse", "--git-path", "index"])?.trim_end());
    let saved = match std::fs::read(&index) {
        Ok(bytes) => Some(bytes),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(StoreError::io("read", &index)(e)),
    };
    if let Err(e) = stage_and_commit() {
        match saved {
            Some(bytes) => crate::atomic::replace(&index, &bytes)?,
            None => {
                let _ = std::fs::remove_file(&index);
            }
        }
        return Err(e);
    }
    Ok(run_ok(root, &["rev-parse", "--short", "HEAD"])?
        .trim()
        .to_string())
}

/// HEAD and the staged paths, from one `git status --porcelain=v2 --branch -z` call (untracked
/// files are not listed: they are never staged).
#[derive(Debug, Clone, Default)]
pub struct HeadAndIndex {
    /// `None` before the first commit.
    pub head: Option<String>,
    pub branch: Option<String>,
    /// What `git diff --cached --name-only` lists.
    pub staged: Vec<String>,
}

/// HEAD, the branch and the staged paths, from one status call.
pub fn head_and_index(root: &Path) -> Result<HeadAndIndex, StoreError> {
    // Untracked files are never staged: leaving them out spares git the walk of the tree.
    Ok(status_v2(root, "--untracked-files=no")?.head_and_index())
}

/// Whether `commit` is reachable from HEAD; an unknown commit is not.
pub fn is_ancestor_of_head(root: &Path, commit: &str) -> Result<bool, StoreError> {
    let out = run(root, &["merge-base", "--is-ancestor", commit, "HEAD"])?;
    Ok(out.status.success())
}

/// Which of `commits` are reachable from HEAD, in one git call when all are (the usual case):
/// `git rev-list ^HEAD <commits>` lists nothing exactly then. Otherwise each is asked alone.
pub fn reachable_from_head(root: &Path, commits: &[String]) -> Result<Vec<bool>, StoreError> {
    if commits.is_empty() {
        return Ok(Vec::new());
    }
    let mut args = vec!["rev-list", "--max-count=1", "^HEAD"];
    args.extend(commits.iter().map(String::as_str));
    args.push("--");
    let out = run(root, &args)?;
    if out.status.success() && out.stdout.is_empty() {
        return Ok(vec![true; commits.len()]);
    }
    commits
        .iter()
        .map(|c| is_ancestor_of_head(root, c))
        .collect()
}

/// The full commit id of each of `revs`, `None` for one that names no commit: one `git
/// cat-file --batch-check` call for all of them.
pub fn resolve_commits(root: &Path, revs: &[&str]) -> Result<Vec<Option<String>>, StoreError> {
    use std::io::Write;
    if revs.is_empty() {
        return Ok(Vec::new());
    }
    let mut child = git(root)
        .args(["cat-file", "--batch-check"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| StoreError::Git {
            args: "cat-file --batch-check".into(),
            dir: root.into(),
            detail: format!("cannot start git: {e}"),
        })?;
    let input: String = revs
        .iter()
        // A rev holding a newline would split the request; no commit name holds one.
        .map(|r| format!("{}^{{commit}}\n", r.replace(['\n', '\r'], " ")))
        .collect();
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(input.as_bytes());
    }
    let out = child.wait_with_output().map_err(|e| StoreError::Git {
        args: "cat-file --batch-check".into(),
        dir: root.into(),
        detail: e.to_string(),
    })?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut found: Vec<Option<String>> = text
        .lines()
        .map(|line| {
            let mut parts = line.split(' ');
            match (parts.next(), parts.next()) {
                (Some(sha), Some("commit")) => Some(sha.to_string()),
                _ => None,
            }
        })
        .collect();
    found.resize(revs.len(), None);
    Ok(found)
}

/// `git log --oneline <base>..HEAD`, newest first; empty when `base` is unknown.
pub fn log_since(root: &Path, base: &str) -> Result<Vec<String>, StoreError> {
    let range = format!("{base}..HEAD");
    let out = run(root, &["log", "--oneline", "--no-decorate", &range, "--"])?;
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(String::from)
        .collect())
}

/// `git check-ignore`: whether git would ignore `path`.
pub fn is_ignored(root: &Path, path: &Path) -> Result<bool, StoreError> {
    let path = path.to_string_lossy();
    let out = run(
        root,
        // Without `--no-index`: a ledger already tracked is committed whatever .gitignore says.
        &["check-ignore", "--quiet", "--", &path],
    )?;
    Ok(out.status.success())
}

/// Whether `path` differs from HEAD or is untracked.
pub fn has_changes(root: &Path, path: &Path) -> Result<bool, StoreError> {
    let path = path.to_string_lossy();
    let out = run_ok(
        root,
        &[
            "status",
            "--porcelain",
            "--untracked-files=all",
            "--",
            &path,
        ],
    )?;
    Ok(!out.trim().is_empty())
}

/// Commits only `path`, whatever else is staged.
pub fn commit_path(root: &Path, path: &Path, message: &str) -> Result<String, StoreError> {
    let path = path.to_string_lossy();
    committing(root, || {
        // The caller has checked that git does not ignore it; a tracked file under an ignored
        // directory still needs `--force` to be staged.
        run_ok(root, &["add", "--force", "--", &path])?;
        run_ok(
            root,
            &[
                "commit",
                "--quiet",
                "--message",
                message,
                "--only",
                "--",
                &path,
            ],
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_lists_every_kind_of_entry_and_both_names_of_a_rename() {
        let out = "# branch.oid abc\0# branch.head feature/x\0\
                   1 .M N... 100644 100644 100644 a a src/lib.rs\0\
                   2 R. N... 100644 100644 100644 a a R100 docs/new name.md\0docs/old.md\0\
                   u UU N... 100644 100644 100644 100644 a b c conflict.txt\0\
                   ? .aspis/features/F-1/\0";
        let c = parse_changes(out);
        assert_eq!(c.branch.as_deref(), Some("feature/x"));
        assert_eq!(c.head.as_deref(), Some("abc"));
        assert_eq!(c.staged, ["docs/new name.md", "conflict.txt"]);
        assert_eq!(
            c.paths,
            [
                "src/lib.rs",
                "docs/new name.md",
                "docs/old.md",
                "conflict.txt",
                ".aspis/features/F-1/"
            ]
        );
        let state = Path::new(".agentic");
        assert!(c.dirty_excluding(&[state]));
        assert_eq!(
            c.inside(Path::new(".aspis/features/F-1"), &[state]),
            [".aspis/features/F-1/"]
        );
        assert_eq!(
            c.inside(Path::new("docs"), &[]),
            ["docs/new name.md", "docs/old.md"]
        );
        // An untracked directory that holds the feature counts as a change inside it.
        let c = parse_changes("# branch.head (detached)\0? .aspis/\0");
        assert_eq!(c.branch, None);
        assert_eq!(c.inside(Path::new(".aspis/features/F-1"), &[]), [".aspis/"]);
        assert!(!c.dirty_excluding(&[Path::new(".aspis")]));
    }
}
