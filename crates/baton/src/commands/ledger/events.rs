//! One writer per event kind, so that nobody hand-types the grammar. Each builds the event,
//! stamps it with the time, and appends it under the ledger's lock.

use std::path::{Path, PathBuf};

use clap::Args;

use crate::error::CommandError;
use crate::output::Report;
use baton_core::ledger::{Event, FinishOutcome, Review};
use baton_ops::env::Ctx;
use baton_ops::ledgers::{self, EventAppend, Plan};

/// Appends `event` to the ledger of `plan` and renders what was written.
pub fn write(ctx: &Ctx, plan: &Path, event: Event) -> Result<Report, CommandError> {
    let EventAppend { plan, appended } = ledgers::append_event(ctx, plan, event)?;
    Ok(crate::view::appended(&plan, appended))
}

fn text(value: &str, flag: &str) -> Result<String, CommandError> {
    let v = value.trim();
    if v.is_empty() || v.contains('\n') {
        return Err(CommandError::usage(format!(
            "{flag} must be one non-empty line"
        )));
    }
    Ok(v.to_string())
}

/// Record that a phase started: `phase <N>: started (base <sha7>)`.
#[derive(Debug, Args)]
pub struct StartArgs {
    /// The plan directory.
    pub plan: PathBuf,
    /// The phase number, as the plan names it (`1`, `2b`).
    #[arg(long)]
    pub phase: String,
    /// The commit the phase starts from [default: HEAD].
    #[arg(long, value_name = "SHA")]
    pub base: Option<String>,
}

impl StartArgs {
    pub fn event(&self, ctx: &Ctx) -> Result<Event, CommandError> {
        let base = match &self.base {
            Some(b) => b.clone(),
            None => ledgers::short_head(ctx)?,
        };
        Ok(Event::Started {
            phase: self.phase.clone(),
            base,
        })
    }
}

/// Record a gate's result with its evidence.
///
/// The line: `phase <N>: gate <name> → PASS|FAIL (evidence: <cmd> → <result>)`.
/// `baton gate run` runs declared gates and records them itself.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("outcome").required(true).args(["pass", "fail"])))]
pub struct GateArgs {
    /// The plan directory (`plans/<plan>`), whose `STATE.md` is the ledger.
    pub plan: PathBuf,
    /// The phase number, as the plan names it (`1`, `2b`).
    #[arg(long)]
    pub phase: String,
    /// The gate's name, as its phase file declares it.
    #[arg(long)]
    pub name: String,
    /// The gate passed.
    #[arg(long)]
    pub pass: bool,
    /// The gate failed.
    #[arg(long)]
    pub fail: bool,
    /// The command that was run, verbatim: a gate without its command is a claim, not a record.
    #[arg(long)]
    pub cmd: String,
    /// What it printed or returned, verbatim.
    #[arg(long)]
    pub result: String,
}

impl GateArgs {
    pub fn event(&self) -> Result<Event, CommandError> {
        Ok(Event::Gate {
            phase: self.phase.clone(),
            name: self.name.clone(),
            pass: self.pass,
            cmd: text(&self.cmd, "--cmd")?,
            result: text(&self.result, "--result")?,
        })
    }
}

/// Record a completed phase with its commits, tests and review.
///
/// The line: `phase <N>: complete (commits <a>..<b>, tests <X/Y>, review clean|<K> parked)`.
#[derive(Debug, Args)]
pub struct CompleteArgs {
    /// The plan directory (`plans/<plan>`), whose `STATE.md` is the ledger.
    pub plan: PathBuf,
    /// The phase number, as the plan names it (`1`, `2b`).
    #[arg(long)]
    pub phase: String,
    /// The phase's commits, `<first>..<last>` [default: the phase's base..HEAD].
    #[arg(long, value_name = "A..B")]
    pub commits: Option<String>,
    /// Tests passing over tests run, like `41/42`.
    #[arg(long, value_name = "X/Y")]
    pub tests: String,
    /// `clean`, or the number of findings parked.
    #[arg(long, default_value = "clean")]
    pub review: String,
    /// Commit the ledger (and only the ledger) right after, with the phase it records.
    #[arg(long)]
    pub commit: bool,
}

impl CompleteArgs {
    pub fn event(&self, ctx: &Ctx) -> Result<Event, CommandError> {
        let (from, to) = match &self.commits {
            Some(range) => {
                let (a, b) = range.split_once("..").ok_or_else(|| {
                    CommandError::usage(format!("--commits {range:?} is not `<a>..<b>`"))
                })?;
                (a.to_string(), b.to_string())
            }
            None => {
                let plan = Plan::resolve(ctx, &self.plan)?;
                let base = ledgers::started_base(&plan, &self.phase)?;
                (base, ledgers::short_head(ctx)?)
            }
        };
        let review = if self.review == "clean" {
            Review::Clean
        } else {
            Review::Parked(self.review.parse().map_err(|_| {
                CommandError::usage(format!(
                    "--review {:?} is not `clean` or a count",
                    self.review
                ))
            })?)
        };
        Ok(Event::Complete {
            phase: self.phase.clone(),
            from,
            to,
            tests: self.tests.clone(),
            review,
        })
    }
}

/// Record a parked finding with its ruling.
///
/// The line: `phase <N>: parked — <finding> — ruling: <why>`.
#[derive(Debug, Args)]
pub struct ParkArgs {
    /// The plan directory (`plans/<plan>`), whose `STATE.md` is the ledger.
    pub plan: PathBuf,
    /// The phase number, as the plan names it (`1`, `2b`).
    #[arg(long)]
    pub phase: String,
    /// The finding that was parked.
    #[arg(long)]
    pub finding: String,
    /// Why it may wait: the ruling that parked it.
    #[arg(long)]
    pub ruling: String,
}

impl ParkArgs {
    pub fn event(&self) -> Event {
        Event::Parked {
            phase: self.phase.clone(),
            finding: self.finding.clone(),
            ruling: self.ruling.clone(),
        }
    }
}

/// Record a blocked phase: `phase <N>: BLOCKED — <reason>`.
#[derive(Debug, Args)]
pub struct BlockArgs {
    /// The plan directory (`plans/<plan>`), whose `STATE.md` is the ledger.
    pub plan: PathBuf,
    /// The phase number, as the plan names it (`1`, `2b`).
    #[arg(long)]
    pub phase: String,
    /// Why the phase is blocked.
    #[arg(long)]
    pub reason: String,
}

impl BlockArgs {
    pub fn event(&self) -> Event {
        Event::Blocked {
            phase: self.phase.clone(),
            reason: self.reason.clone(),
        }
    }
}

/// Record an agent that died without a diff.
///
/// The line: `phase <N>: agent died (no diff) — redispatch`.
#[derive(Debug, Args)]
pub struct DiedArgs {
    /// The plan directory (`plans/<plan>`), whose `STATE.md` is the ledger.
    pub plan: PathBuf,
    /// The phase number, as the plan names it (`1`, `2b`).
    #[arg(long)]
    pub phase: String,
}

impl DiedArgs {
    pub fn event(&self) -> Event {
        Event::AgentDied {
            phase: self.phase.clone(),
        }
    }
}

/// Record a waiver: `phase <N>: waiver — <rule> — <who approved / why>`.
#[derive(Debug, Args)]
pub struct WaiverArgs {
    /// The plan directory (`plans/<plan>`), whose `STATE.md` is the ledger.
    pub plan: PathBuf,
    /// The phase number, as the plan names it (`1`, `2b`).
    #[arg(long)]
    pub phase: String,
    /// The rule that is waived.
    #[arg(long)]
    pub rule: String,
    /// Who approved it, and why.
    #[arg(long)]
    pub who: String,
}

impl WaiverArgs {
    pub fn event(&self) -> Event {
        Event::Waiver {
            phase: self.phase.clone(),
            rule: self.rule.clone(),
            who: self.who.clone(),
        }
    }
}

/// Record the pre-edit test baseline: `baseline: <X/Y> (<sha7>)`.
#[derive(Debug, Args)]
pub struct BaselineArgs {
    /// The plan directory (`plans/<plan>`), whose `STATE.md` is the ledger.
    pub plan: PathBuf,
    /// Tests passing over tests run, like `41/42`.
    #[arg(long, value_name = "X/Y")]
    pub tests: String,
    /// The commit measured [default: HEAD].
    #[arg(long, value_name = "SHA")]
    pub sha: Option<String>,
}

impl BaselineArgs {
    pub fn event(&self, ctx: &Ctx) -> Result<Event, CommandError> {
        let sha = match &self.sha {
            Some(s) => s.clone(),
            None => ledgers::short_head(ctx)?,
        };
        Ok(Event::Baseline {
            tests: self.tests.clone(),
            sha,
        })
    }
}

/// Record a model substitution with its reason.
///
/// The line: `env: model fallback <from>→<to> — <reason>`.
#[derive(Debug, Args)]
pub struct EnvArgs {
    /// The plan directory (`plans/<plan>`), whose `STATE.md` is the ledger.
    pub plan: PathBuf,
    /// The model that was asked for.
    #[arg(long)]
    pub from: String,
    /// The model that answered instead.
    #[arg(long)]
    pub to: String,
    /// Why the fallback happened.
    #[arg(long)]
    pub reason: String,
}

impl EnvArgs {
    pub fn event(&self) -> Event {
        Event::Env {
            from: self.from.clone(),
            to: self.to.clone(),
            reason: self.reason.clone(),
        }
    }
}

/// Record a tail step of the finish.
///
/// The line: `finish: tail <step> → DONE|SKIPPED (idempotent)|FAILED (paste-ready emitted)`.
#[derive(Debug, Args)]
pub struct FinishArgs {
    /// The plan directory (`plans/<plan>`), whose `STATE.md` is the ledger.
    pub plan: PathBuf,
    /// The tail step's name.
    #[arg(long)]
    pub step: String,
    /// How the step ended: done, skipped (idempotent) or failed (paste-ready emitted).
    #[arg(long, value_parser = ["done", "skipped", "failed"])]
    pub outcome: String,
}

impl FinishArgs {
    pub fn event(&self) -> Event {
        let outcome = match self.outcome.as_str() {
            "done" => FinishOutcome::Done,
            "skipped" => FinishOutcome::Skipped,
            _ => FinishOutcome::Failed,
        };
        Event::Finish {
            step: self.step.clone(),
            outcome,
        }
    }
}
