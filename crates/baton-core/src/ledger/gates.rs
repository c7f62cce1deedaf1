//! Exit gates declared in a phase file: a fenced block with the info string `gates`, one gate a
//! line, `<name>: <command> → exit <code>` (`->` accepted).
//!
//! ````markdown
//! ```gates
//! tests: cargo test --workspace → exit 0
//! no-todo: ! grep -rn TODO src → exit 0
//! ```
//! ````

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GateDecl {
    pub name: String,
    pub command: String,
    pub expect_exit: i32,
}

/// The gates a phase file declares, and the lines of its `gates` blocks that do not parse.
pub fn parse_gates(markdown: &str) -> (Vec<GateDecl>, Vec<String>) {
    let (mut gates, mut bad) = (Vec::new(), Vec::new());
    let mut inside = false;
    for line in markdown.lines() {
        let trimmed = line.trim();
        if let Some(info) = trimmed.strip_prefix("```") {
            inside = !inside && info.trim() == "gates";
            continue;
        }
        if !inside || trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        match parse_gate(trimmed) {
            Some(g) => gates.push(g),
            None => bad.push(line.to_string()),
        }
    }
    (gates, bad)
}

fn parse_gate(line: &str) -> Option<GateDecl> {
    let (name, rest) = line.split_once(':')?;
    let name = name.trim();
    if name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
    {
        return None;
    }
    // The expectation is after the last arrow, so the command itself may hold arrows.
    let (command, expect) = rest
        .rsplit_once(" → ")
        .or_else(|| rest.rsplit_once(" -> "))?;
    let code = expect.trim().strip_prefix("exit ")?.trim().parse().ok()?;
    let command = command.trim();
    (!command.is_empty()).then(|| GateDecl {
        name: name.to_string(),
        command: command.to_string(),
        expect_exit: code,
    })
}

/// The phase a phase file declares: `phase-<N>.md` or `phase-<N>-<name>.md`.
pub fn phase_of_file(file_name: &str) -> Option<&str> {
    let rest = file_name.strip_prefix("phase-")?.strip_suffix(".md")?;
    let id = rest.split('-').next()?;
    (!id.is_empty() && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.')).then_some(id)
}

/// Whether `file_name` is a phase file of `phase`: `phase-<N>.md` or `phase-<N>-<anything>.md`,
/// never `phase-<N><more digits>`.
pub fn is_phase_file(file_name: &str, phase: &str) -> bool {
    let Some(rest) = file_name
        .strip_prefix("phase-")
        .and_then(|r| r.strip_prefix(phase))
    else {
        return false;
    };
    // Phase ids hold dots (`1.5`), so only `-` separates the id from a name.
    rest == ".md" || (rest.starts_with('-') && rest.ends_with(".md"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gates_blocks_are_read_and_bad_lines_kept() {
        let md = "# Phase 1\n```sh\nnot: a gate → exit 0\n```\n```gates\ntests: cargo test → exit 0\nlint: cargo clippy -- -D warnings -> exit 0\nflow: a → b | grep x → exit 1\nbroken line\n```\n";
        let (gates, bad) = parse_gates(md);
        assert_eq!(
            gates,
            [
                GateDecl {
                    name: "tests".into(),
                    command: "cargo test".into(),
                    expect_exit: 0
                },
                GateDecl {
                    name: "lint".into(),
                    command: "cargo clippy -- -D warnings".into(),
                    expect_exit: 0
                },
                GateDecl {
                    name: "flow".into(),
                    command: "a → b | grep x".into(),
                    expect_exit: 1
                },
            ]
        );
        assert_eq!(bad, ["broken line"]);
    }

    #[test]
    fn phase_files_match_their_phase_only() {
        assert!(is_phase_file("phase-1.md", "1"));
        assert!(is_phase_file("phase-1-setup.md", "1"));
        assert!(!is_phase_file("phase-10.md", "1"));
        assert!(!is_phase_file("phase-1.txt", "1"));
        assert!(is_phase_file("phase-2b-auth.md", "2b"));
        assert!(!is_phase_file("phase-1.5.md", "1"), "1.5 is another phase");
        assert!(is_phase_file("phase-1.5.md", "1.5"));
    }
}
