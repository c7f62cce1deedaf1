//! The timeline of `baton status --html`: every loop, batch, run and ledger as a lane on one
//! time axis, built from their histories, and the self-contained page that draws it.
//!
//! [`build`] turns lanes of events into what the page shows: who owned each stretch (a
//! segment per owner session), the marks (interrupts with their class, resumes with their
//! verdict or mode, takeovers with both epochs, gate results) and an axis on which long idle
//! stretches are folded to a fixed width. [`render_html`] writes it as one HTML file with its
//! style and script inline and its data as one JSON block: nothing is fetched.

use std::collections::HashMap;

use jiff::Timestamp;
use serde_json::Value;

use crate::journal::JournalEvent as J;

/// What a lane's label says of its work, as `baton status` lists it.
#[derive(Debug, Clone, Default)]
pub struct Label {
    /// `loop`, `batch`, `run` or `ledger`.
    pub kind: String,
    pub key: String,
    pub status: String,
    /// The verdict its own command gives now.
    pub verdict: String,
    /// The interrupt class `baton status` gives it, when it is interrupted.
    pub class: Option<String>,
    pub next: Option<String>,
    /// Where it stands: phase, iteration, step (`qa iteration 2/5 · spawned`).
    pub phase: String,
    /// The session that owns it now, in full.
    pub owner: Option<String>,
    /// Whether that owner is on it, with the age of its last write (`live 2m`, `stale 3h`).
    pub owner_state: Option<String>,
    /// Its place in the order of what needs doing, lower first, when it is an item of the
    /// packet (interrupted or degraded work); `None` for work nobody needs to act on.
    pub urgency: Option<u8>,
    /// The exact baton command that takes the next step, when there is one.
    pub command: Option<String>,
}

/// One piece of work with its history.
#[derive(Debug, Clone, Default)]
pub struct LaneIn {
    pub label: Label,
    /// Whether its owner is still on it: its last stretch of ownership reaches now.
    pub live: bool,
    /// Its last write (a lease: the last heartbeat). Where work stopped without an interrupt
    /// being recorded, its class (`class`) is marked here.
    pub last_write: Option<Timestamp>,
    /// Oldest first.
    pub events: Vec<EventIn>,
}

/// One event of a history: a journal event, or a ledger line in the same shape (`event` its
/// kind, `phase`, and for a gate `pass`).
#[derive(Debug, Clone)]
pub struct EventIn {
    /// `None` for a ledger line written without a time: it is shown at the time before it.
    pub at: Option<Timestamp>,
    pub fields: Value,
    /// What `baton log` prints for it, its time first.
    pub line: String,
}

/// What a mark on a lane stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkKind {
    /// Any other event: a transition, a record, a checkpoint.
    Event,
    Start,
    Interrupt,
    Resume,
    Takeover,
    GatePass,
    GateFail,
    End,
    /// Work that stopped with no interrupt recorded, at its last write, with the class
    /// `baton status` gives it.
    Unrecorded,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    /// Position on the axis, 0 to 100.
    pub x: f64,
    pub at: Timestamp,
    pub kind: MarkKind,
    /// The short text beside it: the interrupt's class and reason, the resume's mode, the
    /// takeover's sessions and epochs, the gate's name.
    pub label: String,
    /// What `baton log` prints for the event.
    pub line: String,
}

/// A stretch of time one session owned the work.
#[derive(Debug, Clone, PartialEq)]
pub struct Segment {
    pub x0: f64,
    pub x1: f64,
    pub from: Timestamp,
    pub to: Timestamp,
    /// The owner session; `None` for a ledger's phase, which records no session.
    pub session: Option<String>,
    pub epoch: Option<u64>,
    /// The phase, for a ledger's stretch.
    pub label: Option<String>,
}

/// A rate limit's wait: from the interrupt to the reset it recorded (`resume_after`).
#[derive(Debug, Clone, PartialEq)]
pub struct Wait {
    pub x0: f64,
    pub x1: f64,
    pub from: Timestamp,
    pub to: Timestamp,
}

#[derive(Debug, Clone)]
pub struct Lane {
    pub label: Label,
    pub segments: Vec<Segment>,
    pub marks: Vec<Mark>,
    pub waits: Vec<Wait>,
}

/// An idle stretch folded on the axis.
#[derive(Debug, Clone, PartialEq)]
pub struct Fold {
    pub x: f64,
    pub from: Timestamp,
    pub to: Timestamp,
}

#[derive(Debug, Clone)]
pub struct Timeline {
    pub title: String,
    pub now: Timestamp,
    pub now_x: f64,
    pub start: Timestamp,
    pub lanes: Vec<Lane>,
    /// Every owner session, in order of first appearance (its colour is its index).
    pub sessions: Vec<String>,
    pub folds: Vec<Fold>,
    /// Where the axis puts a time: between two knots, times are evenly spaced; the page
    /// places its ticks and zooms with them.
    pub knots: Vec<(Timestamp, f64)>,
    pub events: usize,
}

/// A gap between two moments of activity longer than this is idle, and folded to a small fixed
/// width.
const IDLE: i64 = 30 * 60;
/// A shorter gap, but longer than this, is folded too when it would take more than half of the
/// time the axis shows: a burst of work followed by quiet minutes stays readable.
const QUIET: i64 = 5 * 60;

/// The interrupt class a recorded reason belongs to (the timeline's interrupt marks): a session
/// that ended between turns (`session_expiry`) left the work, it did not crash; `unknown` and
/// anything else nobody explained count as a crash.
pub fn class_of_reason(reason: &str) -> &'static str {
    match reason {
        "rate_limit" => "rate_limit",
        "pause" => "pause",
        "timeout" => "timeout",
        "left" | "session_expiry" => "left",
        _ => "crash",
    }
}

fn text(v: &Value) -> Option<&str> {
    v.as_str().filter(|s| !s.is_empty())
}

fn shown(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "none".into(),
        other => other.to_string(),
    }
}

/// A session id as a label shows it: its first 8 characters (the page gives the whole id on
/// hover, and the line `baton log` prints has it).
pub fn short_session(s: &str) -> &str {
    s.char_indices().nth(8).map_or(s, |(i, _)| &s[..i])
}

/// The reset a rate limit's interrupt recorded, when it is later than the interrupt.
fn reset_of(e: &EventIn) -> Option<Timestamp> {
    if e.fields["event"].as_str() != Some("interrupt") {
        return None;
    }
    let reset = crate::time::parse_ts(e.fields["resume_after"].as_str())?;
    (reset > e.at?).then_some(reset)
}

/// The mark of an event, with its label.
fn mark_of(fields: &Value) -> (MarkKind, String) {
    let name = fields["event"].as_str().unwrap_or_default();
    // baton's own events by their names (`journal::JournalEvent`); the ledger's, and those other
    // tools write, as the strings they are.
    let event = J::parse(name);
    match (event, name) {
        (Some(J::Init | J::New | J::Start | J::Adopt | J::Import), _) | (None, "started") => {
            let label = match text(&fields["phase"]) {
                Some(p) => format!("phase {p}"),
                None => name.to_string(),
            };
            (MarkKind::Start, label)
        }
        (Some(J::Interrupt), _) | (None, "agent-died") => {
            let reason = text(&fields["reason"]).unwrap_or(if name == "agent-died" {
                "agent died"
            } else {
                "unknown"
            });
            let class = class_of_reason(reason);
            let label = if class == reason {
                class.to_string()
            } else if reason == "session_expiry" {
                format!("{class}: the session ended between turns")
            } else {
                format!("{class}: {reason}")
            };
            (MarkKind::Interrupt, label)
        }
        (Some(J::Takeover), _) => (
            MarkKind::Takeover,
            format!(
                "{} (epoch {}) → {} (epoch {}){}",
                text(&fields["from_session"]).map_or("nobody", short_session),
                shown(&fields["from_epoch"]),
                text(&fields["to_session"]).map_or("nobody", short_session),
                shown(&fields["to_epoch"]),
                text(&fields["mode"]).map_or(String::new(), |m| format!(", {m}")),
            ),
        ),
        (Some(J::Resume | J::Fresh | J::SuperviseRelaunch), _)
        | (None, "resumed" | "batch.resumed") => {
            let how = text(&fields["verdict"])
                .or(text(&fields["mode"]))
                .map(str::to_string);
            let label = match (event, name, how) {
                (Some(J::Fresh), _, _) => "fresh start".to_string(),
                (Some(J::SuperviseRelaunch), _, _) => "relaunched (automatic)".to_string(),
                (None, "resumed", _) => format!(
                    "resumed, {} phase(s) confirmed",
                    shown(&fields["confirmed"])
                ),
                // The session the interrupt stopped went on by itself (docs/hooks.md).
                (_, _, Some(mode)) if mode == "own-session" => format!(
                    "resumed by its own session ({})",
                    text(&fields["how"]).unwrap_or("prompt")
                ),
                (_, _, Some(how)) => format!("resume: {how}"),
                (_, _, None) => "resume".to_string(),
            };
            (MarkKind::Resume, label)
        }
        (None, "gate") => {
            let gate = text(&fields["gate"]).unwrap_or("gate").to_string();
            if fields["pass"].as_bool() == Some(true) {
                (MarkKind::GatePass, format!("{gate} pass"))
            } else {
                (MarkKind::GateFail, format!("{gate} FAIL"))
            }
        }
        // The guard of shared checkouts (docs/guard.md): a git command refused, one a person let
        // through.
        (None, "refused") if fields.get("work").is_none() => (
            MarkKind::GateFail,
            format!(
                "refused: {} ({})",
                text(&fields["rule"]).unwrap_or("guard"),
                text(&fields["what"]).unwrap_or("a git command")
            ),
        ),
        (None, "allow" | "allowed" | "guard-off") => (MarkKind::Takeover, name.to_string()),
        // The judge's verdicts on a plan's claims (docs/judge.md).
        (None, "claimed" | "refused" | "handed-over" | "verified") => {
            let work = text(&fields["work"]).unwrap_or("the work");
            let verdict = text(&fields["verdict"]).unwrap_or("unverified");
            let label = match name {
                "claimed" if fields["by"] == "goal" => {
                    format!("{work} claimed by the session's goal: {verdict}")
                }
                "claimed" => format!("{work} claimed: {verdict}"),
                "refused" => format!("stop refused: {work} {verdict}"),
                "handed-over" => format!("{work} {verdict}: a person confirms"),
                _ => format!("{work} verified"),
            };
            let kind = match (name, verdict) {
                ("verified", _) | ("claimed", "verified") => MarkKind::GatePass,
                ("handed-over", _) => MarkKind::Interrupt,
                _ => MarkKind::GateFail,
            };
            (kind, label)
        }
        (Some(J::Finish | J::Release), _) | (None, "complete" | "blocked" | "fail") => {
            let label = text(&fields["status"])
                .map(str::to_string)
                .unwrap_or_else(|| name.to_string());
            (MarkKind::End, label)
        }
        _ => (MarkKind::Event, name.to_string()),
    }
}

/// Maps times to positions 0–100, folding every idle gap to the width of `IDLE`.
struct Axis {
    /// Sorted moments of activity and the position each maps to (before scaling).
    points: Vec<(i64, f64)>,
    total: f64,
}

impl Axis {
    fn new(mut times: Vec<i64>) -> (Axis, Vec<(i64, i64, f64)>) {
        times.sort_unstable();
        times.dedup();
        let gaps: Vec<i64> = times.windows(2).map(|w| w[1] - w[0]).collect();
        // Idle: longer than IDLE; or longer than QUIET and more than half of what is left
        // unfolded, taken longest first (a two-minute burst, then twenty quiet minutes).
        let mut folded: Vec<bool> = gaps.iter().map(|g| *g > IDLE).collect();
        let mut order: Vec<usize> = (0..gaps.len()).filter(|i| !folded[*i]).collect();
        order.sort_by_key(|i| std::cmp::Reverse(gaps[*i]));
        let mut active: i64 = order.iter().map(|i| gaps[*i]).sum();
        for i in order {
            if gaps[i] <= QUIET || 2 * gaps[i] <= active {
                break;
            }
            folded[i] = true;
            active -= gaps[i];
        }
        // Each folded gap takes a small fixed share of the axis (less when there are many), so
        // an idle night is as wide as a few minutes of work, whatever the work's length.
        let idle = folded.iter().filter(|f| **f).count() as f64;
        let share = if idle > 0.0 {
            (0.03f64).min(0.5 / idle)
        } else {
            0.0
        };
        let fold = if active > 0 {
            share * active as f64 / (1.0 - idle * share)
        } else {
            1.0
        };
        let mut points = Vec::with_capacity(times.len());
        let mut folds = Vec::new();
        let mut pos = 0.0;
        for (i, t) in times.iter().enumerate() {
            if i > 0 {
                let gap = gaps[i - 1];
                if folded[i - 1] && (gap as f64) > fold {
                    folds.push((times[i - 1], *t, pos + fold / 2.0));
                    pos += fold;
                } else {
                    pos += gap as f64;
                }
            }
            points.push((*t, pos));
        }
        let total = if pos > 0.0 { pos } else { 1.0 };
        let axis = Axis { points, total };
        let folds = folds
            .into_iter()
            .map(|(a, b, p)| (a, b, round(axis.scale(p))))
            .collect();
        (axis, folds)
    }

    fn scale(&self, pos: f64) -> f64 {
        // A little room at both ends, so a mark at either is whole.
        1.0 + pos / self.total * 98.0
    }

    fn x(&self, at: Timestamp) -> f64 {
        let t = at.as_second();
        let i = self.points.partition_point(|(p, _)| *p <= t);
        let pos = match i {
            0 => self.points.first().map_or(0.0, |p| p.1),
            i => {
                let (p, x) = self.points[i - 1];
                match self.points.get(i) {
                    // Inside a folded gap: proportionally within its fixed width.
                    Some((q, y)) => x + (y - x) * ((t - p) as f64 / (q - p) as f64),
                    None => x,
                }
            }
        };
        round(self.scale(pos))
    }
}

fn round(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// Lays out the lanes (kept in the order given: the caller sorts them by urgency) on one axis
/// from the oldest event to `now`.
pub fn build(title: &str, lanes: Vec<LaneIn>, now: Timestamp) -> Timeline {
    let mut times: Vec<i64> = lanes
        .iter()
        .flat_map(|l| {
            let events = l.events.iter().filter_map(|e| e.at);
            // A rate limit's reset, later than now too: its wait is drawn to it.
            let resets = l.events.iter().filter_map(reset_of);
            events
                .chain(resets)
                .chain(l.last_write)
                .map(|t| t.as_second())
        })
        .collect();
    times.push(now.as_second());
    let start = times
        .iter()
        .copied()
        .min()
        .and_then(|s| Timestamp::from_second(s).ok())
        .unwrap_or(now);
    let end = times.iter().copied().max().unwrap_or(now.as_second());
    let (axis, folds) = Axis::new(times);
    let mut out = Vec::with_capacity(lanes.len());
    let mut events = 0;
    for lane in lanes {
        events += lane.events.len();
        out.push(lay_out(&lane, &axis, now));
    }
    // Sessions in the order they first owned anything, so a session keeps its colour from one
    // page to the next while the lanes' order changes.
    let mut owned: Vec<(Timestamp, &str)> = out
        .iter()
        .flat_map(|l| &l.segments)
        .filter_map(|s| Some((s.from, s.session.as_deref()?)))
        .collect();
    owned.sort();
    let mut sessions: Vec<String> = Vec::new();
    for (_, s) in owned {
        if !sessions.iter().any(|x| x == s) {
            sessions.push(s.to_string());
        }
    }
    let folds: Vec<Fold> = folds
        .into_iter()
        .filter_map(|(a, b, x)| {
            Some(Fold {
                x,
                from: Timestamp::from_second(a).ok()?,
                to: Timestamp::from_second(b).ok()?,
            })
        })
        .collect();
    let mut knots = vec![(start, axis.x(start))];
    for f in &folds {
        knots.push((f.from, axis.x(f.from)));
        knots.push((f.to, axis.x(f.to)));
    }
    if let Ok(end) = Timestamp::from_second(end)
        && end > start
    {
        knots.push((end, axis.x(end)));
    }
    Timeline {
        title: title.to_string(),
        now,
        now_x: axis.x(now),
        start,
        knots,
        lanes: out,
        sessions,
        folds,
        events,
    }
}

/// One lane: its marks, and the stretches of ownership the events imply. Ownership starts with
/// the first event of a session, moves at a takeover (or when another session writes), and
/// stops at an interrupt or a finish; the last stretch reaches now while its owner is live.
fn lay_out(lane: &LaneIn, axis: &Axis, now: Timestamp) -> Lane {
    let ledger = lane.label.kind == "ledger";
    let mut marks = Vec::with_capacity(lane.events.len());
    let mut segments = Vec::new();
    let mut waits = Vec::new();
    // The open stretch, not yet ended.
    let mut open: Option<Segment> = None;
    let mut last: Option<Timestamp> = None;
    // A ledger line without a time takes the time before it, or the lane's first one.
    let first = lane.events.iter().find_map(|e| e.at);
    let mut close = |open: &mut Option<Segment>, to: Timestamp| {
        if let Some(mut s) = open.take() {
            s.x1 = axis.x(to);
            s.to = to;
            segments.push(s);
        }
    };
    let start = |from: Timestamp, session: Option<String>, epoch: Option<u64>, label| {
        Some(Segment {
            x0: axis.x(from),
            x1: axis.x(from),
            from,
            to: from,
            session,
            epoch,
            label,
        })
    };
    for event in &lane.events {
        let Some(at) = event.at.or(last).or(first) else {
            continue;
        };
        last = Some(at);
        let f = &event.fields;
        let (kind, label) = mark_of(f);
        if let Some(reset) = reset_of(event) {
            waits.push(Wait {
                x0: axis.x(at),
                x1: axis.x(reset),
                from: at,
                to: reset,
            });
        }
        marks.push(Mark {
            x: axis.x(at),
            at,
            kind,
            label,
            line: event.line.clone(),
        });
        let epoch = f["epoch"].as_u64();
        if ledger {
            let phase = text(&f["phase"]).map(str::to_string);
            match kind {
                MarkKind::Start | MarkKind::Resume
                    if open.as_ref().is_none_or(|o| o.label != phase) =>
                {
                    close(&mut open, at);
                    open = start(at, None, None, phase);
                }
                MarkKind::End | MarkKind::Interrupt => close(&mut open, at),
                _ => {}
            }
            continue;
        }
        let session = text(&f["session"]).map(str::to_string);
        match kind {
            MarkKind::Takeover => {
                close(&mut open, at);
                let to = text(&f["to_session"]).map(str::to_string);
                open = start(at, to, f["to_epoch"].as_u64(), None);
            }
            MarkKind::Interrupt | MarkKind::End => close(&mut open, at),
            _ => {
                let Some(session) = session else { continue };
                let owner = open.as_ref().and_then(|o| o.session.as_deref());
                if owner != Some(session.as_str()) {
                    close(&mut open, at);
                    open = start(at, Some(session), epoch, None);
                } else if let Some(o) = open.as_mut() {
                    o.epoch = epoch.or(o.epoch);
                }
            }
        }
    }
    let end = if lane.live { Some(now) } else { last };
    if let Some(end) = end {
        let end = end.max(open.as_ref().map_or(end, |o| o.from));
        close(&mut open, end);
    }
    // Work that stopped without an interrupt being recorded (a session that died, a pause
    // mark, a delegate that timed out or was left): its class, where it was last written.
    let recorded = marks
        .last()
        .is_some_and(|m| matches!(m.kind, MarkKind::Interrupt | MarkKind::End));
    if let (Some(class), false) = (&lane.label.class, recorded)
        && let Some(at) = lane.last_write.or(last)
    {
        marks.push(Mark {
            x: axis.x(at),
            at,
            kind: MarkKind::Unrecorded,
            label: format!("{class} (nothing recorded)"),
            line: format!(
                "{}  no interrupt was recorded: the last write was here, and `baton status` classes the work as {class}",
                crate::time::format_ts(at)
            ),
        });
    }
    Lane {
        label: lane.label.clone(),
        segments,
        marks,
        waits,
    }
}

/// Strings the page repeats, kept once each: the data block refers to them by index.
#[derive(Default)]
struct Strings {
    list: Vec<String>,
    index: HashMap<String, usize>,
}

impl Strings {
    fn id(&mut self, s: &str) -> usize {
        if let Some(i) = self.index.get(s) {
            return *i;
        }
        self.list.push(s.to_string());
        self.index.insert(s.to_string(), self.list.len() - 1);
        self.list.len() - 1
    }
}

fn kind_code(kind: MarkKind) -> u8 {
    match kind {
        MarkKind::Event => 0,
        MarkKind::Start => 1,
        MarkKind::Interrupt => 2,
        MarkKind::Resume => 3,
        MarkKind::Takeover => 4,
        MarkKind::GatePass => 5,
        MarkKind::GateFail => 6,
        MarkKind::End => 7,
        MarkKind::Unrecorded => 8,
    }
}

/// The data block of the page: compact arrays, every repeated string by index, every time in
/// seconds since `start`.
fn data(t: &Timeline) -> Value {
    let mut strings = Strings::default();
    let base = t.start.as_second();
    let session_ix: HashMap<&str, usize> = t
        .sessions
        .iter()
        .enumerate()
        .map(|(i, s)| (s.as_str(), i))
        .collect();
    let lanes: Vec<Value> = t
        .lanes
        .iter()
        .map(|lane| {
            let segments: Vec<Value> = lane
                .segments
                .iter()
                .map(|s| {
                    serde_json::json!([
                        s.x0,
                        s.x1,
                        s.from.as_second() - base,
                        s.to.as_second() - base,
                        s.session
                            .as_deref()
                            .and_then(|x| session_ix.get(x))
                            .map_or(-1, |i| *i as i64),
                        s.epoch,
                        s.label.as_deref().map(|l| strings.id(l)),
                    ])
                })
                .collect();
            // The line without its leading time, which the page shows from the mark's own.
            let marks: Vec<Value> = lane
                .marks
                .iter()
                .map(|m| {
                    let line = m.line.split_once("  ").map_or(m.line.as_str(), |(_, r)| r);
                    serde_json::json!([
                        m.x,
                        kind_code(m.kind),
                        m.at.as_second() - base,
                        strings.id(line),
                        strings.id(&m.label),
                    ])
                })
                .collect();
            let waits: Vec<Value> = lane
                .waits
                .iter()
                .map(|w| {
                    serde_json::json!([
                        w.x0,
                        w.x1,
                        w.from.as_second() - base,
                        w.to.as_second() - base
                    ])
                })
                .collect();
            let l = &lane.label;
            serde_json::json!({
                "kind": l.kind,
                "key": l.key,
                "status": l.status,
                "verdict": l.verdict,
                "class": l.class,
                "next": l.next,
                "phase": l.phase,
                "owner": l.owner,
                "ownerState": l.owner_state,
                "urgency": l.urgency,
                "command": l.command,
                "seg": segments,
                "marks": marks,
                "waits": waits,
            })
        })
        .collect();
    serde_json::json!({
        "title": t.title,
        "start": base,
        "now": t.now.as_second() - base,
        "nowX": t.now_x,
        "events": t.events,
        "sessions": t.sessions,
        "folds": t.folds.iter().map(|f| serde_json::json!([f.x, f.from.as_second() - base, f.to.as_second() - base])).collect::<Vec<_>>(),
        "knots": t.knots.iter().map(|(at, x)| serde_json::json!([at.as_second() - base, x])).collect::<Vec<_>>(),
        "strings": strings.list,
        "lanes": lanes,
    })
}

fn html_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = include_str!("timeline/page.css");
const SCRIPT: &str = include_str!("timeline/page.js");

/// The page: one HTML file, its style, script and data inline.
pub fn render_html(t: &Timeline) -> String {
    // Inside <script>, a `<` could end the block: every one is written as `\u003c`.
    let data = data(t).to_string().replace('<', "\\u003c");
    let title = html_escape(&t.title);
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>baton: {title}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n\
         <header><h1>baton timeline: {title}</h1><p id=\"next\"></p><p id=\"summary\"></p>\
         <div id=\"legend\"></div><div id=\"zoom\"></div></header>\n\
         <main id=\"chart\"><div id=\"axis\"></div><div id=\"lanes\"></div></main>\n\
         <aside id=\"details\" hidden></aside>\n<div id=\"tip\" hidden></div>\n\
         <noscript><p>The timeline is drawn by the script in this page; allow scripts to see it.</p></noscript>\n\
         <script type=\"application/json\" id=\"data\">{data}</script>\n<script>\n{SCRIPT}</script>\n\
         </body>\n</html>\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ts(minute: i64) -> Timestamp {
        Timestamp::from_second(1_772_366_400 + minute * 60).unwrap()
    }

    fn ev(minute: i64, fields: Value) -> EventIn {
        EventIn {
            at: Some(ts(minute)),
            line: format!("{}  {}", ts(minute), fields["event"]),
            fields,
        }
    }

    fn a_loop(events: Vec<EventIn>, live: bool) -> LaneIn {
        LaneIn {
            label: Label {
                kind: "loop".into(),
                key: "PROJ-1".into(),
                status: "active".into(),
                verdict: "offer".into(),
                ..Label::default()
            },
            live,
            events,
            ..LaneIn::default()
        }
    }

    fn history() -> Vec<EventIn> {
        vec![
            ev(0, json!({"event": "init", "session": "A", "epoch": 0})),
            ev(
                1,
                json!({"event": "set", "session": "A", "epoch": 0, "from": {}, "to": {}}),
            ),
            ev(
                3,
                json!({"event": "interrupt", "session": "A", "epoch": 0, "reason": "rate_limit"}),
            ),
            ev(
                30,
                json!({"event": "takeover", "session": "B", "epoch": 1, "from_session": "A", "from_epoch": 0, "to_session": "B", "to_epoch": 1, "mode": "automatic"}),
            ),
            ev(
                40,
                json!({"event": "finish", "session": "B", "epoch": 1, "status": "complete"}),
            ),
        ]
    }

    #[test]
    fn ownership_stops_at_the_interrupt_and_moves_at_the_takeover() {
        let t = build("p", vec![a_loop(history(), false)], ts(60));
        let lane = &t.lanes[0];
        let owners: Vec<_> = lane
            .segments
            .iter()
            .map(|s| (s.session.clone().unwrap(), s.from, s.to, s.epoch))
            .collect();
        assert_eq!(
            owners,
            [
                ("A".to_string(), ts(0), ts(3), Some(0)),
                ("B".to_string(), ts(30), ts(40), Some(1)),
            ]
        );
        assert_eq!(t.sessions, ["A", "B"]);
        let kinds: Vec<MarkKind> = lane.marks.iter().map(|m| m.kind).collect();
        assert_eq!(
            kinds,
            [
                MarkKind::Start,
                MarkKind::Event,
                MarkKind::Interrupt,
                MarkKind::Takeover,
                MarkKind::End
            ]
        );
        assert_eq!(lane.marks[2].label, "rate_limit");
        assert_eq!(lane.marks[3].label, "A (epoch 0) → B (epoch 1), automatic");
    }

    #[test]
    fn a_live_owner_reaches_now_and_a_stale_one_stops_at_its_last_event() {
        let events = history().into_iter().take(2).collect::<Vec<_>>();
        let live = build("p", vec![a_loop(events.clone(), true)], ts(9));
        assert_eq!(live.lanes[0].segments[0].to, ts(9));
        assert_eq!(live.lanes[0].segments[0].x1, live.now_x);
        let stale = build("p", vec![a_loop(events, false)], ts(9));
        assert_eq!(stale.lanes[0].segments[0].to, ts(1));
    }

    #[test]
    fn an_idle_day_is_folded_and_positions_keep_their_order() {
        let events = vec![
            ev(0, json!({"event": "init", "session": "A"})),
            ev(10, json!({"event": "set", "session": "A"})),
            ev(10 + 24 * 60, json!({"event": "set", "session": "A"})),
        ];
        let t = build("p", vec![a_loop(events, false)], ts(20 + 24 * 60));
        assert_eq!(t.folds.len(), 1, "{:?}", t.folds);
        let xs: Vec<f64> = t.lanes[0].marks.iter().map(|m| m.x).collect();
        assert!(xs.windows(2).all(|w| w[0] < w[1]), "{xs:?}");
        // Ten active minutes stay far wider than the idle day between them.
        assert!(xs[2] - xs[1] < 10.0, "the idle day is folded: {xs:?}");
        assert!(xs[1] - xs[0] > 5.0 * (xs[2] - xs[1]), "{xs:?}");
        assert!(xs.iter().all(|x| (0.0..=100.0).contains(x)));
        assert!(t.now_x <= 99.0 + 1e-9);
    }

    #[test]
    fn a_burst_then_quiet_minutes_is_not_crushed() {
        // Forty events in two minutes, then twenty quiet minutes before now.
        let t0 = ts(0);
        let at = |s: i64| Timestamp::from_second(t0.as_second() + s).unwrap();
        let events: Vec<EventIn> = (0..40)
            .map(|i| EventIn {
                at: Some(at(i * 3)),
                fields: json!({"event": "set", "session": "A"}),
                line: String::new(),
            })
            .collect();
        let t = build("p", vec![a_loop(events, false)], at(22 * 60));
        assert_eq!(
            t.folds.len(),
            1,
            "the quiet minutes are folded: {:?}",
            t.folds
        );
        let xs: Vec<f64> = t.lanes[0].marks.iter().map(|m| m.x).collect();
        assert!(xs[39] - xs[0] > 90.0, "the burst fills the axis: {xs:?}");
        // Steady work is not folded: ten minutes between events, and ten more.
        let steady = vec![
            ev(0, json!({"event": "init", "session": "A"})),
            ev(10, json!({"event": "set", "session": "A"})),
        ];
        let t = build("p", vec![a_loop(steady, false)], ts(20));
        assert!(t.folds.is_empty(), "{:?}", t.folds);
    }

    #[test]
    fn a_rate_limits_wait_reaches_its_reset_and_the_knots_place_every_time() {
        let mut events = history();
        events[2].fields["resume_after"] = json!("2026-03-01T12:20:00Z");
        let t = build("p", vec![a_loop(events, false)], ts(60));
        let waits = &t.lanes[0].waits;
        assert_eq!(waits.len(), 1);
        assert_eq!((waits[0].from, waits[0].to), (ts(3), ts(20)));
        assert_eq!(waits[0].x0, t.lanes[0].marks[2].x);
        // A reset after now widens the axis to it.
        let mut events = history().into_iter().take(3).collect::<Vec<_>>();
        events[2].fields["resume_after"] = json!("2026-03-01T12:50:00Z");
        let t = build("p", vec![a_loop(events, false)], ts(10));
        let wait = &t.lanes[0].waits[0];
        assert!(wait.x1 > t.now_x, "{wait:?} now at {}", t.now_x);
        // Between knots the axis is even: every mark lies where the knots put its time.
        let t = build("p", vec![a_loop(history(), false)], ts(24 * 60));
        for m in &t.lanes[0].marks {
            let i = t.knots.partition_point(|(at, _)| *at < m.at).max(1);
            let ((a, xa), (b, xb)) = (t.knots[i - 1], t.knots[i]);
            let x = xa
                + (xb - xa) * (m.at.as_second() - a.as_second()) as f64
                    / (b.as_second() - a.as_second()) as f64;
            assert!((x - m.x).abs() < 0.01, "{m:?} at {x}, knots {:?}", t.knots);
        }
    }

    #[test]
    fn takeovers_name_sessions_by_their_first_eight_characters() {
        let (_, label) = mark_of(&json!({"event": "takeover",
            "from_session": "c4f1e2d0-9a7b-4e3c-8d21-5f6a7b8c9d0e", "from_epoch": 0,
            "to_session": "bob", "to_epoch": 1}));
        assert_eq!(label, "c4f1e2d0 (epoch 0) → bob (epoch 1)");
        assert_eq!(short_session("ééééééééé"), "éééééééé");
    }

    #[test]
    fn work_classed_without_a_recorded_interrupt_is_marked_at_its_last_write() {
        let events = history().into_iter().take(2).collect::<Vec<_>>();
        let mut lane = a_loop(events, false);
        lane.label.class = Some("crash".into());
        lane.last_write = Some(ts(2));
        let t = build("p", vec![lane.clone()], ts(60));
        let last = t.lanes[0].marks.last().unwrap();
        assert_eq!((last.kind, last.at), (MarkKind::Unrecorded, ts(2)));
        assert_eq!(last.label, "crash (nothing recorded)");
        // A recorded interrupt is not marked twice.
        lane.events = history().into_iter().take(3).collect();
        let t = build("p", vec![lane], ts(60));
        let stops = t.lanes[0]
            .marks
            .iter()
            .filter(|m| matches!(m.kind, MarkKind::Interrupt | MarkKind::Unrecorded))
            .count();
        assert_eq!(stops, 1);
    }

    #[test]
    fn interrupts_show_their_class_and_reason_and_gates_pass_or_fail() {
        let (kind, label) = mark_of(&json!({"event": "interrupt", "reason": "session_expiry"}));
        assert_eq!(
            (kind, label.as_str()),
            (MarkKind::Interrupt, "left: the session ended between turns")
        );
        let (kind, label) = mark_of(&json!({"event": "gate", "gate": "lint", "pass": false}));
        assert_eq!((kind, label.as_str()), (MarkKind::GateFail, "lint FAIL"));
        let (kind, _) = mark_of(&json!({"event": "gate", "gate": "tests", "pass": true}));
        assert_eq!(kind, MarkKind::GatePass);
        let (kind, label) = mark_of(&json!({"event": "resume", "verdict": "resume"}));
        assert_eq!((kind, label.as_str()), (MarkKind::Resume, "resume: resume"));
        let (kind, label) =
            mark_of(&json!({"event": "resume", "mode": "own-session", "how": "auto-continue"}));
        assert_eq!(
            (kind, label.as_str()),
            (
                MarkKind::Resume,
                "resumed by its own session (auto-continue)"
            )
        );
    }

    #[test]
    fn ledger_phases_are_stretches_and_an_untimed_line_takes_the_time_before_it() {
        let mut events = vec![
            ev(0, json!({"event": "started", "phase": "1"})),
            ev(
                5,
                json!({"event": "gate", "phase": "1", "gate": "tests", "pass": false}),
            ),
        ];
        events.push(EventIn {
            at: None,
            fields: json!({"event": "gate", "phase": "1", "gate": "tests", "pass": true}),
            line: "-  gate".into(),
        });
        events.push(ev(9, json!({"event": "complete", "phase": "1"})));
        let lane = LaneIn {
            label: Label {
                kind: "ledger".into(),
                ..Label::default()
            },
            events,
            ..LaneIn::default()
        };
        let t = build("p", vec![lane], ts(10));
        let l = &t.lanes[0];
        assert_eq!(l.marks[2].at, ts(5));
        assert_eq!(l.segments.len(), 1);
        assert_eq!(l.segments[0].label.as_deref(), Some("1"));
        assert_eq!((l.segments[0].from, l.segments[0].to), (ts(0), ts(9)));
        assert!(t.sessions.is_empty());
    }

    #[test]
    fn the_page_is_self_contained_and_its_data_cannot_end_its_script() {
        let mut events = history();
        events[1].line = "</script><script>alert(1)</script>".into();
        let mut lane = a_loop(events, false);
        lane.label.key = "<b>&".into();
        let page = render_html(&build("<p>", vec![lane], ts(60)));
        assert_eq!(
            page.matches("</script>").count(),
            2,
            "only the two blocks end"
        );
        assert!(!page.contains("<b>&"));
        for external in [
            "src=",
            "href=",
            "@import",
            "url(",
            "fetch(",
            "XMLHttpRequest",
        ] {
            assert!(
                !page.contains(external),
                "the page fetches nothing: {external}"
            );
        }
        let start = page.find("id=\"data\">").unwrap() + 10;
        let end = start + page[start..].find("</script>").unwrap();
        let data: Value = serde_json::from_str(&page[start..end]).unwrap();
        assert_eq!(data["lanes"][0]["key"], "<b>&");
    }
}
