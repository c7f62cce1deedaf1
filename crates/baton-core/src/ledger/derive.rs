//! Re-deriving a run's true position from its ledger, git and re-run gates. The ledger's claims
//! are never trusted: a phase is CONFIRMED only when its commits are still on HEAD and its
//! gates pass now.

use std::collections::BTreeMap;

use serde::Serialize;

use super::grammar::{Event, Ledger};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum PhaseVerdict {
    /// Claimed complete, commits reachable, every declared gate passes now.
    Confirmed,
    /// Claimed complete, but nothing can confirm or refute it (no gates declared, or gates not
    /// re-run).
    Stale,
    /// Claimed complete, but a gate fails now or its commits are gone: re-opened.
    Contradicted,
    /// Never claimed complete: the work is still open.
    Open,
}

impl PhaseVerdict {
    pub fn as_str(self) -> &'static str {
        match self {
            PhaseVerdict::Confirmed => "CONFIRMED",
            PhaseVerdict::Stale => "STALE",
            PhaseVerdict::Contradicted => "CONTRADICTED",
            PhaseVerdict::Open => "OPEN",
        }
    }
}

/// What the shell found out about one phase.
#[derive(Debug, Clone, Default)]
pub struct PhaseFacts {
    /// Whether the `complete` event's last commit is reachable from HEAD; `None` if unknown.
    pub commits_reachable: Option<bool>,
    /// Whether that commit exists in the repository at all.
    pub commit_known: Option<bool>,
    /// Whether the range's first commit exists: an unknown start is as wrong as an unknown end.
    pub from_known: Option<bool>,
    /// Whether the claimed range holds no commit (`X..X`, or nothing between its ends): the
    /// phase claims no committed work.
    pub no_commits: Option<bool>,
    /// Declared gate lines that could not be read: a phase with one is never confirmed.
    pub unreadable_gates: usize,
    /// Gate re-runs (name, passed, evidence); `None` when gates were not re-run. An empty list
    /// means none are declared.
    pub gates: Option<Vec<(String, bool, String)>>,
}

#[derive(Debug, Clone, Default)]
pub struct DeriveFacts {
    pub phases: BTreeMap<String, PhaseFacts>,
    /// Phases the plan's phase files declare, in order; those the ledger never names are open
    /// work too, and may be the resume point.
    pub declared: Vec<String>,
    pub tree_dirty: bool,
    /// `git log --oneline <base>..HEAD`, newest first.
    pub commits_since_base: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct PhaseRow {
    pub phase: String,
    /// The ledger's last word on the phase.
    pub claim: String,
    /// The gate re-run, as shown in the table.
    pub gates: String,
    pub verdict: PhaseVerdict,
    /// The rule that decided the verdict.
    pub rule: crate::Rule,
    pub why: String,
    /// Beside a failing gate: the recorded baseline, and whether the failures now are within it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Derived {
    pub rows: Vec<PhaseRow>,
    /// The first phase not CONFIRMED; `None` when every phase is.
    pub resume_at: Option<String>,
    pub confirmed: u64,
    /// The claimed position: the ledger's last event.
    pub claimed: Option<String>,
    pub tree_dirty: bool,
}

/// The failures a test count states: `41/42` (one failing), `3 failed`, `2 fail`, `4 failures`.
pub fn failures_in(text: &str) -> Option<u64> {
    let words: Vec<&str> = text
        .split(|c: char| c.is_whitespace() || ",;()".contains(c))
        .filter(|w| !w.is_empty())
        .collect();
    for (i, w) in words.iter().enumerate() {
        let next = words.get(i + 1).copied().unwrap_or_default();
        if let Ok(n) = w.parse::<u64>()
            && (next.starts_with("fail") || next.starts_with("failed"))
        {
            return Some(n);
        }
    }
    words.iter().find_map(|w| {
        let (a, b) = w.split_once('/')?;
        let (a, b) = (a.parse::<u64>().ok()?, b.parse::<u64>().ok()?);
        (a <= b).then_some(b - a)
    })
}

/// The recorded baseline, beside the evidence of failing gates: how many failed before the
/// first edit, and whether the failures now are within that.
fn baseline_note(ledger: &Ledger, evidence: &[&str]) -> Option<String> {
    let (tests, sha) = ledger
        .events
        .iter()
        .rev()
        .find_map(|(_, l)| match &l.event {
            Event::Baseline { tests, sha } => Some((tests, sha)),
            _ => None,
        })?;
    let before = failures_in(tests)?;
    let mut note = format!("baseline {tests} ({sha}): {before} failing before the first edit");
    if let Some(now) = evidence.iter().filter_map(|e| failures_in(e)).max() {
        note.push_str(&if now <= before {
            format!("; {now} failing now, within the baseline: inherited, not a regression")
        } else {
            format!("; {now} failing now, more than the baseline: a regression")
        });
    }
    Some(note)
}

/// The phases in the order the ledger first names them, with the ledger's claim for each and
/// its standing `complete` event, if any.
pub fn phase_claims(ledger: &Ledger) -> Vec<(String, Option<&Event>, String)> {
    let mut order: Vec<&str> = Vec::new();
    let mut complete: BTreeMap<&str, &Event> = BTreeMap::new();
    let mut last: BTreeMap<&str, &'static str> = BTreeMap::new();
    for (_, line) in &ledger.events {
        let Some(phase) = line.event.phase() else {
            continue;
        };
        if !last.contains_key(phase) {
            order.push(phase);
        }
        match &line.event {
            Event::Complete { .. } => {
                complete.insert(phase, &line.event);
                last.insert(phase, "complete");
            }
            // Evidence, findings, waivers and resumes do not change what is claimed.
            Event::Gate { .. }
            | Event::Resumed { .. }
            | Event::Parked { .. }
            | Event::Waiver { .. } => {
                last.entry(phase).or_insert("started");
            }
            // A block, a new start or a dead agent after `complete` re-opens the phase.
            other => {
                complete.remove(phase);
                last.insert(
                    phase,
                    if matches!(other, Event::Blocked { .. }) {
                        "BLOCKED"
                    } else {
                        other.kind()
                    },
                );
            }
        }
    }
    order
        .into_iter()
        .map(|p| {
            (
                p.to_string(),
                complete.get(p).copied(),
                last.get(p).copied().unwrap_or("started").to_string(),
            )
        })
        .collect()
}

pub fn decide_ledger(ledger: &Ledger, facts: &DeriveFacts) -> Derived {
    let mut rows = Vec::new();
    let claims = phase_claims(ledger);
    for (phase, complete, claim) in &claims {
        let f = facts.phases.get(phase).cloned().unwrap_or_default();
        let gates_text = match &f.gates {
            None => "not run".to_string(),
            Some(g) if g.is_empty() => "none declared".to_string(),
            Some(g) => g
                .iter()
                .map(|(n, pass, _)| format!("{n} {}", if *pass { "PASS" } else { "FAIL" }))
                .collect::<Vec<_>>()
                .join(", "),
        };
        let (verdict, rule, why) = match complete {
            Some(Event::Complete { from, to, .. }) => {
                let failing: Vec<&str> = f
                    .gates
                    .iter()
                    .flatten()
                    .filter(|g| !g.1)
                    .map(|g| g.0.as_str())
                    .collect();
                if f.commit_known == Some(false) || f.from_known == Some(false) {
                    let unknown = if f.commit_known == Some(false) {
                        to
                    } else {
                        from
                    };
                    (
                        PhaseVerdict::Contradicted,
                        crate::Rule::LedgerUnknownCommit,
                        format!("commit {unknown} does not exist in this repository"),
                    )
                } else if f.commits_reachable == Some(false) {
                    (
                        PhaseVerdict::Contradicted,
                        crate::Rule::LedgerCommitsUnreachable,
                        format!(
                            "commit {to} is not reachable from HEAD: the history was rewritten"
                        ),
                    )
                } else if !failing.is_empty() {
                    (
                        PhaseVerdict::Contradicted,
                        crate::Rule::LedgerGateFails,
                        format!("gate {} fails now", failing.join(", ")),
                    )
                } else if f.no_commits == Some(true) {
                    (
                        PhaseVerdict::Stale,
                        crate::Rule::LedgerNoCommits,
                        format!(
                            "it claims the range {from}..{to}, which holds no commit: a gate that passes on uncommitted files confirms no committed work"
                        ),
                    )
                } else if f.unreadable_gates > 0 {
                    (
                        PhaseVerdict::Stale,
                        crate::Rule::LedgerGateUnreadable,
                        format!(
                            "{} of its declared gate lines could not be read, so its gates cannot all be re-run",
                            f.unreadable_gates
                        ),
                    )
                } else {
                    match &f.gates {
                        // Gates that pass beside uncommitted changes may pass because of them.
                        Some(g)
                            if !g.is_empty()
                                && f.commits_reachable == Some(true)
                                && facts.tree_dirty =>
                        {
                            (
                                PhaseVerdict::Stale,
                                crate::Rule::LedgerDirtyTree,
                                "its gates pass, but on a tree with uncommitted changes they may pass because of them: commit or stash the changes and derive again".into(),
                            )
                        }
                        Some(g) if !g.is_empty() && f.commits_reachable == Some(true) => (
                            PhaseVerdict::Confirmed,
                            crate::Rule::LedgerConfirmed,
                            "its commits are on HEAD and every gate passes now".into(),
                        ),
                        Some(g) if !g.is_empty() => (
                            PhaseVerdict::Stale,
                            crate::Rule::LedgerCommitsUnchecked,
                            "its gates pass but its commits could not be checked".into(),
                        ),
                        Some(_) => (
                            PhaseVerdict::Stale,
                            crate::Rule::LedgerNoGates,
                            "no gates declared: the claim can be neither confirmed nor refuted"
                                .into(),
                        ),
                        None => (
                            PhaseVerdict::Stale,
                            crate::Rule::LedgerGatesNotRun,
                            "gates not re-run: the claim can be neither confirmed nor refuted"
                                .into(),
                        ),
                    }
                }
            }
            _ => (
                PhaseVerdict::Open,
                crate::Rule::LedgerOpen,
                format!("the ledger says {claim}, not complete"),
            ),
        };
        // A failing gate beside the baseline: inherited breakage, or a regression.
        let baseline = (rule == crate::Rule::LedgerGateFails)
            .then(|| {
                let evidence: Vec<&str> = f
                    .gates
                    .iter()
                    .flatten()
                    .filter(|g| !g.1)
                    .map(|g| g.2.as_str())
                    .collect();
                baseline_note(ledger, &evidence)
            })
            .flatten();
        let why = match &baseline {
            Some(note) => format!("{why}; {note}"),
            None => why,
        };
        rows.push(PhaseRow {
            phase: phase.clone(),
            claim: claim.clone(),
            gates: gates_text,
            verdict,
            rule,
            why,
            baseline,
        });
    }
    for phase in &facts.declared {
        if !claims.iter().any(|(p, _, _)| p == phase) {
            rows.push(PhaseRow {
                phase: phase.clone(),
                claim: "not started".into(),
                gates: "not run".into(),
                verdict: PhaseVerdict::Open,
                rule: crate::Rule::LedgerNotStarted,
                why: "a phase file declares it; the ledger never names it".into(),
                baseline: None,
            });
        }
    }
    let confirmed = rows
        .iter()
        .filter(|r| r.verdict == PhaseVerdict::Confirmed)
        .count() as u64;
    let resume_at = rows
        .iter()
        .find(|r| r.verdict != PhaseVerdict::Confirmed)
        .map(|r| r.phase.clone());
    let claimed = ledger
        .events
        .last()
        .map(|(_, l)| super::grammar::render_line(l));
    Derived {
        rows,
        resume_at,
        confirmed,
        claimed,
        tree_dirty: facts.tree_dirty,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::parse_ledger;

    const LEDGER: &str = "# run-state — plan: plans/x\n\
phase 1: started (base aaaaaaa)\n\
phase 1: complete (commits aaaaaaa..bbbbbbb, tests 3/3, review clean)\n\
phase 2: started (base bbbbbbb)\n\
phase 2: complete (commits bbbbbbb..ccccccc, tests 4/4, review clean)\n\
phase 3: started (base ccccccc)\n";

    fn facts(p1: PhaseFacts, p2: PhaseFacts) -> DeriveFacts {
        DeriveFacts {
            phases: BTreeMap::from([("1".into(), p1), ("2".into(), p2)]),
            ..Default::default()
        }
    }

    fn passing() -> PhaseFacts {
        PhaseFacts {
            commits_reachable: Some(true),
            commit_known: Some(true),
            from_known: Some(true),
            no_commits: Some(false),
            gates: Some(vec![("tests".into(), true, "exit 0".into())]),
            ..PhaseFacts::default()
        }
    }

    /// One row per verdict rule of the derivation.
    #[test]
    fn derive_table() {
        let l = parse_ledger(LEDGER);
        let verdicts = |d: &Derived| d.rows.iter().map(|r| r.verdict).collect::<Vec<_>>();
        use PhaseVerdict::*;

        let all_good = decide_ledger(&l, &facts(passing(), passing()));
        assert_eq!(verdicts(&all_good), [Confirmed, Confirmed, Open]);
        assert_eq!(
            (all_good.resume_at.as_deref(), all_good.confirmed),
            (Some("3"), 2)
        );

        let gate_fails = PhaseFacts {
            gates: Some(vec![("tests".into(), false, "exit 1".into())]),
            ..passing()
        };
        let d = decide_ledger(&l, &facts(passing(), gate_fails));
        assert_eq!(verdicts(&d), [Confirmed, Contradicted, Open]);
        assert_eq!(d.resume_at.as_deref(), Some("2"));

        let rewritten = PhaseFacts {
            commits_reachable: Some(false),
            ..passing()
        };
        assert_eq!(
            verdicts(&decide_ledger(&l, &facts(passing(), rewritten))),
            [Confirmed, Contradicted, Open]
        );

        let no_gates = PhaseFacts {
            gates: Some(vec![]),
            ..passing()
        };
        assert_eq!(
            verdicts(&decide_ledger(&l, &facts(passing(), no_gates))),
            [Confirmed, Stale, Open]
        );

        let not_run = PhaseFacts {
            gates: None,
            ..passing()
        };
        let d = decide_ledger(&l, &facts(not_run.clone(), not_run));
        assert_eq!(verdicts(&d), [Stale, Stale, Open]);
        assert_eq!(
            d.resume_at.as_deref(),
            Some("1"),
            "nothing confirmed: resume at the first phase"
        );
    }

    #[test]
    fn declared_phases_the_ledger_never_names_are_open_and_can_be_the_resume_point() {
        let l = parse_ledger(LEDGER.trim_end_matches("phase 3: started (base ccccccc)\n"));
        let mut f = facts(passing(), passing());
        f.declared = vec!["1".into(), "2".into(), "3".into()];
        let d = decide_ledger(&l, &f);
        assert_eq!(d.resume_at.as_deref(), Some("3"));
        assert_eq!(d.rows[2].rule, "ledger.not-started");
    }

    #[test]
    fn an_unknown_commit_is_not_called_a_rewrite() {
        let l = parse_ledger(LEDGER);
        let unknown = PhaseFacts {
            commit_known: Some(false),
            commits_reachable: Some(false),
            ..passing()
        };
        let d = decide_ledger(&l, &facts(unknown, passing()));
        assert_eq!(d.rows[0].rule, "ledger.unknown-commit");
    }

    /// Claims git cannot back: an unknown start, an empty range, a gate that could not be read.
    #[test]
    fn what_a_passing_gate_cannot_confirm() {
        let l = parse_ledger(LEDGER);
        let rule = |f: PhaseFacts| {
            let d = decide_ledger(&l, &facts(f, passing()));
            (d.rows[0].verdict, d.rows[0].rule.id())
        };
        assert_eq!(
            rule(PhaseFacts {
                from_known: Some(false),
                ..passing()
            }),
            (PhaseVerdict::Contradicted, "ledger.unknown-commit")
        );
        assert_eq!(
            rule(PhaseFacts {
                no_commits: Some(true),
                ..passing()
            }),
            (PhaseVerdict::Stale, "ledger.no-commits")
        );
        assert_eq!(
            rule(PhaseFacts {
                unreadable_gates: 1,
                ..passing()
            }),
            (PhaseVerdict::Stale, "ledger.gate-unreadable")
        );
    }

    /// Gates that pass beside uncommitted changes may pass because of them.
    #[test]
    fn a_dirty_tree_confirms_nothing() {
        let l = parse_ledger(LEDGER);
        let mut dirty = facts(passing(), passing());
        dirty.tree_dirty = true;
        let d = decide_ledger(&l, &dirty);
        assert_eq!(
            (d.rows[0].verdict, d.rows[0].rule.id()),
            (PhaseVerdict::Stale, "ledger.dirty-tree")
        );
    }

    #[test]
    fn failure_counts_and_the_baseline() {
        assert_eq!(failures_in("exit 1: 3 failed, 39 passed"), Some(3));
        assert_eq!(failures_in("12 pass, 0 fail"), Some(0));
        assert_eq!(failures_in("tests 40/42"), Some(2));
        assert_eq!(failures_in("exit 1: boom"), None);
        let l = parse_ledger(&format!("{LEDGER}baseline: 40/42 (aaaaaaa)\n"));
        let failing = |evidence: &str| PhaseFacts {
            gates: Some(vec![("tests".into(), false, evidence.into())]),
            ..passing()
        };
        let d = decide_ledger(&l, &facts(failing("exit 1: 2 failed"), passing()));
        assert!(
            d.rows[0].why.contains("within the baseline"),
            "{}",
            d.rows[0].why
        );
        let d = decide_ledger(&l, &facts(failing("exit 1: 5 failed"), passing()));
        assert!(d.rows[0].why.contains("a regression"), "{}", d.rows[0].why);
    }

    #[test]
    fn a_new_start_after_complete_reopens_the_claim() {
        let l = parse_ledger(&format!("{LEDGER}phase 1: started (base bbbbbbb)\n"));
        let d = decide_ledger(&l, &facts(passing(), passing()));
        assert_eq!(
            (d.rows[0].verdict, d.rows[0].claim.as_str()),
            (PhaseVerdict::Open, "started")
        );
    }

    #[test]
    fn a_block_after_complete_reopens_the_claim() {
        let l = parse_ledger(&format!("{LEDGER}phase 2: BLOCKED — reverted\n"));
        let d = decide_ledger(&l, &facts(passing(), passing()));
        assert_eq!(d.rows[1].verdict, PhaseVerdict::Open);
        assert_eq!(d.rows[1].claim, "BLOCKED");
    }
}
