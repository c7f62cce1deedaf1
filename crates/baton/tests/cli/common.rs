//! A hermetic environment for running `baton`: a temp git repository, a cleared environment, a
//! fixed clock and explicit session ids.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

pub const T0: &str = "2026-03-01T12:00:00Z";

/// `T0` plus `minutes`, as `BATON_NOW` takes it.
pub fn at(minutes: i64) -> String {
    let t0: jiff::Timestamp = T0.parse().unwrap();
    (t0 + jiff::SignedDuration::from_mins(minutes))
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// The rules of an answer's reasons, in order.
#[track_caller]
pub fn rules(out: &Value) -> Vec<String> {
    out["reasons"]
        .as_array()
        .unwrap_or_else(|| panic!("no reasons: {out}"))
        .iter()
        .map(|r| r["rule"].as_str().unwrap().to_string())
        .collect()
}

pub struct TestEnv {
    _dir: tempfile::TempDir,
    pub repo: PathBuf,
    home: PathBuf,
}

/// What one run printed, and how it exited.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not one JSON object ({e}):\n{}\nstderr:\n{}",
                self.stdout, self.stderr
            )
        })
    }

    #[track_caller]
    pub fn assert_code(&self, code: i32) -> &Run {
        assert_eq!(
            self.code, code,
            "exit code\nstdout:\n{}\nstderr:\n{}",
            self.stdout, self.stderr
        );
        self
    }
}

impl TestEnv {
    /// A repository on `main` with one commit; `.agentic/` is not ignored, so the tests also
    /// prove that baton's own files never count as work in the tree.
    pub fn new() -> TestEnv {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        let home = dir.path().join("home");
        std::fs::create_dir_all(&repo).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        let env = TestEnv {
            _dir: dir,
            repo,
            home,
        };
        env.git(&["init", "--quiet", "--initial-branch=main"]);
        env.write("README.md", "# test project\n");
        env.git(&["add", "."]);
        env.git(&["commit", "--quiet", "-m", "initial"]);
        env
    }

    fn base_command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut cmd = Command::new(program);
        cmd.current_dir(&self.repo)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "Test")
            .env("GIT_AUTHOR_EMAIL", "test@example.invalid")
            .env("GIT_COMMITTER_NAME", "Test")
            .env("GIT_COMMITTER_EMAIL", "test@example.invalid");
        cmd
    }

    /// `baton` with `BATON_NOW` and, when given, `BATON_SESSION`.
    pub fn command(&self, session: Option<&str>, now: &str) -> Command {
        let mut cmd = self.base_command(env!("CARGO_BIN_EXE_baton"));
        cmd.env("BATON_NOW", now);
        if let Some(session) = session {
            cmd.env("BATON_SESSION", session);
        }
        cmd
    }

    pub fn run(&self, session: Option<&str>, now: &str, args: &[&str]) -> Run {
        let out = self.command(session, now).args(args).output().unwrap();
        to_run(out)
    }

    /// Runs as session `session` at `T0 + minutes`.
    pub fn baton(&self, session: &str, minutes: i64, args: &[&str]) -> Run {
        self.run(Some(session), &at(minutes), args)
    }

    /// `baton loop set <ticket> --phase <phase> --action <action>` as `session`.
    pub fn set_phase(
        &self,
        session: &str,
        minutes: i64,
        ticket: &str,
        phase: &str,
        action: &str,
    ) -> Run {
        self.baton(
            session,
            minutes,
            &["loop", "set", ticket, "--phase", phase, "--action", action],
        )
    }

    pub fn git(&self, args: &[&str]) -> String {
        let out = self.base_command("git").args(args).output().unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn write(&self, rel: &str, content: &str) {
        let path = self.repo.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    /// Sets the mtime of `rel` to `minutes` before `T0`.
    pub fn set_age(&self, rel: &str, minutes: i64) {
        let t0: jiff::Timestamp = T0.parse().unwrap();
        let t = t0 - jiff::SignedDuration::from_mins(minutes);
        let secs = u64::try_from(t.as_second()).unwrap();
        std::fs::File::options()
            .write(true)
            .open(self.repo.join(rel))
            .unwrap()
            .set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs))
            .unwrap();
    }

    /// The `HOME` every run sees.
    pub fn home(&self) -> &Path {
        &self.home
    }

    pub fn state_dir(&self) -> PathBuf {
        self.repo.join(".agentic")
    }

    pub fn loop_file(&self, key: &str) -> PathBuf {
        self.state_dir().join(format!("loop-state-{key}.json"))
    }

    pub fn read_json(&self, path: &Path) -> Value {
        serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
    }

    pub fn write_json(&self, path: &Path, value: &Value) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, serde_json::to_vec_pretty(value).unwrap()).unwrap();
    }

    /// Every file under the state directory with its bytes, to prove a command changed nothing.
    /// The lock sidecars under `locks/` and the `.gitignore` are left out: they are created on
    /// first use and hold no state (a sidecar holds only the pid of its last holder).
    pub fn snapshot(&self) -> Vec<(PathBuf, Vec<u8>)> {
        fn walk(dir: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
            let Ok(entries) = std::fs::read_dir(dir) else {
                return;
            };
            for entry in entries {
                let path = entry.unwrap().path();
                let meta = std::fs::symlink_metadata(&path).unwrap();
                if path.file_name().is_some_and(|n| n == "locks") && meta.is_dir() {
                    continue;
                }
                if path == dir.join(".gitignore") {
                    continue;
                }
                if meta.is_dir() {
                    walk(&path, out);
                } else if meta.is_file() {
                    out.push((path.clone(), std::fs::read(&path).unwrap()));
                } else {
                    out.push((
                        path.clone(),
                        std::fs::read_link(&path)
                            .unwrap()
                            .into_os_string()
                            .into_encoded_bytes(),
                    ));
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.state_dir(), &mut out);
        out.sort();
        out
    }
}

pub fn to_run(out: Output) -> Run {
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A command for `program` with the environment and working directory of `inner`.
pub fn like(inner: &Command, program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut cmd = Command::new(program);
    cmd.env_clear();
    for (key, value) in inner.get_envs() {
        if let Some(value) = value {
            cmd.env(key, value);
        }
    }
    if let Some(dir) = inner.get_current_dir() {
        cmd.current_dir(dir);
    }
    cmd
}

/// `inner`'s program with `args`, started by `sh` after `prelude` (`read go` for a barrier that
/// waits for a line on stdin, `umask 000`), with `inner`'s environment. The arguments travel as
/// argv, never spliced into the script.
pub fn in_shell<I, A>(inner: &Command, prelude: &str, args: I) -> Command
where
    I: IntoIterator<Item = A>,
    A: AsRef<std::ffi::OsStr>,
{
    let mut cmd = like(inner, "sh");
    cmd.arg("-c")
        .arg(format!(r#"{prelude} && exec "$0" "$@""#))
        .arg(inner.get_program())
        .args(args);
    cmd
}
