//! One writer per event kind, so that nobody hand-types the grammar. Each builds the event,
//! stamps it with the time, and appends it under the ledger's lock.

use std::path::PathBuf;

use clap::Args;

use crate::output::Report;
use baton_core::ledger::{Event, FinishOutcome, Line, Review};
use baton_core::time::format_ts_ms;
use baton_ops::env::Ctx;
use baton_ops::error::CommandError;
use baton_ops::ledgers::Plan;
use baton_store::git;

/// Appends `event` to the ledger of `plan`, its values trimmed and its commits checked.
pub fn write(ctx: &Ctx, plan: &std::path::Path, event: Event) -> Result<Report, CommandError> {
    let plan = Plan::resolve(ctx, plan)?;
    // Another run's ledger is refused before anything else is looked at.
    if let Some(refusal) = baton_ops::ledgers::refuse_foreign(&plan)? {
        return Ok(Report::decision(&refusal));
    }
    let event = trimmed(event);
    check_event(&plan, &event)?;
    Ok(crate::view::appended(
        &plan,
        baton_ops::ledgers::append_line(
            &plan,
            &Line {
                event,
                at: Some(format_ts_ms(ctx.now)),
            },
        )?,
    ))
}

fn short_head(ctx: &Ctx) -> Result<String, CommandError> {
    let root = ctx.layout()?.root;
    let head = git::head_and_index(&root)?.head.ok_or_else(|| {
        CommandError::usage("the repository has no commit yet").hint("pass the commit explicitly")
    })?;
    Ok(head[..7].to_string())
}

/// What every append checks beyond the grammar, for the structured writers and a raw line
/// alike: commits that exist, a range that holds a commit, a test count that adds up, and text
/// free of control characters (STATE.md stays a text file that git diffs by line).
pub fn check_event(plan: &Plan, event: &Event) -> Result<(), CommandError> {
    let rendered = baton_core::ledger::render_line(&Line {
        event: event.clone(),
        at: None,
    });
    if rendered.chars().any(char::is_control) {
        return Err(CommandError::usage(format!(
            "the event holds control characters: {:?}",
            baton_core::text::esc(&rendered)
        ))
        .hint("write it as plain text on one line; nothing was written"));
    }
    if let Event::Complete { tests, .. } | Event::Baseline { tests, .. } = event {
        check_tests(tests)?;
    }
    let commits: Vec<&String> = match event {
        Event::Started { base, .. } => vec![base],
        Event::Complete { from, to, .. } => vec![from, to],
        Event::Baseline { sha, .. } => vec![sha],
        _ => Vec::new(),
    };
    for commit in &commits {
        if !git::commit_exists(&plan.root, commit)? {
            return Err(CommandError::usage(format!(
                "{commit} is not a commit of this repository"
            ))
            .hint("pass a commit id that `git rev-parse` knows; nothing was written"));
        }
    }
    // An empty range claims no committed work; a one-commit phase is `<parent>..<commit>`.
    if let Event::Complete { from, to, .. } = event
        && git::commits_beyond(&plan.root, from, to)? == Some(0)
    {
        return Err(CommandError::usage(format!(
            "the phase's range {from}..{to} holds no commit: a phase is complete with its work committed"
        ))
        .hint("commit the phase's work first; a phase of one commit is `--commits <its parent>..<it>`; nothing was written"));
    }
    Ok(())
}

/// `--tests X/Y` with X at most Y: more tests passing than ran is a typo, not a record.
fn check_tests(tests: &str) -> Result<(), CommandError> {
    if let Some((x, y)) = tests.split_once('/')
        && let (Ok(x), Ok(y)) = (x.trim().parse::<u64>(), y.trim().parse::<u64>())
        && x > y
    {
        return Err(CommandError::usage(format!(
            "--tests {tests}: {x} passing of {y} run is more than ran"
        ))
        .hint("pass tests passing over tests run, like `41/42`; nothing was written"));
    }
    Ok(())
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
            None => short_head(ctx)?,
        };
        Ok(Event::Started {
            phase: self.phase.clone(),
            base,
        })
    }
}

/// Record a gate result with its evidence: `phase <N>: gate <name> → PASS|FAIL (evidence: <cmd> → <result>)`.
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

/// Record a completed phase: `phase <N>: complete (commits <a>..<b>, tests <X/Y>, review clean|<K> parked)`.
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
                let base = started_base(&plan, &self.phase)?;
                (base, short_head(ctx)?)
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

/// The base of the last `started` event of a phase.
fn started_base(plan: &Plan, phase: &str) -> Result<String, CommandError> {
    let text = baton_store::ledger::read(&plan.ledger)?
        .ok_or_else(|| baton_ops::ledgers::missing(plan))?;
    baton_core::ledger::parse_ledger(&text)
        .events
        .iter()
        .rev()
        .find_map(|(_, l)| match &l.event {
            Event::Started { phase: p, base } if p == phase => Some(base.clone()),
            _ => None,
        })
        .ok_or_else(|| {
            CommandError::usage(format!(
                "phase {phase} has no `started` event to take its base from"
            ))
            .hint("pass `--commits <a>..<b>`")
        })
}

/// Record a parked finding: `phase <N>: parked — <finding> — ruling: <why>`.
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

/// Record an agent that died without a diff: `phase <N>: agent died (no diff) — redispatch`.
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
            None => short_head(ctx)?,
        };
        Ok(Event::Baseline {
            tests: self.tests.clone(),
            sha,
        })
    }
}

/// Record a model substitution: `env: model fallback <from>→<to> — <reason>`.
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

/// Record a tail step of the finish: `finish: tail <step> → DONE|SKIPPED (idempotent)|FAILED (paste-ready emitted)`.
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

/// The event with every free-text value trimmed, as the grammar reads it back.
fn trimmed(event: Event) -> Event {
    let t = |s: String| s.trim().to_string();
    match event {
        Event::Started { phase, base } => Event::Started {
            phase: t(phase),
            base: t(base),
        },
        Event::Gate {
            phase,
            name,
            pass,
            cmd,
            result,
        } => Event::Gate {
            phase: t(phase),
            name: t(name),
            pass,
            cmd: t(cmd),
            result: t(result),
        },
        Event::Complete {
            phase,
            from,
            to,
            tests,
            review,
        } => Event::Complete {
            phase: t(phase),
            from: t(from),
            to: t(to),
            tests: t(tests),
            review,
        },
        Event::Parked {
            phase,
            finding,
            ruling,
        } => Event::Parked {
            phase: t(phase),
            finding: t(finding),
            ruling: t(ruling),
        },
        Event::Blocked { phase, reason } => Event::Blocked {
            phase: t(phase),
            reason: t(reason),
        },
        Event::Resumed { phase, confirmed } => Event::Resumed {
            phase: t(phase),
            confirmed,
        },
        Event::AgentDied { phase } => Event::AgentDied { phase: t(phase) },
        Event::Waiver { phase, rule, who } => Event::Waiver {
            phase: t(phase),
            rule: t(rule),
            who: t(who),
        },
        Event::Baseline { tests, sha } => Event::Baseline {
            tests: t(tests),
            sha: t(sha),
        },
        Event::Env { from, to, reason } => Event::Env {
            from: t(from),
            to: t(to),
            reason: t(reason),
        },
        Event::Finish { step, outcome } => Event::Finish {
            step: t(step),
            outcome,
        },
    }
}
