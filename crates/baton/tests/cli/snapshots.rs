//! Snapshots of what users see: the `--help` of every command, the text and `--json` of the
//! session-start answers (`resume`, `status`, `log`, `loop show`) on one interrupted loop, and
//! the `--json` object of every command in scripted scenarios (`json-<command>.snap`; a test
//! walks the help and fails for a command without one). A change to a help layout or a JSON
//! shape shows up here as a diff to review (`cargo insta review`, or `INSTA_UPDATE=always` and
//! `git diff`), never unnoticed.
//!
//! The repository's temp path is masked as `[REPO]`, the home directory as `[HOME]`; the clock
//! and the session ids are fixed; run and batch ids, commit hashes, hosts, boot ids, process
//! ids and durations are masked.

use crate::common::{TestEnv, at};

/// `insta::assert_snapshot!` with the environment's temp paths masked.
fn snapshot(env: &TestEnv, name: &str, text: &str) {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path("snapshots");
    settings.set_prepend_module_to_snapshot(false);
    let repo = env.repo.canonicalize().unwrap();
    settings.add_filter(&regex_escape(&repo.display().to_string()), "[REPO]");
    settings.add_filter(&regex_escape(&env.repo.display().to_string()), "[REPO]");
    settings.bind(|| insta::assert_snapshot!(name, text));
}

fn regex_escape(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            let special = "\\.+*?()|[]{}^$#&-~".contains(c);
            special
                .then_some('\\')
                .into_iter()
                .chain(std::iter::once(c))
        })
        .collect()
}

/// `--json` output pretty-printed, so a change to its shape is a readable diff; text as it is.
fn shown(name: &str, stdout: &str) -> String {
    if !name.ends_with("json") {
        return stdout.to_string();
    }
    let value: serde_json::Value = serde_json::from_str(stdout).unwrap();
    serde_json::to_string_pretty(&value).unwrap()
}

/// The subcommands a help lists (a two-space indent, then the name) under `Commands:`, or
/// under the groups of baton's own `--help` (`Session start:` … `Plumbing:`).
fn subcommands(help: &str) -> Vec<String> {
    const HEADINGS: [&str; 6] = [
        "Commands:",
        "Session start:",
        "Everyday work:",
        "Seeing:",
        "Setup:",
        "Plumbing:",
    ];
    let mut listing = false;
    let mut out = Vec::new();
    for line in help.lines() {
        if !line.starts_with(' ') && line.ends_with(':') {
            listing = HEADINGS.contains(&line);
            continue;
        }
        if line.is_empty() {
            continue;
        }
        if listing
            && line.starts_with("  ")
            && !line.starts_with("   ")
            && let Some(name) = line.split_whitespace().next()
            && name != "help"
        {
            out.push(name.to_string());
        }
    }
    out
}

#[test]
fn the_help_of_every_command() {
    let env = TestEnv::new();
    let mut todo: Vec<Vec<String>> = vec![Vec::new()];
    let mut seen = 0;
    while let Some(path) = todo.pop() {
        let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
        args.push("--help");
        let run = env.run(None, &at(0), &args);
        run.assert_code(0);
        seen += 1;
        for sub in subcommands(&run.stdout) {
            let mut next = path.clone();
            next.push(sub);
            todo.push(next);
        }
        let name = if path.is_empty() {
            "help".to_string()
        } else {
            format!("help-{}", path.join("-"))
        };
        snapshot(&env, &name, &run.stdout);
    }
    assert!(seen > 30, "only {seen} commands found");
}

/// One loop, interrupted by a rate limit, as the next session sees it.
fn interrupted_loop() -> TestEnv {
    let env = TestEnv::new();
    env.baton("S-one", 0, &["loop", "init", "PROJ-1"])
        .assert_code(0);
    env.baton(
        "S-one",
        1,
        &[
            "loop",
            "set",
            "PROJ-1",
            "--phase",
            "qa",
            "--action",
            "returned",
            "--iteration",
            "2",
        ],
    )
    .assert_code(0);
    env.baton(
        "S-one",
        2,
        &[
            "loop",
            "interrupt",
            "PROJ-1",
            "--reason",
            "rate_limit",
            "--resume-after",
            "15m",
        ],
    )
    .assert_code(0);
    env
}

#[test]
fn what_the_next_session_sees() {
    crate::files_only!("the snapshots name the state files");
    let env = interrupted_loop();
    for (name, args) in [
        ("resume", &["resume"][..]),
        ("resume-json", &["--json", "resume"]),
        ("resume-ticket", &["resume", "PROJ-1"]),
        ("resume-ticket-json", &["--json", "resume", "PROJ-1"]),
        ("status", &["status"]),
        ("status-json", &["--json", "status"]),
        ("log", &["log", "PROJ-1"]),
        ("log-json", &["--json", "log", "PROJ-1"]),
        ("loop-show", &["loop", "show", "PROJ-1"]),
        ("loop-show-json", &["--json", "loop", "show", "PROJ-1"]),
    ] {
        let run = env.baton("S-two", 30, args);
        run.assert_code(0);
        snapshot(
            &env,
            &format!("next-session-{name}"),
            &shown(name, &run.stdout),
        );
    }
}

/// Beside the interrupted loop, another session's loop that is only quiet: one line that says
/// why it is not offered, and no accept command for it.
#[test]
fn what_a_session_starting_beside_a_quiet_loop_sees() {
    crate::files_only!("the snapshots name the state files");
    let env = interrupted_loop();
    env.baton("S-three", 3, &["loop", "init", "PROJ-10"])
        .assert_code(0);
    let run = env.baton("S-two", 30, &["resume"]);
    run.assert_code(0);
    snapshot(&env, "quiet-beside-resume", &shown("resume", &run.stdout));
}

#[test]
fn what_a_transition_and_a_refusal_print() {
    crate::files_only!("the snapshots name the state files");
    let env = TestEnv::new();
    env.baton("S-one", 0, &["loop", "init", "PROJ-1"])
        .assert_code(0);
    let set = [
        "loop", "set", "PROJ-1", "--phase", "qa", "--action", "returned",
    ];
    let done = env.baton("S-one", 1, &set);
    done.assert_code(0);
    snapshot(&env, "transition", &done.stdout);
    let mut json = vec!["--json"];
    json.extend(set);
    let done = env.baton("S-one", 2, &json);
    done.assert_code(0);
    snapshot(&env, "transition-json", &shown("json", &done.stdout));
    // Another session, while the owner is live: refused, exit 3.
    let refused = env.baton("S-two", 3, &json);
    refused.assert_code(3);
    snapshot(&env, "refused-json", &shown("json", &refused.stdout));
}

// The `--json` object of every command.
//
// Every leaf command of the help walk has at least one snapshot named `json-<path>`, the words
// of its path joined with `_` (`json-loop_set`), and `json-<path>--<case>` for more cases of it
// (`json-loop_set--refused`). `every_command_has_a_json_snapshot` holds the list against the
// help, so a new command cannot go unsnapshotted.

/// Commands whose `--json` is not snapshotted, each with the reason.
const NO_JSON_SNAPSHOT: &[(&str, &str)] = &[];

/// Checks `value`, the `--json` of `command` run in `env`, against the command's schema in
/// `baton schema --outputs` (for a test whose output cannot be a snapshot).
pub(crate) fn assert_matches_schema(env: &TestEnv, command: &str, value: &serde_json::Value) {
    Schemas::of(env).validate(command, value);
}

/// A scripted scenario whose `--json` answers become snapshots: the environment, and the values
/// that differ from one run to the next (run ids, commit hashes, batch ids) with their masks.
struct Script {
    env: TestEnv,
    masks: Vec<(String, String)>,
    schemas: Option<Schemas>,
}

/// `baton schema --outputs`, compiled: every object a scenario snapshots is validated against
/// its command's schema, so that a schema and the output it describes cannot drift apart.
struct Schemas {
    compiled: boon::Schemas,
    by_command: std::collections::HashMap<String, boon::SchemaIndex>,
}

/// Where the outputs document is filed for the validator (it fetches nothing).
const OUTPUTS_URL: &str = "https://baton.invalid/schema/outputs.json";

impl Schemas {
    fn of(env: &TestEnv) -> Schemas {
        let run = env.run(None, &at(0), &["--json", "schema", "--outputs"]);
        run.assert_code(0);
        let document = run.json();
        let mut compiler = boon::Compiler::new();
        compiler
            .add_resource(OUTPUTS_URL, document.clone())
            .unwrap();
        let mut compiled = boon::Schemas::new();
        let mut by_command = std::collections::HashMap::new();
        for command in document["outputs"].as_object().unwrap().keys() {
            let pointer = format!("{OUTPUTS_URL}#/outputs/{}", command.replace(' ', "%20"));
            let index = compiler
                .compile(&pointer, &mut compiled)
                .unwrap_or_else(|e| panic!("the schema of `{command}` does not compile: {e:#}"));
            by_command.insert(command.clone(), index);
        }
        Schemas {
            compiled,
            by_command,
        }
    }

    #[track_caller]
    fn validate(&self, command: &str, value: &serde_json::Value) {
        let index = self
            .by_command
            .get(command)
            .unwrap_or_else(|| panic!("`baton schema --outputs` has no schema for `{command}`"));
        if let Err(e) = self.compiled.validate(value, *index) {
            panic!("the --json of `{command}` does not match its schema:\n{e:#}\n{value:#}");
        }
    }
}

impl Script {
    fn new() -> Script {
        Script::on(TestEnv::new())
    }

    fn on(env: TestEnv) -> Script {
        let mut script = Script {
            env,
            masks: Vec::new(),
            schemas: None,
        };
        script.mask_commits();
        script
    }

    /// Masks `value` as `[name]` from now on.
    fn mask(&mut self, value: &str, name: &str) {
        if !self.masks.iter().any(|(v, _)| v == value) {
            self.masks.push((value.to_string(), format!("[{name}]")));
        }
    }

    /// Every commit of the repository (their hashes depend on the wall clock), in full and as
    /// the short forms messages name, as `[COMMIT-n]`, oldest first.
    fn mask_commits(&mut self) {
        let log = self.env.git(&["log", "--reverse", "--format=%H"]);
        for (n, sha) in log.lines().enumerate() {
            for len in [40, 12, 7] {
                self.mask(&sha[..len], &format!("COMMIT-{n}"));
            }
        }
    }

    /// The random ids an answer names (`run_id`, `batch_id`), as `[RUN_ID]`, `[RUN_ID-2]`, …,
    /// and the host a lease names.
    fn mask_ids(&mut self, value: &serde_json::Value) {
        match value {
            serde_json::Value::Object(map) => {
                for (key, v) in map {
                    match (key.as_str(), v.as_str()) {
                        ("run_id" | "batch_id", Some(id)) => {
                            let name = key.to_uppercase();
                            let n = self
                                .masks
                                .iter()
                                .filter(|(_, m)| m.starts_with(&format!("[{name}")))
                                .count();
                            let name = if n == 0 {
                                name
                            } else {
                                format!("{name}-{}", n + 1)
                            };
                            self.mask(id, &name);
                        }
                        ("host", Some(host)) => {
                            let on = format!(" on {host})");
                            if !self.masks.iter().any(|(v, _)| *v == on) {
                                self.masks.push((on, " on [HOST])".into()));
                            }
                        }
                        _ => self.mask_ids(v),
                    }
                }
            }
            serde_json::Value::Array(items) => items.iter().for_each(|v| self.mask_ids(v)),
            _ => {}
        }
    }

    /// `baton --json <args>` as `session` at `T0 + minutes`, which must exit `code`; its object
    /// is snapshotted as `json-<command>` (`json-<command>--<case>` with a case).
    #[track_caller]
    fn json(
        &mut self,
        command: &str,
        case: Option<&str>,
        session: Option<&str>,
        minutes: i64,
        args: &[&str],
        code: i32,
    ) -> serde_json::Value {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let run = self.env.run(session, &at(minutes), &all);
        self.record(command, case, &run, code)
    }

    /// Checks a run's exit code and snapshots its object.
    #[track_caller]
    fn record(
        &mut self,
        command: &str,
        case: Option<&str>,
        run: &crate::common::Run,
        code: i32,
    ) -> serde_json::Value {
        run.assert_code(code);
        let value = run.json();
        self.schemas
            .get_or_insert_with(|| Schemas::of(&self.env))
            .validate(command, &value);
        self.mask_commits();
        self.mask_ids(&value);
        let mut name = format!("json-{}", command.replace(' ', "_"));
        if let Some(case) = case {
            name = format!("{name}--{case}");
        }
        let mut text = serde_json::to_string_pretty(&elided(&value)).unwrap();
        // The longest first, so that a hash's prefix never masks part of the hash.
        let mut masks = self.masks.clone();
        masks.sort_by_key(|(v, _)| std::cmp::Reverse(v.len()));
        for (value, mask) in &masks {
            text = text.replace(value, mask);
        }
        json_snapshot(&self.env, &name, &text);
        value
    }
}

/// `value` with every string over 20,000 characters (a completion script) cut to its first
/// lines: the help snapshots hold what it is made from.
fn elided(value: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::String(s) if s.len() > 20_000 => {
            let head: Vec<&str> = s.lines().take(5).collect();
            let more = s.lines().count() - head.len();
            Value::String(format!("{}\n[… {more} more lines]", head.join("\n")))
        }
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), elided(v))).collect())
        }
        Value::Array(items) => Value::Array(items.iter().map(elided).collect()),
        other => other.clone(),
    }
}

/// [`snapshot`] with what varies between runs masked as well: the home directory, process
/// ids, host names, boot ids and durations.
fn json_snapshot(env: &TestEnv, name: &str, text: &str) {
    let mut settings = insta::Settings::clone_current();
    let home = env.home().canonicalize().unwrap();
    settings.add_filter(&regex_escape(&home.display().to_string()), "[HOME]");
    settings.add_filter(&regex_escape(&env.home().display().to_string()), "[HOME]");
    settings.add_filter(
        r#""(pid|holder_pid|agent_pid|process_start|start_time|elapsed_ms|duration_ms|millis)": \d+"#,
        r#""$1": "[N]""#,
    );
    settings.add_filter(r#""(host|hostname|boot_id)": "[^"]*""#, r#""$1": "[$1]""#);
    settings.add_filter(r#""seconds": [0-9.]+"#, r#""seconds": "[SECONDS]""#);
    // The version names the commit the binary was built from, when git could tell.
    settings.add_filter(
        r"(baton |v)\d+\.\d+\.\d+(?: \([0-9a-f]+ \d{4}\\*-\d{2}\\*-\d{2}\))?",
        "${1}[VERSION]",
    );
    // A page's size follows the lengths of the paths it names.
    settings.add_filter(r#""bytes": \d+"#, r#""bytes": "[N]""#);
    settings.add_filter(r"\(\d+ KB\)", "([N] KB)");
    // What the PostgreSQL server says of itself.
    settings.add_filter(
        r#""(server_now|server_version)": "[^"]*""#,
        r#""$1": "[$1]""#,
    );
    settings.add_filter(r#"[^\s"]*baton-demo-[A-Za-z0-9]+"#, "[DEMO]");
    let baton = std::path::Path::new(env!("CARGO_BIN_EXE_baton"));
    settings.add_filter(&regex_escape(&baton.display().to_string()), "[BATON]");
    settings.bind(|| snapshot(env, name, text));
}

#[test]
fn json_of_the_ticket_loop() {
    crate::files_only!("the snapshots name the state files");
    let mut s = Script::new();
    s.env
        .write("docs/brief.md", "# Brief\n\nWhat PROJ-1 is for.\n");
    s.env.git(&["add", "."]);
    s.env.git(&["commit", "--quiet", "-m", "brief"]);
    let one = Some("S-one");
    let two = Some("S-two");
    s.json(
        "loop key",
        None,
        None,
        0,
        &["loop", "key", "PROJ/1 spaces"],
        0,
    );
    s.json("loop init", None, one, 0, &["loop", "init", "PROJ-1"], 0);
    let set = [
        "loop",
        "set",
        "PROJ-1",
        "--phase",
        "qa",
        "--action",
        "returned",
        "--iteration",
        "2",
    ];
    s.json("loop set", None, one, 1, &set, 0);
    s.json("loop set", Some("refused"), two, 2, &set, 3);
    s.json(
        "loop artifact",
        None,
        one,
        2,
        &[
            "loop",
            "artifact",
            "PROJ-1",
            "--tier",
            "brief",
            "--brief",
            "docs/brief.md",
        ],
        0,
    );
    s.json(
        "loop heartbeat",
        None,
        one,
        3,
        &["loop", "heartbeat", "PROJ-1"],
        0,
    );
    s.json(
        "loop interrupt",
        None,
        one,
        4,
        &[
            "loop",
            "interrupt",
            "PROJ-1",
            "--reason",
            "rate_limit",
            "--resume-after",
            "15m",
        ],
        0,
    );
    s.json(
        "loop heartbeat",
        Some("skipped"),
        one,
        5,
        &["loop", "heartbeat", "PROJ-1"],
        0,
    );
    s.json("wait", None, two, 10, &["wait", "PROJ-1"], 0);
    s.json("wait", Some("all"), two, 30, &["wait"], 0);
    s.json("status", None, two, 30, &["status"], 0);
    // Out of the tree, which stays clean for the resumes below.
    let page = s.env.home().join("timeline.html").display().to_string();
    s.json(
        "status",
        Some("html"),
        two,
        30,
        &["status", "--html", "--out", &page],
        0,
    );
    s.json("log", None, two, 30, &["log", "PROJ-1"], 0);
    s.json("resume", Some("all"), two, 30, &["resume"], 0);
    s.json("resume", None, two, 30, &["resume", "PROJ-1"], 0);
    // What a client's session start is handed (the hook prints the client's shape, whatever
    // `--json` says).
    let payload = r#"{"session_id":"S-two","hook_event_name":"SessionStart","source":"startup"}"#;
    let mut hook = s.env.command(None, &at(30));
    hook.args(["--json", "hook", "claude", "SessionStart"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = hook.spawn().unwrap();
    {
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(payload.as_bytes())
            .unwrap();
    }
    let run = crate::common::to_run(child.wait_with_output().unwrap());
    s.record("hook", None, &run, 0);
    s.json(
        "resume accept",
        None,
        two,
        31,
        &["resume", "accept", "PROJ-1"],
        0,
    );
    s.json("loop show", None, two, 31, &["loop", "show", "PROJ-1"], 0);
    s.json(
        "loop finish",
        None,
        two,
        32,
        &["loop", "finish", "PROJ-1", "--status", "complete"],
        0,
    );
    s.env
        .baton("S-two", 33, &["loop", "init", "PROJ-2"])
        .assert_code(0);
    s.env
        .baton("S-two", 33, &["loop", "interrupt", "PROJ-2"])
        .assert_code(0);
    s.json(
        "resume fresh",
        None,
        Some("S-three"),
        40,
        &["resume", "fresh", "PROJ-2"],
        0,
    );
    s.json(
        "resume fresh",
        Some("nothing"),
        Some("S-three"),
        40,
        &["resume", "fresh", "PROJ-9"],
        0,
    );
    s.env
        .baton("S-three", 41, &["loop", "init", "PROJ-3"])
        .assert_code(0);
    s.json(
        "pause",
        None,
        Some("S-three"),
        42,
        &["pause", "--reason", "end of day"],
        0,
    );
    s.json(
        "pause",
        Some("clear"),
        Some("S-three"),
        43,
        &["pause", "--clear"],
        0,
    );
}

#[test]
fn json_of_a_batch() {
    crate::files_only!("the snapshots name the state files");
    let mut s = Script::new();
    let b = Some("S-b");
    s.json(
        "batch start",
        None,
        b,
        0,
        &["batch", "start", "PROJ-3", "PROJ-4"],
        0,
    );
    s.json(
        "batch start",
        Some("refused"),
        Some("S-other"),
        1,
        &["batch", "start", "PROJ-5", "PROJ-6"],
        3,
    );
    s.json(
        "batch ticket",
        None,
        b,
        2,
        &[
            "batch",
            "ticket",
            "PROJ-3",
            "--status",
            "complete",
            "--summary",
            "merged",
        ],
        0,
    );
    s.json("batch show", None, b, 3, &["batch", "show"], 0);
    s.json("batch heartbeat", None, b, 4, &["batch", "heartbeat"], 0);
    s.json(
        "batch heartbeat",
        Some("skipped"),
        Some("S-other"),
        5,
        &["batch", "heartbeat"],
        0,
    );
    s.json(
        "batch resume",
        None,
        Some("S-c"),
        30,
        &["batch", "resume"],
        0,
    );
    s.json(
        "batch finish",
        None,
        Some("S-c"),
        31,
        &["batch", "finish", "--status", "complete"],
        0,
    );
}

#[test]
fn json_of_a_single_run() {
    crate::files_only!("the snapshots name the state files");
    let mut s = Script::new();
    s.env.write("docs/plan.md", "# Plan\n\n1. export retries\n");
    s.env.set_age("docs/plan.md", 60);
    s.env.write(
        ".claude/PROJECT.md",
        "# Project\n\n## GOALS\nExports survive outages.\n\n## SCOPE\nThe export job.\n\n## CONSTRAINTS\nNo new services.\n",
    );
    s.env.git(&["add", "."]);
    s.env.git(&["commit", "--quiet", "-m", "plan"]);
    let r = Some("S-r");
    let new = s.json(
        "run new",
        None,
        r,
        0,
        &[
            "run",
            "new",
            "--feature",
            "export retries",
            "--plan",
            "docs/plan.md",
        ],
        0,
    );
    let id = new["run_id"].as_str().unwrap().to_string();
    s.json(
        "run record",
        None,
        r,
        1,
        &["run", "record", &id, "--agent", "planner"],
        0,
    );
    s.json("run heartbeat", None, r, 2, &["run", "heartbeat", &id], 0);
    s.json("run show", None, r, 3, &["run", "show", &id], 0);
    s.json(
        "run resume",
        Some("blocked"),
        Some("S-other"),
        4,
        &["run", "resume", &id],
        3,
    );
    s.json("run release", None, r, 5, &["run", "release", &id], 0);
    s.json(
        "run heartbeat",
        Some("skipped"),
        r,
        5,
        &["run", "heartbeat", &id],
        0,
    );
    s.json(
        "run resume",
        None,
        Some("S-other"),
        6,
        &["run", "resume", &id],
        0,
    );
    s.json(
        "run finish",
        None,
        Some("S-other"),
        7,
        &["run", "finish", &id],
        0,
    );
    s.json(
        "run prune",
        None,
        r,
        60 * 24 * 8,
        &["run", "prune", "--dry-run"],
        0,
    );
    let head = s.env.git(&["rev-parse", "HEAD"]);
    let from = s.env.home().join("pipeline_state_00c0ffee0badf00d.json");
    std::fs::write(
        &from,
        serde_json::json!({
            "run_id": "00c0ffee0badf00d",
            "PIPELINE_BASE_COMMIT": head.trim(),
            "plan_file": "docs/plan.md",
            "completed_agents": ["researcher"],
            "session_id": "old-session",
        })
        .to_string(),
    )
    .unwrap();
    s.json(
        "run import",
        None,
        r,
        61,
        &[
            "run",
            "import",
            "00c0ffee0badf00d",
            "--from",
            &from.display().to_string(),
        ],
        0,
    );
}

#[test]
fn json_of_a_plan_ledger() {
    crate::files_only!("the snapshots name the state files");
    let mut s = Script::new();
    s.env.write(
        "plans/p/phase-1.md",
        "# Phase 1\n\n```gates\nok: true → exit 0\n```\n",
    );
    s.env.write("plans/p/phase-2.md", "# Phase 2\n");
    s.env.git(&["add", "."]);
    s.env.git(&["commit", "--quiet", "-m", "plan"]);
    let l = Some("S-l");
    let plan = "plans/p";
    s.json("ledger init", None, l, 0, &["ledger", "init", plan], 0);
    s.json(
        "ledger baseline",
        None,
        l,
        1,
        &["ledger", "baseline", plan, "--tests", "40/42"],
        0,
    );
    s.json(
        "ledger start",
        None,
        l,
        2,
        &["ledger", "start", plan, "--phase", "1"],
        0,
    );
    s.env.write("src/lib.rs", "pub fn retry() {}\n");
    s.env.git(&["add", "src"]);
    s.env.git(&["commit", "--quiet", "-m", "retry"]);
    s.json(
        "gate run",
        None,
        l,
        3,
        &["gate", "run", plan, "--phase", "1"],
        0,
    );
    s.json(
        "ledger gate",
        None,
        l,
        4,
        &[
            "ledger",
            "gate",
            plan,
            "--phase",
            "1",
            "--name",
            "build",
            "--cmd",
            "cargo build",
            "--result",
            "exit 0",
            "--pass",
        ],
        0,
    );
    s.json(
        "ledger park",
        None,
        l,
        5,
        &[
            "ledger",
            "park",
            plan,
            "--phase",
            "1",
            "--finding",
            "retry jitter untested",
            "--ruling",
            "follow-up ticket",
        ],
        0,
    );
    s.json(
        "ledger waiver",
        None,
        l,
        6,
        &[
            "ledger",
            "waiver",
            plan,
            "--phase",
            "1",
            "--rule",
            "coverage",
            "--who",
            "lead: spike",
        ],
        0,
    );
    s.json(
        "ledger env",
        None,
        l,
        7,
        &[
            "ledger",
            "env",
            plan,
            "--from",
            "opus",
            "--to",
            "sonnet",
            "--reason",
            "rate limit",
        ],
        0,
    );
    s.json(
        "ledger complete",
        None,
        l,
        8,
        &[
            "ledger", "complete", plan, "--phase", "1", "--tests", "42/42", "--review", "1",
        ],
        0,
    );
    s.json("verdict", None, l, 8, &["verdict"], 0);
    s.json(
        "verdict",
        Some("phase"),
        None,
        8,
        &["verdict", plan, "--phase", "1"],
        0,
    );
    s.json("goal", None, None, 8, &["goal", plan, "--phase", "1"], 0);
    s.json(
        "guard allow",
        None,
        None,
        8,
        &["guard", "allow", "aaaaaaaa-1111-2222-3333-444444444444"],
        0,
    );
    // The account named, so that the object is the same on every machine and store.
    for (command, args) in [
        ("window check", ["window", "check", "--client", "claude"]),
        ("window reopen", ["window", "reopen", "--client", "claude"]),
    ] {
        let mut cmd = s.env.command(None, &at(8));
        cmd.env("BATON_ACCOUNT", "snapshot-account")
            .arg("--json")
            .args(args);
        let run = crate::common::to_run(cmd.output().unwrap());
        s.record(command, None, &run, 0);
    }
    s.json("ledger commit", None, l, 9, &["ledger", "commit", plan], 0);
    s.json(
        "ledger commit",
        Some("nothing"),
        l,
        9,
        &["ledger", "commit", plan],
        0,
    );
    s.json(
        "ledger died",
        None,
        l,
        10,
        &["ledger", "died", plan, "--phase", "2"],
        0,
    );
    s.json(
        "ledger block",
        None,
        l,
        11,
        &[
            "ledger",
            "block",
            plan,
            "--phase",
            "2",
            "--reason",
            "waiting for the API key",
        ],
        0,
    );
    s.json(
        "ledger append",
        None,
        l,
        12,
        &["ledger", "append", plan, "phase 2: BLOCKED — still no key"],
        0,
    );
    s.json(
        "ledger append",
        Some("invalid"),
        l,
        12,
        &["ledger", "append", plan, "phase two: started"],
        2,
    );
    s.json(
        "ledger finish",
        None,
        l,
        13,
        &[
            "ledger",
            "finish",
            plan,
            "--step",
            "docs",
            "--outcome",
            "skipped",
        ],
        0,
    );
    s.json("ledger check", None, l, 14, &["ledger", "check", plan], 0);
    s.json("ledger derive", None, l, 15, &["ledger", "derive", plan], 0);
}

#[test]
fn json_of_the_feature() {
    crate::files_only!("the snapshots name the state files");
    let mut s = Script::new();
    s.env.write(
        ".aspis/current/active_feature.json",
        "{\n  \"id\": \"F-001\",\n  \"slug\": \"export-retries\",\n  \"title\": \"Export retries\",\n  \"path\": \".aspis/features/F-001-export-retries\",\n  \"branch\": \"main\",\n  \"mode\": \"production\",\n  \"phase\": \"build\"\n}\n",
    );
    s.env.write(
        ".aspis/features/F-001-export-retries/TASKS.md",
        "- [x] T-01 Setup\n- [~] T-02 Retry loop\n- [ ] T-03 Docs\n",
    );
    s.env.git(&["add", "-A"]);
    s.env.git(&["commit", "--quiet", "-m", "feature"]);
    let f = Some("S-f");
    s.json(
        "continue review-needed",
        None,
        f,
        0,
        &[
            "continue",
            "review-needed",
            "--task",
            "T-02",
            "--cap",
            "40 turns",
            "--reason",
            "the retry policy is undecided",
        ],
        0,
    );
    s.json("continue", None, f, 30, &["continue"], 0);
    s.json(
        "continue review-needed",
        Some("clear"),
        f,
        30,
        &["continue", "review-needed", "--clear"],
        0,
    );
    s.json(
        "continue",
        Some("set-resume-point"),
        f,
        31,
        &["continue", "--set-resume-point", "--done", "T-02"],
        0,
    );
}

#[test]
fn json_of_the_commands_around_the_state() {
    crate::files_only!("the snapshots name the state files");
    let mut s = Script::new();
    // With no `baton` on PATH, as on most machines that run the tests: the hooks name this
    // executable by its full path.
    let path = std::env::var("PATH").unwrap_or_default();
    let path: Vec<&str> = path
        .split(':')
        .filter(|dir| !std::path::Path::new(dir).join("baton").exists())
        .collect();
    for (case, extra) in [
        (None, None),
        (Some("again"), None),
        (Some("remove"), Some("--remove")),
    ] {
        let mut init = s.env.command(None, &at(0));
        init.env("PATH", path.join(":"))
            .args(["--json", "init", "claude"])
            .args(extra);
        let run = crate::common::to_run(init.output().unwrap());
        s.record("init", case, &run, 0);
    }
    let plugin_dir = s.env.home().join("marketplace");
    let plugin_dir = plugin_dir.to_string_lossy().into_owned();
    s.json(
        "init",
        Some("plugin"),
        None,
        0,
        &["init", "claude", "--plugin", &plugin_dir],
        0,
    );
    let codex_plugin_dir = s.env.home().join("codex-marketplace");
    let codex_plugin_dir = codex_plugin_dir.to_string_lossy().into_owned();
    s.json(
        "init",
        Some("plugin-codex"),
        None,
        0,
        &["init", "codex", "--plugin", &codex_plugin_dir],
        0,
    );
    s.json("schema", None, None, 0, &["schema"], 0);
    s.json(
        "schema",
        Some("output-loop-key"),
        None,
        0,
        &["schema", "--output", "loop key"],
        0,
    );
    s.json(
        "schema",
        Some("output-unknown"),
        None,
        0,
        &["schema", "--output", "loop"],
        2,
    );
    // The whole document is in the source (src/commands/schema/); here it is only validated.
    let outputs = s.env.run(None, &at(0), &["--json", "schema", "--outputs"]);
    outputs.assert_code(0);
    s.schemas
        .get_or_insert_with(|| Schemas::of(&s.env))
        .validate("schema", &outputs.json());
    s.json("completions", None, None, 0, &["completions", "bash"], 0);
    let dir = s.env.home().join("man");
    s.json(
        "man",
        None,
        None,
        0,
        &["man", "--dir", &dir.display().to_string()],
        0,
    );
    s.json("demo", None, None, 0, &["demo"], 0);
    // Nothing installed and no baton on the PATH: two fixes.
    s.json("doctor", None, None, 0, &["doctor"], 4);
    s.json("man", Some("page"), None, 0, &["man"], 0);
    // Nothing in the project yet.
    s.json("wait", Some("nothing"), Some("S-x"), 0, &["wait"], 0);
    s.json(
        "pause",
        Some("no-mark"),
        Some("S-x"),
        0,
        &["pause", "--clear"],
        0,
    );
}

/// The stand-in for Claude Code that `supervise` runs (as tests/cli/supervise.rs has it, cut
/// down): its first launch starts the loop and ends in a rate limit, its second, in Claude
/// Code's resume form, accepts the resume and finishes the loop.
const FAKE_CLAUDE: &str = r#"#!/bin/bash
set -u
d="$FAKE_DIR"
n=$(( $(cat "$d/count" 2>/dev/null || echo 0) + 1 ))
echo "$n" > "$d/count"
session="S$n"
prev=""
for a in "$@"; do
  if [ "$prev" = "--resume" ]; then session="$a"; fi
  prev="$a"
done
hook() { printf '%s' "$2" | baton hook claude "$1" >/dev/null 2>&1; }
p() { printf '{"session_id":"%s","hook_event_name":"%s","cwd":"%s"%s}' "$session" "$1" "$PWD" "${2:-}"; }
hook SessionStart "$(p SessionStart ',"source":"startup"')"
hook UserPromptSubmit "$(p UserPromptSubmit ',"prompt":"task"')"
export BATON_SESSION="$session"
if [ "$n" = 1 ]; then
  baton loop init T-1 >/dev/null
  baton loop set T-1 --phase skeptic --action spawned >/dev/null
  hook StopFailure "$(p StopFailure ',"error":"rate_limit","last_assistant_message":"API Error: Request rejected (429) · Please try again in 5m."')"
  hook SessionEnd "$(p SessionEnd ',"reason":"other"')"
  exit 1
fi
baton resume accept T-1 >/dev/null
baton loop finish T-1 --status complete >/dev/null
hook Stop "$(p Stop ',"stop_hook_active":false')"
hook SessionEnd "$(p SessionEnd ',"reason":"other"')"
exit 0
"#;

#[test]
fn json_of_supervise() {
    crate::files_only!("the snapshots name the state files");
    let mut s = Script::new();
    let dir = s.env.home().join("fake");
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let claude = bin.join("claude");
    std::fs::write(&claude, FAKE_CLAUDE).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&claude, std::fs::Permissions::from_mode(0o755)).unwrap();
    s.env.run(None, &at(0), &["init", "claude"]).assert_code(0);
    s.env.git(&["add", "."]);
    s.env.git(&["commit", "--quiet", "-m", "baton hooks"]);
    let baton_dir = std::path::Path::new(env!("CARGO_BIN_EXE_baton"))
        .parent()
        .unwrap();
    let path = format!(
        "{}:{}:{}",
        bin.display(),
        baton_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = s.env.command(None, &at(0));
    cmd.env("PATH", path).env("FAKE_DIR", &dir).args([
        "--json",
        "supervise",
        "--",
        "claude",
        "-p",
        "do T-1",
    ]);
    let run = crate::common::to_run(cmd.output().unwrap());
    s.record("supervise", None, &run, 0);
}

// The server harness store.rs loads too (its module is private to it).
#[path = "../../../baton-store/tests/support/pg_server.rs"]
#[allow(dead_code, clippy::duplicate_mod)]
mod pg_server;

#[test]
fn json_of_the_store() {
    crate::files_only!("it starts a server of its own");
    let Some(server) = pg_server::PgServer::start("json_of_the_store") else {
        return;
    };
    let mut s = Script::new();
    let url = server.url();
    s.masks
        .push((format!(":{}/", server.port), ":[PORT]/".into()));
    let store = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend(["--store", url.as_str()]);
        all.iter().map(|a| a.to_string()).collect::<Vec<String>>()
    };
    let run = |s: &mut Script, command: &str, case: Option<&str>, args: Vec<String>, code: i32| {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        s.json(command, case, Some("S-s"), 0, &args, code);
    };
    run(
        &mut s,
        "store status",
        Some("before-migrate"),
        store(&["store", "status"]),
        0,
    );
    run(
        &mut s,
        "store migrate",
        None,
        store(&["store", "migrate"]),
        0,
    );
    run(&mut s, "store status", None, store(&["store", "status"]), 0);
    s.env
        .baton("S-s", 0, &["loop", "init", "T-1"])
        .assert_code(0);
    s.env
        .baton(
            "S-s",
            1,
            &["loop", "interrupt", "T-1", "--reason", "rate_limit"],
        )
        .assert_code(0);
    run(&mut s, "store import", None, store(&["store", "import"]), 0);
    run(
        &mut s,
        "store import",
        Some("refused"),
        store(&["store", "import"]),
        3,
    );
    std::fs::rename(s.env.state_dir(), s.env.repo.join("old-state")).unwrap();
    run(&mut s, "store export", None, store(&["store", "export"]), 0);
    run(
        &mut s,
        "store forward",
        None,
        store(&["store", "forward"]),
        0,
    );
    // A failure hook's entry, as it records one for the server, of a session whose loop is
    // active there.
    s.env
        .baton(
            "S-f",
            2,
            &store(&["loop", "init", "T-5"])
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>(),
        )
        .assert_code(0);
    let outbox = s.env.state_dir().join("outbox");
    std::fs::create_dir_all(&outbox).unwrap();
    let entry = serde_json::json!({
        "server": url,
        "client": "claude",
        "session": "S-f",
        "event": "StopFailure",
        "end": false,
        "reason": "rate_limit",
        "evidence": "StopFailure: rate_limit",
        "at": at(3),
    });
    std::fs::write(
        outbox.join("20260301T120300Z-1-00000000.json"),
        serde_json::to_vec(&entry).unwrap(),
    )
    .unwrap();
    run(
        &mut s,
        "store forward",
        Some("sent"),
        store(&["store", "forward"]),
        0,
    );
}

/// The commands a help lists that run on their own (not only as a group of subcommands): a
/// usage line that does not end in `<COMMAND>`.
fn runnable(help: &str) -> bool {
    help.lines()
        .skip_while(|l| !l.starts_with("Usage: "))
        .take_while(|l| !l.is_empty())
        .any(|l| !l.trim_end().ends_with("<COMMAND>"))
}

#[test]
fn every_command_has_a_json_snapshot() {
    let env = TestEnv::new();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cli/snapshots");
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let mut todo: Vec<Vec<String>> = vec![Vec::new()];
    let mut commands = Vec::new();
    while let Some(path) = todo.pop() {
        let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
        args.push("--help");
        let run = env.run(None, &at(0), &args);
        run.assert_code(0);
        for sub in subcommands(&run.stdout) {
            let mut next = path.clone();
            next.push(sub);
            todo.push(next);
        }
        if !path.is_empty() && runnable(&run.stdout) {
            commands.push(path.join(" "));
        }
    }
    let mut missing = Vec::new();
    for command in &commands {
        let stem = format!("json-{}", command.replace(' ', "_"));
        let snapshotted = names
            .iter()
            .any(|n| *n == format!("{stem}.snap") || n.starts_with(&format!("{stem}--")));
        let excused = NO_JSON_SNAPSHOT.iter().any(|(c, _)| c == command);
        assert!(
            !(snapshotted && excused),
            "`{command}` has a --json snapshot: take it off NO_JSON_SNAPSHOT"
        );
        if !snapshotted && !excused {
            missing.push(command.clone());
        }
    }
    for (command, _) in NO_JSON_SNAPSHOT {
        assert!(
            commands.iter().any(|c| c == command),
            "NO_JSON_SNAPSHOT names `{command}`, which is no command"
        );
    }
    assert!(
        commands.len() > 50,
        "only {} commands found",
        commands.len()
    );
    // `baton schema --outputs` describes exactly these commands.
    let document = env.run(None, &at(0), &["--json", "schema", "--outputs"]);
    document.assert_code(0);
    let mut described: Vec<String> = document.json()["outputs"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    described.sort();
    let mut walked = commands.clone();
    walked.sort();
    assert_eq!(
        described, walked,
        "`baton schema --outputs` and the help name different commands"
    );
    assert!(
        missing.is_empty(),
        "no --json snapshot (json-<command>.snap) for: {missing:?}"
    );
}

/// The output schemas are not vacuous: an object with a field its command does not print, a
/// verdict no registry has, a rule id no registry has or a field of the wrong type fails.
#[test]
fn the_output_schemas_catch_a_drifting_output() {
    let env = TestEnv::new();
    let schemas = Schemas::of(&env);
    let transition = serde_json::json!({
        "verdict": "ok", "reasons": [], "next": null, "ticket": "PROJ-1", "key": "PROJ-1",
        "path": "/p/.agentic/loop-state-PROJ-1.json", "status": "active", "owner": "S-one",
        "epoch": 0, "breadcrumb": "[phase: 6 skeptic · iteration 1/5]", "changed": true,
        "notes": [],
    });
    schemas.validate("loop set", &transition);
    let fails = |command: &str, value: serde_json::Value| {
        let index = schemas.by_command[command];
        assert!(
            schemas.compiled.validate(&value, index).is_err(),
            "`{command}` accepted {value:#}"
        );
    };
    let with = |key: &str, v: serde_json::Value| {
        let mut changed = transition.clone();
        changed[key] = v;
        changed
    };
    fails("loop set", with("surprise", serde_json::json!(1)));
    fails("loop set", with("verdict", serde_json::json!("maybe")));
    fails("loop set", with("epoch", serde_json::json!("0")));
    fails(
        "loop set",
        with(
            "reasons",
            serde_json::json!([{ "rule": "no.such-rule", "message": "m" }]),
        ),
    );
    let mut no_owner = transition.clone();
    no_owner.as_object_mut().unwrap().remove("owner");
    fails("loop set", no_owner);
    // The error object is the one alternative every command has.
    let error = serde_json::json!({
        "error": { "kind": "usage", "message": "m", "hints": [] },
    });
    for command in schemas.by_command.keys() {
        if command == "hook" {
            fails("hook", error.clone());
        } else {
            schemas.validate(command, &error);
        }
    }
    fails(
        "status",
        serde_json::json!({ "error": { "kind": "oops", "message": "m", "hints": [] } }),
    );
}

/// `baton schema --output <COMMAND>` stands alone: every definition it refers to is in it, and
/// it accepts what the same schema in the whole document accepts.
#[test]
fn each_output_schema_stands_alone() {
    let env = TestEnv::new();
    let whole = Schemas::of(&env);
    let error = serde_json::json!({ "error": { "kind": "refused", "message": "m", "hints": [] } });
    for command in whole.by_command.keys() {
        let run = env.run(None, &at(0), &["--json", "schema", "--output", command]);
        run.assert_code(0);
        let url = format!(
            "https://baton.invalid/schema/{}.json",
            command.replace(' ', "-")
        );
        let mut compiler = boon::Compiler::new();
        compiler.add_resource(&url, run.json()).unwrap();
        let mut alone = boon::Schemas::new();
        let index = compiler
            .compile(&url, &mut alone)
            .unwrap_or_else(|e| panic!("`schema --output {command}` does not compile: {e:#}"));
        let expected = whole
            .compiled
            .validate(&error, whole.by_command[command])
            .is_ok();
        assert_eq!(
            alone.validate(&error, index).is_ok(),
            expected,
            "`schema --output {command}` and `schema --outputs` disagree"
        );
    }
}
