//! Options and argument parsers several commands share.

use clap::Args;
use jiff::Timestamp;

use baton_ops::error::CommandError;
use baton_ops::ticket_loop::Ownership;

/// The ownership options of every loop write.
#[derive(Debug, Clone, Default, Args)]
pub struct WriteFlags {
    /// Take over legacy state that records no owner session.
    #[arg(long)]
    pub force: bool,
    /// The owner epoch this caller was handed (by `loop init` or `resume accept`); a write
    /// holding an older epoch than the file's is refused.
    #[arg(long, value_name = "N")]
    pub epoch: Option<u64>,
}

impl WriteFlags {
    pub fn ownership(&self) -> Ownership {
        Ownership {
            force: self.force,
            epoch: self.epoch,
        }
    }
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
