//! What the session-start survey says of work that has no resume command of its own to ask:
//! the batch (its tickets' loops have theirs) and a plan ledger. The survey gathers the facts;
//! these decide, each standing with the rule that gave it.

use serde::Serialize;

use super::Verdict;
use super::lease::LeaseState;
use super::loop_resume::Mode;
use crate::Rule;

/// The verdict the survey gives a piece of work, as `--json` says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SurveyVerdict {
    /// The verdict its own command gives (`baton resume <TICKET>`, `baton run resume`, …).
    Decided(Verdict),
    /// Nobody is on a ledger: `baton ledger derive` says where to resume.
    Derive,
    /// Another session's quiet work, not offered to this one.
    Quiet,
    /// Its state cannot be read or trusted: a human looks before anything resumes.
    Degraded,
    /// A run whose lease another live session holds, with the verdict its own resume gives.
    LiveRun(Verdict),
}

impl SurveyVerdict {
    /// Nothing to resume (`none`, whatever qualifies it).
    pub fn is_none(self) -> bool {
        self == SurveyVerdict::Decided(Verdict::None)
    }
}

impl std::fmt::Display for SurveyVerdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SurveyVerdict::Decided(v) => f.write_str(v.as_str()),
            SurveyVerdict::Derive => f.write_str("derive"),
            SurveyVerdict::Quiet => f.write_str("quiet"),
            SurveyVerdict::Degraded => f.write_str("degraded"),
            SurveyVerdict::LiveRun(v) => write!(f, "live ({v})"),
        }
    }
}

impl Serialize for SurveyVerdict {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// What qualifies a verdict of `none` or a legacy loop's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Detail {
    /// Nothing is left to do.
    Finished,
    /// Declared, and nothing of it claimed yet.
    NotStarted,
    /// A loop still written to the legacy single state file, `loop-state.json`.
    LegacyLoopFile,
    /// Its state is gone (archived, pruned); its journal is left.
    Archived,
}

impl Detail {
    /// The words printed and in `--json`.
    pub fn as_str(self) -> &'static str {
        match self {
            Detail::Finished => "finished",
            Detail::NotStarted => "not started",
            Detail::LegacyLoopFile => "legacy loop-state.json",
            Detail::Archived => "archived or pruned",
        }
    }
}

impl Serialize for Detail {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// A survey verdict with what qualifies it: the mode a loop's own command names, or a detail.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Call {
    pub verdict: SurveyVerdict,
    pub mode: Option<Mode>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<Detail>,
}

impl Call {
    /// A verdict with nothing to qualify it.
    pub fn of(verdict: SurveyVerdict) -> Call {
        Call {
            verdict,
            mode: None,
            detail: None,
        }
    }

    /// `none (finished)`.
    pub fn finished() -> Call {
        Standing::Finished.call()
    }
}

/// As text shows it: `offer (automatic)`, `none (finished)`, `live`.
impl std::fmt::Display for Call {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let more = self
            .mode
            .map(Mode::as_str)
            .or(self.detail.map(Detail::as_str));
        match more {
            Some(more) => write!(f, "{} ({more})", self.verdict),
            None => write!(f, "{}", self.verdict),
        }
    }
}

/// A loop's row: the verdict and mode of its own resume check, or `none (finished)` when that
/// check would archive a finished loop (no mode then).
pub fn decide_loop(verdict: Verdict, mode: Option<Mode>, archive: bool) -> Call {
    if archive {
        return Call::finished();
    }
    Call {
        verdict: SurveyVerdict::Decided(verdict),
        mode,
        detail: None,
    }
}

/// A run's row: `none (finished)` once it is finished; the verdict of its own resume,
/// qualified as another session's while a live holder keeps its lease.
pub fn decide_run(finished: bool, lease: &LeaseState, verdict: Verdict) -> Call {
    if finished {
        return Call::finished();
    }
    Call::of(match lease {
        LeaseState::Live(_) => SurveyVerdict::LiveRun(verdict),
        _ => SurveyVerdict::Decided(verdict),
    })
}

/// What the survey knows of the active feature.
#[derive(Debug, Clone, Copy, Default)]
pub struct FeatureFacts {
    /// The pointer cannot be trusted as it is.
    pub degraded: bool,
    /// The pointer names a phase that is not finished.
    pub active: bool,
    /// Live work of a known session in the project: `Some(true)` this session's,
    /// `Some(false)` another's.
    pub on_it: Option<bool>,
}

/// A degraded pointer is a human's first; a finished feature is nothing to resume; an active
/// one is the live session's whose work is in the project, else resumed.
pub fn decide_feature(f: FeatureFacts) -> Standing {
    if f.degraded {
        Standing::Degraded
    } else if !f.active {
        Standing::Finished
    } else {
        match f.on_it {
            Some(true) => Standing::Own,
            Some(false) => Standing::Live,
            None => Standing::Resume,
        }
    }
}

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
    /// Nobody is on it: it resumes where its own record says.
    Resume,
    /// It cannot be trusted as it is: a human looks first.
    Degraded,
}

impl Standing {
    /// The verdict, as `--json` gives it, and what qualifies it (`none`, `finished`).
    pub fn call(self) -> Call {
        let (verdict, detail) = match self {
            Standing::Finished => (
                SurveyVerdict::Decided(Verdict::None),
                Some(Detail::Finished),
            ),
            Standing::NotStarted => (
                SurveyVerdict::Decided(Verdict::None),
                Some(Detail::NotStarted),
            ),
            Standing::Own => (SurveyVerdict::Decided(Verdict::Own), None),
            Standing::Live => (SurveyVerdict::Decided(Verdict::Live), None),
            Standing::Offer => (SurveyVerdict::Decided(Verdict::Offer), None),
            Standing::Derive => (SurveyVerdict::Derive, None),
            Standing::Resume => (SurveyVerdict::Decided(Verdict::Resume), None),
            Standing::Degraded => (SurveyVerdict::Degraded, None),
        };
        Call {
            verdict,
            mode: None,
            detail,
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
    fn each_standing_is_shown_and_serialized_as_its_words() {
        use Standing::*;
        let rows = [
            (Finished, "none (finished)", "none", Some("finished")),
            (
                NotStarted,
                "none (not started)",
                "none",
                Some("not started"),
            ),
            (Own, "own", "own", None),
            (Live, "live", "live", None),
            (Offer, "offer", "offer", None),
            (Derive, "derive", "derive", None),
            (Resume, "resume", "resume", None),
            (Degraded, "degraded", "degraded", None),
        ];
        for (s, shown, verdict, detail) in rows {
            let call = s.call();
            assert_eq!(call.to_string(), shown, "{s:?}");
            let json = serde_json::to_value(call).unwrap();
            assert_eq!(json["verdict"], verdict, "{s:?}");
            assert_eq!(json["mode"], serde_json::Value::Null, "{s:?}");
            assert_eq!(json.get("detail").and_then(|d| d.as_str()), detail, "{s:?}");
        }
    }

    #[test]
    fn a_loop_and_a_run_are_shown_as_their_own_commands_say() {
        let offer = decide_loop(Verdict::Offer, Some(Mode::Automatic), false);
        assert_eq!(offer.to_string(), "offer (automatic)");
        assert_eq!(
            serde_json::to_string(&offer).unwrap(),
            r#"{"verdict":"offer","mode":"automatic"}"#
        );
        // A finished loop is archived by its own check: no mode survives it.
        let done = decide_loop(Verdict::None, Some(Mode::Never), true);
        assert_eq!(done.to_string(), "none (finished)");
        assert_eq!(done.mode, None);
        let held = decide_run(false, &LeaseState::Live("B".into()), Verdict::Ratify);
        assert_eq!(held.to_string(), "live (ratify)");
        assert_eq!(
            serde_json::to_value(held).unwrap()["verdict"],
            "live (ratify)"
        );
        assert_eq!(
            decide_run(false, &LeaseState::Free, Verdict::Replan).to_string(),
            "replan"
        );
        assert_eq!(
            decide_run(true, &LeaseState::Mine, Verdict::Ratify).to_string(),
            "none (finished)"
        );
        let legacy = Call {
            detail: Some(Detail::LegacyLoopFile),
            ..Call::of(SurveyVerdict::Decided(Verdict::Live))
        };
        assert_eq!(legacy.to_string(), "live (legacy loop-state.json)");
    }

    #[test]
    fn feature_table() {
        let f = |degraded, active, on_it| {
            decide_feature(FeatureFacts {
                degraded,
                active,
                on_it,
            })
        };
        assert_eq!(f(true, true, Some(true)), Standing::Degraded);
        assert_eq!(f(false, false, Some(true)), Standing::Finished);
        assert_eq!(f(false, true, Some(true)), Standing::Own);
        assert_eq!(f(false, true, Some(false)), Standing::Live);
        assert_eq!(f(false, true, None), Standing::Resume);
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
            assert_eq!(
                (s.call().to_string(), r.id()),
                (standing.to_string(), rule),
                "{facts:?}"
            );
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
            assert_eq!(
                (s.call().to_string(), r.id()),
                (standing.to_string(), rule),
                "{facts:?}"
            );
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
