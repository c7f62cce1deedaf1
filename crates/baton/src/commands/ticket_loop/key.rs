use std::ffi::OsString;

use clap::Args;
use serde_json::json;

use super::Target;
use crate::error::CommandError;
use crate::output::Report;
use baton_core::key::KeySource;
use baton_ops::env::Ctx;

/// Print the LOOP_KEY a ticket id maps to, and the file it names.
///
/// The key is the ticket sanitized to `[A-Za-z0-9._-]` (at most 64 characters); an empty
/// result falls back to `session-<session id>`, then to `session-nosid-<8 random hex>`.
#[derive(Debug, Args)]
pub struct KeyArgs {
    /// The ticket id, as typed; omit it to key on the session.
    #[arg(default_value = "")]
    ticket: OsString,
}

pub fn cmd_loop_key(ctx: &Ctx, args: KeyArgs) -> Result<Report, CommandError> {
    let target = Target::derive(ctx, &args.ticket);
    let report = Report::ok(
        json!({ "key": target.key, "source": target.source.as_str(), "file": target.file_name() }),
        target.key.clone(),
    );
    // stdout is the key alone, so that `KEY=$(baton loop key T)` captures just it.
    Ok(if target.source == KeySource::NoSession {
        report.warn("neither the ticket nor a session id gives a key, so this one is random and differs on every call; set `BATON_SESSION` or pass a ticket id")
    } else {
        report
    })
}
