//! `baton resume` with no argument: the session-start entry point. Every piece of work in the
//! project with the verdict its own command gives, then one resume packet for what was
//! interrupted.

use serde_json::{Value, json};

use crate::output::Report;
use baton_core::Reason;
use baton_core::packet::{Packet, build, render_markdown};
use baton_core::text::esc;
use baton_ops::env::Ctx;
use baton_ops::error::CommandError;
use baton_ops::survey::{Survey, Work, survey};

/// The command a packet names for everything it leaves out.
pub const LIST_COMMAND: &str = "baton status";

pub fn cmd_resume_all(ctx: &Ctx) -> Result<Report, CommandError> {
    let s = survey(ctx)?;
    let (packet, markdown) = packet_of(&s);
    let mut text = String::new();
    for w in &s.work {
        text.push_str(&row_line(w));
    }
    if s.work.is_empty() {
        text.push_str(
            "nothing in this project to resume: no feature, loop, batch, run or ledger\n",
        );
    }
    if !packet.items.is_empty() {
        text.push('\n');
        text.push_str(&markdown);
    }
    Ok(report(&s, &packet, &markdown, text))
}

/// The packet for a survey, and its Markdown.
pub fn packet_of(s: &Survey) -> (Packet, String) {
    let packet = build(s.items(), LIST_COMMAND);
    let markdown = render_markdown(&packet);
    (packet, markdown)
}

/// `kind key: verdict · class · phase`, then the next step when there is one to take.
fn row_line(w: &Work) -> String {
    let class = w
        .class
        .map(|c| format!(" · {}", c.as_str()))
        .unwrap_or_default();
    // With a store shared by several machines, where the owner works.
    let machine = w
        .owner
        .as_ref()
        .and_then(|o| o.machine.as_deref())
        .map(|h| format!(" · owned on {}", esc(h)))
        .unwrap_or_default();
    let mut line = format!(
        "{} {}: {}{class} · {}{machine}\n",
        w.kind,
        esc(&w.key),
        w.verdict,
        w.phase
    );
    if w.item.is_some()
        && let Some(next) = &w.next
    {
        line.push_str(&format!("  next: {next}\n"));
    }
    line
}

/// The JSON both session-start commands print: a decision over the whole project, every row,
/// and the packet.
pub fn report(s: &Survey, packet: &Packet, markdown: &str, text: String) -> Report {
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
