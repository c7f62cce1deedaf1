//! `baton status --watch`: the table redrawn on a terminal whenever it changes.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use crate::error::CommandError;
use baton_ops::env::Ctx;

pub fn cmd_watch(ctx: &Ctx, interval: Duration) -> Result<crate::output::Report, CommandError> {
    if crate::output::wants_json() {
        return Err(CommandError::usage(
            "`--watch` redraws a table for people; `--json` prints one object",
        )
        .hint("run `baton --json status` again when you want the state once more"));
    }
    if !std::io::stdout().is_terminal() {
        return Err(
            CommandError::usage("`--watch` redraws a terminal, and stdout is not one")
                .hint("run `baton status` to print the table once"),
        );
    }
    let replay = ctx.fixed_clock;
    let mut shown = String::new();
    loop {
        let mut now = ctx.clone();
        // A failed read (a lock held a moment too long, a server away) is shown, and the next
        // look tries again.
        let clock = if replay {
            Ok(ctx.now)
        } else {
            ctx.clock().map_err(CommandError::from)
        };
        let table = clock.and_then(|t| {
            now.now = t;
            super::table(&now)
        });
        let screen = match table {
            Ok(report) => {
                let mut screen = report.text;
                for w in &report.warnings {
                    screen.push_str(&format!("warning: {w}\n"));
                }
                screen
            }
            Err(e) => format!("error: {}\n", e.message),
        };
        if screen != shown {
            let mut out = std::io::stdout().lock();
            let header = format!(
                "baton status --watch: drawn at {}, redrawn when it changes (looking every {}s); Ctrl-C to stop\n\n",
                now.shown(now.now),
                interval.as_secs_f64()
            );
            // Home, clear the screen, draw.
            let drawn = write!(out, "\x1b[H\x1b[2J{header}{screen}").and_then(|()| out.flush());
            if drawn.is_err() {
                // The terminal went away.
                return Ok(crate::output::Report::ok(serde_json::json!({}), ""));
            }
            shown = screen;
        }
        std::thread::sleep(interval);
    }
}
