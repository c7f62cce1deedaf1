//! Session continuation on the originating project's own files (docs/continuation.md): the
//! feature pointer as its writer writes it (`json.dumps(data, indent=2) + "\n"`), a `TASKS.md`
//! with phases, checkpoints and every marker, `REVIEW_NEEDED.md`, and a crash harness for the
//! one step that changes the pointer and `TASKS.md` together.

use std::os::unix::process::ExitStatusExt;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::{TestEnv, rules};

const BRANCH: &str = "feature/F-001-export-retries";
const FEATURE_DIR: &str = ".aspis/features/F-001-export-retries";
pub(crate) const TASKS_PATH: &str = ".aspis/features/F-001-export-retries/TASKS.md";
pub(crate) const POINTER: &str = ".aspis/current/active_feature.json";

/// The pointer as the feature scaffold writes it, plus keys baton does not know (a `scope`, a
/// non-ASCII title written with Python's default `ensure_ascii`).
fn pointer_text(phase: &str) -> String {
    format!(
        r#"{{
  "id": "F-001",
  "slug": "export-retries",
  "title": "Add export retries \u2014 caf\u00e9",
  "path": ".aspis/features/F-001-export-retries",
  "branch": "feature/F-001-export-retries",
  "mode": "production",
  "phase": "{phase}",
  "scope": {{
    "allowed": [
      "src/export/**",
      "tests/export/**"
    ],
    "forbidden": []
  }},
  "x-owner": "lead"
}}
"#
    )
}

const TASKS: &str = "# F-001 — Tasks

Format: `- [ ] T-NN [P?] [US?] <description> (<exact file path>)`

## Phase 1 — Setup
- [x] T-01 [P] Project setup in `pyproject.toml`.

**Checkpoint**: foundation initialised.

## Phase 2 — User Story 1 — Retries (priority: P1) 🎯 MVP
Tests first (write failing, then implement):
- [X] T-02 [P] [US1] Failing retry test in `tests/export/test_retry.py`.
- [~] T-03 [US1] Retry loop in `src/export/retry.py` (depends on T-02).
- [ ] T-04 [US1] Backoff config — IN PROGRESS: defaults chosen, wiring left
- [ ] T-05 [US1] Upload to the bucket — BLOCKED: env

**Checkpoint**: User Story 1 works independently.

## Phase N — Polish
- [ ] T-06 Docs and the final gate sweep.
";

fn feature_env() -> TestEnv {
    let env = TestEnv::new();
    feature_setup(&env);
    env
}

/// The feature branch with its pointer and `TASKS.md` committed.
pub(crate) fn feature_setup(env: &TestEnv) {
    env.git(&["switch", "--quiet", "-c", BRANCH]);
    env.write(POINTER, &pointer_text("build"));
    env.write(&format!("{FEATURE_DIR}/TASKS.md"), TASKS);
    env.git(&["add", "."]);
    env.git(&["commit", "--quiet", "-m", "F-001 scaffold"]);
}

fn read(env: &TestEnv, rel: &str) -> Vec<u8> {
    std::fs::read(env.repo.join(rel)).unwrap()
}

fn tasks_rel() -> String {
    format!("{FEATURE_DIR}/TASKS.md")
}

/// Runs `args` and checks it exits `code` with the pointer, TASKS.md and the state directory
/// exactly as they were.
#[track_caller]
fn assert_nothing_changed(env: &TestEnv, args: &[&str], code: i32) -> serde_json::Value {
    let (pointer, tasks) = (read(env, POINTER), read(env, &tasks_rel()));
    let state = env.state_dir().exists();
    let run = env.baton("s1", 0, args);
    run.assert_code(code);
    assert_eq!(read(env, POINTER), pointer, "pointer changed by {args:?}");
    assert_eq!(
        read(env, &tasks_rel()),
        tasks,
        "TASKS.md changed by {args:?}"
    );
    assert_eq!(
        env.state_dir().exists(),
        state,
        "{args:?} created the state dir"
    );
    if args.contains(&"--json") {
        run.json()
    } else {
        serde_json::Value::Null
    }
}

#[test]
fn each_degraded_pointer_is_reported_and_set_resume_point_refuses_with_exit_4() {
    let good = pointer_text("build");
    let rows: Vec<(&str, String, &str)> = vec![
        (
            "a missing key",
            good.replace("  \"slug\": \"export-retries\",\n", ""),
            "feature.missing-key",
        ),
        (
            "an empty key",
            good.replace("\"mode\": \"production\"", "\"mode\": \"\""),
            "feature.missing-key",
        ),
        (
            "an unknown phase",
            good.replace("\"phase\": \"build\"", "\"phase\": \"shipping\""),
            "feature.unknown-phase",
        ),
        (
            "a missing path",
            good.replace(FEATURE_DIR, ".aspis/features/F-009-gone"),
            "feature.path-missing",
        ),
        (
            "a path leaving the root",
            good.replace(FEATURE_DIR, "../../etc"),
            "feature.path-missing",
        ),
        (
            "an absolute path",
            good.replace(FEATURE_DIR, "/etc"),
            "feature.path-missing",
        ),
        (
            "the wrong branch",
            good.replace(BRANCH, "feature/F-002-other"),
            "feature.wrong-branch",
        ),
        ("not JSON", "{\"id\": \"F-0".into(), "feature.unreadable"),
    ];
    for (name, pointer, rule) in rows {
        let env = feature_env();
        env.write(POINTER, &pointer);
        let report = assert_nothing_changed(&env, &["continue", "--json"], 0);
        let found: Vec<&str> = report["feature"]["problems"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["rule"].as_str().unwrap())
            .collect();
        assert_eq!(found, [rule], "{name}: {report}");
        assert_eq!(report["feature"]["degraded"], true, "{name}");
        let message = report["feature"]["problems"][0]["message"]
            .as_str()
            .unwrap();
        assert!(message.contains(POINTER), "{name}: {message}");

        let refused =
            assert_nothing_changed(&env, &["continue", "--set-resume-point", "--json"], 4);
        assert_eq!(refused["verdict"], "ask", "{name}");
        assert_eq!(rules(&refused), [rule], "{name}");
        let text = env.baton("s1", 0, &["continue", "--set-resume-point"]);
        text.assert_code(4);
        assert!(text.stdout.contains(rule), "{name}: {}", text.stdout);
    }
}

#[test]
fn a_detached_head_is_not_a_wrong_branch() {
    let env = feature_env();
    env.git(&["switch", "--quiet", "--detach"]);
    let report = env.baton("s1", 0, &["continue", "--json"]).json();
    assert_eq!(report["feature"]["problems"], serde_json::json!([]));
}

#[test]
fn a_good_resume_point_changes_both_files_and_keeps_every_other_byte() {
    let env = feature_env();
    env.write(POINTER, &pointer_text("plan"));
    let out = env
        .baton(
            "s1",
            0,
            &["continue", "--set-resume-point", "--done", "T-03", "--json"],
        )
        .assert_code(0)
        .json();
    assert_eq!(out["changed"], true);
    assert_eq!(
        out["phase"],
        serde_json::json!({"from": "plan", "to": "build"})
    );
    assert_eq!(out["resume_task"], "T-04");
    assert_eq!(
        out["marks"],
        serde_json::json!([{"task": "T-03", "from": "in_progress", "to": "done"}])
    );
    // Every key kept, in its order, written as the originating writer writes it.
    assert_eq!(
        String::from_utf8(read(&env, POINTER)).unwrap(),
        pointer_text("build")
    );
    // T-04 stays in progress by its note; only T-03's box changed.
    let want = TASKS.replace("- [~] T-03 [US1] Retry loop", "- [x] T-03 [US1] Retry loop");
    assert_eq!(String::from_utf8(read(&env, &tasks_rel())).unwrap(), want);

    // Picking another task: the noted one is paused (its note kept), the other goes [~].
    let out = env
        .baton(
            "s1",
            0,
            &["continue", "--set-resume-point", "--task", "T-06", "--json"],
        )
        .assert_code(0)
        .json();
    assert_eq!(out["resume_task"], "T-06");
    let want = want
        .replace(
            "— IN PROGRESS: defaults chosen",
            "— PAUSED: defaults chosen",
        )
        .replace("- [ ] T-06 Docs", "- [~] T-06 Docs");
    assert_eq!(String::from_utf8(read(&env, &tasks_rel())).unwrap(), want);
    assert_eq!(
        String::from_utf8(read(&env, POINTER)).unwrap(),
        pointer_text("build")
    );

    // The same again changes nothing, and says so.
    let again = env.baton(
        "s1",
        0,
        &["continue", "--set-resume-point", "--task", "T-06"],
    );
    again.assert_code(0);
    assert!(again.stdout.contains("nothing changed"), "{}", again.stdout);
    assert_eq!(String::from_utf8(read(&env, &tasks_rel())).unwrap(), want);

    // Every task done: build -> review, no task left [~].
    let all: Vec<&str> = ["T-04", "T-05", "T-06"]
        .iter()
        .flat_map(|t| ["--done", t])
        .collect();
    let mut args = vec!["continue", "--set-resume-point", "--json"];
    args.extend(all);
    let out = env.baton("s1", 0, &args).assert_code(0).json();
    assert_eq!(out["phase"]["to"], "review");
    assert_eq!(out["resume_task"], serde_json::Value::Null);
    let text = String::from_utf8(read(&env, &tasks_rel())).unwrap();
    assert!(!text.contains("[~]") && !text.contains("[ ] T-0"), "{text}");
    // A PAUSED: note is not a marker: setting the task done leaves it as it is.
    assert!(
        text.contains("- [x] T-04 [US1] Backoff config — PAUSED: defaults chosen, wiring left\n"),
        "{text}"
    );
    assert!(
        text.contains("- [x] T-05 [US1] Upload to the bucket — BLOCKED: env\n"),
        "{text}"
    );
}

#[test]
fn bad_requests_and_a_missing_pointer_exit_2_and_change_nothing() {
    let env = feature_env();
    let bad = assert_nothing_changed(
        &env,
        &[
            "continue",
            "--set-resume-point",
            "--phase",
            "shipping",
            "--json",
        ],
        2,
    );
    assert!(
        bad["error"]["message"]
            .as_str()
            .unwrap()
            .contains("feature.bad-phase")
    );
    let unknown = assert_nothing_changed(
        &env,
        &[
            "continue",
            "--set-resume-point",
            "--task",
            "T-42",
            "--done",
            "T-77",
            "--json",
        ],
        2,
    );
    let message = unknown["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("T-42") && message.contains("T-77"),
        "{message}"
    );
    // An option of the resume point without `--set-resume-point` is a usage error.
    assert_nothing_changed(&env, &["continue", "--task", "T-03"], 2);

    std::fs::remove_file(env.repo.join(POINTER)).unwrap();
    let none = env
        .baton("s1", 0, &["continue", "--set-resume-point", "--json"])
        .assert_code(2)
        .json();
    assert!(none["error"]["message"].as_str().unwrap().contains(POINTER));
    let report = env
        .baton("s1", 0, &["continue", "--json"])
        .assert_code(0)
        .json();
    assert_eq!(report["feature"], serde_json::Value::Null);
    assert!(!env.state_dir().exists());
}

#[test]
fn review_needed_is_written_read_and_cleared() {
    let env = feature_env();
    env.write(
        "notes/partial.md",
        "retry loop written; 2 of 5 tests pass\n",
    );
    let out = env
        .baton(
            "s1",
            0,
            &[
                "continue",
                "review-needed",
                "--task",
                "T-03",
                "--reason",
                "hit the turn cap mid-refactor",
                "--cap",
                "40 turns",
                "--partial-file",
                "notes/partial.md",
                "--json",
            ],
        )
        .assert_code(0)
        .json();
    let path = format!("{FEATURE_DIR}/REVIEW_NEEDED.md");
    assert_eq!(out["written"], path.as_str());
    let text = String::from_utf8(read(&env, &path)).unwrap();
    assert!(
        text.starts_with("# REVIEW_NEEDED: T-03\n\n- task: T-03\n- by: s1\n- cap: 40 turns\n"),
        "{text}"
    );
    assert!(text.contains("## Partial result\n\nretry loop written; 2 of 5 tests pass\n"));

    let report = env.baton("s1", 1, &["continue", "--json"]).json();
    let review = &report["feature"]["review_needed"];
    assert_eq!(review["task"], "T-03");
    assert_eq!(review["by"], "s1");
    assert_eq!(review["reason"], "hit the turn cap mid-refactor");
    let text = env.baton("s1", 1, &["continue"]).stdout;
    assert!(text.contains("review needed:"), "{text}");

    // A second one does not clobber the first, and the refusal creates nothing.
    std::fs::remove_dir_all(env.state_dir()).unwrap();
    let again = env.baton(
        "s1",
        2,
        &[
            "continue",
            "review-needed",
            "--task",
            "T-04",
            "--reason",
            "x",
        ],
    );
    again.assert_code(3);
    assert!(again.stderr.contains("--clear"), "{}", again.stderr);
    assert!(!env.state_dir().exists());
    // An unknown task is refused.
    env.baton(
        "s1",
        2,
        &[
            "continue",
            "review-needed",
            "--task",
            "T-99",
            "--reason",
            "x",
            "--replace",
        ],
    )
    .assert_code(2);

    // A hand-written one is read for what it has.
    std::fs::write(
        env.repo.join(&path),
        "# REVIEW_NEEDED: T-05\nneeds a person\n",
    )
    .unwrap();
    let report = env.baton("s1", 3, &["continue", "--json"]).json();
    assert_eq!(report["feature"]["review_needed"]["task"], "T-05");
    assert_eq!(
        report["feature"]["review_needed"]["reason"],
        serde_json::Value::Null
    );

    let cleared = env
        .baton("s1", 4, &["continue", "review-needed", "--clear", "--json"])
        .assert_code(0)
        .json();
    assert_eq!(cleared["cleared"], true);
    assert!(!env.repo.join(&path).exists());
    let report = env.baton("s1", 5, &["continue", "--json"]).json();
    assert_eq!(report["feature"]["review_needed"], serde_json::Value::Null);

    // Outside a feature it is refused.
    std::fs::remove_file(env.repo.join(POINTER)).unwrap();
    env.baton(
        "s1",
        6,
        &[
            "continue",
            "review-needed",
            "--task",
            "T-03",
            "--reason",
            "x",
        ],
    )
    .assert_code(2);
}

#[test]
fn a_symlinked_pointer_is_refused_and_its_target_untouched() {
    let env = feature_env();
    let elsewhere = env.repo.join("elsewhere.json");
    std::fs::rename(env.repo.join(POINTER), &elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, env.repo.join(POINTER)).unwrap();
    let before = std::fs::read(&elsewhere).unwrap();
    let report = assert_nothing_changed(&env, &["continue", "--json"], 0);
    assert_eq!(
        report["feature"]["problems"][0]["rule"],
        "feature.unreadable"
    );
    assert!(
        report["feature"]["problems"][0]["message"]
            .as_str()
            .unwrap()
            .contains("symbolic link")
    );
    let refused = assert_nothing_changed(&env, &["continue", "--set-resume-point", "--json"], 4);
    assert_eq!(rules(&refused), ["feature.unreadable"]);
    assert_eq!(std::fs::read(&elsewhere).unwrap(), before);
}

/// Turns a good `TASKS.md` into a bad one.
type Spoil = fn(&std::path::Path);

#[test]
fn a_symlinked_huge_or_binary_tasks_file_is_a_problem_not_a_crash() {
    let env = feature_env();
    let tasks = env.repo.join(tasks_rel());
    let rows: [(&str, Spoil); 3] = [
        ("not UTF-8", |tasks| {
            std::fs::write(tasks, b"- [ ] T-01 \xff\xfe\n").unwrap()
        }),
        ("huge", |tasks| {
            std::fs::File::create(tasks)
                .unwrap()
                .set_len(64 * 1024 * 1024)
                .unwrap()
        }),
        ("a link", |tasks| {
            std::fs::remove_file(tasks).unwrap();
            std::os::unix::fs::symlink("/etc/passwd", tasks).unwrap();
        }),
    ];
    for (name, make) in rows {
        make(&tasks);
        let report = assert_nothing_changed(&env, &["continue", "--json"], 0);
        assert_eq!(
            report["feature"]["problems"][0]["rule"], "feature.tasks-unreadable",
            "{name}: {report}"
        );
        assert_eq!(
            report["feature"]["tasks"],
            serde_json::Value::Null,
            "{name}"
        );
        assert_nothing_changed(&env, &["continue", "--set-resume-point"], 4);
    }
}

#[test]
fn dirty_paths_inside_the_feature_and_its_scope_are_listed_and_baton_state_is_not() {
    let env = feature_env();
    env.write("src/export/retry.py", "x = 1\n");
    env.write("src/elsewhere.py", "x = 1\n");
    env.git(&["add", "."]);
    env.git(&["commit", "--quiet", "-m", "code"]);
    env.write(&format!("{FEATURE_DIR}/notes.md"), "wip\n");
    env.write("src/export/retry.py", "x = 2\n");
    env.write("src/elsewhere.py", "x = 2\n");
    env.baton("s1", 0, &["loop", "init", "PROJ-1"])
        .assert_code(0);
    let report = env.baton("s1", 0, &["continue", "--json"]).json();
    assert_eq!(
        report["feature"]["dirty"],
        serde_json::json!([format!("{FEATURE_DIR}/notes.md")])
    );
    // The pointer's scope (`src/export/**`, `tests/export/**`) is checked on its own.
    assert_eq!(
        report["feature"]["scope_dirty"],
        serde_json::json!(["src/export/retry.py"])
    );
}

// ---------------------------------------------------------------------------------------------
// Crash harness: SIGKILL during `--set-resume-point`.

/// SplitMix64, as in crash.rs.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn up_to(&mut self, max: u64) -> u64 {
        self.next() % (max + 1)
    }
}

fn env_number(name: &str) -> Option<u64> {
    std::env::var(name).ok().map(|raw| {
        raw.parse()
            .unwrap_or_else(|_| panic!("{name}={raw:?} is not a number"))
    })
}

/// One of the two resume points the harness moves between; each changes both files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Point {
    /// phase build, T-01 `[~]`, T-02 `[ ]`.
    A,
    /// phase review, T-01 `[ ]`, T-02 `[~]`.
    B,
}

impl Point {
    fn args(self) -> [&'static str; 6] {
        match self {
            Point::A => [
                "continue",
                "--set-resume-point",
                "--phase",
                "build",
                "--task",
                "T-01",
            ],
            Point::B => [
                "continue",
                "--set-resume-point",
                "--phase",
                "review",
                "--task",
                "T-02",
            ],
        }
    }

    fn other(self) -> Point {
        match self {
            Point::A => Point::B,
            Point::B => Point::A,
        }
    }
}

const CRASH_TASKS: &str = "## Phase 1\n- [~] T-01 first\n- [ ] T-02 second\n\n**Checkpoint**: done.\n- [ ] T-03 third — BLOCKED: env\n";

/// Which resume point the two files hold; an error when they disagree, do not parse, or
/// something is left beside them.
fn point_on_disk(env: &TestEnv) -> Result<Point, String> {
    let pointer = std::fs::read(env.repo.join(POINTER))
        .map_err(|e| format!("cannot read the pointer: {e}"))?;
    let pointer: serde_json::Value = serde_json::from_slice(&pointer).map_err(|e| {
        format!(
            "the pointer is not JSON ({e}): {:?}",
            String::from_utf8_lossy(&pointer)
        )
    })?;
    let tasks = std::fs::read_to_string(env.repo.join(tasks_rel()))
        .map_err(|e| format!("cannot read TASKS.md: {e}"))?;
    let by_pointer = match pointer["phase"].as_str() {
        Some("build") => Point::A,
        Some("review") => Point::B,
        other => return Err(format!("the pointer's phase is {other:?}")),
    };
    let a = tasks.contains("- [~] T-01 first\n- [ ] T-02 second\n");
    let b = tasks.contains("- [ ] T-01 first\n- [~] T-02 second\n");
    let rest = "\n\n**Checkpoint**: done.\n- [ ] T-03 third — BLOCKED: env\n";
    if !tasks.starts_with("## Phase 1\n") || !tasks.ends_with(rest) {
        return Err(format!("TASKS.md lost bytes: {tasks:?}"));
    }
    let by_tasks = match (a, b) {
        (true, false) => Point::A,
        (false, true) => Point::B,
        _ => return Err(format!("TASKS.md holds neither resume point: {tasks:?}")),
    };
    if by_pointer != by_tasks {
        return Err(format!(
            "the pointer says {by_pointer:?} but TASKS.md says {by_tasks:?}: a resume point half applied"
        ));
    }
    for dir in [
        env.repo.join(".aspis/current"),
        env.repo.join(FEATURE_DIR),
        env.state_dir(),
    ] {
        for entry in std::fs::read_dir(&dir).into_iter().flatten() {
            let name = entry.unwrap().file_name().to_string_lossy().into_owned();
            if name.contains(".tmp-") || name == "resume-point.json" {
                return Err(format!("{} left in {}", name, dir.display()));
            }
        }
    }
    Ok(by_pointer)
}

fn kill_hard(child: &std::process::Child) {
    let pid = libc::pid_t::try_from(child.id()).expect("pid fits pid_t");
    // SAFETY: kill(2) takes plain integers and touches no memory of ours.
    let rc = unsafe { libc::kill(pid, libc::SIGKILL) };
    assert_eq!(rc, 0, "kill: {}", std::io::Error::last_os_error());
}

/// Kills `baton continue --set-resume-point` at random moments; after each kill the next
/// `baton continue` (which completes a pending record) must leave both files at the old resume
/// point or both at the new one, every file parsing, nothing left beside them.
///
/// The kill lands after a delay drawn from `0..=max`, where `max` is a typical (median) run: a run
/// here (two git calls, four fsyncs, a debug build) takes tens of milliseconds, so a fixed
/// 0..3 ms window would kill every run before it writes anything. `BATON_CRASH_MAX_DELAY_US`
/// fixes the window instead of measuring it.
#[test]
fn sigkill_during_set_resume_point_leaves_both_files_old_or_both_new() {
    let seed = env_number("BATON_CRASH_SEED").unwrap_or_else(|| {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64;
        nanos ^ u64::from(std::process::id()).rotate_left(32)
    });
    let trials = env_number("BATON_CRASH_TRIALS").unwrap_or(200);
    let mut rng = Rng(seed);
    let env = TestEnv::new();
    env.git(&["switch", "--quiet", "-c", BRANCH]);
    env.write(POINTER, &pointer_text("build"));
    env.write(&tasks_rel(), CRASH_TASKS);
    env.git(&["add", "."]);
    env.git(&["commit", "--quiet", "-m", "F-001"]);
    let now = crate::common::at(0);

    // Measure unkilled runs each way, to spread the kills over a typical run.
    let mut on_disk = point_on_disk(&env).unwrap();
    let mut took = Vec::new();
    for _ in 0..5 {
        let target = on_disk.other();
        let started = Instant::now();
        env.run(Some("s1"), &now, &target.args()).assert_code(0);
        took.push(started.elapsed());
        on_disk = point_on_disk(&env).unwrap();
        assert_eq!(on_disk, target);
    }
    took.sort();
    let max_delay_us = env_number("BATON_CRASH_MAX_DELAY_US")
        .unwrap_or_else(|| (took[2].as_micros() as u64).max(3_000));
    eprintln!(
        "resume-point crash harness: BATON_CRASH_SEED={seed} BATON_CRASH_TRIALS={trials} BATON_CRASH_MAX_DELAY_US={max_delay_us}"
    );

    let (mut landed, mut not_landed, mut finished, mut completed) = (0u64, 0u64, 0u64, 0u64);
    for trial in 1..=trials {
        let target = on_disk.other();
        let delay = rng.up_to(max_delay_us);
        let mut child = env
            .command(Some("s1"), &now)
            .args(target.args())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn baton");
        std::thread::sleep(Duration::from_micros(delay));
        kill_hard(&child);
        let status = child.wait().unwrap();
        let what = format!(
            "trial {trial} ({target:?}, SIGKILL after {delay}us, {status})\nreproduce the plan with BATON_CRASH_SEED={seed} BATON_CRASH_TRIALS={trials} BATON_CRASH_MAX_DELAY_US={max_delay_us}"
        );
        // The next call completes whatever the killed one left.
        let next = env.run(Some("s1"), &now, &["continue", "--json"]);
        assert_eq!(next.code, 0, "{what}\nstderr: {}", next.stderr);
        if next.stdout.contains("completed a resume point") {
            completed += 1;
        }
        let found = point_on_disk(&env).unwrap_or_else(|problem| panic!("{what}: {problem}"));
        match status.signal() {
            Some(libc::SIGKILL) if found == target => landed += 1,
            Some(libc::SIGKILL) => not_landed += 1,
            _ => {
                assert_eq!(status.code(), Some(0), "{what}");
                assert_eq!(
                    found, target,
                    "{what}: exited 0 but the resume point is lost"
                );
                finished += 1;
            }
        }
        on_disk = found;
    }
    eprintln!(
        "resume-point crash harness: {landed} killed after landing ({completed} of them completed by the next call), {not_landed} killed before, {finished} finished first"
    );
    // A run that never killed a write between its two files would not have tested the
    // roll-forward at all.
    if trials >= 100 {
        assert!(
            completed > 0,
            "no kill landed inside the two-file step, so the roll-forward went untested (seed {seed})"
        );
    }
    // No lock is stuck: one more resume point goes through.
    let target = on_disk.other();
    env.run(Some("s1"), &now, &target.args()).assert_code(0);
    assert_eq!(point_on_disk(&env), Ok(target), "seed {seed}");
}

/// A feature directory whose name holds a newline cannot forge a line of baton's output.
#[test]
fn a_path_from_the_pointer_cannot_forge_an_output_line() {
    let env = feature_env();
    let dir = ".aspis/features/F-1\nverdict: none";
    std::fs::create_dir_all(env.repo.join(dir)).unwrap();
    std::fs::write(env.repo.join(dir).join("TASKS.md"), "- [ ] T-01 a\n").unwrap();
    let pointer = pointer_text("build").replace(FEATURE_DIR, ".aspis/features/F-1\\nverdict: none");
    env.write(POINTER, &pointer);
    for args in [
        &["continue"][..],
        &["continue", "--set-resume-point"],
        &[
            "continue",
            "review-needed",
            "--task",
            "T-01",
            "--reason",
            "cap",
        ],
    ] {
        let run = env.baton("s1", 0, args);
        run.assert_code(0);
        for line in run.stdout.lines().chain(run.stderr.lines()) {
            assert!(
                !line.starts_with("verdict: none"),
                "{args:?}:\n{}",
                run.stdout
            );
        }
    }
}

#[test]
fn baton_schema_describes_the_resume_point_record() {
    let env = TestEnv::new();
    let schemas = env
        .baton("s1", 0, &["schema", "--json"])
        .assert_code(0)
        .json();
    let record = &schemas["resume-point"]["properties"];
    for key in ["schema_version", "created_at", "files"] {
        assert!(record[key].is_object(), "{key}: {record}");
    }
}

/// The row of one piece of work in `baton --json resume`.
fn work_row<'a>(out: &'a serde_json::Value, kind: &str) -> &'a serde_json::Value {
    out["work"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} in {out}"))
}

#[test]
fn a_feature_stopped_mid_task_with_changes_is_a_crash_and_the_packet_names_the_preflight() {
    let env = feature_env();
    env.write("src/export/retry.py", "def retry(): ...\n");
    let out = env.baton("s2", 60, &["--json", "resume"]);
    out.assert_code(0);
    let all = out.json();
    let feature = work_row(&all, "feature");
    assert_eq!(feature["key"], "F-001");
    assert_eq!(feature["class"], "crash");
    assert_eq!(feature["verdict"], "resume");
    let md = all["packet_markdown"].as_str().unwrap();
    assert!(md.contains("aspis preflight"), "{md}");
    assert!(md.contains("task T-03"), "{md}");
    assert!(md.contains("`baton continue --set-resume-point`"), "{md}");
    assert!(
        md.contains("src/export/retry.py"),
        "the evidence names the change: {md}"
    );
    assert!(md.contains("T-05 BLOCKED: env"), "blockers: {md}");
}

/// The seed's anti-pattern, end to end: a delegate that hit its cap left REVIEW_NEEDED, a task
/// in progress and uncommitted changes, which would all read as a crash; it is a timeout.
#[test]
fn review_needed_makes_the_feature_a_timeout_never_a_crash() {
    let env = feature_env();
    env.write("src/export/retry.py", "def retry(): ...\n");
    env.baton(
        "s1",
        0,
        &[
            "continue",
            "review-needed",
            "--task",
            "T-03",
            "--reason",
            "hit the turn cap",
            "--cap",
            "40 turns",
        ],
    )
    .assert_code(0);
    let all = env.baton("s2", 60, &["--json", "resume"]).json();
    let feature = work_row(&all, "feature");
    assert_eq!(feature["class"], "timeout", "{all}");
    let md = all["packet_markdown"].as_str().unwrap();
    assert!(md.contains("re-delegate"), "{md}");
    assert!(!md.contains("re-run the gates first"), "{md}");
    assert!(
        md.contains("REVIEW_NEEDED: .aspis/features/F-001-export-retries/REVIEW_NEEDED.md")
            || md.contains("REVIEW_NEEDED.md"),
        "{md}"
    );
}

#[test]
fn a_pointer_on_another_branch_is_degraded_and_comes_first_in_the_packet() {
    let env = feature_env();
    env.git(&["switch", "--quiet", "main"]);
    env.write(POINTER, &pointer_text("build"));
    env.baton("s1", 0, &["loop", "init", "PROJ-1"])
        .assert_code(0);
    env.baton(
        "s1",
        0,
        &["loop", "interrupt", "PROJ-1", "--reason", "rate_limit"],
    )
    .assert_code(0);
    let all = env.baton("s2", 60, &["--json", "resume"]).json();
    let feature = work_row(&all, "feature");
    assert_eq!(feature["verdict"], "degraded");
    assert_eq!(
        feature["class"],
        serde_json::Value::Null,
        "no class is trusted"
    );
    let first = &all["packet"]["items"][0];
    assert_eq!(first["kind"], "feature");
    assert!(
        first["blockers"]
            .to_string()
            .contains("feature.wrong-branch"),
        "{first}"
    );
    assert_eq!(first["accept"], serde_json::Value::Null);
}

#[test]
fn a_paused_feature_at_a_clean_checkpoint_resumes_from_its_next_task() {
    let env = feature_env();
    // The pointer and TASKS.md were last written before the pause.
    env.set_age(POINTER, 10);
    env.set_age(&tasks_rel(), 10);
    env.baton("s1", 0, &["pause", "--reason", "end of day"])
        .assert_code(0);
    let all = env.baton("s2", 600, &["--json", "resume"]).json();
    let feature = work_row(&all, "feature");
    assert_eq!(feature["class"], "pause", "{all}");
    let md = all["packet_markdown"].as_str().unwrap();
    assert!(md.contains("resume from the next step: task T-03"), "{md}");
    assert!(!md.contains("pause-unclean"), "{md}");
    // TASKS.md written after the pause: the feature was resumed since, and stopped again.
    env.set_age(&tasks_rel(), -5);
    let all = env.baton("s2", 600, &["--json", "resume"]).json();
    assert_eq!(work_row(&all, "feature")["class"], "crash");
}

#[test]
fn continue_prints_the_feature_then_the_packet() {
    let env = feature_env();
    let out = env.baton("s2", 60, &["continue"]);
    out.assert_code(0);
    let feature_at = out.stdout.find("feature: F-001").expect("the summary");
    let packet_at = out.stdout.find("# Resume packet").expect("the packet");
    assert!(feature_at < packet_at, "{}", out.stdout);
    let json = env.baton("s2", 60, &["--json", "continue"]).json();
    assert_eq!(json["feature"]["resume_task"], "T-03");
    assert_eq!(json["packet"]["items"][0]["kind"], "feature");
    assert_eq!(json["verdict"], "resume");
}

/// The resume point is the feature's own bookkeeping: after it and a pause, the next session
/// sees a clean pause, not uncommitted work.
#[test]
fn after_a_resume_point_and_a_pause_the_next_session_sees_a_clean_pause() {
    let env = feature_env();
    env.baton("s1", 0, &["continue", "--set-resume-point"])
        .assert_code(0);
    env.set_age(POINTER, 10);
    env.set_age(&tasks_rel(), 10);
    env.baton("s1", 1, &["pause"]).assert_code(0);
    let all = env.baton("s2", 600, &["--json", "resume"]).json();
    let feature = work_row(&all, "feature");
    assert_eq!(feature["class"], "pause", "{all}");
    let rules: Vec<&str> = all["packet"]["items"][0]["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["rule"].as_str().unwrap())
        .collect();
    assert_eq!(rules, ["continue.pause"], "{all}");
}

/// A feature that cannot be read (here its lock is held past the wait) is still reported, as
/// degraded and first in the packet: never as "nothing to resume".
#[test]
fn a_feature_that_cannot_be_read_is_degraded_not_silent() {
    let env = feature_env();
    // The lock file exists once a resume point has been set.
    env.baton("s1", 0, &["continue", "--set-resume-point"])
        .assert_code(0);
    let lock = env.state_dir().join("locks/feature.lock");
    assert!(lock.exists());
    let mut holder = std::process::Command::new("flock")
        .arg(&lock)
        .args(["sleep", "5"])
        .spawn()
        .expect("flock (util-linux) runs");
    std::thread::sleep(Duration::from_millis(200));
    let out = env
        .command(Some("s2"), &crate::common::at(60))
        .env("BATON_LOCK_WAIT", "200ms")
        .args(["--json", "resume"])
        .output()
        .unwrap();
    let _ = holder.kill();
    let _ = holder.wait();
    let all: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let feature = work_row(&all, "feature");
    assert_eq!(feature["verdict"], "degraded", "{all}");
    assert_eq!(all["verdict"], "resume");
    assert_eq!(all["packet"]["items"][0]["kind"], "feature");
    assert_eq!(
        all["packet"]["items"][0]["reasons"][0]["rule"],
        "feature.unreadable"
    );
}
