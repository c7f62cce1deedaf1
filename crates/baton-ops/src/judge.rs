//! The judge of "done" (`baton_core::judge`) over the project: the claims a session makes
//! (a phase by `ledger complete`, a loop by `loop finish`, a run by `run finish`), judged on the
//! tree as it is now by the gate results `gate run` recorded and the gates that govern the work
//! (the phase file's, or the project's `[judge.gates]`); and the call a stop hook makes on
//! them. Nothing here runs a gate at a stop: it costs one failed `open` with nothing claimed,
//! and one `git status` with a claim. A goal the session names (`StopContext::goal`) that
//! asks for a `baton verdict` is a claim of that work too.

use std::path::Path;

use crate::env::Ctx;
use crate::error::OpError;
use crate::ledgers::{GateResult, Plan, declared_gates};
use baton_core::client::ClientGoal;
use baton_core::judge::{
    Claim, ClaimKind, Confirm, DEFAULT_BLOCK_CAP, JudgeRecord, Judged, NamedWork, Refusals,
    StopCall, StopFacts, TreeShown, Unverified, decide_stop, judge_phase, named_in_goal,
    tree_parts,
};
use baton_core::ledger::{Event, Ledger, parse_ledger};
use baton_store::git::{self, TreeId};
use baton_store::sessions;
use baton_store::{JournalTarget, StateStore};

/// The environment variable that turns the judge off for one run (`off`, `0`, `false` or `no`).
pub const JUDGE_VARIABLE: &str = "BATON_JUDGE";

/// The tree as the judge identifies it: baton's state directory and every ledger left out.
pub fn tree_now(ctx: &Ctx) -> Result<TreeId, OpError> {
    let layout = ctx.layout()?;
    let state = layout.state_dir_in_tree();
    let excluded: Vec<&Path> = state.as_deref().into_iter().collect();
    git::tree_id(&layout.root, &excluded)
        .map_err(|e| OpError::context("cannot identify the tree the work is judged on", e))
}

/// How a tree is shown beside a verdict.
pub fn shown(tree: &TreeId) -> TreeShown {
    TreeShown {
        id: tree.id(),
        head: tree.head.as_deref().map(|h| h.chars().take(7).collect()),
        changed: tree.changed,
    }
}

/// The gates `plan` declares for `phase`, as (name, command).
fn declared(plan: &Plan, phase: &str) -> Result<Vec<(String, String)>, OpError> {
    let (gates, _) = declared_gates(plan, phase)?;
    Ok(gates.into_iter().map(|g| (g.name, g.command)).collect())
}

/// The project's own gates, for work no plan declares gates for (a ticket's loop): the
/// `[judge.gates]` table of `.baton.toml`, `<name> = "<command>"`, each expected to exit 0.
pub fn project_gates(ctx: &Ctx) -> Result<Vec<(String, String)>, OpError> {
    let Some(judge) = crate::env::project_table(&ctx.layout()?.root, "judge")? else {
        return Ok(Vec::new());
    };
    let Some(gates) = judge.get("gates") else {
        return Ok(Vec::new());
    };
    let bad = |why: String| {
        OpError::usage(format!(
            "{}: [judge.gates] {why}",
            crate::env::PROJECT_SETTINGS
        ))
        .hint("write each gate as `<name> = \"<command>\"` (it passes when it exits 0)")
    };
    let table = gates
        .as_table()
        .ok_or_else(|| bad("is not a table".into()))?;
    table
        .iter()
        .map(|(name, v)| {
            let cmd = v
                .as_str()
                .ok_or_else(|| bad(format!("`{name}` is not a command string")))?;
            if name.contains(' ') || cmd.trim().is_empty() {
                return Err(bad(format!(
                    "`{name}` needs a name without spaces and a command"
                )));
            }
            Ok((name.to_string(), cmd.to_string()))
        })
        .collect()
}

/// The gates that govern a claim's work now.
fn declared_for(ctx: &Ctx, claim: &Claim) -> Result<Vec<(String, String)>, OpError> {
    match claim.kind {
        ClaimKind::Phase => {
            let root = ctx.layout()?.root;
            let plan = Plan::resolve(ctx, &root.join(&claim.plan))?;
            declared(&plan, &claim.phase)
        }
        ClaimKind::Loop | ClaimKind::Run => project_gates(ctx),
    }
}

/// The verdict on a claim, from the gate results `baton gate run` recorded, on `tree`.
fn judge_on(
    ctx: &Ctx,
    claim: &Claim,
    declared: &[(String, String)],
    tree: &TreeId,
    on_head: bool,
) -> Result<Judged, OpError> {
    let layout = ctx.layout()?;
    let root = layout.root.clone();
    let results: Vec<_> = sessions::gate_evidence(&layout, &claim.evidence_key())
        .into_iter()
        .filter(|r| r.phase == claim.phase)
        .collect();
    let now = tree.id();
    let (head_now, changes_now) = tree_parts(&now);
    // A result on another HEAD with the same changes counts when the commits between differ
    // only in ledgers (the ledger committed after the gates ran): asked once per HEAD.
    let asked = std::cell::RefCell::new(std::collections::HashMap::new());
    let same_tree = |id: &str| {
        let (head, changes) = tree_parts(id);
        id == now
            || (changes == changes_now
                && *asked
                    .borrow_mut()
                    .entry(head.to_string())
                    .or_insert_with(|| git::only_ledgers_between(&root, head, head_now)))
    };
    Ok(judge_phase(claim, declared, &results, &same_tree, on_head))
}

/// The verdict on one phase claim, on `tree`.
pub fn judge(ctx: &Ctx, claim: &Claim, tree: &TreeId) -> Result<Judged, OpError> {
    judge_checked(ctx, claim, tree).map(|(judged, _)| judged)
}

/// The verdict on one phase claim, and whether its commits were found on HEAD.
fn judge_checked(ctx: &Ctx, claim: &Claim, tree: &TreeId) -> Result<(Judged, bool), OpError> {
    if claim.unrecorded {
        return Ok((Judged::Unverified(Unverified::NotRecorded), false));
    }
    let root = ctx.layout()?.root;
    let declared = declared_for(ctx, claim)?;
    // The claimed commits are on HEAD when HEAD is the last of them, or is the HEAD they were
    // last found on; git is asked otherwise. A claim that names no commit has none to lose.
    let on_head = match &tree.head {
        _ if claim.to.is_empty() => true,
        None => false,
        Some(head) if head.starts_with(&claim.to) || claim.on_head.as_ref() == Some(head) => true,
        Some(_) => git::is_ancestor_of_head(&root, &claim.to)?,
    };
    let judged = judge_on(ctx, claim, &declared, tree, on_head)?;
    Ok((judged, on_head))
}

/// Every phase a ledger claims complete, judged on `tree` (one git call for all their commits).
pub fn ledger_verdicts(
    ctx: &Ctx,
    plan: &Plan,
    ledger: &Ledger,
    tree: &TreeId,
) -> Result<Vec<(String, Judged)>, OpError> {
    let claims: Vec<Claim> = baton_core::ledger::phase_claims(ledger)
        .into_iter()
        .filter_map(|(phase, complete, _)| match complete {
            Some(Event::Complete { to, .. }) => Some(Claim::phase(
                &plan.rel,
                &phase,
                String::new(),
                to.clone(),
                Vec::new(),
            )),
            _ => None,
        })
        .collect();
    if claims.is_empty() {
        return Ok(Vec::new());
    }
    let commits: Vec<String> = claims.iter().map(|c| c.to.clone()).collect();
    let on_head = if tree.head.is_some() {
        git::reachable_from_head(&plan.root, &commits)?
    } else {
        vec![false; commits.len()]
    };
    claims
        .into_iter()
        .zip(on_head)
        .map(|(c, on)| {
            let declared = declared(plan, &c.phase)?;
            judge_on(ctx, &c, &declared, tree, on).map(|j| (c.phase, j))
        })
        .collect()
}

/// A completion as `ledger complete` records it: judged at once on the tree as it is, and kept
/// as the session's claim when a session made it.
#[derive(Debug)]
pub struct Claimed {
    pub claim: Claim,
    pub judged: Judged,
    pub tree: TreeShown,
    /// Whether the claim was kept for the session's stops (a session made it).
    pub kept: bool,
    /// What went wrong without undoing the claim (its journal line could not be written).
    pub warning: Option<String>,
}

/// What the judge journals at a stop: one event for a piece of work (`JournalTarget::Judge` of
/// its `Claim::evidence_key`), handed to the caller, which opens the store only then.
pub type Journal<'a> = &'a mut dyn FnMut(&str, serde_json::Value);

/// Opens the store, for a judge that needs it only sometimes (a goal that names a loop or a
/// run): a stop that does not need it opens nothing.
pub type Opener<'a> = &'a dyn Fn() -> Result<&'a dyn StateStore, OpError>;

/// The journal event of a claim's verdict: `event` is `claimed`, `refused`, `handed-over` or
/// `verified`.
fn judge_event(
    ctx: &Ctx,
    event: &str,
    claim: &Claim,
    judged: &Judged,
    tree: &str,
    rule: Option<&str>,
) -> serde_json::Value {
    let mut e = serde_json::json!({
        "ts": baton_core::time::format_ts_ms(ctx.now),
        "event": event,
        "work": claim.named(),
        "session": ctx.session(),
        "phase": claim.phase,
        "verdict": judged.word(),
        "tree": tree,
    });
    if *judged != Judged::Verified {
        e["why"] = baton_core::judge::why(claim, judged).into();
    }
    if let Some(rule) = rule {
        e["rule"] = rule.into();
    }
    e
}

/// A phase recorded complete (`ledger complete`), its last commit `to`.
pub fn claim_phase(
    ctx: &Ctx,
    plan: &Plan,
    phase: &str,
    to: &str,
    store: &dyn StateStore,
) -> Result<Claimed, OpError> {
    let gates = declared(plan, phase)?;
    let claim = Claim::phase(
        &plan.rel,
        phase,
        baton_core::time::format_ts(ctx.now),
        to.to_string(),
        signatures(&gates),
    );
    claim_work(ctx, claim, store)
}

/// A ticket's loop finished complete (`loop finish --status complete`), at HEAD. A loop is
/// judged only where the project declares its gates (`[judge.gates]`): `None` elsewhere, since
/// nothing there says what done is.
pub fn claim_loop(
    ctx: &Ctx,
    ticket: &str,
    key: &str,
    store: &dyn StateStore,
) -> Result<Option<Claimed>, OpError> {
    claim_by_project_gates(
        ctx,
        |at, to, gates| Claim::of_loop(ticket, key, at, to, gates),
        store,
    )
}

/// A single run finished complete (`run finish`), at HEAD: judged, as a loop is, only where
/// the project declares its gates.
pub fn claim_run(ctx: &Ctx, id: &str, store: &dyn StateStore) -> Result<Option<Claimed>, OpError> {
    claim_by_project_gates(ctx, |at, to, gates| Claim::of_run(id, at, to, gates), store)
}

fn claim_by_project_gates(
    ctx: &Ctx,
    make: impl FnOnce(String, String, Vec<String>) -> Claim,
    store: &dyn StateStore,
) -> Result<Option<Claimed>, OpError> {
    let gates = project_gates(ctx)?;
    if gates.is_empty() {
        return Ok(None);
    }
    let root = ctx.layout()?.root;
    let head = git::head_and_index(&root)?.head.unwrap_or_default();
    let claim = make(
        baton_core::time::format_ts(ctx.now),
        head.chars().take(7).collect(),
        signatures(&gates),
    );
    claim_work(ctx, claim, store).map(Some)
}

fn signatures(gates: &[(String, String)]) -> Vec<String> {
    gates
        .iter()
        .map(|(n, c)| baton_core::judge::gate_signature(n, c))
        .collect()
}

/// A claim judged at once on the tree as it is, kept for the session's stops when a session
/// made it, and journaled with its verdict (`JournalTarget::Judge`).
fn claim_work(ctx: &Ctx, claim: Claim, store: &dyn StateStore) -> Result<Claimed, OpError> {
    let tree = tree_now(ctx)?;
    let judged = judge(ctx, &claim, &tree)?;
    let mut kept = false;
    if let Some(session) = ctx.session() {
        let layout = ctx.layout()?;
        let mut record = sessions::judge_record(&layout, session).unwrap_or_else(|| JudgeRecord {
            session: session.to_string(),
            ..JudgeRecord::default()
        });
        record.claim(claim.clone());
        sessions::write_judge_record(&layout, &record)?;
        kept = true;
    }
    let event = judge_event(ctx, "claimed", &claim, &judged, &tree.id(), None);
    let warning = store
        .append_journal(JournalTarget::Judge(&claim.evidence_key()), &event)
        .err()
        .map(|e| format!("warning: the verdict was not kept in the judge's journal: {e}"));
    Ok(Claimed {
        claim,
        judged,
        tree: shown(&tree),
        kept,
        warning,
    })
}

/// A session's claims, each judged on the tree as it is now.
#[derive(Debug)]
pub struct Verdicts {
    pub tree: TreeShown,
    pub judged: Vec<(Claim, Judged)>,
}

/// The verdicts on a session's claims; `None` when it has claimed nothing.
pub fn verdicts(ctx: &Ctx, session: &str) -> Result<Option<Verdicts>, OpError> {
    let layout = ctx.layout()?;
    let Some(record) = sessions::judge_record(&layout, session) else {
        return Ok(None);
    };
    let tree = tree_now(ctx)?;
    let judged = record
        .claims
        .into_iter()
        .map(|c| judge(ctx, &c, &tree).map(|j| (c, j)))
        .collect::<Result<_, _>>()?;
    Ok(Some(Verdicts {
        tree: shown(&tree),
        judged,
    }))
}

/// What the client says about the stop, from its payload.
#[derive(Debug, Clone, Default)]
pub struct StopContext {
    /// The client continues after a refused stop (`stop_hook_active`).
    pub again: bool,
    /// The session is in plan mode: nothing is claimed by planning.
    pub plan_mode: bool,
    /// The client says background tasks still run: the work may not be done yet.
    pub background: bool,
    /// The turn did not end on its own: the user stopped it, or the client reports its failure
    /// on the stop itself (Cursor's `status: aborted|error`).
    pub interrupted: bool,
    /// The goal the session works toward, as its client records it.
    pub goal: Option<ClientGoal>,
}

/// What a stop hook does, and what the judge recorded.
#[derive(Debug, PartialEq, Eq)]
pub enum AtStop {
    /// Nothing to judge (no claims, the judge off, or a guard): the stop passes, no git call.
    Unjudged,
    Judged(StopCall),
}

/// The judge's settings: the project's `.baton.toml` `[judge]` table, and `BATON_JUDGE` for one
/// run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JudgeSettings {
    pub enabled: bool,
    pub cap: u32,
}

pub fn judge_settings(ctx: &Ctx) -> Result<JudgeSettings, OpError> {
    let mut settings = JudgeSettings {
        enabled: true,
        cap: DEFAULT_BLOCK_CAP,
    };
    if let Some(table) = crate::env::project_table(&ctx.layout()?.root, "judge")? {
        let bad = |why: &str| {
            OpError::usage(format!("{}: [judge] {why}", crate::env::PROJECT_SETTINGS))
                .hint("write it as `[judge]` with `enabled = false` or `refusals = 3`")
        };
        if let Some(v) = table.get("enabled") {
            settings.enabled = v
                .as_bool()
                .ok_or_else(|| bad("`enabled` is not true or false"))?;
        }
        if let Some(v) = table.get("refusals") {
            settings.cap = v
                .as_integer()
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| bad("`refusals` is not a whole number of 0 or more"))?;
        }
    }
    if ctx.settings.judge_off {
        settings.enabled = false;
    }
    Ok(settings)
}

/// The judge at a session's stop: with nothing claimed, nothing is read but one missing file;
/// with claims, the tree is identified and each claim judged. A refusal is counted per tree; a
/// stop let through unverified hands its claims to a person (`confirm`).
pub fn at_stop(
    ctx: &Ctx,
    session: &str,
    stop: &StopContext,
    store: Opener,
    journal: Journal,
) -> Result<AtStop, OpError> {
    let layout = ctx.layout()?;
    let record = sessions::judge_record(&layout, session);
    // A goal is taken up once each time the client records it anew, and only one that names
    // baton's work.
    let goal = stop.goal.as_ref().filter(|g| {
        record.as_ref().and_then(|r| r.goal.as_ref()) != Some(&g.mark)
            && named_in_goal(&g.condition).is_some()
    });
    if (record.is_none() && goal.is_none()) || stop.plan_mode || stop.background || stop.interrupted
    {
        return Ok(AtStop::Unjudged);
    }
    let settings = judge_settings(ctx)?;
    if !settings.enabled {
        return Ok(AtStop::Unjudged);
    }
    let mut record = record.unwrap_or_else(|| JudgeRecord {
        session: session.to_string(),
        ..JudgeRecord::default()
    });
    // The work a goal claims, journaled as claimed with its verdict at this stop.
    let mut by_goal = None;
    if let Some(goal) = goal {
        record.goal = Some(goal.mark.clone());
        if let Some(claim) = goal_claim(ctx, goal)?
            && !record.claims.iter().any(|c| c.same_work(&claim))
        {
            by_goal = Some(claim.clone());
            record.claims.push(claim);
        }
        if record.claims.iter().all(|c| c.confirm.is_some()) {
            sessions::write_judge_record(&layout, &record)?;
            return Ok(AtStop::Unjudged);
        }
    } else if record.claims.iter().all(|c| c.confirm.is_some()) {
        return Ok(AtStop::Unjudged);
    }
    // A goal's claim becomes the work's recorded completion once there is one.
    for claim in record.claims.iter_mut().filter(|c| c.unrecorded) {
        if let Some(found) = recorded(ctx, claim, store)? {
            *claim = found;
        }
    }
    let tree = tree_now(ctx)?;
    let mut found_on_head = Vec::new();
    let judged: Vec<(Claim, Judged)> = record
        .claims
        .iter()
        .map(|c| {
            let (j, on_head) = judge_checked(ctx, c, &tree)?;
            if on_head {
                found_on_head.push(c.clone());
            }
            Ok::<_, OpError>((c.clone(), j))
        })
        .collect::<Result<_, _>>()?;
    let refs: Vec<(&Claim, Judged)> = judged.iter().map(|(c, j)| (c, j.clone())).collect();
    let tree_shown = shown(&tree);
    let call = decide_stop(
        &refs,
        &StopFacts {
            tree: &tree_shown,
            again: stop.again,
            refusals: record.refusals.as_ref(),
            cap: settings.cap,
        },
    );
    let id = tree.id();
    let open = |c: &Claim, v: &Judged| c.confirm.is_none() && *v != Judged::Verified;
    for (claim, judged) in &judged {
        if by_goal.as_ref().is_some_and(|g| g.same_work(claim)) {
            let mut event = judge_event(ctx, "claimed", claim, judged, &id, None);
            event["by"] = "goal".into();
            journal(&claim.evidence_key(), event);
        }
        let event = match &call {
            StopCall::Pass if *judged == Judged::Verified => Some(("verified", None)),
            StopCall::Refuse { .. } if open(claim, judged) => Some(("refused", None)),
            StopCall::HandOver { rule, .. } if open(claim, judged) => {
                Some(("handed-over", Some(rule.id())))
            }
            _ => None,
        };
        if let Some((event, rule)) = event {
            journal(
                &claim.evidence_key(),
                judge_event(ctx, event, claim, judged, &id, rule),
            );
        }
    }
    match &call {
        StopCall::Pass => {
            // Verified claims are done with; a new claim starts the count again.
            record
                .claims
                .retain(|c| judged.iter().any(|(j, v)| j == c && *v != Judged::Verified));
            record.refusals = None;
        }
        StopCall::Refuse { .. } => {
            let count = record
                .refusals
                .as_ref()
                .filter(|r| r.tree == tree.id())
                .map_or(0, |r| r.count);
            let total = record.refusals.as_ref().map_or(0, |r| r.total);
            record.refusals = Some(Refusals {
                tree: tree.id(),
                count: count + 1,
                total: total + 1,
            });
        }
        StopCall::HandOver { rule, .. } => {
            for claim in &mut record.claims {
                let open = judged
                    .iter()
                    .any(|(c, v)| c == claim && *v != Judged::Verified);
                if open && claim.confirm.is_none() {
                    claim.confirm = Some(Confirm {
                        rule: rule.id().to_string(),
                        tree: tree.id(),
                        at: baton_core::time::format_ts(ctx.now),
                    });
                }
            }
            record.refusals = None;
        }
    }
    // Where the claimed commits were found on HEAD, the next stop there asks git nothing.
    for claim in &mut record.claims {
        if found_on_head.iter().any(|c: &Claim| c.same_work(claim)) {
            claim.on_head.clone_from(&tree.head);
        }
    }
    sessions::write_judge_record(&layout, &record)?;
    Ok(AtStop::Judged(call))
}

/// A phase of a plan judged on the tree as it is, whoever claimed it: the claim is the
/// ledger's last `complete` line of the phase, and `None` when the ledger has none.
pub fn judge_plan_phase(
    ctx: &Ctx,
    plan: &Path,
    phase: &str,
) -> Result<(TreeShown, Option<(Claim, Judged)>), OpError> {
    let resolved = Plan::resolve(ctx, plan)?;
    if baton_store::ledger::read(&resolved.ledger)?.is_none() {
        return Err(crate::ledgers::missing(&resolved));
    }
    let claim = recorded_phase(ctx, plan, phase)?;
    let tree = tree_now(ctx)?;
    let Some(claim) = claim else {
        return Ok((shown(&tree), None));
    };
    let judged = judge(ctx, &claim, &tree)?;
    Ok((shown(&tree), Some((claim, judged))))
}

/// The claim a plan's ledger makes of a phase: its last `complete` line, or `None` (with no
/// ledger too).
fn recorded_phase(ctx: &Ctx, plan: &Path, phase: &str) -> Result<Option<Claim>, OpError> {
    let plan = Plan::resolve(ctx, plan)?;
    let Some(text) = baton_store::ledger::read(&plan.ledger)? else {
        return Ok(None);
    };
    Ok(parse_ledger(&text)
        .events
        .into_iter()
        .rev()
        .find_map(|(_, line)| match line.event {
            Event::Complete { phase: p, to, .. } if p == phase => Some((to, line.at)),
            _ => None,
        })
        .map(|(to, at)| Claim::phase(&plan.rel, phase, at.unwrap_or_default(), to, Vec::new())))
}

/// The claim the session's goal makes of the work it names, before any completion of it is
/// found (`recorded`): unverified until the work is recorded complete. `None` for a goal that
/// names no work of baton's. A plan is named from the project root, as `baton goal` names it.
fn goal_claim(ctx: &Ctx, goal: &ClientGoal) -> Result<Option<Claim>, OpError> {
    let Some(named) = named_in_goal(&goal.condition) else {
        return Ok(None);
    };
    let at = baton_core::time::format_ts(ctx.now);
    let claim = match named {
        NamedWork::Phase { plan, phase } => {
            let plan = Plan::resolve(ctx, &ctx.layout()?.root.join(plan))?;
            Claim::phase(&plan.rel, &phase, at, String::new(), Vec::new())
        }
        NamedWork::Ticket(ticket) => {
            let key = crate::ticket_loop::Target::derive(ctx, std::ffi::OsStr::new(&ticket)).key;
            Claim::of_loop(&ticket, &key, at, String::new(), Vec::new())
        }
        NamedWork::Run(id) => Claim::of_run(run_id(&id)?.as_str(), at, String::new(), Vec::new()),
    };
    Ok(Some(Claim {
        unrecorded: true,
        ..claim
    }))
}

fn run_id(id: &str) -> Result<baton_core::run_id::RunId, OpError> {
    baton_core::run_id::RunId::parse(id)
        .map_err(|e| OpError::usage(format!("the session's goal names run {id}: {e}")))
}

/// The completion recorded of the work a goal alone claims (`Claim::unrecorded`), whoever
/// recorded it: the ledger's last `complete` line of the phase, or the loop or the run finished
/// complete. `None` while there is none.
fn recorded(ctx: &Ctx, claim: &Claim, store: Opener) -> Result<Option<Claim>, OpError> {
    let finished = match claim.kind {
        ClaimKind::Phase => {
            let plan = ctx.layout()?.root.join(&claim.plan);
            return recorded_phase(ctx, &plan, &claim.phase);
        }
        ClaimKind::Loop => store()?
            .read_loop(&claim.key)?
            .is_some_and(|l| l.state.status == baton_core::model::LoopStatus::Complete),
        ClaimKind::Run => store()?
            .read_run(&run_id(&claim.key)?)?
            .is_some_and(|r| r.state.status == baton_core::model::RunStatus::Complete),
    };
    Ok(finished.then(|| Claim {
        unrecorded: false,
        ..claim.clone()
    }))
}

/// Runs the project's gates (`[judge.gates]`) for the loop of `ticket` (key `key`), or the one
/// named, each on the tree as it is, and records each result with its tree as the judge's
/// evidence for the loop (`loop/<KEY>`). A loop has no ledger: the evidence is its record.
pub fn run_loop_gates(
    ctx: &Ctx,
    ticket: &str,
    key: &str,
    only: Option<&str>,
    timeout: std::time::Duration,
) -> Result<Vec<GateResult>, OpError> {
    let claim = Claim::of_loop(ticket, key, String::new(), String::new(), Vec::new());
    run_project_gates(ctx, &claim, ("BATON_TICKET", ticket), only, timeout)
}

/// `run_loop_gates` for a single run, with BATON_RUN_ID set.
pub fn run_run_gates(
    ctx: &Ctx,
    id: &str,
    only: Option<&str>,
    timeout: std::time::Duration,
) -> Result<Vec<GateResult>, OpError> {
    let claim = Claim::of_run(id, String::new(), String::new(), Vec::new());
    run_project_gates(ctx, &claim, ("BATON_RUN_ID", id), only, timeout)
}

fn run_project_gates(
    ctx: &Ctx,
    claim: &Claim,
    named: (&str, &str),
    only: Option<&str>,
    timeout: std::time::Duration,
) -> Result<Vec<GateResult>, OpError> {
    let layout = ctx.layout()?;
    let mut gates = project_gates(ctx)?;
    if let Some(only) = only {
        gates.retain(|(name, _)| name == only);
    }
    if gates.is_empty() {
        return Err(OpError::usage(format!(
            "no project gates{} to run for {}",
            only.map(|g| format!(" named {g}")).unwrap_or_default(),
            claim.named()
        ))
        .hint("declare them in .baton.toml as `[judge.gates]` with `<name> = \"<command>\"` (docs/judge.md)"));
    }
    let root = layout.root.to_string_lossy().into_owned();
    let mut ran = Vec::new();
    for (name, cmd) in gates {
        let tree = tree_now(ctx)?;
        let env = [
            ("BATON_PROJECT_ROOT", root.as_str()),
            named,
            ("BATON_GATE", name.as_str()),
        ];
        let run = baton_store::gate::run_gate(&cmd, &layout.root, &env, timeout)?;
        let pass = !run.timed_out && run.exit == Some(0);
        let result = baton_core::judge::result_on_tree(
            &run.status_text(timeout),
            &tree.id(),
            &run.last_line,
        );
        let changed_tree = tree_now(ctx).is_ok_and(|after| after.id() != tree.id());
        sessions::record_gate_evidence(
            &layout,
            &claim.evidence_key(),
            &[baton_core::judge::GateResult {
                phase: String::new(),
                name: name.clone(),
                cmd: cmd.clone(),
                pass,
                result: result.clone(),
                tree: tree.id(),
                at: baton_core::time::format_ts_ms(ctx.at_write()?.now),
            }],
        )?;
        ran.push(GateResult {
            line: format!(
                "gate {name} → {} (evidence: {cmd} → {result})",
                if pass { "PASS" } else { "FAIL" }
            ),
            name,
            pass,
            exit: run.exit,
            timed_out: run.timed_out,
            expected: 0,
            seconds: run.seconds,
            changed_tree,
        });
    }
    Ok(ran)
}

/// The loop of `ticket` judged on the tree as it is, whoever finished it; `None` when it is
/// not finished complete.
pub fn judge_loop(
    ctx: &Ctx,
    store: &dyn StateStore,
    ticket: &str,
    key: &str,
) -> Result<(TreeShown, Option<(Claim, Judged)>), OpError> {
    let claim = Claim::of_loop(ticket, key, String::new(), String::new(), Vec::new());
    judge_finished(ctx, claim, || {
        Ok(store
            .read_loop(key)?
            .is_some_and(|l| l.state.status == baton_core::model::LoopStatus::Complete))
    })
}

/// A single run judged on the tree as it is, whoever finished it; `None` when it is not
/// finished complete.
pub fn judge_run(
    ctx: &Ctx,
    store: &dyn StateStore,
    id: &baton_core::run_id::RunId,
) -> Result<(TreeShown, Option<(Claim, Judged)>), OpError> {
    let claim = Claim::of_run(id.as_str(), String::new(), String::new(), Vec::new());
    judge_finished(ctx, claim, || {
        Ok(store
            .read_run(id)?
            .is_some_and(|r| r.state.status == baton_core::model::RunStatus::Complete))
    })
}

/// Work the project's gates govern, judged once `complete` says it finished complete.
fn judge_finished(
    ctx: &Ctx,
    claim: Claim,
    complete: impl FnOnce() -> Result<bool, OpError>,
) -> Result<(TreeShown, Option<(Claim, Judged)>), OpError> {
    if project_gates(ctx)?.is_empty() {
        return Err(OpError::usage(format!(
            "the project declares no gates, so the completion of {} is not judged here",
            claim.named()
        ))
        .hint("declare them in .baton.toml as `[judge.gates]` with `<name> = \"<command>\"` (docs/judge.md)"));
    }
    let tree = tree_now(ctx)?;
    if !complete()? {
        return Ok((shown(&tree), None));
    }
    let judged = judge(ctx, &claim, &tree)?;
    Ok((shown(&tree), Some((claim, judged))))
}
