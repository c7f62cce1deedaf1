//! The judge of "done" (`baton_core::judge`) over the project: a session's phase claims,
//! recorded by `ledger complete`, judged on the tree as it is now from the ledger's gate lines
//! and the phase's declared gates; and the call a stop hook makes on them. Nothing here runs a
//! gate: a stop costs one failed `open` with nothing claimed, and one `git status` with a claim.

use std::path::Path;

use crate::env::Ctx;
use crate::error::OpError;
use crate::ledgers::{Plan, declared_gates};
use baton_core::judge::{
    Claim, Confirm, DEFAULT_BLOCK_CAP, JudgeRecord, Judged, Refusals, StopCall, StopFacts,
    TreeShown, decide_stop, judge_phase, tree_parts,
};
use baton_core::ledger::{Event, Ledger, parse_ledger};
use baton_store::git::{self, TreeId};
use baton_store::sessions;

/// The environment variable that turns the judge off for one run (`off`, `0` or `false`).
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

/// The verdict on a claim of `plan`, from the gate results `baton gate run` recorded, on `tree`.
fn judge_on(
    ctx: &Ctx,
    plan: &Plan,
    claim: &Claim,
    tree: &TreeId,
    on_head: bool,
) -> Result<Judged, OpError> {
    let layout = ctx.layout()?;
    let root = layout.root.clone();
    let declared = declared(plan, &claim.phase)?;
    let results: Vec<_> = sessions::gate_evidence(&layout, &plan.rel)
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
    Ok(judge_phase(claim, &declared, &results, &same_tree, on_head))
}

/// The verdict on one phase claim, on `tree`.
pub fn judge(ctx: &Ctx, claim: &Claim, tree: &TreeId) -> Result<Judged, OpError> {
    judge_checked(ctx, claim, tree).map(|(judged, _)| judged)
}

/// The verdict on one phase claim, and whether its commits were found on HEAD.
fn judge_checked(ctx: &Ctx, claim: &Claim, tree: &TreeId) -> Result<(Judged, bool), OpError> {
    let root = ctx.layout()?.root;
    let plan = Plan::resolve(ctx, &root.join(&claim.plan))?;
    // The claimed commits are on HEAD when HEAD is the last of them, or is the HEAD they were
    // last found on; git is asked otherwise.
    let on_head = match &tree.head {
        None => false,
        Some(head) if head.starts_with(&claim.to) || claim.on_head.as_ref() == Some(head) => true,
        Some(_) => git::is_ancestor_of_head(&root, &claim.to)?,
    };
    let judged = judge_on(ctx, &plan, claim, tree, on_head)?;
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
            Some(Event::Complete { to, .. }) => Some(Claim {
                plan: plan.rel.clone(),
                phase,
                at: String::new(),
                to: to.clone(),
                gates: Vec::new(),
                on_head: None,
                confirm: None,
            }),
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
        .map(|(c, on)| judge_on(ctx, plan, &c, tree, on).map(|j| (c.phase, j)))
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
}

/// What the judge journals: one event for a plan (`JournalTarget::Plan`), handed to the caller,
/// which keeps it in the store's journal of the plan.
pub type Journal<'a> = &'a mut dyn FnMut(&str, serde_json::Value);

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
        "plan": claim.plan,
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

pub fn claim_phase(
    ctx: &Ctx,
    plan: &Plan,
    phase: &str,
    to: &str,
    journal: Journal,
) -> Result<Claimed, OpError> {
    let claim = Claim {
        plan: plan.rel.clone(),
        phase: phase.to_string(),
        at: baton_core::time::format_ts(ctx.now),
        to: to.to_string(),
        gates: declared(plan, phase)?
            .iter()
            .map(|(n, c)| baton_core::judge::gate_signature(n, c))
            .collect(),
        on_head: None,
        confirm: None,
    };
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
    journal(
        &claim.plan,
        judge_event(ctx, "claimed", &claim, &judged, &tree.id(), None),
    );
    Ok(Claimed {
        claim,
        judged,
        tree: shown(&tree),
        kept,
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
    journal: Journal,
) -> Result<AtStop, OpError> {
    let layout = ctx.layout()?;
    let Some(mut record) = sessions::judge_record(&layout, session) else {
        return Ok(AtStop::Unjudged);
    };
    if record.claims.iter().all(|c| c.confirm.is_some())
        || stop.plan_mode
        || stop.background
        || stop.interrupted
    {
        return Ok(AtStop::Unjudged);
    }
    let settings = judge_settings(ctx)?;
    if !settings.enabled {
        return Ok(AtStop::Unjudged);
    }
    let tree = tree_now(ctx)?;
    let mut found_on_head = Vec::new();
    let judged: Vec<(Claim, Judged)> = record
        .claims
        .iter()
        .map(|c| {
            let (j, on_head) = judge_checked(ctx, c, &tree)?;
            if on_head {
                found_on_head.push((c.plan.clone(), c.phase.clone()));
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
                &claim.plan,
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
        if found_on_head.contains(&(claim.plan.clone(), claim.phase.clone())) {
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
    let plan = Plan::resolve(ctx, plan)?;
    let text =
        baton_store::ledger::read(&plan.ledger)?.ok_or_else(|| crate::ledgers::missing(&plan))?;
    let complete = parse_ledger(&text)
        .events
        .into_iter()
        .rev()
        .find_map(|(_, line)| match line.event {
            Event::Complete { phase: p, to, .. } if p == phase => Some((to, line.at)),
            _ => None,
        });
    let tree = tree_now(ctx)?;
    let Some((to, at)) = complete else {
        return Ok((shown(&tree), None));
    };
    let claim = Claim {
        plan: plan.rel.clone(),
        phase: phase.to_string(),
        at: at.unwrap_or_default(),
        to,
        gates: Vec::new(),
        on_head: None,
        confirm: None,
    };
    let judged = judge(ctx, &claim, &tree)?;
    Ok((shown(&tree), Some((claim, judged))))
}
