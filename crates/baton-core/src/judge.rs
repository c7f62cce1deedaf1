//! The judge of "done" (seed 003's rule, SPEC section 9): a session's claim that work is
//! complete (a plan's phase, a ticket's loop, a run) is verified only by gates that passed on
//! the exact tree the session stops on, with its commits on HEAD; never by what the session
//! says. A stop on claimed work that is failed or unverified is refused, within guards that keep
//! the refusal from becoming a loop.
//!
//! Pure: the shell reads the gates that govern the work, the results `gate run` recorded, the
//! tree's identity and what the session's earlier stops did, and carries out the `StopCall`.

use serde::{Deserialize, Serialize};

use crate::rules::Rule;
use crate::text::{esc, shell_quote};

/// How many stops of one session on one unchanged tree are refused before the claim goes to a
/// person (`Rule::JudgeBlockCap`).
pub const DEFAULT_BLOCK_CAP: u32 = 3;

/// What kind of work a claim is of.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ClaimKind {
    /// A plan's phase recorded complete (`ledger complete`): its phase file declares its gates.
    #[default]
    Phase,
    /// A ticket's loop finished complete (`loop finish --status complete`): the project's gates
    /// (`[judge.gates]` in `.baton.toml`) govern it.
    Loop,
    /// A single run finished complete (`run finish`): the project's gates govern it too.
    Run,
}

/// What a session claimed complete, as the judge keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claim {
    #[serde(default, skip_serializing_if = "is_phase")]
    pub kind: ClaimKind,
    /// The plan directory, relative to the project root (a phase's claim).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub plan: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub phase: String,
    /// The ticket as given, and its loop key (a loop's claim); a run's claim has its id in
    /// both.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub ticket: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub key: String,
    /// When the claim was recorded.
    pub at: String,
    /// The commits the complete line names (`<from>..<to>`): they must be on HEAD.
    pub to: String,
    /// The gates the phase declared when it was claimed (`<name>: <command>`): a gate removed
    /// or changed since does not verify the claim.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gates: Vec<String>,
    /// A HEAD the claimed commits were found on (full id): a stop at that HEAD asks git
    /// nothing more about them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_head: Option<String>,
    /// Set when a stop was let through on this claim unverified: a person must confirm it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirm: Option<Confirm>,
    /// Claimed only by the session's goal, with no completion recorded: unverified until the
    /// work is recorded complete.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unrecorded: bool,
}

fn is_phase(kind: &ClaimKind) -> bool {
    *kind == ClaimKind::Phase
}

impl Claim {
    /// A phase's claim.
    pub fn phase(plan: &str, phase: &str, at: String, to: String, gates: Vec<String>) -> Claim {
        Claim {
            kind: ClaimKind::Phase,
            plan: plan.to_string(),
            phase: phase.to_string(),
            ticket: String::new(),
            key: String::new(),
            at,
            to,
            gates,
            on_head: None,
            confirm: None,
            unrecorded: false,
        }
    }

    /// A loop's claim.
    pub fn of_loop(ticket: &str, key: &str, at: String, to: String, gates: Vec<String>) -> Claim {
        Claim {
            kind: ClaimKind::Loop,
            ticket: ticket.to_string(),
            key: key.to_string(),
            ..Claim::phase("", "", at, to, gates)
        }
    }

    /// A single run's claim.
    pub fn of_run(id: &str, at: String, to: String, gates: Vec<String>) -> Claim {
        Claim {
            kind: ClaimKind::Run,
            ..Claim::of_loop(id, id, at, to, gates)
        }
    }

    /// Whether `other` claims the same work.
    pub fn same_work(&self, other: &Claim) -> bool {
        self.kind == other.kind
            && self.plan == other.plan
            && self.phase == other.phase
            && self.key == other.key
    }

    /// The work, as a sentence names it: `phase 1 of plans/auth`, `the loop of PROJ-1`.
    pub fn named(&self) -> String {
        match self.kind {
            ClaimKind::Phase => format!("phase {} of {}", esc(&self.phase), esc(&self.plan)),
            ClaimKind::Loop => format!("the loop of {}", esc(&self.ticket)),
            ClaimKind::Run => format!("run {}", esc(&self.key)),
        }
    }

    /// Where the judge keeps the gate results and the history of this work: the plan
    /// directory, or `loop/<KEY>`.
    pub fn evidence_key(&self) -> String {
        match self.kind {
            ClaimKind::Phase => self.plan.clone(),
            ClaimKind::Loop => format!("loop/{}", self.key),
            ClaimKind::Run => format!("run/{}", self.key),
        }
    }

    /// The one command that runs the work's gates on the tree as it is.
    pub fn settle(&self) -> String {
        match self.kind {
            ClaimKind::Phase => format!(
                "`baton gate run {} --phase {}`",
                shell_quote(&esc(&self.plan)),
                shell_quote(&esc(&self.phase))
            ),
            ClaimKind::Loop => format!(
                "`baton gate run --ticket {}`",
                shell_quote(&esc(&self.ticket))
            ),
            ClaimKind::Run => format!("`baton gate run --run {}`", shell_quote(&esc(&self.key))),
        }
    }

    /// The command that claims it again.
    fn reclaim(&self) -> String {
        match self.kind {
            ClaimKind::Phase => format!(
                "`baton ledger complete {} --phase {} --tests <passed>/<run>`",
                shell_quote(&esc(&self.plan)),
                shell_quote(&esc(&self.phase))
            ),
            ClaimKind::Loop => format!(
                "`baton loop finish {} --status complete`",
                shell_quote(&esc(&self.ticket))
            ),
            ClaimKind::Run => format!("`baton run finish {}`", shell_quote(&esc(&self.key))),
        }
    }
}

/// A claim handed to a person: the rule that let the stop through and the tree it was on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Confirm {
    pub rule: String,
    pub tree: String,
    pub at: String,
}

/// The stops of a session refused: on the tree it last stopped on, and in all since its claims
/// were last let through (a gate that changes the tree, or a session that keeps editing, gives
/// every stop a new tree: the total bounds that).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refusals {
    pub tree: String,
    pub count: u32,
    #[serde(default)]
    pub total: u32,
}

/// How many refusals in all, on any trees, per refusal allowed on one tree.
pub const TOTAL_PER_TREE_CAP: u32 = 3;

/// What the judge keeps for one session: its open claims, and the refusals of its stops on the
/// tree it last stopped on.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JudgeRecord {
    pub session: String,
    #[serde(default)]
    pub claims: Vec<Claim>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusals: Option<Refusals>,
    /// The client's record of the session's goal last taken up (`ClientGoal::mark`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goal: Option<String>,
}

impl JudgeRecord {
    /// Records a claim, replacing an earlier claim of the same work.
    pub fn claim(&mut self, claim: Claim) {
        self.claims.retain(|c| !c.same_work(&claim));
        self.claims.push(claim);
    }
}

/// Work a goal names, by the `baton verdict` command its condition asks for (as `baton goal`
/// writes it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NamedWork {
    Phase { plan: String, phase: String },
    Ticket(String),
    Run(String),
}

/// The work a goal's condition names: the first `` `baton verdict …` `` in it that names one
/// piece of work. A goal that names none (any other text) is not baton's to judge.
pub fn named_in_goal(condition: &str) -> Option<NamedWork> {
    condition.split('`').skip(1).step_by(2).find_map(|code| {
        let cmds = crate::guard::shell::commands(code).ok()?;
        let [cmd] = cmds.as_slice() else {
            return None;
        };
        if cmd.words.iter().any(|w| w.dynamic) {
            return None;
        }
        let words: Vec<String> = cmd.words.iter().map(|w| w.text.clone()).collect();
        let rest = match words.as_slice() {
            [baton, verdict, rest @ ..] if baton == "baton" && verdict == "verdict" => rest,
            _ => return None,
        };
        match rest {
            [flag, ticket] if flag == "--ticket" => Some(NamedWork::Ticket(ticket.clone())),
            [flag, id] if flag == "--run" => Some(NamedWork::Run(id.clone())),
            [plan, flag, phase] | [flag, phase, plan]
                if flag == "--phase" && !plan.starts_with('-') =>
            {
                Some(NamedWork::Phase {
                    plan: plan.clone(),
                    phase: phase.clone(),
                })
            }
            _ => None,
        }
    })
}

/// One gate result of a phase, as `baton gate run` recorded it with the tree it ran on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GateResult {
    pub phase: String,
    pub name: String,
    /// The command that ran.
    pub cmd: String,
    pub pass: bool,
    /// What the ledger line says of the result (`exit 0 on tree …: <last line>`).
    pub result: String,
    /// The tree it ran on (`TreeId`'s id).
    pub tree: String,
    pub at: String,
}

/// A declared gate as a claim keeps it.
pub fn gate_signature(name: &str, command: &str) -> String {
    format!("{name}: {command}")
}

/// The tree a gate result names (`exit 0 on tree 5823990+9f3a2c1b: …`, as `baton gate run`
/// writes it: HEAD, and a digest of the changes when there are any); `None` for a result
/// written without one, which proves nothing about any tree.
pub fn tree_of(result: &str) -> Option<&str> {
    let (_, rest) = result.split_once(" on tree ")?;
    let end = rest.find([':', ' ', ')']).unwrap_or(rest.len());
    let id = &rest[..end];
    let (head, changes) = match id.split_once('+') {
        Some((h, c)) => (h, Some(c)),
        None => (id, None),
    };
    let hex = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_hexdigit());
    (hex(head, 7) && changes.is_none_or(|c| hex(c, 8))).then_some(id)
}

/// A tree id's HEAD part and its changes part.
pub fn tree_parts(id: &str) -> (&str, Option<&str>) {
    match id.split_once('+') {
        Some((h, c)) => (h, Some(c)),
        None => (id, None),
    }
}

/// The result text of a gate run on `tree`: the status, the tree, then the output's last line.
pub fn result_on_tree(status: &str, tree: &str, last_line: &str) -> String {
    if last_line.is_empty() {
        format!("{status} on tree {tree}")
    } else {
        format!("{status} on tree {tree}: {last_line}")
    }
}

/// The judge's verdict on one claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Judged {
    /// Every declared gate passed on this tree and the phase's commits are on HEAD.
    Verified,
    /// A declared gate's last result on this tree is a failure.
    Failed(GateResult),
    Unverified(Unverified),
}

/// Why a claim is neither verified nor failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unverified {
    /// The phase declares no gate: nothing machine-checkable says it is done.
    NoGates,
    /// These declared gates have no result on this tree.
    NotRun(Vec<String>),
    /// The phase's last commit is not on HEAD (history was rewritten or another branch is out).
    CommitsOffHead,
    /// The phase's declared gates are not those it was claimed with: what changed.
    GatesChanged(Vec<String>),
    /// The session's goal names the work, but no completion of it is recorded.
    NotRecorded,
}

impl Judged {
    pub fn word(&self) -> &'static str {
        match self {
            Judged::Verified => "verified",
            Judged::Failed(_) => "failed",
            Judged::Unverified(_) => "unverified",
        }
    }
}

/// Judges a phase claim: `declared` are the phase's gates now (`gate_signature`), `results`
/// what `baton gate run` recorded for the phase in order, `same_tree` whether a result's tree is
/// the tree as it is now (the same id, or one whose HEAD differs only in ledgers),
/// `commits_on_head` whether the claimed commits are reachable from HEAD. Only a result of the
/// declared command counts, and only gates the claim was made with.
pub fn judge_phase(
    claim: &Claim,
    declared: &[(String, String)],
    results: &[GateResult],
    same_tree: &dyn Fn(&str) -> bool,
    commits_on_head: bool,
) -> Judged {
    if !claim.gates.is_empty() {
        let now: Vec<String> = declared.iter().map(|(n, c)| gate_signature(n, c)).collect();
        let mut changed: Vec<String> = claim
            .gates
            .iter()
            .filter(|g| !now.contains(g))
            .map(|g| format!("`{g}` is gone"))
            .collect();
        changed.extend(
            now.iter()
                .filter(|g| !claim.gates.contains(g))
                .map(|g| format!("`{g}` is new")),
        );
        if !changed.is_empty() {
            return Judged::Unverified(Unverified::GatesChanged(changed));
        }
    }
    if declared.is_empty() {
        return Judged::Unverified(Unverified::NoGates);
    }
    let mut not_run = Vec::new();
    for (name, cmd) in declared {
        let last = results
            .iter()
            .rev()
            .find(|r| &r.name == name && &r.cmd == cmd && same_tree(&r.tree));
        match last {
            Some(r) if !r.pass => return Judged::Failed(r.clone()),
            Some(_) => {}
            None => not_run.push(name.clone()),
        }
    }
    if !not_run.is_empty() {
        return Judged::Unverified(Unverified::NotRun(not_run));
    }
    if !commits_on_head {
        return Judged::Unverified(Unverified::CommitsOffHead);
    }
    Judged::Verified
}

/// The tree a stop is judged on, as the reason shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeShown {
    pub id: String,
    /// HEAD's commit, short; `None` before the first commit.
    pub head: Option<String>,
    pub changed: usize,
}

impl std::fmt::Display for TreeShown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "tree {}", self.id)?;
        match self.changed {
            0 => write!(f, " (HEAD, clean)"),
            1 => write!(f, " (HEAD and 1 changed path)"),
            n => write!(f, " (HEAD and {n} changed paths)"),
        }
    }
}

/// What a stop hook does about a session's claims.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopCall {
    /// Nothing claimed is failed or unverified: the stop passes silently.
    Pass,
    /// The stop is refused: the session goes on, told why.
    Refuse { reason: String },
    /// The stop passes though a claim is not verified; the claims go to a person.
    HandOver { rule: Rule, note: String },
}

/// What the judge knows at a stop, beyond the verdicts.
#[derive(Debug, Clone)]
pub struct StopFacts<'a> {
    pub tree: &'a TreeShown,
    /// The client says this stop follows a refused one (`stop_hook_active`).
    pub again: bool,
    /// The refusals of this session's stops recorded so far, and the tree they were on.
    pub refusals: Option<&'a Refusals>,
    pub cap: u32,
}

/// Decides a stop from the verdicts on the session's open claims. A claim a person already has
/// to confirm is not refused again.
pub fn decide_stop(judged: &[(&Claim, Judged)], facts: &StopFacts) -> StopCall {
    let open: Vec<&(&Claim, Judged)> = judged
        .iter()
        .filter(|(c, j)| c.confirm.is_none() && *j != Judged::Verified)
        .collect();
    if open.is_empty() {
        return StopCall::Pass;
    }
    let same_tree = facts
        .refusals
        .filter(|r| r.tree == facts.tree.id)
        .map_or(0, |r| r.count);
    let names: Vec<String> = open.iter().map(|(c, _)| c.named()).collect();
    if facts.again && same_tree > 0 {
        return StopCall::HandOver {
            rule: Rule::JudgeUnchanged,
            note: format!(
                "the session stopped again on the same {} with {} not verified: left to a person to confirm",
                facts.tree,
                names.join(", ")
            ),
        };
    }
    let total = facts.refusals.map_or(0, |r| r.total);
    if same_tree >= facts.cap || total >= facts.cap.saturating_mul(TOTAL_PER_TREE_CAP) {
        return StopCall::HandOver {
            rule: Rule::JudgeBlockCap,
            note: format!(
                "{} stops were refused on {} ({total} in all); {} left to a person to confirm",
                same_tree,
                facts.tree,
                names.join(", ")
            ),
        };
    }
    let mut reason =
        String::from("baton: this session claimed work complete that is not verified on ");
    reason.push_str(&facts.tree.to_string());
    reason.push('.');
    for (claim, judged) in open {
        reason.push(' ');
        reason.push_str(&why(claim, judged));
    }
    reason.push_str(
        " Do not claim it done until baton's verdict is verified: `baton verdict` shows it.",
    );
    StopCall::Refuse { reason }
}

fn first_upper(s: &str) -> String {
    let mut chars = s.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// One claim's evidence and the one command that settles it.
pub fn why(claim: &Claim, judged: &Judged) -> String {
    let settle = claim.settle();
    let named = first_upper(&claim.named());
    let what = format!("{named} is claimed complete");
    match judged {
        Judged::Verified => format!("{what} and verified."),
        Judged::Failed(l) => format!(
            "{what}, but its gate {} failed on this tree ({} → {}): fix the cause, then run {settle}.",
            esc(&l.name),
            esc(&l.cmd),
            esc(&l.result)
        ),
        Judged::Unverified(Unverified::NoGates) => match claim.kind {
            ClaimKind::Phase => format!(
                "{what}, but it declares no exit gate, so nothing checks it: declare one in its phase file, then run {settle}."
            ),
            ClaimKind::Loop | ClaimKind::Run => format!(
                "{what}, but the project declares no gate, so nothing checks it: declare them under `[judge.gates]` in .baton.toml (docs/judge.md), then run {settle}."
            ),
        },
        Judged::Unverified(Unverified::NotRun(gates)) => format!(
            "{what}, but {} {} no result on this tree: run {settle}.",
            gates
                .iter()
                .map(|g| format!("gate {}", esc(g)))
                .collect::<Vec<_>>()
                .join(", "),
            if gates.len() == 1 { "has" } else { "have" }
        ),
        Judged::Unverified(Unverified::CommitsOffHead) => format!(
            "{what}, but its last commit {} is not on HEAD: check out the work, then run {settle}.",
            esc(&claim.to)
        ),
        Judged::Unverified(Unverified::NotRecorded) => format!(
            "{named} is the session's goal, but it is not recorded complete: finish it, record it with {}, then run {settle}.",
            claim.reclaim()
        ),
        Judged::Unverified(Unverified::GatesChanged(changes)) => format!(
            "{what}, but its declared gates changed since the claim ({}): a weaker gate verifies nothing; ask a person, and claim it again with {} once they agree.",
            esc(&changes.join("; ")),
            claim.reclaim()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TREE: &str = "5823990+9f3a2c1b";

    fn line(name: &str, pass: bool, tree: &str) -> GateResult {
        GateResult {
            phase: "2".into(),
            name: name.into(),
            cmd: "cargo test".into(),
            pass,
            result: result_on_tree(if pass { "exit 0" } else { "exit 101" }, tree, "ok"),
            tree: tree.into(),
            at: "2026-12-05T10:00:00Z".into(),
        }
    }

    fn claim() -> Claim {
        Claim::phase(
            "plans/auth",
            "2",
            "2026-12-05T10:00:00Z".into(),
            "abc1234".into(),
            Vec::new(),
        )
    }

    fn shown() -> TreeShown {
        TreeShown {
            id: TREE.into(),
            head: Some("abc1234".into()),
            changed: 2,
        }
    }

    #[test]
    fn a_goal_names_the_work_of_its_verdict_command() {
        let phase = |plan: &str, phase: &str| {
            Some(NamedWork::Phase {
                plan: plan.into(),
                phase: phase.into(),
            })
        };
        assert_eq!(
            named_in_goal(
                "Phase 2 of plans/a is complete: the output of `baton verdict plans/a --phase 2` starts with `verified:`."
            ),
            phase("plans/a", "2")
        );
        assert_eq!(
            named_in_goal("`baton verdict --phase 2b 'plans/my plan'`"),
            phase("plans/my plan", "2b")
        );
        assert_eq!(
            named_in_goal("run `baton ledger complete x`, then `baton verdict --ticket 'PROJ-1'`"),
            Some(NamedWork::Ticket("PROJ-1".into()))
        );
        assert_eq!(
            named_in_goal("`baton verdict --run r-1`"),
            Some(NamedWork::Run("r-1".into()))
        );
        for none in [
            "all tests pass",
            "`baton verdict` says verified",
            "`baton verdict plans/a`",
            "`baton verdict --phase 2 --ticket T`",
            "`baton verdict 'plans/a --phase 2`",
            "baton verdict plans/a --phase 2",
        ] {
            assert_eq!(named_in_goal(none), None, "{none}");
        }
    }

    #[test]
    fn a_result_names_its_tree_only_when_written_with_one() {
        assert_eq!(tree_of(&result_on_tree("exit 0", TREE, "ok")), Some(TREE));
        assert_eq!(tree_of(&result_on_tree("exit 0", TREE, "")), Some(TREE));
        assert_eq!(tree_of("exit 0 on tree 5823990"), Some("5823990"));
        assert_eq!(tree_of("exit 0"), None);
        assert_eq!(tree_of("exit 0 on tree 5823990+9f3a"), None);
        assert_eq!(tree_of("exit 0 on tree 58239901"), None);
        assert_eq!(tree_of("exit 0 on tree xyz"), None);
    }

    #[test]
    fn a_phase_is_verified_only_by_passes_on_this_tree_with_its_commits_on_head() {
        let c = claim();
        let declared = vec![
            ("unit".to_string(), "cargo test".to_string()),
            ("lint".to_string(), "cargo test".to_string()),
        ];
        let here = |t: &str| t == TREE;
        let both = [line("unit", true, TREE), line("lint", true, TREE)];
        assert_eq!(
            judge_phase(&c, &declared, &both, &here, true),
            Judged::Verified
        );
        assert_eq!(
            judge_phase(&c, &declared, &both, &here, false),
            Judged::Unverified(Unverified::CommitsOffHead)
        );
        // A pass on another tree proves nothing here.
        let other = [line("unit", true, "0000000"), line("lint", true, TREE)];
        assert_eq!(
            judge_phase(&c, &declared, &other, &here, true),
            Judged::Unverified(Unverified::NotRun(vec!["unit".into()]))
        );
        // The last result on this tree counts: a failure after a pass fails.
        let failed = [
            line("unit", true, TREE),
            line("lint", true, TREE),
            line("unit", false, TREE),
        ];
        assert!(
            matches!(judge_phase(&c, &declared, &failed, &here, true), Judged::Failed(l) if l.name == "unit")
        );
        assert_eq!(
            judge_phase(&c, &[], &both, &here, true),
            Judged::Unverified(Unverified::NoGates)
        );
        // A pass of another command than the one declared proves nothing.
        let weaker = [("unit".to_string(), "true".to_string())];
        assert_eq!(
            judge_phase(&c, &weaker, &both, &here, true),
            Judged::Unverified(Unverified::NotRun(vec!["unit".into()]))
        );
        // A claim made with other gates than the phase declares now is not verified by them.
        let mut snapshot = claim();
        snapshot.gates = vec![gate_signature("unit", "cargo test --all")];
        let only_unit = [("unit".to_string(), "cargo test".to_string())];
        assert!(matches!(
            judge_phase(&snapshot, &only_unit, &both, &here, true),
            Judged::Unverified(Unverified::GatesChanged(c)) if c.len() == 2
        ));
    }

    #[test]
    fn a_stop_is_refused_with_the_evidence_then_handed_to_a_person() {
        let c = claim();
        let failed = Judged::Failed(line("unit", false, TREE));
        let judged = [(&c, failed)];
        let tree = shown();
        let counts: Vec<Refusals> = (0..4)
            .map(|count| Refusals {
                tree: TREE.into(),
                count,
                total: count,
            })
            .collect();
        let facts = |again, count: usize| StopFacts {
            tree: &tree,
            again,
            refusals: Some(&counts[count]),
            cap: DEFAULT_BLOCK_CAP,
        };
        let StopCall::Refuse { reason } = decide_stop(&judged, &facts(false, 0)) else {
            panic!("refused")
        };
        for part in [
            "phase 2",
            "plans/auth",
            "unit",
            "cargo test",
            TREE,
            "`baton gate run plans/auth --phase 2`",
        ] {
            assert!(reason.contains(part), "{part} in {reason}");
        }
        assert!(matches!(
            decide_stop(&judged, &facts(false, 2)),
            StopCall::Refuse { .. }
        ));
        assert!(matches!(
            decide_stop(&judged, &facts(false, 3)),
            StopCall::HandOver {
                rule: Rule::JudgeBlockCap,
                ..
            }
        ));
        // Stopping again at once on the unchanged tree is let through.
        assert!(matches!(
            decide_stop(&judged, &facts(true, 1)),
            StopCall::HandOver {
                rule: Rule::JudgeUnchanged,
                ..
            }
        ));
        // On a changed tree the count starts again.
        let moved = Refusals {
            tree: "1111111".into(),
            count: 3,
            total: 3,
        };
        let f = StopFacts {
            refusals: Some(&moved),
            again: true,
            ..facts(true, 0)
        };
        assert!(matches!(decide_stop(&judged, &f), StopCall::Refuse { .. }));
        // Every stop on a new tree: the total ends it.
        let many = Refusals {
            tree: "1111111".into(),
            count: 1,
            total: DEFAULT_BLOCK_CAP * TOTAL_PER_TREE_CAP,
        };
        let f = StopFacts {
            refusals: Some(&many),
            again: false,
            ..facts(false, 0)
        };
        assert!(matches!(
            decide_stop(&judged, &f),
            StopCall::HandOver {
                rule: Rule::JudgeBlockCap,
                ..
            }
        ));
    }

    #[test]
    fn verified_work_and_work_handed_to_a_person_pass_silently() {
        let c = claim();
        let tree = shown();
        let facts = StopFacts {
            tree: &tree,
            again: false,
            refusals: None,
            cap: DEFAULT_BLOCK_CAP,
        };
        assert_eq!(
            decide_stop(&[(&c, Judged::Verified)], &facts),
            StopCall::Pass
        );
        assert_eq!(decide_stop(&[], &facts), StopCall::Pass);
        let mut confirmed = claim();
        confirmed.confirm = Some(Confirm {
            rule: "judge.block-cap".into(),
            tree: TREE.into(),
            at: "2026-12-05T10:00:00Z".into(),
        });
        let judged = [(&confirmed, Judged::Unverified(Unverified::NoGates))];
        assert_eq!(decide_stop(&judged, &facts), StopCall::Pass);
    }
}
