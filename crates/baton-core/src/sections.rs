//! The alignment sections of a project file (`.claude/PROJECT.md`): GOALS, SCOPE and
//! CONSTRAINTS, and a line diff to show how one changed.

/// The sections the single-run protocol re-verifies.
pub const ALIGNMENT_SECTIONS: [&str; 3] = ["GOALS", "SCOPE", "CONSTRAINTS"];

/// Every heading that opens an alignment section (ARCHITECTURE too: it ends the others).
const SECTION_NAMES: [&str; 4] = ["GOALS", "SCOPE", "CONSTRAINTS", "ARCHITECTURE"];

/// The section name a line opens, read the way autonomous-dev's alignment classifier reads it:
/// `#` to `###`, optional blanks, the name (any case) as a whole word, then anything
/// (`## GOALS ⭐`, `## SCOPE (MoSCoW)`).
fn opens(line: &str) -> Option<&'static str> {
    let hashes = line.bytes().take_while(|&b| b == b'#').count();
    if !(1..=3).contains(&hashes) {
        return None;
    }
    let rest = line[hashes..].trim_start_matches([' ', '\t']);
    SECTION_NAMES.into_iter().find(|name| {
        rest.get(..name.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(name))
            && !rest[name.len()..]
                .chars()
                .next()
                .is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

/// The text of the section `name`: from its heading to the next heading that opens any
/// alignment section (other headings stay inside it), repeated sections joined in order, as
/// autonomous-dev merges them. `None` when no heading opens it.
pub fn section(doc: &str, name: &str) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    let mut current: Option<(&str, usize)> = None;
    let mut offset = 0;
    for line in doc.split_inclusive('\n') {
        let here = offset;
        offset += line.len();
        if let Some(opened) = opens(line.trim_end_matches(['\n', '\r'])) {
            if let Some((open, begin)) = current.take()
                && open.eq_ignore_ascii_case(name)
            {
                parts.push(&doc[begin..here]);
            }
            current = Some((opened, offset));
        }
    }
    if let Some((open, begin)) = current
        && open.eq_ignore_ascii_case(name)
    {
        parts.push(&doc[begin..]);
    }
    (!parts.is_empty()).then(|| {
        parts
            .iter()
            .map(|p| p.trim())
            .collect::<Vec<_>>()
            .join("\n")
            .trim()
            .to_string()
    })
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

    const DOC: &str = "# Project\n\n## GOALS ⭐\nShip it.\n\n### Detail\nstill goals\n## Other\ntext\n\n## SCOPE (MoSCoW)\nOnly the CLI.\n#### CONSTRAINTS deep\nnot a heading\n## CONSTRAINTS\nNo daemons.\n# goals\nMore goals.\n## ARCHITECTURE\nA box.\n";

    /// As autonomous-dev's classifier: `#` to `###`, decorations after the name, sections end
    /// at the next alignment heading, repeats merged.
    #[test]
    fn sections_are_read_as_autonomous_dev_reads_them() {
        assert_eq!(
            section(DOC, "GOALS").as_deref(),
            Some("Ship it.\n\n### Detail\nstill goals\n## Other\ntext\nMore goals.")
        );
        assert_eq!(
            section(DOC, "SCOPE").as_deref(),
            Some("Only the CLI.\n#### CONSTRAINTS deep\nnot a heading")
        );
        assert_eq!(section(DOC, "CONSTRAINTS").as_deref(), Some("No daemons."));
        assert_eq!(section(DOC, "NON-GOALS"), None);
        assert_eq!(section("## GOALS_X\nno", "GOALS"), None);
        assert_eq!(section("## Project Goals\nno", "GOALS"), None);
        assert_eq!(section("#GOALS\nyes", "GOALS").as_deref(), Some("yes"));
    }

    #[test]
    fn diff_shows_removed_and_added_lines() {
        assert_eq!(line_diff("a\nb\nc", "a\nc\nd", 100), "  a\n- b\n  c\n+ d\n");
        assert!(line_diff("a", "b", 0).contains("too long"));
    }
}
