use std::ffi::OsString;
use std::io::IsTerminal;

use clap::Args;
use jiff::{SignedDuration, Timestamp};
use serde_json::json;

use crate::commands::resume::gather;
use crate::commands::ticket_loop::interrupt::parse_when;
use crate::context::Ctx;
use crate::error::{CommandError, ExitStatus};
use crate::output::Report;
use baton_core::decide::loop_resume::ResumeDecision;
use baton_core::decide::wait::{Wait, decide_wait};
use baton_core::text::esc;
use baton_core::time::{format_ts, human_age, parse_ts};

/// Say when interrupted work can resume, and with `--sleep` wait until then.
///
/// Exit 0 when it is time (or nothing is left to resume), 3 when another live session runs the
/// work, 4 when a person must decide first (partial work in the tree, no rule covers it, or the
/// limit resets beyond `--max`). Without `--sleep` it says when, and exits 0 for a wait still
/// to come.
#[derive(Debug, Args)]
pub struct WaitArgs {
    /// The ticket id of the loop.
    ticket: OsString,
    /// Wait no longer than this: a delay such as `30m` or `2h`, or an RFC 3339 time. A limit
    /// that resets later is for a person to decide (exit 4).
    #[arg(long, value_name = "WHEN")]
    max: Option<String>,
    /// Sleep until the work can resume, reading its state again every few seconds (a takeover
    /// meanwhile ends the wait with exit 3). With `BATON_NOW` set, the clock moves on without
    /// sleeping.
    #[arg(long)]
    sleep: bool,
}

/// How often a sleeping wait reads the state again.
const RECHECK: SignedDuration = SignedDuration::from_secs(5);

pub fn cmd_wait(ctx: &Ctx, args: WaitArgs) -> Result<Report, CommandError> {
    let deadline = args
        .max
        .as_deref()
        .map(|raw| parse_when(ctx.now, raw))
        .transpose()?;
    let fake_clock = std::env::var_os("BATON_NOW").is_some_and(|v| !v.is_empty());
    let progress = args.sleep && std::io::stderr().is_terminal();
    let mut now = ctx.now;
    loop {
        let at = Ctx {
            dir: ctx.dir.clone(),
            session: ctx.session.clone(),
            now,
            lock_wait: ctx.lock_wait,
        };
        // The state is read afresh each time, its lock released before any sleep.
        let d = gather(&at, &args.ticket)?.decision;
        let after = parse_ts(d.resume_after.as_deref());
        let wait = decide_wait(d.decision.verdict, d.mode, after, now, deadline);
        match wait {
            Wait::Until(t) if args.sleep => {
                let left = t.duration_since(now);
                if progress {
                    eprint!(
                        "\rwaiting for {}: the limit resets at {}, {} left   ",
                        esc(&args.ticket.to_string_lossy()),
                        format_ts(t),
                        human_age(left)
                    );
                }
                if fake_clock {
                    now = t;
                } else {
                    let step = left.clamp(SignedDuration::from_millis(10), RECHECK);
                    std::thread::sleep(step.unsigned_abs());
                    now = Timestamp::now();
                }
            }
            _ => {
                if progress {
                    eprintln!();
                }
                return Ok(report(&args, wait, &d, (ctx.now, now), deadline));
            }
        }
    }
}

fn report(
    args: &WaitArgs,
    wait: Wait,
    d: &ResumeDecision,
    (started, now): (Timestamp, Timestamp),
    deadline: Option<Timestamp>,
) -> Report {
    let ticket = esc(&args.ticket.to_string_lossy()).into_owned();
    let mut why: Vec<String> = d
        .decision
        .reasons
        .iter()
        .map(|r| format!("  {}: {}", r.rule, r.message))
        .collect();
    let after = parse_ts(d.resume_after.as_deref());
    if let (Wait::HumanFirst, Some(t), Some(max)) = (wait, after, deadline)
        && t > max
    {
        why.push(format!(
            "  wait.beyond-max: the limit resets at {}, after the --max of {}",
            format_ts(t),
            format_ts(max)
        ));
    }
    let accept = d.accept.clone().or_else(|| d.decision.next.clone());
    let headline = match wait {
        Wait::Ready => format!("{ticket}: it can resume now"),
        Wait::Nothing => format!("{ticket}: nothing to resume"),
        Wait::Until(t) => format!(
            "{ticket}: the rate limit resets at {}, in {}",
            format_ts(t),
            human_age(t.duration_since(now))
        ),
        Wait::TakenOver => format!("{ticket}: another live session runs it"),
        Wait::HumanFirst => format!("{ticket}: a person must decide before it resumes"),
    };
    let mut text = format!("{headline}\n{}", why.join("\n"));
    if let Some(next) = accept.as_deref().filter(|_| wait != Wait::Nothing) {
        text.push_str(&format!("\nnext: {next}"));
    }
    let status = match wait.exit_code() {
        3 => ExitStatus::Refused,
        4 => ExitStatus::AskHuman,
        _ => ExitStatus::Success,
    };
    let until = match wait {
        Wait::Until(t) => Some(format_ts(t)),
        _ => None,
    };
    Report::new(
        status,
        json!({
            "verdict": wait.as_str(),
            "ticket": args.ticket.to_string_lossy(),
            "until": until,
            "waited_secs": now.duration_since(started).as_secs(),
            "resume": d.decision,
            "next": accept,
        }),
        text,
    )
}
