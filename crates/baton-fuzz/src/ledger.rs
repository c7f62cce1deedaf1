//! A plan's ledger (`STATE.md`): one event line, and a whole ledger with its header.

use baton_core::ledger::{
    DeriveFacts, Ledger, PhaseFacts, decide_ledger, parse_header, parse_ledger, parse_line,
    phase_claims, render_header, render_line,
};

/// The bytes as a ledger's text, read as the binary reads it (lossily: a ledger is a text file
/// that git may have merged).
pub fn ledger(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    line(&text);
    whole(&text);
}

/// One line: an event that parses renders to its canonical form, and that form parses back to
/// the same event. The canonical form is what baton appends, so it must be a fixed point.
fn line(text: &str) {
    let Ok(parsed) = parse_line(text) else {
        return;
    };
    let rendered = render_line(&parsed);
    assert!(!rendered.contains('\n'), "an event renders to one line");
    let again = parse_line(&rendered)
        .unwrap_or_else(|e| panic!("the rendering {rendered:?} of {text:?} does not parse: {e}"));
    assert_eq!(parsed, again, "{text:?} rendered as {rendered:?}");
}

/// A whole ledger: every non-blank line after the header is an event or a bad line; the
/// events written out again in their order (what a rewrite would hold) read back as the same
/// events; and deriving verdicts over it returns.
fn whole(text: &str) {
    let ledger = parse_ledger(text);
    let counted = text
        .lines()
        .enumerate()
        .filter(|(i, l)| !(l.trim().is_empty() || (*i == 0 && parse_header(l).is_some())))
        .count();
    assert_eq!(
        ledger.events.len() + ledger.bad.len(),
        counted,
        "a line was lost"
    );

    let mut rewritten = String::new();
    if let Some(plan) = &ledger.plan {
        rewritten.push_str(&render_header(plan));
        rewritten.push('\n');
    }
    for (_, line) in &ledger.events {
        rewritten.push_str(&render_line(line));
        rewritten.push('\n');
    }
    let again = parse_ledger(&rewritten);
    assert_eq!(again.plan, ledger.plan, "the header's plan changed");
    assert!(
        again.bad.is_empty(),
        "a rewritten ledger has bad lines: {:?}",
        again.bad
    );
    let events = |l: &Ledger| l.events.iter().map(|(_, e)| e.clone()).collect::<Vec<_>>();
    assert_eq!(
        events(&again),
        events(&ledger),
        "the events changed through a rewrite"
    );

    derive(&ledger);
}

fn derive(ledger: &Ledger) {
    let claims = phase_claims(ledger);
    let _ = decide_ledger(ledger, &DeriveFacts::default());
    let mut facts = DeriveFacts {
        declared: claims.iter().map(|(p, _, _)| p.clone()).collect(),
        tree_dirty: true,
        commits_since_base: vec!["abc1234".into()],
        ..DeriveFacts::default()
    };
    for (i, (phase, _, _)) in claims.iter().enumerate() {
        let known = i % 2 == 0;
        facts.phases.insert(
            phase.clone(),
            PhaseFacts {
                commits_reachable: Some(known),
                commit_known: Some(known),
                from_known: Some(!known),
                no_commits: Some(!known),
                unreadable_gates: i % 3,
                gates: Some(vec![("tests".into(), known, "exit 0: ok".into())]),
            },
        );
    }
    let derived = decide_ledger(ledger, &facts);
    assert!(derived.confirmed as usize <= derived.rows.len());
}
