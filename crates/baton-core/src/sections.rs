//! The alignment sections of a project file (`.claude/PROJECT.md`): GOALS, SCOPE and
//! CONSTRAINTS, and a line diff to show how one changed.

/// The sections the single-run protocol re-verifies.
pub const ALIGNMENT_SECTIONS: [&str; 3] = ["GOALS", "SCOPE", "CONSTRAINTS"];

/// The text under a Markdown heading whose title is `name` (any level, case-insensitive,
/// trailing `:` allowed), up to the next heading of the same or a higher level.
pub fn section<'a>(doc: &'a str, name: &str) -> Option<&'a str> {
    let mut start = None;
    let mut level = 0;
    let mut offset = 0;
    for line in doc.split_inclusive('\n') {
        let here = offset;
        offset += line.len();
        let hashes = line.bytes().take_while(|&b| b == b'#').count();
        let is_heading = hashes > 0 && line[hashes..].starts_with([' ', '\t']);
        if let Some(begin) = start {
            if is_heading && hashes <= level {
                return Some(doc[begin..here].trim());
            }
            continue;
        }
        if is_heading
            && line[hashes..]
                .trim()
                .trim_end_matches(':')
                .eq_ignore_ascii_case(name)
        {
            start = Some(offset);
            level = hashes;
        }
    }
    start.map(|begin| doc[begin..].trim())
}

/// A small line diff (`-` removed, `+` added, ` ` kept), for showing a drifted section. Inputs
/// longer than `cap` lines are summarized instead.
pub fn line_diff(old: &str, new: &str, cap: usize) -> String {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    if a.len() > cap || b.len() > cap {
        return format!(
            "({} lines before, {} lines now: too long to diff here)\n",
            a.len(),
            b.len()
        );
    }
    // Longest common subsequence, then walk it.
    let mut lcs = vec![vec![0u32; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, String::new());
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            out.push_str(&format!("  {}\n", a[i]));
            i += 1;
            j += 1;
        } else if i < a.len() && (j == b.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            out.push_str(&format!("- {}\n", a[i]));
            i += 1;
        } else {
            out.push_str(&format!("+ {}\n", b[j]));
            j += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "# Project\n\n## GOALS\nShip it.\n\n### Detail\nstill goals\n\n## Scope:\nOnly the CLI.\n## CONSTRAINTS\nNo daemons.\n";

    #[test]
    fn sections_end_at_the_next_heading_of_their_level() {
        assert_eq!(
            section(DOC, "GOALS"),
            Some("Ship it.\n\n### Detail\nstill goals")
        );
        assert_eq!(section(DOC, "SCOPE"), Some("Only the CLI."));
        assert_eq!(section(DOC, "CONSTRAINTS"), Some("No daemons."));
        assert_eq!(section(DOC, "NON-GOALS"), None);
        assert_eq!(section("#GOALS\nnot a heading", "GOALS"), None);
    }

    #[test]
    fn diff_shows_removed_and_added_lines() {
        assert_eq!(line_diff("a\nb\nc", "a\nc\nd", 100), "  a\n- b\n  c\n+ d\n");
        assert!(line_diff("a", "b", 0).contains("too long"));
    }
}
