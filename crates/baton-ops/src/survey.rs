//! Gather every piece of work in the project (loops, the batch, runs, ledgers, the feature
//! pointer), each with the verdict its own command gives and, when nobody is on it, how it was
//! interrupted: what `baton resume` (no argument), `baton continue` and `baton status` show.
//!
//! Read-only apart from the repairs every read does (legacy adoption, orphan temp files, a
//! pending resume point), and one `git status` for the whole scan, run while the state files
//! are read.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::env::Ctx;
use crate::error::OpError;
use crate::ledgers::{Plan, declared_phases};
use crate::loops::{adopt_legacy, legacy_held, not_work, work_committed};
use baton_core::decide::continuation::{Class, Signals, classify};
use baton_core::decide::lease::{Here, LeaseState};
use baton_core::decide::loop_resume::{
    Mode, ResumeFacts, claims_engineer_output, decide_loop_resume, is_resumable, resume_after,
};
use baton_core::decide::survey::{
    BatchFacts, Call, Detail, Handover, HandoverFacts, LedgerFacts, Standing, SurveyVerdict,
    decide_batch, decide_feature, decide_handover, decide_ledger, decide_loop, decide_run,
};
use baton_core::ledger::{Event, parse_ledger, phase_claims};
use baton_core::model::{BatchState, BatchStatus, LoopState, LoopStatus, Pauses, RunState};
use baton_core::packet::{Item, WorkKind, urgency};
use baton_core::text::shell_quote;
use baton_core::text::{esc, esc_join};
use baton_core::time::{is_live, parse_ts};
use baton_store::feature::{FeatureFacts, read_feature};
use baton_store::git::{self, Changes};
use baton_store::{RecordKey, StateStore};

/// Who owns a piece of work, and whether they are still on it.
#[derive(Debug, Clone, Serialize)]
pub struct Owner {
    pub session: Option<String>,
    /// Written within the liveness window (or a lease whose holder is not provably gone).
    pub live: bool,
    /// This session.
    pub mine: bool,
    /// The last write, or the lease's last heartbeat.
    pub last_write: Option<String>,
    /// The other machine the owner works on, when its last write (a lease: its holder) came
    /// from one; absent for this machine. Only a shared store (PostgreSQL) records it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub machine: Option<String>,
}

/// `host` when it is another machine than this one.
fn other_machine(host: Option<&str>) -> Option<String> {
    let host = host.filter(|h| !h.is_empty())?;
    (host != baton_store::process::host()).then(|| host.to_string())
}

/// Marks where the owner of the work just pushed works, from the host that wrote it last.
fn owned_on(work: &mut [Work], writer: Option<&str>) {
    if let Some(owner) = work.last_mut().and_then(|w| w.owner.as_mut())
        && owner.session.is_some()
    {
        owner.machine = other_machine(writer);
    }
}

/// One row of the project's work.
#[derive(Debug, Clone)]
pub struct Work {
    pub kind: WorkKind,
    pub key: String,
    pub phase: String,
    pub status: String,
    pub owner: Option<Owner>,
    /// The verdict its own command gives (`own`, `offer`, `live`, `none`, `quiet`,
    /// `degraded`, …), with the mode that command names (`automatic`, `never`, …) or what
    /// qualifies it (`finished`, `not started`, `legacy loop-state.json`).
    pub call: Call,
    pub class: Option<Class>,
    /// The next step its own command gives; none for quiet work, whose aside says why it is
    /// not offered here.
    pub next: Option<String>,
    /// Its place in the packet, when it is interrupted or degraded.
    pub item: Option<Item>,
    /// Another session's quiet work, not offered to this one: what its informational line
    /// says.
    pub aside: Option<Aside>,
}

/// Another session's quiet work, not offered to this starting session, as its informational
/// line tells it.
#[derive(Debug, Clone)]
pub struct Aside {
    /// The rule that decided it.
    pub rule: baton_core::Rule,
    /// The command a session started for it asks for it with, by key.
    pub ask: String,
    /// How long nothing was written, when a last write is recorded.
    pub quiet_for: Option<jiff::SignedDuration>,
    /// Its owner's client process as the owner's hooks recorded it (pid, still running).
    pub process: Option<(u32, bool)>,
}

pub struct Survey {
    pub work: Vec<Work>,
    pub notes: Vec<String>,
    pub pause: Option<Pauses>,
    /// The active feature as read (any resume point a killed write left is completed first).
    pub feature: Option<FeatureFacts>,
    /// This session's claims that are not verified on the tree as it is, with the tree's id:
    /// what the judge refuses its stops on (docs/judge.md).
    pub claims: Option<(
        String,
        Vec<(baton_core::judge::Claim, baton_core::judge::Judged)>,
    )>,
    /// The accounts' windows closed now (SPEC section 11): what a launch would spend into.
    pub windows: Vec<crate::window::Closed>,
}

impl Work {
    /// The verdict with its mode or what qualifies it, as text shows it: `offer (automatic)`,
    /// `none (finished)`.
    pub fn shown_verdict(&self) -> String {
        self.call.to_string()
    }
}

impl Survey {
    /// The packet items of the work, in the survey's order.
    pub fn items(&self) -> impl Iterator<Item = &Item> {
        self.work.iter().filter_map(|w| w.item.as_ref())
    }
}

/// Walks the plan directories for ledgers no deeper than this, and through no more directories
/// than that.
const PLAN_DEPTH: usize = 4;
const PLAN_DIRS_CAP: usize = 2_000;

pub fn survey(ctx: &Ctx, store: &dyn StateStore) -> Result<Survey, OpError> {
    let root = store.layout().root.clone();
    // git status is the slow part on a large tree: it runs while the state files are read.
    let status = std::thread::spawn({
        let root = root.clone();
        move || git::changes(&root)
    });
    let mut notes = Vec::new();
    let exists = store.exists()?;
    let pause = if exists {
        match store.read_pause() {
            Ok(p) => p.map(|l| l.state),
            Err(e) => {
                notes.push(format!(
                    "warning: the pause mark is unreadable: {}",
                    esc(&e.to_string())
                ));
                None
            }
        }
    } else {
        None
    };
    let adoption = if exists {
        adopt_legacy(store, ctx)?
    } else {
        Default::default()
    };
    notes.extend(adoption.notes.iter().cloned());
    let loops = if exists {
        store.scan_loops(None)?
    } else {
        Vec::new()
    };
    let runs = if exists {
        store.list_runs(None)?
    } else {
        Vec::new()
    };
    let batch = if exists { store.read_batch() } else { Ok(None) };
    let ledgers = find_ledgers(&root);
    let changes = match status.join() {
        Ok(Ok(changes)) => Some(changes),
        Ok(Err(e)) => {
            // With the fix: `safe.directory` for a repository git calls dubious.
            let fix = e.hint().map(|h| format!("; {h}")).unwrap_or_default();
            notes.push(format!(
                "warning: git status failed, so the tree is unknown: {}{}",
                esc(&e.to_string()),
                esc(&fix)
            ));
            None
        }
        Err(_) => None,
    };
    // Who is asking, once for every run: the host, the boot and the agent process.
    let here = if runs.is_empty() {
        Default::default()
    } else {
        crate::runs::here(ctx, None, None, false)?.0
    };
    let scan = Scan {
        ctx,
        store,
        changes: changes.as_ref(),
        pause: pause.as_ref(),
        here,
        recorded: Default::default(),
        tree: Default::default(),
        project_gates: Default::default(),
    };
    // A feature that cannot be read (its lock busy, a pending resume point that cannot be
    // completed) is still work the next session must hear about: a degraded row, not silence.
    let mut unreadable_feature = None;
    let feature = match read_feature(
        store.layout(),
        changes.as_ref().unwrap_or(&Changes::default()),
        ctx.now,
        ctx.lock_wait,
    ) {
        Ok(f) => f,
        Err(e) => {
            unreadable_feature = Some(e.to_string());
            None
        }
    };
    if let Some(f) = &feature {
        notes.extend(f.warnings.iter().map(|w| format!("warning: {}", esc(w))));
    }
    let mut work = Vec::new();
    // The loops with a history, listed once when the first interrupted loop is met (a listing
    // that fails leaves every loop to be looked at on its own).
    let with_history = std::cell::OnceCell::new();
    for scanned in loops {
        match scanned.loaded {
            Ok(l) => {
                // State and history agree by the time anyone reads them: an interrupt whose
                // writer was killed before its journal event gets the event back.
                let history = (l.state.status == LoopStatus::Interrupted).then(|| {
                    with_history
                        .get_or_init(|| crate::journal::loops_with_history(store).ok().flatten())
                        .as_ref()
                        .is_none_or(|keys| keys.contains(&scanned.key))
                });
                if history == Some(true)
                    && let Err(e) =
                        crate::journal::restore_interrupt_event(store, &scanned.key, &l.state)
                {
                    notes.push(format!(
                        "warning: the journal of {} could not be mended: {}",
                        esc(&scanned.key),
                        esc(&e.to_string())
                    ));
                }
                work.push(scan.a_loop(&scanned.key, &l.state));
                owned_on(&mut work, l.writer.as_deref());
            }
            Err(e) => notes.push(format!(
                "warning: skipped an unreadable loop: {}",
                esc(&e.to_string())
            )),
        }
    }
    if let Some((key, held)) = &adoption.held {
        let d = legacy_held(
            ctx,
            &held.state,
            baton_core::Verdict::Live,
            &shell_quote(&esc(key)),
        );
        work.push(Work {
            kind: WorkKind::Loop,
            key: key.clone(),
            phase: held.state.position(),
            status: held.state.status.as_str().into(),
            owner: Some(loop_owner(ctx, &held.state)),
            call: Call {
                detail: Some(Detail::LegacyLoopFile),
                ..Call::of(SurveyVerdict::Decided(d.verdict))
            },
            class: None,
            next: d.next,
            item: None,
            aside: None,
        });
    }
    match batch {
        Ok(Some(l)) => {
            work.push(scan.the_batch(&l.state));
            owned_on(&mut work, l.writer.as_deref());
        }
        Ok(None) => {}
        Err(e) => notes.push(format!(
            "warning: skipped the unreadable batch: {}",
            esc(&e.to_string())
        )),
    }
    for (id, loaded) in runs {
        match loaded {
            // One run whose plan or project file cannot be read never stops the scan.
            Ok(l) => match scan.a_run(&id, &l.state, &l.path) {
                Ok(w) => work.push(w),
                Err(e) => notes.push(format!("warning: skipped run {id}: {}", esc(&e.message))),
            },
            Err(e) => notes.push(format!(
                "warning: skipped unreadable run {id}: {}",
                esc(&e.to_string())
            )),
        }
    }
    for ledger in ledgers {
        match scan.a_ledger(&ledger) {
            Ok(Some(w)) => work.push(w),
            Ok(None) => {}
            Err(e) => notes.push(format!(
                "warning: skipped the unreadable ledger {}: {}",
                esc(&ledger.display().to_string()),
                esc(&e.message)
            )),
        }
    }
    if let Some(error) = unreadable_feature {
        work.insert(0, scan.unreadable_feature(&error));
    }
    if let Some(f) = &feature {
        // Live work of a known session in the project means someone is on the feature:
        // this session (own) or another one (hands off).
        let live = |mine: bool| {
            work.iter().any(|w| {
                w.owner
                    .as_ref()
                    .is_some_and(|o| o.live && o.session.is_some() && o.mine == mine)
            })
        };
        let on_it = if live(true) {
            Some(true)
        } else if live(false) {
            Some(false)
        } else {
            None
        };
        work.insert(0, scan.the_feature(f, on_it));
    }
    let claims = scan.open_claims();
    let windows = match crate::window::closed(ctx, store) {
        Ok(windows) => windows,
        Err(e) => {
            notes.push(format!(
                "warning: the accounts' windows cannot be read: {}",
                esc(&e.message)
            ));
            Vec::new()
        }
    };
    Ok(Survey {
        work,
        notes,
        pause,
        feature,
        claims,
        windows,
    })
}

struct Scan<'a> {
    ctx: &'a Ctx,
    store: &'a dyn StateStore,
    changes: Option<&'a Changes>,
    pause: Option<&'a Pauses>,
    here: Here,
    /// The session records kept here, read once on the first lookup.
    recorded: std::cell::OnceCell<std::collections::HashSet<String>>,
    /// The tree claims are judged on, identified on the first ledger that claims a phase
    /// complete (`judge::tree_now`); `None` when git could not say.
    tree: std::cell::OnceCell<Option<baton_store::git::TreeId>>,
    /// The project's own gates (`[judge.gates]`), read once: loops and runs finished complete
    /// are judged by them where there are any.
    project_gates: std::cell::OnceCell<bool>,
}

fn loop_owner(ctx: &Ctx, state: &LoopState) -> Owner {
    let last = state.liveness(ctx.now);
    Owner {
        session: state.session_id.clone(),
        live: state.status == LoopStatus::Active && is_live(ctx.now, last),
        mine: ctx.session().is_some() && state.owner() == ctx.session(),
        last_write: last.map(baton_core::time::format_ts),
        machine: None,
    }
}

impl Scan<'_> {
    /// The judge's verdict on work finished complete (a loop's or a run's claim), as a row shows
    /// it: `judged on tree 5823990: verified`; `None` where the project declares no gates.
    fn judged(&self, claim: &baton_core::judge::Claim) -> Option<String> {
        let gates = *self
            .project_gates
            .get_or_init(|| crate::judge::project_gates(self.ctx).is_ok_and(|g| !g.is_empty()));
        if !gates {
            return None;
        }
        let tree = self
            .tree
            .get_or_init(|| crate::judge::tree_now(self.ctx).ok())
            .as_ref()?;
        let judged = crate::judge::judge(self.ctx, claim, tree).ok()?;
        Some(format!("judged on tree {}: {}", tree.id(), judged.word()))
    }

    /// This session's open claims (none handed to a person) that are not verified now.
    fn open_claims(
        &self,
    ) -> Option<(
        String,
        Vec<(baton_core::judge::Claim, baton_core::judge::Judged)>,
    )> {
        let session = self.ctx.session()?;
        let record = baton_store::sessions::judge_record(self.store.layout(), session)?;
        let open: Vec<_> = record
            .claims
            .into_iter()
            .filter(|c| c.confirm.is_none())
            .collect();
        if open.is_empty() {
            return None;
        }
        let tree = self
            .tree
            .get_or_init(|| crate::judge::tree_now(self.ctx).ok())
            .as_ref()?;
        let judged: Vec<_> = open
            .into_iter()
            .filter_map(|c| {
                let j = crate::judge::judge(self.ctx, &c, tree).ok()?;
                (j != baton_core::judge::Judged::Verified).then_some((c, j))
            })
            .collect();
        (!judged.is_empty()).then(|| (tree.id(), judged))
    }

    fn a_loop(&self, key: &str, state: &LoopState) -> Work {
        let ctx = self.ctx;
        let layout = self.store.layout();
        // A loop started with no ticket is named by its key, from any session.
        let ticket = state
            .ticket_id
            .clone()
            .filter(|t| !t.is_empty())
            .unwrap_or_else(|| key.to_string());
        let t = shell_quote(&esc(&ticket));
        let resumable = is_resumable(state, ctx.now);
        let tree = self.changes.filter(|_| resumable).map(|c| {
            let excluded = not_work(layout, state);
            let refs: Vec<&Path> = excluded.iter().map(PathBuf::as_path).collect();
            c.tree_status(&refs)
        });
        // Whether the work was committed matters only when the state says an engineer
        // returned: asking git for it on every loop would cost a process each.
        let engineer_returned = state
            .phase()
            .is_some_and(|p| claims_engineer_output(p, state.last_phase_action.as_deref()));
        let committed = (tree.is_some() && engineer_returned)
            .then(|| work_committed(&layout.root, state))
            .flatten();
        let d = decide_loop_resume(&ResumeFacts {
            ticket_arg: &t,
            state: Some(state),
            me: ctx.session(),
            now: ctx.now,
            tree_dirty: tree.as_ref().map(|t| t.dirty),
            checked_out: tree.as_ref().and_then(|t| t.branch.as_deref()),
            work_committed: committed,
            others: &[],
        });
        let owner = loop_owner(ctx, state);
        let position = state.position();
        let judged = (state.status == LoopStatus::Complete)
            .then(|| {
                self.judged(&baton_core::judge::Claim::of_loop(
                    &ticket,
                    key,
                    String::new(),
                    String::new(),
                    Vec::new(),
                ))
            })
            .flatten();
        let mut work = Work {
            kind: WorkKind::Loop,
            key: ticket.clone(),
            phase: judged.map_or_else(|| position.clone(), |j| format!("{position}; {j}")),
            status: state.status.as_str().into(),
            owner: Some(owner.clone()),
            call: decide_loop(d.decision.verdict, d.mode, d.archive),
            class: None,
            next: d.decision.next.clone(),
            item: None,
            aside: None,
        };
        // This session's own active loop, at its start after a compaction or a resume: what
        // it remembers is gone or no record, so the packet hands it where the loop stands.
        if d.decision.verdict == "own" && ctx.session().is_some() {
            work.item = Some(self.own_item(
                WorkKind::Loop,
                &ticket,
                position,
                d.decision.reasons.clone(),
                d.decision.next.clone().unwrap_or_default(),
                vec![
                    format!(
                        "state: {}",
                        self.store.name(&RecordKey::Loop(key.to_string())).display()
                    ),
                    format!("history: `baton log {t}`"),
                ],
            ));
            return work;
        }
        if d.decision.verdict != "offer" {
            return work;
        }
        let paused = self.paused(state.owner(), state.liveness(ctx.now));
        let interrupted = state.status == LoopStatus::Interrupted || paused.0;
        let ask = format!("baton resume {t}");
        let Some(gone) = self.handover(&mut work, interrupted, &ask) else {
            return work;
        };
        let reason = (state.status == LoopStatus::Interrupted)
            .then(|| state.interrupt_reason.as_deref().unwrap_or("unknown"));
        let returned = state
            .last_phase_action
            .as_deref()
            .is_some_and(|a| a.ends_with("returned"));
        let gates = format!(
            "`baton resume {t}` checks the tree and branch; re-run the phase's QA before trusting its output"
        );
        let c = classify(
            &Signals {
                interrupt_reason: reason,
                pause_mark: paused.0,
                pause_reason: paused.1,
                tree_clean: tree.as_ref().map(|t| !t.dirty),
                checkpointed: d.mode == Some(Mode::Automatic),
                returned_unprocessed: returned,
                resume_after: resume_after(state),
                gates: Some(&gates),
                resume_from: &format!("{} at {position}", t),
                ..Signals::default()
            },
            ctx.now,
        );
        let mut blockers = Vec::new();
        if d.mode == Some(Mode::Never) {
            blockers.push(format!(
                "no rule covers this state: a human decides ({})",
                d.decision.next.as_deref().unwrap_or("see `baton resume`")
            ));
        }
        let mut constraints = vec![format!(
            "take the loop over only with the accept command: it fences the previous owner (epoch {})",
            state.owner_epoch
        )];
        if state.open_findings() > 0 {
            constraints.push(format!(
                "{} findings are open; the loop ends only when they are addressed",
                state.open_findings()
            ));
        }
        let mut references = vec![
            format!(
                "state: {}",
                self.store.name(&RecordKey::Loop(key.to_string())).display()
            ),
            format!("history: `baton log {t}`"),
        ];
        if let Some(brief) = &state.brief_path {
            references.insert(0, format!("governing Brief: {}", esc(brief)));
        }
        if let Some(plan) = &state.plan_path {
            references.insert(0, format!("plan: {}", esc(plan)));
        }
        let mut reasons = d.decision.reasons.clone();
        reasons.extend(gone);
        reasons.extend(c.reasons.iter().cloned());
        let degraded = !blockers.is_empty();
        work.class = Some(c.class);
        work.item = Some(Item {
            kind: WorkKind::Loop,
            key: ticket,
            position,
            verdict: work.call,
            class: Some(c.class),
            reasons,
            checkpoint: state
                .loop_state
                .last_engineer_summary
                .as_deref()
                .map(|s| esc(s).into_owned())
                .or_else(|| Some(format!("last write: {}", state.breadcrumb()))),
            next: match &d.decision.next {
                Some(own) => format!("{}; the loop's own next step: {own}", c.next),
                None => c.next.clone(),
            },
            accept: d.accept.clone(),
            decline: d.decline.clone(),
            constraints,
            blockers,
            references,
            urgency: urgency(Some(c.class), c.waiting, degraded),
        });
        work
    }

    fn the_batch(&self, state: &BatchState) -> Work {
        let ctx = self.ctx;
        let last = state.liveness(ctx.now);
        let mine = ctx.session().is_some() && state.owner() == ctx.session();
        let live = state.is_active() && is_live(ctx.now, last);
        let next = crate::batch::next_step(state);
        let mut work = Work {
            kind: WorkKind::Batch,
            key: state.batch_id.clone(),
            phase: state.next_ticket().map_or_else(
                || "no ticket left".into(),
                |t| format!("next ticket {}", esc(&t.ticket_id)),
            ),
            status: state.status.to_string(),
            owner: Some(Owner {
                session: state.session_id.clone(),
                live,
                mine,
                last_write: last.map(baton_core::time::format_ts),
                machine: None,
            }),
            call: Call::of(SurveyVerdict::Decided(baton_core::Verdict::None)),
            class: None,
            next: next.clone(),
            item: None,
            aside: None,
        };
        let (standing, _) = decide_batch(BatchFacts {
            finished: state.is_finished(),
            active: state.is_active(),
            recent: is_live(ctx.now, last),
            mine,
        });
        work.call = standing.call();
        if standing == Standing::Own {
            work.item = Some(self.own_item(
                WorkKind::Batch,
                &state.batch_id,
                work.phase.clone(),
                vec![baton_core::Reason::new(
                    baton_core::Rule::ResumeBatchOwn,
                    "this session runs the active batch",
                )],
                next.clone().unwrap_or_else(|| {
                    "carry on with the batch's next ticket (`baton batch show`)".into()
                }),
                vec![format!(
                    "state: {}",
                    self.store.name(&RecordKey::Batch).display()
                )],
            ));
        }
        if standing != Standing::Offer {
            return work;
        }
        let paused = self.paused(state.owner(), last);
        let interrupted = !state.is_active() || paused.0;
        let Some(gone) = self.handover(&mut work, interrupted, "baton batch resume") else {
            return work;
        };
        let why = state
            .extra
            .get("pause_reason")
            .or_else(|| state.extra.get("interrupt_reason"))
            .and_then(|v| v.as_str())
            .unwrap_or("");
        let reason = match state.status {
            BatchStatus::Interrupted if why.contains("rate") => Some("rate_limit"),
            BatchStatus::Interrupted => Some("unknown"),
            BatchStatus::Paused => Some("pause"),
            _ => None,
        };
        let from = work.phase.clone();
        // A batch that records no owner is taken over only with `--force`.
        let force = if state.owner().is_none() {
            " --force"
        } else {
            ""
        };
        let c = classify(
            &Signals {
                interrupt_reason: reason,
                pause_mark: paused.0,
                pause_reason: paused.1,
                tree_clean: self.tree_clean(),
                checkpointed: true,
                gates: Some("each ticket's own `baton resume <TICKET>` re-checks its loop"),
                resume_from: &from,
                ..Signals::default()
            },
            ctx.now,
        );
        let mut blockers = Vec::new();
        let blocked = esc_join(state.blocked().map(|t| t.ticket_id.as_str()));
        if state.blocked().next().is_some() {
            blockers.push(format!("blocked tickets: {blocked}"));
        }
        work.class = Some(c.class);
        work.item = Some(Item {
            kind: WorkKind::Batch,
            key: state.batch_id.clone(),
            position: from,
            verdict: work.call,
            class: Some(c.class),
            reasons: gone.into_iter().chain(c.reasons.iter().cloned()).collect(),
            checkpoint: Some(format!(
                "{} of {} tickets complete",
                state
                    .tickets
                    .iter()
                    .filter(|t| t.status == "complete")
                    .count(),
                state.tickets.len()
            )),
            // Taking over a batch that names no owner is the human's call: the packet names it
            // and pre-fills no `--force` for an agent to run.
            next: match force.is_empty() {
                true => format!("{}; then {}", c.next, next.unwrap_or_default()),
                false => format!(
                    "{}; then ask the human whether to take over a batch that records no owner (`baton batch resume --force`, or `baton batch finish --status stalled --force`); {}",
                    c.next,
                    next.unwrap_or_default()
                ),
            },
            accept: force.is_empty().then(|| "baton batch resume".to_string()),
            decline: force
                .is_empty()
                .then(|| "baton batch finish --status stalled".to_string()),
            constraints: vec![
                "the batch picks the ticket; each ticket's own `baton resume` picks its phase"
                    .into(),
            ],
            blockers,
            references: vec![
                format!("state: {}", self.store.name(&RecordKey::Batch).display()),
                "history: `baton log batch`".into(),
            ],
            urgency: urgency(Some(c.class), c.waiting, false),
        });
        work.next = Some(c.next);
        work
    }

    /// The packet's item for work this session owns and is running: no class (nothing
    /// interrupted it), no accept (it is already this session's), and the one constraint a
    /// session back from a compaction needs.
    fn own_item(
        &self,
        kind: WorkKind,
        key: &str,
        position: String,
        reasons: Vec<baton_core::Reason>,
        next: String,
        references: Vec<String>,
    ) -> Item {
        Item {
            kind,
            key: key.to_string(),
            position,
            verdict: Standing::Own.call(),
            class: None,
            reasons,
            checkpoint: None,
            next,
            accept: None,
            decline: None,
            constraints: vec![
                "this session's own work: go on from where its state says it stands, not from what the session remembers (a compaction loses it)".into(),
            ],
            blockers: Vec::new(),
            references,
            urgency: urgency(None, false, false),
        }
    }

    /// Whether this starting session is handed `work`, unfinished work with an owner that its
    /// own check offers (`interrupted`: its state records an interrupt or a pause). `None` when
    /// it is not: `work` is quiet, with what its informational line says, `ask` among it (the
    /// command a session started for it asks for it by key with). Otherwise the evidence that
    /// its owner is gone, if that is what decided.
    fn handover(
        &self,
        work: &mut Work,
        interrupted: bool,
        ask: &str,
    ) -> Option<Option<baton_core::Reason>> {
        let owner = work.owner.clone();
        let session = owner.as_ref().and_then(|o| o.session.clone());
        let process = session.as_deref().and_then(|s| self.owner_process(s));
        let facts = HandoverFacts {
            mine: owner.as_ref().is_some_and(|o| o.mine),
            interrupted,
            owner_running: process.map(|(_, running)| running),
        };
        let who = session.as_deref().map_or_else(
            || "no owner session".to_string(),
            |s| format!("owner session {}", esc(s)),
        );
        match decide_handover(facts) {
            Handover::Offer(None) => Some(None),
            Handover::Offer(Some(rule)) => Some(Some(baton_core::Reason::new(
                rule,
                format!(
                    "{who}'s client process (pid {}) is gone from this machine",
                    process.map_or(0, |(pid, _)| pid)
                ),
            ))),
            Handover::Aside(rule) => {
                work.aside = Some(Aside {
                    rule,
                    ask: ask.to_string(),
                    quiet_for: owner
                        .as_ref()
                        .and_then(|o| parse_ts(o.last_write.as_deref()))
                        .map(|t| baton_core::time::age(self.ctx.now, t)),
                    process,
                });
                work.call = Call::of(SurveyVerdict::Quiet);
                // Its next step is why it is not offered here, which its informational line says.
                work.next = None;
                None
            }
        }
    }

    /// The client process of `session` as its hooks recorded it in this project, and whether
    /// it still runs: `None` when no hook recorded one (no hooks, or another machine).
    fn owner_process(&self, session: &str) -> Option<(u32, bool)> {
        let layout = self.store.layout();
        let recorded = self
            .recorded
            .get_or_init(|| baton_store::sessions::recorded(layout));
        if recorded.is_empty() {
            return None;
        }
        baton_core::client::Client::ALL.iter().find_map(|client| {
            let name = baton_store::sessions::record_name(client.as_str(), session);
            if !recorded.contains(&name) {
                return None;
            }
            let files = baton_store::sessions::SessionFiles::new(layout, client.as_str(), session);
            let record = files.read_record()?;
            let (pid, start) = (record.client_pid?, record.client_pid_start?);
            Some((pid, baton_store::process::is_alive(pid, start)))
        })
    }

    /// Whether a pause covers work owned by `owner` and last written at `last_write`, and
    /// what that pause said.
    fn paused(
        &self,
        owner: Option<&str>,
        last_write: Option<jiff::Timestamp>,
    ) -> (bool, Option<&str>) {
        match self.pause.and_then(|p| p.covering(owner, last_write)) {
            Some(mark) => (true, mark.reason.as_deref()),
            None => (false, None),
        }
    }

    /// Whether the tree is clean outside baton's own state directory; `None` when git could
    /// not say.
    fn tree_clean(&self) -> Option<bool> {
        let state = self.store.layout().state_dir_in_tree();
        let excluded: Vec<&Path> = state.as_deref().into_iter().collect();
        self.changes.map(|c| !c.dirty_excluding(&excluded))
    }

    fn a_run(&self, id: &str, run: &RunState, path: &Path) -> Result<Work, OpError> {
        let ctx = self.ctx;
        let root = &self.store.layout().root;
        let mut work = Work {
            kind: WorkKind::Run,
            key: id.to_string(),
            phase: run.completed_agents.last().map_or_else(
                || "no agent completed".into(),
                |c| format!("after {}", esc(&c.name)),
            ),
            status: run.status.to_string(),
            owner: None,
            call: Call::finished(),
            class: None,
            next: None,
            item: None,
            aside: None,
        };
        if run.status.is_finished() {
            if run.status == baton_core::model::RunStatus::Complete
                && let Some(j) = self.judged(&baton_core::judge::Claim::of_run(
                    id,
                    String::new(),
                    String::new(),
                    Vec::new(),
                ))
            {
                work.phase = format!("{}; {j}", work.phase);
            }
            return Ok(work);
        }
        let sections = match &run.alignment {
            Some(a) => Some(crate::run_facts::sections_now(root, &a.path)?),
            None => None,
        };
        let mut repo = self
            .changes
            .map(Changes::head_and_index)
            .unwrap_or_default();
        if let Some(state_dir) = self.store.layout().state_dir_in_tree() {
            repo.staged
                .retain(|p| !Path::new(p).starts_with(&state_dir));
        }
        let (d, lease) =
            crate::runs::decide_now(ctx, root, run, repo, sections, &self.here, false)?;
        let beat = run.lease.as_ref().map(|l| l.heartbeat_at.clone());
        let holder = run.lease.as_ref().and_then(|l| l.session.clone());
        work.owner = Some(Owner {
            session: holder.clone(),
            live: matches!(lease, LeaseState::Live(_) | LeaseState::Mine),
            mine: lease == LeaseState::Mine,
            last_write: beat.clone().or_else(|| run.updated_at.clone()),
            machine: holder
                .as_ref()
                .and_then(|_| other_machine(run.lease.as_ref().map(|l| l.host.as_str()))),
        });
        work.call = decide_run(false, &lease, d.decision.verdict);
        work.next = d.decision.next.clone();
        let stale = matches!(lease, LeaseState::Stale(_));
        match lease {
            LeaseState::Live(_) => return Ok(work),
            LeaseState::Mine => {
                work.item = Some(self.own_item(
                    WorkKind::Run,
                    id,
                    work.phase.clone(),
                    d.decision.reasons.clone(),
                    d.decision.next.clone().unwrap_or_default(),
                    vec![
                        format!("state: {}", path.display()),
                        format!("history: `baton log {id}`"),
                    ],
                ));
                return Ok(work);
            }
            LeaseState::Free | LeaseState::Stale(_) => {}
        }
        let next_step = d
            .restore
            .next_step
            .clone()
            .unwrap_or_else(|| "the next agent".into());
        let last_write = parse_ts(beat.as_deref().or(run.updated_at.as_deref()));
        let gates =
            format!("`baton run resume {id}` re-runs the HEAD, staging, alignment and lock checks");
        let paused = self.paused(holder.as_deref(), last_write);
        let c = classify(
            &Signals {
                interrupt_reason: run.extra.get("interrupt_reason").and_then(|v| v.as_str()),
                pause_mark: paused.0,
                pause_reason: paused.1,
                tree_clean: self.tree_clean(),
                checkpointed: true,
                gates: Some(&gates),
                resume_from: &esc(&next_step),
                ..Signals::default()
            },
            ctx.now,
        );
        let mut blockers = Vec::new();
        if matches!(
            d.decision.verdict,
            baton_core::Verdict::Blocked | baton_core::Verdict::Confirm
        ) {
            blockers.push(
                d.decision
                    .next
                    .clone()
                    .unwrap_or_else(|| d.decision.verdict.as_str().into()),
            );
        }
        let mut references = vec![
            format!("state: {}", path.display()),
            format!("history: `baton log {id}`"),
        ];
        if let Some(plan) = &run.plan {
            references.insert(0, format!("plan: {}", esc(&plan.path)));
        }
        let mut reasons = d.decision.reasons.clone();
        reasons.extend(c.reasons.iter().cloned());
        work.class = Some(c.class);
        work.item = Some(Item {
            kind: WorkKind::Run,
            key: id.to_string(),
            position: work.phase.clone(),
            verdict: work.call,
            class: Some(c.class),
            reasons,
            checkpoint: d
                .restore
                .last
                .as_deref()
                .map(|l| format!("last completed: {}", esc(l))),
            next: format!(
                "{}; the run's own verdict: {}",
                c.next,
                d.decision.next.clone().unwrap_or_default()
            ),
            accept: Some(if d.decision.verdict == "confirm" {
                format!("baton run resume {id} --confirm-alignment")
            } else {
                format!("baton run resume {id}")
            }),
            // Another holder's stale lease is ended only with `--force`.
            decline: Some(format!(
                "baton run finish {id} --status abandoned{}",
                if stale { " --force" } else { "" }
            )),
            constraints: vec![format!(
                "never re-dispatch a completed agent: {}",
                if d.restore.completed_agents.is_empty() {
                    "none yet".into()
                } else {
                    esc_join(d.restore.completed_agents.iter().map(String::as_str))
                }
            )],
            urgency: urgency(Some(c.class), c.waiting, !blockers.is_empty()),
            blockers,
            references,
        });
        work.next = Some(c.next);
        Ok(work)
    }

    fn unreadable_feature(&self, error: &str) -> Work {
        let next = "a human looks at the feature before anything resumes: `baton continue` shows the error".to_string();
        let reason = baton_core::Reason::new(
            baton_core::Rule::FeatureUnreadable,
            format!("the active feature cannot be read: {}", esc(error)),
        );
        Work {
            kind: WorkKind::Feature,
            key: baton_store::feature::POINTER_PATH.into(),
            phase: "unknown".into(),
            status: "degraded".into(),
            owner: None,
            call: Standing::Degraded.call(),
            class: None,
            next: Some(next.clone()),
            item: Some(Item {
                kind: WorkKind::Feature,
                key: baton_store::feature::POINTER_PATH.into(),
                position: "unknown".into(),
                verdict: Standing::Degraded.call(),
                class: None,
                blockers: vec![reason.message.clone()],
                reasons: vec![reason],
                checkpoint: None,
                next,
                accept: None,
                decline: None,
                constraints: vec![
                    "do not rewrite the pointer or its TASKS.md until it reads again".into(),
                ],
                references: vec![format!("pointer: {}", baton_store::feature::POINTER_PATH)],
                urgency: urgency(None, false, true),
            }),
            aside: None,
        }
    }

    /// `on_it`: `Some(true)` when this session has live work in the project, `Some(false)`
    /// when another session has.
    fn the_feature(&self, f: &FeatureFacts, on_it: Option<bool>) -> Work {
        let ctx = self.ctx;
        let root = &self.store.layout().root;
        let p = f.pointer.as_ref();
        let field = |v: Option<&str>| esc(v.unwrap_or("?")).into_owned();
        let key = p
            .and_then(|p| p.id())
            .map_or_else(|| f.pointer_path.display().to_string(), str::to_string);
        let tasks = f.tasks.as_ref();
        let resume = f.resume_task();
        let position = match resume {
            Some(t) => format!(
                "phase {}, task {} {}",
                field(p.and_then(|p| p.phase())),
                esc(&t.id),
                esc(&t.title)
            ),
            None => format!("phase {}", field(p.and_then(|p| p.phase()))),
        };
        let mut work = Work {
            kind: WorkKind::Feature,
            key: key.clone(),
            phase: position.clone(),
            status: field(p.and_then(|p| p.phase())),
            owner: None,
            call: Call::finished(),
            class: None,
            next: None,
            item: None,
            aside: None,
        };
        let shown = |path: &Path| esc(&path.display().to_string()).into_owned();
        let mut references = vec![format!("pointer: {}", shown(&f.pointer_path))];
        references.extend(
            f.tasks_path
                .as_deref()
                .map(|t| format!("tasks: {}", shown(t))),
        );
        references.extend(
            f.review_needed_path
                .as_deref()
                .filter(|_| f.review_needed.is_some())
                .map(|r| format!("REVIEW_NEEDED: {}", shown(r))),
        );
        references.extend(
            f.handover
                .as_deref()
                .map(|h| format!("handover: {}", shown(h))),
        );
        let standing = decide_feature(baton_core::decide::survey::FeatureFacts {
            degraded: f.is_degraded(),
            active: f.is_active(),
            on_it,
        });
        work.call = standing.call();
        if standing == Standing::Degraded {
            work.status = "degraded".into();
            let next = "a human fixes the feature pointer (the problems below) before anything resumes: it cannot be trusted as it is".to_string();
            work.next = Some(next.clone());
            work.item = Some(Item {
                kind: WorkKind::Feature,
                key,
                position,
                verdict: Standing::Degraded.call(),
                class: None,
                reasons: f.problems.clone(),
                checkpoint: None,
                next,
                accept: None,
                decline: None,
                constraints: vec!["do not rewrite the pointer or its TASKS.md until it is fixed; `baton continue --set-resume-point` refuses".into()],
                blockers: f.problems.iter().map(|r| format!("{} ({})", r.message, r.rule)).collect(),
                references,
                urgency: urgency(None, false, true),
            });
            return work;
        }
        match standing {
            Standing::Own => {
                work.next = Some("this session is on it: carry on".into());
                return work;
            }
            Standing::Live => {
                work.next =
                    Some("another session's work in this project is live: hands off".into());
                return work;
            }
            Standing::Resume => {}
            _ => return work,
        }
        let review = f.review_needed.as_ref();
        let last_write = [Some(f.pointer_path.as_path()), f.tasks_path.as_deref()]
            .into_iter()
            .flatten()
            .filter_map(|p| {
                std::fs::metadata(root.join(p))
                    .and_then(|m| m.modified())
                    .ok()
            })
            .filter_map(|t| jiff::Timestamp::try_from(t).ok())
            .max();
        let from = match resume {
            Some(t) => format!("task {} {}", esc(&t.id), esc(&t.title)),
            None => "the next phase".into(),
        };
        // The feature's own bookkeeping (the pointer, TASKS.md, REVIEW_NEEDED.md, HANDOVER.md)
        // is what a resume point and a review request write: it is not unfinished work.
        let bookkeeping: Vec<&Path> = [
            Some(f.pointer_path.as_path()),
            f.tasks_path.as_deref(),
            f.review_needed_path.as_deref(),
            f.handover.as_deref(),
        ]
        .into_iter()
        .flatten()
        .collect();
        let work_paths: Vec<&String> = f
            .dirty
            .iter()
            .chain(f.scope_dirty.iter().flatten())
            .filter(|p| !bookkeeping.iter().any(|b| Path::new(p.as_str()) == *b))
            .collect();
        // Without git's answer the feature's changes are unknown, never assumed clean.
        let known = self.changes.is_some();
        let dirty = !work_paths.is_empty();
        let paused = self.paused(None, last_write);
        // A rate limit that ended the turn of the session on the feature, when nothing of the
        // feature was written since (`continuation::record_feature_interrupt`).
        let interrupted = self
            .pause
            .and_then(|pauses| pauses.feature_interrupt_of(p.and_then(|p| p.id()), last_write));
        let c = classify(
            &Signals {
                interrupt_reason: interrupted.map(|i| i.reason.as_str()),
                resume_after: interrupted.and_then(|i| i.resume_after()),
                pause_mark: paused.0,
                pause_reason: paused.1,
                tree_clean: known.then_some(!dirty),
                // `[~]` marks where the next session starts (a resume point sets it), so a
                // task in progress is checkpointed when nothing of it is left uncommitted.
                checkpointed: known && !dirty,
                review_needed: review.is_some(),
                partial_result: review.is_some_and(|r| r.partial.is_some()),
                gates: Some("`aspis preflight` and the phase's gate"),
                resume_from: &from,
                ..Signals::default()
            },
            ctx.now,
        );
        let mut reasons = c.reasons.clone();
        if let Some(r) = review {
            reasons.push(baton_core::Reason::new(
                baton_core::Rule::ContinueReviewNeeded,
                format!(
                    "REVIEW_NEEDED for task {}: {}",
                    esc(r.task.as_deref().unwrap_or("?")),
                    esc(r.headline())
                ),
            ));
        }
        if dirty {
            let mut paths = f.dirty.clone();
            paths.extend(f.scope_dirty.iter().flatten().cloned());
            reasons.push(baton_core::Reason::new(
                baton_core::Rule::ContinueFeatureDirty,
                format!(
                    "uncommitted in the feature: {}",
                    esc_join(paths.iter().map(String::as_str))
                ),
            ));
        }
        let mut constraints = Vec::new();
        if let Some(scope) = p.and_then(|p| p.scope()) {
            constraints.push(format!(
                "stay in the feature's scope: allowed {}; forbidden {}",
                esc_join(scope.allowed.iter().map(String::as_str)),
                esc_join(scope.forbidden.iter().map(String::as_str))
            ));
        }
        constraints.push(format!(
            "tasks marked [x] are done: do not redo them (mode {})",
            field(p.and_then(|p| p.mode()))
        ));
        let blockers: Vec<String> = tasks
            .map(|t| {
                t.tasks
                    .iter()
                    .filter_map(|task| {
                        task.blocked
                            .as_ref()
                            .map(|b| format!("{} BLOCKED: {}", esc(&task.id), esc(b)))
                    })
                    .collect()
            })
            .unwrap_or_default();
        let checkpoint = match (tasks, resume) {
            (Some(list), Some(t)) => list
                .last_checkpoint_before(t.line)
                .map(|cp| esc(&cp.text).into_owned())
                .or_else(|| {
                    let c = list.counts();
                    Some(format!("{} of {} tasks done", c.done, c.total))
                }),
            (Some(list), None) => {
                let c = list.counts();
                Some(format!("{} of {} tasks done", c.done, c.total))
            }
            _ => None,
        };
        work.class = Some(c.class);
        work.next = Some(c.next.clone());
        work.item = Some(Item {
            kind: WorkKind::Feature,
            key,
            position,
            verdict: work.call,
            class: Some(c.class),
            reasons,
            checkpoint,
            next: c.next,
            accept: Some("baton continue --set-resume-point".into()),
            decline: Some("baton continue --set-resume-point --phase abandoned".into()),
            constraints,
            urgency: urgency(Some(c.class), c.waiting, false),
            blockers,
            references,
        });
        work
    }

    fn a_ledger(&self, path: &Path) -> Result<Option<Work>, OpError> {
        let ctx = self.ctx;
        let root = &self.store.layout().root;
        let Some(text) = baton_store::ledger::read(path)? else {
            return Ok(None);
        };
        let dir = path.parent().unwrap_or(root).to_path_buf();
        let rel = dir.strip_prefix(root).unwrap_or(&dir).display().to_string();
        let plan = Plan {
            root: root.clone(),
            rel: rel.clone(),
            dir,
            ledger: path.to_path_buf(),
        };
        let ledger = parse_ledger(&text);
        let claims = phase_claims(&ledger);
        let declared = declared_phases(&plan)?;
        let claimed_complete = |p: &str| {
            claims
                .iter()
                .any(|(phase, complete, _)| phase == p && complete.is_some())
        };
        let mut phases: Vec<String> = declared.clone();
        for (phase, _, _) in &claims {
            if !phases.contains(phase) {
                phases.push(phase.clone());
            }
        }
        let open = phases.iter().find(|p| !claimed_complete(p)).cloned();
        let last_at = ledger
            .events
            .iter()
            .rev()
            .find_map(|(_, line)| parse_ts(line.at.as_deref()));
        let shown = shell_quote(&esc(&rel));
        let recent = is_live(ctx.now, last_at);
        // The ledger's lines name no session: who appended the last one is what baton recorded
        // beside the session files, when nobody appended since.
        let writer = last_writer(self.store.layout(), &rel, path, ctx.session());
        let mine = writer.as_ref().is_some_and(|(_, mine)| *mine);
        let mut work = Work {
            kind: WorkKind::Ledger,
            key: rel.clone(),
            phase: open.as_deref().map_or_else(
                || "every phase claimed complete".into(),
                |p| format!("phase {}", esc(p)),
            ),
            status: open
                .as_deref()
                .and_then(|p| claims.iter().find(|(phase, _, _)| phase == p))
                .map_or_else(
                    || {
                        if open.is_some() {
                            "not started".into()
                        } else {
                            "complete".into()
                        }
                    },
                    |(_, _, status)| status.clone(),
                ),
            owner: Some(Owner {
                session: writer.as_ref().map(|(session, _)| session.clone()),
                live: recent,
                mine,
                last_write: last_at.map(baton_core::time::format_ts),
                machine: None,
            }),
            call: Call::of(SurveyVerdict::Decided(baton_core::Verdict::None)),
            class: None,
            next: None,
            item: None,
            aside: None,
        };
        // Each phase claimed complete, as the judge finds it on the tree as it is.
        if claims.iter().any(|(_, complete, _)| complete.is_some())
            && let Some(tree) = self
                .tree
                .get_or_init(|| crate::judge::tree_now(ctx).ok())
                .as_ref()
            && let Ok(judged) = crate::judge::ledger_verdicts(ctx, &plan, &ledger, tree)
            && !judged.is_empty()
        {
            let verdicts: Vec<String> = judged
                .iter()
                .map(|(phase, j)| format!("phase {} {}", esc(phase), j.word()))
                .collect();
            work.phase = format!(
                "{}; judged on tree {}: {}",
                work.phase,
                tree.id(),
                verdicts.join(", ")
            );
        }
        let (standing, _) = decide_ledger(LedgerFacts {
            open_phase: open.is_some(),
            any_claim: !claims.is_empty(),
            recent,
            mine,
        });
        work.call = standing.call();
        let Some(open) = open else {
            return Ok(Some(work));
        };
        let started = claims.iter().any(|(p, _, _)| *p == open);
        if standing == Standing::NotStarted {
            work.next = Some(format!(
                "`baton ledger start {shown} --phase {open}` when the work begins"
            ));
            return Ok(Some(work));
        }
        let derive = format!("baton ledger derive {shown} --append");
        work.next = Some(format!(
            "`{derive}` re-runs the gates and appends where to resume"
        ));
        if standing == Standing::Live {
            return Ok(Some(work));
        }
        let last_status = claims
            .iter()
            .find(|(p, _, _)| *p == open)
            .map(|(_, _, s)| s.as_str())
            .unwrap_or("");
        let from = format!("phase {}", esc(&open));
        let died = ledger
            .events
            .iter()
            .last()
            .is_some_and(|(_, l)| matches!(l.event, Event::AgentDied { .. }));
        let writer_session = writer.as_ref().map(|(session, _)| session.as_str());
        let paused = self.paused(writer_session, last_at);
        // A quiet ledger another session was writing is that session's, as a loop is: handed
        // over only on evidence that it stopped. A ledger nobody recorded writing is the
        // run-state protocol's own resume case: derive it.
        let mut gone = None;
        if standing == Standing::Derive && writer_session.is_some() {
            match self.handover(&mut work, died || paused.0, &derive) {
                Some(reason) => gone = reason,
                None => return Ok(Some(work)),
            }
        }
        let mut constraints =
            vec!["nothing the derive confirms is redone; the ledger is append-only".to_string()];
        // This session's own ledger (it is back from a compaction, or resumed) is not an
        // interruption to class: what it remembers doing is no record, and the derive says
        // from STATE.md and git where it is.
        let c = (standing != Standing::Own).then(|| {
            let gates = format!(
                "`baton ledger derive {shown}` re-runs the declared gates of every phase claimed complete"
            );
            classify(
                &Signals {
                    interrupt_reason: died.then_some("agent_died"),
                    pause_mark: paused.0,
                    pause_reason: paused.1,
                    tree_clean: self.tree_clean(),
                    checkpointed: !started,
                    gates: Some(&gates),
                    resume_from: &from,
                    ..Signals::default()
                },
                ctx.now,
            )
        });
        let (reasons, next, decline) = match &c {
            Some(c) => (
                gone.into_iter().chain(c.reasons.iter().cloned()).collect(),
                c.next.clone(),
                Some(format!(
                    "baton ledger block {shown} --phase {} --reason <why it waits>",
                    shell_quote(&esc(&open))
                )),
            ),
            None => {
                constraints.insert(0, "what this session remembers doing before the compaction is inadmissible: STATE.md and git are the record".into());
                (
                    vec![baton_core::Reason::new(
                        baton_core::Rule::ResumeLedgerOwn,
                        format!(
                            "this session appended the last line of {} within 10 minutes",
                            path.display()
                        ),
                    )],
                    format!(
                        "re-derive where this run is before going on: `{derive}` re-runs the gates and appends where to resume"
                    ),
                    None,
                )
            }
        };
        let mut blockers = Vec::new();
        if last_status == "BLOCKED" {
            blockers.push(format!("phase {} is BLOCKED in the ledger", esc(&open)));
        }
        let confirmed: Vec<&str> = phases
            .iter()
            .filter(|p| claimed_complete(p))
            .map(String::as_str)
            .collect();
        work.class = c.as_ref().map(|c| c.class);
        work.item = Some(Item {
            kind: WorkKind::Ledger,
            key: rel.clone(),
            position: from,
            verdict: standing.call(),
            class: work.class,
            reasons,
            checkpoint: Some(if confirmed.is_empty() {
                "no phase claimed complete".into()
            } else {
                format!(
                    "phases claimed complete: {}",
                    esc_join(confirmed.iter().copied())
                )
            }),
            next: next.clone(),
            accept: Some(derive),
            decline,
            constraints,
            urgency: urgency(
                work.class,
                c.as_ref().is_some_and(|c| c.waiting),
                !blockers.is_empty(),
            ),
            blockers,
            references: vec![
                format!("plan: {}/plan.md and its phase files", esc(&rel)),
                format!("ledger: {}", path.display()),
            ],
        });
        if c.is_some() {
            work.next = Some(next);
        }
        Ok(Some(work))
    }
}

/// `plans/**/STATE.md`, in path order, through real directories only (a link named `plans`
/// or inside it is never followed out of the project), and at most `PLAN_DIRS_CAP` directories.
pub(crate) fn find_ledgers(root: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, depth: usize, budget: &mut usize, out: &mut Vec<PathBuf>) {
        if *budget == 0 {
            return;
        }
        *budget -= 1;
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            // `file_type` does not follow links: a linked directory is neither a dir nor a file.
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() && depth < PLAN_DEPTH {
                walk(&entry.path(), depth + 1, budget, out);
            } else if kind.is_file() && entry.file_name() == "STATE.md" {
                out.push(entry.path());
            }
        }
    }
    let plans = root.join("plans");
    let mut out = Vec::new();
    if std::fs::symlink_metadata(&plans).is_ok_and(|m| m.is_dir()) {
        let mut budget = PLAN_DIRS_CAP;
        walk(&plans, 0, &mut budget, &mut out);
    }
    out.sort();
    out
}

/// Who appended the last line of the ledger at `path` (of the plan `rel`), as baton recorded
/// it, and whether that is this session: `None` when nobody with a session did, the hint is
/// lost, or the ledger grew since (someone appended without baton, or without a session).
fn last_writer(
    layout: &baton_store::Layout,
    rel: &str,
    path: &Path,
    me: Option<&str>,
) -> Option<(String, bool)> {
    let writer = baton_store::sessions::ledger_writer(layout, rel)?;
    let len = std::fs::symlink_metadata(path).ok()?.len();
    if writer.len != len {
        return None;
    }
    let mine = me.is_some_and(|me| !me.is_empty() && me == writer.session);
    Some((writer.session, mine))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The survey's detail for a legacy loop names the file the store reads it from.
    #[test]
    fn the_legacy_detail_names_the_legacy_file() {
        assert_eq!(
            Detail::LegacyLoopFile.as_str(),
            format!("legacy {}", baton_store::layout::LEGACY_LOOP_FILE)
        );
    }
}
