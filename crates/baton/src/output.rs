//! What a command prints: text for agents and people, or exactly one JSON object.

use std::io::{IsTerminal, Write};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::error::ExitStatus;
use baton_core::text::short_sessions;
use baton_core::{Decision, Reason};

/// A finished command: its exit status, its JSON object and its text.
#[derive(Debug)]
pub struct Report {
    pub status: ExitStatus,
    pub json: Map<String, Value>,
    pub text: String,
    /// Warnings: on stderr in text mode, so that stdout stays what a shell captures; under
    /// `--json`, the object's `warnings` array.
    pub warnings: Vec<String>,
    /// Notes beside a value that stdout prints alone: stderr in text mode, `notes` under
    /// `--json`.
    pub notes: Vec<String>,
}

impl Report {
    pub fn new(status: ExitStatus, json: Value, text: impl Into<String>) -> Report {
        let json = match json {
            Value::Object(map) => map,
            other => Map::from_iter([("value".to_string(), other)]),
        };
        Report {
            status,
            json,
            text: text.into(),
            warnings: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// Adds a note (stderr in text mode, `notes` under `--json`).
    pub fn note(mut self, note: impl Into<String>) -> Report {
        self.notes.push(note.into());
        self
    }

    /// Adds a warning (stderr in text mode, `warnings` under `--json`).
    pub fn warn(mut self, warning: impl Into<String>) -> Report {
        self.warnings.push(warning.into());
        self
    }

    pub fn ok(json: Value, text: impl Into<String>) -> Report {
        Report::new(ExitStatus::Success, json, text)
    }

    /// A report whose JSON object is `value`, a struct deriving `Serialize`: its fields, in
    /// their order.
    pub fn of(status: ExitStatus, value: &impl Serialize, text: impl Into<String>) -> Report {
        let json = serde_json::to_value(value)
            .unwrap_or_else(|e| json!({ "error": format!("cannot serialize: {e}") }));
        Report::new(status, json, text)
    }

    /// A decision: `verdict`, `reasons` and `next`, with the exit status its verdict implies.
    pub fn decision(decision: &Decision) -> Report {
        let status = ExitStatus::of(decision.verdict);
        Report::new(
            status,
            decision_json(decision),
            render_decision(decision, None),
        )
    }

    /// Adds a field to the JSON object.
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Report {
        self.json.insert(key.to_string(), value.into());
        self
    }

    /// Adds lines to the text, before what is there.
    pub fn text_before(mut self, lines: &str) -> Report {
        if !lines.is_empty() {
            self.text = format!("{}\n{}", lines.trim_end(), self.text);
        }
        self
    }

    /// Adds lines to the text, after what is there.
    pub fn text_after(mut self, lines: &str) -> Report {
        if !lines.is_empty() {
            self.text = format!("{}\n{}", self.text.trim_end(), lines.trim_end());
        }
        self
    }
}

pub fn decision_json(decision: &Decision) -> Value {
    json!({
        "verdict": decision.verdict,
        "reasons": decision.reasons,
        "next": decision.next,
    })
}

/// `verdict: offer (automatic)`, then the rules and the next step (`reasons_text`).
pub fn render_decision(decision: &Decision, qualifier: Option<&str>) -> String {
    let mut out = match qualifier {
        Some(q) => format!("verdict: {} ({q})\n", decision.verdict),
        None => format!("verdict: {}\n", decision.verdict),
    };
    out.push_str(&reasons_text(decision));
    out
}

/// One indented line per rule that fired, then `next:`, with session ids cut short
/// (`text::short_sessions`; `--json` has them whole).
pub fn reasons_text(decision: &Decision) -> String {
    let mut out: String = decision
        .reasons
        .iter()
        .map(|r| reason_line(r) + "\n")
        .collect();
    if let Some(next) = &decision.next {
        out.push_str(&format!("next: {}\n", short_sessions(next)));
    }
    out
}

/// `  rule: message`, as text shows a rule that fired.
pub fn reason_line(reason: &Reason) -> String {
    format!("  {}: {}", reason.rule, short_sessions(&reason.message))
}

/// When to colour what baton prints (`--color`): clap's own choice, so that its help and
/// errors follow the same value.
pub use clap::ColorChoice;

/// The `--color` of this process, set once after the command line is read.
static COLOR_CHOICE: OnceLock<ColorChoice> = OnceLock::new();

/// Records `--color` for [`colour`]; the first call wins.
pub fn set_color_choice(choice: ColorChoice) {
    let _ = COLOR_CHOICE.set(choice);
}

/// Whether to colour a stream: `--color always` yes, `--color never` no, and `auto` (the
/// default) as the environment says, read by `anstyle-query` (the crate clap reads it with):
/// never with `NO_COLOR` set to something, always with `CLICOLOR_FORCE` set to something but
/// `0`, never with `CLICOLOR=0`, else on a terminal that is not `TERM=dumb`. For stdout:
/// `colour(std::io::stdout().is_terminal())`.
pub fn colour(stream_is_terminal: bool) -> bool {
    colour_with(
        COLOR_CHOICE.get().copied().unwrap_or_default(),
        stream_is_terminal,
        Env {
            no_color: anstyle_query::no_color(),
            force: anstyle_query::clicolor_force(),
            clicolor: anstyle_query::clicolor(),
            term_colours: anstyle_query::term_supports_color(),
        },
    )
}

/// What the environment says about colour.
#[derive(Debug, Clone, Copy, Default)]
struct Env {
    no_color: bool,
    force: bool,
    clicolor: Option<bool>,
    term_colours: bool,
}

fn colour_with(choice: ColorChoice, stream_is_terminal: bool, env: Env) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto if env.no_color => false,
        ColorChoice::Auto if env.force => true,
        ColorChoice::Auto if env.clicolor == Some(false) => false,
        ColorChoice::Auto => stream_is_terminal && env.term_colours,
    }
}

/// A progress line for a long operation, `importing 120/4000 records…`, rewritten in place on
/// stderr when stderr is a terminal and never otherwise: a pipe or a log file gets nothing.
/// It is erased when the work is done (or the value dropped), so that what follows starts on
/// a clean line.
pub struct Progress {
    label: String,
    out: Option<Box<dyn Write>>,
    /// When the line was last drawn, and how wide it was.
    drawn: Option<(Instant, usize)>,
}

impl Progress {
    /// At most this often a line is redrawn: faster is flicker, and costs time on a slow
    /// terminal.
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    const EVERY: Duration = Duration::from_millis(100);

    /// A progress line for `label` (`importing`, then `120/4000 records…`), shown only when
    /// stderr is a terminal.
    pub fn new(label: impl Into<String>) -> Progress {
        let out: Option<Box<dyn Write>> = if std::io::stderr().is_terminal() {
            Some(Box::new(std::io::stderr()))
        } else {
            None
        };
        Progress::to(label, out)
    }

    /// A progress line drawn on `out`, or nowhere.
    pub fn to(label: impl Into<String>, out: Option<Box<dyn Write>>) -> Progress {
        Progress {
            label: label.into(),
            out,
            drawn: None,
        }
    }

    /// `done` of `total` `what` (`records`): drawn unless the line was drawn less than a tenth
    /// of a second ago; the last step is always drawn. (Only the store's transfers have that
    /// many quick steps.)
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    pub fn update(&mut self, done: usize, total: usize, what: &str) {
        let recent = self.drawn.is_some_and(|(at, _)| at.elapsed() < Self::EVERY);
        if done < total && recent {
            return;
        }
        self.update_now(done, total, what);
    }

    /// [`Progress::update`] without the throttle, for steps that are each slow.
    pub fn update_now(&mut self, done: usize, total: usize, what: &str) {
        let Some(out) = self.out.as_mut() else {
            return;
        };
        let line = format!("{} {done}/{total} {what}…", self.label);
        let width = line.chars().count();
        // Spaces over what is left of a longer line before.
        let pad = self.drawn.map_or(0, |(_, w)| w.saturating_sub(width));
        let _ = write!(out, "\r{line}{:pad$}", "");
        let _ = out.flush();
        self.drawn = Some((Instant::now(), width));
    }

    /// Erases the line, if one was drawn.
    pub fn finish(&mut self) {
        if let (Some(out), Some((_, width))) = (self.out.as_mut(), self.drawn.take()) {
            let _ = write!(out, "\r{:width$}\r", "");
            let _ = out.flush();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

/// Writes `text` on stderr as it is. A stderr that cannot be written (a full disk, a closed
/// pipe) loses the text, and nothing else: unlike `eprint!`, this never panics.
pub fn to_stderr(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(text.as_bytes()).and_then(|()| err.flush());
}

/// Whether the command line asks for `--json` (before any `--`): read from the arguments
/// themselves where the parsed flag is not at hand.
pub fn wants_json() -> bool {
    std::env::args_os()
        .skip(1)
        .take_while(|a| a != "--")
        .any(|a| a == "--json")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[test]
    fn auto_colours_as_no_color_clicolor_force_and_term_say() {
        use ColorChoice::*;
        let term = Env {
            term_colours: true,
            ..Env::default()
        };
        assert!(colour_with(Auto, true, term));
        assert!(!colour_with(Auto, false, term));
        // NO_COLOR set to something: never, on a terminal or forced.
        let no = Env {
            no_color: true,
            force: true,
            ..term
        };
        assert!(!colour_with(Auto, true, no));
        // CLICOLOR_FORCE: even into a pipe, and on a dumb terminal.
        let forced = Env {
            force: true,
            ..Env::default()
        };
        assert!(colour_with(Auto, false, forced));
        // TERM=dumb, or CLICOLOR=0: not even a terminal.
        assert!(!colour_with(Auto, true, Env::default()));
        let off = Env {
            clicolor: Some(false),
            ..term
        };
        assert!(!colour_with(Auto, true, off));
        // `always` and `never` win over all of it.
        assert!(colour_with(Always, false, no));
        assert!(!colour_with(Never, true, forced));
    }

    /// What a progress line wrote.
    #[derive(Clone, Default)]
    struct Sink(Arc<Mutex<Vec<u8>>>);

    impl Write for Sink {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Sink {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
        }
    }

    #[test]
    fn progress_away_from_a_terminal_writes_nothing() {
        let mut p = Progress::to("importing", None);
        p.update(1, 2, "records");
        p.update_now(2, 2, "records");
        p.finish();
        assert!(p.drawn.is_none());
    }

    #[test]
    fn progress_is_throttled_but_draws_the_last_step_and_erases_itself() {
        let sink = Sink::default();
        let mut p = Progress::to("importing", Some(Box::new(sink.clone())));
        for done in 0..=1000 {
            p.update(done, 1000, "records");
        }
        let drawn = sink.text();
        // A loop this quick is drawn once at the start and once at the end.
        assert_eq!(drawn.matches('\r').count(), 2, "{drawn:?}");
        assert!(
            drawn.starts_with("\rimporting 0/1000 records…"),
            "{drawn:?}"
        );
        assert!(
            drawn.ends_with("\rimporting 1000/1000 records…"),
            "{drawn:?}"
        );
        drop(p);
        let erased = sink.text();
        let width = "importing 1000/1000 records…".chars().count();
        assert!(
            erased.ends_with(&format!("\r{}\r", " ".repeat(width))),
            "{erased:?}"
        );
    }

    #[test]
    fn a_shorter_progress_line_covers_the_longer_one_before() {
        let sink = Sink::default();
        let mut p = Progress::to("phase", Some(Box::new(sink.clone())));
        p.update_now(10, 10, "gates of build");
        p.update_now(10, 10, "gates");
        assert!(sink.text().ends_with("\rphase 10/10 gates…         "));
        // Nothing is drawn twice over once it is erased.
        p.finish();
        let once = sink.text();
        p.finish();
        assert_eq!(sink.text(), once);
    }
}
