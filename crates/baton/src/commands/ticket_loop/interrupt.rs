use std::ffi::{OsStr, OsString};

use clap::Args;
use jiff::Timestamp;

use super::{Applied, WriteFlags, transition};
use crate::output::Report;
use baton_core::Decision;
use baton_core::Reason;
use baton_core::decide::loop_resume;
use baton_core::decide::loop_write::REFUSED;
use baton_core::model::LoopStatus;
use baton_core::time::format_ts;
use baton_ops::env::Ctx;
use baton_ops::error::CommandError;

/// Mark a loop interrupted, as a rate limit or an ending session would.
///
/// `last_updated` is left alone, so a just-interrupted loop never looks live.
#[derive(Debug, Args)]
pub struct InterruptArgs {
    /// The ticket id.
    ticket: OsString,
    /// Why the loop stopped; a `rate_limit` loop waits for its reset before it resumes.
    #[arg(long, default_value = "unknown", value_parser = ["rate_limit", "session_expiry", "unknown"])]
    reason: String,
    /// When the rate limit resets: an RFC 3339 time, or a delay such as `15m` or `2h`
    /// [default for rate_limit: 60 seconds after the interrupt].
    #[arg(long, value_name = "WHEN")]
    resume_after: Option<String>,
    #[command(flatten)]
    flags: WriteFlags,
}

pub fn cmd_loop_interrupt(ctx: &Ctx, args: InterruptArgs) -> Result<Report, CommandError> {
    let resume_after = args
        .resume_after
        .as_deref()
        .map(|raw| parse_when(ctx.now, raw))
        .transpose()?;
    interrupt(ctx, &args.ticket, &args.reason, resume_after, &args.flags)
}

/// Marks a loop interrupted for `reason` (a rate limit waits until `resume_after`, or its
/// default, before it resumes); an interrupted loop takes only a later reset time.
pub fn interrupt(
    ctx: &Ctx,
    ticket: &OsStr,
    reason: &str,
    resume_after: Option<Timestamp>,
    flags: &WriteFlags,
) -> Result<Report, CommandError> {
    transition(ctx, ticket, flags, "interrupt", |state, target| {
        match state.status {
            LoopStatus::Interrupted => {
                // A later word on when the rate limit resets is news; anything else is a repeat.
                let after = resume_after.map(format_ts);
                let changed = after.is_some() && after != state.resume_after;
                let message = if changed {
                    state.resume_after = after;
                    format!(
                        "{} is already interrupted; resume after {}",
                        target.shown(),
                        state.resume_after.as_deref().unwrap_or_default()
                    )
                } else {
                    format!("{} is already interrupted; nothing changed", target.shown())
                };
                return Ok(Applied {
                    changed,
                    message,
                    next: Some(format!(
                        "`baton resume {}` in the next session",
                        target.arg()
                    )),
                    warnings: Vec::new(),
                });
            }
            LoopStatus::Complete | LoopStatus::Stalled => {
                return Err(Decision::new(
                    REFUSED,
                    Reason::new(
                        baton_core::Rule::LoopNotActive,
                        format!(
                            "the loop for {} is {}",
                            target.shown(),
                            state.status.as_str()
                        ),
                    ),
                    None,
                ));
            }
            LoopStatus::Active => {}
        }
        state.status = LoopStatus::Interrupted;
        state.interrupted_at = Some(format_ts(ctx.now));
        state.interrupt_reason = Some(reason.to_string());
        state.resume_after = resume_after.map(format_ts);
        let reset = loop_resume::resume_after(state)
            .map(|t| format!("; it may resume after {}", format_ts(t)))
            .unwrap_or_default();
        Ok(Applied {
            changed: true,
            message: format!("interrupted {} ({reason}){reset}", target.shown()),
            next: Some(format!(
                "in the next session, `baton resume {}`",
                target.arg()
            )),
            warnings: Vec::new(),
        })
    })
}

/// An RFC 3339 time, or a delay from now (`90s`, `15m`, `2h`, `1d`).
pub fn parse_when(now: Timestamp, raw: &str) -> Result<Timestamp, CommandError> {
    if let Ok(ts) = raw.parse::<Timestamp>() {
        return Ok(ts);
    }
    let (num, unit) = raw.split_at(raw.trim_end_matches(char::is_alphabetic).len());
    let secs = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86400,
        _ => 0,
    };
    let later = num
        .parse::<i64>()
        .ok()
        .filter(|&n| secs > 0 && n >= 0)
        .and_then(|n| n.checked_mul(secs))
        .and_then(|s| now.checked_add(jiff::SignedDuration::from_secs(s)).ok());
    match later {
        Some(ts) => Ok(ts),
        None => Err(CommandError::usage(format!(
            "--resume-after {raw:?} is neither an RFC 3339 time nor a delay"
        ))
        .hint("pass `2026-01-31T14:00:00Z` or a delay such as `45m`")),
    }
}
