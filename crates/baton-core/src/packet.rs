//! The resume packet: everything a new session needs to pick up interrupted work, in the five
//! fields of the continuation protocol (INTENT · CONTEXT · CONSTRAINTS · REFERENCES · EXPECTED
//! OUTCOME), so the agent acts on it without reading raw state files.
//!
//! The Markdown is capped at 10,000 characters (Claude Code's cap on injected context) whatever
//! the amount of state: the most urgent work first, then `+N more` with the command that lists
//! everything.

use serde::Serialize;

use crate::decide::Reason;
use crate::decide::continuation::Class;
use crate::decide::survey::{Call, SurveyVerdict};
use crate::text::esc;

/// Claude Code's cap on context a hook injects.
pub const PACKET_CAP: usize = 10_000;
/// The longest line one item contributes, so one hostile state file cannot crowd out the rest.
const LINE_CAP: usize = 600;
/// The most constraints (blockers included) and references one item lists; the rest are
/// counted. With `LINE_CAP`, one item can never fill the packet alone.
const LIST_CAP: usize = 4;
/// The most informational lines about work not offered; the rest are counted.
pub const ASIDE_CAP: usize = 3;

/// At most `LIST_CAP` lines, then one saying how many were left out.
fn capped(mut lines: Vec<String>, label: &str) -> Vec<String> {
    if lines.len() > LIST_CAP {
        let left = lines.len() - (LIST_CAP - 1);
        lines.truncate(LIST_CAP - 1);
        lines.push(format!(
            "{label}: +{left} more (`baton status --json` lists them)"
        ));
    }
    lines
}

/// What a piece of work is, by protocol. The order is the packet's tie-break after urgency.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum WorkKind {
    /// A batch of tickets (the ticket loop).
    Batch,
    /// The active feature (session continuation).
    Feature,
    /// A plan ledger (run-state).
    Ledger,
    /// One ticket's loop (the ticket loop).
    Loop,
    /// A single run (the single-run pipeline).
    Run,
}

impl WorkKind {
    /// The word printed and in `--json`.
    pub fn as_str(self) -> &'static str {
        match self {
            WorkKind::Batch => "batch",
            WorkKind::Feature => "feature",
            WorkKind::Ledger => "ledger",
            WorkKind::Loop => "loop",
            WorkKind::Run => "run",
        }
    }
}

impl std::fmt::Display for WorkKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

impl Serialize for WorkKind {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl PartialEq<&str> for WorkKind {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// One piece of work the packet talks about.
#[derive(Debug, Clone, Serialize)]
pub struct Item {
    pub kind: WorkKind,
    /// What names it: the feature id, the ticket, the batch or run id, the plan directory.
    pub key: String,
    /// Where it stopped: phase, task, step.
    pub position: String,
    /// The verdict its own command gives, as text shows it (`offer (automatic)`, `replan`,
    /// `derive`, …).
    #[serde(serialize_with = "shown")]
    pub verdict: Call,
    /// How it was interrupted; `None` for work that is live, owned by this session, or degraded
    /// so that no class can be trusted.
    pub class: Option<Class>,
    /// The evidence: the rules that fired, from its own decision and from the classification.
    pub reasons: Vec<Reason>,
    /// What the last checkpoint says.
    pub checkpoint: Option<String>,
    /// What happens next.
    pub next: String,
    /// The exact baton command that accepts the resume, and the one that declines it.
    pub accept: Option<String>,
    pub decline: Option<String>,
    /// What must hold while resuming (never re-dispatch, hands off, …).
    pub constraints: Vec<String>,
    /// Blockers and degraded state.
    pub blockers: Vec<String>,
    /// The governing Brief or plan, state files, artifacts.
    pub references: Vec<String>,
    /// Lower is more urgent.
    pub urgency: u8,
}

/// A verdict as text shows it, in `--json` too.
fn shown<S: serde::Serializer>(call: &Call, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_str(call)
}

/// The packet, in the same content for Markdown and JSON.
#[derive(Debug, Clone, Serialize)]
pub struct Packet {
    pub intent: Vec<String>,
    pub context: Vec<String>,
    pub constraints: Vec<String>,
    pub references: Vec<String>,
    pub expected_outcome: Vec<String>,
    /// The items the packet covers, most urgent first.
    pub items: Vec<Item>,
    /// Another session's quiet work, one informational line each (at most `ASIDE_CAP`, then a
    /// count), never offered: no accept command.
    pub not_offered: Vec<String>,
    /// Items left out to keep within the cap, and the command that lists them.
    pub more: usize,
    pub more_command: Option<String>,
}

/// Urgency: a human's decision or a degraded state first, then work in an unknown state, then
/// work ready to resume, then work that waits (paused, or a limit not yet reset).
pub fn urgency(class: Option<Class>, waiting: bool, degraded: bool) -> u8 {
    if degraded {
        return 0;
    }
    match class {
        Some(Class::Timeout) => 1,
        Some(Class::Crash) => 2,
        Some(Class::Left) => 3,
        Some(Class::RateLimit) if !waiting => 4,
        Some(Class::Pause) => 5,
        Some(Class::RateLimit) => 6,
        None => 7,
    }
}

fn clip(s: &str) -> String {
    let s = esc(s);
    if s.chars().count() <= LINE_CAP {
        return s.into_owned();
    }
    let cut: String = s.chars().take(LINE_CAP - 1).collect();
    format!("{cut}…")
}

fn label(item: &Item) -> String {
    format!("{} {}", item.kind, clip(&item.key))
}

/// What one item adds to each field.
struct Lines {
    intent: String,
    context: String,
    constraints: Vec<String>,
    references: Vec<String>,
    outcome: String,
}

impl Lines {
    fn of(item: &Item) -> Lines {
        let class = item
            .class
            .map_or(String::new(), |c| format!(", {}", c.as_str()));
        let why: Vec<String> = item
            .reasons
            .iter()
            .map(|r| format!("{} ({})", r.message, r.rule))
            .collect();
        let mut context = format!("{}: {}", label(item), why.join("; "));
        if let Some(checkpoint) = &item.checkpoint {
            context.push_str(&format!(". Last checkpoint: {checkpoint}"));
        }
        let mut outcome = format!("{}: {}", label(item), item.next);
        if let Some(accept) = &item.accept {
            outcome.push_str(&format!(". Accept: `{accept}`"));
        }
        if let Some(decline) = &item.decline {
            outcome.push_str(&format!(". Decline: `{decline}`"));
        }
        let mut constraints: Vec<String> = item
            .constraints
            .iter()
            .map(|c| clip(&format!("{}: {c}", label(item))))
            .collect();
        constraints.extend(
            item.blockers
                .iter()
                .map(|b| clip(&format!("{}: BLOCKER: {b}", label(item)))),
        );
        let constraints = capped(constraints, &label(item));
        Lines {
            intent: clip(&format!(
                "{}: {} — {}{class}",
                label(item),
                item.position,
                item.verdict
            )),
            context: clip(&context),
            constraints,
            references: capped(
                item.references
                    .iter()
                    .map(|r| clip(&format!("{}: {r}", label(item))))
                    .collect(),
                &label(item),
            ),
            outcome: clip(&outcome),
        }
    }

    /// The Markdown characters these lines add (`- `, the line, a newline each).
    fn chars(&self) -> usize {
        [&self.intent, &self.context, &self.outcome]
            .into_iter()
            .chain(&self.constraints)
            .chain(&self.references)
            .map(|l| l.chars().count() + 3)
            .sum()
    }
}

/// Builds the packet from items in any order: sorted by urgency (then kind, then key in natural
/// order, so the output is stable), and as many as fit in `PACKET_CAP` characters of Markdown.
/// `aside` is one line for each piece of work not offered to this session (`ASIDE_CAP` of them
/// are listed, the rest counted).
pub fn build<'a>(
    items: impl IntoIterator<Item = &'a Item>,
    aside: &[String],
    more_command: &str,
) -> Packet {
    // Sorted as references: only the items that fit are ever copied into the packet.
    let mut items: Vec<&Item> = items.into_iter().collect();
    items.sort_by_cached_key(|i| (i.urgency, i.kind, crate::text::natural_key(&i.key)));
    let mut not_offered: Vec<String> = aside.iter().take(ASIDE_CAP).map(|l| clip(l)).collect();
    if aside.len() > ASIDE_CAP {
        not_offered.push(format!(
            "+{} more not offered here: `{more_command}` lists them",
            aside.len() - ASIDE_CAP
        ));
    }
    let total = items.len();
    // Each item adds its own lines, so the Markdown's length is the skeleton's plus the items'
    // lines: one pass finds how many fit, and only those are ever rendered.
    let skeleton = render_markdown(&assemble(
        &[],
        Vec::new(),
        &not_offered,
        total,
        more_command,
    ))
    .chars()
    .count();
    let mut used = skeleton;
    let mut lines = Vec::new();
    for item in &items {
        let own = Lines::of(item);
        used += own.chars();
        if used > PACKET_CAP {
            break;
        }
        lines.push(own);
    }
    let n = lines.len();
    let mut packet = assemble(&items[..n], lines, &not_offered, total - n, more_command);
    // The skeleton's placeholder lines vanish once items fill their sections, so the estimate
    // errs long and this rarely runs; it keeps the cap exact.
    while !packet.items.is_empty() && render_markdown(&packet).chars().count() > PACKET_CAP {
        let n = packet.items.len() - 1;
        let lines = items[..n].iter().map(|i| Lines::of(i)).collect();
        packet = assemble(&items[..n], lines, &not_offered, total - n, more_command);
    }
    packet
}

fn assemble(
    items: &[&Item],
    lines: Vec<Lines>,
    not_offered: &[String],
    more: usize,
    more_command: &str,
) -> Packet {
    let mut p = Packet {
        intent: Vec::new(),
        context: Vec::new(),
        constraints: Vec::new(),
        references: Vec::new(),
        expected_outcome: Vec::new(),
        items: items.iter().map(|i| (*i).clone()).collect(),
        not_offered: not_offered.to_vec(),
        more,
        more_command: (more > 0).then(|| more_command.to_string()),
    };
    if items.is_empty() && more == 0 && not_offered.is_empty() {
        p.intent.push(
            "Nothing was interrupted: no feature, loop, batch, run or ledger waits to be resumed."
                .into(),
        );
        p.context.push(
            "Every piece of work in the project is finished, live in its own session, or absent."
                .into(),
        );
        p.constraints
            .push("Start new work the usual way; nothing here needs taking over.".into());
        p.references
            .push(format!("`{more_command}` lists everything baton knows of."));
        p.expected_outcome
            .push("Carry on with the task at hand.".into());
        return p;
    }
    if items.is_empty() && more == 0 {
        p.intent.push(
            "Nothing here is this session's to resume: the work below is another session's, quiet, and nothing says it was interrupted.".into(),
        );
        p.context
            .extend(not_offered.iter().map(|l| format!("Not offered here: {l}")));
        p.constraints.push(
            "Do not take that work over from here: it may be another session's long wait (CI). A session started for one of them asks for it by key, with the command its line names.".into(),
        );
        p.references
            .push(format!("`{more_command}` lists everything baton knows of."));
        p.expected_outcome
            .push("Carry on with the task at hand.".into());
        return p;
    }
    // Only this session's own work (back from a compaction, or resumed): it was never
    // interrupted, and goes on from where its state stands.
    let own = SurveyVerdict::Decided(crate::Verdict::Own);
    let intent = if items.iter().all(|i| i.verdict.verdict == own) {
        "Go on with this session's own work below from where its state says it stands; do not restart it or redo what is done."
    } else {
        "Resume the interrupted work below where it stopped; do not restart it from scratch or redo what is done."
    };
    p.intent.push(intent.into());
    for l in lines {
        p.intent.push(l.intent);
        p.context.push(l.context);
        p.constraints.extend(l.constraints);
        p.references.extend(l.references);
        p.expected_outcome.push(l.outcome);
    }
    if p.context.is_empty() {
        p.context.push(format!(
            "{more} pieces of work were interrupted; `{more_command}` lists them."
        ));
    }
    p.context
        .extend(not_offered.iter().map(|l| format!("Not offered here: {l}")));
    if p.constraints.is_empty() {
        p.constraints.push("Take over only what the accept commands hand you; work owned by a live session stays its own.".into());
    }
    if p.references.is_empty() {
        p.references.push(format!(
            "`{more_command}` and `baton log <TARGET>` for each item's history."
        ));
    }
    if p.expected_outcome.is_empty() {
        p.expected_outcome.push(format!(
            "Run `{more_command}` and resume the most urgent piece of work first."
        ));
    }
    p
}

/// The packet as Markdown: the five fields as sections, then `+N more`.
pub fn render_markdown(p: &Packet) -> String {
    let mut out = String::from("# Resume packet\n");
    for (title, lines) in [
        ("INTENT", &p.intent),
        ("CONTEXT", &p.context),
        ("CONSTRAINTS", &p.constraints),
        ("REFERENCES", &p.references),
        ("EXPECTED OUTCOME", &p.expected_outcome),
    ] {
        out.push_str(&format!("\n## {title}\n"));
        for line in lines {
            out.push_str(&format!("- {line}\n"));
        }
    }
    if p.more > 0 {
        out.push_str(&format!(
            "\n+{} more: `{}` lists them\n",
            p.more,
            p.more_command.as_deref().unwrap_or("baton status")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(kind: &'static str, key: &str, class: Option<Class>) -> Item {
        let kinds = [
            WorkKind::Batch,
            WorkKind::Feature,
            WorkKind::Ledger,
            WorkKind::Loop,
            WorkKind::Run,
        ];
        Item {
            kind: *kinds.iter().find(|k| **k == kind).unwrap(),
            key: key.into(),
            position: "phase qa, iteration 2".into(),
            verdict: crate::decide::survey::decide_loop(
                crate::Verdict::Offer,
                Some(crate::decide::loop_resume::Mode::Automatic),
                false,
            ),
            class,
            reasons: vec![Reason::new(
                crate::Rule::ContinueCrash,
                "it stopped without a clean end",
            )],
            checkpoint: Some("iteration 1 passed QA".into()),
            next: "re-run the gates first".into(),
            accept: Some(format!("baton resume accept {key}")),
            decline: Some(format!("baton resume fresh {key}")),
            constraints: vec!["never re-dispatch a completed agent".into()],
            blockers: vec![],
            references: vec!["brief: docs/briefs/x.md".into()],
            urgency: urgency(class, false, false),
        }
    }

    #[test]
    fn every_field_is_present_and_non_empty_for_each_class() {
        for class in [
            Class::Pause,
            Class::Crash,
            Class::Timeout,
            Class::Left,
            Class::RateLimit,
        ] {
            let p = build(
                &vec![item("loop", "PROJ-1", Some(class))],
                &[],
                "baton status",
            );
            for (name, field) in [
                ("intent", &p.intent),
                ("context", &p.context),
                ("constraints", &p.constraints),
                ("references", &p.references),
                ("expected_outcome", &p.expected_outcome),
            ] {
                assert!(
                    field.iter().any(|l| !l.trim().is_empty()),
                    "{class:?}: {name} is empty"
                );
            }
            let md = render_markdown(&p);
            for title in [
                "## INTENT",
                "## CONTEXT",
                "## CONSTRAINTS",
                "## REFERENCES",
                "## EXPECTED OUTCOME",
            ] {
                assert!(md.contains(title), "{class:?}: no {title}");
            }
            assert!(md.contains(class.as_str()), "{md}");
            assert!(md.contains("`baton resume accept PROJ-1`"), "{md}");
        }
    }

    #[test]
    fn a_thousand_items_stay_under_the_cap_most_urgent_first() {
        let mut items: Vec<Item> = (0..1000)
            .map(|n| item("loop", &format!("PROJ-{n:04}"), Some(Class::Pause)))
            .collect();
        items.push(item("run", "0123456789abcdef", Some(Class::Timeout)));
        let p = build(&items, &[], "baton status");
        let md = render_markdown(&p);
        assert!(
            md.chars().count() <= PACKET_CAP,
            "{} chars",
            md.chars().count()
        );
        assert_eq!(p.items[0].kind, "run", "the timeout comes first");
        assert!(p.more > 900, "{} left out", p.more);
        assert_eq!(p.items.len() + p.more, 1001);
        assert!(
            md.contains(&format!("+{} more: `baton status`", p.more)),
            "{md}"
        );
    }

    #[test]
    fn one_huge_item_is_clipped_not_dropped() {
        let mut big = item("loop", &"X".repeat(50_000), Some(Class::Crash));
        big.position = "p".repeat(50_000);
        big.next = "n".repeat(50_000);
        let p = build(&vec![big], &[], "baton status");
        assert_eq!(p.items.len(), 1);
        assert!(render_markdown(&p).chars().count() <= PACKET_CAP);
    }

    /// A hundred blocked tasks are counted, not listed: the item still fits, and so do the
    /// less urgent items after it.
    #[test]
    fn an_item_with_a_hundred_blockers_still_leaves_room_for_the_rest() {
        let mut big = item("feature", "F-001", Some(Class::Crash));
        big.blockers = (0..100)
            .map(|n| format!("T-{n:02} BLOCKED: {}", "waiting on the API key ".repeat(20)))
            .collect();
        big.urgency = 0;
        let p = build(
            &vec![big, item("loop", "PROJ-1", Some(Class::Pause))],
            &[],
            "baton status",
        );
        let md = render_markdown(&p);
        assert!(md.chars().count() <= PACKET_CAP);
        assert_eq!(p.items.len(), 2, "{md}");
        assert!(md.contains("+98 more"), "{md}");
    }

    #[test]
    fn nothing_interrupted_still_gives_five_fields() {
        let p = build(&Vec::new(), &[], "baton status");
        assert_eq!(p.more, 0);
        assert!(!p.intent.is_empty() && !p.expected_outcome.is_empty());
    }

    #[test]
    fn equal_urgency_keeps_keys_in_natural_order() {
        let items = ["PROJ-10", "PROJ-2", "PROJ-1"]
            .map(|k| item("loop", k, Some(Class::Crash)))
            .to_vec();
        let p = build(&items, &[], "baton status");
        let keys: Vec<&str> = p.items.iter().map(|i| i.key.as_str()).collect();
        assert_eq!(keys, ["PROJ-1", "PROJ-2", "PROJ-10"]);
    }

    #[test]
    fn work_not_offered_is_one_line_each_capped_with_no_accept() {
        let aside: Vec<String> = (1..=5)
            .map(|n| format!("loop T-{n}: quiet 25m, owner session s{n}"))
            .collect();
        let p = build(
            &vec![item("loop", "PROJ-1", Some(Class::Crash))],
            &aside,
            "baton status",
        );
        assert_eq!(p.not_offered.len(), ASIDE_CAP + 1, "{:?}", p.not_offered);
        assert!(p.not_offered[ASIDE_CAP].starts_with("+2 more"));
        let md = render_markdown(&p);
        assert!(
            md.contains("- Not offered here: loop T-1: quiet 25m"),
            "{md}"
        );
        assert!(!md.contains("T-4"), "{md}");
        assert_eq!(
            md.matches("Accept:").count(),
            1,
            "only the offered item: {md}"
        );
    }
}
