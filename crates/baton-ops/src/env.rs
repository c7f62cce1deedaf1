//! The facts every command may need from its surroundings, read once at the edge: the working
//! directory, the session id, the clock, the lock wait and the settings.

use std::path::PathBuf;

use std::time::Duration;

use jiff::Timestamp;

use crate::error::OpError;
use baton_core::client::{Client, SessionSource, UserDir};
#[cfg(feature = "postgres")]
use baton_store::PgStore;
use baton_store::lock::DEFAULT_LOCK_WAIT;
use baton_store::{FileStore, Layout, StateStore};

/// The settings baton takes from its surroundings, read once when a command starts, for every
/// layer to read from here. `--store` reaches `BATON_STORE` before (the command line puts it in
/// the environment, so that the agent and the gates baton runs inherit it); the project's
/// `.baton.toml` is read beside them, once, when the project's root is known
/// (`Ctx::store_url`).
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// The shared store's URL: `--store`, else `BATON_STORE`.
    pub store: Option<String>,
    /// Where state lives instead of `<root>/.agentic`: `BATON_STATE_DIR`.
    pub state_dir: Option<std::ffi::OsString>,
    /// The project's name in a shared store: `BATON_PROJECT` (`store import` and `export` take
    /// `--project` over it).
    pub project: Option<String>,
    /// The secret a lease holder proves itself by when it has no session or process:
    /// `BATON_LEASE_TOKEN` (a command's `--token` over it).
    pub lease_token: Option<String>,
    /// Where the originating pipeline keeps its runs' state: `BATON_PIPELINE_STATE_DIR`.
    pub pipeline_state_dir: Option<PathBuf>,
    /// The agent clients' variables naming their own process (`Definition::pid_variable`,
    /// Claude Code's `CLAUDE_PID`) that are set, with their values.
    pub client_pids: Vec<(&'static str, String)>,
    /// The user's home directory, where `baton init --user` finds a client's settings: `HOME`.
    pub home: Option<std::ffi::OsString>,
    /// The agent clients' variables naming their own user directory (`UserDir::Variable`,
    /// Codex's `CODEX_HOME`) that are set, with their values.
    pub client_dirs: Vec<(&'static str, std::ffi::OsString)>,
    /// Where Claude Code keeps its user settings and plugins instead of `~/.claude`:
    /// `CLAUDE_CONFIG_DIR`.
    pub claude_config_dir: Option<PathBuf>,
    /// The judge of "done" is off for this run: `BATON_JUDGE=off` (or `0`, `false`).
    pub judge_off: bool,
    /// The guard of shared checkouts is off for this run: `BATON_GUARD=off` (or `0`, `false`).
    pub guard_off: bool,
    /// `baton supervise` launches without waiting for the account's window:
    /// `BATON_WINDOW=off` (or `0`, `false`).
    pub window_off: bool,
    /// The machine's own directory, which every project on it shares (the accounts'
    /// breakers): `$XDG_STATE_HOME/baton`, else `~/.local/state/baton`.
    pub machine_dir: Option<PathBuf>,
    /// The account the person names for every client (`BATON_ACCOUNT`), over what the
    /// clients' files say: for a client whose files identify none.
    pub account: Option<String>,
    /// The one-way digests of the API keys set for the clients (`ANTHROPIC_API_KEY`,
    /// `OPENAI_API_KEY`/`CODEX_API_KEY`, `GEMINI_API_KEY`), by client: the key itself is never
    /// kept.
    pub key_digests: Vec<(&'static str, String)>,
}

/// Whether the variable `name` turns something off (`off`, `0`, `false` or `no`).
fn switched_off(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| {
        matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "off" | "0" | "false" | "no"
        )
    })
}

impl Settings {
    pub fn from_env() -> Settings {
        let text = |name: &str| std::env::var(name).ok().filter(|s| !s.trim().is_empty());
        Settings {
            store: text("BATON_STORE"),
            state_dir: std::env::var_os("BATON_STATE_DIR"),
            project: text("BATON_PROJECT").map(|p| p.trim().to_string()),
            lease_token: std::env::var("BATON_LEASE_TOKEN")
                .ok()
                .filter(|t| !t.is_empty()),
            pipeline_state_dir: std::env::var_os("BATON_PIPELINE_STATE_DIR").map(PathBuf::from),
            client_pids: Client::ALL
                .into_iter()
                .filter_map(|c| c.def().pid_variable())
                .filter_map(|v| std::env::var(v).ok().map(|value| (v, value)))
                .collect(),
            home: std::env::var_os("HOME"),
            client_dirs: Client::ALL
                .into_iter()
                .filter_map(|c| match c.def().user_dir() {
                    UserDir::Variable { variable, .. } => Some(variable),
                    UserDir::Home => None,
                })
                .filter_map(|v| std::env::var_os(v).map(|value| (v, value)))
                .collect(),
            claude_config_dir: std::env::var_os("CLAUDE_CONFIG_DIR")
                .filter(|d| !d.is_empty())
                .map(PathBuf::from),
            judge_off: switched_off(crate::judge::JUDGE_VARIABLE),
            guard_off: switched_off(crate::guard::GUARD_VARIABLE),
            window_off: switched_off(crate::window::WINDOW_VARIABLE),
            machine_dir: std::env::var_os("XDG_STATE_HOME")
                .filter(|d| !d.is_empty() && std::path::Path::new(d).is_absolute())
                .map(|d| PathBuf::from(d).join("baton"))
                .or_else(|| {
                    std::env::var_os("HOME")
                        .filter(|h| !h.is_empty())
                        .map(|h| PathBuf::from(h).join(".local/state/baton"))
                }),
            account: text("BATON_ACCOUNT").map(|a| a.trim().to_string()),
            key_digests: [
                ("claude", "ANTHROPIC_API_KEY"),
                ("codex", "OPENAI_API_KEY"),
                ("codex", "CODEX_API_KEY"),
                ("gemini", "GEMINI_API_KEY"),
            ]
            .into_iter()
            .filter_map(|(client, name)| {
                text(name).map(|key| (client, baton_core::breaker::key_digest(&key)))
            })
            .collect(),
        }
    }

    /// The client process variable that is set first, with its value.
    pub fn client_pid(&self) -> Option<(&'static str, &str)> {
        self.client_pids
            .first()
            .map(|(v, value)| (*v, value.as_str()))
    }
}

#[derive(Clone)]
pub struct Ctx {
    pub dir: PathBuf,
    pub session: Option<String>,
    pub now: Timestamp,
    /// The clock is fixed by `BATON_NOW` (a test, a replay): no server's or machine's clock
    /// replaces `now`, and nothing that waits waits on the real clock.
    pub fixed_clock: bool,
    /// How long to wait for a state file's lock (`BATON_LOCK_WAIT`) before giving up, exit 3.
    pub lock_wait: Duration,
    pub settings: Settings,
    /// The store URL as read for a project root (`Ctx::store_url`), so that `.baton.toml` is
    /// read once per command.
    store_url: std::sync::OnceLock<(PathBuf, Option<String>)>,
    /// The machine's time zone (`TZ`, else `/etc/localtime`: `local_zone`, which walks no
    /// zoneinfo tree), read when a time is first shown.
    zone: std::sync::OnceLock<jiff::tz::TimeZone>,
    /// The store every operation is handed instead of the files or a server: the strict
    /// in-memory store of the operations' own tests (`Ctx::in_memory`).
    memory: Option<baton_store::MemStore>,
    /// The project's store, opened on the first `store()` and shared by every clone of this
    /// context (another session's or another clock's view of the same handle).
    opened: std::rc::Rc<std::cell::RefCell<Option<std::rc::Rc<dyn StateStore>>>>,
}

impl Ctx {
    /// `-C`, `--session` (else `BATON_SESSION`, else the session of the agent client whose
    /// tool call this is: `client_session`) and `BATON_NOW`.
    pub fn from_env(dir: Option<PathBuf>, session: Option<String>) -> Result<Ctx, OpError> {
        let dir = match dir {
            Some(dir) => dir,
            None => std::env::current_dir()
                .map_err(|e| OpError::usage(format!("cannot read the working directory: {e}")))?,
        };
        // The originating shell writes the literal `null` for a missing session id; an empty or
        // `null` value is no session, and hides nothing behind it.
        let given = |s: &String| !s.is_empty() && s != "null";
        let settings = Settings::from_env();
        let session = session
            .filter(given)
            .or_else(|| std::env::var("BATON_SESSION").ok().filter(given))
            .or_else(|| client_session(&dir, &settings));
        let fixed = std::env::var("BATON_NOW")
            .ok()
            .filter(|raw| !raw.is_empty());
        let now = match &fixed {
            Some(raw) => raw.parse::<Timestamp>().map_err(|e| {
                OpError::usage(format!(
                    "BATON_NOW={raw:?} is not an RFC 3339 timestamp: {e}"
                ))
                .hint("set it like `BATON_NOW=2026-01-31T09:30:00Z`, or unset it to use the clock")
            })?,
            None => Timestamp::now(),
        };
        let lock_wait = match std::env::var("BATON_LOCK_WAIT") {
            Ok(raw) if !raw.is_empty() => parse_wait(&raw).ok_or_else(|| {
                OpError::usage(format!(
                    "BATON_LOCK_WAIT={raw:?} is not a duration"
                ))
                .hint("set it like `BATON_LOCK_WAIT=5s` or `BATON_LOCK_WAIT=250ms`, or unset it for the default 5s")
            })?,
            _ => DEFAULT_LOCK_WAIT,
        };
        Ok(Ctx {
            dir,
            session,
            now,
            fixed_clock: fixed.is_some(),
            lock_wait,
            settings,
            store_url: std::sync::OnceLock::new(),
            zone: std::sync::OnceLock::new(),
            memory: None,
            opened: Default::default(),
        })
    }

    /// A context whose operations work on `store` (one process's handle onto it), in the
    /// project at `dir`, as `session`, at `now`, with no environment read: for the operations'
    /// own tests.
    pub fn in_memory(
        dir: PathBuf,
        session: Option<&str>,
        now: Timestamp,
        store: baton_store::MemStore,
    ) -> Ctx {
        Ctx {
            dir,
            session: session.map(str::to_string),
            now,
            fixed_clock: true,
            lock_wait: Duration::from_millis(200),
            settings: Settings::default(),
            store_url: std::sync::OnceLock::new(),
            zone: std::sync::OnceLock::from(jiff::tz::TimeZone::UTC),
            memory: Some(store),
            opened: Default::default(),
        }
    }

    /// A time as text shows it to a person: in the machine's zone, which it names
    /// (`2026-12-03 04:46:31 CET`). State files and `--json` keep RFC 3339 UTC.
    pub fn shown(&self, t: Timestamp) -> String {
        let zone = self.zone.get_or_init(baton_store::local_zone::local_zone);
        baton_core::time::format_local(t, zone)
    }

    pub fn session(&self) -> Option<&str> {
        self.session.as_deref()
    }

    pub fn layout(&self) -> Result<Layout, OpError> {
        Ok(Layout::discover(
            &self.dir,
            self.settings.state_dir.clone(),
        )?)
    }

    /// The project's store: opened once, on first use, and the same handle after, for this
    /// context and every view made of it by a clone.
    pub fn store(&self) -> Result<std::rc::Rc<dyn StateStore>, OpError> {
        if let Some(store) = self.opened.borrow().as_ref() {
            return Ok(std::rc::Rc::clone(store));
        }
        let store: std::rc::Rc<dyn StateStore> = self.store_at(self.layout()?)?.into();
        *self.opened.borrow_mut() = Some(std::rc::Rc::clone(&store));
        Ok(store)
    }

    /// Forgets the opened store, and this thread's connection to a server (left open, not
    /// closed: see `DATABASE`), so that the next use connects again: for a command that
    /// retries after the server was out of reach.
    pub fn reconnect_next_time(&self) {
        self.opened.borrow_mut().take();
        #[cfg(feature = "postgres")]
        DATABASE.with(|d| *d.borrow_mut() = std::mem::ManuallyDrop::new(None));
    }

    /// The store of the project `layout` names: the PostgreSQL server `BATON_STORE` (or the
    /// project's `.baton.toml`) names, else the files under the state directory.
    pub fn store_at(&self, layout: Layout) -> Result<Box<dyn StateStore>, OpError> {
        if let Some(memory) = &self.memory {
            let mut store = memory.clone();
            store.lock_wait = self.lock_wait;
            return Ok(Box::new(store));
        }
        #[cfg(feature = "postgres")]
        if let Some(db) = self.database(&layout.root)? {
            let mut store = PgStore::new(layout, db);
            store.lock_wait = self.lock_wait;
            return Ok(Box::new(store));
        }
        #[cfg(not(feature = "postgres"))]
        if self.store_url(Some(&layout.root))?.is_some() {
            return Err(OpError::usage(
                "a PostgreSQL store is configured (BATON_STORE or the project's .baton.toml), and this baton was built without PostgreSQL",
            )
            .hint("install a baton built with its default features (`cargo install baton-cli --locked`, or `cargo install --path crates/baton --locked` in a clone: docs/install.md), or unset BATON_STORE to use the files"));
        }
        let mut store = FileStore::new(layout);
        store.lock_wait = self.lock_wait;
        if let Some(dir) = &self.settings.machine_dir {
            store.machine_dir = dir.clone();
        }
        Ok(Box::new(store))
    }

    /// With `BATON_STORE` naming a server and no `BATON_NOW`, the clock every decision reads
    /// is the server's: machines whose clocks disagree still agree on which owner is live.
    pub fn use_server_clock(&mut self) -> Result<(), OpError> {
        if self.fixed_clock {
            return Ok(());
        }
        if self.layout().is_ok()
            && let Some(now) = self.store()?.shared_clock()?
        {
            self.now = now;
        }
        Ok(())
    }

    /// The time now, for a command that runs on (a wait, a supervisor): the server's clock
    /// with a store (a fresh `now()` each call), else this machine's.
    pub fn clock(&self) -> Result<jiff::Timestamp, OpError> {
        if self.layout().is_ok()
            && let Some(now) = self.store()?.shared_clock()?
        {
            return Ok(now);
        }
        Ok(jiff::Timestamp::now())
    }

    /// `self` with `now` read again, for a write that follows a slow step (git and the
    /// project's commit hooks, a gate): a liveness stamp is the time it is written, not the time
    /// the command started. `BATON_NOW` keeps the clock fixed; with a server store the server's
    /// clock is read, as for `now`. Never earlier than `now`: a clock stepped back does not make
    /// a fresh write look older than what the command read.
    pub fn at_write(&self) -> Result<Ctx, OpError> {
        let mut ctx = self.clone();
        if !self.fixed_clock {
            ctx.now = self.clock()?.max(self.now);
        }
        Ok(ctx)
    }

    /// `use_server_clock` for a caller that already has the store.
    pub fn clock_of(&mut self, store: &dyn StateStore) -> Result<(), OpError> {
        if !self.fixed_clock
            && let Some(now) = store.shared_clock()?
        {
            self.now = now;
        }
        Ok(())
    }
}

/// The project setting file: `store = "postgres://…"` names the project's shared store.
pub const PROJECT_SETTINGS: &str = ".baton.toml";

#[cfg(feature = "postgres")]
type Shared = std::mem::ManuallyDrop<Option<std::rc::Rc<baton_store::pg::backend::Db>>>;

#[cfg(feature = "postgres")]
thread_local! {
    /// One connection per process, opened on first use. Never dropped: the driver cannot
    /// close a connection once thread-local storage is being torn down, and the process's
    /// exit closes it (and with it any advisory lock) in any case.
    static DATABASE: std::cell::RefCell<Shared> =
        const { std::cell::RefCell::new(std::mem::ManuallyDrop::new(None)) };
}

impl Ctx {
    /// The store URL: `--store` or `BATON_STORE`, else the project's `.baton.toml` (read once
    /// per command); `None` for the file store.
    pub fn store_url(&self, root: Option<&std::path::Path>) -> Result<Option<String>, OpError> {
        if let Some(url) = &self.settings.store {
            return Ok(Some(url.clone()));
        }
        let Some(root) = root else { return Ok(None) };
        if let Some((read_for, url)) = self.store_url.get()
            && read_for == root
        {
            return Ok(url.clone());
        }
        let url = project_store_url(root)?;
        let _ = self.store_url.set((root.to_path_buf(), url.clone()));
        Ok(url)
    }

    /// The PostgreSQL backend `BATON_STORE` names, connected once per process; `None` for files.
    #[cfg(feature = "postgres")]
    pub fn database(
        &self,
        root: &std::path::Path,
    ) -> Result<Option<std::rc::Rc<baton_store::pg::backend::Db>>, OpError> {
        let Some(url) = self.store_url(Some(root))? else {
            return Ok(None);
        };
        if let Some(db) = DATABASE.with(|d| (**d.borrow()).clone()) {
            return Ok(Some(db));
        }
        let db = std::rc::Rc::new(baton_store::pg::backend::Db::open_within(
            &url,
            self.store_surroundings(),
            &self.project_name(root)?,
            &baton_store::process::host(),
            self.lock_wait,
        )?);
        DATABASE.with(|d| *d.borrow_mut() = std::mem::ManuallyDrop::new(Some(db.clone())));
        Ok(Some(db))
    }

    /// Where the store URL's other settings come from: the environment and files, but for a URL
    /// from the project's committed `.baton.toml` (no `BATON_STORE`) never `PGPASSWORD`.
    #[cfg(feature = "postgres")]
    pub fn store_surroundings(&self) -> &'static dyn baton_store::pg::config::Surroundings {
        use baton_store::pg::config::{Process, WithoutEnvPassword};
        static FROM_FILE: WithoutEnvPassword<Process> = WithoutEnvPassword(Process);
        if self.settings.store.is_some() {
            &Process
        } else {
            &FROM_FILE
        }
    }

    /// The project's name in a shared store: `BATON_PROJECT`, else `git:<root commit>`, the
    /// repository's first commit, which every clone shares.
    pub fn project_name(&self, root: &std::path::Path) -> Result<String, OpError> {
        if let Some(p) = &self.settings.project {
            return Ok(p.clone());
        }
        let out = std::process::Command::new("git")
            .args(["rev-list", "--max-parents=0", "HEAD"])
            .current_dir(root)
            .env("GIT_OPTIONAL_LOCKS", "0")
            .output()
            .map_err(|e| OpError::broken(format!("cannot run git: {e}")))?;
        let name_it =
            "set BATON_PROJECT (or pass `--project`) to a name that is the same on every machine";
        if is_shallow(root) {
            return Err(OpError::usage(
                "this clone is shallow: its first commit is not the repository's, so it has no name every clone shares",
            )
            .hint(format!(
                "{name_it}, or fetch the whole history (`git fetch --unshallow`)"
            )));
        }
        let text = String::from_utf8_lossy(&out.stdout);
        let mut roots: Vec<&str> = text.lines().filter(|l| !l.is_empty()).collect();
        roots.sort_unstable();
        match roots.first() {
            Some(first) if out.status.success() => Ok(format!("git:{first}")),
            _ => Err(OpError::usage(
                "the repository has no commit, so it has no name every clone shares",
            )
            .hint(name_it)),
        }
    }
}

/// No `.baton.toml` comes near this: it holds one line.
const PROJECT_SETTINGS_CAP: u64 = 64 * 1024;

/// The project's `.baton.toml`, parsed; `None` when there is none.
fn project_settings(root: &std::path::Path) -> Result<Option<toml_edit::DocumentMut>, OpError> {
    let path = root.join(PROJECT_SETTINGS);
    // A link is followed (the file may be kept elsewhere), but only to a regular file of at
    // most 64 KiB: a committed link to `/dev/zero` or a FIFO must neither hang nor fill memory.
    let bytes = match baton_store::read::read_named(&path, PROJECT_SETTINGS_CAP) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => return Ok(None),
        Err(e) => return Err(OpError::context("cannot read the project's settings", e)),
    };
    let bad = |why: String| {
        OpError::usage(format!("{}: {why}", path.display())).hint(
            "write it as TOML: `store = \"postgres://USER@HOST:PORT/DB\"`, or a `[judge]` table (docs/judge.md)",
        )
    };
    let text = String::from_utf8(bytes).map_err(|_| bad("not UTF-8 text".into()))?;
    text.parse()
        .map(Some)
        .map_err(|e| bad(format!("not TOML: {e}")))
}

/// A table of the project's `.baton.toml` (`[judge]`), `None` when the file or the table is
/// absent.
pub fn project_table(
    root: &std::path::Path,
    name: &str,
) -> Result<Option<toml_edit::Table>, OpError> {
    let Some(doc) = project_settings(root)? else {
        return Ok(None);
    };
    match doc.get(name) {
        None => Ok(None),
        Some(item) => item.as_table().cloned().map(Some).ok_or_else(|| {
            OpError::usage(format!("{PROJECT_SETTINGS}: `{name}` is not a table"))
                .hint(format!("write it as a `[{name}]` table"))
        }),
    }
}

/// `store = "…"` in the project's `.baton.toml`. The file is committed, so a URL with a
/// password in it is refused.
fn project_store_url(root: &std::path::Path) -> Result<Option<String>, OpError> {
    let Some(doc) = project_settings(root)? else {
        return Ok(None);
    };
    let path = root.join(PROJECT_SETTINGS);
    let bad = |why: String| {
        OpError::usage(format!("{}: {why}", path.display())).hint(
            "write it as `store = \"postgres://USER@HOST:PORT/DB\"`, the password in PGPASSWORD or ~/.pgpass",
        )
    };
    let Some(item) = doc.get("store") else {
        return Ok(None);
    };
    let url = item
        .as_str()
        .ok_or_else(|| bad("`store` is not a string".into()))?
        .to_string();
    #[cfg(feature = "postgres")]
    if baton_store::pg::config::holds_password(&url) {
        return Err(bad(
            "the URL holds a password, and this file is committed with the project".into(),
        ));
    }
    Ok(Some(url))
}

/// Whether the clone at `root` is shallow (`git clone --depth`, as CI runners make them): its
/// `shallow` file, or git's answer when `.git` is a file (a worktree or a submodule).
fn is_shallow(root: &std::path::Path) -> bool {
    let git = root.join(".git");
    if git.is_dir() {
        return git.join("shallow").exists();
    }
    std::process::Command::new("git")
        .args(["rev-parse", "--is-shallow-repository"])
        .current_dir(root)
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"true"))
}

/// The session of the agent client whose tool call this is, from where each client's
/// definition says a tool call finds it (`SessionSource`): Claude Code sets
/// `CLAUDE_CODE_SESSION_ID`, Codex `CODEX_SESSION_ID` and `CODEX_THREAD_ID`; Gemini CLI sets none
/// (only `GEMINI_CLI=1`), but a tool call runs under the same client process as the hooks, and
/// the session-start hook recorded that process's session. When one client runs inside another
/// (a delegate started from a tool call), both leave their marks in the environment: the
/// nearest agent process among this one's ancestors says whose tool call it is.
fn client_session(dir: &std::path::Path, settings: &Settings) -> Option<String> {
    let given = |s: &String| !s.is_empty() && s != "null";
    let var = |name: &str| std::env::var(name).ok().filter(given);
    // Each client that left a mark, with the session its variables name (none for a client
    // whose session was recorded).
    let marks: Vec<(Client, Option<String>)> = Client::ALL
        .into_iter()
        .filter_map(|client| match client.def().session_source() {
            SessionSource::Variables(names) => {
                names.iter().find_map(|n| var(n)).map(|s| (client, Some(s)))
            }
            SessionSource::Recorded { marker } => {
                std::env::var_os(marker).is_some().then_some((client, None))
            }
        })
        .collect();
    // The variables alone, in the order of the clients.
    let named = || marks.iter().find_map(|(_, s)| s.clone());
    match marks.as_slice() {
        [] => return None,
        [(_, Some(session))] => return Some(session.clone()),
        _ => {}
    }
    match baton_store::process::agent_ancestor_named() {
        Some((pid, client)) => match client.def().session_source() {
            SessionSource::Variables(_) => marks
                .iter()
                .find(|(c, _)| *c == client)
                .and_then(|(_, s)| s.clone()),
            SessionSource::Recorded { .. } if marks.iter().any(|(c, _)| *c == client) => {
                recorded_session(dir, settings, pid)
            }
            SessionSource::Recorded { .. } => named(),
        },
        // No agent process to be seen.
        None => named(),
    }
}

/// The session a client's session-start hook recorded for client process `pid`.
fn recorded_session(dir: &std::path::Path, settings: &Settings, pid: u32) -> Option<String> {
    let start = baton_store::process::start_time(pid)?;
    let layout = Layout::discover(dir, settings.state_dir.clone()).ok()?;
    baton_store::sessions::session_of_process(&layout, pid, start)
}

/// A duration in baton's one syntax (`250ms`, `5s`, `1h30m`, `2d`, or bare seconds:
/// `baton_core::time::parse_duration`), as the standard library's.
pub fn parse_wait(raw: &str) -> Option<Duration> {
    baton_core::time::parse_duration(raw).and_then(|d| Duration::try_from(d).ok())
}
