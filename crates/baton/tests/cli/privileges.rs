//! Hostile input from other users, with privileges dropped. CI runs as root, which reads and
//! writes everything and so hides permission bugs: as root these tests give the project to an
//! unprivileged uid and run `baton` as that uid (`setpriv`, plain uids, so nothing is left on
//! the machine), against a state directory every user may write to, a state file another user
//! owns and a symlink another user planted. Each is refused with exit 1, a message naming the
//! path and the fix (baton's own, never a "Permission denied"), and changes nothing. Without
//! root the first and the last run as the current user, and the foreign file is skipped (only
//! root can give a file to another user).

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::common::{Run, TestEnv, at, like, to_run};

/// The unprivileged user `baton` runs as (`nobody` on most systems).
const USER: u32 = 65534;
/// Another unprivileged user: the one that plants files.
const OTHER: u32 = 65533;

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// `setpriv` as `USER`, with no supplementary groups.
fn as_user(program: impl AsRef<std::ffi::OsStr>) -> std::process::Command {
    let mut cmd = std::process::Command::new("setpriv");
    cmd.arg(format!("--reuid={USER}"))
        .arg(format!("--regid={USER}"))
        .arg("--clear-groups")
        .arg("--")
        .arg(program);
    cmd
}

/// A project of the user `baton` runs as: under root, the test environment's repository and
/// home given to `USER` (and the temp directory above them opened to it); otherwise the
/// current user's.
struct Project {
    env: TestEnv,
    /// The uid `baton` runs as.
    uid: u32,
    dropped: bool,
}

impl Project {
    fn new() -> Project {
        let env = TestEnv::new();
        let dropped = is_root()
            && as_user("true")
                .status()
                .is_ok_and(|status| status.success());
        if is_root() && !dropped {
            eprintln!("note: setpriv cannot run as uid {USER}; running baton as root");
        }
        if !dropped {
            // SAFETY: geteuid has no preconditions.
            let uid = unsafe { libc::geteuid() };
            return Project { env, uid, dropped };
        }
        let top = env.repo.parent().unwrap();
        std::fs::set_permissions(top, std::fs::Permissions::from_mode(0o755)).unwrap();
        give(&env.repo, USER);
        give(env.home(), USER);
        Project {
            env,
            uid: USER,
            dropped,
        }
    }

    /// `baton` as session A at `T0 + minutes`, as the project's user.
    fn baton(&self, minutes: i64, args: &[&str]) -> Run {
        let inner = self.env.command(Some("A"), &at(minutes));
        let mut cmd = if self.dropped {
            let mut cmd = like(&inner, "setpriv");
            cmd.args(as_user(inner.get_program()).get_args());
            cmd
        } else {
            like(&inner, inner.get_program())
        };
        to_run(cmd.args(args).output().unwrap())
    }

    /// The state directory, as baton names it (the repository's real path).
    fn state_dir(&self) -> PathBuf {
        self.env.repo.canonicalize().unwrap().join(".agentic")
    }
}

/// Gives `path` and everything under it to `uid` (links themselves, never what they point at).
fn give(path: &Path, uid: u32) {
    std::os::unix::fs::lchown(path, Some(uid), Some(uid)).unwrap();
    if std::fs::symlink_metadata(path).unwrap().is_dir() {
        for entry in std::fs::read_dir(path).unwrap() {
            give(&entry.unwrap().path(), uid);
        }
    }
}

/// Every entry under `dir`, lock sidecars included, with its owner, its mode and its bytes (a
/// link's target): read as the test's user, which is root in CI.
fn tree(dir: &Path) -> Vec<(PathBuf, u32, u32, Vec<u8>)> {
    fn walk(dir: &Path, out: &mut Vec<(PathBuf, u32, u32, Vec<u8>)>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let bytes = if meta.is_dir() {
                walk(&path, out);
                Vec::new()
            } else if meta.is_symlink() {
                std::fs::read_link(&path)
                    .unwrap()
                    .into_os_string()
                    .into_encoded_bytes()
            } else {
                std::fs::read(&path).unwrap()
            };
            out.push((path, meta.uid(), meta.mode(), bytes));
        }
    }
    let mut out = Vec::new();
    walk(dir, &mut out);
    out.sort();
    out
}

/// Refused with exit 1, by baton's own message naming `names` and a hint carrying `fix`.
#[track_caller]
fn assert_refused(out: &Run, names: &str, fix: &str) {
    out.assert_code(1);
    assert!(
        out.stderr.contains(names),
        "names {names:?}: {}",
        out.stderr
    );
    assert!(
        out.stderr.contains("hint: ") && out.stderr.contains(fix),
        "the fix {fix:?}: {}",
        out.stderr
    );
    assert!(
        !out.stderr.contains("Permission denied") && !out.stderr.contains("os error"),
        "a refusal of baton's own, not a permission error: {}",
        out.stderr
    );
}

const SET: &[&str] = &[
    "loop", "set", "PROJ-1", "--phase", "qa", "--action", "returned",
];

/// Proves the others prove something: the user `baton` runs as does the ordinary things in
/// its own project, its files are its own, and (under root) it has no privilege left.
#[test]
fn the_unprivileged_user_runs_baton_in_its_own_project() {
    crate::files_only!("a test of the file store's permissions");
    let p = Project::new();
    p.baton(0, &["loop", "init", "PROJ-1"]).assert_code(0);
    p.baton(1, SET).assert_code(0);
    let out = p.baton(2, &["resume", "PROJ-1"]);
    out.assert_code(0);
    assert!(out.stdout.contains("verdict: own"), "{}", out.stdout);
    let dir = p.state_dir();
    for path in [dir.clone(), dir.join("locks"), p.env.loop_file("PROJ-1")] {
        let meta = std::fs::symlink_metadata(&path).unwrap();
        assert_eq!(meta.uid(), p.uid, "{} is its user's", path.display());
        assert_eq!(
            meta.mode() & 0o002,
            0,
            "{} is not open to all",
            path.display()
        );
    }
    if p.dropped {
        // Root's own 0600 file is out of reach: no capability survived the drop.
        let secret = p.env.repo.parent().unwrap().join("root-only");
        std::fs::write(&secret, "x").unwrap();
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
        let cat = as_user("cat").arg(&secret).output().unwrap();
        assert!(!cat.status.success(), "uid {USER} read a root-only file");
    }
}

#[test]
fn a_state_directory_every_user_may_write_to_is_refused_and_nothing_is_created() {
    crate::files_only!("a test of the file store's permissions");
    let p = Project::new();
    p.baton(0, &["loop", "init", "PROJ-1"]).assert_code(0);
    let dir = p.state_dir();
    for (open, mode) in [(dir.clone(), 0o777), (dir.join("locks"), 0o1777)] {
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(mode)).unwrap();
        let before = tree(&dir);
        for args in [SET, &["loop", "init", "PROJ-2"], &["resume", "PROJ-1"]] {
            let out = p.baton(1, args);
            assert_refused(
                &out,
                &format!("{} is writable by every user", open.display()),
                &format!("`chmod o-w {}`", open.display()),
            );
            assert_eq!(tree(&dir), before, "{args:?} changed {}", dir.display());
        }
        // The fix the hint gives is the whole fix.
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(mode & !0o002)).unwrap();
        p.baton(2, SET).assert_code(0);
    }
}

/// A loop file shaped as baton writes it (its user wrote it), then given to another user and
/// opened to all readers, as a planted file would be.
#[test]
fn a_state_file_another_user_owns_is_refused_and_left_alone() {
    crate::files_only!("a test of the file store's permissions");
    if !is_root() {
        crate::common::skipped("giving a file to another user needs root");
        return;
    }
    let p = Project::new();
    // Root refuses it too (a root-owned project): the classic planted file.
    let root = Project {
        env: TestEnv::new(),
        uid: 0,
        dropped: false,
    };
    for p in [&p, &root] {
        p.baton(0, &["loop", "init", "PROJ-1"]).assert_code(0);
        let file = p.env.loop_file("PROJ-1");
        std::os::unix::fs::chown(&file, Some(OTHER), Some(OTHER)).unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        let before = p.env.snapshot();
        let named = p.state_dir().join("loop-state-PROJ-1.json");
        for args in [SET, &["resume", "PROJ-1"], &["loop", "show", "PROJ-1"]] {
            let out = p.baton(1, args);
            assert_refused(
                &out,
                &format!("{} belongs to uid {OTHER}", named.display()),
                &format!("`chown {} {}`", p.uid, named.display()),
            );
            assert!(out.stderr.contains("`rm "), "{}", out.stderr);
            assert_eq!(p.env.snapshot(), before, "{args:?} changed the state");
            assert_eq!(std::fs::metadata(&file).unwrap().uid(), OTHER);
        }
    }
}

/// `.agentic/loop-state-PROJ-1.json -> ../victim.json`, the link another user's, the victim a
/// valid loop file its user may write.
#[test]
fn a_symlink_another_user_planted_is_refused_and_its_target_left_alone() {
    crate::files_only!("a test of the file store's permissions");
    let p = Project::new();
    p.baton(0, &["loop", "init", "PROJ-1"]).assert_code(0);
    let link = p.env.loop_file("PROJ-1");
    let victim = p.env.repo.join("victim.json");
    std::fs::rename(&link, &victim).unwrap();
    std::os::unix::fs::symlink("../victim.json", &link).unwrap();
    if is_root() {
        std::os::unix::fs::lchown(&link, Some(OTHER), Some(OTHER)).unwrap();
    }
    let victim_before = (
        std::fs::read(&victim).unwrap(),
        std::fs::metadata(&victim).unwrap().uid(),
    );
    assert_eq!(
        victim_before.1, p.uid,
        "the victim is writable by baton's user"
    );
    let before = p.env.snapshot();
    let named = p.state_dir().join("loop-state-PROJ-1.json");
    for args in [SET, &["resume", "PROJ-1"], &["loop", "show", "PROJ-1"]] {
        let out = p.baton(1, args);
        assert_refused(
            &out,
            &format!("{} is a symbolic link", named.display()),
            "replace the link",
        );
        assert_eq!(p.env.snapshot(), before, "{args:?} changed the state");
        assert_eq!(
            (
                std::fs::read(&victim).unwrap(),
                std::fs::metadata(&victim).unwrap().uid()
            ),
            victim_before,
            "{args:?} wrote through the link"
        );
    }
}

/// Root running baton in an unprivileged user's project (`sudo baton …`) is refused before it
/// creates a file the user could not then change.
#[test]
fn a_state_directory_another_user_owns_is_refused_even_to_root() {
    crate::files_only!("a test of the file store's permissions");
    let p = Project::new();
    if !p.dropped {
        crate::common::skipped("a project of another user needs root");
        return;
    }
    p.baton(0, &["loop", "init", "PROJ-1"]).assert_code(0);
    let dir = p.state_dir();
    let before = tree(&dir);
    for args in [SET, &["loop", "init", "PROJ-2"], &["resume", "PROJ-1"]] {
        // The environment's own command, run by the test's user: root.
        let out = to_run(
            p.env
                .command(Some("A"), &at(1))
                .args(args)
                .output()
                .unwrap(),
        );
        assert_refused(
            &out,
            &format!("{} belongs to uid {USER}", dir.display()),
            &format!("run baton as uid {USER}"),
        );
        assert_eq!(tree(&dir), before, "{args:?} changed {}", dir.display());
    }
}

/// git refuses a repository another user owns ("dubious ownership"): the error is git's one
/// line, not its advice with escaped newlines, and the hint is the `safe.directory` command.
#[test]
fn a_repository_git_calls_dubious_is_refused_with_the_safe_directory_fix() {
    crate::files_only!("git's check of the working tree");
    if !is_root() {
        crate::common::skipped("giving the repository to another user needs root");
        return;
    }
    let env = crate::common::TestEnv::new();
    let chown = std::process::Command::new("chown")
        .args(["-R", "nobody"])
        .arg(&env.repo)
        .status()
        .unwrap();
    assert!(chown.success());
    let out = env.baton("A", 0, &["loop", "init", "T-1"]);
    out.assert_code(1);
    assert!(out.stderr.contains("dubious ownership"), "{}", out.stderr);
    assert!(!out.stderr.contains("\\n"), "{}", out.stderr);
    assert!(
        out.stderr
            .contains("git config --global --add safe.directory"),
        "{}",
        out.stderr
    );
    assert!(!env.state_dir().join("loop-state-T-1.json").exists());
    // What reads the tree only warns, with the same fix.
    for args in [&["status"][..], &["resume"]] {
        let out = env.baton("A", 0, args);
        out.assert_code(0);
        assert!(
            out.stderr.contains("dubious ownership")
                && out
                    .stderr
                    .contains("git config --global --add safe.directory")
                && !out.stderr.contains("\\n"),
            "{args:?}: {}",
            out.stderr
        );
    }
}

/// A state directory its own user made read-only: the error names the state file and the
/// directory, with the `chmod` that fixes it, never the temp file that was never created.
#[test]
fn a_read_only_state_directory_is_named_with_the_chmod_that_fixes_it() {
    crate::files_only!("a test of the file store's permissions");
    let p = Project::new();
    if !p.dropped {
        crate::common::skipped("root writes a read-only directory: the test needs setpriv");
        return;
    }
    p.baton(0, &["loop", "init", "PROJ-1"]).assert_code(0);
    let dir = p.state_dir();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o555)).unwrap();
    // The lock files hold the pid of their last taker; everything else is as it was.
    let state = |dir: &Path| {
        let mut t = tree(dir);
        t.retain(|(path, ..)| !path.starts_with(dir.join("locks")));
        t
    };
    let before = state(&dir);
    let out = p.baton(1, SET);
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    out.assert_code(1);
    assert!(
        out.stderr.contains(&format!(
            "cannot write {}",
            p.env.loop_file("PROJ-1").display()
        )),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains(".tmp-"), "{}", out.stderr);
    assert!(
        out.stderr.contains(&format!("chmod u+w {}", dir.display())),
        "{}",
        out.stderr
    );
    assert_eq!(state(&dir), before);
}
