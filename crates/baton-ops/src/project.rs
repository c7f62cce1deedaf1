//! Paths into the project: arguments on their way in, and paths read back from state.

use std::path::{Path, PathBuf};

use crate::error::OpError;

/// Resolves a path argument (relative to the working directory) to an existing file or
/// directory inside the project root: plans, Briefs and ledgers live in the project, so every
/// session and machine finds them, and no argument leads baton outside it.
pub fn path_in_project(
    dir: &Path,
    root: &Path,
    raw: &Path,
    what: &str,
    want_dir: bool,
) -> Result<PathBuf, OpError> {
    let kind = if want_dir { "directory" } else { "file" };
    let joined = if raw.is_absolute() {
        raw.to_path_buf()
    } else {
        dir.join(raw)
    };
    let resolved = joined.canonicalize().map_err(|e| {
        OpError::usage(format!("{what} {}: {e}", raw.display()))
            .hint(format!("pass an existing {kind} inside the project"))
    })?;
    if !resolved.starts_with(root) {
        return Err(OpError::usage(format!(
            "{what} {} resolves to {}, outside the project root {}",
            raw.display(),
            resolved.display(),
            root.display()
        ))
        .hint("keep it inside the project, so every session and machine finds it"));
    }
    if want_dir != resolved.is_dir() {
        return Err(
            OpError::usage(format!("{what} {} is not a {kind}", raw.display()))
                .hint(format!("pass the {kind} itself")),
        );
    }
    Ok(resolved)
}

/// Checks a path read from a state file the way `path_in_project` checks one on its way in:
/// baton stores such paths absolute and resolved, so one that is relative, leads through a
/// link, leaves the project or is of the wrong kind was not written by baton, and is refused
/// before anything reads what it names.
pub fn stored_path_in_project(
    root: &Path,
    stored: &str,
    what: &str,
    want_dir: bool,
) -> Result<PathBuf, String> {
    let shown = baton_core::text::esc(stored);
    let path = Path::new(stored);
    let kind = if want_dir { "directory" } else { "file" };
    if !path.is_absolute() {
        return Err(format!("{what} {shown:?} is not an absolute path"));
    }
    let resolved = path
        .canonicalize()
        .map_err(|e| format!("{what} {shown:?}: {e}"))?;
    if resolved != path {
        return Err(format!(
            "{what} {shown:?} leads through a link (it resolves to {})",
            resolved.display()
        ));
    }
    if !resolved.starts_with(root) {
        return Err(format!(
            "{what} {shown:?} is outside the project root {}",
            root.display()
        ));
    }
    if want_dir != resolved.is_dir() {
        return Err(format!("{what} {shown:?} is not a {kind}"));
    }
    Ok(resolved)
}
