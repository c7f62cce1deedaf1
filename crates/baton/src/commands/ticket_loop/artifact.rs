use baton_core::journal::JournalEvent;
use std::ffi::OsString;
use std::path::PathBuf;

use clap::Args;

use super::{Applied, transition};
use crate::args::WriteFlags;
use crate::error::CommandError;
use crate::output::Report;
use baton_core::Reason;
use baton_core::decide::loop_write::brief_owed_after;
use baton_core::model::PromotionTier;
use baton_core::text::esc;
use baton_ops::env::Ctx;

/// Record the governing Brief or Plan and the promotion tier.
///
/// Paths are stored absolute and must exist inside the project. Raising the tier to brief or
/// plan with no Brief recorded makes a retroactive Brief owed: the next `engineer_spawned` is
/// refused until `--brief` is recorded. The in-flight engineer may still return.
#[derive(Debug, Args)]
pub struct ArtifactArgs {
    /// The ticket id.
    ticket: OsString,
    /// The promotion tier: `none` (trivial: no governing artifact, and no Brief owed),
    /// `brief` or `plan`.
    #[arg(long, value_parser = ["none", "brief", "plan"])]
    tier: String,
    /// The Brief file (inside the project).
    #[arg(long, value_name = "PATH")]
    brief: Option<PathBuf>,
    /// The Plan directory (inside the project).
    #[arg(long, value_name = "DIR")]
    plan: Option<PathBuf>,
    #[command(flatten)]
    flags: WriteFlags,
}

pub fn cmd_loop_artifact(ctx: &Ctx, args: ArtifactArgs) -> Result<Report, CommandError> {
    let root = ctx.layout()?.root;
    let brief = args
        .brief
        .as_deref()
        .map(|p| baton_ops::project::path_in_project(&ctx.dir, &root, p, "--brief", false))
        .transpose()?;
    let plan = args
        .plan
        .as_deref()
        .map(|p| baton_ops::project::path_in_project(&ctx.dir, &root, p, "--plan", true))
        .transpose()?;
    let tier = PromotionTier::parse_lenient(Some(&args.tier));
    transition(
        ctx,
        &args.ticket,
        &args.flags,
        JournalEvent::Artifact,
        |state, target| {
            let owed = brief_owed_after(state, tier, brief.is_some());
            let was_owed = state.brief_owed;
            let mut warnings = Vec::new();
            let mut next = None;
            if was_owed && !owed {
                warnings.push(Reason::new(
                baton_core::Rule::LoopBriefPaid,
                if brief.is_some() {
                    "the retroactive Brief is recorded: engineer spawns may go on".to_string()
                } else {
                    format!(
                        "tier {}: no retroactive Brief is owed any more; engineer spawns may go on",
                        tier.as_str()
                    )
                },
            ));
            }
            if owed {
                warnings.push(Reason::new(
                baton_core::Rule::LoopBriefOwed,
                format!("the {} tier has no Brief recorded: the next engineer spawn is refused until one is", tier.as_str()),
            ));
                next = Some(format!(
                    "author the retroactive Brief, then `baton loop artifact {} --tier {} --brief <PATH>`",
                    target.arg(),
                    tier.as_str()
                ));
            }
            state.brief_owed = owed;
            state.promotion_tier = Some(tier.as_str().to_string());
            if let Some(brief) = &brief {
                state.brief_path = Some(brief.display().to_string());
            }
            if let Some(plan) = &plan {
                state.plan_path = Some(plan.display().to_string());
            }
            state.touch(ctx.now);
            let message = format!(
                "recorded tier {}{}{}",
                tier.as_str(),
                state
                    .brief_path
                    .as_deref()
                    .map(|b| format!(", brief {}", esc(b)))
                    .unwrap_or_default(),
                state
                    .plan_path
                    .as_deref()
                    .map(|p| format!(", plan {}", esc(p)))
                    .unwrap_or_default()
            );
            Ok(Applied {
                changed: true,
                message,
                next,
                warnings,
            })
        },
    )
}
