//! How outcomes print that more than one command prints: a loop write, a ledger append, the
//! survey and its packet, the batch, and the lines of a history.

use std::path::Path;

use serde::Serialize;
use serde_json::{Value, json};

use crate::error::ExitStatus;
use crate::output::Report;
use baton_core::decide::continuation::Class;
use baton_core::decide::survey::Call;
use baton_core::journal::JournalEvent;
use baton_core::ledger::{Event, Ledger, render_line};
use baton_core::model::{BatchState, LoopState, Pauses};
use baton_core::packet::{Packet, WorkKind, build, render_markdown};
use baton_core::text::esc;
use baton_core::text::esc_or;
use baton_core::time::{age, human_age, is_live};
use baton_core::{Decision, Reason, Verdict};
use baton_ops::batch::next_step;
use baton_ops::env::Ctx;
use baton_ops::ledgers::{Appended, Plan};
use baton_ops::survey::{Aside, Owner, Survey, Work};
use baton_ops::ticket_loop::Target;
use baton_store::Versioned;

/// The command a packet names for everything it leaves out.
pub const LIST_COMMAND: &str = "baton status";

/// An append to a plan's ledger: stdout is the appended line alone, so that
/// `LINE=$(baton ledger start …)` captures just it; the note on a sealed tail goes beside it.
pub fn appended(plan: &Plan, done: Appended) -> Report {
    match done {
        Appended::Refused(d) => Report::decision(&d),
        Appended::Written { text, sealed } => {
            let report = Report::ok(
                serde_json::json!({ "verdict": "ok", "appended": text, "sealed_torn_tail": sealed, "ledger": plan.ledger.display().to_string() }),
                text,
            );
            if sealed {
                report.note(
                    "note: the ledger ended in a torn line; it was sealed with a newline first",
                )
            } else {
                report
            }
        }
    }
}

/// The report of a command that recorded work complete (`ledger complete`, `loop finish`,
/// `run finish`) with the judge's verdict on the claim it made. A claim that could not be judged
/// is a warning: the record stands.
pub fn with_claim(
    report: Report,
    what: &str,
    claimed: Result<Option<baton_ops::judge::Claimed>, baton_ops::OpError>,
) -> Report {
    match claimed {
        Ok(Some(c)) => {
            let warning = c.warning.clone();
            let report = claimed_report(report, &c);
            match warning {
                Some(w) => report.warn(w),
                None => report,
            }
        }
        Ok(None) => report,
        Err(e) => report.warn(format!(
            "warning: {what} was recorded but its claim not judged: {}",
            e.message
        )),
    }
}

/// A completion's verdict, added to the report of its record: the judge's word, the tree it
/// was judged on and, short of verified, the evidence and the one command that settles it.
fn claimed_report(report: Report, claimed: &baton_ops::judge::Claimed) -> Report {
    use baton_core::judge::{Judged, why};
    let word = claimed.judged.word();
    let mut line = format!("verdict: {word} on {}", claimed.tree);
    if claimed.judged != Judged::Verified {
        line.push_str(&format!("\n{}", why(&claimed.claim, &claimed.judged)));
    }
    if !claimed.kept {
        line.push_str("\nnote: no agent session made this claim, so no stop is judged on it");
    }
    report.text_after(&line).with(
        "judge",
        serde_json::json!({
            "verdict": word,
            "tree": claimed.tree.id,
            "head": claimed.tree.head,
            "changed": claimed.tree.changed,
            "why": (claimed.judged != Judged::Verified).then(|| why(&claimed.claim, &claimed.judged)),
            "kept": claimed.kept,
        }),
    )
}

/// The report of a loop write: the message, the rules that fired, the next step.
pub fn loop_report(
    decision: &Decision,
    target: &Target,
    path: &Path,
    state: &LoopState,
    message: &str,
) -> Report {
    let text = format!("{message}\n{}", crate::output::reasons_text(decision));
    Report::new(
        ExitStatus::Success,
        crate::output::decision_json(decision),
        text,
    )
    .with("ticket", target.raw.clone())
    .with("key", target.key.clone())
    .with("path", path.display().to_string())
    .with("status", state.status.as_str())
    .with("owner", state.session_id.clone())
    .with("epoch", state.owner_epoch)
    .with("breadcrumb", state.breadcrumb())
}

/// The state as JSON, for `--json` outputs that include it.
pub fn state_json(state: &LoopState) -> Value {
    serde_json::to_value(state).unwrap_or_else(|e| json!({ "error": e.to_string() }))
}

/// The packet for a survey, and its Markdown.
pub fn packet_of(s: &Survey) -> (Packet, String) {
    let mut packet = build(s.items(), &asides(s), LIST_COMMAND);
    // This session's claims the judge does not find verified: never reported done on its word.
    if let Some((tree, claims)) = &s.claims {
        for (claim, judged) in claims {
            packet.constraints.push(format!(
                "Claimed complete by this session, {} on tree {tree}: {} Do not report it done until `baton verdict` says verified.",
                judged.word(),
                baton_core::judge::why(claim, judged)
            ));
        }
    }
    // The accounts' windows closed now: a launch spends into them and is refused.
    for w in &s.windows {
        packet.constraints.push(format!(
            "The {} window of {} is closed until {}: an agent or subagent launched on it now is refused by its API. Launch none before then; `baton window check --client {}` says when one may go.",
            w.window,
            w.label,
            baton_core::time::format_ts(w.until),
            w.client.as_str()
        ));
    }
    let markdown = render_markdown(&packet);
    (packet, markdown)
}

/// One informational line for each piece of quiet work not offered to this session, in
/// natural key order.
fn asides(s: &Survey) -> Vec<String> {
    let mut quiet: Vec<(&Work, &Aside)> = s
        .work
        .iter()
        .filter_map(|w| Some((w, w.aside.as_ref()?)))
        .collect();
    quiet.sort_by_cached_key(|(w, _)| (w.kind, baton_core::text::natural_key(&w.key)));
    quiet
        .into_iter()
        .map(|(w, a)| {
            format!(
                "{} {}: {} ({})",
                w.kind,
                esc(&w.key),
                not_offered(w, a),
                a.rule
            )
        })
        .collect()
}

/// Why another session's quiet work is not offered here: the command first, so that a clipped
/// line keeps it.
fn not_offered(w: &Work, a: &Aside) -> String {
    let quiet = a.quiet_for.map_or_else(
        || "quiet (no last-write time)".to_string(),
        |d| format!("quiet for {}", human_age(d)),
    );
    let who = w
        .owner
        .as_ref()
        .and_then(|o| o.session.as_deref())
        .map_or_else(
            || "no owner session".to_string(),
            |s| format!("owner session {}", esc(s)),
        );
    let running = match a.process {
        Some((pid, true)) => format!(", whose client process (pid {pid}) still runs"),
        _ => String::new(),
    };
    format!(
        "a session started for it asks with `{}`; {quiet} at {}, {who}{running}, and nothing says it was interrupted (it may be a long wait such as CI)",
        a.ask, w.phase
    )
}

/// The next step a row shows: its own command's, or for another session's quiet work, why it
/// is not offered here.
pub fn row_next(w: &Work) -> Option<String> {
    match &w.aside {
        Some(a) => Some(format!("not offered here: {}", not_offered(w, a))),
        None => w.next.clone(),
    }
}

/// One piece of work as `--json` lists it.
#[derive(Debug, Serialize)]
pub struct Row<'a> {
    pub kind: WorkKind,
    pub key: &'a str,
    pub phase: &'a str,
    pub status: &'a str,
    pub owner: Option<&'a Owner>,
    /// The verdict its own command gives, with the mode it names or what qualifies it.
    #[serde(flatten)]
    pub call: Call,
    pub class: Option<Class>,
    pub next: Option<String>,
}

impl<'a> Row<'a> {
    pub fn of(w: &'a Work) -> Row<'a> {
        Row {
            kind: w.kind,
            key: &w.key,
            phase: &w.phase,
            status: &w.status,
            owner: w.owner.as_ref(),
            call: w.call,
            class: w.class,
            next: row_next(w),
        }
    }
}

/// Interrupted work first (most urgent first), then live, then finished; within each, the
/// kinds in the survey's order and the keys in natural order (PROJ-2 before PROJ-10).
pub fn by_urgency(work: &[Work]) -> Vec<&Work> {
    let mut kinds: Vec<baton_core::packet::WorkKind> = Vec::new();
    for w in work {
        if !kinds.contains(&w.kind) {
            kinds.push(w.kind);
        }
    }
    let mut work: Vec<&Work> = work.iter().collect();
    work.sort_by_cached_key(|w| {
        (
            w.item.as_ref().map_or(u8::MAX, |i| i.urgency),
            w.call.verdict.is_none(),
            kinds.iter().position(|k| *k == w.kind),
            baton_core::text::natural_key(&w.key),
        )
    });
    work
}

/// The most rows the session-start commands list before the packet (and in `work` under
/// `--json`): one read for an agent, whatever the number of state files. The rest are counted;
/// `baton status` lists them all.
pub const ROWS_CAP: usize = 20;

/// The rows a session-start command lists, most urgent first and keys in natural order, and
/// how many it leaves out.
pub fn session_rows(s: &Survey) -> (Vec<&Work>, usize) {
    let mut rows = by_urgency(&s.work);
    let more = rows.len().saturating_sub(ROWS_CAP);
    rows.truncate(ROWS_CAP);
    (rows, more)
}

/// What the session-start commands print under `--json`: a decision over the whole project,
/// the rows listed, and the packet.
#[derive(Debug, Serialize)]
struct SessionStart<'a> {
    /// `resume` when anything is in the packet, else `none`.
    verdict: Verdict,
    /// One `resume.interrupted` per item of the packet.
    reasons: Vec<Reason>,
    /// The most urgent item's next step, with its accept command.
    next: Option<String>,
    work: Vec<Row<'a>>,
    /// The rows left out (`ROWS_CAP`).
    work_more: usize,
    packet: &'a Packet,
    packet_markdown: &'a str,
    pause: Option<&'a Pauses>,
}

/// The JSON both session-start commands print: a decision over the whole project, the rows listed,
/// and the packet.
pub fn survey_report(s: &Survey, packet: &Packet, markdown: &str, text: String) -> Report {
    let reasons: Vec<Reason> = packet
        .items
        .iter()
        .map(|i| {
            Reason::new(
                baton_core::Rule::ResumeInterrupted,
                format!(
                    "{} {}: {}{}",
                    i.kind,
                    esc(&i.key),
                    i.verdict,
                    i.class
                        .map(|c| format!(", {}", c.as_str()))
                        .unwrap_or_default()
                ),
            )
        })
        .collect();
    let verdict = if packet.items.is_empty() && packet.more == 0 {
        Verdict::None
    } else {
        Verdict::Resume
    };
    let next = packet.items.first().map(|i| match &i.accept {
        Some(accept) => format!("{}: {} (`{accept}`)", i.kind, i.next),
        None => format!("{}: {}", i.kind, i.next),
    });
    let (shown, more) = session_rows(s);
    let json = SessionStart {
        verdict,
        reasons,
        next,
        work: shown.into_iter().map(Row::of).collect(),
        work_more: more,
        packet,
        packet_markdown: markdown,
        pause: s.pause.as_ref(),
    };
    let mut report = Report::of(ExitStatus::Success, &json, text);
    // Unreadable files are warnings beside the answer, never in the way of it.
    for note in &s.notes {
        report = report.warn(note.trim_start_matches("warning: ").to_string());
    }
    report
}

/// The batch, and the ticket a batch resume picks next.
pub fn batch(ctx: &Ctx, loaded: &Versioned<BatchState>) -> Report {
    let s = &loaded.state;
    let last = s.liveness(ctx.now);
    let seen = last.map_or_else(
        || "no last-write time".into(),
        |t| format!("last write {} ago", human_age(age(ctx.now, t))),
    );
    let mut text = format!(
        "batch {} ({}, {})\n  owner: {} (epoch {}, {}, {seen})\n",
        esc(&s.batch_id),
        esc(s.status.as_str()),
        esc_or(s.mode.as_deref(), "sequential"),
        esc_or(s.owner(), "none"),
        s.owner_epoch,
        if is_live(ctx.now, last) {
            "live"
        } else {
            "stale"
        },
    );
    for t in &s.tickets {
        text.push_str(&format!("  {:<12} {}\n", esc(&t.status), esc(&t.ticket_id)));
    }
    if !s.replan_log.is_empty() {
        text.push_str(&format!("  replans: {}\n", s.replan_log.len()));
    }
    let next = next_step(s);
    if let Some(next) = &next {
        text.push_str(&format!("next: {next}\n"));
    }
    Report::ok(
        json!({ "path": loaded.path.display().to_string(), "next": next, "state": s }),
        text,
    )
}

/// A ledger's events in file order, each as `baton log` shows it: its line number, time, kind,
/// phase and text, and for a gate its name and result.
pub fn ledger_events(ledger: &Ledger) -> Vec<Value> {
    ledger
        .events
        .iter()
        .map(|(n, line)| {
            let mut event = json!({
                "line": n,
                "ts": line.at,
                "event": line.event.kind(),
                "phase": line.event.phase(),
                "text": render_line(line),
            });
            match &line.event {
                Event::Gate { name, pass, .. } => {
                    event["gate"] = json!(name);
                    event["pass"] = json!(pass);
                }
                Event::Resumed { confirmed, .. } => event["confirmed"] = json!(confirmed),
                _ => {}
            }
            event
        })
        .collect()
}

/// A value read from a file, for one line of text: strings escaped, the rest as JSON.
pub fn shown(value: &Value) -> String {
    match value {
        Value::String(s) => esc(s).into_owned(),
        Value::Null => "none".into(),
        other => esc(&other.to_string()).into_owned(),
    }
}

fn session(value: &Value) -> String {
    match value.as_str() {
        Some(s) => format!("session {}", short_session(&esc(s))),
        None => "no session".into(),
    }
}

/// A session id as text shows it: a long one (a UUID) by its first 8 characters, which tell
/// sessions apart; `--json` has it whole.
pub fn short_session(id: &str) -> String {
    if id.chars().count() > 12 {
        let head: String = id.chars().take(8).collect();
        format!("{head}…")
    } else {
        id.to_string()
    }
}

/// `qa/returned (iteration 2)`.
fn position(value: &Value) -> String {
    format!(
        "{}/{} (iteration {})",
        shown(&value["phase"]),
        shown(&value["action"]),
        shown(&value["iteration"])
    )
}

/// A recorded time as text shows it: in the machine's zone (`Ctx::shown`); one that is not a
/// time is shown as it is.
pub fn local_time(ctx: &Ctx, ts: &Value) -> String {
    match baton_core::time::parse_ts(ts.as_str()) {
        Some(t) => ctx.shown(t),
        None => shown(ts),
    }
}

/// `<ts>  <event>  <details>`: the takeover with both sessions and both epochs, a `set` as
/// where the loop was and where it went, every other event as its fields; `when` shows the
/// time.
pub fn journal_line(event: &Value, when: &dyn Fn(&Value) -> String) -> String {
    let name = shown(&event["event"]);
    // baton's own events by their names; a name it does not write is shown as it is.
    let known = event["event"].as_str().and_then(JournalEvent::parse);
    let mut parts = Vec::new();
    let mut skip = vec!["ts", "event", "session", "epoch"];
    match known {
        Some(JournalEvent::Takeover) => {
            parts.push(format!(
                "{} (epoch {}) -> {} (epoch {})",
                session(&event["from_session"]),
                shown(&event["from_epoch"]),
                session(&event["to_session"]),
                shown(&event["to_epoch"])
            ));
            skip.extend(["from_session", "from_epoch", "to_session", "to_epoch"]);
        }
        Some(JournalEvent::Set) => {
            parts.push(format!(
                "{} -> {}",
                position(&event["from"]),
                position(&event["to"])
            ));
            skip.extend(["from", "to"]);
        }
        // The command a supervisor ran, as a shell would take it.
        Some(JournalEvent::SuperviseRelaunch | JournalEvent::SuperviseAttempt)
            if event["command"].is_array() =>
        {
            let words: Vec<String> = event["command"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|w| baton_core::text::shell_quote(&shown(w)))
                .collect();
            parts.push(words.join(" "));
            skip.push("command");
        }
        _ => {}
    }
    // The supervisor's events, this baton's and any later one's.
    let supervisor = name.starts_with("supervise.");
    if supervisor {
        // Its `session` is the agent's, when known: shown as a field.
        skip.retain(|k| *k != "session");
        skip.extend(["supervisor", "client"]);
    }
    if let Some(fields) = event.as_object() {
        for (key, value) in fields {
            let empty = value.is_null()
                || value.as_array().is_some_and(Vec::is_empty)
                || value.as_object().is_some_and(serde_json::Map::is_empty);
            if skip.contains(&key.as_str()) || empty {
                continue;
            }
            parts.push(format!("{}={}", esc(key), shown(value)));
        }
    }
    if supervisor {
        parts.push(format!(
            "(baton supervise, pid {}, {})",
            shown(&event["supervisor"]),
            shown(&event["client"])
        ));
    } else if known != Some(JournalEvent::Takeover) {
        let epoch = match &event["epoch"] {
            Value::Null => String::new(),
            e => format!(", epoch {}", shown(e)),
        };
        parts.push(format!("({}{epoch})", session(&event["session"])));
    }
    format!("{}  {name}  {}", when(&event["ts"]), parts.join("  "))
}

/// `<ts>  <kind>  <the line>` of a ledger event, `when` showing the time; a line without a
/// time shows `-`.
/// A judge event of a plan's journal: `<time>  refused  phase 1 unverified on tree … (session
/// …): <why>`.
pub fn judge_line(event: &Value, when: &dyn Fn(&Value) -> String) -> String {
    let mut line = format!(
        "{}  {}  {} {} on tree {}",
        when(&event["ts"]),
        shown(&event["event"]),
        shown(&event["work"]),
        shown(&event["verdict"]),
        shown(&event["tree"]),
    );
    if let Some(s) = event["session"].as_str() {
        line.push_str(&format!(
            " (session {})",
            baton_core::timeline::short_session(s)
        ));
    }
    if let Some(rule) = event["rule"].as_str() {
        line.push_str(&format!(" [{rule}]"));
    }
    if event["by"] == "goal" {
        line.push_str(" by the session's goal");
    }
    if let Some(why) = event["why"].as_str() {
        line.push_str(&format!(": {}", baton_core::text::esc(why)));
    }
    line
}

pub fn ledger_line(event: &Value, when: &dyn Fn(&Value) -> String) -> String {
    let ts = match &event["ts"] {
        Value::Null => "-".to_string(),
        ts => when(ts),
    };
    format!(
        "{ts}  {}  {}",
        shown(&event["event"]),
        shown(&event["text"])
    )
}
