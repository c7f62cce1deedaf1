//! `REVIEW_NEEDED.md`: what a delegate that hit its cap leaves in the feature directory. The
//! originating project names the artifact but gives it no path or format, so baton fixes both:
//! `<feature path>/REVIEW_NEEDED.md`, shaped like this:
//!
//! ```text
//! # REVIEW_NEEDED: T-03
//!
//! - task: T-03
//! - by: <session id>
//! - cap: 40 turns
//! - written: 2026-03-01T12:00:00Z
//!
//! ## Why
//!
//! <reason>
//!
//! ## Partial result
//!
//! <what the delegate got done>
//! ```
//!
//! Reading takes a hand-written file too: every field it does not find is `None`.

use serde::Serialize;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ReviewNeeded {
    pub task: Option<String>,
    /// The session that wrote it.
    pub by: Option<String>,
    /// The cap the delegate hit, as the caller put it (`40 turns`, `30 minutes`).
    pub cap: Option<String>,
    /// RFC 3339, as written; a hand-written file may hold anything here.
    pub written_at: Option<String>,
    pub reason: Option<String>,
    pub partial: Option<String>,
}

const WHY: &str = "## Why";
const PARTIAL: &str = "## Partial result";

/// One line: a field value cannot break into the next field.
fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect::<String>()
        .trim()
        .to_string()
}

/// A section body: a line that starts with `#` is escaped so that it cannot open a section.
fn body(s: &str) -> String {
    s.trim_end()
        .lines()
        // A carriage return ending a line would be read back as part of the line ending.
        .map(|l| l.trim_end_matches('\r'))
        .map(|l| {
            if l.starts_with('#') || l.starts_with("\\#") {
                format!("\\{l}")
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn unbody(lines: &[&str]) -> Option<String> {
    let text = lines
        .iter()
        .map(|l| {
            l.strip_prefix('\\')
                .filter(|r| r.starts_with('#'))
                .unwrap_or(l)
        })
        .collect::<Vec<_>>()
        .join("\n");
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}

impl ReviewNeeded {
    /// The first line of the reason, for a one-line summary.
    pub fn headline(&self) -> &str {
        self.reason
            .as_deref()
            .unwrap_or("no reason given")
            .lines()
            .next()
            .unwrap_or("")
    }
}

/// The file's text.
pub fn format_review_needed(review: &ReviewNeeded) -> String {
    let task = review.task.as_deref().map(one_line).unwrap_or_default();
    let mut out = if task.is_empty() {
        "# REVIEW_NEEDED\n\n".to_string()
    } else {
        format!("# REVIEW_NEEDED: {task}\n\n")
    };
    for (key, value) in [
        ("task", &review.task),
        ("by", &review.by),
        ("cap", &review.cap),
        ("written", &review.written_at),
    ] {
        // A value of nothing but control characters would write a field that reads back as
        // absent.
        if let Some(v) = value.as_deref().map(one_line).filter(|v| !v.is_empty()) {
            out.push_str(&format!("- {key}: {v}\n"));
        }
    }
    out.push_str(&format!("\n{WHY}\n\n"));
    match &review.reason {
        Some(r) if !r.trim().is_empty() => out.push_str(&format!("{}\n", body(r))),
        _ => out.push_str("(no reason given)\n"),
    }
    out.push_str(&format!("\n{PARTIAL}\n\n"));
    match &review.partial {
        Some(p) if !p.trim().is_empty() => out.push_str(&format!("{}\n", body(p))),
        _ => out.push_str("(none recorded)\n"),
    }
    out
}

/// Reads a file written by `format_review_needed` or by hand.
pub fn parse_review_needed(text: &str) -> ReviewNeeded {
    let mut review = ReviewNeeded::default();
    let mut section: Option<&str> = None;
    let (mut why, mut partial) = (Vec::new(), Vec::new());
    for line in text.lines() {
        let trimmed = line.trim_end();
        if let Some(heading) = trimmed.strip_prefix("## ") {
            section = Some(match heading.trim().to_ascii_lowercase().as_str() {
                "why" | "reason" => "why",
                "partial result" | "partial" => "partial",
                _ => "other",
            });
            continue;
        }
        match section {
            None => {
                if let Some(task) = trimmed.strip_prefix("# REVIEW_NEEDED:") {
                    let task = task.trim();
                    if !task.is_empty() && review.task.is_none() {
                        review.task = Some(task.to_string());
                    }
                } else if let Some((key, value)) =
                    trimmed.strip_prefix("- ").and_then(|f| f.split_once(':'))
                {
                    let value = value.trim();
                    let slot = match key.trim().to_ascii_lowercase().as_str() {
                        "task" => &mut review.task,
                        "by" => &mut review.by,
                        "cap" => &mut review.cap,
                        "written" | "written_at" => &mut review.written_at,
                        _ => continue,
                    };
                    if !value.is_empty() {
                        *slot = Some(value.to_string());
                    }
                }
            }
            Some("why") => why.push(line),
            Some("partial") => partial.push(line),
            _ => {}
        }
    }
    review.reason = unbody(&why).filter(|r| r != "(no reason given)");
    review.partial = unbody(&partial).filter(|p| p != "(none recorded)");
    review
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_written_reads_back() {
        let review = ReviewNeeded {
            task: Some("T-03".into()),
            by: Some("sess-1".into()),
            cap: Some("40 turns".into()),
            written_at: Some("2026-03-01T12:00:00Z".into()),
            reason: Some("hit the turn cap\n## not a section\n#also not".into()),
            partial: Some("tests written; 2 of 5 pass".into()),
        };
        let text = format_review_needed(&review);
        assert!(text.starts_with("# REVIEW_NEEDED: T-03\n\n- task: T-03\n- by: sess-1\n"));
        assert_eq!(parse_review_needed(&text), review);
    }

    #[test]
    fn a_field_cannot_forge_another() {
        let review = ReviewNeeded {
            task: Some("T-03\n- by: mallory".into()),
            ..ReviewNeeded::default()
        };
        let back = parse_review_needed(&format_review_needed(&review));
        assert_eq!(back.by, None);
        assert_eq!(back.task.as_deref(), Some("T-03 - by: mallory"));
    }

    #[test]
    fn a_hand_written_file_gives_what_it_has() {
        let back = parse_review_needed("# REVIEW_NEEDED: T-07\n\nThe builder ran out of turns.\n");
        assert_eq!(
            back,
            ReviewNeeded {
                task: Some("T-07".into()),
                ..ReviewNeeded::default()
            }
        );
        assert_eq!(parse_review_needed(""), ReviewNeeded::default());
        let back = parse_review_needed("REVIEW NEEDED\n## Why\ncap hit\n");
        assert_eq!(back.reason.as_deref(), Some("cap hit"));
    }

    /// Found by fuzzing: a task of control characters only was written as an empty `- task:`
    /// field, which reads back as no task, so a second write differed from the first.
    #[test]
    fn a_field_of_control_characters_is_not_written() {
        let review = ReviewNeeded {
            task: Some("\u{1}".into()),
            ..ReviewNeeded::default()
        };
        let written = format_review_needed(&review);
        assert!(!written.contains("- task:"), "{written}");
        assert_eq!(
            format_review_needed(&parse_review_needed(&written)),
            written
        );
    }

    /// Found by fuzzing: carriage returns ending a line of the reason lost one to each read,
    /// so every rewrite of the note changed it.
    #[test]
    fn carriage_returns_ending_a_line_do_not_change_a_rewrite() {
        let text = "# REVIEW_NEEDED\n\n## Why\n\nit hit\r\r\r\nthe cap\n";
        let once = format_review_needed(&parse_review_needed(text));
        assert_eq!(format_review_needed(&parse_review_needed(&once)), once);
    }
}
