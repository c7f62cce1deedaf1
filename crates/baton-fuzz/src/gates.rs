//! Gate declarations: the `gates` blocks of a phase file, the exit gates of a `plan.md`, and
//! the phase file names they are found by.

use baton_core::ledger::gates::{
    GateDecl, is_phase_file, parse_gates, parse_plan_gates, phase_of_file, plan_phases,
};

/// The bytes as a phase file, as a `plan.md`, and as a file name.
pub fn gates(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    phase_file(&text);
    plan_md(&text);
    file_name(&text);
}

/// Every gate read has a name in the safe alphabet and a command; written back as a `gates`
/// block, the gates read back the same, with no bad line.
fn phase_file(text: &str) {
    let (gates, _bad) = parse_gates(text);
    for g in &gates {
        assert!(
            !g.name.is_empty()
                && g.name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b)),
            "gate name {:?}",
            g.name
        );
        assert!(
            !g.command.trim().is_empty(),
            "gate {:?} has no command",
            g.name
        );
    }
    let mut block = String::from("```gates\n");
    for g in &gates {
        block.push_str(&format!(
            "{}: {} → exit {}\n",
            g.name, g.command, g.expect_exit
        ));
    }
    block.push_str("```\n");
    let (again, bad) = parse_gates(&block);
    assert!(
        bad.is_empty(),
        "a written gates block has bad lines: {bad:?}"
    );
    assert_eq!(again, gates, "gates changed through a rewrite");
}

/// For every phase the plan heads (and one it may not), the exit gates read have a command and
/// a name; written back under a `Phase` heading, the same commands and codes read back.
fn plan_md(text: &str) {
    let mut phases = plan_phases(text);
    phases.truncate(8);
    phases.push("1".into());
    for phase in &phases {
        let (gates, _bad) = parse_plan_gates(text, phase);
        for g in &gates {
            assert!(!g.command.is_empty() && !g.command.contains('`'));
            assert!(!g.name.is_empty());
        }
        // `plan_phases` drops leading zeros (`Phase 0b` is phase `b`), and a heading's phase
        // starts with a digit: one zero in front keeps the heading a phase heading.
        let mut plan = format!("## Phase 0{phase}\n\n");
        for g in &gates {
            plan.push_str(&format!(
                "**Exit gate:** `{}` → exit {}\n",
                g.command, g.expect_exit
            ));
        }
        let (again, bad) = parse_plan_gates(&plan, phase);
        assert!(bad.is_empty(), "a written plan has bad gate lines: {bad:?}");
        let pairs = |gs: &[GateDecl]| {
            gs.iter()
                .map(|g| (g.command.clone(), g.expect_exit))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            pairs(&again),
            pairs(&gates),
            "plan gates changed through a rewrite"
        );
    }
}

/// A phase file name gives a phase id of letters, digits and dots, and that name is a file of
/// that phase.
fn file_name(text: &str) {
    let Some(phase) = phase_of_file(text) else {
        return;
    };
    assert!(
        !phase.is_empty()
            && phase
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'.')
    );
    assert!(
        is_phase_file(text, phase),
        "{text:?} is not a file of its own phase {phase:?}"
    );
}
