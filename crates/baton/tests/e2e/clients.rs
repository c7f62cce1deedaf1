//! The real agent clients (Claude Code, Codex, Gemini CLI, Copilot CLI, OpenCode), run headless
//! against a fake model API
//! in a temp project (a fresh git repository) with a temp HOME.
//!
//! The pinned clients come from `$BATON_E2E_CLIENTS/node_modules/.bin/` when that is set, else
//! from `<workspace>/target/e2e-clients/node_modules/.bin/`, installed there with npm on first
//! use. OpenCode 2 (`OPENCODE_V2`, a second OpenCode beside 1.18.33) is one executable in its
//! platform's package, `node_modules/@opencode/cli-linux-x64-baseline/bin/opencode`, pinned
//! and installed with the others on linux-x64, the one platform whose build this registry
//! publishes (its tests are skipped elsewhere). Without npm or a reachable registry (or with
//! `BATON_E2E_SKIP` set) `Harness::new` says once per test that the test is skipped, and
//! returns `None`; any other failure to have the pinned clients fails the test.

use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::fake_api::{FakeApi, Reply};
use baton_core::install::codex_trust;

/// The versions the harness installs; the hook formats and facts it relies on are theirs.
pub const PINNED: [&str; 5] = [
    "@anthropic-ai/claude-code@2.1.332",
    "@openai/codex@0.171.0",
    "@google/gemini-cli@0.61.0",
    "@github/copilot@1.0.102",
    "opencode-ai@1.18.33",
];

/// OpenCode 2, which `opencode-ai` (still 1.x) does not hold: its wrapper `@opencode/cli` is not
/// published on this registry, but the binary of the linux-x64 baseline build is, in a package
/// with no `bin` of its own (so it does not take the `opencode` of `.bin/` from 1.18.33).
pub const OPENCODE_V2: &str = "@opencode/cli-linux-x64-baseline@2.0.15";

/// Whether OpenCode 2 can run here: `OPENCODE_V2` is a linux-x64 build (npm refuses to install
/// it elsewhere).
const OPENCODE_V2_HERE: bool = cfg!(all(target_os = "linux", target_arch = "x86_64"));

/// Every package the harness installs: `PINNED`, and `OPENCODE_V2` where it runs.
fn pinned() -> Vec<&'static str> {
    PINNED
        .iter()
        .copied()
        .chain(OPENCODE_V2_HERE.then_some(OPENCODE_V2))
        .collect()
}

/// Where `OPENCODE_V2`'s executable is, from the `node_modules/.bin` folder of the clients.
fn opencode_v2_executable(bin: &Path) -> PathBuf {
    let name = OPENCODE_V2.rsplit_once('@').expect("name@version").0;
    bin.parent()
        .expect("node_modules/.bin")
        .join(name)
        .join("bin/opencode")
}

/// How long one client run may take before it is killed and the test fails.
const RUN_TIMEOUT: Duration = Duration::from_secs(120);

/// The model Gemini CLI is told to use; naming one keeps it from routing and retrying.
pub const GEMINI_MODEL: &str = "gemini-2.5-flash";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Client {
    Claude,
    Codex,
    Gemini,
    Copilot,
    OpenCode,
}

impl Client {
    pub fn program(self) -> &'static str {
        match self {
            Client::Claude => "claude",
            Client::Codex => "codex",
            Client::Gemini => "gemini",
            Client::Copilot => "copilot",
            Client::OpenCode => "opencode",
        }
    }
}

/// The folder holding the clients' executables, or why the e2e tests are skipped. They are
/// skipped only when the clients cannot be had from the registry: `BATON_E2E_SKIP` (set by
/// `.ci/run` when `npm ping` fails), no npm at all, or an install that fails while the registry
/// does not answer. Anything else (a `BATON_E2E_CLIENTS` without the pinned versions, an install
/// that fails with the registry up) fails the tests.
fn clients_bin() -> Result<PathBuf, String> {
    static BIN: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    BIN.get_or_init(|| {
        if let Some(why) = std::env::var("BATON_E2E_SKIP")
            .ok()
            .filter(|s| !s.is_empty())
        {
            return Err(why);
        }
        let given = std::env::var_os("BATON_E2E_CLIENTS").map(PathBuf::from);
        let prefix = given.clone().unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/e2e-clients")
        });
        let bin = prefix.join("node_modules/.bin");
        if pinned_present(&prefix) {
            return Ok(bin);
        }
        assert!(
            given.is_none(),
            "BATON_E2E_CLIENTS={} does not hold the pinned clients: `npm install --prefix {} {}`",
            prefix.display(),
            prefix.display(),
            pinned().join(" ")
        );
        std::fs::create_dir_all(&prefix).map_err(|e| format!("cannot create {prefix:?}: {e}"))?;
        {
            // Past the harness's capture: the install takes a minute or more.
            use std::io::Write;
            let line = format!(
                "e2e: installing the pinned clients with npm into {} (once): {}\n",
                prefix.display(),
                pinned().join(" ")
            );
            let _ = std::io::stderr().write_all(line.as_bytes());
        }
        let out = Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--prefix"])
            .arg(&prefix)
            .args(pinned())
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("npm cannot be run ({e})"))?;
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("no message");
        if !out.status.success() {
            if !registry_answers() {
                return Err(format!("npm cannot reach its registry: {last}"));
            }
            panic!(
                "npm install of the pinned clients failed with the registry up ({}): {err}",
                out.status
            );
        }
        assert!(
            pinned_present(&prefix),
            "npm install left no pinned clients in {}: {last}",
            prefix.display()
        );
        Ok(bin)
    })
    .clone()
}

/// Whether each pinned client is installed under `prefix` at its pinned version.
fn pinned_present(prefix: &Path) -> bool {
    pinned().iter().all(|spec| {
        let (name, version) = spec.rsplit_once('@').expect("name@version");
        let manifest = prefix.join("node_modules").join(name).join("package.json");
        std::fs::read(&manifest)
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .is_some_and(|m| m["version"] == version)
    }) && all_present(&prefix.join("node_modules/.bin"))
}

fn all_present(bin: &Path) -> bool {
    ["claude", "codex", "gemini", "copilot", "opencode"]
        .iter()
        .all(|c| bin.join(c).exists())
        && (!OPENCODE_V2_HERE || opencode_v2_executable(bin).exists())
}

/// Whether npm's registry answers (`npm ping`).
fn registry_answers() -> bool {
    Command::new("npm")
        .arg("ping")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The baton binary under test.
pub fn baton_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_baton"))
}

/// What one client run did.
pub struct Outcome {
    /// The exit code; `None` when a signal ended the client.
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "exit {:?} after {:.1?}\n--- stdout\n{}\n--- stderr\n{}",
            self.code, self.elapsed, self.stdout, self.stderr
        )
    }
}

/// One hook configured by hand in a client's settings.
struct Hook {
    event: String,
    command: String,
}

/// A temp HOME and project, a fake API, and one client configured to use them.
pub struct Harness {
    pub client: Client,
    pub api: FakeApi,
    pub home: PathBuf,
    pub project: PathBuf,
    /// Where the client is started: the project's root unless a test moves it (`start_in`).
    pub start: PathBuf,
    bin: PathBuf,
    hooks: Vec<Hook>,
    /// Codex only: write each hook's trust entry with the hash of another command.
    codex_trust_spoiled: bool,
    /// Claude Code only: log in as a subscriber (an OAuth token) instead of with an API key,
    /// so that a plan's limit reads as `You've hit your limit · resets …`.
    pub subscription: bool,
    /// Put the folder of the baton under test on the client's PATH (the default); a test of
    /// a baton the client finds by itself (a plugin's `bin/`) turns it off.
    pub baton_on_path: bool,
    /// `Client::OpenCode` only: run OpenCode 2 (`OPENCODE_V2`, `Harness::opencode_v2`) rather
    /// than 1.18.33.
    pub v2: bool,
    _tmp: tempfile::TempDir,
}

/// With `BATON_E2E_LOAD=N`, N CPU-bound processes run beside the tests from the first harness
/// on, as on a laptop that is compiling (CI sets it): what a hook writes must hold whatever the
/// machine is doing, so no test gets the machine to itself. Each process stops once this test
/// binary has exited.
fn start_load() {
    static STARTED: std::sync::Once = std::sync::Once::new();
    STARTED.call_once(|| {
        let n: usize = std::env::var("BATON_E2E_LOAD")
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        let me = std::process::id();
        for _ in 0..n {
            let spawned = Command::new("sh")
                .args(["-c", &format!("while kill -0 {me} 2>/dev/null; do :; done")])
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn();
            if let Err(e) = spawned {
                eprintln!("e2e: BATON_E2E_LOAD: cannot start a CPU-bound process: {e}");
            }
        }
        if n > 0 {
            eprintln!("e2e: {n} CPU-bound processes run beside the tests (BATON_E2E_LOAD)");
        }
    });
}

impl Harness {
    /// A fresh harness for `client`, the fake API serving `script`; `None` (after one line on
    /// stderr) when the clients cannot be had on this machine.
    pub fn new(client: Client, test: &str, script: Vec<Reply>) -> Option<Harness> {
        Harness::start(client, false, test, script)
    }

    /// A fresh harness for OpenCode 2 (`OPENCODE_V2`): the same project configuration as for
    /// 1.18.33, and every run with a server of its own (`run --standalone`, see `task_args`),
    /// not the background service of the user that 2.x otherwise starts once and shares
    /// between runs, and which outlives them.
    pub fn opencode_v2(test: &str, script: Vec<Reply>) -> Option<Harness> {
        Harness::start(Client::OpenCode, true, test, script)
    }

    fn start(client: Client, v2: bool, test: &str, script: Vec<Reply>) -> Option<Harness> {
        let bin = match clients_bin() {
            Ok(_) if v2 && !OPENCODE_V2_HERE => {
                use std::io::Write;
                let line = format!(
                    "e2e test {test} skipped: {OPENCODE_V2} is a linux-x64 build, and OpenCode 2 is published for no other platform here\n"
                );
                let _ = std::io::stderr().write_all(line.as_bytes());
                return None;
            }
            Ok(bin) => bin,
            Err(why) => {
                // Straight to the process's stderr, past the test harness's capture, so the
                // skip shows in the log of a passing run.
                use std::io::Write;
                let line = format!("e2e test {test} skipped: {why}\n");
                let _ = std::io::stderr().write_all(line.as_bytes());
                return None;
            }
        };
        start_load();
        let tmp = tempfile::tempdir().unwrap();
        // Canonical paths: the clients resolve symlinks in the cwd, and hook trust is keyed by
        // the path they see.
        let root = tmp.path().canonicalize().unwrap();
        let home = root.join("home");
        let project = root.join("project");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&project).unwrap();
        let git = Command::new("git")
            .args(["init", "-q"])
            .current_dir(&project)
            .output()
            .expect("git runs");
        assert!(git.status.success(), "git init: {git:?}");
        // Codex runs tool calls in a login shell (`bash -lc`), and /etc/profile there sets PATH
        // afresh, dropping whatever the client itself was started with. A login bash reads
        // ~/.bash_profile after /etc/profile (and sh reads ~/.profile), so both put the folder
        // of the baton binary under test back in front.
        let baton_dir = baton_bin().parent().unwrap().to_path_buf();
        let profile = format!(
            "export PATH={}:\"$PATH\"\n",
            shell_quote(&baton_dir.to_string_lossy())
        );
        std::fs::write(home.join(".bash_profile"), &profile).unwrap();
        std::fs::write(home.join(".profile"), &profile).unwrap();
        let harness = Harness {
            client,
            api: FakeApi::start(script),
            home,
            start: project.clone(),
            project,
            bin,
            hooks: Vec::new(),
            codex_trust_spoiled: false,
            subscription: false,
            baton_on_path: true,
            v2,
            _tmp: tmp,
        };
        harness.write_config();
        Some(harness)
    }

    /// Starts the client in `rel`, a directory below the project's root (a package of a
    /// monorepo), from now on.
    pub fn start_in(&mut self, rel: &str) {
        self.start = self.project.join(rel);
        std::fs::create_dir_all(&self.start).unwrap();
    }

    /// Configures `command` as a handler of `event` (the client's own event name) in the
    /// client's settings, as a user would by hand.
    pub fn add_hook(&mut self, event: &str, command: &str) {
        self.hooks.push(Hook {
            event: event.into(),
            command: command.into(),
        });
        self.write_config();
    }

    /// Codex only: from now on every hook's trust entry holds the hash of a slightly different
    /// command, as after the hook was edited without being trusted again.
    pub fn spoil_codex_trust(&mut self) {
        self.codex_trust_spoiled = true;
        self.write_config();
    }

    /// Removes every hand-configured hook.
    pub fn clear_hooks(&mut self) {
        self.hooks.clear();
        self.write_config();
    }

    fn hooks_json(&self, group: impl Fn(&Hook) -> Value) -> Value {
        let mut events = serde_json::Map::new();
        for hook in &self.hooks {
            let list = events
                .entry(hook.event.clone())
                .or_insert_with(|| json!([]));
            list.as_array_mut().unwrap().push(group(hook));
        }
        Value::Object(events)
    }

    fn write_config(&self) {
        match self.client {
            Client::Claude => {
                let hooks = self.hooks_json(|h| {
                    json!({"matcher": "", "hooks": [{"type": "command", "command": h.command}]})
                });
                write_json(
                    &self.project.join(".claude/settings.json"),
                    &json!({"hooks": hooks}),
                );
            }
            Client::Codex => self.write_trust_config(),
            Client::Gemini => {
                let hooks = self.hooks_json(|h| {
                    json!({"matcher": "*", "hooks": [{"type": "command", "command": h.command,
                        "timeout": 30000}]})
                });
                write_json(
                    &self.home.join(".gemini/settings.json"),
                    &json!({
                        "security": {"auth": {"selectedType": "gemini-api-key"}},
                        "general": {"maxAttempts": 1},
                        "hooks": hooks,
                    }),
                );
                let mut trusted = serde_json::Map::new();
                trusted.insert(
                    self.project.to_string_lossy().into_owned(),
                    json!("TRUST_FOLDER"),
                );
                write_json(
                    &self.home.join(".gemini/trustedFolders.json"),
                    &Value::Object(trusted),
                );
            }
            // A hook file of its own in the project (trusted by `COPILOT_ALLOW_ALL=true`).
            Client::Copilot => {
                let path = self.project.join(".github/hooks/harness.json");
                if self.hooks.is_empty() {
                    let _ = std::fs::remove_file(&path);
                } else {
                    let hooks = self.hooks_json(
                        |h| json!({"type": "command", "bash": h.command, "timeoutSec": 30}),
                    );
                    write_json(&path, &json!({"version": 1, "hooks": hooks}));
                }
            }
            // The fake API as an OpenAI-compatible provider, and bash (2.x: `shell`) allowed
            // without asking. OpenCode has no shell hooks: its tests install baton's plugin.
            // 2.x reads this 1.x file as it is (`plugin` too, merged into its `plugins`).
            Client::OpenCode => {
                assert!(
                    self.hooks.is_empty(),
                    "OpenCode runs plugins, not hook commands"
                );
                let mut permission = json!({"bash": "allow", "edit": "allow"});
                if self.v2 {
                    permission["shell"] = json!("allow");
                }
                write_json(
                    &self.project.join("opencode.json"),
                    &json!({
                        "$schema": "https://opencode.ai/config.json",
                        "provider": {"fake": {
                            "npm": "@ai-sdk/openai-compatible",
                            "name": "Fake",
                            "options": {"baseURL": format!("{}/v1", self.api.base_url()),
                                "apiKey": "{env:FAKE_KEY}"},
                            "models": {"fake-model": {"name": "Fake Model", "tool_call": true}},
                        }},
                        "model": "fake/fake-model",
                        "permission": permission,
                        "autoupdate": false,
                        "share": "disabled",
                    }),
                );
            }
        }
    }

    /// `$CODEX_HOME/config.toml` for the fake provider, and the project's hooks in
    /// `<project>/.codex/hooks.json` with the trust entries Codex needs before it runs them.
    fn write_trust_config(&self) {
        const HOOK_TIMEOUT: u64 = 30;
        let codex_home = self.home.join(".codex");
        std::fs::create_dir_all(&codex_home).unwrap();
        let mut config = format!(
            "model = \"gpt-fake\"\n\
             model_provider = \"fake\"\n\
             approval_policy = \"never\"\n\
             sandbox_mode = \"danger-full-access\"\n\
             \n\
             [model_providers.fake]\n\
             name = \"fake\"\n\
             base_url = \"{}/v1\"\n\
             env_key = \"FAKE_OPENAI_KEY\"\n\
             wire_api = \"responses\"\n\
             request_max_retries = 0\n\
             stream_max_retries = 0\n\
             \n\
             [projects.{}]\n\
             trust_level = \"trusted\"\n",
            self.api.base_url(),
            toml_string(&self.project.to_string_lossy()),
        );
        if !self.hooks.is_empty() {
            let hooks_path = self.project.join(".codex/hooks.json");
            let hooks = self.hooks_json(|h| {
                json!({"hooks": [{"type": "command", "command": h.command,
                    "timeout": HOOK_TIMEOUT}]})
            });
            write_json(&hooks_path, &json!({"hooks": hooks}));
            let mut group_index = std::collections::HashMap::<&str, usize>::new();
            for hook in &self.hooks {
                let index = group_index.entry(&hook.event).or_default();
                let key =
                    codex_trust::state_key(&hooks_path.to_string_lossy(), &hook.event, *index, 0);
                let trusted_command = if self.codex_trust_spoiled {
                    format!("{} ", hook.command)
                } else {
                    hook.command.clone()
                };
                config += &format!(
                    "\n[hooks.state.{}]\ntrusted_hash = \"{}\"\n",
                    toml_string(&key),
                    codex_trust::trusted_hash(
                        &hook.event,
                        &trusted_command,
                        HOOK_TIMEOUT,
                        None,
                        None
                    )
                );
                *index += 1;
            }
        }
        std::fs::write(codex_home.join("config.toml"), config).unwrap();
    }

    /// Runs the client headless on `prompt`, starting a new session.
    pub fn run(&self, prompt: &str) -> Outcome {
        self.run_args(&self.task_args(prompt))
    }

    /// Runs the client headless on `prompt`, resuming its latest session in the project.
    pub fn resume(&self, prompt: &str) -> Outcome {
        let args: Vec<String> = match self.client {
            Client::Claude => vec![
                "--continue".into(),
                "-p".into(),
                prompt.into(),
                "--allowedTools".into(),
                "Bash".into(),
            ],
            Client::Codex => vec![
                "exec".into(),
                "resume".into(),
                "--last".into(),
                prompt.into(),
            ],
            Client::Gemini => gemini_args(&["-r", "latest"], prompt),
            Client::Copilot => vec![
                "-p".into(),
                prompt.into(),
                "--allow-all-tools".into(),
                "--continue".into(),
            ],
            Client::OpenCode if self.v2 => vec![
                "run".into(),
                "--standalone".into(),
                "--continue".into(),
                prompt.into(),
            ],
            Client::OpenCode => vec!["run".into(), "--continue".into(), prompt.into()],
        };
        self.run_args(&args)
    }

    /// Runs the client with these arguments in the project, with a cleared environment that
    /// holds only what it needs to reach the fake API; killed after `RUN_TIMEOUT`.
    pub fn run_args(&self, args: &[String]) -> Outcome {
        let mut cmd = self.command(self.executable());
        cmd.args(args);
        run_with_timeout(cmd, RUN_TIMEOUT)
    }

    /// Starts the client with these arguments in a process group of its own and returns at
    /// once; the caller ends it (`kill(-pid, …)`) and waits for it.
    pub fn spawn_args(&self, args: &[String]) -> std::process::Child {
        use std::os::unix::process::CommandExt;
        let mut cmd = self.command(self.executable());
        cmd.args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0);
        cmd.spawn().expect("the client starts")
    }

    /// `baton supervise [extra] -- <client> <args>`, with the client's environment; killed
    /// after `timeout`.
    pub fn supervise(&self, extra: &[&str], args: &[String], timeout: Duration) -> Outcome {
        let mut cmd = self.command(baton_bin());
        cmd.arg("supervise")
            .args(extra)
            .arg("--")
            .arg(self.executable())
            .args(args);
        run_with_timeout(cmd, timeout)
    }

    /// The client's executable.
    pub fn executable(&self) -> PathBuf {
        if self.v2 {
            return opencode_v2_executable(&self.bin);
        }
        self.bin.join(self.client.program())
    }

    /// The arguments that start a headless task: `claude … -p <task>`, `codex exec <task>`,
    /// `gemini -p <task> …`; OpenCode 2's `run --standalone <task>`, whose server is its own
    /// and ends with it.
    pub fn task_args(&self, prompt: &str) -> Vec<String> {
        match self.client {
            Client::Claude => vec![
                "--allowedTools".into(),
                "Bash".into(),
                "-p".into(),
                prompt.into(),
            ],
            Client::Codex => vec!["exec".into(), prompt.into()],
            Client::Gemini => gemini_args(&[], prompt),
            Client::Copilot => vec!["-p".into(), prompt.into(), "--allow-all-tools".into()],
            Client::OpenCode if self.v2 => {
                vec!["run".into(), "--standalone".into(), prompt.into()]
            }
            Client::OpenCode => vec!["run".into(), prompt.into()],
        }
    }

    /// `program` in the project with a cleared environment that holds only what the client
    /// needs to reach the fake API.
    fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut cmd = Command::new(program);
        cmd.current_dir(&self.start)
            .env_clear()
            .env("PATH", self.path_var())
            .env("HOME", &self.home)
            .env("USER", "root")
            .env("LANG", "C.UTF-8")
            .env("SHELL", "/bin/bash")
            .env("TERM", "dumb")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        match self.client {
            Client::Claude => {
                // No retries, as for the other two clients (Codex `request_max_retries = 0`,
                // Gemini `maxAttempts: 1`): a 429 ends the run at once instead of after a
                // backoff of many seconds.
                if self.subscription {
                    cmd.env("CLAUDE_CODE_OAUTH_TOKEN", "sk-ant-oat01-fake");
                } else {
                    cmd.env("ANTHROPIC_API_KEY", "sk-ant-fake");
                }
                cmd.env("ANTHROPIC_BASE_URL", self.api.base_url())
                    .env("CLAUDE_CODE_MAX_RETRIES", "0");
            }
            Client::Codex => {
                cmd.env("CODEX_HOME", self.home.join(".codex"))
                    .env("FAKE_OPENAI_KEY", "x");
            }
            Client::Gemini => {
                cmd.env("GEMINI_API_KEY", "fake")
                    .env("GOOGLE_GEMINI_BASE_URL", self.api.base_url());
            }
            // BYOK against the fake OpenAI-compatible API: no GitHub login, no telemetry, no
            // updates; `COPILOT_ALLOW_ALL=true` trusts the project, so its hooks load.
            Client::Copilot => {
                cmd.env("COPILOT_OFFLINE", "true")
                    .env(
                        "COPILOT_PROVIDER_BASE_URL",
                        format!("{}/v1", self.api.base_url()),
                    )
                    .env("COPILOT_PROVIDER_API_KEY", "fake")
                    .env("COPILOT_MODEL", "gpt-4.1")
                    .env("COPILOT_ALLOW_ALL", "true")
                    .env("COPILOT_AUTO_UPDATE", "false");
            }
            // Its config, data, cache and state under the temp HOME; no model list fetched.
            Client::OpenCode => {
                for (var, dir) in [
                    ("XDG_CONFIG_HOME", ".config"),
                    ("XDG_DATA_HOME", ".local/share"),
                    ("XDG_CACHE_HOME", ".cache"),
                    ("XDG_STATE_HOME", ".local/state"),
                ] {
                    cmd.env(var, self.home.join(dir));
                }
                cmd.env("FAKE_KEY", "x")
                    .env("OPENCODE_DISABLE_MODELS_FETCH", "1")
                    .env("OPENCODE_DISABLE_AUTOUPDATE", "1");
            }
        }
        cmd
    }

    /// The baton binary's folder, then the PATH the tests were started with (node lives there).
    fn path_var(&self) -> String {
        let baton_dir = baton_bin().parent().unwrap().to_path_buf();
        let inherited = std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into());
        if !self.baton_on_path {
            return inherited;
        }
        format!("{}:{inherited}", baton_dir.display())
    }

    /// A file in the project, as a string ("" when absent).
    pub fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.project.join(name)).unwrap_or_default()
    }
}

impl Harness {
    /// The processes still running with this harness's HOME in their environment (every one a
    /// client run started: the HOME is a fresh temp folder), as `pid command line`; zombies,
    /// which hold nothing, are not counted. OpenCode 2 starts its servers in sessions of their
    /// own, out of the process group that `run_args` kills when the client exits: the
    /// standalone server of a run (`serve --stdio`), which ends shortly after it, and the
    /// background service (`serve --service`), which outlives it.
    pub fn leftovers(&self) -> Vec<String> {
        let needle = [
            b"HOME=".as_slice(),
            self.home.as_os_str().as_encoded_bytes(),
        ]
        .concat();
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        let mut found = Vec::new();
        for entry in entries.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<i32>().ok())
            else {
                continue;
            };
            let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else {
                continue;
            };
            if !environ.split(|b| *b == 0).any(|v| v == needle.as_slice()) {
                continue;
            }
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let state = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.trim_start().chars().next());
            if matches!(state, None | Some('Z' | 'X')) {
                continue;
            }
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            found.push(format!("{pid} {}", cmdline.trim_end()));
        }
        found
    }

    /// Waits at most `within` for every process of `leftovers` to end, and returns those that
    /// did not.
    pub fn settle(&self, within: Duration) -> Vec<String> {
        let deadline = Instant::now() + within;
        loop {
            let left = self.leftovers();
            if left.is_empty() || Instant::now() >= deadline {
                return left;
            }
            thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Harness {
    /// OpenCode 2: kills whatever a run left (`leftovers`), so that no test leaves a server.
    fn drop(&mut self) {
        if !self.v2 {
            return;
        }
        for line in self.leftovers() {
            let pid: i32 = line
                .split(' ')
                .next()
                .and_then(|p| p.parse().ok())
                .unwrap_or(0);
            if pid > 0 {
                // SAFETY: kill(2) on a process with this harness's HOME, which only the
                // client runs of this harness have; no memory is involved.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
            }
        }
    }
}

fn gemini_args(extra: &[&str], prompt: &str) -> Vec<String> {
    let mut args: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
    args.extend(
        ["-p", prompt, "--approval-mode", "yolo", "-m", GEMINI_MODEL]
            .iter()
            .map(|s| s.to_string()),
    );
    args
}

/// Spawns `cmd` in its own process group and waits at most `timeout`; on timeout the group is
/// killed and the test fails with what the client printed. When the client exits, whatever it
/// left running in its group is killed too, so the pipes close.
fn run_with_timeout(mut cmd: Command, timeout: Duration) -> Outcome {
    use std::os::unix::process::CommandExt;
    cmd.process_group(0);
    let start = Instant::now();
    let mut child = cmd.spawn().expect("the client starts");
    let pgid = child.id() as i32;
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out_reader = thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err_reader = thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if start.elapsed() > timeout {
            break None;
        }
        thread::sleep(Duration::from_millis(50));
    };
    let elapsed = start.elapsed();
    // SAFETY: kill(2) on the process group this function created; no memory is involved.
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
    let timed_out = status.is_none();
    let status = status.unwrap_or_else(|| child.wait().unwrap());
    let outcome = Outcome {
        code: status.code(),
        stdout: out_reader.join().unwrap(),
        stderr: err_reader.join().unwrap(),
        elapsed,
    };
    assert!(!timed_out, "the client ran over {timeout:?}: {outcome}");
    outcome
}

fn write_json(path: &Path, value: &Value) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, serde_json::to_string_pretty(value).unwrap()).unwrap();
}

/// A TOML basic string (JSON string escapes are valid TOML ones).
fn toml_string(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

pub use baton_core::text::shell_quote;
