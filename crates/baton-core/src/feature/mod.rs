//! Session continuation (seed 004): the active feature pointer, its `TASKS.md` markers and the
//! resume point, as pure functions. The shell reads the files and asks git; everything decided
//! about them is decided here.

pub mod pyjson;
pub mod review;
pub mod tasks;

use std::path::{Component, Path, PathBuf};

use serde_json::{Map, Value};

use crate::decide::Reason;
use crate::text::esc;
pub use review::{ReviewNeeded, format_review_needed, parse_review_needed};
pub use tasks::{Checkpoint, Mark, Task, TaskCounts, TaskList, parse_tasks, set_marks};

/// Where the originating project keeps the pointer, relative to the project root.
pub const POINTER_PATH: &str = ".aspis/current/active_feature.json";
/// Every key the pointer must hold, each a non-empty string.
pub const REQUIRED_KEYS: [&str; 7] = ["id", "slug", "title", "path", "branch", "mode", "phase"];
/// Phases in which work goes on.
pub const WORK_PHASES: [&str; 3] = ["plan", "build", "review"];
/// Phases after which the feature is no longer active.
pub const TERMINAL_PHASES: [&str; 3] = ["done", "merged", "abandoned"];
/// The originating project's modes (not checked: the originating validator does not either).
pub const MODES: [&str; 3] = ["vibe", "mvp", "production"];

pub fn is_known_phase(phase: &str) -> bool {
    WORK_PHASES.contains(&phase) || TERMINAL_PHASES.contains(&phase)
}

fn known_phases() -> String {
    WORK_PHASES
        .iter()
        .chain(&TERMINAL_PHASES)
        .copied()
        .collect::<Vec<_>>()
        .join(", ")
}

/// `.aspis/current/active_feature.json`: the object as written, every key kept in its order,
/// so that a rewrite changes only what baton set.
#[derive(Debug, Clone, PartialEq)]
pub struct FeaturePointer {
    fields: Map<String, Value>,
}

/// The pointer's optional `scope`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Scope {
    pub allowed: Vec<String>,
    pub forbidden: Vec<String>,
}

impl Scope {
    /// Whether `path` (relative to the root) is in scope, by the originating scope guard's
    /// rules: a `forbidden` match always loses; an `allowed` list is enforced only when it is
    /// non-empty. Patterns are `fnmatch` globs.
    pub fn contains(&self, path: &str) -> bool {
        if self.forbidden.iter().any(|p| fnmatch(p, path)) {
            return false;
        }
        self.allowed.is_empty() || self.allowed.iter().any(|p| fnmatch(p, path))
    }
}

/// The most scope patterns read from each list, and the longest pattern read.
pub const SCOPE_PATTERNS_CAP: usize = 256;
pub const SCOPE_PATTERN_CAP: usize = 1024;

/// Python's `fnmatch.fnmatch` on POSIX: `*` matches any run of characters, `/` included; `?`
/// any one character; `[seq]` one character in `seq` (`[!seq]` not in it, `a-z` a range); an
/// unclosed `[` is a literal.
pub fn fnmatch(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = name.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        let step = match p.get(pi) {
            Some('*') => {
                star = Some((pi, ti));
                pi += 1;
                continue;
            }
            Some('?') => Some(1),
            Some('[') => match class(&p[pi..], t[ti]) {
                Some((true, len)) => Some(len),
                Some((false, _)) => None,
                None => (t[ti] == '[').then_some(1),
            },
            Some(&c) => (c == t[ti]).then_some(1),
            None => None,
        };
        match (step, star) {
            (Some(len), _) => {
                pi += len;
                ti += 1;
            }
            (None, Some((sp, st))) => {
                star = Some((sp, st + 1));
                pi = sp + 1;
                ti = st + 1;
            }
            (None, None) => return false,
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

/// Matches `c` against the class at the start of `p` (`[...]`): whether it matched and the
/// class's length, or `None` when the `[` is not closed.
fn class(p: &[char], c: char) -> Option<(bool, usize)> {
    let mut i = 1;
    let negate = matches!(p.get(i), Some('!'));
    if negate {
        i += 1;
    }
    let start = i;
    let mut hit = false;
    while let Some(&x) = p.get(i) {
        if x == ']' && i > start {
            return Some((hit != negate, i + 1));
        }
        if p.get(i + 1) == Some(&'-') && p.get(i + 2).is_some_and(|&y| y != ']') {
            hit |= (x..=p[i + 2]).contains(&c);
            i += 3;
        } else {
            hit |= x == c;
            i += 1;
        }
    }
    None
}

impl FeaturePointer {
    /// Parses the file's bytes: a JSON object, or why not.
    pub fn parse(bytes: &[u8]) -> Result<FeaturePointer, String> {
        let text = std::str::from_utf8(bytes).map_err(|e| format!("it is not UTF-8 text ({e})"))?;
        if text.trim().is_empty() {
            return Err("it is empty".into());
        }
        match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(fields)) => Ok(FeaturePointer { fields }),
            Ok(other) => Err(format!(
                "it holds a JSON {}, not an object",
                match other {
                    Value::Array(_) => "array",
                    Value::String(_) => "string",
                    Value::Number(_) => "number",
                    Value::Bool(_) => "boolean",
                    _ => "null",
                }
            )),
            Err(e) => Err(format!("it is not valid JSON ({e})")),
        }
    }

    pub fn from_fields(fields: Map<String, Value>) -> FeaturePointer {
        FeaturePointer { fields }
    }

    pub fn fields(&self) -> &Map<String, Value> {
        &self.fields
    }

    /// A key's value when it is a non-empty string.
    pub fn get_str(&self, key: &str) -> Option<&str> {
        self.fields
            .get(key)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    }

    pub fn id(&self) -> Option<&str> {
        self.get_str("id")
    }
    pub fn slug(&self) -> Option<&str> {
        self.get_str("slug")
    }
    pub fn title(&self) -> Option<&str> {
        self.get_str("title")
    }
    pub fn path(&self) -> Option<&str> {
        self.get_str("path")
    }
    pub fn branch(&self) -> Option<&str> {
        self.get_str("branch")
    }
    pub fn mode(&self) -> Option<&str> {
        self.get_str("mode")
    }
    pub fn phase(&self) -> Option<&str> {
        self.get_str("phase")
    }

    /// Whether the phase is done, merged or abandoned: the feature is no longer active.
    pub fn is_terminal(&self) -> bool {
        self.phase().is_some_and(|p| TERMINAL_PHASES.contains(&p))
    }

    pub fn scope(&self) -> Option<Scope> {
        let scope = self.fields.get("scope")?.as_object()?;
        // Every changed path is matched against every pattern: a hostile pointer with thousands
        // of long patterns would make each scan take seconds. Real scopes list a handful.
        let list = |key: &str| -> Vec<String> {
            scope
                .get(key)
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .filter(|p| p.len() <= SCOPE_PATTERN_CAP)
                        .take(SCOPE_PATTERNS_CAP)
                        .map(String::from)
                        .collect()
                })
                .unwrap_or_default()
        };
        Some(Scope {
            allowed: list("allowed"),
            forbidden: list("forbidden"),
        })
    }

    /// Sets `phase`, keeping the key where it was (or adding it last).
    pub fn set_phase(&mut self, phase: &str) {
        self.fields
            .insert("phase".into(), Value::String(phase.into()));
    }

    /// The bytes the originating project would write for this object.
    pub fn to_bytes(&self) -> Vec<u8> {
        pyjson::dumps_indent2(&Value::Object(self.fields.clone())).into_bytes()
    }
}

/// The feature directory a pointer's `path` names, relative to the root, checked without
/// touching a disk: relative, no `..`, not the root itself. Why not, otherwise.
pub fn feature_dir(raw: &str) -> Result<PathBuf, String> {
    if raw.contains('\0') {
        return Err("it holds a NUL byte".into());
    }
    let path = Path::new(raw);
    if path.is_absolute() {
        return Err("it is an absolute path; the pointer names the feature directory relative to the project root".into());
    }
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::Normal(p) => out.push(p),
            Component::CurDir => {}
            Component::ParentDir => {
                return Err("it leaves the project root (`..`)".into());
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err("it is an absolute path".into());
            }
        }
    }
    if out.as_os_str().is_empty() {
        return Err("it names the project root itself, not a feature directory".into());
    }
    Ok(out)
}

/// What the shell found out about a pointer.
#[derive(Debug, Clone, Copy)]
pub struct PointerFacts<'a> {
    /// `path` names an existing directory (reached without leaving the root).
    pub path_is_dir: bool,
    /// `path` stays inside the root: relative, no `..`, and no symbolic link on the way.
    pub path_inside_root: bool,
    /// The checked-out branch; `None` on a detached HEAD, which the originating validator allows.
    pub checked_out: Option<&'a str>,
}

/// Everything wrong with a pointer, each with a stable rule id, naming the file and the fix.
/// An empty list is a pointer baton may rewrite.
pub fn pointer_problems(pointer: &FeaturePointer, facts: PointerFacts<'_>) -> Vec<Reason> {
    let mut problems = Vec::new();
    for key in REQUIRED_KEYS {
        if pointer.get_str(key).is_none() {
            let found = match pointer.fields.get(key) {
                None => "missing".to_string(),
                Some(Value::String(_)) => "empty".to_string(),
                Some(v) => format!("not a string ({v})"),
            };
            problems.push(Reason::new(
                crate::Rule::FeatureMissingKey,
                format!(
                    "{POINTER_PATH}: key {key:?} is {}; set it to a non-empty string, or re-create the pointer with the feature scaffold",
                    esc(&found)
                ),
            ));
        }
    }
    if let Some(phase) = pointer.phase()
        && !is_known_phase(phase)
    {
        problems.push(Reason::new(
            crate::Rule::FeatureUnknownPhase,
            format!(
                "{POINTER_PATH}: phase {:?} is not one of {}; set it to the phase the feature is in",
                esc(phase),
                known_phases()
            ),
        ));
    }
    if let Some(raw) = pointer.path() {
        let shown = esc(raw);
        match feature_dir(raw) {
            Err(why) => problems.push(Reason::new(
                crate::Rule::FeaturePathMissing,
                format!(
                    "{POINTER_PATH}: path {shown:?} cannot be used: {why}; set it to the feature directory, like `.aspis/features/F-001-slug`"
                ),
            )),
            Ok(_) if !facts.path_inside_root => problems.push(Reason::new(
                crate::Rule::FeaturePathMissing,
                format!(
                    "{POINTER_PATH}: path {shown:?} leads outside the project root through a symbolic link; baton reads nothing there. Replace the link with the real directory, or point `path` at it"
                ),
            )),
            Ok(_) if !facts.path_is_dir => problems.push(Reason::new(
                crate::Rule::FeaturePathMissing,
                format!(
                    "{POINTER_PATH}: path {shown:?} is not a directory; create the feature directory, or set `path` to the one that exists"
                ),
            )),
            Ok(_) => {}
        }
    }
    if let (Some(want), Some(on)) = (pointer.branch(), facts.checked_out)
        && want != on
    {
        problems.push(Reason::new(
            crate::Rule::FeatureWrongBranch,
            format!(
                "{POINTER_PATH}: branch is {:?} but {:?} is checked out; `git switch {}`, or fix `branch` if the pointer is the one that is wrong",
                esc(want),
                esc(on),
                esc(want)
            ),
        ));
    }
    problems
}

/// `<state dir>/resume-point.json`: the roll-forward record of a resume point being set. It
/// exists only between the first and the last step of `continue --set-resume-point`; one left
/// behind by a killed process is completed by the next command that reads the feature.
#[derive(
    Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
pub struct ResumePointRecord {
    pub schema_version: u32,
    /// RFC 3339.
    pub created_at: String,
    /// In the order they are written: the pointer, then `TASKS.md`.
    pub files: Vec<ResumePointFile>,
}

#[derive(
    Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
pub struct ResumePointFile {
    /// Relative to the project root: the pointer or a `TASKS.md`, nothing else.
    pub path: String,
    /// The SHA-256 (lowercase hex) of what the file held before.
    pub before_sha256: String,
    /// What the file must hold after.
    pub after: String,
}

/// What `continue --set-resume-point` was asked for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResumeRequest {
    /// The phase to set; derived from the markers when not given.
    pub phase: Option<String>,
    /// The task to resume; else the first in progress, else the first open and not blocked.
    pub task: Option<String>,
    /// Tasks finished since the markers were last set.
    pub done: Vec<String>,
}

/// One marker the resume point changes.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct MarkChange {
    pub task: String,
    pub from: Mark,
    pub to: Mark,
}

/// Where the next session starts: the phase, and the markers to change to get there (only
/// those that change).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ResumePoint {
    pub phase: String,
    /// The task left `[~]`; `None` when every task is done.
    pub task: Option<String>,
    pub marks: Vec<MarkChange>,
}

impl ResumePoint {
    /// The marks as `set_marks` takes them.
    pub fn mark_pairs(&self) -> Vec<(String, Mark)> {
        self.marks.iter().map(|m| (m.task.clone(), m.to)).collect()
    }
}

/// Computes the resume point. After it exactly one task is `[~]`: the resume task (`task`, else
/// the first in progress, else the first open task not blocked; none when all are done or
/// blocked). Other in-progress tasks go back to `[ ]`, and the `done` ids become `[x]`.
///
/// The phase is the one asked for (a work or terminal phase), else derived from the markers as
/// they were plus `done` and an explicit `task`: `plan` with any task started or done becomes
/// `build`; `build` with every task done becomes `review`; otherwise it stays.
pub fn resume_point(
    phase: &str,
    tasks: &TaskList,
    request: &ResumeRequest,
) -> Result<ResumePoint, Reason> {
    if let Some(p) = &request.phase
        && !is_known_phase(p)
    {
        return Err(Reason::new(
            crate::Rule::FeatureBadPhase,
            format!(
                "--phase {:?} is not a phase; use one of {}",
                esc(p),
                known_phases()
            ),
        ));
    }
    let mut unknown: Vec<&str> = request
        .task
        .iter()
        .chain(&request.done)
        .map(String::as_str)
        .filter(|id| tasks.get(id).is_none())
        .collect();
    unknown.dedup();
    if !unknown.is_empty() {
        let known: Vec<&str> = tasks.tasks.iter().map(|t| t.id.as_str()).collect();
        return Err(Reason::new(
            crate::Rule::FeatureUnknownTask,
            format!(
                "no task {} in TASKS.md (it lists {}); name a task that is there",
                crate::text::esc_join(unknown),
                if known.is_empty() {
                    "no tasks".to_string()
                } else {
                    known.join(", ")
                }
            ),
        ));
    }
    if let Some(task) = &request.task
        && request.done.contains(task)
    {
        return Err(Reason::new(
            crate::Rule::FeatureTaskConflict,
            format!(
                "{} is both the task to resume (--task) and a finished one (--done); drop one",
                esc(task)
            ),
        ));
    }
    // The markers once `done` is applied, in task order.
    let current = |t: &Task| {
        if request.done.contains(&t.id) {
            Mark::Done
        } else {
            t.mark
        }
    };
    let resume = request.task.clone().or_else(|| {
        tasks
            .tasks
            .iter()
            .find(|t| current(t) == Mark::InProgress)
            .or_else(|| {
                tasks
                    .tasks
                    .iter()
                    .find(|t| current(t) == Mark::Open && !t.is_blocked())
            })
            .map(|t| t.id.clone())
    });
    let mut marks: Vec<MarkChange> = Vec::new();
    let mut changed = std::collections::HashSet::new();
    for t in &tasks.tasks {
        let want = if resume.as_deref() == Some(t.id.as_str()) {
            Mark::InProgress
        } else if current(t) == Mark::InProgress {
            Mark::Open
        } else {
            current(t)
        };
        if want != t.mark && changed.insert(t.id.as_str()) {
            marks.push(MarkChange {
                task: t.id.clone(),
                from: t.mark,
                to: want,
            });
        }
    }
    let started = request.task.is_some() || tasks.tasks.iter().any(|t| current(t) != Mark::Open);
    let all_done = !tasks.tasks.is_empty() && tasks.tasks.iter().all(|t| current(t) == Mark::Done);
    let phase = match &request.phase {
        Some(p) => p.clone(),
        None if phase == "plan" && started => "build".into(),
        None if phase == "build" && all_done && resume.is_none() => "review".into(),
        None => phase.to_string(),
    };
    Ok(ResumePoint {
        phase,
        task: resume,
        marks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pointer(json: &str) -> FeaturePointer {
        FeaturePointer::parse(json.as_bytes()).unwrap()
    }

    const GOOD: &str = r#"{"id": "F-001", "slug": "export-retries", "title": "Add export retries", "path": ".aspis/features/F-001-export-retries", "branch": "feature/F-001-export-retries", "mode": "production", "phase": "plan"}"#;

    fn facts(branch: Option<&str>) -> PointerFacts<'_> {
        PointerFacts {
            path_is_dir: true,
            path_inside_root: true,
            checked_out: branch,
        }
    }

    fn rules(reasons: &[Reason]) -> Vec<&'static str> {
        reasons.iter().map(|r| r.rule.id()).collect()
    }

    /// One row per pointer rule.
    #[test]
    fn pointer_rules() {
        let on = Some("feature/F-001-export-retries");
        let with = |key: &str, value: &str| -> FeaturePointer {
            let mut p = pointer(GOOD);
            let mut fields = p.fields().clone();
            if value == "<remove>" {
                fields.shift_remove(key);
            } else {
                fields.insert(key.into(), serde_json::from_str(value).unwrap());
            }
            p = FeaturePointer::from_fields(fields);
            p
        };
        let missing_dir = PointerFacts {
            path_is_dir: false,
            ..facts(on)
        };
        let via_link = PointerFacts {
            path_inside_root: false,
            ..facts(on)
        };
        let rows: Vec<(&str, FeaturePointer, PointerFacts, Vec<&str>)> = vec![
            ("a good pointer", pointer(GOOD), facts(on), vec![]),
            (
                "a detached HEAD is allowed",
                pointer(GOOD),
                facts(None),
                vec![],
            ),
            (
                "missing key",
                with("slug", "<remove>"),
                facts(on),
                vec!["feature.missing-key"],
            ),
            (
                "empty key",
                with("title", r#""""#),
                facts(on),
                vec!["feature.missing-key"],
            ),
            (
                "non-string key",
                with("id", "7"),
                facts(on),
                vec!["feature.missing-key"],
            ),
            (
                "unknown phase",
                with("phase", r#""shipping""#),
                facts(on),
                vec!["feature.unknown-phase"],
            ),
            (
                "terminal phase is known",
                with("phase", r#""merged""#),
                facts(on),
                vec![],
            ),
            (
                "path not a dir",
                pointer(GOOD),
                missing_dir,
                vec!["feature.path-missing"],
            ),
            (
                "path leaves root",
                with("path", r#""../../etc""#),
                facts(on),
                vec!["feature.path-missing"],
            ),
            (
                "absolute path",
                with("path", r#""/etc""#),
                facts(on),
                vec!["feature.path-missing"],
            ),
            (
                "path is the root",
                with("path", r#""./""#),
                facts(on),
                vec!["feature.path-missing"],
            ),
            (
                "path through a link",
                pointer(GOOD),
                via_link,
                vec!["feature.path-missing"],
            ),
            (
                "wrong branch",
                pointer(GOOD),
                facts(Some("main")),
                vec!["feature.wrong-branch"],
            ),
            (
                "several at once",
                with("phase", r#""""#),
                facts(Some("main")),
                vec!["feature.missing-key", "feature.wrong-branch"],
            ),
        ];
        for (name, p, f, want) in rows {
            let got = pointer_problems(&p, f);
            assert_eq!(rules(&got), want, "{name}: {got:#?}");
            for r in &got {
                assert!(r.message.contains(POINTER_PATH), "{name}: {}", r.message);
            }
        }
        let abs = pointer_problems(&with("path", r#""/etc""#), facts(on));
        assert!(abs[0].message.contains("absolute"), "{}", abs[0].message);
        let up = pointer_problems(&with("path", r#""../../etc""#), facts(on));
        assert!(
            up[0].message.contains("leaves the project root"),
            "{}",
            up[0].message
        );
    }

    /// Each row is what Python's `fnmatch.fnmatch` answers.
    #[test]
    fn fnmatch_matches_as_python_does() {
        let rows = [
            ("src/aspis/**", "src/aspis/x/y.py", true),
            ("src/*", "src/a/b.py", true),
            ("tests/**", "tests/", true),
            ("*.py", "a/b.py", true),
            ("rules/**", "src/rules/x", false),
            ("a?c", "abc", true),
            ("a?c", "ac", false),
            ("[!a]x", "bx", true),
            ("[!a]x", "ax", false),
            ("[a-c]1", "b1", true),
            ("[a-c]1", "d1", false),
            ("[]]", "]", true),
            ("[x", "[x", true),
            ("", "", true),
            ("*", "", true),
            ("a*b*c", "a/x/b/y/c", true),
            ("a*b*c", "a/x/b/y/d", false),
        ];
        for (pattern, name, want) in rows {
            assert_eq!(fnmatch(pattern, name), want, "{pattern} {name}");
        }
        let scope = Scope {
            allowed: vec!["src/export/**".into(), "tests/**".into()],
            forbidden: vec!["src/export/vendor/**".into()],
        };
        assert!(scope.contains("src/export/retry.py"));
        assert!(!scope.contains("src/export/vendor/x.py"));
        assert!(!scope.contains("docs/x.md"));
        assert!(Scope::default().contains("anything"));
    }

    #[test]
    fn unreadable_pointers_say_why() {
        for (bytes, why) in [
            (&b"\xff\xfe"[..], "not UTF-8"),
            (b"  \n", "empty"),
            (b"[1]", "array"),
            (b"{\"id\": ", "not valid JSON"),
        ] {
            let err = FeaturePointer::parse(bytes).unwrap_err();
            assert!(err.contains(why), "{err}");
        }
    }

    /// A rewrite keeps every key in its place and writes what the originating project writes.
    #[test]
    fn set_phase_keeps_every_key_and_the_python_bytes() {
        let original = "{\n  \"id\": \"F-001\",\n  \"phase\": \"plan\",\n  \"title\": \"Caf\\u00e9\",\n  \"scope\": {\n    \"allowed\": [\n      \"src/\"\n    ],\n    \"forbidden\": []\n  },\n  \"x-extra\": 1.5\n}\n";
        let mut p = pointer(original);
        assert_eq!(p.to_bytes(), original.as_bytes());
        p.set_phase("build");
        assert_eq!(
            String::from_utf8(p.to_bytes()).unwrap(),
            original.replace("\"plan\"", "\"build\"")
        );
        assert_eq!(
            p.scope(),
            Some(Scope {
                allowed: vec!["src/".into()],
                forbidden: vec![]
            })
        );
    }

    const TASKS: &str = "## Phase 1\n\
- [x] T-01 setup\n\
**Checkpoint**: ready.\n\
## Phase 2\n\
- [~] T-02 first\n\
- [ ] T-03 second — IN PROGRESS: half\n\
- [ ] T-04 blocked — BLOCKED: env\n\
- [ ] T-05 last\n";

    fn req(phase: Option<&str>, task: Option<&str>, done: &[&str]) -> ResumeRequest {
        ResumeRequest {
            phase: phase.map(Into::into),
            task: task.map(Into::into),
            done: done.iter().map(|s| s.to_string()).collect(),
        }
    }

    /// One row per resume-point rule: the phase, the resume task and the markers changed.
    #[test]
    fn resume_point_rules() {
        use Mark::*;
        let all_open = "- [ ] T-01 a\n- [ ] T-02 b BLOCKED: x\n- [ ] T-03 c\n";
        let all_done = "- [x] T-01 a\n- [X] T-02 b\n";
        let one_left = "- [x] T-01 a\n- [~] T-02 b\n";
        type Row<'a> = (
            &'a str,
            &'a str,
            &'a str,
            ResumeRequest,
            &'a str,
            Option<&'a str>,
            Vec<(&'a str, Mark, Mark)>,
        );
        let rows: Vec<Row> = vec![
            (
                "the first in progress resumes; the other goes back to open; plan with work started -> build",
                "plan",
                TASKS,
                req(None, None, &[]),
                "build",
                Some("T-02"),
                vec![("T-03", InProgress, Open)],
            ),
            (
                "--task picks the resume task",
                "build",
                TASKS,
                req(None, Some("T-05"), &[]),
                "build",
                Some("T-05"),
                vec![
                    ("T-02", InProgress, Open),
                    ("T-03", InProgress, Open),
                    ("T-05", Open, InProgress),
                ],
            ),
            (
                "--done ids become done; the next in progress resumes",
                "build",
                TASKS,
                req(None, None, &["T-02"]),
                "build",
                Some("T-03"),
                vec![("T-02", InProgress, Done)],
            ),
            (
                "none in progress: the first open task not blocked",
                "build",
                all_open,
                req(None, None, &["T-01"]),
                "build",
                Some("T-03"),
                vec![("T-01", Open, Done), ("T-03", Open, InProgress)],
            ),
            (
                "plan with nothing started stays plan",
                "plan",
                all_open,
                req(None, None, &[]),
                "plan",
                Some("T-01"),
                vec![("T-01", Open, InProgress)],
            ),
            (
                "build with every task done -> review, no resume task",
                "build",
                one_left,
                req(None, None, &["T-02"]),
                "review",
                None,
                vec![("T-02", InProgress, Done)],
            ),
            (
                "all done already, build -> review",
                "build",
                all_done,
                req(None, None, &[]),
                "review",
                None,
                vec![],
            ),
            (
                "review stays review",
                "review",
                one_left,
                req(None, None, &[]),
                "review",
                Some("T-02"),
                vec![],
            ),
            (
                "an asked phase wins",
                "build",
                one_left,
                req(Some("done"), None, &["T-02"]),
                "done",
                None,
                vec![("T-02", InProgress, Done)],
            ),
            (
                "no tasks: phase unchanged",
                "build",
                "# no tasks\n",
                req(None, None, &[]),
                "build",
                None,
                vec![],
            ),
        ];
        for (name, phase, text, request, want_phase, want_task, want_marks) in rows {
            let point = resume_point(phase, &parse_tasks(text), &request)
                .unwrap_or_else(|e| panic!("{name}: {e:?}"));
            assert_eq!(point.phase, want_phase, "{name}");
            assert_eq!(point.task.as_deref(), want_task, "{name}");
            let got: Vec<(&str, Mark, Mark)> = point
                .marks
                .iter()
                .map(|m| (m.task.as_str(), m.from, m.to))
                .collect();
            assert_eq!(got, want_marks, "{name}");
            // After it, exactly one task is in progress: the resume task.
            let after = parse_tasks(&set_marks(text, &point.mark_pairs()));
            let in_progress: Vec<&str> = after
                .tasks
                .iter()
                .filter(|t| t.mark == InProgress)
                .map(|t| t.id.as_str())
                .collect();
            assert_eq!(
                in_progress,
                want_task.into_iter().collect::<Vec<_>>(),
                "{name}"
            );
        }
    }

    #[test]
    fn resume_point_refusals() {
        let list = parse_tasks(TASKS);
        let rows = [
            (
                req(Some("shipping"), None, &[]),
                "feature.bad-phase",
                "shipping",
            ),
            (
                req(None, Some("T-99"), &["T-98"]),
                "feature.unknown-task",
                "T-99, T-98",
            ),
            (
                req(None, Some("T-02"), &["T-02"]),
                "feature.task-conflict",
                "T-02",
            ),
        ];
        for (request, rule, names) in rows {
            let err = resume_point("build", &list, &request).unwrap_err();
            assert_eq!(err.rule, rule);
            assert!(err.message.contains(names), "{}", err.message);
        }
    }
}
