//! `baton status`: one table of every piece of work in the project.

use std::io::IsTerminal;
use std::path::PathBuf;

use clap::Args;
use serde::Serialize;

use crate::error::{CommandError, ExitStatus};
use crate::output::Report;
use crate::view::Row;
use baton_core::model::Pauses;
use baton_core::text::esc;
use baton_core::time::{age, human_age, parse_ts};
use baton_ops::env::Ctx;
use baton_ops::survey::{Owner, Work, survey};

mod html;
mod watch;

/// Show every feature, loop, batch, run and ledger in the project: kind, key, phase, status,
/// owner (live or stale, with the age of its last write), the verdict its own command gives,
/// and the next step.
///
/// Interrupted work also shows how it was interrupted (pause, crash, timeout, left,
/// rate_limit). The table takes the terminal's width (80 columns into a pipe or a file), each
/// column as wide as its longest value; what does not fit is shortened with `…` (the JSON keeps
/// them whole). Colour as `--color` says: by default only on a terminal, never with `NO_COLOR`
/// set.
///
/// `--html` draws the same work as a timeline instead: one self-contained page (no network)
/// whose first line is the most urgent next step, with a lane per loop, batch, run and
/// ledger, most urgent first, each labelled in full (status, verdict, phase, owner);
/// stretches coloured by the session that owned them; interrupts with their class, a rate
/// limit's wait up to its reset, resumes with their verdict or mode, takeovers with both
/// epochs, gate results, and a line at now, on an axis in UTC. Pointing at a mark shows the
/// line `baton log` prints for it; clicking keeps it. Idle stretches longer than 30 minutes
/// are folded (≈), and so are quiet minutes after a burst of work; the page zooms, and shows
/// the last hour. Work whose state is gone (archived, pruned) keeps a lane from its journal,
/// after the rest. For example: `baton status --html --out timeline.html`.
///
/// `--watch` redraws the table on a terminal whenever it changes, until Ctrl-C.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Print the timeline page (HTML) instead of the table; with `--out`, write it to a file.
    #[arg(long, conflicts_with = "watch")]
    html: bool,
    /// With `--html`: write the page to FILE (replaced whole; relative to `-C`) and print its
    /// path.
    #[arg(long, value_name = "FILE", requires = "html")]
    out: Option<PathBuf>,
    /// Redraw the table whenever it changes, until Ctrl-C (stdout must be a terminal).
    #[arg(long)]
    watch: bool,
    /// With `--watch`: how often to look again (`5s`, `500ms`; a bare number is seconds).
    #[arg(
        long,
        value_name = "DURATION",
        requires = "watch",
        default_value = "2",
        value_parser = parse_interval
    )]
    interval: std::time::Duration,
}

fn parse_interval(raw: &str) -> Result<std::time::Duration, String> {
    baton_core::time::parse_duration(raw)
        .and_then(|d| std::time::Duration::try_from(d).ok())
        .filter(|d| (0.1..=3600.0).contains(&d.as_secs_f64()))
        .ok_or_else(|| {
            format!("{raw:?} is not a duration from 100ms to 1h (for example `--interval 5s`)")
        })
}

/// The width the table keeps to when stdout is no terminal (a pipe, a file): stable, whatever
/// terminal the command was started from.
const WIDTH: usize = 80;

/// The table's width: the terminal's (at least 64 columns), else `WIDTH`.
fn width() -> usize {
    if !std::io::stdout().is_terminal() {
        return WIDTH;
    }
    // SAFETY: TIOCGWINSZ fills the winsize it is given, and nothing else.
    let mut size: libc::winsize = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut size) } == 0;
    if ok && size.ws_col > 0 {
        usize::from(size.ws_col).max(FIXED + FLOORS.iter().sum::<usize>())
    } else {
        WIDTH
    }
}

/// The columns of fixed width (kind, status, class) and the spaces between all six.
const FIXED: usize = 33;
/// The least the key, the owner and the verdict are cut to when the three do not fit.
const FLOORS: [usize; 3] = [8, 12, 10];

/// The widths of the key, owner and verdict columns: each as wide as its longest value; when
/// the three do not fit the table's width, the widest gives way first, down to its floor.
struct Columns {
    width: usize,
    key: usize,
    owner: usize,
    verdict: usize,
}

impl Columns {
    fn of(width: usize, rows: &[[String; 3]]) -> Columns {
        let mut need = [3, 5, 7];
        for row in rows {
            for (n, value) in need.iter_mut().zip(row) {
                *n = (*n).max(value.chars().count());
            }
        }
        let room = width.saturating_sub(FIXED);
        while need.iter().sum::<usize>() > room {
            let widest = (0..3)
                .filter(|&i| need[i] > FLOORS[i])
                .max_by_key(|&i| need[i] - FLOORS[i]);
            match widest {
                Some(i) => need[i] -= 1,
                None => break,
            }
        }
        Columns {
            width,
            key: need[0],
            owner: need[1],
            verdict: need[2],
        }
    }
}

pub fn cmd_status(ctx: &Ctx, args: StatusArgs) -> Result<Report, CommandError> {
    if args.html {
        return html::cmd_html(ctx, args.out.as_deref());
    }
    if args.watch {
        return watch::cmd_watch(ctx, args.interval);
    }
    table(ctx)
}

/// The table under `--json`: every piece of work, whole, the pause mark, and the live
/// sessions of the repository's checkouts (docs/guard.md) when there are any.
#[derive(Debug, Serialize)]
struct Table<'a> {
    work: Vec<Row<'a>>,
    pause: Option<&'a Pauses>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    checkouts: Vec<baton_core::guard::Checkout>,
    /// How many git commands the guard refused (`baton log guard`), when any.
    #[serde(skip_serializing_if = "is_zero")]
    guard_refused: usize,
    /// The accounts' breakers (docs/window.md): each window closed until its reset, or
    /// reopened and still kept while its followers launch.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    windows: Vec<baton_core::breaker::Breaker>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// The table, as `baton status` prints it.
fn table(ctx: &Ctx) -> Result<Report, CommandError> {
    let store = ctx.store()?;
    let s = survey(ctx, &*store)?;
    let colour = crate::output::colour(std::io::stdout().is_terminal());
    let work = crate::view::by_urgency(&s.work);
    let cells: Vec<[String; 3]> = work
        .iter()
        .map(|w| {
            [
                esc(&w.key).into_owned(),
                owner(ctx, w.owner.as_ref()),
                w.shown_verdict(),
            ]
        })
        .collect();
    let cols = Columns::of(width(), &cells);
    let mut text = String::new();
    if s.work.is_empty() {
        text.push_str("nothing in this project: no feature, loop, batch, run or ledger\n");
    } else {
        text.push_str(&format!(
            "{:<7} {:<key$} {:<11} {:<owner$} {:<10} {}\n",
            "KIND",
            "KEY",
            "STATUS",
            "OWNER",
            "CLASS",
            "VERDICT",
            key = cols.key,
            owner = cols.owner,
        ));
    }
    for (w, cells) in work.iter().zip(&cells) {
        text.push_str(&row(w, cells, colour, &cols));
    }
    let checkouts = baton_ops::guard::live_checkouts(&ctx.dir, ctx.now);
    text.push_str(&checkouts_text(ctx, &checkouts));
    let refused: Vec<serde_json::Value> = store
        .read_journal(baton_store::JournalTarget::Guard)?
        .events
        .into_iter()
        .filter(|e| e["event"] == "refused")
        .collect();
    if let Some(last) = refused.last() {
        text.push_str(&format!(
            "the guard refused {} git command(s); the last at {}: session {} ({}); `baton log guard` lists them\n",
            refused.len(),
            crate::view::local_time(ctx, &last["ts"]),
            crate::view::short_session(&esc(last["session"].as_str().unwrap_or("?"))),
            esc(last["rule"].as_str().unwrap_or("?")),
        ));
    }
    let windows = baton_ops::window::ours(ctx, &*store)?;
    text.push_str(&windows_text(ctx, &windows));
    let json = Table {
        work: s.work.iter().map(Row::of).collect(),
        pause: s.pause.as_ref(),
        checkouts,
        guard_refused: refused.len(),
        windows,
    };
    let mut report = Report::of(ExitStatus::Success, &json, text);
    for note in &s.notes {
        report = report.warn(note.trim_start_matches("warning: ").to_string());
    }
    Ok(report)
}

/// The accounts' windows (docs/window.md): one line per breaker, with who tripped it, its
/// probe and who waits; nothing when there are none.
fn windows_text(ctx: &Ctx, book: &[baton_core::breaker::Breaker]) -> String {
    if book.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "
account windows (`baton window check --client <client>` answers a conductor):
",
    );
    for b in book {
        let reset = parse_ts(Some(&b.reset));
        let state = match (reset, &b.probe) {
            (Some(r), _) if r > ctx.now => format!(
                "closed until {} (in {})",
                ctx.shown(r),
                human_age(r.duration_since(ctx.now))
            ),
            (_, Some(p)) if p.ok.is_some() => format!(
                "open again since {} (probed by {})",
                crate::view::local_time(ctx, &serde_json::json!(p.ok)),
                esc(&p.by.id)
            ),
            (_, Some(p)) => format!(
                "reset passed; probed by {} on {} since {}",
                esc(&p.by.id),
                esc(&p.by.host),
                crate::view::local_time(ctx, &serde_json::json!(p.by.since))
            ),
            (_, None) => "reset passed; no one has probed it".to_string(),
        };
        let waiting = if b.waiters.is_empty() {
            String::new()
        } else {
            format!(
                "; waiting: {}",
                b.waiters
                    .iter()
                    .map(|w| esc(&w.id).into_owned())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        out.push_str(&format!(
            "  {}, {} window: {state}; tripped by {} on {}{waiting}\n",
            esc(&b.label),
            esc(&b.window),
            crate::view::short_session(&esc(&b.tripped_by.id)),
            esc(&b.tripped_by.host),
        ));
    }
    out
}

/// Who works where in the repository (docs/guard.md), when more than this session does: one
/// line per live session, its worktree, branch and last refresh; nothing when none is
/// registered.
fn checkouts_text(ctx: &Ctx, checkouts: &[baton_core::guard::Checkout]) -> String {
    if checkouts.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "\ncheckouts (live sessions of this repository; `baton log guard` lists what the guard refused):\n",
    );
    for c in checkouts {
        let me = if ctx.session() == Some(c.session.as_str()) {
            " (me)"
        } else {
            ""
        };
        let age = parse_ts(Some(&c.refreshed))
            .map(|t| format!("seen {} ago", human_age(age(ctx.now, t))))
            .unwrap_or_default();
        out.push_str(&format!(
            "  {}{me} {} in {} on {} {age}\n",
            crate::view::short_session(&esc(&c.session)),
            esc(&c.client),
            esc(&c.worktree),
            c.branch
                .as_deref()
                .map_or_else(|| "a detached HEAD".into(), |b| esc(b).into_owned()),
        ));
    }
    out
}

/// One piece of work: its line of the table (`cells` are its key, owner and verdict as
/// shown), then its phase and next step, wrapped.
fn row(w: &Work, cells: &[String; 3], colour: bool, cols: &Columns) -> String {
    let class = w.class.map_or("-", |c| c.as_str());
    let [key, owner, verdict] = cells;
    let verdict = fit(verdict, cols.verdict);
    let painted = if colour {
        let code = match () {
            _ if w.item.is_some() => "33",
            _ if w.call.verdict.is_none() => "2",
            _ => "32",
        };
        format!("\x1b[{code}m{verdict}\x1b[0m")
    } else {
        verdict
    };
    let mut out = format!(
        "{:<7} {:<key$} {:<11} {:<owner$} {class:<10} {painted}\n",
        w.kind,
        fit(key, cols.key),
        fit(&esc(&w.status), 11),
        fit(owner, cols.owner),
        key = cols.key,
        owner = cols.owner,
    );
    let wrap = |s: &str, indent: &str| wrap(s, indent, cols.width);
    out.push_str(&wrap(&format!("phase: {}", w.phase), "  "));
    // Where the owner works, with a store shared by several machines.
    if let Some(host) = w.owner.as_ref().and_then(|o| o.machine.as_deref()) {
        out.push_str(&wrap(
            &format!("owned on another machine: {}", esc(host)),
            "  ",
        ));
    }
    if let Some(next) = crate::view::row_next(w) {
        out.push_str(&wrap(
            &format!("next: {}", baton_core::text::short_sessions(&next)),
            "  ",
        ));
    }
    out
}

/// `A live 2m`, `B stale 3h`, `- stale 1d`, or `-`.
fn owner(ctx: &Ctx, owner: Option<&Owner>) -> String {
    let Some(o) = owner else {
        return "-".into();
    };
    let who = o
        .session
        .as_deref()
        .map_or_else(|| "-".to_string(), |s| crate::view::short_session(&esc(s)));
    let who = if o.mine { format!("{who} (me)") } else { who };
    let state = if o.live { "live" } else { "stale" };
    match parse_ts(o.last_write.as_deref()) {
        Some(t) => format!("{who} {state} {}", human_age(age(ctx.now, t))),
        None => format!("{who} {state}"),
    }
}

/// At most `width` characters, the last one `…` when cut.
fn fit(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        return s.to_string();
    }
    let cut: String = s.chars().take(width.saturating_sub(1)).collect();
    format!("{cut}…")
}

/// Word-wraps `s` to `width`, each line indented; nothing is cut. One pass, counting as it
/// goes: `status` wraps a few lines for every row it lists.
fn wrap(s: &str, indent: &str, width: usize) -> String {
    let room = width - indent.len();
    let mut out = String::with_capacity(s.len() + indent.len() + 1);
    let end_line = |out: &mut String, text: &str| {
        out.push_str(indent);
        out.push_str(text);
        out.push('\n');
    };
    let mut line = String::new();
    // The characters in `line`.
    let mut used = 0;
    for mut word in s.split(' ') {
        let mut chars = word.chars().count();
        if used > 0 && used + 1 + chars > room {
            end_line(&mut out, &line);
            line.clear();
            used = 0;
        }
        if used > 0 {
            line.push(' ');
            used += 1;
        }
        // A single word longer than the room (a path) gets lines of its own, split by chars;
        // the line is empty here, since a word that did not fit ended it above.
        while chars > room {
            let split = word.char_indices().nth(room).map_or(word.len(), |(i, _)| i);
            end_line(&mut out, &word[..split]);
            word = &word[split..];
            chars -= room;
        }
        line.push_str(word);
        used += chars;
    }
    if used > 0 {
        end_line(&mut out, &line);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::wrap;

    #[test]
    fn wrap_breaks_at_spaces_splits_long_words_and_keeps_every_character() {
        assert_eq!(wrap("aa bb cc", "  ", 7), "  aa bb\n  cc\n");
        // A word longer than the room gets lines of its own, by characters, not bytes.
        assert_eq!(wrap("x ééééééé y", "> ", 6), "> x\n> éééé\n> ééé\n> y\n");
        assert_eq!(wrap("", "  ", 10), "");
        // Runs of spaces are kept as the text has them.
        assert_eq!(wrap("a  b", "", 10), "a  b\n");
    }
}
