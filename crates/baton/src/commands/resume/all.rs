//! `baton resume` with no argument: the session-start entry point. Every piece of work in the
//! project with the verdict its own command gives, then one resume packet for what was
//! interrupted.

use crate::error::CommandError;
use crate::output::Report;
use baton_core::text::esc;
use baton_ops::env::Ctx;
use baton_ops::survey::{Work, survey};

pub fn cmd_resume_all(ctx: &Ctx) -> Result<Report, CommandError> {
    let s = survey(ctx, &*ctx.store()?)?;
    let (packet, markdown) = crate::view::packet_of(&s);
    let mut text = String::new();
    let (rows, more) = crate::view::session_rows(&s);
    for w in rows {
        text.push_str(&row_line(w));
    }
    if more > 0 {
        text.push_str(&format!(
            "+{more} more: `{}` lists them\n",
            crate::view::LIST_COMMAND
        ));
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

/// The longest line a row prints: a long key or next step cannot crowd out the other rows.
const LINE_CAP: usize = 240;

fn clip(line: String) -> String {
    if line.chars().count() <= LINE_CAP {
        return line;
    }
    let cut: String = line.chars().take(LINE_CAP - 1).collect();
    format!("{cut}…")
}

/// `kind key: verdict · class · phase`, then the next step when there is one to take (or why
/// it is not offered here).
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
    let mut line = clip(format!(
        "{} {}: {}{class} · {}{machine}",
        w.kind,
        esc(&w.key),
        w.shown_verdict(),
        w.phase
    ));
    line.push('\n');
    if (w.item.is_some() || w.aside.is_some())
        && let Some(next) = crate::view::row_next(w)
    {
        line.push_str(&clip(format!(
            "  next: {}",
            baton_core::text::short_sessions(&next)
        )));
        line.push('\n');
    }
    line
}
