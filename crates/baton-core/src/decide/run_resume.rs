//! The single-run resume protocol: four ordered checks, the plan staleness gate, and what to
//! restore. `ratify` (hand the cached plan straight to the implementer) is reachable only when
//! HEAD, alignment and the lock all pass and the plan is at most 4 hours old.

use jiff::{SignedDuration, Timestamp};
use serde::Serialize;

use super::lease::LeaseState;
use super::{Decision, Reason};
use crate::model::{Completion, RunState};
use crate::text::esc_join;
use crate::time::human_age;

pub const RATIFY_MAX: SignedDuration = SignedDuration::from_secs(4 * 3600);
pub const REPLAN_OVER: SignedDuration = SignedDuration::from_secs(24 * 3600);

/// The cached plan as it is now.
#[derive(Debug, Clone)]
pub struct PlanNow {
    pub sha256: String,
    pub mtime: Timestamp,
    /// The security-sensitive paths it names.
    pub sensitive: Vec<String>,
}

/// One alignment section as it is now.
#[derive(Debug, Clone)]
pub struct SectionNow {
    pub name: String,
    pub sha256: Option<String>,
    pub text: Option<String>,
}

#[derive(Debug, Clone)]
pub struct RunFacts<'a> {
    pub run: &'a RunState,
    /// `git rev-parse HEAD`; `None` before the first commit.
    pub head: Option<String>,
    /// `git diff --cached --name-only`.
    pub staged: Vec<String>,
    /// The operator's escape hatch: go on with these staged files (`--allow-staged`).
    pub allow_staged: bool,
    /// `None` when the run recorded no alignment.
    pub sections: Option<Vec<SectionNow>>,
    pub lease: LeaseState,
    /// `None` when the recorded plan file is missing now (or none was recorded).
    pub plan: Option<PlanNow>,
    pub now: Timestamp,
}

#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub check: &'static str,
    pub pass: bool,
    pub evidence: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct SectionDrift {
    pub section: String,
    /// A line diff when the old text is known.
    pub diff: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Restoration {
    pub completed_agents: Vec<String>,
    /// The last completed agent or hard gate.
    pub last: Option<String>,
    pub next_step: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RunDecision {
    #[serde(flatten)]
    pub decision: Decision,
    pub checks: Vec<Check>,
    pub drift: Vec<SectionDrift>,
    /// `now - mtime(plan)`, in seconds.
    pub gap_secs: Option<i64>,
    pub restore: Restoration,
    /// Whether the caller proceeds with work, and so takes the run lock.
    pub acquire: bool,
}

pub fn decide_run_resume(f: &RunFacts) -> RunDecision {
    let run = f.run;
    let id = &run.run_id;
    let base = run.base_commit.as_deref();
    let head_pass = base.is_some() && base == f.head.as_deref();
    let head = Check {
        check: "head",
        pass: head_pass,
        evidence: format!(
            "base_commit {} vs HEAD {}",
            base.map(short).unwrap_or("(none recorded)"),
            f.head.as_deref().map(short).unwrap_or("(no commits)")
        ),
    };
    let staging = Check {
        check: "staging",
        pass: f.staged.is_empty() || f.allow_staged,
        evidence: if f.staged.is_empty() {
            "`git diff --cached --name-only` is empty".into()
        } else if f.allow_staged {
            format!(
                "staged, and the operator let the run go on with them: {}",
                esc_join(f.staged.iter().map(String::as_str))
            )
        } else {
            format!("staged: {}", esc_join(f.staged.iter().map(String::as_str)))
        },
    };
    let drift = alignment_drift(run, f.sections.as_deref());
    let alignment = Check {
        check: "alignment",
        // With no recorded baseline nothing shows the alignment unchanged, so it cannot pass.
        pass: run.alignment.is_some() && drift.is_empty(),
        evidence: match (&run.alignment, drift.is_empty()) {
            (None, _) => "no alignment was recorded for this run (an imported run): nothing shows it unchanged".into(),
            (Some(a), true) if f
                .sections
                .as_deref()
                .is_some_and(|now| now.iter().all(|s| s.sha256.is_none())) =>
            {
                format!("{} has no GOALS, SCOPE or CONSTRAINTS heading: nothing to compare", a.path)
            }
            (Some(a), true) => format!("GOALS, SCOPE and CONSTRAINTS of {} unchanged", a.path),
            (Some(a), false) => format!(
                "changed in {}: {}",
                a.path,
                drift
                    .iter()
                    .map(|d| d.section.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        },
    };
    let (lock_pass, lock_evidence) = match &f.lease {
        LeaseState::Free => (true, "the run lock is free".to_string()),
        LeaseState::Mine => (
            true,
            "the run lock is already held by this caller".to_string(),
        ),
        LeaseState::Stale(why) => (true, format!("stale, taken over: {why}")),
        LeaseState::Live(why) => (false, why.clone()),
    };
    let lock = Check {
        check: "lock",
        pass: lock_pass,
        evidence: lock_evidence,
    };

    let lock_refusal = || {
        Reason::new(
            crate::Rule::RunLockHeld,
            format!(
                "Another /implement is active on run_id {id}; wait for it to complete or use a fresh run_id."
            ),
        )
    };
    // Every failing check states its reason; the strictest outcome decides. A refusal comes
    // first (staged files, then a live lock: nothing may go on beside them), then a question for
    // the human (alignment: a re-plan against changed goals would be wasted), then a re-plan
    // (HEAD moved), and only with all four passing, the staleness gate.
    let mut reasons = Vec::new();
    // A project file with none of the three headings passes only in name: say so.
    let headless = f
        .sections
        .as_deref()
        .is_some_and(|now| now.iter().all(|s| s.sha256.is_none()));
    let mut outcome: Option<(crate::Verdict, String)> = None;
    let mut decide = |verdict: crate::Verdict, next: String| {
        outcome.get_or_insert((verdict, next));
    };
    if !staging.pass {
        reasons.push(Reason::new(
            crate::Rule::RunStagedFiles,
            format!(
                "staged changes would ride along into the run: {}",
                esc_join(f.staged.iter().map(String::as_str))
            ),
        ));
        decide(
            crate::Verdict::Blocked,
            format!(
                "choose one: (1) commit the staged files and restart the run; (2) unstage them (`git restore --staged :/`) and restart; (3) operator escape hatch: a human decides explicitly to go on with them staged, `baton run resume {id} --allow-staged`"
            ),
        );
    }
    if !lock.pass {
        reasons.push(lock_refusal());
        decide(
            crate::Verdict::Blocked,
            "wait for the other run to complete, or start a fresh run with `baton run new`".into(),
        );
    }
    if !alignment.pass && run.alignment.is_none() {
        reasons.push(Reason::new(
            crate::Rule::RunAlignmentUnknown,
            "the run recorded no GOALS, SCOPE and CONSTRAINTS to compare against",
        ));
        decide(
            crate::Verdict::Confirm,
            format!(
                "show the user the project's GOALS, SCOPE and CONSTRAINTS and ask whether run {id} fits them; if it does, `baton run resume {id} --confirm-alignment`"
            ),
        );
    } else if !alignment.pass {
        reasons.push(Reason::new(
            crate::Rule::RunAlignmentDrift,
            format!(
                "the project's alignment changed since the run was planned: {}",
                drift
                    .iter()
                    .map(|d| d.section.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
        decide(
            crate::Verdict::Confirm,
            format!(
                "show the user the changed sections and ask whether run {id} still fits them; if it does, `baton run resume {id} --confirm-alignment`"
            ),
        );
    }
    if !head.pass {
        reasons.push(Reason::new(
            crate::Rule::RunHeadMoved,
            format!("HEAD moved since the run was planned ({}): the cached plan's files and lines may be stale", head.evidence),
        ));
        decide(
            crate::Verdict::Replan,
            "re-invoke the planner from STEP 5 against the current HEAD; never pass the cached plan to the implementer".into(),
        );
    }
    let (verdict, next) = match outcome {
        Some(decided) => decided,
        None => staleness_gate(f, &mut reasons),
    };
    // A finding, after the reasons that decided: sections the project file lacks cannot drift.
    let missing: Vec<&str> = f
        .sections
        .iter()
        .flatten()
        .filter(|s| s.sha256.is_none())
        .map(|s| s.name.as_str())
        .collect();
    if let Some(a) = &run.alignment {
        if headless {
            reasons.push(Reason::new(
                crate::Rule::RunAlignmentEmpty,
                format!(
                    "{} has no GOALS, SCOPE or CONSTRAINTS heading (`#` to `###`): the alignment check has nothing to compare, so it cannot see a drift",
                    a.path
                ),
            ));
        } else if !missing.is_empty() {
            reasons.push(Reason::new(
                crate::Rule::RunAlignmentPartial,
                format!(
                    "{} has no {} heading: a drift there cannot be seen",
                    a.path,
                    missing.join(" or ")
                ),
            ));
        }
    }
    let acquire = matches!(
        verdict,
        crate::Verdict::Replan | crate::Verdict::Critic | crate::Verdict::Ratify
    );
    let gap_secs = f
        .plan
        .as_ref()
        .map(|p| f.now.duration_since(p.mtime).as_secs());
    RunDecision {
        decision: Decision {
            verdict,
            reasons,
            next: Some(next),
        },
        checks: vec![head, staging, alignment, lock],
        drift,
        gap_secs,
        restore: restoration(run),
        acquire,
    }
}

/// The staleness gate, reached only when all four checks pass.
fn staleness_gate(f: &RunFacts, reasons: &mut Vec<Reason>) -> (crate::Verdict, String) {
    let replan = "re-invoke the planner from STEP 5; never pass the cached plan to the implementer"
        .to_string();
    let critic =
        "run one plan-critic round on the cached plan, all axes, before implementing".to_string();
    let Some(recorded) = &f.run.plan else {
        reasons.push(Reason::new(
            crate::Rule::RunNoPlan,
            "the run recorded no cached plan, so there is nothing to ratify",
        ));
        return (crate::Verdict::Replan, replan);
    };
    let Some(plan) = &f.plan else {
        reasons.push(Reason::new(
            crate::Rule::RunPlanMissing,
            format!("the cached plan {} is gone", recorded.path),
        ));
        return (crate::Verdict::Replan, replan);
    };
    let gap = f.now.duration_since(plan.mtime);
    let gap_text = human_age(gap.max(SignedDuration::ZERO));
    // One critic round per plan version: once a critic is recorded against this very plan
    // (by its content hash), the round it asked for is done.
    let critic_done = critic_recorded(f.run, &plan.sha256);
    let ratify =
        "pass the pre-validated plan to the implementer (STEP 8); do not re-invoke the planner";
    let critic_or_done = |reasons: &mut Vec<Reason>| -> (crate::Verdict, String) {
        if critic_done {
            reasons.push(Reason::new(
                crate::Rule::RunCriticDone,
                "a critic round was recorded against this version of the plan: the round is done",
            ));
            (crate::Verdict::Ratify, ratify.to_string())
        } else {
            (
                crate::Verdict::Critic,
                format!(
                    "{critic}; then `baton run record {} --agent plan-critic`",
                    f.run.run_id
                ),
            )
        }
    };
    if gap > REPLAN_OVER {
        reasons.push(Reason::new(crate::Rule::RunGapOver24h, format!("the plan was last written {gap_text} ago, over 24 hours: dependencies, specs and APIs may have drifted")));
        return (crate::Verdict::Replan, replan);
    }
    if f.run.critic_owed {
        reasons.push(Reason::new(
            crate::Rule::RunCriticOwed,
            "the user confirmed the run against changed GOALS, SCOPE or CONSTRAINTS, and the cached plan was validated against the old ones: one critic round is owed",
        ));
        // Owed since the user confirmed a drift: only a critic recorded after that clears it
        // (recording one clears the flag), whatever an earlier round covered.
        return (
            crate::Verdict::Critic,
            format!(
                "{critic}; then `baton run record {} --agent plan-critic`",
                f.run.run_id
            ),
        );
    }
    if gap > RATIFY_MAX {
        if !plan.sensitive.is_empty() {
            reasons.push(Reason::new(
                crate::Rule::RunGapSecurity,
                format!(
                    "the plan is {gap_text} old and names security-sensitive paths: {}",
                    plan.sensitive.join(", ")
                ),
            ));
            return critic_or_done(reasons);
        }
        let to_replan = f.run.policy.mid_gap == "replan";
        reasons.push(Reason::new(
            crate::Rule::RunGapUnsanctioned,
            format!(
                "the plan is {gap_text} old: over 4 hours, where the protocol no longer sanctions ratify; the policy for 4 to 24 hours says {}",
                if to_replan { "replan" } else { "critic" }
            ),
        ));
        return if to_replan {
            (crate::Verdict::Replan, replan)
        } else {
            critic_or_done(reasons)
        };
    }
    if recorded.sha256.as_deref().is_some_and(|s| s != plan.sha256) {
        reasons.push(Reason::new(
            crate::Rule::RunPlanChanged,
            format!(
                "the cached plan {} was edited since it was validated",
                recorded.path
            ),
        ));
        return critic_or_done(reasons);
    }
    reasons.push(Reason::new(
        crate::Rule::RunRatify,
        format!("HEAD, staging, alignment and the lock pass, and the plan is {gap_text} old (at most 4 hours)"),
    ));
    (crate::Verdict::Ratify, ratify.into())
}

/// Whether an agent or gate named `*critic*` was recorded against the plan whose content hash is
/// `plan_sha256`.
pub fn critic_recorded(run: &RunState, plan_sha256: &str) -> bool {
    run.completed_agents.iter().chain(&run.hard_gates).any(|c| {
        c.name.contains("critic")
            && c.extra.get("plan_sha256").and_then(|v| v.as_str()) == Some(plan_sha256)
    })
}

fn alignment_drift(run: &RunState, now: Option<&[SectionNow]>) -> Vec<SectionDrift> {
    let (Some(recorded), Some(now)) = (&run.alignment, now) else {
        return Vec::new();
    };
    recorded
        .sections
        .iter()
        .filter_map(|old| {
            let new = now.iter().find(|s| s.name == old.name);
            let new_sha = new.and_then(|s| s.sha256.as_deref());
            (old.sha256.as_deref() != new_sha).then(|| SectionDrift {
                section: old.name.clone(),
                diff: old.text.as_ref().map(|before| {
                    let after = new.and_then(|s| s.text.as_deref()).unwrap_or("");
                    crate::sections::line_diff(before, after, 400)
                }),
            })
        })
        .collect()
}

/// Completed agents in order, the last agent or hard gate, and the step to continue at.
pub fn restoration(run: &RunState) -> Restoration {
    let last = |list: &[Completion]| list.last().cloned();
    let last = match (last(&run.completed_agents), last(&run.hard_gates)) {
        (Some(a), Some(g)) => {
            let gate_later =
                crate::time::parse_ts(g.at.as_deref()) >= crate::time::parse_ts(a.at.as_deref());
            Some(if gate_later {
                format!("gate {}", g.name)
            } else {
                format!("agent {}", a.name)
            })
        }
        (Some(a), None) => Some(format!("agent {}", a.name)),
        (None, Some(g)) => Some(format!("gate {}", g.name)),
        (None, None) => None,
    };
    // The step after the last one that passed, as autonomous-dev's pipeline orders them.
    let done = |s: &str| matches!(s, "done" | "complete" | "completed" | "passed" | "skipped");
    let passed = |s: &str| matches!(s, "done" | "complete" | "completed" | "passed");
    let after = run
        .steps
        .iter()
        .rposition(|s| passed(&s.status))
        .map_or(0, |i| i + 1);
    let next_step = run.steps[after..]
        .iter()
        .find(|s| !done(&s.status))
        .or_else(|| run.steps.iter().find(|s| !done(&s.status)))
        .map(|s| format!("{} ({})", s.name, s.status))
        .or_else(|| last.as_ref().map(|l| format!("the step after {l}")));
    Restoration {
        completed_agents: run
            .completed_agents
            .iter()
            .map(|c| c.name.clone())
            .collect(),
        last,
        next_step,
    }
}

fn short(sha: &str) -> &str {
    &sha[..sha.len().min(12)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{AlignmentRecord, PlanRecord, SectionRecord};
    use proptest::prelude::*;

    fn now() -> Timestamp {
        "2026-03-01T12:00:00Z".parse().unwrap()
    }

    fn run() -> RunState {
        let mut run: RunState =
            serde_json::from_value(serde_json::json!({ "run_id": "0123456789abcdef" })).unwrap();
        run.base_commit = Some("a".repeat(40));
        run.plan = Some(PlanRecord {
            path: "/p/plan.md".into(),
            sha256: Some("p1".into()),
            mtime: None,
            extra: Default::default(),
        });
        run.alignment = Some(AlignmentRecord {
            path: ".claude/PROJECT.md".into(),
            sections: ["GOALS", "SCOPE", "CONSTRAINTS"]
                .iter()
                .map(|n| SectionRecord {
                    name: n.to_string(),
                    sha256: Some(format!("{n}-1")),
                    text: Some(format!("{n} text")),
                })
                .collect(),
            extra: Default::default(),
        });
        run
    }

    fn sections(changed: Option<&str>) -> Vec<SectionNow> {
        ["GOALS", "SCOPE", "CONSTRAINTS"]
            .iter()
            .map(|n| {
                let v = if Some(*n) == changed { 2 } else { 1 };
                SectionNow {
                    name: n.to_string(),
                    sha256: Some(format!("{n}-{v}")),
                    text: Some(format!("{n} text v{v}")),
                }
            })
            .collect()
    }

    struct Input {
        head_moved: bool,
        staged: bool,
        drifted: Option<&'static str>,
        lease: LeaseState,
        gap_hours: Option<f64>,
        sensitive: bool,
        plan_edited: bool,
    }

    fn ok_input() -> Input {
        Input {
            head_moved: false,
            staged: false,
            drifted: None,
            lease: LeaseState::Free,
            gap_hours: Some(0.5),
            sensitive: false,
            plan_edited: false,
        }
    }

    fn decide(i: &Input, run: &RunState) -> RunDecision {
        decide_run_resume(&RunFacts {
            run,
            head: Some(if i.head_moved {
                "b".repeat(40)
            } else {
                "a".repeat(40)
            }),
            allow_staged: false,
            staged: if i.staged {
                vec!["src/x.rs".into()]
            } else {
                vec![]
            },
            sections: Some(sections(i.drifted)),
            lease: i.lease.clone(),
            plan: i.gap_hours.map(|h| PlanNow {
                sha256: if i.plan_edited {
                    "p2".into()
                } else {
                    "p1".into()
                },
                mtime: now() - SignedDuration::from_secs_f64(h * 3600.0),
                sensitive: if i.sensitive {
                    vec!["hooks/guard.py".into()]
                } else {
                    vec![]
                },
            }),
            now: now(),
        })
    }

    /// One row per check and gate rule of the single-run protocol.
    #[test]
    fn run_resume_table() {
        let live = LeaseState::Live("held".into());
        let rows: Vec<(&str, Input, &str, &str)> = vec![
            ("all pass, 30 min", ok_input(), "ratify", "run.ratify"),
            (
                "head moved, short gap",
                Input {
                    head_moved: true,
                    ..ok_input()
                },
                "replan",
                "run.head-moved",
            ),
            (
                "head moved and staged: the refusal is stricter than a re-plan",
                Input {
                    head_moved: true,
                    staged: true,
                    ..ok_input()
                },
                "blocked",
                "run.staged-files",
            ),
            (
                "head moved and scope drifted: the scope is asked about before any re-plan",
                Input {
                    head_moved: true,
                    drifted: Some("SCOPE"),
                    ..ok_input()
                },
                "confirm",
                "run.alignment-drift",
            ),
            (
                "head moved, lock held",
                Input {
                    head_moved: true,
                    lease: live.clone(),
                    ..ok_input()
                },
                "blocked",
                "run.lock-held",
            ),
            (
                "staged",
                Input {
                    staged: true,
                    ..ok_input()
                },
                "blocked",
                "run.staged-files",
            ),
            (
                "staged and drifted: staging decides",
                Input {
                    staged: true,
                    drifted: Some("SCOPE"),
                    ..ok_input()
                },
                "blocked",
                "run.staged-files",
            ),
            (
                "scope drifted",
                Input {
                    drifted: Some("SCOPE"),
                    ..ok_input()
                },
                "confirm",
                "run.alignment-drift",
            ),
            (
                "lock held",
                Input {
                    lease: live.clone(),
                    ..ok_input()
                },
                "blocked",
                "run.lock-held",
            ),
            (
                "stale lock taken over",
                Input {
                    lease: LeaseState::Stale("gone".into()),
                    ..ok_input()
                },
                "ratify",
                "run.ratify",
            ),
            (
                "25 h",
                Input {
                    gap_hours: Some(25.0),
                    ..ok_input()
                },
                "replan",
                "run.gap-over-24h",
            ),
            (
                "5 h, security path",
                Input {
                    gap_hours: Some(5.0),
                    sensitive: true,
                    ..ok_input()
                },
                "critic",
                "run.gap-security",
            ),
            (
                "5 h, nothing sensitive",
                Input {
                    gap_hours: Some(5.0),
                    ..ok_input()
                },
                "critic",
                "run.gap-unsanctioned",
            ),
            (
                "3 h, security path: ratify",
                Input {
                    gap_hours: Some(3.0),
                    sensitive: true,
                    ..ok_input()
                },
                "ratify",
                "run.ratify",
            ),
            (
                "exactly 4 h",
                Input {
                    gap_hours: Some(4.0),
                    ..ok_input()
                },
                "ratify",
                "run.ratify",
            ),
            (
                "plan gone",
                Input {
                    gap_hours: None,
                    ..ok_input()
                },
                "replan",
                "run.plan-missing",
            ),
            (
                "plan edited",
                Input {
                    plan_edited: true,
                    ..ok_input()
                },
                "critic",
                "run.plan-changed",
            ),
        ];
        for (name, input, verdict, rule) in rows {
            let d = decide(&input, &run());
            assert_eq!(d.decision.verdict, verdict, "{name}");
            assert!(
                d.decision.rules().contains(&rule),
                "{name}: {:?}",
                d.decision.rules()
            );
            assert_eq!(
                d.checks.iter().map(|c| c.check).collect::<Vec<_>>(),
                ["head", "staging", "alignment", "lock"]
            );
        }
    }

    #[test]
    fn a_run_without_an_alignment_baseline_is_never_ratified() {
        let mut r = run();
        r.alignment = None;
        let d = decide(&ok_input(), &r);
        assert_eq!(d.decision.verdict, "confirm");
        assert_eq!(d.decision.rules(), ["run.alignment-unknown"]);
    }

    #[test]
    fn a_confirmed_drift_is_never_ratified() {
        let mut r = run();
        r.critic_owed = true;
        let d = decide_run_resume(&RunFacts {
            run: &r,
            head: Some("a".repeat(40)),
            staged: vec![],
            allow_staged: false,
            sections: Some(sections(None)),
            lease: LeaseState::Free,
            plan: Some(PlanNow {
                sha256: "p1".into(),
                mtime: now(),
                sensitive: vec![],
            }),
            now: now(),
        });
        assert_eq!(d.decision.verdict, "critic");
        assert_eq!(d.decision.rules(), ["run.critic-owed"]);
    }

    #[test]
    fn the_mid_gap_policy_can_require_a_replan() {
        let mut r = run();
        r.policy.mid_gap = "replan".into();
        let d = decide(
            &Input {
                gap_hours: Some(5.0),
                ..ok_input()
            },
            &r,
        );
        assert_eq!(d.decision.verdict, "replan");
    }

    #[test]
    fn drift_shows_which_section_and_how() {
        let d = decide(
            &Input {
                drifted: Some("SCOPE"),
                ..ok_input()
            },
            &run(),
        );
        assert_eq!(d.drift.len(), 1);
        assert_eq!(d.drift[0].section, "SCOPE");
        assert_eq!(
            d.drift[0].diff.as_deref(),
            Some("- SCOPE text\n+ SCOPE text v2\n")
        );
    }

    #[test]
    fn the_lock_message_is_the_protocols() {
        let d = decide(
            &Input {
                lease: LeaseState::Live("x".into()),
                ..ok_input()
            },
            &run(),
        );
        assert_eq!(
            d.decision.reasons[0].message,
            "Another /implement is active on run_id 0123456789abcdef; wait for it to complete or use a fresh run_id."
        );
        assert!(!d.acquire);
    }

    #[test]
    fn restoration_names_the_last_agent_or_gate_and_the_next_step() {
        let mut r = run();
        r.completed_agents = vec![
            Completion {
                name: "planner".into(),
                at: Some("2026-03-01T10:00:00Z".into()),
                extra: Default::default(),
            },
            Completion {
                name: "implementer".into(),
                at: Some("2026-03-01T11:00:00Z".into()),
                extra: Default::default(),
            },
        ];
        r.hard_gates = vec![Completion {
            name: "tests-green".into(),
            at: Some("2026-03-01T11:30:00Z".into()),
            extra: Default::default(),
        }];
        r.steps = vec![
            crate::model::StepRecord {
                name: "implement".into(),
                status: "done".into(),
                at: None,
                extra: Default::default(),
            },
            crate::model::StepRecord {
                name: "review".into(),
                status: "pending".into(),
                at: None,
                extra: Default::default(),
            },
        ];
        let rest = restoration(&r);
        assert_eq!(rest.completed_agents, ["planner", "implementer"]);
        assert_eq!(rest.last.as_deref(), Some("gate tests-green"));
        assert_eq!(rest.next_step.as_deref(), Some("review (pending)"));
    }

    fn lease_strategy() -> impl Strategy<Value = LeaseState> {
        prop_oneof![
            Just(LeaseState::Free),
            Just(LeaseState::Mine),
            Just(LeaseState::Live("held".into())),
            Just(LeaseState::Stale("gone".into())),
        ]
    }

    proptest! {
        /// The FORBIDDEN list: no input reaches ratify when HEAD moved, alignment drifted, the
        /// gap exceeds 24 hours (or 4), files are staged, or a live holder has the lock; and no
        /// verdict that dispatches work is given while a live holder has the lock.
        #[test]
        fn ratify_only_when_everything_passes(
            head_moved: bool, staged: bool, drift in proptest::option::of(prop_oneof![Just("GOALS"), Just("SCOPE"), Just("CONSTRAINTS")]),
            lease in lease_strategy(), gap in proptest::option::of(-2.0f64..100.0), sensitive: bool, plan_edited: bool, mid_replan: bool,
        ) {
            let mut r = run();
            if mid_replan { r.policy.mid_gap = "replan".into(); }
            let input = Input { head_moved, staged, drifted: drift, lease: lease.clone(), gap_hours: gap, sensitive, plan_edited };
            let d = decide(&input, &r);
            let live = matches!(lease, LeaseState::Live(_));
            if d.decision.verdict == "ratify" {
                prop_assert!(!head_moved && !staged && drift.is_none() && !live && !plan_edited);
                prop_assert!(gap.is_some_and(|g| g <= 4.0));
            }
            if live {
                prop_assert!(!d.acquire);
                prop_assert!(matches!(d.decision.verdict, crate::Verdict::Blocked | crate::Verdict::Confirm));
            }
            // The strictest outcome wins: a refusal, then a question, then a re-plan.
            let expected = if staged || live {
                "blocked"
            } else if drift.is_some() {
                "confirm"
            } else if head_moved {
                "replan"
            } else {
                d.decision.verdict.as_str()
            };
            prop_assert_eq!(d.decision.verdict, expected);
            // Every failing check says so, whichever decides.
            prop_assert_eq!(d.checks.iter().filter(|c| !c.pass).count(),
                [head_moved, staged, drift.is_some(), live].iter().filter(|x| **x).count());
            if gap.is_some_and(|g| g > 24.0) {
                prop_assert_ne!(d.decision.verdict, "ratify");
                prop_assert_ne!(d.decision.verdict, "critic");
            }
        }
    }
}
