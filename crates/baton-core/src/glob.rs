//! Security-sensitive paths: the globs of the single-run protocol, matched against the paths a
//! plan names.

/// The protocol's default security-sensitive globs.
pub const DEFAULT_SECURITY_GLOBS: [&str; 6] = [
    "hooks/*.py",
    "lib/*security*",
    "lib/*auth*",
    "lib/*token*",
    "config/auto_approve_policy.json",
    "templates/settings.*.json",
];

/// `*` matches any run of characters but `/`, `?` one character but `/`; everything else is
/// literal.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let (p, t) = (pattern.as_bytes(), text.as_bytes());
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        match p.get(pi) {
            Some(b'*') => {
                star = Some((pi, ti));
                pi += 1;
            }
            Some(&c) if (c == b'?' && t[ti] != b'/') || c == t[ti] => {
                pi += 1;
                ti += 1;
            }
            _ => match star {
                // Let the last `*` swallow one more character, never a `/`.
                Some((sp, st)) if t[st] != b'/' => {
                    star = Some((sp, st + 1));
                    pi = sp + 1;
                    ti = st + 1;
                }
                _ => return false,
            },
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

/// The path-like words of a plan that match a glob, each once, in order of appearance. A path
/// matches when the glob matches it or any of its trailing parts (`src/hooks/guard.py` matches
/// `hooks/*.py`): over-matching only costs a critic round, under-matching would skip one.
pub fn sensitive_paths(plan: &str, globs: &[String]) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    let words = plan.split(|c: char| c.is_whitespace() || "`'\"()[]{}<>,;|".contains(c));
    for word in words {
        let word = word.trim_end_matches([':', '.']).trim_start_matches("./");
        // Plans cite code as `path:line` or `path:line:symbol` (autonomous-dev's planner
        // requires it): the path is what the glob sees.
        let word = strip_line_ref(word);
        if word.is_empty() || found.iter().any(|f| f == word) {
            continue;
        }
        let suffixes =
            std::iter::once(word).chain(word.match_indices('/').map(|(i, _)| &word[i + 1..]));
        let hit = suffixes
            .into_iter()
            .any(|s| globs.iter().any(|g| glob_match(g, s)));
        if hit {
            found.push(word.to_string());
        }
    }
    found
}

/// `hooks/guard.py:42`, `:42:check`, `:42-50`, `:L42` and `#L42-L50` as `hooks/guard.py`.
fn strip_line_ref(word: &str) -> &str {
    let is_line = |s: &str| {
        let s = s.trim_start_matches('L');
        s.bytes().next().is_some_and(|b| b.is_ascii_digit())
            && s.bytes()
                .all(|b| b.is_ascii_digit() || b == b'-' || b == b'L')
    };
    if let Some((path, anchor)) = word.split_once('#')
        && is_line(anchor)
    {
        return path;
    }
    let mut parts = word.splitn(3, ':');
    match (parts.next(), parts.next()) {
        (Some(path), Some(line)) if is_line(line) => path,
        _ => word,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defaults() -> Vec<String> {
        DEFAULT_SECURITY_GLOBS
            .iter()
            .map(|s| s.to_string())
            .collect()
    }

    #[test]
    fn glob_table() {
        let rows = [
            ("hooks/*.py", "hooks/guard.py", true),
            ("hooks/*.py", "hooks/sub/guard.py", false),
            ("hooks/*.py", "hooks/guard.pyc", false),
            ("lib/*auth*", "lib/oauth_client.rs", true),
            ("lib/*auth*", "lib/x/auth.rs", false),
            (
                "templates/settings.*.json",
                "templates/settings.local.json",
                true,
            ),
            (
                "config/auto_approve_policy.json",
                "config/auto_approve_policy.json",
                true,
            ),
            ("a?c", "abc", true),
            ("a?c", "a/c", false),
            ("*", "", true),
        ];
        for (p, t, want) in rows {
            assert_eq!(glob_match(p, t), want, "{p} ~ {t}");
        }
    }

    #[test]
    fn plans_name_sensitive_paths_in_prose_and_code() {
        let plan = "Step 2: edit `hooks/guard.py` and ./lib/token_store.py, then (src/hooks/guard.py).\nAlso README.md.";
        assert_eq!(
            sensitive_paths(plan, &defaults()),
            ["hooks/guard.py", "lib/token_store.py", "src/hooks/guard.py"]
        );
        assert!(sensitive_paths("Touch docs/guide.md only.", &defaults()).is_empty());
        let cited = "- [ ] hooks/guard.py:42 — caller\n- [ ] `lib/auth_store.py:7:login` — caller\nhooks/a.py:42-50 hooks/b.py#L42 hooks/c.py:L7";
        assert_eq!(
            sensitive_paths(cited, &defaults()),
            [
                "hooks/guard.py",
                "lib/auth_store.py",
                "hooks/a.py",
                "hooks/b.py",
                "hooks/c.py"
            ]
        );
    }
}
