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
    /// Under `BATON_TEST_STORE`, the PostgreSQL project every run of this environment uses.
    mirror: Option<Mirror>,
}

/// The suite against PostgreSQL: with `BATON_TEST_STORE=postgres://…` every `baton` run keeps
/// its state on that server, in a project of its own. The tests go on reading and writing
/// files: before each run, state files the test changed replace the project's records, and
/// the files are taken away, so that the run finds its state on the server alone; after it
/// (and before the test reads a file), the records are written back as files. What is compared
/// is the bytes of every document, journal and archived file, so a run sees exactly what the
/// test wrote and the test exactly what the run wrote.
struct Mirror {
    url: String,
    project: String,
    records: baton_store::pg::records::Records,
    /// What the files and the server last agreed on.
    last: std::cell::RefCell<baton_store::pg::transfer::Moved>,
    /// The state files are away while runs use the server.
    away: std::cell::Cell<bool>,
}

/// The server the suite runs against, when it does.
pub fn pg_mode() -> bool {
    std::env::var_os("BATON_TEST_STORE").is_some()
}

/// For a test that holds only against files (symlinks, permissions, torn files, mtimes,
/// flocks) or starts servers of its own: under `BATON_TEST_STORE` it says why and returns.
#[macro_export]
macro_rules! files_only {
    ($why:literal) => {
        if $crate::common::pg_mode() {
            eprintln!("skipped against PostgreSQL: {}", $why);
            return;
        }
    };
}

/// How a message names the state file `file` (relative to the state directory, or its
/// start): the file itself, or under `BATON_TEST_STORE` the record the server holds.
pub fn named(file: &str) -> String {
    if !pg_mode() {
        return file.to_string();
    }
    if let Some(rest) = file.strip_prefix("archive/") {
        return format!("#archive/{rest}");
    }
    if let Some(id) = file.strip_prefix("runs/") {
        return format!("#run/{}", id.trim_end_matches(".json"));
    }
    match file {
        "loop-state.json" => "#legacy_loop/".into(),
        "batch-state.json" => "#batch/".into(),
        "pause.json" => "#pause/".into(),
        f => format!(
            "#loop/{}",
            baton_core::key::key_from_file_name(f).expect("a state file's name")
        ),
    }
}

impl Mirror {
    fn new(project: &str) -> Option<Mirror> {
        use baton_store::pg;
        let url = std::env::var("BATON_TEST_STORE").ok()?;
        let settings = pg::config::resolve(&url, &pg::config::Process).unwrap();
        let client = pg::connect(&settings).unwrap();
        Some(Mirror {
            url,
            project: project.to_string(),
            records: pg::records::Records::new(client, settings, project, "test"),
            last: Default::default(),
            away: Default::default(),
        })
    }

    fn layout(state_dir: &Path) -> baton_store::layout::Layout {
        baton_store::layout::Layout {
            root: state_dir.parent().unwrap().to_path_buf(),
            state_dir: state_dir.to_path_buf(),
        }
    }

    /// State files changed since the last agreement replace the project's records; then the
    /// files are taken away.
    fn files_to_server(&self, state_dir: &Path) {
        use baton_store::pg::transfer;
        if self.away.get() {
            return;
        }
        let files = transfer::collect(&Self::layout(state_dir)).unwrap();
        if files != *self.last.borrow() {
            self.records
                .in_transaction(|tx, project, _| {
                    for table in ["baton_state", "baton_journal", "baton_archive"] {
                        tx.execute(
                            &format!("DELETE FROM {table} WHERE project = $1"),
                            &[&project],
                        )?;
                    }
                    Ok(())
                })
                .unwrap();
            assert_eq!(
                transfer::import(&self.records, &files, &mut |_, _| {}).unwrap(),
                None
            );
            *self.last.borrow_mut() = files;
        }
        remove_state_files(state_dir);
        self.away.set(true);
    }

    /// The project's records written back as the state files.
    fn server_to_files(&self, state_dir: &Path) {
        use baton_store::pg::transfer;
        let held = transfer::fetch(&self.records).unwrap();
        if !self.away.get() && held == *self.last.borrow() {
            return;
        }
        remove_state_files(state_dir);
        // Nothing held writes nothing, not even the state directory.
        if !held.is_empty() {
            write_state_files(&Self::layout(state_dir), &held);
        }
        *self.last.borrow_mut() = held;
        self.away.set(false);
    }
}

/// What `baton store export` writes, without its fsyncs (a test's files need not survive a
/// power cut, and the suite writes them after every run).
fn write_state_files(
    layout: &baton_store::layout::Layout,
    held: &baton_store::pg::transfer::Moved,
) {
    use baton_store::pg::records::Kind;
    layout.ensure_state_dir().unwrap();
    layout.ensure_ignore_file().unwrap();
    let write = |rel: String, text: &str| {
        let path = layout.state_dir.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    for (kind, key, doc) in &held.state {
        let rel = match kind {
            Kind::Loop => format!("loop-state-{key}.json"),
            Kind::LegacyLoop => "loop-state.json".into(),
            Kind::Batch => "batch-state.json".into(),
            Kind::Pause => "pause.json".into(),
            Kind::Run => format!("runs/{key}.json"),
        };
        write(rel, doc);
    }
    for (target, lines) in &held.journals {
        let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
        write(format!("journal/{target}.jsonl"), &body);
    }
    for (name, doc) in &held.archive {
        write(format!("archive/{name}"), doc);
    }
}

/// The files `baton store import` moves: loops, the batch, the pause marks, runs, journals
/// and the archive.
fn remove_state_files(state_dir: &Path) {
    let Ok(entries) = std::fs::read_dir(state_dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        if ["runs", "journal", "archive"].contains(&name.as_str()) {
            std::fs::remove_dir_all(&path).unwrap();
        } else if name == "loop-state.json"
            || name == "batch-state.json"
            || name == "pause.json"
            || baton_core::key::key_from_file_name(&name).is_some()
        {
            std::fs::remove_file(&path).unwrap();
        }
    }
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
        let mirror = Mirror::new(&dir.path().file_name().unwrap().to_string_lossy());
        let env = TestEnv {
            _dir: dir,
            repo,
            home,
            mirror,
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
        if let Some(mirror) = &self.mirror {
            mirror.files_to_server(&self.state_dir());
            cmd.env("BATON_STORE", &mirror.url)
                .env("BATON_PROJECT", &mirror.project);
        }
        if let Some(session) = session {
            cmd.env("BATON_SESSION", session);
        }
        cmd
    }

    pub fn run(&self, session: Option<&str>, now: &str, args: &[&str]) -> Run {
        let out = self.command(session, now).args(args).output().unwrap();
        self.sync();
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

    /// Under `BATON_TEST_STORE`, brings the state files up to what the server holds; called
    /// after every run and before every read of a state file.
    pub fn sync(&self) {
        if let Some(mirror) = &self.mirror {
            mirror.server_to_files(&self.state_dir());
        }
    }

    pub fn loop_file(&self, key: &str) -> PathBuf {
        self.state_dir().join(format!("loop-state-{key}.json"))
    }

    pub fn read_json(&self, path: &Path) -> Value {
        self.sync();
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
        self.sync();
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
