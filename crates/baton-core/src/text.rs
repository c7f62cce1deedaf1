//! Strings read from state files, made safe to print. A ticket id, a session id or a path in a
//! file is input from whoever wrote the file: printed raw, a newline in it could forge a
//! `verdict:` or `next:` line of baton's own output.

use std::borrow::Cow;

/// `raw` with every control character escaped as Rust writes it (`\n`, `\t`, `\u{1b}`), and
/// everything else untouched. Free of control characters, it is returned as is.
pub fn esc(raw: &str) -> Cow<'_, str> {
    if !raw.chars().any(char::is_control) {
        return Cow::Borrowed(raw);
    }
    let mut out = String::with_capacity(raw.len() + 8);
    for c in raw.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Names read from state files or git, each escaped, joined with `, ` for one line of text.
pub fn esc_join<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    names
        .into_iter()
        .map(|n| esc(n).into_owned())
        .collect::<Vec<_>>()
        .join(", ")
}

/// `esc` of an optional field, with a word for its absence instead of `null`.
pub fn esc_or<'a>(raw: Option<&'a str>, absent: &'a str) -> Cow<'a, str> {
    raw.map_or(Cow::Borrowed(absent), esc)
}

/// Quotes an argument for a command line shown to the user, only when it needs it.
pub fn shell_quote(arg: &str) -> String {
    let plain = !arg.is_empty()
        && arg
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-/:=@+,".contains(&b));
    if plain {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }
}

/// One run of a key: digits or everything else. Digits compare as numbers.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum KeyRun {
    Text(String),
    /// Its digits without leading zeros: the shorter is the smaller, then the digits decide.
    Number(usize, String),
}

/// A key as a person orders keys: `PROJ-2` before `PROJ-10`. Sort by it with
/// `sort_by_cached_key(|k| natural_key(k))`.
pub fn natural_key(key: &str) -> Vec<KeyRun> {
    let mut runs = Vec::new();
    let mut rest = key;
    while let Some(c) = rest.chars().next() {
        let digit = c.is_ascii_digit();
        let end = rest
            .find(|x: char| x.is_ascii_digit() != digit)
            .unwrap_or(rest.len());
        let (run, tail) = rest.split_at(end);
        runs.push(if digit {
            let n = run.trim_start_matches('0');
            KeyRun::Number(n.len(), n.to_string())
        } else {
            KeyRun::Text(run.to_string())
        });
        rest = tail;
    }
    runs
}

/// `text` with every UUID in it (a session id, as the clients make them) cut to its first 8
/// characters and `…`, which tell sessions apart: how text shows a reason or a next step
/// (`--json` has them whole). A UUID in a path, a file name or a key (after `/` or `-`, or
/// followed by `.`, `/` or `-`: `session-<id>`, `<id>.jsonl`) is left whole.
pub fn short_sessions(text: &str) -> Cow<'_, str> {
    const SHAPE: [usize; 5] = [8, 4, 4, 4, 12];
    let bytes = text.as_bytes();
    let is_uuid_at = |at: usize| {
        let mut i = at;
        for (n, len) in SHAPE.iter().enumerate() {
            if n > 0 {
                if bytes.get(i) != Some(&b'-') {
                    return false;
                }
                i += 1;
            }
            let run = bytes.get(i..i + len);
            if !run.is_some_and(|r| r.iter().all(u8::is_ascii_hexdigit)) {
                return false;
            }
            i += len;
        }
        true
    };
    let word = |b: Option<&u8>| b.is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_');
    let mut out = String::new();
    let mut copied = 0;
    let mut at = 0;
    while at + 36 <= bytes.len() {
        let before = at.checked_sub(1).and_then(|i| bytes.get(i));
        let after = bytes.get(at + 36);
        if is_uuid_at(at)
            && !word(before)
            && !matches!(before, Some(b'/' | b'-'))
            && !word(after)
            && !matches!(after, Some(b'.' | b'/' | b'-'))
        {
            out.push_str(&text[copied..at + 8]);
            out.push('…');
            copied = at + 36;
            at = copied;
        } else {
            at += 1;
        }
    }
    if copied == 0 {
        return Cow::Borrowed(text);
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn session_ids_are_cut_short_in_text_but_not_in_paths() {
        let id = "3f9c2b1e-7d4a-4c1b-9e2f-8a6b5c4d3e21";
        assert_eq!(
            short_sessions(&format!("owned by live session {id} (last write 1s ago)")),
            "owned by live session 3f9c2b1e… (last write 1s ago)"
        );
        assert_eq!(short_sessions(&format!("{id},{id}")), "3f9c2b1e…,3f9c2b1e…");
        for whole in [
            format!("~/.claude/projects/-tmp/{id}.jsonl"),
            format!("session-{id}x"),
            format!("baton resume accept session-{id}"),
            format!("{id}.json"),
            "no id here, s1".to_string(),
            "3f9c2b1e-7d4a-4c1b-9e2f-8a6b5c4d3e2".to_string(),
        ] {
            assert_eq!(short_sessions(&whole), whole);
        }
    }

    use super::*;

    #[test]
    fn control_characters_cannot_start_a_line() {
        assert_eq!(esc("PROJ-1"), "PROJ-1");
        assert_eq!(
            esc("PROJ-1\nverdict: none\r\t\u{1b}[31m"),
            r"PROJ-1\nverdict: none\r\t\u{1b}[31m"
        );
        assert_eq!(esc("ünïcode/ok"), "ünïcode/ok");
        assert_eq!(esc_or(None, "none"), "none");
        assert_eq!(esc_join(["a", "b\nc"]), r"a, b\nc");
    }

    #[test]
    fn keys_sort_in_natural_order() {
        let mut keys = [
            "PROJ-10",
            "PROJ-2",
            "PROJ-1",
            "PROJ-002a",
            "A",
            "PROJ-100",
            "B-9",
        ];
        keys.sort_by_key(|k| natural_key(k));
        assert_eq!(
            keys,
            [
                "A",
                "B-9",
                "PROJ-1",
                "PROJ-2",
                "PROJ-002a",
                "PROJ-10",
                "PROJ-100"
            ]
        );
    }
}
