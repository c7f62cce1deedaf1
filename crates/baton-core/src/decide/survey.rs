//! What the session-start survey says of work that has no resume command of its own to ask:
//! the batch (its tickets' loops have theirs) and a plan ledger. The survey gathers the facts;
//! these decide, each standing with the rule that gave it.

use crate::Rule;

/// Where a piece of work stands at session start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// Nothing is left to do.
    Finished,
    /// Declared, and nothing of it claimed yet.
    NotStarted,
    /// This session is on it.
    Own,
    /// Another session is on it.
    Live,
    /// Nobody is on it: it can be taken over and resumed.
    Offer,
    /// Nobody is on it: `baton ledger derive` says where to resume.
    Derive,
}

impl Standing {
    /// The verdict, as `--json` gives it, and what qualifies it (`none`, `finished`).
    pub fn parts(self) -> (&'static str, Option<&'static str>) {
        match self {
            Standing::Finished => ("none", Some("finished")),
            Standing::NotStarted => ("none", Some("not started")),
            Standing::Own => ("own", None),
            Standing::Live => ("live", None),
            Standing::Offer => ("offer", None),
            Standing::Derive => ("derive", None),
        }
    }

    /// How `status` and `resume` show it.
    pub fn as_str(self) -> &'static str {
        match self {
            Standing::Finished => "none (finished)",
            Standing::NotStarted => "none (not started)",
            Standing::Own => "own",
            Standing::Live => "live",
            Standing::Offer => "offer",
            Standing::Derive => "derive",
        }
    }
}

/// What the survey knows of the batch.
#[derive(Debug, Clone, Copy, Default)]
pub struct BatchFacts {
    /// `complete` or `abandoned`.
    pub finished: bool,
    /// `active` (not interrupted, paused or stalled).
    pub active: bool,
    /// Written within the liveness window.
    pub recent: bool,
    /// Its owner is this session.
    pub mine: bool,
}

/// A batch is its owner's while it is active and written within the window; otherwise an
/// unfinished batch is offered (`baton batch resume`).
pub fn decide_batch(f: BatchFacts) -> (Standing, Rule) {
    let live = f.active && f.recent;
    if f.finished {
        (Standing::Finished, Rule::ResumeBatchFinished)
    } else if live && f.mine {
        (Standing::Own, Rule::ResumeBatchOwn)
    } else if live {
        (Standing::Live, Rule::ResumeBatchLive)
    } else {
        (Standing::Offer, Rule::ResumeBatchOffer)
    }
}

/// What the survey knows of a plan ledger.
#[derive(Debug, Clone, Copy, Default)]
pub struct LedgerFacts {
    /// A declared or claimed phase is not claimed complete.
    pub open_phase: bool,
    /// The ledger claims anything at all.
    pub any_claim: bool,
    /// Its last line is within the liveness window.
    pub recent: bool,
    /// Its last line was appended by this session, and nothing since (the ledger's lines name
    /// no session: baton records its own writers beside the session files).
    pub mine: bool,
}

/// A ledger with an open phase is its run's while it is written within the window: this
/// session's own when this session appended its last line (it comes back from a compaction,
/// and re-derives rather than trusting what it remembers), another run's otherwise; a quiet
/// ledger's claims are re-checked by `baton ledger derive`, which says where to resume.
pub fn decide_ledger(f: LedgerFacts) -> (Standing, Rule) {
    if !f.open_phase {
        (Standing::Finished, Rule::ResumeLedgerComplete)
    } else if !f.any_claim {
        (Standing::NotStarted, Rule::ResumeLedgerNotStarted)
    } else if f.recent && f.mine {
        (Standing::Own, Rule::ResumeLedgerOwn)
    } else if f.recent {
        (Standing::Live, Rule::ResumeLedgerLive)
    } else {
        (Standing::Derive, Rule::ResumeLedgerDerive)
    }
}

/// What the survey knows of unfinished work that has an owner session (a loop, the batch)
/// when it decides whether a starting session is handed it.
#[derive(Debug, Clone, Copy, Default)]
pub struct HandoverFacts {
    /// Its owner is this session.
    pub mine: bool,
    /// Its state records an interrupt or a pause (a hook, the supervisor, the agent itself).
    pub interrupted: bool,
    /// Its owner's client process as the owner's hooks recorded it on this machine: `Some(false)`
    /// gone, `Some(true)` still running, `None` unknown (no hooks, another machine).
    pub owner_running: Option<bool>,
}

/// Whether a starting session is handed a piece of unfinished work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handover {
    /// Offered, with the accept command: its own session's work, or work whose evidence says
    /// it was interrupted.
    Offer(Option<Rule>),
    /// Merely quiet: one informational line, no accept command. The key match is the guard,
    /// never freshness: quiet work may be another session's long CI wait.
    Aside(Rule),
}

/// A session starting with no ticket is offered its own work and work whose evidence says it
/// was interrupted; another session's work that is only quiet is information. A session
/// started for a ticket asks for it by key (`baton resume <TICKET>`), which offers it.
pub fn decide_handover(f: HandoverFacts) -> Handover {
    if f.mine || f.interrupted {
        Handover::Offer(None)
    } else if f.owner_running == Some(false) {
        Handover::Offer(Some(Rule::ResumeOwnerGone))
    } else {
        Handover::Aside(Rule::ResumeQuietAside)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_standing_is_shown_as_its_parts() {
        use Standing::*;
        for s in [Finished, NotStarted, Own, Live, Offer, Derive] {
            let shown = match s.parts() {
                (v, Some(d)) => format!("{v} ({d})"),
                (v, None) => v.to_string(),
            };
            assert_eq!(shown, s.as_str());
        }
    }

    #[test]
    fn batch_table() {
        let f = |finished, active, recent, mine| BatchFacts {
            finished,
            active,
            recent,
            mine,
        };
        let rows = [
            (
                f(true, false, true, true),
                "none (finished)",
                "resume.batch-finished",
            ),
            (f(false, true, true, true), "own", "resume.batch-own"),
            (f(false, true, true, false), "live", "resume.batch-live"),
            // Silent past the window: nobody is on it, whoever owned it.
            (f(false, true, false, true), "offer", "resume.batch-offer"),
            (f(false, true, false, false), "offer", "resume.batch-offer"),
            // Interrupted or paused: offered even when just written.
            (f(false, false, true, false), "offer", "resume.batch-offer"),
            (f(false, false, true, true), "offer", "resume.batch-offer"),
        ];
        for (facts, standing, rule) in rows {
            let (s, r) = decide_batch(facts);
            assert_eq!((s.as_str(), r.id()), (standing, rule), "{facts:?}");
        }
    }

    #[test]
    fn ledger_table() {
        let f = |open_phase, any_claim, recent| LedgerFacts {
            open_phase,
            any_claim,
            recent,
            mine: false,
        };
        let mine = |recent| LedgerFacts {
            open_phase: true,
            any_claim: true,
            recent,
            mine: true,
        };
        let rows = [
            (
                f(false, true, true),
                "none (finished)",
                "resume.ledger-complete",
            ),
            (
                f(false, true, false),
                "none (finished)",
                "resume.ledger-complete",
            ),
            (
                f(true, false, false),
                "none (not started)",
                "resume.ledger-not-started",
            ),
            (
                f(true, false, true),
                "none (not started)",
                "resume.ledger-not-started",
            ),
            (f(true, true, true), "live", "resume.ledger-live"),
            (f(true, true, false), "derive", "resume.ledger-derive"),
            // This session's last line: its own run, back from a compaction.
            (mine(true), "own", "resume.ledger-own"),
            // Quiet, whoever wrote it: derive where to resume.
            (mine(false), "derive", "resume.ledger-derive"),
        ];
        for (facts, standing, rule) in rows {
            let (s, r) = decide_ledger(facts);
            assert_eq!((s.as_str(), r.id()), (standing, rule), "{facts:?}");
        }
    }

    #[test]
    fn quiet_work_is_offered_only_on_evidence() {
        let f = |mine, interrupted, owner_running| {
            decide_handover(HandoverFacts {
                mine,
                interrupted,
                owner_running,
            })
        };
        assert_eq!(f(true, false, Some(true)), Handover::Offer(None));
        assert_eq!(f(false, true, Some(true)), Handover::Offer(None));
        assert_eq!(
            f(false, false, Some(false)),
            Handover::Offer(Some(Rule::ResumeOwnerGone))
        );
        for running in [Some(true), None] {
            assert_eq!(
                f(false, false, running),
                Handover::Aside(Rule::ResumeQuietAside),
                "quiet, owner {running:?}"
            );
        }
    }
}
