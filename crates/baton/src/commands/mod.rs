//! One module per command group, one file per command: an `Args` struct and a `cmd_` function.

pub mod batch;
pub mod demo;
pub mod gate;
pub mod ledger;
pub mod resume;
pub mod run;
pub mod schema;
pub mod ticket_loop;

use std::path::{Path, PathBuf};

use crate::error::CommandError;

/// Resolves a path argument (relative to the working directory) to an existing file or
/// directory inside the project root: plans, Briefs and ledgers live in the project, so every
/// session and machine finds them, and no argument leads baton outside it.
pub fn path_in_project(
    dir: &Path,
    root: &Path,
    raw: &Path,
    what: &str,
    want_dir: bool,
) -> Result<PathBuf, CommandError> {
    let kind = if want_dir { "directory" } else { "file" };
    let joined = if raw.is_absolute() {
        raw.to_path_buf()
    } else {
        dir.join(raw)
    };
    let resolved = joined.canonicalize().map_err(|e| {
        CommandError::usage(format!("{what} {}: {e}", raw.display()))
            .hint(format!("pass an existing {kind} inside the project"))
    })?;
    if !resolved.starts_with(root) {
        return Err(CommandError::usage(format!(
            "{what} {} resolves to {}, outside the project root {}",
            raw.display(),
            resolved.display(),
            root.display()
        ))
        .hint("keep it inside the project, so every session and machine finds it"));
    }
    if want_dir != resolved.is_dir() {
        return Err(
            CommandError::usage(format!("{what} {} is not a {kind}", raw.display()))
                .hint(format!("pass the {kind} itself")),
        );
    }
    Ok(resolved)
}
