//! A hermetic environment for running `baton`: a temp git repository, a cleared environment, a
//! fixed clock and explicit session ids.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use baton_store::{Expect, JournalTarget, RecordKey, StateStore};
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
    /// The store every run of this environment uses, and the test reads and writes through.
    store: Store,
}

/// The store the suite runs against: `BATON_TEST_STORE=postgres://…` names a PostgreSQL
/// server, where each environment is a project of its own; without it, the files under
/// `.agentic/`. Every `baton` run gets the same store as `BATON_STORE` and `BATON_PROJECT`.
enum Store {
    Files(baton_store::FileStore),
    Postgres {
        url: String,
        project: String,
        store: baton_store::PgStore,
        /// The project's whole content at once, for `snapshot` and `archived`.
        records: Box<baton_store::pg::records::Records>,
    },
}

/// The server the suite runs against, when it does.
pub fn pg_mode() -> bool {
    std::env::var_os("BATON_TEST_STORE").is_some()
}

/// Says that the running test is skipped, and why, on the test process's own stderr: past the
/// harness's capture, so that the log of a passing run shows it.
pub fn skipped(why: &str) {
    use std::io::Write;
    let name = std::thread::current()
        .name()
        .unwrap_or("a test")
        .to_string();
    let _ = std::io::stderr().write_all(format!("test {name} skipped: {why}\n").as_bytes());
}

/// For a test that holds only against files (symlinks, permissions, torn files, mtimes,
/// flocks) or starts servers of its own: under `BATON_TEST_STORE` it says why and returns.
#[macro_export]
macro_rules! files_only {
    ($why:literal) => {
        if $crate::common::pg_mode() {
            $crate::common::skipped(concat!("against PostgreSQL: ", $why));
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

/// A loop's record.
pub fn loop_key(key: &str) -> RecordKey {
    RecordKey::Loop(key.to_string())
}

/// A run's record.
pub fn run_key(id: &str) -> RecordKey {
    RecordKey::Run(baton_core::run_id::RunId::parse(id).expect("a run id"))
}

impl Store {
    fn open(repo: &Path, project: &str) -> Store {
        let layout = baton_store::Layout {
            root: repo.to_path_buf(),
            state_dir: repo.join(".agentic"),
        };
        let Ok(url) = std::env::var("BATON_TEST_STORE") else {
            return Store::Files(baton_store::FileStore::new(layout));
        };
        use baton_store::pg;
        let host = "test";
        let db = pg::backend::Db::open(&url, &pg::config::Process, project, host).unwrap();
        let settings = pg::config::resolve(&url, &pg::config::Process).unwrap();
        let records = Box::new(pg::records::Records::new(
            pg::connect(&settings).unwrap(),
            settings,
            project,
            host,
        ));
        Store::Postgres {
            url,
            project: project.to_string(),
            store: baton_store::PgStore::new(layout, std::rc::Rc::new(db)),
            records,
        }
    }

    fn get(&self) -> &dyn StateStore {
        match self {
            Store::Files(store) => store,
            Store::Postgres { store, .. } => store,
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
        let project = dir
            .path()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let store = Store::open(&repo, &project);
        let env = TestEnv {
            _dir: dir,
            repo,
            home,
            store,
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
            // Text shows times in the machine's zone: every run here is in UTC.
            .env("TZ", "UTC")
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
        if let Store::Postgres { url, project, .. } = &self.store {
            // The accounts' breakers are the server's, shared by every project on it: each
            // environment spends an account of its own, as it has a HOME of its own with the
            // files.
            cmd.env("BATON_STORE", url)
                .env("BATON_PROJECT", project)
                .env("BATON_ACCOUNT", project);
        }
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

    /// The server and project of this environment, when it runs against PostgreSQL.
    pub fn pg_project(&self) -> Option<(&str, &str)> {
        match &self.store {
            Store::Postgres { url, project, .. } => Some((url, project)),
            Store::Files(_) => None,
        }
    }

    /// The store the runs of this environment use. On a server, the interrupts a hook
    /// recorded in this machine's outbox have reached it first: the process the hook started
    /// sends them (with the hook's clock), as it would before anything else read the state.
    pub fn store(&self) -> &dyn StateStore {
        if self.pg_project().is_some() {
            let start = std::time::Instant::now();
            while !self.outbox().is_empty() && start.elapsed() < std::time::Duration::from_secs(20)
            {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            assert!(
                self.outbox().is_empty(),
                "the hook's interrupts never left the outbox: {:?}",
                self.outbox()
            );
        }
        self.store.get()
    }

    /// The entries of this project's outbox (`.agentic/outbox/*.json`).
    pub fn outbox(&self) -> Vec<PathBuf> {
        let Ok(entries) = std::fs::read_dir(self.state_dir().join("outbox")) else {
            return Vec::new();
        };
        let mut found: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.extension().is_some_and(|e| e == "json")
                    && !p.file_name().unwrap().to_string_lossy().starts_with('.')
            })
            .collect();
        found.sort();
        found
    }

    /// A record's bytes, as the store holds them.
    pub fn record_bytes(&self, key: &RecordKey) -> Option<Vec<u8>> {
        self.store().read_raw(key).unwrap().map(|raw| raw.bytes)
    }

    /// A record as JSON; `None` when there is none.
    pub fn record(&self, key: &RecordKey) -> Option<Value> {
        let bytes = self.record_bytes(key)?;
        Some(serde_json::from_slice(&bytes).unwrap())
    }

    pub fn has_record(&self, key: &RecordKey) -> bool {
        self.store().contains(key).unwrap()
    }

    /// Replaces a record (or creates it) with `bytes`, whatever it holds now.
    pub fn set_record_bytes(&self, key: &RecordKey, bytes: &[u8]) {
        if let Store::Files(files) = &self.store {
            std::fs::create_dir_all(&files.layout.state_dir).unwrap();
        }
        let store = self.store();
        let now = store.read_raw(key).unwrap().map(|raw| raw.revision);
        let expect = now.map_or(Expect::Absent, Expect::Revision);
        store.write_raw(key, bytes, &expect).unwrap();
    }

    /// Replaces a record (or creates it) with `value`, pretty-printed.
    pub fn set_record(&self, key: &RecordKey, value: &Value) {
        self.set_record_bytes(key, &serde_json::to_vec_pretty(value).unwrap());
    }

    /// The loop `key`; it must exist.
    #[track_caller]
    pub fn read_loop(&self, key: &str) -> Value {
        self.record(&loop_key(key))
            .unwrap_or_else(|| panic!("no loop {key}"))
    }

    pub fn write_loop(&self, key: &str, value: &Value) {
        self.set_record(&loop_key(key), value);
    }

    pub fn has_loop(&self, key: &str) -> bool {
        self.has_record(&loop_key(key))
    }

    /// The run `id`; it must exist.
    #[track_caller]
    pub fn read_run(&self, id: &str) -> Value {
        self.record(&run_key(id))
            .unwrap_or_else(|| panic!("no run {id}"))
    }

    pub fn write_run(&self, id: &str, value: &Value) {
        self.set_record(&run_key(id), value);
    }

    /// The batch; it must exist.
    #[track_caller]
    pub fn read_batch(&self) -> Value {
        self.record(&RecordKey::Batch).expect("no batch")
    }

    pub fn write_batch(&self, value: &Value) {
        self.set_record(&RecordKey::Batch, value);
    }

    /// The single-file loop state of older installs (`loop-state.json`).
    pub fn write_legacy_loop(&self, value: &Value) {
        self.set_record(&RecordKey::LegacyLoop, value);
    }

    /// A journal's events, oldest first.
    pub fn journal(&self, target: JournalTarget) -> Vec<Value> {
        self.store().read_journal(target).unwrap().events
    }

    /// The names of the archived records (`loop-state-PROJ-1.<stamp>.json`), sorted.
    pub fn archived(&self) -> Vec<String> {
        let mut names: Vec<String> = match &self.store {
            Store::Files(files) => match std::fs::read_dir(files.layout.archive_dir()) {
                Ok(entries) => entries
                    .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                    .collect(),
                Err(_) => Vec::new(),
            },
            Store::Postgres { records, .. } => {
                let held = baton_store::pg::transfer::fetch(records).unwrap();
                held.archive.into_iter().map(|(name, _)| name).collect()
            }
        };
        names.sort();
        names
    }

    /// The file of a loop, for the tests of the file store itself.
    pub fn loop_file(&self, key: &str) -> PathBuf {
        self.state_dir().join(format!("loop-state-{key}.json"))
    }

    /// Every file under the state directory with its bytes and, on a server, every record,
    /// journal and archived record of the project, to prove a command changed nothing. The
    /// lock sidecars under `locks/` and the `.gitignore` are left out: they are created on
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
        // On a server, its records too, named as messages name them.
        if let Store::Postgres { records, .. } = &self.store {
            let held = baton_store::pg::transfer::fetch(records).unwrap();
            for (kind, key, doc) in held.state {
                out.push((format!("#{}/{key}", kind.as_str()).into(), doc.into_bytes()));
            }
            for (target, lines) in held.journals {
                out.push((
                    format!("#journal/{target}").into(),
                    lines.join("\n").into_bytes(),
                ));
            }
            for (name, doc) in held.archive {
                out.push((format!("#archive/{name}").into(), doc.into_bytes()));
            }
        }
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

/// A long-lived process standing for an agent, killed (and reaped) when dropped.
pub struct Holder(pub Child);

impl Holder {
    pub fn start() -> Holder {
        Holder(
            Command::new("sleep")
                .arg("infinity")
                .stdin(Stdio::null())
                .spawn()
                .expect("spawn sleep"),
        )
    }

    pub fn pid(&self) -> String {
        self.0.id().to_string()
    }

    /// SIGKILL, then wait, so that no zombie is left to look alive.
    pub fn kill(&mut self) {
        self.0.kill().unwrap();
        self.0.wait().unwrap();
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The context a client's session-start hook hands the model (Claude Code's
/// `hookSpecificOutput.additionalContext`), or "" when it printed none.
pub fn hook_context(out: &Run) -> String {
    if out.stdout.trim().is_empty() {
        return String::new();
    }
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// `text` with the tree each gate result names (` on tree 5823990+9f3a2c1b`) left out: for
/// tests of what a gate line says besides its tree, which depends on the commit the test made.
pub fn without_trees(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find(" on tree ") {
        let after = &rest[i + " on tree ".len()..];
        let end = after
            .find(|c: char| !(c.is_ascii_hexdigit() || c == '+'))
            .unwrap_or(after.len());
        assert!(end >= 7, "no tree id after \"on tree\" in {rest:?}");
        out.push_str(&rest[..i]);
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}
