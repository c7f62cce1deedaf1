//! Plan ledgers as more than one command (and the session-start survey) sees them: a plan
//! directory inside the project, and the phases its files declare; and the ledger's operations:
//! `init`, `commit` (`files.rs`), `derive` (`derive.rs`), the append of one event, checked
//! against the repository (`events.rs`), and `gate run` (`gate_run.rs`).

use std::path::{Path, PathBuf};

use std::time::Duration;

use crate::env::Ctx;
use crate::error::OpError;
use baton_core::ledger::gates::{
    GateDecl, is_phase_file, parse_gates, parse_plan_gates, phase_of_file, plan_phases,
};
use baton_core::ledger::{Line, parse_header, parse_line, render_line};
use baton_core::{Decision, Reason};
use baton_store::gate::{GateRun, run_gate};
use baton_store::ledger::{AppendError, append};

mod derive;
mod events;
mod files;
mod gate_run;
pub use derive::{Derivation, Derive, DeriveAppend, LedgerDerive, derive};
pub use events::{EventAppend, append_event, append_raw, check_event, short_head, started_base};
pub use files::{LedgerCommit, LedgerInit, REINCLUDE_STANZA, commit, ignored_warning, init};
pub use gate_run::{GateResult, GateRunRequest, GatesRun, run_gates};

/// A plan directory inside the project, and its ledger.
#[derive(Debug)]
pub struct Plan {
    pub root: PathBuf,
    /// Relative to the root, `/`-separated: what the header names.
    pub rel: String,
    pub dir: PathBuf,
    pub ledger: PathBuf,
}

impl Plan {
    pub fn resolve(ctx: &Ctx, raw: &Path) -> Result<Plan, OpError> {
        let root = ctx.layout()?.root;
        let joined = if raw.is_absolute() {
            raw.to_path_buf()
        } else {
            ctx.dir.join(raw)
        };
        let dir = joined.canonicalize().map_err(|e| {
            OpError::usage(format!("plan directory {}: {e}", raw.display()))
                .hint("pass the plan's directory, like `plans/auth`")
        })?;
        if !dir.is_dir() {
            return Err(
                OpError::usage(format!("{} is not a directory", raw.display()))
                    .hint("pass the plan's directory, like `plans/auth`"),
            );
        }
        let rel = dir.strip_prefix(&root).map_err(|_| {
            OpError::usage(format!(
                "plan directory {} resolves to {}, outside the project root {}",
                raw.display(),
                dir.display(),
                root.display()
            ))
            .hint(
                "ledgers live beside their plans inside the project, so they are committed with it",
            )
        })?;
        let rel = rel.to_string_lossy().into_owned();
        let first = rel.split('/').next().unwrap_or_default();
        let state_dir = ctx.layout()?.state_dir;
        if rel.is_empty() || first == ".git" || dir.starts_with(&state_dir) || rel != rel.trim() {
            return Err(OpError::usage(format!("{} is not a plan directory", raw.display()))
                .hint("pass the plan's own directory inside the project, like `plans/auth` (not the project root, `.git` or baton's state directory)"));
        }
        let ledger = dir.join("STATE.md");
        Ok(Plan {
            root,
            rel,
            dir,
            ledger,
        })
    }

    /// What a header names: the plan file when there is one, else the directory.
    pub fn header_name(&self) -> String {
        if self.dir.join("plan.md").is_file() {
            format!("{}/plan.md", self.rel)
        } else {
            self.rel.clone()
        }
    }

    /// Whether a header names this plan (as its directory or its `plan.md`, relative or
    /// absolute).
    pub fn owns_header(&self, named: &str) -> bool {
        let root = self.root.to_string_lossy();
        let named = named
            .strip_prefix(root.as_ref())
            .map_or(named, |n| n.trim_start_matches('/'));
        let named = named.trim_start_matches("./");
        let named = named
            .strip_suffix("/plan.md")
            .or_else(|| named.strip_suffix("/STATE.md"))
            .unwrap_or(named);
        named.trim_end_matches('/') == self.rel
    }

    pub fn ledger_arg(&self) -> String {
        baton_core::text::shell_quote(&self.rel)
    }

    /// The names of the files in the plan directory.
    pub fn file_names(&self) -> Result<Vec<String>, OpError> {
        Ok(std::fs::read_dir(&self.dir)
            .map_err(|e| OpError::broken(format!("cannot list {}: {e}", self.dir.display())))?
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect())
    }
}

/// The phases the plan's phase files declare, in natural order (`2` before `10`).
pub fn declared_phases(plan: &Plan) -> Result<Vec<String>, OpError> {
    let mut phases: Vec<String> = plan
        .file_names()?
        .iter()
        .filter_map(|name| phase_of_file(name).map(String::from))
        .collect();
    // ClauKit's plan.md heads each phase `Phase <N>`.
    if let Some(text) = baton_store::read::read_capped(&plan.dir.join("plan.md"), 4 * 1024 * 1024)?
    {
        phases.extend(plan_phases(&String::from_utf8_lossy(&text)));
    }
    let key = |p: &String| {
        let digits: String = p.chars().take_while(char::is_ascii_digit).collect();
        (digits.parse::<u64>().unwrap_or(u64::MAX), p.clone())
    };
    phases.sort_by_key(key);
    phases.dedup();
    Ok(phases)
}

/// What an append did.
#[derive(Debug)]
pub enum Appended {
    /// The line as written, and whether a torn tail was sealed with a newline first.
    Written { text: String, sealed: bool },
    /// Refused, nothing written: the ledger names another plan, or the event would redo work
    /// a derive confirmed.
    Refused(Decision),
}

/// The refusal of a write to another plan's ledger (exit 3).
pub fn foreign(plan: &Plan, found: &str) -> Decision {
    Decision::new(
        baton_core::Verdict::Refused,
        Reason::new(
            baton_core::Rule::LedgerForeignPlan,
            format!(
                "{} names {found:?}: it is another run's record",
                plan.ledger.display()
            ),
        ),
        Some("leave it alone; keep this plan's ledger in its own plan directory".into()),
    )
}

/// The refusal for a ledger whose header names another plan, read from its first line.
pub fn refuse_foreign(plan: &Plan) -> Result<Option<Decision>, OpError> {
    let Some(head) = baton_store::ledger::read_head(&plan.ledger)? else {
        return Ok(None);
    };
    Ok(parse_header(head.lines().next().unwrap_or_default())
        .filter(|named| !plan.owns_header(named))
        .map(|named| foreign(plan, named)))
}

/// Appends a line (already validated) with the header check. With a session known, the
/// session is recorded as the ledger's last writer (`baton_store::sessions::LedgerWriter`), for
/// the session-start survey to hand the ledger back to that session after a compaction.
pub fn append_line(ctx: &Ctx, plan: &Plan, line: &Line) -> Result<Appended, OpError> {
    let text = render_line(line);
    // A value that would not read back as written (a phase id with a space, a finding holding
    // ` — `) is refused here rather than written as a line nobody can parse.
    match parse_line(&text) {
        Ok(back) if &back == line => {}
        Ok(_) => {
            return Err(
                OpError::usage(format!("`{text}` would not read back as written"))
                    .hint("avoid ` — `, ` -> ` and `→` inside free text, and spaces in names"),
            );
        }
        Err(e) => {
            return Err(
                OpError::usage(format!("`{text}` is not a valid ledger line: {e}"))
                    .hint("check the values passed; nothing was written"),
            );
        }
    }
    if !plan.ledger.exists() {
        return Err(missing(plan));
    }
    let sealed = append(&plan.ledger, &text, |first| match parse_header(first) {
        Some(named) if plan.owns_header(named) => Ok(()),
        Some(named) => Err(AppendError::ForeignPlan {
            found: named.to_string(),
        }),
        None => Err(AppendError::NoHeader),
    });
    match sealed {
        Ok(done) => {
            note_writer(ctx, plan, done.len);
            Ok(Appended::Written {
                text,
                sealed: done.sealed,
            })
        }
        Err(AppendError::ForeignPlan { found }) => Ok(Appended::Refused(foreign(plan, &found))),
        Err(AppendError::NoHeader) => Err(OpError::broken(format!(
            "{} has no `# run-state — plan: <plan>` header line",
            plan.ledger.display()
        ))
        .hint(
            "nothing was written; if it is this plan's ledger, add the header as its first line",
        )),
        Err(AppendError::Store(e)) => Err(e.into()),
    }
}

/// Records this session as the ledger's last writer. A hint: failing to keep it changes
/// nothing of the append.
fn note_writer(ctx: &Ctx, plan: &Plan, len: u64) {
    let (Some(session), Ok(layout)) = (ctx.session(), ctx.layout()) else {
        return;
    };
    let _ = baton_store::sessions::record_ledger_writer(
        &layout,
        &baton_store::sessions::LedgerWriter {
            plan: plan.rel.clone(),
            session: session.to_string(),
            at: baton_core::time::format_ts(ctx.now),
            len,
        },
    );
}

pub fn missing(plan: &Plan) -> OpError {
    OpError::usage(format!("{} does not exist", plan.ledger.display())).hint(format!(
        "start it with `baton ledger init {}`",
        plan.ledger_arg()
    ))
}

/// The ledger's own discipline, as findings (rule, message): it is committed with the phase it
/// records, every `complete` follows a `started`, and a phase whose file declares gates has a
/// gate line before it is marked complete.
pub fn discipline(
    plan: &Plan,
    ledger: &baton_core::ledger::Ledger,
) -> Result<Vec<(baton_core::Rule, String)>, OpError> {
    use baton_core::ledger::Event;
    let mut findings = Vec::new();
    let rel = plan
        .ledger
        .strip_prefix(&plan.root)
        .unwrap_or(&plan.ledger)
        .to_path_buf();
    if !baton_store::git::is_ignored(&plan.root, &plan.ledger)?
        && baton_store::git::has_changes(&plan.root, &rel)?
    {
        findings.push((
            baton_core::Rule::LedgerUncommitted,
            format!(
                "{} is untracked or holds events git has not committed: the ledger is committed with the phase it records (`baton ledger commit {}`)",
                rel.display(),
                plan.rel
            ),
        ));
    }
    let mut started: Vec<&str> = Vec::new();
    let mut gated: Vec<&str> = Vec::new();
    for (_, line) in &ledger.events {
        match &line.event {
            Event::Started { phase, .. } => started.push(phase),
            Event::Gate { phase, .. } => gated.push(phase),
            Event::Complete { phase, .. } => {
                if !started.contains(&phase.as_str()) {
                    findings.push((
                        baton_core::Rule::LedgerCompleteWithoutStart,
                        format!("phase {phase} is marked complete with no `started` before it"),
                    ));
                }
                if !gated.contains(&phase.as_str()) {
                    let (declared, _) = declared_gates(plan, phase)?;
                    if !declared.is_empty() {
                        findings.push((
                            baton_core::Rule::LedgerCompleteWithoutGate,
                            format!(
                                "phase {phase} is marked complete with no gate line, though it declares {} (`baton gate run {} --phase {phase}`)",
                                declared.iter().map(|g| g.name.as_str()).collect::<Vec<_>>().join(", "),
                                plan.rel
                            ),
                        ));
                    }
                }
            }
            _ => {}
        }
    }
    Ok(findings)
}

/// The gates declared for `phase` in `plans/<plan>/phase-<N>*.md`, and the lines of their
/// `gates` blocks that do not parse.
pub fn declared_gates(plan: &Plan, phase: &str) -> Result<(Vec<GateDecl>, Vec<String>), OpError> {
    let mut files: Vec<_> = plan
        .file_names()?
        .into_iter()
        .filter(|name| is_phase_file(name, phase))
        .collect();
    files.sort();
    let (mut gates, mut bad) = (Vec::new(), Vec::new());
    for name in files {
        let path = plan.dir.join(&name);
        let text = baton_store::read::read_capped(&path, 4 * 1024 * 1024)?.unwrap_or_default();
        let (g, b) = parse_gates(&String::from_utf8_lossy(&text));
        gates.extend(g);
        bad.extend(b.into_iter().map(|line| format!("{name}: {line}")));
    }
    // ClauKit declares a phase's exit gates in plan.md, under the phase's heading.
    let plan_md = plan.dir.join("plan.md");
    if let Some(text) = baton_store::read::read_capped(&plan_md, 4 * 1024 * 1024)? {
        let (g, b) = parse_plan_gates(&String::from_utf8_lossy(&text), phase);
        gates.extend(g);
        bad.extend(b.into_iter().map(|line| format!("plan.md: {line}")));
    }
    Ok((gates, bad))
}

/// Runs one declared gate from the project root, handing it the plan, phase and gate names as
/// environment variables.
pub fn run_declared(
    plan: &Plan,
    phase: &str,
    gate: &GateDecl,
    timeout: Duration,
) -> Result<GateRun, OpError> {
    let root = plan.root.to_string_lossy().into_owned();
    let env = [
        ("BATON_PROJECT_ROOT", root.as_str()),
        ("BATON_PLAN_DIR", plan.rel.as_str()),
        ("BATON_PHASE", phase),
        ("BATON_GATE", gate.name.as_str()),
    ];
    Ok(run_gate(&gate.command, &plan.root, &env, timeout)?)
}
