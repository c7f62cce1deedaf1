//! Facts a run is planned against and re-checked against: the plan file and the alignment
//! sections of the project file.

use std::path::{Path, PathBuf};

use jiff::Timestamp;

use crate::error::OpError;
use baton_core::decide::run_resume::{PlanNow, SectionNow};
use baton_core::glob::sensitive_paths;
use baton_core::sections::{ALIGNMENT_SECTIONS, section};
use baton_store::read::read_capped;
use baton_store::sha256_hex;

/// The largest plan or project file read.
const DOC_CAP: u64 = 4 * 1024 * 1024;

/// The project file's alignment sections now: absent sections (or an absent file) have no hash.
///
/// The project file is input, not state: a link is followed (autonomous-dev ships
/// `.claude/PROJECT.md` as a link to `../PROJECT.md`) as long as where it leads stays inside the
/// project.
pub fn sections_now(root: &Path, rel: &str) -> Result<Vec<SectionNow>, OpError> {
    let mut path = root.join(rel);
    if std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink()) {
        let target = path.canonicalize().map_err(|e| {
            OpError::usage(format!(
                "{} is a link that leads nowhere: {e}",
                path.display()
            ))
            .hint("point it at the project's PROJECT.md, or pass `--project-file`")
        })?;
        if !target.starts_with(root) {
            return Err(OpError::usage(format!(
                "{} is a link to {}, outside the project",
                path.display(),
                target.display()
            ))
            .hint(
                "keep the project file inside the project, so every session reads the same one",
            ));
        }
        path = target;
    }
    let text = read_capped(&path, DOC_CAP)?.map(|b| String::from_utf8_lossy(&b).into_owned());
    Ok(ALIGNMENT_SECTIONS
        .iter()
        .map(|name| {
            let body = text.as_deref().and_then(|t| section(t, name));
            SectionNow {
                name: name.to_string(),
                sha256: body.as_deref().map(|b| sha256_hex(b.as_bytes())),
                text: body,
            }
        })
        .collect())
}

/// The plan now: its hash, its mtime and the security-sensitive paths it names; `None` when
/// the file is gone.
pub fn plan_now(path: &Path, globs: &[String]) -> Result<Option<PlanNow>, OpError> {
    let Some(bytes) = read_capped(path, DOC_CAP)? else {
        return Ok(None);
    };
    let mtime = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .map_err(|e| {
            OpError::broken(format!("cannot read the mtime of {}: {e}", path.display()))
        })?;
    let mtime = Timestamp::try_from(mtime).unwrap_or(Timestamp::UNIX_EPOCH);
    let text = String::from_utf8_lossy(&bytes);
    Ok(Some(PlanNow {
        sha256: sha256_hex(&bytes),
        mtime,
        sensitive: sensitive_paths(&text, globs),
    }))
}

/// How a plan path is recorded: relative to the project root, so that moving or re-cloning the
/// checkout does not make the plan look gone (and force a re-plan).
pub fn recorded_plan_path(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string()
}

/// Where a recorded plan path is now: relative ones under the root; absolute ones (as earlier
/// versions and imports recorded them) as they are.
pub fn plan_path_now(root: &Path, recorded: &str) -> PathBuf {
    root.join(recorded)
}

/// Resolves a path argument to an existing file inside the project root.
pub fn file_in_project(
    dir: &Path,
    root: &Path,
    raw: &Path,
    flag: &str,
) -> Result<PathBuf, OpError> {
    crate::project::path_in_project(dir, root, raw, flag, false)
}
