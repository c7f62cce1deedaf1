use clap::Args;
use serde_json::json;

use crate::error::CommandError;
use crate::output::Report;
use baton_core::text::esc;
use baton_ops::env::Ctx;
use baton_ops::single_run::{self, Prune, PruneEntry, Pruned};

/// Delete the state of finished runs not written for a while.
///
/// Delete the state of finished runs (`complete` or `abandoned`) not written for a while, and
/// say each file removed. A run that is active, or whose lock a live holder has, is never
/// removed, however old: age is not liveness.
#[derive(Debug, Args)]
pub struct PruneArgs {
    /// Only runs finished at least this long ago (`30d`, `12h`).
    #[arg(long, value_name = "AGE", default_value = "7d")]
    older_than: String,
    /// Say what would be removed, remove nothing.
    #[arg(long)]
    dry_run: bool,
}

pub fn cmd_run_prune(ctx: &Ctx, args: PruneArgs) -> Result<Report, CommandError> {
    let horizon = baton_core::time::parse_duration(&args.older_than).ok_or_else(|| {
        CommandError::usage(format!(
            "--older-than {:?} is not a duration",
            args.older_than
        ))
        .hint("pass an age such as `--older-than 7d` or `--older-than 12h`")
    })?;
    let done = single_run::prune(
        ctx,
        &*ctx.store()?,
        &Prune {
            older_than: horizon,
            dry_run: args.dry_run,
        },
    )?;
    let (entries, kept) = match done {
        Pruned::NoRuns => {
            return Ok(Report::ok(
                json!({ "removed": [], "dry_run": args.dry_run }),
                "no runs in this project",
            ));
        }
        Pruned::Done { entries, kept } => (entries, kept),
    };
    let (mut removed, mut lines) = (Vec::new(), String::new());
    for entry in entries {
        match entry {
            PruneEntry::Unreadable { id, error } => {
                lines.push_str(&format!("skipped unreadable {id}: {error}\n"));
            }
            PruneEntry::Removed {
                path,
                status,
                updated_at,
            } => {
                lines.push_str(&format!(
                    "{} {} ({}, last written {})\n",
                    if args.dry_run {
                        "would remove"
                    } else {
                        "removed"
                    },
                    path.display(),
                    esc(&status),
                    updated_at
                        .as_deref()
                        .map_or("at no recorded time".into(), esc)
                ));
                removed.push(path.display().to_string());
            }
        }
    }
    lines.push_str(&format!(
        "{} {}, {kept} kept (active, recent or locked)\n",
        removed.len(),
        if args.dry_run {
            "would be removed"
        } else {
            "removed"
        }
    ));
    Ok(Report::ok(
        json!({ "removed": removed, "kept": kept, "dry_run": args.dry_run }),
        lines,
    ))
}
