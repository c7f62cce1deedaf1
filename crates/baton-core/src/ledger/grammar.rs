//! The event vocabulary, one event per line:
//!
//! ```text
//! phase <N>: started (base <sha7>)
//! phase <N>: gate <name> → PASS|FAIL (evidence: <cmd> → <result>)
//! phase <N>: complete (commits <a7>..<b7>, tests <X/Y>, review clean|<K> parked)
//! phase <N>: parked — <finding> — ruling: <why>
//! phase <N>: BLOCKED — <reason>
//! phase <N>: resumed (derived from ledger + gates, <K> phases confirmed)
//! phase <N>: agent died (no diff) — redispatch
//! phase <N>: waiver — <rule> — <who approved / why>
//! baseline: <X/Y> (<sha7>)
//! env: model fallback <from>→<to> — <reason>
//! finish: tail <step-name> → DONE|SKIPPED (idempotent)|FAILED (paste-ready emitted)
//! ```
//!
//! `->` is accepted wherever `→` is written, and any line may end with a timestamp
//! (` @ 2026-03-01T12:00:00Z`).

use std::fmt;

pub const ARROW: &str = "→";
pub const DASH: &str = "—";
pub const HEADER_PREFIX: &str = "# run-state — plan: ";

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Review {
    Clean,
    Parked(u64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinishOutcome {
    Done,
    Skipped,
    Failed,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    Started {
        phase: String,
        base: String,
    },
    Gate {
        phase: String,
        name: String,
        pass: bool,
        cmd: String,
        result: String,
    },
    Complete {
        phase: String,
        from: String,
        to: String,
        tests: String,
        review: Review,
    },
    Parked {
        phase: String,
        finding: String,
        ruling: String,
    },
    Blocked {
        phase: String,
        reason: String,
    },
    Resumed {
        phase: String,
        confirmed: u64,
    },
    AgentDied {
        phase: String,
    },
    Waiver {
        phase: String,
        rule: String,
        who: String,
    },
    Baseline {
        tests: String,
        sha: String,
    },
    Env {
        from: String,
        to: String,
        reason: String,
    },
    Finish {
        step: String,
        outcome: FinishOutcome,
    },
}

impl Event {
    /// The phase an event belongs to, if it belongs to one.
    pub fn phase(&self) -> Option<&str> {
        match self {
            Event::Started { phase, .. }
            | Event::Gate { phase, .. }
            | Event::Complete { phase, .. }
            | Event::Parked { phase, .. }
            | Event::Blocked { phase, .. }
            | Event::Resumed { phase, .. }
            | Event::AgentDied { phase }
            | Event::Waiver { phase, .. } => Some(phase),
            Event::Baseline { .. } | Event::Env { .. } | Event::Finish { .. } => None,
        }
    }

    /// The event's kind, as `baton ledger` names its writers.
    pub fn kind(&self) -> &'static str {
        match self {
            Event::Started { .. } => "started",
            Event::Gate { .. } => "gate",
            Event::Complete { .. } => "complete",
            Event::Parked { .. } => "parked",
            Event::Blocked { .. } => "blocked",
            Event::Resumed { .. } => "resumed",
            Event::AgentDied { .. } => "agent-died",
            Event::Waiver { .. } => "waiver",
            Event::Baseline { .. } => "baseline",
            Event::Env { .. } => "env",
            Event::Finish { .. } => "finish",
        }
    }
}

/// An event and its optional timestamp.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub event: Event,
    pub at: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError(pub String);

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn err<T>(msg: impl Into<String>) -> Result<T, ParseError> {
    Err(ParseError(msg.into()))
}

/// The first `needle` in `hay`. Ledgers run to a hundred thousand lines, and `str::find` with a
/// string pattern builds a searcher on every call; anchoring on the needle's first byte that is
/// not a space (a rare one: `→`, `—`, `>`, `:`) keeps a line's scan to a memchr or two.
fn find_str(hay: &str, needle: &str) -> Option<usize> {
    let (h, n) = (hay.as_bytes(), needle.as_bytes());
    let anchor = n.iter().position(|&b| b != b' ').unwrap_or(0);
    let mut from = anchor;
    while from < h.len() {
        let hit = from + h[from..].iter().position(|&b| b == n[anchor])?;
        let start = hit - anchor;
        if hit >= anchor && h[start..].starts_with(n) {
            return Some(start);
        }
        from = hit + 1;
    }
    None
}

fn split_str<'a>(hay: &'a str, needle: &str) -> Option<(&'a str, &'a str)> {
    find_str(hay, needle).map(|i| (&hay[..i], &hay[i + needle.len()..]))
}

/// Splits at the first arrow (`→` or `->`, with a space on each side).
fn split_arrow(s: &str) -> Option<(&str, &str)> {
    let a = find_str(s, " → ").map(|i| (i, " → ".len()));
    let b = find_str(s, " -> ").map(|i| (i, " -> ".len()));
    let (i, len) = match (a, b) {
        (Some(x), Some(y)) => {
            if x.0 <= y.0 {
                x
            } else {
                y
            }
        }
        (x, y) => x.or(y)?,
    };
    Some((&s[..i], &s[i + len..]))
}

/// Splits gate evidence into its command and its result. Either may hold an arrow itself, so the
/// split prefers the arrow after which a result as `baton gate run` writes it begins (`exit N`,
/// `timed out`, `killed by a signal`), and falls back to the first arrow.
fn split_evidence(s: &str) -> Option<(&str, &str)> {
    let mut from = 0;
    while let Some((cmd, result)) = split_arrow(&s[from..]) {
        if ["exit ", "timed out", "killed by a signal"]
            .iter()
            .any(|p| result.starts_with(p))
        {
            let cut = from + cmd.len();
            return Some((&s[..cut], result));
        }
        // Back by the arrow's closing space, which may open the next arrow (`a -> → exit 0`).
        from = s.len() - result.len() - 1;
    }
    split_arrow(s)
}

/// Splits at the first tight arrow (`from→to`, `from->to`).
fn split_tight_arrow(s: &str) -> Option<(&str, &str)> {
    s.split_once(ARROW)
        .or_else(|| split_str(s, "->"))
        .map(|(a, b)| (a.trim(), b.trim()))
}

fn split_dash(s: &str) -> Option<(&str, &str)> {
    split_str(s, " — ").or_else(|| split_str(s, " -- "))
}

fn is_timestamp(token: &str) -> bool {
    let looks = token.len() >= 16
        && token.as_bytes()[..4].iter().all(u8::is_ascii_digit)
        && token.contains('T');
    looks
        && (token.parse::<jiff::Timestamp>().is_ok()
            || token.parse::<jiff::civil::DateTime>().is_ok())
}

/// A trailing timestamp: `<body> @ <time>`, `<body> [<time>]`, `<body> (<time>)` (ClauKit's
/// documented suffix) or a bare `<body> <time>`, where the time is RFC 3339 (a space between
/// date and time allowed). Returns the body, the time, and whether it was marked (`@`,
/// brackets or parentheses).
fn split_timestamp(line: &str) -> Option<(&str, String, bool)> {
    const OPEN: [char; 2] = ['[', '('];
    const CLOSE: [char; 2] = [']', ')'];
    let (head, last) = line.rsplit_once(' ')?;
    let (head, token) = match head.rsplit_once(' ') {
        // `2026-03-01 12:00:00+00:00`: a date and a time as two words.
        Some((before, date))
            if date.trim_start_matches(OPEN).len() == 10
                && is_timestamp(&format!(
                    "{}T{}",
                    date.trim_start_matches(OPEN),
                    last.trim_end_matches(CLOSE)
                )) =>
        {
            (before, format!("{date}T{last}"))
        }
        _ => (head, last.to_string()),
    };
    let wrapped = (token.starts_with('[') && token.ends_with(']'))
        || (token.starts_with('(') && token.ends_with(')'));
    let token = token
        .strip_prefix(OPEN)
        .and_then(|t| t.strip_suffix(CLOSE))
        .filter(|_| wrapped)
        .unwrap_or(&token)
        .to_string();
    let date_only = token.len() == 10
        && token.as_bytes()[..4].iter().all(u8::is_ascii_digit)
        && token.parse::<jiff::civil::Date>().is_ok();
    let full = is_timestamp(&token);
    if !full && !date_only {
        return None;
    }
    let head = head.trim_end();
    let (head, marked) = match head.strip_suffix(" @").or_else(|| head.strip_suffix('@')) {
        Some(h) => (h.trim_end(), true),
        None => (head, wrapped),
    };
    // ISO 8601 allows a date alone; wrapped or after `@` (the form `render_line` writes), it is
    // unmistakably the line's time.
    if !full && !marked {
        return None;
    }
    Some((head, token, marked))
}
fn non_empty<'a>(s: &'a str, what: &str) -> Result<&'a str, ParseError> {
    let s = s.trim();
    if s.is_empty() {
        err(format!("{what} is empty"))
    } else {
        Ok(s)
    }
}

fn phase_id(s: &str) -> Result<&str, ParseError> {
    let ok =
        !s.is_empty() && s.len() <= 16 && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.');
    if ok {
        Ok(s)
    } else {
        err(format!("{s:?} is not a phase number"))
    }
}

fn sha(s: &str) -> Result<&str, ParseError> {
    let ok = (4..=40).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_hexdigit());
    if ok {
        Ok(s)
    } else {
        err(format!("{s:?} is not a commit id (4 to 40 hex digits)"))
    }
}

fn tests_ratio(s: &str) -> Result<&str, ParseError> {
    let ok = s.split_once('/').is_some_and(|(a, b)| {
        !a.is_empty()
            && !b.is_empty()
            && a.bytes().all(|c| c.is_ascii_digit())
            && b.bytes().all(|c| c.is_ascii_digit())
    });
    if ok {
        Ok(s)
    } else {
        err(format!("{s:?} is not a test count like 41/42"))
    }
}

/// Parses one event line.
pub fn parse_line(raw: &str) -> Result<Line, ParseError> {
    let raw = raw.trim_end_matches(['\n', '\r']);
    if raw.contains('\n') {
        return err("an event is one line");
    }
    let line = raw.trim_end();
    // A marked time (`@`, brackets) is always the event's; a bare one only when the line does
    // not read as an event with it, so `BLOCKED — wait till 2026-03-02T09:00:00Z` keeps its date.
    match split_timestamp(line) {
        Some((body, at, true)) => Ok(Line {
            event: parse_event(body)?,
            at: Some(at),
        }),
        Some((body, at, false)) => match parse_event(line) {
            Ok(event) => Ok(Line { event, at: None }),
            Err(_) => Ok(Line {
                event: parse_event(body)?,
                at: Some(at),
            }),
        },
        None => Ok(Line {
            event: parse_event(line)?,
            at: None,
        }),
    }
}

fn parse_event(body: &str) -> Result<Event, ParseError> {
    if let Some(rest) = body.strip_prefix("baseline: ") {
        let (tests, sha_part) = rest
            .rsplit_once(" (")
            .ok_or_else(|| ParseError("baseline needs `<X/Y> (<sha>)`".into()))?;
        let sha_part = sha_part
            .strip_suffix(')')
            .ok_or_else(|| ParseError("baseline: missing `)`".into()))?;
        return Ok(Event::Baseline {
            tests: tests_ratio(tests)?.into(),
            sha: sha(sha_part)?.into(),
        });
    }
    if let Some(rest) = body.strip_prefix("env: model fallback ") {
        let (models, reason) = split_dash(rest).ok_or_else(|| {
            ParseError("env needs `model fallback <from>→<to> — <reason>`".into())
        })?;
        let (from, to) = split_tight_arrow(models)
            .ok_or_else(|| ParseError("env: missing `→` between the models".into()))?;
        return Ok(Event::Env {
            from: non_empty(from, "the model")?.into(),
            to: non_empty(to, "the fallback model")?.into(),
            reason: non_empty(reason, "the reason")?.into(),
        });
    }
    if let Some(rest) = body.strip_prefix("finish: tail ") {
        let (step, outcome) = split_arrow(rest).ok_or_else(|| ParseError("finish needs `tail <step> → DONE|SKIPPED (idempotent)|FAILED (paste-ready emitted)`".into()))?;
        let outcome = match outcome.trim() {
            "DONE" => FinishOutcome::Done,
            "SKIPPED (idempotent)" => FinishOutcome::Skipped,
            "FAILED (paste-ready emitted)" => FinishOutcome::Failed,
            other => {
                return err(format!(
                    "finish outcome {other:?} is not DONE, SKIPPED (idempotent) or FAILED (paste-ready emitted)"
                ));
            }
        };
        let step = non_empty(step, "the step")?;
        if step.contains(' ') {
            return err("a finish step name has no spaces");
        }
        return Ok(Event::Finish {
            step: step.into(),
            outcome,
        });
    }
    let rest = body.strip_prefix("phase ").ok_or_else(|| {
        ParseError("an event starts with `phase <N>:`, `baseline:`, `env:` or `finish:`".into())
    })?;
    let (phase, rest) = rest
        .split_once(':')
        .ok_or_else(|| ParseError("missing `:` after the phase".into()))?;
    let rest = rest
        .strip_prefix(' ')
        .ok_or_else(|| ParseError("missing the space after `phase <N>:`".into()))?;
    let phase = phase_id(phase)?.to_string();
    if let Some(base) = rest
        .strip_prefix("started (base ")
        .and_then(|r| r.strip_suffix(')'))
    {
        return Ok(Event::Started {
            phase,
            base: sha(base)?.into(),
        });
    }
    if let Some(gate) = rest.strip_prefix("gate ") {
        let (name, outcome) = split_arrow(gate).ok_or_else(|| {
            ParseError("gate needs `<name> → PASS|FAIL (evidence: <cmd> → <result>)`".into())
        })?;
        let name = non_empty(name, "the gate name")?;
        if name.contains(' ') {
            return err("a gate name has no spaces");
        }
        let (verdict, evidence) = split_str(outcome, " (evidence: ").ok_or_else(|| {
            ParseError("a gate line carries its evidence: `(evidence: <cmd> → <result>)`".into())
        })?;
        let pass = match verdict {
            "PASS" => true,
            "FAIL" => false,
            other => return err(format!("gate verdict {other:?} is not PASS or FAIL")),
        };
        let evidence = evidence
            .strip_suffix(')')
            .ok_or_else(|| ParseError("gate: missing the closing `)`".into()))?;
        let (cmd, result) = split_evidence(evidence)
            .ok_or_else(|| ParseError("gate evidence needs `<cmd> → <result>`".into()))?;
        return Ok(Event::Gate {
            phase,
            name: name.into(),
            pass,
            cmd: non_empty(
                cmd,
                "the gate's command (a gate line without its command is a claim, not a record)",
            )?
            .into(),
            result: non_empty(result, "the gate's result")?.into(),
        });
    }
    if let Some(inner) = rest
        .strip_prefix("complete (commits ")
        .and_then(|r| r.strip_suffix(')'))
    {
        let parts: Vec<&str> = inner.split(", ").collect();
        let [range, tests, review] = parts[..] else {
            return err(
                "complete needs `(commits <a>..<b>, tests <X/Y>, review clean|<K> parked)`",
            );
        };
        let (from, to) = range
            .split_once("..")
            .ok_or_else(|| ParseError("complete: commits need `<a>..<b>`".into()))?;
        let tests = tests
            .strip_prefix("tests ")
            .ok_or_else(|| ParseError("complete: missing `tests <X/Y>`".into()))?;
        let review = match review.strip_prefix("review ") {
            Some("clean") => Review::Clean,
            Some(r) => match r.strip_suffix(" parked").and_then(|k| k.parse().ok()) {
                Some(k) => Review::Parked(k),
                None => return err(format!("review {r:?} is not `clean` or `<K> parked`")),
            },
            None => return err("complete: missing `review clean|<K> parked`"),
        };
        return Ok(Event::Complete {
            phase,
            from: sha(from)?.into(),
            to: sha(to)?.into(),
            tests: tests_ratio(tests)?.into(),
            review,
        });
    }
    if let Some(parked) = rest
        .strip_prefix("parked — ")
        .or_else(|| rest.strip_prefix("parked -- "))
    {
        let (finding, ruling) = split_dash(parked)
            .ok_or_else(|| ParseError("parked needs `— <finding> — ruling: <why>`".into()))?;
        let ruling = ruling
            .strip_prefix("ruling: ")
            .ok_or_else(|| ParseError("parked: missing `ruling: <why>`".into()))?;
        return Ok(Event::Parked {
            phase,
            finding: non_empty(finding, "the finding")?.into(),
            ruling: non_empty(ruling, "the ruling")?.into(),
        });
    }
    if let Some(reason) = rest
        .strip_prefix("BLOCKED — ")
        .or_else(|| rest.strip_prefix("BLOCKED -- "))
    {
        return Ok(Event::Blocked {
            phase,
            reason: non_empty(reason, "the reason")?.into(),
        });
    }
    if let Some(k) = rest
        .strip_prefix("resumed (derived from ledger + gates, ")
        .and_then(|r| r.strip_suffix(" phases confirmed)"))
    {
        let confirmed = k
            .parse()
            .map_err(|_| ParseError(format!("{k:?} is not a count of phases")))?;
        return Ok(Event::Resumed { phase, confirmed });
    }
    if rest == "agent died (no diff) — redispatch" || rest == "agent died (no diff) -- redispatch"
    {
        return Ok(Event::AgentDied { phase });
    }
    if let Some(waiver) = rest
        .strip_prefix("waiver — ")
        .or_else(|| rest.strip_prefix("waiver -- "))
    {
        let (rule, who) = split_dash(waiver)
            .ok_or_else(|| ParseError("waiver needs `— <rule> — <who approved / why>`".into()))?;
        return Ok(Event::Waiver {
            phase,
            rule: non_empty(rule, "the rule")?.into(),
            who: non_empty(who, "who approved")?.into(),
        });
    }
    err(format!(
        "`{rest}` is no phase event (started, gate, complete, parked, BLOCKED, resumed, agent died, waiver)"
    ))
}

/// Renders an event in the canonical form (`→`, `—`), with its timestamp.
pub fn render_line(line: &Line) -> String {
    let body = match &line.event {
        Event::Started { phase, base } => format!("phase {phase}: started (base {base})"),
        Event::Gate {
            phase,
            name,
            pass,
            cmd,
            result,
        } => {
            format!(
                "phase {phase}: gate {name} {ARROW} {} (evidence: {cmd} {ARROW} {result})",
                if *pass { "PASS" } else { "FAIL" }
            )
        }
        Event::Complete {
            phase,
            from,
            to,
            tests,
            review,
        } => {
            let review = match review {
                Review::Clean => "clean".to_string(),
                Review::Parked(k) => format!("{k} parked"),
            };
            format!(
                "phase {phase}: complete (commits {from}..{to}, tests {tests}, review {review})"
            )
        }
        Event::Parked {
            phase,
            finding,
            ruling,
        } => format!("phase {phase}: parked {DASH} {finding} {DASH} ruling: {ruling}"),
        Event::Blocked { phase, reason } => format!("phase {phase}: BLOCKED {DASH} {reason}"),
        Event::Resumed { phase, confirmed } => format!(
            "phase {phase}: resumed (derived from ledger + gates, {confirmed} phases confirmed)"
        ),
        Event::AgentDied { phase } => {
            format!("phase {phase}: agent died (no diff) {DASH} redispatch")
        }
        Event::Waiver { phase, rule, who } => {
            format!("phase {phase}: waiver {DASH} {rule} {DASH} {who}")
        }
        Event::Baseline { tests, sha } => format!("baseline: {tests} ({sha})"),
        Event::Env { from, to, reason } => {
            format!("env: model fallback {from}{ARROW}{to} {DASH} {reason}")
        }
        Event::Finish { step, outcome } => {
            let outcome = match outcome {
                FinishOutcome::Done => "DONE",
                FinishOutcome::Skipped => "SKIPPED (idempotent)",
                FinishOutcome::Failed => "FAILED (paste-ready emitted)",
            };
            format!("finish: tail {step} {ARROW} {outcome}")
        }
    };
    match &line.at {
        Some(at) => format!("{body} @ {at}"),
        None => body,
    }
}

pub fn render_header(plan: &str) -> String {
    format!("{HEADER_PREFIX}{plan}")
}

/// The plan a header line names.
pub fn parse_header(line: &str) -> Option<&str> {
    let plan = line
        .trim_end()
        .strip_prefix(HEADER_PREFIX)
        .or_else(|| line.trim_end().strip_prefix("# run-state -- plan: "))?;
    let plan = plan.trim();
    (!plan.is_empty()).then_some(plan)
}

/// A whole ledger: the plan its header names, its events with line numbers, and the lines
/// that do not parse (kept, counted and shown; never fatal).
#[derive(Debug, Clone, Default)]
pub struct Ledger {
    pub plan: Option<String>,
    pub events: Vec<(usize, Line)>,
    pub bad: Vec<(usize, String, ParseError)>,
}

pub fn parse_ledger(text: &str) -> Ledger {
    let mut ledger = Ledger::default();
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        if n == 1
            && let Some(plan) = parse_header(raw)
        {
            ledger.plan = Some(plan.to_string());
            continue;
        }
        if raw.trim().is_empty() {
            continue;
        }
        match parse_line(raw) {
            Ok(line) => ledger.events.push((n, line)),
            Err(e) => ledger.bad.push((n, raw.to_string(), e)),
        }
    }
    ledger.events = history_order(std::mem::take(&mut ledger.events));
    ledger
}

/// The events in the order they happened: by each one's time, a line without a time taking
/// the time of the event before it in the file, ties in file order. A ledger appended to on
/// two machines and merged by git's union driver holds each side's lines as a block, either
/// block first; ordered by time, both merges read the same history, so `derive` gives the same
/// verdicts whichever way git put them.
fn history_order(events: Vec<(usize, Line)>) -> Vec<(usize, Line)> {
    let mut last = None;
    let mut keyed: Vec<(Option<jiff::Timestamp>, (usize, Line))> = events
        .into_iter()
        .map(|event| {
            if let Some(t) = crate::time::parse_ts(event.1.at.as_deref()) {
                last = Some(t);
            }
            (last, event)
        })
        .collect();
    keyed.sort_by_key(|(t, _)| *t);
    keyed.into_iter().map(|(_, event)| event).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// One row per event kind of the vocabulary, in the originating wording.
    #[test]
    fn every_event_kind_parses() {
        let rows = [
            ("phase 1: started (base abc1234)", "started"),
            (
                "phase 1: gate tests → PASS (evidence: cargo test → exit 0: ok)",
                "gate",
            ),
            (
                "phase 1: gate lint -> FAIL (evidence: cargo clippy -> exit 101: 3 warnings)",
                "gate",
            ),
            (
                "phase 1: complete (commits abc1234..def5678, tests 41/42, review clean)",
                "complete",
            ),
            (
                "phase 2: complete (commits abc1234..def5678, tests 41/42, review 2 parked)",
                "complete",
            ),
            (
                "phase 2: parked — flaky test in CI — ruling: out of scope",
                "parked",
            ),
            ("phase 3: BLOCKED — waiting for the API key", "blocked"),
            (
                "phase 2: resumed (derived from ledger + gates, 1 phases confirmed)",
                "resumed",
            ),
            ("phase 2: agent died (no diff) — redispatch", "agent-died"),
            (
                "phase 2: waiver — no-new-deps — approved by alice / vendored",
                "waiver",
            ),
            ("baseline: 40/42 (abc1234)", "baseline"),
            ("env: model fallback opus→sonnet — 529 overloaded", "env"),
            ("env: model fallback opus->sonnet — 529 overloaded", "env"),
            ("finish: tail changelog → DONE", "finish"),
            ("finish: tail docs → SKIPPED (idempotent)", "finish"),
            ("finish: tail pr → FAILED (paste-ready emitted)", "finish"),
            (
                "phase 1: started (base abc1234) @ 2026-03-01T12:00:00Z",
                "started",
            ),
        ];
        for (raw, kind) in rows {
            let line = parse_line(raw).unwrap_or_else(|e| panic!("{raw}: {e}"));
            assert_eq!(line.event.kind(), kind, "{raw}");
        }
    }

    #[test]
    fn gate_evidence_splits_before_the_result_even_around_arrows() {
        let line =
            parse_line("phase 1: gate flow → PASS (evidence: echo a → b → exit 0: a → b)").unwrap();
        match line.event {
            Event::Gate { cmd, result, .. } => assert_eq!(
                (cmd.as_str(), result.as_str()),
                ("echo a → b", "exit 0: a → b")
            ),
            other => panic!("{other:?}"),
        }
    }

    /// ClauKit documents "an ISO-8601 suffix in parentheses": every event kind takes it.
    #[test]
    fn parenthesized_timestamps_parse_for_every_event_kind() {
        let lines = [
            "phase 1: started (base abc1234)",
            "phase 1: gate tests → PASS (evidence: cargo test → ok)",
            "phase 1: complete (commits abc1234..def5678, tests 1/1, review clean)",
            "phase 1: parked — slow query — ruling: deferred",
            "phase 1: BLOCKED — waiting for keys",
            "phase 1: resumed (derived from ledger + gates, 1 phases confirmed)",
            "phase 1: agent died (no diff) — redispatch",
            "phase 1: waiver — no-test — lead approved",
            "baseline: 41/42 (abc1234)",
            "env: model fallback opus→sonnet — 529",
            "finish: tail push → DONE",
        ];
        for body in lines {
            for (stamp, want) in [
                ("(2026-01-01T09:20:00Z)", "2026-01-01T09:20:00Z"),
                ("(2026-01-01 09:20:00Z)", "2026-01-01T09:20:00Z"),
                ("(2026-01-01)", "2026-01-01"),
            ] {
                let raw = format!("{body} {stamp}");
                let line = parse_line(&raw).unwrap_or_else(|e| panic!("{raw}: {e:?}"));
                assert_eq!(line.at.as_deref(), Some(want), "{raw}");
                assert_eq!(line.event, parse_line(body).unwrap().event, "{raw}");
            }
        }
    }

    #[test]
    fn timestamps_marked_bare_and_spaced() {
        let at = |raw: &str| parse_line(raw).map(|l| l.at);
        assert_eq!(
            at("phase 1: started (base abc1234) @ 2026-03-01T12:00:00Z"),
            Ok(Some("2026-03-01T12:00:00Z".into()))
        );
        assert_eq!(
            at("phase 1: started (base abc1234) [2026-03-01T12:00:00Z]"),
            Ok(Some("2026-03-01T12:00:00Z".into()))
        );
        assert_eq!(
            at("phase 1: started (base abc1234) 2026-03-01T12:00:00Z"),
            Ok(Some("2026-03-01T12:00:00Z".into()))
        );
        assert_eq!(
            at("phase 1: started (base abc1234) 2026-03-01 12:00:00+00:00"),
            Ok(Some("2026-03-01T12:00:00+00:00".into()))
        );
        let blocked = parse_line("phase 1: BLOCKED — wait till 2026-03-02T09:00:00Z").unwrap();
        assert_eq!(blocked.at, None);
        assert_eq!(
            blocked.event,
            Event::Blocked {
                phase: "1".into(),
                reason: "wait till 2026-03-02T09:00:00Z".into()
            }
        );
    }

    #[test]
    fn bad_lines_say_why() {
        let rows = [
            "phase 1: gate tests → PASS",
            "phase 1: gate tests → PASS (evidence:  → exit 0)",
            "phase 1: started (base nothex!)",
            "phase x y: started (base abc1234)",
            "phase 1: complete (commits a..b, tests 1/2, review clean)",
            "phase 1: done",
            "random prose",
            "finish: tail x → MAYBE",
        ];
        for raw in rows {
            assert!(parse_line(raw).is_err(), "{raw}");
        }
    }

    #[test]
    fn a_ledger_keeps_and_counts_bad_lines() {
        let text = "# run-state — plan: plans/auth/plan.md\nphase 1: started (base abc1234)\nnot an event\n\nphase 1: BLOCKED — x\npartial li";
        let l = parse_ledger(text);
        assert_eq!(l.plan.as_deref(), Some("plans/auth/plan.md"));
        assert_eq!(l.events.len(), 2);
        assert_eq!(l.bad.iter().map(|b| b.0).collect::<Vec<_>>(), [3, 6]);
    }

    fn text() -> impl Strategy<Value = String> {
        // Free text without the separators the grammar splits on, nor a trailing timestamp.
        "[a-zA-Z0-9_./:=+ ()'\"#]{1,30}"
            .prop_map(|s| s.trim().to_string())
            .prop_filter("non-empty, no separators", |s| {
                !s.is_empty()
                    && !s.contains(" — ")
                    && !s.contains(" -- ")
                    && !s.contains(" -> ")
                    && !s.contains("->")
            })
    }

    fn word() -> impl Strategy<Value = String> {
        "[a-z][a-z0-9_.-]{0,15}".prop_filter("no arrow", |s| !s.contains("->"))
    }

    fn hex() -> impl Strategy<Value = String> {
        "[0-9a-f]{7,12}"
    }

    fn event() -> impl Strategy<Value = Event> {
        let phase = "[1-9][0-9]?[a-z]?";
        prop_oneof![
            (phase, hex()).prop_map(|(phase, base)| Event::Started { phase, base }),
            (phase, word(), any::<bool>(), text(), text()).prop_map(
                |(phase, name, pass, cmd, result)| Event::Gate {
                    phase,
                    name,
                    pass,
                    cmd,
                    result
                }
            ),
            (
                phase,
                hex(),
                hex(),
                (0u32..500, 0u32..500),
                proptest::option::of(0u64..20)
            )
                .prop_map(|(phase, from, to, (x, y), k)| Event::Complete {
                    phase,
                    from,
                    to,
                    tests: format!("{x}/{y}"),
                    review: k.map_or(Review::Clean, Review::Parked),
                }),
            (phase, text(), text()).prop_map(|(phase, finding, ruling)| Event::Parked {
                phase,
                finding,
                ruling
            }),
            (phase, text()).prop_map(|(phase, reason)| Event::Blocked { phase, reason }),
            (phase, 0u64..50).prop_map(|(phase, confirmed)| Event::Resumed { phase, confirmed }),
            phase.prop_map(|phase| Event::AgentDied { phase }),
            (phase, text(), text()).prop_map(|(phase, rule, who)| Event::Waiver {
                phase,
                rule,
                who
            }),
            ((0u32..500, 0u32..500), hex()).prop_map(|((x, y), sha)| Event::Baseline {
                tests: format!("{x}/{y}"),
                sha
            }),
            (word(), word(), text()).prop_map(|(from, to, reason)| Event::Env { from, to, reason }),
            (
                word(),
                prop_oneof![
                    Just(FinishOutcome::Done),
                    Just(FinishOutcome::Skipped),
                    Just(FinishOutcome::Failed)
                ]
            )
                .prop_map(|(step, outcome)| Event::Finish { step, outcome }),
        ]
    }

    /// Found by fuzzing: a command ending in an arrow, followed by the arrow before the result,
    /// was read with the result after the second arrow, but its rendering (one space between
    /// the arrows) was read with the split at the first.
    #[test]
    fn a_command_ending_in_an_arrow_reads_back() {
        let line =
            parse_line("phase 1: gate t → PASS (evidence: cargo test ->  → exit 0: ok)").unwrap();
        let Event::Gate { cmd, result, .. } = &line.event else {
            panic!("{line:?}");
        };
        assert_eq!(
            (cmd.as_str(), result.as_str()),
            ("cargo test ->", "exit 0: ok")
        );
        assert_eq!(parse_line(&render_line(&line)), Ok(line));
    }

    /// Found by fuzzing: a date alone in brackets was read as the line's time, but written
    /// back as `@ <date>`, which did not read as a time, so a rewrite moved it into the text.
    #[test]
    fn a_date_alone_reads_back_as_the_time_it_renders() {
        for raw in [
            "phase 1: BLOCKED — waiting (2026-03-02)",
            "phase 1: BLOCKED — waiting [2026-03-02]",
            "phase 1: BLOCKED — waiting @ 2026-03-02",
        ] {
            let line = parse_line(raw).unwrap();
            assert_eq!(line.at.as_deref(), Some("2026-03-02"), "{raw}");
            assert_eq!(parse_line(&render_line(&line)), Ok(line), "{raw}");
        }
        // Unmarked, a date stays part of the text.
        let line = parse_line("phase 1: BLOCKED — wait till 2026-03-02").unwrap();
        assert_eq!(line.at, None);
    }

    proptest! {
        /// Every event the writer renders parses back to the same event.
        #[test]
        fn rendered_events_parse_back(event in event(), stamped: bool) {
            let line = Line { event, at: stamped.then(|| "2026-03-01T12:00:00Z".to_string()) };
            let rendered = render_line(&line);
            prop_assert_eq!(parse_line(&rendered), Ok(line), "{}", rendered);
        }

        /// The parser never panics, whatever the line.
        #[test]
        fn parsing_never_panics(raw in "\\PC{0,120}") {
            let _ = parse_line(&raw);
        }

        /// Two machines append to one ledger (each line stamped, milliseconds apart or in the
        /// same one), and git's union merge keeps each side's new lines as a block, either
        /// block first: both merges read as one history.
        #[test]
        fn merged_blocks_read_the_same_whichever_lands_first(
            times in proptest::collection::vec((0u64..40, any::<bool>()), 1..24),
        ) {
            let header = "# run-state — plan: plans/p/plan.md\nphase 1: started (base abc1234) @ 2026-03-01T11:00:00Z\n";
            let (mut a, mut b) = (String::new(), String::new());
            for (i, (ms, side)) in times.iter().enumerate() {
                let t = jiff::Timestamp::from_millisecond(1_772_366_400_000 + (*ms as i64) * 250 + i as i64).unwrap();
                let line = format!("phase {}: BLOCKED — step {i} @ {}\n", i % 3 + 1, crate::time::format_ts_ms(t));
                if *side { a.push_str(&line) } else { b.push_str(&line) }
            }
            let order = |text: String| -> Vec<String> {
                parse_ledger(&text).events.iter().map(|(_, l)| render_line(l)).collect()
            };
            let ab = order(format!("{header}{a}{b}"));
            let ba = order(format!("{header}{b}{a}"));
            prop_assert_eq!(&ab, &ba);
            // And that history is in time order.
            let mut sorted = ab.clone();
            sorted.sort_by_key(|l| crate::time::parse_ts(l.rsplit(" @ ").next()));
            prop_assert_eq!(ab, sorted);
        }
    }

    #[test]
    fn a_line_without_a_time_stays_after_the_one_before_it() {
        let text = "phase 1: started (base abc1234) @ 2026-03-01T12:00:05Z\n\
                    phase 1: BLOCKED — no time\n\
                    phase 2: started (base abc1234) @ 2026-03-01T12:00:01Z\n";
        let phases: Vec<String> = parse_ledger(text)
            .events
            .iter()
            .map(|(n, _)| n.to_string())
            .collect();
        assert_eq!(phases, ["3", "1", "2"]);
    }
}
