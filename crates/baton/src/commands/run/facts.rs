//! Facts a run is planned against and re-checked against: the plan file and the alignment
//! sections of the project file.

use std::path::{Path, PathBuf};

use jiff::Timestamp;

use crate::error::CommandError;
use baton_core::decide::run_resume::{PlanNow, SectionNow};
use baton_core::glob::sensitive_paths;
use baton_core::sections::{ALIGNMENT_SECTIONS, section};
use baton_store::read::read_capped;
use baton_store::sha256_hex;

/// The largest plan or project file read.
const DOC_CAP: u64 = 4 * 1024 * 1024;

/// The project file's alignment sections now: absent sections (or an absent file) have no hash.
pub fn sections_now(root: &Path, rel: &str) -> Result<Vec<SectionNow>, CommandError> {
    let path = root.join(rel);
    let text = read_capped(&path, DOC_CAP)?.map(|b| String::from_utf8_lossy(&b).into_owned());
    Ok(ALIGNMENT_SECTIONS
        .iter()
        .map(|name| {
            let body = text.as_deref().and_then(|t| section(t, name));
            SectionNow {
                name: name.to_string(),
                sha256: body.map(|b| sha256_hex(b.as_bytes())),
                text: body.map(String::from),
            }
        })
        .collect())
}

/// The plan now: its hash, its mtime and the security-sensitive paths it names; `None` when
/// the file is gone.
pub fn plan_now(path: &Path, globs: &[String]) -> Result<Option<PlanNow>, CommandError> {
    let Some(bytes) = read_capped(path, DOC_CAP)? else {
        return Ok(None);
    };
    let mtime = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .map_err(|e| {
            CommandError::new(
                crate::error::ExitStatus::Failure,
                format!("cannot read the mtime of {}: {e}", path.display()),
            )
        })?;
    let mtime = Timestamp::try_from(mtime).unwrap_or(Timestamp::UNIX_EPOCH);
    let text = String::from_utf8_lossy(&bytes);
    Ok(Some(PlanNow {
        sha256: sha256_hex(&bytes),
        mtime,
        sensitive: sensitive_paths(&text, globs),
    }))
}

/// Resolves a path argument to an existing file inside the project root.
pub fn file_in_project(
    dir: &Path,
    root: &Path,
    raw: &Path,
    flag: &str,
) -> Result<PathBuf, CommandError> {
    crate::commands::path_in_project(dir, root, raw, flag, false)
}
