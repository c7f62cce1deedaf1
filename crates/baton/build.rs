//! `baton --version` names the commit it was built from: `baton 0.1.0 (6e94406 2026-12-01)`.
//!
//! The commit comes from `git`, when the crate is built in a checkout of its repository; a
//! build from a published tarball has no repository, and its version is the plain version.
//! The build script reruns only when HEAD or the branch it names moves, not on every build.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    match commit(&manifest_dir) {
        Some(commit) => {
            println!("cargo:rustc-env=BATON_GIT_COMMIT={commit}");
            println!("cargo:rustc-env=BATON_VERSION={version} ({commit})");
        }
        None => println!("cargo:rustc-env=BATON_VERSION={version}"),
    }
}

/// `6e94406 2026-12-01`: the commit checked out and its commit date, when `dir` is in a git
/// checkout that tracks this crate.
fn commit(dir: &Path) -> Option<String> {
    // The git directory of this worktree (HEAD) and the one it shares with the others (the
    // branches); both absolute.
    let dirs = git(
        dir,
        &["rev-parse", "--absolute-git-dir", "--git-common-dir"],
    )?;
    let mut dirs = dirs.lines();
    let git_dir = PathBuf::from(dirs.next()?);
    let common = dirs.next().map_or_else(|| git_dir.clone(), PathBuf::from);
    let common = if common.is_absolute() {
        common
    } else {
        dir.join(common)
    };
    rerun_if_changed(&git_dir.join("HEAD"));
    let head = std::fs::read_to_string(git_dir.join("HEAD")).ok()?;
    if let Some(branch) = head.trim().strip_prefix("ref: ") {
        // A new commit on the branch rewrites its file, or `packed-refs` once it is packed.
        rerun_if_changed(&common.join(branch));
        rerun_if_changed(&common.join("packed-refs"));
    }
    // A tarball unpacked inside some other repository is not a checkout of baton. (Checked
    // after the above: the commit that first tracks this file moves the branch, and so
    // reruns the script.)
    git(dir, &["ls-files", "--error-unmatch", "build.rs"])?;
    // Seven digits exactly, whatever `core.abbrev` says.
    let line = git(dir, &["log", "-1", "--format=%H %cs", "HEAD"])?;
    let (hash, date) = line.trim().split_once(' ')?;
    let short = hash.get(..7)?;
    short
        .bytes()
        .all(|b| b.is_ascii_hexdigit())
        .then(|| format!("{short} {date}"))
}

/// Only a file that exists: a missing one would make cargo rerun the script on every build.
fn rerun_if_changed(path: &Path) {
    if path.exists() {
        println!("cargo:rerun-if-changed={}", path.display());
    }
}

/// What `git args` prints in `dir`, or nothing when git is missing or fails.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_OPTIONAL_LOCKS", "0")
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    String::from_utf8(out.stdout).ok()
}
