use std::ffi::OsString;

use clap::Args;

use crate::args::{WriteFlags, parse_when};
use crate::error::CommandError;
use crate::output::Report;
use baton_core::model::InterruptReason;
use baton_ops::env::Ctx;

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
        .map(|raw| parse_when(ctx.now, raw, "--resume-after"))
        .transpose()?;
    let done = baton_ops::ticket_loop::interrupt(
        ctx,
        &*ctx.store()?,
        baton_ops::ticket_loop::Target::derive(ctx, &args.ticket),
        // clap takes only the values listed above.
        InterruptReason::parse(&args.reason).unwrap_or(InterruptReason::Unknown),
        resume_after,
        &args.flags.ownership(),
    )?;
    Ok(super::render_transition(done))
}
