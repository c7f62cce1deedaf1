//! Exit gates declared in a phase file: a fenced block with the info string `gates`, one gate a
//! line, `<name>: <command> → exit <code>` (`->` accepted). ClauKit's form is read too: in
//! `plan.md`, under a `Phase <N>` heading, ``**Exit gate:** `<command>` → exit <code>``.
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

/// The gates a phase file declares, and the lines of its `gates` blocks that do not parse. A
/// block is fenced with backticks or tildes (three or more, as CommonMark allows), its info
/// string `gates`.
pub fn parse_gates(markdown: &str) -> (Vec<GateDecl>, Vec<String>) {
    let (mut gates, mut bad) = (Vec::new(), Vec::new());
    // The open fence: its character, its length, and whether it is a `gates` block.
    let mut fence: Option<(char, usize, bool)> = None;
    for line in markdown.lines() {
        let trimmed = line.trim();
        let run = |c: char| trimmed.chars().take_while(|&x| x == c).count();
        match fence {
            Some((c, n, is_gates)) => {
                if run(c) >= n && trimmed.trim_start_matches(c).trim().is_empty() {
                    fence = None;
                    continue;
                }
                if !is_gates || trimmed.is_empty() || trimmed.starts_with('#') {
                    continue;
                }
                match parse_gate(trimmed) {
                    Some(g) => gates.push(g),
                    None => bad.push(line.to_string()),
                }
            }
            None => {
                for c in ['`', '~'] {
                    let n = run(c);
                    if n >= 3 {
                        let info = trimmed[n..].trim();
                        // `GATES`, `gates title`, `{gates}`: meant as gates, not read as them.
                        if info != "gates" && info.to_ascii_lowercase().contains("gates") {
                            bad.push(format!(
                                "{line} (a gates block is fenced with the info string `gates` alone)"
                            ));
                        }
                        fence = Some((c, n, info == "gates"));
                        break;
                    }
                }
            }
        }
    }
    (gates, bad)
}

/// The exit gates a ClauKit `plan.md` declares for `phase`: in the section headed `Phase <N>`
/// (any heading level, zeros before the number allowed), every `**Exit gate:**`,
/// `**Acceptance:**` or `**Exit criteria:**` line of the form `` `<command>` → exit <code> ``.
/// Such a line whose expectation is not an exit code cannot be re-run as a gate: it comes back
/// among the unreadable lines, so the phase is never confirmed by it.
pub fn parse_plan_gates(markdown: &str, phase: &str) -> (Vec<GateDecl>, Vec<String>) {
    let (mut gates, mut bad) = (Vec::new(), Vec::new());
    // The level of the phase's own heading while inside its section.
    let mut inside: Option<usize> = None;
    for (line, heading) in outside_fences(markdown) {
        if let Some((level, title)) = heading {
            match phase_id(title) {
                Some(id) => inside = same_phase(id, phase).then_some(level),
                // Any other heading of the phase's level or higher ends its section.
                None if inside.is_some_and(|l| level <= l) => inside = None,
                None => {}
            }
            continue;
        }
        if inside.is_none() {
            continue;
        }
        let text = line.trim();
        // A bullet (`- **Acceptance:** …`) is allowed before the label.
        let text = text
            .strip_prefix("- ")
            .or_else(|| text.strip_prefix("* "))
            .unwrap_or(text)
            .trim_start();
        let Some(rest) = ["**Exit gate:**", "**Acceptance:**", "**Exit criteria:**"]
            .iter()
            .find_map(|label| text.strip_prefix(label))
        else {
            continue;
        };
        let label = if text.starts_with("**Exit gate") {
            "exit-gate"
        } else if text.starts_with("**Acceptance") {
            "acceptance"
        } else {
            "exit-criteria"
        };
        match parse_plan_gate(rest) {
            Some((command, code)) => {
                let taken = gates
                    .iter()
                    .filter(|g: &&GateDecl| g.name.starts_with(label))
                    .count();
                let name = if taken == 0 {
                    label.to_string()
                } else {
                    format!("{label}-{}", taken + 1)
                };
                gates.push(GateDecl {
                    name,
                    command,
                    expect_exit: code,
                });
            }
            None => bad.push(line.to_string()),
        }
    }
    (gates, bad)
}

/// The phases a ClauKit `plan.md` heads `Phase <N>`, leading zeros dropped.
pub fn plan_phases(markdown: &str) -> Vec<String> {
    outside_fences(markdown)
        .filter_map(|(_, heading)| heading.and_then(|(_, title)| phase_id(title)))
        .map(|id| {
            let trimmed = id.trim_start_matches('0');
            if trimmed.is_empty() { "0" } else { trimmed }.to_string()
        })
        .collect()
}

fn same_phase(id: &str, phase: &str) -> bool {
    id.trim_start_matches('0') == phase.trim_start_matches('0')
}

/// The lines of a Markdown document outside fenced code blocks (a `# Phase 2 setup` comment in
/// a shell block is no heading), each with its heading level and title when it is a heading.
fn outside_fences(markdown: &str) -> impl Iterator<Item = (&str, Option<(usize, &str)>)> {
    let mut fence: Option<(char, usize)> = None;
    markdown.lines().filter_map(move |line| {
        let trimmed = line.trim_start();
        for c in ['`', '~'] {
            let n = trimmed.chars().take_while(|&x| x == c).count();
            if n >= 3 {
                match fence {
                    None => fence = Some((c, n)),
                    Some((f, m)) if f == c && n >= m && trimmed[n..].trim().is_empty() => {
                        fence = None
                    }
                    Some(_) => {}
                }
                return None;
            }
        }
        if fence.is_some() {
            return None;
        }
        let hashes = trimmed.chars().take_while(|&c| c == '#').count();
        let heading = (1..=6)
            .contains(&hashes)
            .then(|| &trimmed[hashes..])
            .filter(|rest| rest.is_empty() || rest.starts_with([' ', '\t']))
            .map(|rest| (hashes, rest.trim()));
        Some((line, heading))
    })
}

/// The phase id of a heading title `Phase <N>…`: it starts with a digit (`Phase 1`, `Phase 02`,
/// `Phase 3.1`, `Phase 2b`), and a trailing dot (`Phase 1. Setup`) is not part of it.
fn phase_id(title: &str) -> Option<&str> {
    let word = title.get(..5)?;
    if !word.eq_ignore_ascii_case("phase") {
        return None;
    }
    let after = &title[5..];
    if !after.starts_with(char::is_whitespace) {
        return None;
    }
    let id = after.trim_start();
    if !id.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let end = id
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '.'))
        .unwrap_or(id.len());
    Some(id[..end].trim_end_matches('.')).filter(|id| !id.is_empty())
}

/// `` `<command>` → exit <code> ``: the command in backticks, the expectation after the arrow.
fn parse_plan_gate(rest: &str) -> Option<(String, i32)> {
    let rest = rest.trim();
    let inner = rest.strip_prefix('`')?;
    let close = inner.find('`')?;
    let command = inner[..close].trim();
    let after = inner[close + 1..].trim();
    let expect = after
        .strip_prefix('→')
        .or_else(|| after.strip_prefix("->"))?
        .trim();
    let code = expect
        .strip_prefix("exit")?
        .trim_start_matches([' ', '=', ':'])
        .trim_end_matches(['.', ';'])
        .trim()
        .parse()
        .ok()?;
    (!command.is_empty()).then(|| (command.to_string(), code))
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

    /// Ordinary Markdown around the phases: code blocks, other sections, headings that only
    /// start with the word.
    #[test]
    fn plan_md_headings_are_read_only_where_they_are_headings() {
        let md = "## Phase 1. Setup\n```sh\n# Phase 2 setup\n```\n**Exit gate:** `true` → exit 0\n## Risks\n**Exit gate:** `false` → exit 0\n## Phase overview\n## Phase 2\n**Exit gate:** `echo two` → exit 0\n";
        let (g1, _) = parse_plan_gates(md, "1");
        assert_eq!(
            g1.iter().map(|g| g.command.as_str()).collect::<Vec<_>>(),
            ["true"]
        );
        let (g2, _) = parse_plan_gates(md, "2");
        assert_eq!(
            g2.iter().map(|g| g.command.as_str()).collect::<Vec<_>>(),
            ["echo two"]
        );
        assert_eq!(plan_phases(md), ["1", "2"]);
    }

    #[test]
    fn tilde_and_long_fences_are_read() {
        let md = "~~~gates\na: true → exit 0\n~~~\n````gates\nb: false → exit 1\n```\nc: x → exit 0\n````\n```sh\nd: not → exit 0\n```\n";
        let (gates, bad) = parse_gates(md);
        let names: Vec<&str> = gates.iter().map(|g| g.name.as_str()).collect();
        assert_eq!(names, ["a", "b", "c"]);
        assert!(bad.iter().any(|l| l == "```"), "{bad:?}");
    }

    /// ClauKit's plan.md, as its planning references document it.
    #[test]
    fn clau_kit_exit_gates_in_plan_md() {
        let md = "# Plan\n\n## Phase 1 — greet()\n\n**Exit gate:** `node -e \"process.exit(0)\"` → exit 0\n\n## Phase 02: more\n- **Acceptance:** `npm test` → exit 0\n**Exit gate:** `npm test -- claims.test.js` → 12 pass, 0 fail\n### Phase 3\n**Exit gate:** `true` -> exit=0\n";
        let (g1, b1) = parse_plan_gates(md, "1");
        assert_eq!((g1.len(), b1.len()), (1, 0));
        assert_eq!(
            (
                g1[0].name.as_str(),
                g1[0].command.as_str(),
                g1[0].expect_exit
            ),
            ("exit-gate", "node -e \"process.exit(0)\"", 0)
        );
        let (g2, b2) = parse_plan_gates(md, "2");
        assert_eq!(
            g2.iter().map(|g| g.name.as_str()).collect::<Vec<_>>(),
            ["acceptance"]
        );
        assert_eq!(
            b2.len(),
            1,
            "an expectation that is not an exit code is not a gate baton can run"
        );
        let (g3, _) = parse_plan_gates(md, "3");
        assert_eq!(g3[0].command, "true");
        assert!(parse_plan_gates(md, "4").0.is_empty());
        assert_eq!(plan_phases(md), ["1", "2", "3"]);
        assert!(plan_phases("## Phases\n## Phase-by-phase\n").is_empty());
    }

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
