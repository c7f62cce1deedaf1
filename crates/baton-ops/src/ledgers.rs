//! Plan ledgers as more than one command (and the session-start survey) sees them: a plan
//! directory inside the project, and the phases its files declare.

use std::path::{Path, PathBuf};

use crate::env::Ctx;
use crate::error::CommandError;
use baton_core::ledger::gates::{phase_of_file, plan_phases};

/// A plan directory inside the project, and its ledger.
pub struct Plan {
    pub root: PathBuf,
    /// Relative to the root, `/`-separated: what the header names.
    pub rel: String,
    pub dir: PathBuf,
    pub ledger: PathBuf,
}

impl Plan {
    pub fn resolve(ctx: &Ctx, raw: &Path) -> Result<Plan, CommandError> {
        let root = ctx.layout()?.root;
        let joined = if raw.is_absolute() {
            raw.to_path_buf()
        } else {
            ctx.dir.join(raw)
        };
        let dir = joined.canonicalize().map_err(|e| {
            CommandError::usage(format!("plan directory {}: {e}", raw.display()))
                .hint("pass the plan's directory, like `plans/auth`")
        })?;
        if !dir.is_dir() {
            return Err(
                CommandError::usage(format!("{} is not a directory", raw.display()))
                    .hint("pass the plan's directory, like `plans/auth`"),
            );
        }
        let rel = dir.strip_prefix(&root).map_err(|_| {
            CommandError::usage(format!(
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
            return Err(CommandError::usage(format!("{} is not a plan directory", raw.display()))
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
    pub fn file_names(&self) -> Result<Vec<String>, CommandError> {
        Ok(std::fs::read_dir(&self.dir)
            .map_err(|e| {
                CommandError::new(
                    crate::error::ExitStatus::Failure,
                    format!("cannot list {}: {e}", self.dir.display()),
                )
            })?
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect())
    }
}

/// The phases the plan's phase files declare, in natural order (`2` before `10`).
pub fn declared_phases(plan: &Plan) -> Result<Vec<String>, CommandError> {
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
