//! LOOP_KEY derivation, byte for byte as the originating ticket loop derives it, so that baton
//! and a conductor still following the prose protocol find the same file.

/// The longest key the sanitizer keeps before re-stripping the tail.
pub const KEY_MAX: usize = 64;

/// Maps every byte outside `[A-Za-z0-9._-]` to `-`, collapses runs of `-`, strips leading and
/// trailing `-` and `.`, cuts to 64 characters and strips the tail again.
///
/// It works on bytes, not characters: a multi-byte UTF-8 character, a newline or a tab is just
/// another run of unsafe bytes and becomes a single `-`.
pub fn sanitize(raw: &[u8]) -> String {
    let mut mapped = String::with_capacity(raw.len());
    for &byte in raw {
        let safe = byte.is_ascii_alphanumeric() || matches!(byte, b'.' | b'_' | b'-');
        let ch = if safe { byte as char } else { '-' };
        if ch == '-' && mapped.ends_with('-') {
            continue;
        }
        mapped.push(ch);
    }
    let is_edge = |c: char| c == '-' || c == '.';
    let trimmed = mapped.trim_matches(is_edge);
    // Every character left is ASCII, so a byte cut is a character cut.
    let cut = &trimmed[..trimmed.len().min(KEY_MAX)];
    cut.trim_end_matches(is_edge).to_string()
}

/// How a key was derived; reported by `baton loop key` so a user sees why two ids share a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeySource {
    Ticket,
    Session,
    NoSession,
}

impl KeySource {
    pub fn as_str(self) -> &'static str {
        match self {
            KeySource::Ticket => "ticket",
            KeySource::Session => "session",
            KeySource::NoSession => "nosid",
        }
    }
}

/// Derives LOOP_KEY from a raw ticket id and the session id.
///
/// `random_hex8` is called only when neither the ticket nor the session yields a key; the shell
/// passes 8 random hex digits, tests pass a fixed value.
pub fn loop_key(
    ticket: &[u8],
    session: Option<&str>,
    random_hex8: impl FnOnce() -> String,
) -> (String, KeySource) {
    let from_ticket = sanitize(ticket);
    if !from_ticket.is_empty() {
        return (from_ticket, KeySource::Ticket);
    }
    if let Some(session) = session {
        let from_session = sanitize(session.as_bytes());
        // The originating shell substitutes the literal `null` for a missing session id.
        if !from_session.is_empty() && from_session != "null" {
            return (format!("session-{from_session}"), KeySource::Session);
        }
    }
    (
        format!("session-nosid-{}", random_hex8()),
        KeySource::NoSession,
    )
}

/// The file name of a keyed loop-state file.
pub fn loop_file_name(key: &str) -> String {
    format!("loop-state-{key}.json")
}

/// The key inside a keyed loop-state file name, if the name is one baton could have written: a
/// key is always its own sanitized form, so a name with any other character (a newline that
/// would forge a line of output, say) is not a loop file.
pub fn key_from_file_name(name: &str) -> Option<&str> {
    let key = name.strip_prefix("loop-state-")?.strip_suffix(".json")?;
    (!key.is_empty() && sanitize(key.as_bytes()) == key).then_some(key)
}

/// The ticket prefix of a batch id: the key up to its first `-`, so `PROJ-12` gives `PROJ`.
pub fn batch_prefix(first_ticket: &[u8]) -> String {
    let key = sanitize(first_ticket);
    let prefix = key.split('-').next().unwrap_or_default();
    if prefix.is_empty() {
        "batch".to_string()
    } else {
        prefix.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(ticket: &[u8], session: Option<&str>) -> String {
        loop_key(ticket, session, || "0badcafe".to_string()).0
    }

    #[test]
    fn sanitize_table() {
        let rows: &[(&[u8], &str)] = &[
            (b"PROJ-123", "PROJ-123"),
            (b"PROJ/123", "PROJ-123"),
            (b"proj 12 / fix", "proj-12-fix"),
            (b"a--b", "a-b"),
            (b"a//b", "a-b"),
            (b"--.a.--", "a"),
            (b"..hidden", "hidden"),
            (b"v1.2.", "v1.2"),
            (b"tab\there", "tab-here"),
            (b"new\nline", "new-line"),
            ("caf\u{e9}-1".as_bytes(), "caf-1"),
            ("\u{1f600}x".as_bytes(), "x"),
            (b"under_score", "under_score"),
            (b"../../etc/passwd", "etc-passwd"),
            (b"", ""),
            (b"///", ""),
            (b"-.-", ""),
            (&[0xff, 0xfe, b'A'], "A"),
        ];
        for (raw, want) in rows {
            assert_eq!(
                sanitize(raw),
                *want,
                "sanitize({:?})",
                String::from_utf8_lossy(raw)
            );
        }
    }

    #[test]
    fn sanitize_cuts_to_64_then_strips_the_tail_again() {
        let long = format!("{}-tail", "a".repeat(63));
        // 63 a's, then '-' at position 64 is cut off... the cut keeps 64 chars: 63 a's and '-'.
        assert_eq!(sanitize(long.as_bytes()), "a".repeat(63));
        let dots = format!("{}..{}", "b".repeat(62), "c".repeat(10));
        assert_eq!(sanitize(dots.as_bytes()), "b".repeat(62));
        let exact = "x".repeat(80);
        assert_eq!(sanitize(exact.as_bytes()), "x".repeat(64));
        assert!(sanitize("é".repeat(100).as_bytes()).is_empty());
    }

    #[test]
    fn key_falls_through_ticket_session_nosid() {
        assert_eq!(key(b"PROJ-1", Some("abc")), "PROJ-1");
        assert_eq!(key(b"", Some("d44d7af5-c943")), "session-d44d7af5-c943");
        assert_eq!(key(b"///", Some("s/1")), "session-s-1");
        assert_eq!(key(b"", Some("null")), "session-nosid-0badcafe");
        assert_eq!(key(b"", Some("")), "session-nosid-0badcafe");
        assert_eq!(key(b"", Some("///")), "session-nosid-0badcafe");
        assert_eq!(key(b"", None), "session-nosid-0badcafe");
        // The session is sanitized (and cut) before the prefix is added.
        let long_session = "s".repeat(70);
        assert_eq!(
            key(b"", Some(&long_session)),
            format!("session-{}", "s".repeat(64))
        );
        // `null` is only special as the whole id.
        assert_eq!(key(b"", Some("nullable")), "session-nullable");
    }

    #[test]
    fn file_names_round_trip_and_never_name_the_legacy_file() {
        assert_eq!(loop_file_name("PROJ-1"), "loop-state-PROJ-1.json");
        assert_eq!(key_from_file_name("loop-state-PROJ-1.json"), Some("PROJ-1"));
        assert_eq!(key_from_file_name("loop-state.json"), None);
        assert_eq!(key_from_file_name("loop-state-.json"), None);
        assert_eq!(key_from_file_name("batch-state.json"), None);
    }

    #[test]
    fn batch_prefix_takes_the_key_up_to_the_first_dash() {
        assert_eq!(batch_prefix(b"PROJ-12"), "PROJ");
        assert_eq!(batch_prefix(b"solo"), "solo");
        assert_eq!(batch_prefix(b"///"), "batch");
    }

    proptest::proptest! {
        #[test]
        fn keys_are_safe_path_components(raw in proptest::collection::vec(proptest::num::u8::ANY, 0..200),
                                         session in proptest::option::of(".{0,80}")) {
            let (k, _) = loop_key(&raw, session.as_deref(), || "0badcafe".to_string());
            proptest::prop_assert!(!k.is_empty());
            proptest::prop_assert!(k.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b)));
            proptest::prop_assert!(!k.starts_with('.') && !k.starts_with('-'));
            proptest::prop_assert!(!k.ends_with('.') && !k.ends_with('-'));
            proptest::prop_assert!(k.len() <= "session-".len() + KEY_MAX);
            let name = loop_file_name(&k);
            proptest::prop_assert_eq!(key_from_file_name(&name), Some(k.as_str()));
        }

        #[test]
        fn sanitize_is_idempotent(raw in proptest::collection::vec(proptest::num::u8::ANY, 0..200)) {
            let once = sanitize(&raw);
            proptest::prop_assert_eq!(sanitize(once.as_bytes()), once);
        }
    }
}
