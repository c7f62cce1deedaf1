//! Ids that become paths or are compared with them: ticket ids and the loop keys sanitized from
//! them, loop file names, batch prefixes, run ids and `--resume` targets, a feature pointer's
//! directory, and the plan a ledger's header names.

use std::path::Component;

use baton_core::feature::feature_dir;
use baton_core::key::{
    KEY_MAX, batch_prefix, key_from_file_name, loop_file_name, loop_key, sanitize,
};
use baton_core::ledger::{parse_header, render_header};
use baton_core::run_id::{RunId, RunTarget};

fn is_key_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-')
}

/// A key as a path component: non-empty unless the input held nothing safe, only safe bytes,
/// never `.` or `..`, at most `KEY_MAX` long, and its own sanitized form.
fn assert_safe_key(key: &str) {
    assert!(
        key.bytes().all(is_key_byte),
        "key {key:?} holds an unsafe byte"
    );
    assert!(key.len() <= KEY_MAX, "key {key:?} is longer than {KEY_MAX}");
    assert!(
        key != "." && key != "..",
        "key {key:?} is a relative directory"
    );
    assert!(
        !key.starts_with(['-', '.']) && !key.ends_with(['-', '.']),
        "key {key:?}"
    );
    assert!(!key.contains("--"), "key {key:?} holds a run of dashes");
    assert_eq!(
        sanitize(key.as_bytes()),
        key,
        "sanitizing is not stable on {key:?}"
    );
}

pub fn ids(data: &[u8]) {
    let text = String::from_utf8_lossy(data);

    // Ticket ids and loop keys, from the raw bytes as the binary passes them.
    let key = sanitize(data);
    assert_safe_key(&key);
    assert_eq!(
        key.is_empty(),
        !data.iter().any(|b| b.is_ascii_alphanumeric() || *b == b'_')
    );
    for session in [None, Some(text.as_ref()), Some("null")] {
        let (key, _source) = loop_key(data, session, || "0badcafe".to_string());
        assert!(!key.is_empty());
        assert_safe_key(&key);
        let name = loop_file_name(&key);
        assert_eq!(key_from_file_name(&name), Some(key.as_str()));
    }
    if let Some(key) = key_from_file_name(&text) {
        assert!(!key.is_empty());
        assert_safe_key(key);
    }
    // A batch prefix only ever starts a batch id, never a path of its own: it is the key up to
    // its first `-`, so it may end in a dot.
    let prefix = batch_prefix(data);
    assert!(!prefix.is_empty() && !prefix.contains('-') && !prefix.starts_with('.'));
    assert!(prefix.bytes().all(is_key_byte), "prefix {prefix:?}");

    // Run ids and what `--resume` names: only the allowlisted alphabet, and a run id as it
    // was given.
    if let Ok(id) = RunId::parse(&text) {
        assert_eq!(id.as_str(), text);
        assert_eq!(id.to_string(), text);
        assert!(matches!(text.len(), 15 | 16));
        assert!(
            text.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b) || b == b'-')
        );
        assert_eq!(RunId::parse(id.as_str()), Ok(id));
    }
    match RunTarget::parse(&text) {
        Ok(RunTarget::Batch(batch)) => {
            assert_eq!(batch, text);
            assert!(
                batch
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(&b))
            );
            assert!(batch != "." && batch != "..");
        }
        Ok(RunTarget::Run(id)) => assert_eq!(id.as_str(), text),
        Err(e) => {
            let _ = e.to_string();
        }
    }

    // A feature pointer's directory: relative, inside the root, never the root itself.
    if let Ok(dir) = feature_dir(&text) {
        assert!(dir.is_relative());
        assert!(dir.components().next().is_some());
        assert!(
            dir.components().all(|c| matches!(c, Component::Normal(_))),
            "{text:?} gave {dir:?}"
        );
    }

    // The plan a ledger header names reads back from the header baton writes.
    if let Some(plan) = parse_header(&text) {
        assert!(!plan.is_empty());
        assert_eq!(parse_header(&render_header(plan)), Some(plan));
    }
}
