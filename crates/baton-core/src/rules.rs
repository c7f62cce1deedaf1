//! Every rule id a reason can carry, with its one-line meaning: the registry that `docs/` is
//! checked against (a test fails when a registered id is missing from the docs, or the docs
//! name one that is not registered). Adding a rule is one line here.

use serde::{Serialize, Serializer};

macro_rules! rules {
    ($($variant:ident => $id:literal: $meaning:literal,)+) => {
        /// A rule of the protocols: what a reason says fired.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Rule {
            $(
                #[doc = $meaning]
                $variant,
            )+
        }

        impl Rule {
            /// Every rule, in id order.
            pub const ALL: &[Rule] = &[$(Rule::$variant,)+];

            /// The stable id printed with a reason (`loop.stale-active`).
            pub fn id(self) -> &'static str {
                match self {
                    $(Rule::$variant => $id,)+
                }
            }

            /// What the rule means, in one line.
            pub fn meaning(self) -> &'static str {
                match self {
                    $(Rule::$variant => $meaning,)+
                }
            }
        }
    };
}

rules! {
    BatchForeignActive => "batch.foreign-active": "another session's batch is active here: only one batch per project root",
    BatchForeignActiveWarning => "batch.foreign-active-warning": "a single ticket proceeds beside another session's active batch",
    BatchNotRunning => "batch.not-running": "the batch is finished, abandoned or not in a state this write applies to",
    BatchOwnActive => "batch.own-active": "this session already runs the project's batch",
    BatchPreviousArchived => "batch.previous-archived": "a finished or taken-over batch was archived to make room for the new one",
    BatchResumed => "batch.resumed": "an interrupted, paused or stalled batch is active again",
    BatchSingleTicket => "batch.single-ticket": "a batch needs two or more tickets; one ticket is a loop of its own",
    ContinueCrash => "continue.crash": "the feature's work stopped without a clean end",
    ContinueCrashDirty => "continue.crash-dirty": "a crash left uncommitted changes in the tree",
    ContinueFeatureDirty => "continue.feature-dirty": "the active feature's directory holds uncommitted changes",
    ContinueLeft => "continue.left": "a delegate returned and nothing processed its result",
    ContinueLeftDirty => "continue.left-dirty": "a session that ended between turns left uncommitted changes in the tree",
    ContinueLeftEnded => "continue.left-ended": "the session ended between turns with the work unfinished",
    ContinuePause => "continue.pause": "the work was paused on purpose",
    ContinuePauseUnclean => "continue.pause-unclean": "a pause left uncommitted changes: it was not at a clean checkpoint",
    ContinueRateLimit => "continue.rate-limit": "the work stopped at a rate limit",
    ContinueReviewNeeded => "continue.review-needed": "a task left REVIEW_NEEDED.md for a human",
    ContinueTimeoutPartial => "continue.timeout-partial": "a delegate hit its cap and left a partial result",
    ContinueTimeoutReviewNeeded => "continue.timeout-review-needed": "a delegate hit its cap and left REVIEW_NEEDED",
    FeatureBadPhase => "feature.bad-phase": "a --phase argument names no phase of the feature protocol",
    FeatureMissingKey => "feature.missing-key": "the feature pointer lacks a required key",
    FeaturePathMissing => "feature.path-missing": "the feature pointer's path cannot be used",
    FeatureTaskConflict => "feature.task-conflict": "one task is named both to resume and as done",
    FeatureTasksUnreadable => "feature.tasks-unreadable": "the feature's TASKS.md cannot be read",
    FeatureUnknownPhase => "feature.unknown-phase": "the feature pointer's phase is not a known phase",
    FeatureUnknownTask => "feature.unknown-task": "a task named is not in TASKS.md",
    FeatureUnreadable => "feature.unreadable": "the active feature cannot be read",
    FeatureWrongBranch => "feature.wrong-branch": "the feature pointer names another branch than the one checked out",
    GateForcedTakeover => "gate.forced-takeover": "state with no owner session was taken over with --force",
    GateForeignLiveOwner => "gate.foreign-live-owner": "another session wrote the state within 10 minutes: it is refused",
    GateNullOwner => "gate.null-owner": "the state records no owner session (legacy state): it needs --force",
    GateStaleEpoch => "gate.stale-epoch": "the writer's owner epoch is behind the state's: another session took it over",
    GateStaleTakeover => "gate.stale-takeover": "a silent or released owner's state was taken over",
    GuardHeldBranch => "guard.held-branch": "a git command would move or delete a branch another live session has checked out",
    GuardSharedStash => "guard.shared-stash": "a git command would take the top of the stash every session of the repository shares",
    GuardSharedTree => "guard.shared-tree": "a git command would rewrite the files or index of a worktree another live session works in",
    JudgeBlockCap => "judge.block-cap": "a session's stops were refused as often as allowed on one tree: its unverified claims go to a person",
    JudgeUnchanged => "judge.unchanged": "a refused stop came back on the same tree: its unverified claims go to a person",
    LedgerCommitsUnchecked => "ledger.commits-unchecked": "the gates pass but the claimed commits could not be checked",
    LedgerCommitsUnreachable => "ledger.commits-unreachable": "a claimed commit is not reachable from HEAD: history was rewritten",
    LedgerCompleteWithoutGate => "ledger.complete-without-gate": "a phase is marked complete with no gate line though it declares gates",
    LedgerCompleteWithoutStart => "ledger.complete-without-start": "a phase is marked complete with no `started` before it",
    LedgerConfirmed => "ledger.confirmed": "the claimed commits are on HEAD and every gate passes now",
    LedgerDirtyTree => "ledger.dirty-tree": "the gates pass, but on a tree with uncommitted changes",
    LedgerForeignPlan => "ledger.foreign-plan": "the ledger names another plan: it is another run's record",
    LedgerGateFails => "ledger.gate-fails": "a declared gate fails now",
    LedgerGateUnreadable => "ledger.gate-unreadable": "a declared gate line cannot be read, so the gates cannot all be re-run",
    LedgerGatesNotRun => "ledger.gates-not-run": "the gates were not re-run: the claim is neither confirmed nor refuted",
    LedgerNoCommits => "ledger.no-commits": "the claimed commit range holds no commit",
    LedgerNoGates => "ledger.no-gates": "no gates declared: the claim is neither confirmed nor refuted",
    LedgerNotStarted => "ledger.not-started": "a phase file declares a phase the ledger never names",
    LedgerOpen => "ledger.open": "the ledger does not claim the phase complete",
    LedgerStartConfirmed => "ledger.start-confirmed": "the last derive confirmed this phase complete: starting it again would redo confirmed work",
    LedgerUncommitted => "ledger.uncommitted": "the ledger holds events git has not committed",
    LedgerUnknownCommit => "ledger.unknown-commit": "a claimed commit does not exist in the repository",
    LoopBranchMissing => "loop.branch-missing": "the loop's branch no longer exists: lost work is judged on HEAD",
    LoopBriefOwed => "loop.brief-owed": "the tier needs a Brief and none is recorded: engineer spawns are refused",
    LoopBriefPaid => "loop.brief-paid": "the owed Brief is recorded: engineer spawns may go on",
    LoopConfirmNeedsChoice => "loop.confirm-needs-choice": "partial work in the tree: a human picks --discard or --commit",
    LoopFreshArchived => "loop.fresh-archived": "the loop was archived so that a fresh one can start",
    LoopInitResumable => "loop.init-resumable": "the ticket already has a resumable loop: resume it rather than start over",
    LoopInterrupted => "loop.interrupted": "the loop was interrupted",
    LoopKeyCollision => "loop.key-collision": "two tickets sanitize to one key; the file belongs to the other",
    LoopKeyFieldMismatch => "loop.key-field-mismatch": "the file's loop_key disagreed with its name and was set from the name",
    LoopLegacyHeld => "loop.legacy-held": "a live session still writes the legacy loop-state.json: it is left in place",
    LoopLiveForeign => "loop.live-foreign": "another session wrote the loop within 10 minutes",
    LoopLostWork => "loop.lost-work": "the state claims work that the branch does not hold",
    LoopModeAutomatic => "loop.mode-automatic": "an iteration boundary with a clean tree: resume without asking",
    LoopModeConfirmDirty => "loop.mode-confirm-dirty": "uncommitted changes in the tree: a human decides what happens to them",
    LoopModeNeverHuman => "loop.mode-never-human": "the state is one only a human resumes",
    LoopModeNeverOverCap => "loop.mode-never-over-cap": "the iteration is over the loop's cap",
    LoopModeNeverTreeUnknown => "loop.mode-never-tree-unknown": "git cannot say whether the tree is clean",
    LoopModeNeverUncovered => "loop.mode-never-uncovered": "no resume rule covers the loop's position",
    LoopModeNeverUnknownPhase => "loop.mode-never-unknown-phase": "the loop's phase is not one the protocol knows",
    LoopModeRespawn => "loop.mode-respawn": "a worker was in flight and left nothing behind: spawn it again",
    LoopNeverNeedsForce => "loop.never-needs-force": "no resume rule covers the loop: accepting it needs --force",
    LoopNoSession => "loop.no-session": "no session id: nothing protects the loop from another session without one",
    LoopNoState => "loop.no-state": "there is no loop state for the ticket",
    LoopNotActive => "loop.not-active": "the loop is not active, so the write does not apply",
    LoopOtherBranch => "loop.other-branch": "the loop ran on another branch than the one checked out",
    LoopOwn => "loop.own": "this session owns the active loop",
    LoopOwnerless => "loop.ownerless": "the loop records no owner session: accepting it needs --force",
    LoopPartialWorkCommitted => "loop.partial-work-committed": "the partial work was committed on accept",
    LoopPartialWorkStashed => "loop.partial-work-stashed": "the partial work was set aside in a git stash on accept",
    LoopRateLimitWait => "loop.rate-limit-wait": "the loop waits for its rate limit to reset",
    LoopReplacedArchived => "loop.replaced-archived": "the previous loop was archived so that a new one can start",
    LoopStaleActive => "loop.stale-active": "the loop is active but silent past the 10-minute liveness window",
    LoopTerminal => "loop.terminal": "the loop is finished: nothing to resume",
    LoopTerminalArchived => "loop.terminal-archived": "the finished loop was archived so that a new one can start",
    LoopTerminalHeld => "loop.terminal-held": "a finished loop is still held by a live session: it is left in place",
    LoopUnknownFinding => "loop.unknown-finding": "a finding id is not in the loop's findings log",
    LoopWaitsForReset => "loop.waits-for-reset": "the loop was interrupted by a rate limit that has not reset: only its own session may resume it",
    ResumeBatchFinished => "resume.batch-finished": "the batch is complete or abandoned: nothing to resume",
    ResumeBatchLive => "resume.batch-live": "another session wrote the active batch within 10 minutes",
    ResumeBatchOffer => "resume.batch-offer": "the batch is unfinished and nobody is on it: it can be resumed",
    ResumeBatchOwn => "resume.batch-own": "this session runs the active batch",
    ResumeInterrupted => "resume.interrupted": "a piece of interrupted work the session-start survey found",
    ResumeLedgerComplete => "resume.ledger-complete": "the ledger claims every phase complete",
    ResumeLedgerDerive => "resume.ledger-derive": "a phase is open and the ledger is quiet: derive where to resume",
    ResumeLedgerLive => "resume.ledger-live": "the ledger was written within 10 minutes: its run is on it",
    ResumeLedgerNotStarted => "resume.ledger-not-started": "the plan declares phases and the ledger has claimed none",
    ResumeLedgerOwn => "resume.ledger-own": "this session appended the ledger's last line within 10 minutes: it re-derives where it is",
    ResumeOwnerGone => "resume.owner-gone": "the quiet work's owner session's client process is gone from this machine: it was interrupted",
    ResumeQuietAside => "resume.quiet-aside": "another session's work is quiet with no evidence it was interrupted: one informational line, never offered at session start",
    RunAgentAlreadyComplete => "run.agent-already-complete": "the agent already has a completion entry: it is never re-dispatched",
    RunAlignmentDrift => "run.alignment-drift": "GOALS, SCOPE or CONSTRAINTS changed since the run was planned",
    RunAlignmentEmpty => "run.alignment-empty": "the alignment file has no GOALS, SCOPE or CONSTRAINTS heading",
    RunAlignmentPartial => "run.alignment-partial": "the alignment file lacks one of the compared headings",
    RunAlignmentUnknown => "run.alignment-unknown": "the run recorded no alignment to compare against",
    RunBatchRouted => "run.batch-routed": "a batch id was given: the batch picks the ticket",
    RunCriticDone => "run.critic-done": "a critic round was recorded against this version of the plan",
    RunCriticOwed => "run.critic-owed": "the run was confirmed against changed alignment: one critic round is owed",
    RunGapOver24h => "run.gap-over-24h": "the plan was last written over 24 hours ago: re-plan",
    RunGapSecurity => "run.gap-security": "the plan is old and names security-sensitive paths",
    RunGapUnsanctioned => "run.gap-unsanctioned": "the plan is over 4 hours old, where ratify is no longer sanctioned",
    RunHeadMoved => "run.head-moved": "HEAD moved since the run was planned",
    RunLockHeld => "run.lock-held": "another holder's live lock is on the run",
    RunLockNotHeld => "run.lock-not-held": "this caller does not hold the run's lock",
    RunNoPlan => "run.no-plan": "the run recorded no cached plan: re-plan",
    RunPlanChanged => "run.plan-changed": "the cached plan was edited since it was validated",
    RunPlanMissing => "run.plan-missing": "the cached plan is gone: re-plan",
    RunPlanUnchanged => "run.plan-unchanged": "a re-plan recorded the cached plan byte for byte",
    RunRatify => "run.ratify": "HEAD, staging, alignment and the lock pass, and the plan is at most 4 hours old",
    RunResumableSamePlan => "run.resumable-same-plan": "a run of the same plan can be resumed instead of started over",
    RunSamePlanInProgress => "run.same-plan-in-progress": "a live holder works on a run of the same plan",
    RunStagedFiles => "run.staged-files": "staged changes would ride along into the run",
    RunStaleEpoch => "run.stale-epoch": "the caller's lease epoch is behind the run's",
}

impl Rule {
    /// The rule with id `id`, if one is registered.
    pub fn from_id(id: &str) -> Option<Rule> {
        Rule::ALL.iter().copied().find(|r| r.id() == id)
    }
}

impl std::fmt::Display for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.id())
    }
}

impl Serialize for Rule {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.id())
    }
}

impl PartialEq<&str> for Rule {
    fn eq(&self, other: &&str) -> bool {
        self.id() == *other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_sorted_and_namespaced() {
        let ids: Vec<&str> = Rule::ALL.iter().map(|r| r.id()).collect();
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(ids, sorted);
        for rule in Rule::ALL {
            let (ns, name) = rule.id().split_once('.').expect("a namespace");
            assert!(!ns.is_empty() && !name.is_empty(), "{rule}");
            assert!(!rule.meaning().is_empty() && !rule.meaning().contains('\n'));
            assert_eq!(Rule::from_id(rule.id()), Some(*rule));
        }
    }
}

/// The registry against the docs: every registered id is documented, and every id the docs
/// name is registered (a renamed or removed rule leaves no stale name behind).
#[cfg(test)]
mod docs {
    use super::Rule;
    use std::collections::BTreeSet;

    fn docs() -> String {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut text = std::fs::read_to_string(root.join("README.md")).unwrap();
        for entry in std::fs::read_dir(root.join("docs")).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "md") {
                text.push_str(&std::fs::read_to_string(path).unwrap());
            }
        }
        text
    }

    /// The names in code spans of `text` of the form `<namespace>.<name>`, for the registry's
    /// namespaces; a file name of that shape (`batch.jsonl`) is not a rule's.
    fn named_ids(text: &str) -> BTreeSet<String> {
        const FILE_TYPES: &[&str] = &["json", "jsonl", "md", "rs", "toml", "lock"];
        let namespaces: BTreeSet<&str> = Rule::ALL
            .iter()
            .map(|r| r.id().split_once('.').unwrap().0)
            .collect();
        text.lines()
            .flat_map(|line| line.split('`').skip(1).step_by(2))
            .filter(|word| {
                word.split_once('.').is_some_and(|(ns, name)| {
                    namespaces.contains(ns)
                        && !name.is_empty()
                        && !FILE_TYPES.contains(&name)
                        && name
                            .bytes()
                            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                })
            })
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn every_rule_is_documented_and_every_documented_rule_exists() {
        let named = named_ids(&docs());
        let registered: BTreeSet<String> = Rule::ALL.iter().map(|r| r.id().to_string()).collect();
        let undocumented: Vec<_> = registered.difference(&named).collect();
        let unknown: Vec<_> = named.difference(&registered).collect();
        assert!(
            undocumented.is_empty(),
            "rules no doc names: {undocumented:?}"
        );
        assert!(
            unknown.is_empty(),
            "docs name rules that are not registered: {unknown:?}"
        );
    }

    #[test]
    fn the_scan_finds_names_and_skips_files() {
        let ids = named_ids(
            "a `loop.stale-active` b `batch.jsonl` c `run.json` `loop.x y`\n`run.head-moved`",
        );
        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        assert_eq!(ids, ["loop.stale-active", "run.head-moved"]);
    }
}
