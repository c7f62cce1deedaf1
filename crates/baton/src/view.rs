//! Outcomes several commands print alike.

use std::path::Path;

use serde_json::{Value, json};

use crate::output::Report;
use baton_core::model::LoopState;
use baton_core::packet::{Packet, build, render_markdown};
use baton_core::text::esc;
use baton_core::{Decision, Reason};
use baton_ops::error::ExitStatus;
use baton_ops::ledgers::{Appended, Plan};
use baton_ops::survey::Survey;
use baton_ops::ticket_loop::Target;

/// The command a packet names for everything it leaves out.
pub const LIST_COMMAND: &str = "baton status";

/// An append to a plan's ledger: stdout is the appended line alone, so that
/// `LINE=$(baton ledger start …)` captures just it; the note on a sealed tail goes beside it.
pub fn appended(plan: &Plan, done: Appended) -> Report {
    match done {
        Appended::Foreign(d) => Report::decision(&d),
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

/// The report of a loop write: the message, the rules that fired, the next step.
pub fn loop_report(
    decision: &Decision,
    target: &Target,
    path: &Path,
    state: &LoopState,
    message: &str,
) -> Report {
    let mut text = format!("{message}\n");
    for reason in &decision.reasons {
        text.push_str(&format!("  {}: {}\n", reason.rule, reason.message));
    }
    if let Some(next) = &decision.next {
        text.push_str(&format!("next: {next}\n"));
    }
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
    let packet = build(s.items(), LIST_COMMAND);
    let markdown = render_markdown(&packet);
    (packet, markdown)
}

/// The JSON both session-start commands print: a decision over the whole project, every row,
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
        "none"
    } else {
        "resume"
    };
    let next = packet.items.first().map(|i| match &i.accept {
        Some(accept) => format!("{}: {} (`{accept}`)", i.kind, i.next),
        None => format!("{}: {}", i.kind, i.next),
    });
    let rows: Vec<Value> = s.work.iter().map(|w| json!(w)).collect();
    let mut report = Report::ok(
        json!({
            "verdict": verdict,
            "reasons": reasons,
            "next": next,
            "work": rows,
            "packet": packet,
            "packet_markdown": markdown,
            "pause": s.pause,
        }),
        text,
    );
    // Unreadable files are warnings beside the answer, never in the way of it.
    for note in &s.notes {
        report = report.warn(note.trim_start_matches("warning: ").to_string());
    }
    report
}
