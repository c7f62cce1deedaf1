//! Options and argument parsers several commands share.

use clap::Args;
use jiff::Timestamp;

use crate::error::CommandError;
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

/// The value of `option`: an RFC 3339 time, or a delay from now in baton's one duration
/// syntax (`90s`, `15m`, `1h30m`, `2d`: `baton_core::time::parse_duration`).
pub fn parse_when(now: Timestamp, raw: &str, option: &str) -> Result<Timestamp, CommandError> {
    if let Ok(ts) = raw.parse::<Timestamp>() {
        return Ok(ts);
    }
    let later = baton_core::time::parse_duration(raw).and_then(|d| now.checked_add(d).ok());
    later.ok_or_else(|| {
        CommandError::usage(format!(
            "{option} {raw:?} is neither an RFC 3339 time nor a duration"
        ))
        .hint(format!(
            "pass `{option} 2026-01-31T14:00:00Z` or a duration such as `{option} 45m` or `{option} 1h30m`"
        ))
    })
}

/// A clap parser of a duration option in baton's one syntax (`90s`, `10m`, `1h`, or a bare
/// number of seconds) of at least `min_secs` seconds.
pub fn duration_of_at_least(
    min_secs: u64,
) -> impl Fn(&str) -> Result<std::time::Duration, String> + Clone + Send + Sync + 'static {
    move |raw| {
        baton_core::time::parse_duration(raw)
            .and_then(|d| std::time::Duration::try_from(d).ok())
            .filter(|d| d.as_secs_f64() >= min_secs as f64)
            .ok_or_else(|| {
                format!(
                    "{raw:?} is not a duration of at least {min_secs}s (for example `90s`, `10m` or `1h`; a bare number is seconds)"
                )
            })
    }
}
