//! The folders a client trusts, read from the text of the file it keeps them in. Gemini CLI and
//! Copilot CLI load a project's hooks only in a folder the user trusts, so `baton doctor` asks
//! whether the project is one of them.

use serde_json::Value;
use std::path::{Path, PathBuf};

/// The folders Gemini CLI's `~/.gemini/trustedFolders.json` trusts: a `TRUST_FOLDER` path
/// trusts itself and everything below it, a `TRUST_PARENT` path trusts its parent's tree.
/// Unreadable text trusts nothing.
pub fn gemini(text: &str) -> Vec<PathBuf> {
    let Ok(Value::Object(rules)) = serde_json::from_str::<Value>(text) else {
        return Vec::new();
    };
    rules
        .iter()
        .filter_map(|(path, rule)| {
            let path = Path::new(path);
            match rule.as_str() {
                Some("TRUST_FOLDER") => Some(path.to_path_buf()),
                Some("TRUST_PARENT") => path.parent().map(Path::to_path_buf),
                _ => None,
            }
        })
        .collect()
}

/// The folders Copilot CLI's `config.json` (in `$COPILOT_HOME`, else `~/.copilot`) trusts, each
/// with everything below it. Copilot writes the file with `//` comments and the list as
/// `trustedFolders`; it also honours `trusted_folders`, the spelling its documentation gives.
pub fn copilot(text: &str) -> Vec<PathBuf> {
    let root = jsonc_parser::cst::CstRootNode::parse(text, &Default::default());
    let Some(Value::Object(config)) = root.ok().and_then(|r| r.value()?.to_serde_value()) else {
        return Vec::new();
    };
    ["trustedFolders", "trusted_folders"]
        .iter()
        .filter_map(|key| config.get(*key)?.as_array())
        .flatten()
        .filter_map(Value::as_str)
        .map(PathBuf::from)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gemini_trusts_a_folder_or_a_parent_and_nothing_else() {
        let text = r#"{"/a/b": "TRUST_FOLDER", "/c/d": "TRUST_PARENT", "/e": "DO_NOT_TRUST"}"#;
        assert_eq!(gemini(text), [PathBuf::from("/a/b"), PathBuf::from("/c")]);
        assert!(gemini("not json").is_empty());
    }

    #[test]
    fn copilot_reads_its_own_commented_file_under_either_spelling() {
        // As Copilot CLI 1.0.102 rewrites the file after a run.
        let text = "// User settings belong in settings.json.\n// This file is managed automatically.\n{\n  \"trustedFolders\": [\n    \"/tmp/cp\"\n  ],\n  \"firstLaunchAt\": \"2026-03-11T00:00:00.000Z\"\n}\n";
        assert_eq!(copilot(text), [PathBuf::from("/tmp/cp")]);
        assert_eq!(
            copilot(r#"{"trusted_folders": ["/x"]}"#),
            [PathBuf::from("/x")]
        );
        assert!(copilot("{").is_empty());
        assert!(copilot(r#"{"trustedFolders": "/x"}"#).is_empty());
    }
}
