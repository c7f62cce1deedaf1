//! `baton resume` with no argument: the session-start entry point. Every piece of work in the
//! project with the verdict its own command gives, then one resume packet for what was
//! interrupted.

use crate::output::Report;
use baton_core::text::esc;
use baton_ops::env::Ctx;
use baton_ops::error::CommandError;
use baton_ops::survey::{Work, survey};

pub fn cmd_resume_all(ctx: &Ctx) -> Result<Report, CommandError> {
    let s = survey(ctx)?;
    let (packet, markdown) = crate::view::packet_of(&s);
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
    Ok(crate::view::survey_report(&s, &packet, &markdown, text))
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
