//! The command tree and its one flat dispatch.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::commands::{
    batch, completions, demo, gate, hook, init, ledger, man, pause, resume, run, schema, status,
    supervise, ticket_loop, wait,
};
use crate::error::{CommandError, ExitStatus};
use crate::output::{self, ColorChoice, Report};
use baton_core::text::esc;
use baton_ops::env::Ctx;

/// Durable state for coding-agent runs: resume an interrupted run exactly where it stopped.
///
/// Agents call baton at every phase transition and at session start. Every decision prints a
/// verdict, the rules that fired and the next step; `--json` prints the same as one object.
///
/// Exit status: 0 done (including any computed verdict), 1 error, 2 invalid
/// input, 3 refused by a gate, 4 a human must decide first, 5 done but its output could not be
/// written (what it changed stays changed: read the state again, do not run it blindly again).
///
/// Start with `baton demo`.
#[derive(Debug, Parser)]
#[command(
    name = "baton",
    version = env!("BATON_VERSION"),
    max_term_width = 100
)]
pub(crate) struct Cli {
    /// Run as if started in DIR (the project root is the git top level above it).
    #[arg(short = 'C', global = true, help_heading = GLOBAL, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// The session id: `help` in one line, `long_help` for `--help`.
    #[arg(long, global = true, help_heading = GLOBAL, value_name = "ID",
          help = "The session id [default: $BATON_SESSION, else the agent client's]",
          long_help = "The session id [default: $BATON_SESSION, else the agent client's own: \
                       $CLAUDE_CODE_SESSION_ID, $CODEX_SESSION_ID, $CODEX_THREAD_ID, \
                       $COPILOT_AGENT_SESSION_ID, $BATON_OPENCODE_SESSION (set by baton's \
                       OpenCode plugin), or the Gemini CLI or Cursor session its hooks recorded]")]
    session: Option<String>,
    /// Print exactly one JSON object on stdout.
    #[arg(long, global = true, help_heading = GLOBAL)]
    json: bool,
    /// The store's URL.
    #[arg(long, global = true, help_heading = GLOBAL, value_name = "URL",
          help = "Keep the state in this PostgreSQL server [default: $BATON_STORE]",
          long_help = "Keep the state in this PostgreSQL server, shared by every machine [default: \
                       $BATON_STORE, else `store = \"…\"` in the project's .baton.toml, else the \
                       files under .agentic/]. See `baton store --help`")]
    store: Option<String>,
    /// When to colour.
    #[arg(long, global = true, help_heading = GLOBAL, value_name = "WHEN", value_enum,
          default_value_t = ColorChoice::Auto, hide_possible_values = true,
          help = "When to colour the output: auto, always or never",
          long_help = "When to colour the output: `auto` as NO_COLOR, CLICOLOR_FORCE, CLICOLOR and \
                       TERM say (on a terminal, by default), `always` even when piped, `never`. \
                       `--json` is never coloured")]
    color: ColorChoice,
    #[command(subcommand)]
    command: Command,
}

/// The heading of the options every command takes.
const GLOBAL: &str = "Global options";

/// Each command's one-line about (its `--help` has the whole text).
#[derive(Debug, Subcommand)]
enum Command {
    #[command(
        subcommand,
        name = "loop",
        about = "Record and inspect one ticket's loop"
    )]
    Loop(ticket_loop::LoopCommand),
    #[command(about = "Start every session here: interrupted work and the resume packet")]
    Resume(resume::ResumeArgs),
    #[command(
        name = "continue",
        about = "The active feature and where the next session starts"
    )]
    Continue(crate::commands::continue_cmd::ContinueArgs),
    #[command(about = "All the project's work, with its verdict and next step")]
    Status(status::StatusArgs),
    #[command(about = "The history of a loop, the batch, a run or a ledger")]
    Log(crate::commands::log::LogArgs),
    #[command(about = "Mark this session's work paused on purpose")]
    Pause(pause::PauseArgs),
    #[command(about = "Say when interrupted work can resume, or wait until then")]
    Wait(wait::WaitArgs),
    #[command(about = "Run an agent and relaunch it where a rate limit stopped it")]
    Supervise(supervise::SuperviseArgs),
    /// The process supervise runs its agent under (not for people).
    #[command(name = supervise::GUARD_COMMAND, hide = true)]
    SuperviseGuard(supervise::GuardArgs),
    #[cfg(feature = "postgres")]
    #[command(subcommand, about = "The PostgreSQL store for a fleet of machines")]
    Store(crate::commands::store::StoreCommand),
    #[command(subcommand, about = "Track a single-run pipeline and resume it safely")]
    Run(run::RunCommand),
    #[command(subcommand, about = "Keep a plan's run ledger")]
    Ledger(ledger::LedgerCommand),
    #[command(subcommand, about = "Run the exit gates of a plan's phase")]
    Gate(gate::GateCommand),
    #[command(about = "Judge claimed work by git and the gates, never by its claim")]
    Verdict(crate::commands::verdict::VerdictArgs),
    #[command(about = "Print a goal condition that only a verified verdict meets")]
    Goal(crate::commands::goal::GoalArgs),
    #[command(
        subcommand,
        about = "The guard of shared checkouts: let a refused git command through"
    )]
    Guard(crate::commands::guard::GuardCommand),
    #[command(
        subcommand,
        about = "The account's window: may an agent launch now",
        long_about = "The account's window: may an agent launch now.\n\nA usage limit belongs to the account, not to the session that meets it: when one session hits its account's 5-hour or weekly limit and the limit names its reset, every supervisor, conductor and session on that account waits for the reset instead of launching into the closed window. At the reset one launch probes it, and the rest follow its first turn, staggered. `baton status` shows each closed window; docs/window.md says how the account is read."
    )]
    Window(crate::commands::window::WindowCommand),
    #[command(subcommand, about = "Run several tickets as one batch")]
    Batch(batch::BatchCommand),
    #[command(about = "Run by a client's hooks: keeps the state in step with the session")]
    Hook(hook::HookArgs),
    #[command(about = "Install baton's hooks and guide into an agent client")]
    Init(init::InitArgs),
    #[command(about = "Check what breaks a setup, and say the fix for each")]
    Doctor(crate::commands::doctor::DoctorArgs),
    #[command(about = "Walk through a ticket loop interrupted by a rate limit")]
    Demo(demo::DemoArgs),
    #[command(about = "Print the JSON Schemas of the files and the --json outputs")]
    Schema(schema::SchemaArgs),
    #[command(about = "Print the completion script for a shell")]
    Completions(completions::CompletionsArgs),
    #[command(about = "Print or write the manual pages")]
    Man(man::ManArgs),
}

/// The commands by what they are for, as the short help lists them; the plumbing is listed
/// by `--help` only.
const GROUPS: &[(&str, &[&str])] = &[
    ("Session start", &["resume", "wait", "supervise", "window"]),
    (
        "Everyday work",
        &[
            "loop", "continue", "run", "ledger", "gate", "verdict", "goal", "guard", "batch",
            "pause",
        ],
    ),
    ("Seeing", &["status", "log"]),
    ("Setup", &["init", "doctor", "demo", "store"]),
];
const PLUMBING: &[&str] = &["hook", "schema", "completions", "man"];

/// The command tree with its help laid out: the commands in groups, the global options under
/// their own heading.
pub(crate) fn command() -> clap::Command {
    let cmd = Cli::command();
    let about = |name: &str| {
        cmd.find_subcommand(name)
            .and_then(|c| c.get_about())
            .map(|a| a.to_string())
            .unwrap_or_default()
    };
    let list = |names: &[&str]| -> String {
        names
            .iter()
            .filter(|n| cmd.find_subcommand(n).is_some())
            .map(|n| format!("  {n:<12} {}\n", about(n)))
            .collect()
    };
    let groups: String = GROUPS
        .iter()
        .map(|(heading, names)| format!("{heading}:\n{}\n", list(names)))
        .collect();
    let template = format!(
        "{{about-with-newline}}\n{{usage-heading}} {{usage}}\n\n{groups}{GLOBAL}:\n{{options}}{{after-help}}"
    );
    let plumbing = format!(
        "Plumbing:\n{}\n`baton help <COMMAND>` shows a command's help; `baton help environment` the variables baton reads.",
        list(PLUMBING)
    );
    cmd.help_template(template)
        .after_help(
            "`baton help <COMMAND>` shows a command's help; `--help` lists the plumbing too.",
        )
        .after_long_help(plumbing)
}

pub fn run() -> ExitCode {
    // `COMPLETE=<shell> baton -- <words>`: the completion script asking for candidates.
    if completions::answer_shell(|| completions::with_candidates(command())) {
        return ExitCode::SUCCESS;
    }
    // `baton help environment`: the variables baton reads, which are no command of their own.
    let words: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    if words.len() == 2 && words[0] == "help" && (words[1] == "environment" || words[1] == "env") {
        let mut out = std::io::stdout().lock();
        let text = format!("{}\n", crate::environment::text());
        return match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(_) => ExitCode::from(ExitStatus::Unprinted as u8),
        };
    }
    // clap colours its own help and errors as `--color` says, so the choice is read before
    // the command line is parsed.
    let color = color_in_args(std::env::args_os().skip(1));
    output::set_color_choice(color);
    let parsed = command()
        .color(color)
        .try_get_matches()
        .and_then(|mut matches| Cli::from_arg_matches_mut(&mut matches));
    let cli = match parsed {
        Ok(cli) => cli,
        Err(err) => {
            use clap::error::ErrorKind::{
                DisplayHelp, DisplayHelpOnMissingArgumentOrSubcommand, DisplayVersion,
            };
            if matches!(err.kind(), DisplayHelp | DisplayVersion) {
                let _ = err.print();
                return ExitCode::SUCCESS;
            }
            // A hook fails open even on a bad command line: to a client, exit 2 from a stop
            // hook means "keep going", not "error".
            if is_hook(std::env::args_os().skip(1)) {
                let message = err.render().to_string();
                let first = message.lines().next().unwrap_or_default();
                output::to_stderr(&format!(
                    "baton hook: {}\n",
                    first.trim_start_matches("error: ")
                ));
                return ExitCode::SUCCESS;
            }
            // `--json` promises one JSON object whatever happens, a bad command line included.
            if crate::output::wants_json() && err.kind() != DisplayHelpOnMissingArgumentOrSubcommand
            {
                let message = err.render().to_string();
                let summary: Vec<&str> = message
                    .lines()
                    .take_while(|l| !l.is_empty() && !l.starts_with("Usage:"))
                    .map(str::trim)
                    .collect();
                let summary = summary.join(" ").trim_start_matches("error: ").to_string();
                let usage = CommandError::usage(summary)
                    .hint("run the command with `--help` to see its arguments");
                let (status, stdout, _) = render_error(&usage, true);
                return print_and_exit(status, &stdout, "");
            }
            let _ = err.print();
            return ExitCode::from(ExitStatus::Usage as u8);
        }
    };
    if let Some(url) = &cli.store {
        // SAFETY: set before any thread is started. The settings (`Ctx::settings`) read it as
        // they read BATON_STORE itself, and the agent and the gates baton runs inherit it.
        unsafe { std::env::set_var("BATON_STORE", url) };
    }
    let json = cli.json;
    let result = match cli.command {
        // A hook answers its client, not a person: it fails open whatever happens.
        Command::Hook(args) => return hook::run(cli.dir, args),
        Command::SuperviseGuard(args) => return supervise::run_guard(args),
        // Neither reads a project: they print what the command definitions say.
        Command::Completions(args) => completions::cmd_completions(args, command()),
        Command::Man(args) => man::cmd_man(args, command()),
        command => {
            // Commands that keep no state of their own read the machine's clock; the others,
            // with a shared store, the server's.
            let state_command = !matches!(
                command,
                Command::Init(_) | Command::Schema(_) | Command::Demo(_) | Command::Doctor(_)
            ) && !is_store_command(&command);
            Ctx::from_env(cli.dir, cli.session)
                .and_then(|mut ctx| {
                    if state_command {
                        ctx.use_server_clock()?;
                    }
                    Ok(ctx)
                })
                .map_err(CommandError::from)
                .and_then(|ctx| {
                    let held = if state_command {
                        forward_first(&ctx)
                    } else {
                        Vec::new()
                    };
                    dispatch(&ctx, command)
                        .map(|mut report| {
                            report.warnings.splice(0..0, held.clone());
                            report
                        })
                        .map_err(|e| held.into_iter().fold(e, CommandError::hint))
                })
        }
    };
    let (status, stdout, stderr) = match result {
        Ok(mut report) => {
            if json {
                for (key, lines) in [("warnings", report.warnings), ("notes", report.notes)] {
                    if lines.is_empty() {
                        continue;
                    }
                    match report.json.get_mut(key) {
                        Some(serde_json::Value::Array(existing)) => {
                            existing.extend(lines.into_iter().map(Into::into));
                        }
                        _ => {
                            report.json.insert(key.into(), lines.into());
                        }
                    }
                }
                let out = serde_json::Value::Object(report.json).to_string();
                (report.status, out, String::new())
            } else {
                let mut stderr: String = report.notes.iter().map(|n| format!("{n}\n")).collect();
                let warning = painted("warning:", WARNING);
                for w in &report.warnings {
                    stderr.push_str(&format!("{warning} {w}\n"));
                }
                (report.status, report.text, stderr)
            }
        }
        Err(err) => render_error(&err, json),
    };
    print_and_exit(status, &stdout, &stderr)
}

/// The `--color` of a command line (before any `--`; the last one wins), `auto` when it has
/// none or names no choice clap would accept.
fn color_in_args(args: impl Iterator<Item = std::ffi::OsString>) -> ColorChoice {
    use clap::ValueEnum;
    let mut choice = ColorChoice::Auto;
    let mut args = args.take_while(|a| a != "--");
    while let Some(arg) = args.next() {
        let value = match arg.to_str() {
            Some("--color") => args.next(),
            Some(a) => a.strip_prefix("--color=").map(Into::into),
            None => None,
        };
        if let Some(c) = value
            .as_deref()
            .and_then(|v| v.to_str())
            .and_then(|v| ColorChoice::from_str(v, false).ok())
        {
            choice = c;
        }
    }
    choice
}

/// Whether a command line names the `hook` command: its first word that is neither a global
/// option nor an option's value.
fn is_hook(args: impl Iterator<Item = std::ffi::OsString>) -> bool {
    let mut args = args;
    while let Some(arg) = args.next() {
        match arg.to_str() {
            Some("-C" | "--session" | "--store" | "--color") => {
                args.next();
            }
            Some(a) if a.starts_with('-') => {}
            Some(a) => return a == "hook",
            None => return false,
        }
    }
    false
}

fn dispatch(ctx: &Ctx, command: Command) -> Result<Report, CommandError> {
    match command {
        Command::Loop(cmd) => ticket_loop::dispatch(ctx, cmd),
        Command::Resume(args) => resume::cmd_resume(ctx, args),
        Command::Run(cmd) => run::dispatch(ctx, cmd),
        Command::Ledger(cmd) => ledger::dispatch(ctx, cmd),
        Command::Gate(cmd) => gate::dispatch(ctx, cmd),
        Command::Batch(cmd) => batch::dispatch(ctx, cmd),
        Command::Status(args) => status::cmd_status(ctx, args),
        Command::Pause(args) => pause::cmd_pause(ctx, args),
        Command::Wait(args) => wait::cmd_wait(ctx, args),
        Command::Verdict(args) => crate::commands::verdict::cmd_verdict(ctx, args),
        Command::Goal(args) => crate::commands::goal::cmd_goal(ctx, args),
        Command::Window(cmd) => crate::commands::window::dispatch(ctx, cmd),
        Command::Guard(cmd) => crate::commands::guard::dispatch(ctx, cmd),
        Command::Supervise(args) => supervise::cmd_supervise(ctx, args),
        #[cfg(feature = "postgres")]
        Command::Store(cmd) => crate::commands::store::dispatch(ctx, cmd),
        Command::Log(args) => crate::commands::log::cmd_log(ctx, args),
        Command::Hook(_)
        | Command::SuperviseGuard(_)
        | Command::Completions(_)
        | Command::Man(_) => {
            unreachable!("these run before the context is read")
        }
        Command::Init(args) => init::cmd_init(ctx, args),
        Command::Doctor(args) => crate::commands::doctor::cmd_doctor(ctx, args),
        Command::Demo(args) => demo::cmd_demo(ctx, args),
        Command::Schema(args) => schema::cmd_schema(ctx, args),
        Command::Continue(args) => crate::commands::continue_cmd::cmd_continue(ctx, args),
    }
}

fn render_error(err: &CommandError, json: bool) -> (ExitStatus, String, String) {
    if json {
        let mut error = serde_json::json!({
            "kind": err.status.kind(), "message": err.message, "hints": err.hints,
        });
        if !err.causes.is_empty() {
            error["causes"] = serde_json::json!(err.causes);
        }
        let obj = serde_json::json!({ "error": error });
        return (err.status, obj.to_string(), String::new());
    }
    // A message can quote what a state file holds (a parse error names the bad value): escaped,
    // it cannot start a line of its own. Hints are baton's own text, some of several lines.
    let mut text = format!("{} {}\n", painted("error:", ERROR), esc(&err.message));
    for cause in &err.causes {
        text.push_str(&format!("caused by: {}\n", esc(cause)));
    }
    for hint in &err.hints {
        text.push_str(&format!("hint: {hint}\n"));
    }
    (err.status, String::new(), text)
}

/// Bold red, as clap shows its own errors.
const ERROR: &str = "1;31";
/// Bold yellow.
const WARNING: &str = "1;33";

/// `label` in the SGR colour `code`, when stderr is coloured.
fn painted(label: &str, code: &str) -> String {
    use std::io::IsTerminal;
    if output::colour(std::io::stderr().is_terminal()) {
        format!("\x1b[{code}m{label}\x1b[0m")
    } else {
        label.to_string()
    }
}

/// Prints both streams, and never panics doing it.
///
/// A command's result that stdout cannot take (a full disk, an I/O error) leaves what the
/// command did in place: a command that succeeded exits 5 (done, unprinted) rather than 1,
/// whose contract is "nothing changed", and stderr says so if it can. A status that is not a
/// success keeps its code: it already says that nothing changed. A stdout closed by its reader
/// (`baton status | head -1`, EPIPE) is the reader's choice to stop reading, for any command:
/// the status stands as it is, which never says "nothing changed" of a change that was made,
/// and nothing is added on stderr.
fn print_and_exit(status: ExitStatus, stdout: &str, stderr: &str) -> ExitCode {
    let written = if stdout.is_empty() {
        Ok(())
    } else {
        let mut out = std::io::stdout().lock();
        out.write_all(stdout.trim_end().as_bytes())
            .and_then(|()| out.write_all(b"\n"))
            .and_then(|()| out.flush())
    };
    let status = match written {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            let (status, what) = unprinted(status);
            output::to_stderr(&format!(
                "{} {what}: cannot write to stdout: {e}\n",
                painted("error:", ERROR)
            ));
            status
        }
        _ => status,
    };
    output::to_stderr(stderr);
    ExitCode::from(status as u8)
}

/// The status of a command whose result stdout could not take, and what stderr says of it.
fn unprinted(status: ExitStatus) -> (ExitStatus, &'static str) {
    match status {
        ExitStatus::Success | ExitStatus::Unprinted => (
            ExitStatus::Unprinted,
            "the command is done and what it changed stays changed, but its result could not be printed (exit 5)",
        ),
        other => (other, "the result could not be printed"),
    }
}

/// Before a command reads the state: the failures this machine's hooks recorded (and the turns
/// whose client died unheard, `forward::record_dead_turns`) and that are not applied yet are
/// applied, to the files or forwarded to the server, so that the command sees them. What could
/// not be is a warning; nothing is asked of the server when the outbox is empty.
fn forward_first(ctx: &Ctx) -> Vec<String> {
    match ctx.layout() {
        Ok(layout) if baton_ops::forward::anything_pending(ctx, &layout) => {}
        _ => return Vec::new(),
    }
    match baton_ops::forward::forward(ctx, &|| ctx.store()) {
        Ok(done) => done.all_warnings(),
        Err(e) => vec![format!(
            "interrupts recorded on this machine have not reached the server yet ({}): {}",
            e.message,
            e.hints.join("; ")
        )],
    }
}

/// `baton store`, which talks to the server itself and keeps no state of its own.
fn is_store_command(command: &Command) -> bool {
    #[cfg(feature = "postgres")]
    if matches!(command, Command::Store(_)) {
        return true;
    }
    let _ = command;
    false
}

#[cfg(test)]
mod tests {

    /// `--help` teaches: every command and every option of every command says what it is for.
    #[test]
    fn every_option_in_help_has_a_description() {
        fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
            let path = format!("{path} {}", cmd.get_name());
            if cmd.get_about().is_none() && cmd.get_long_about().is_none() {
                missing.push(format!("{path} (the command)"));
            }
            for arg in cmd.get_arguments() {
                let builtin = matches!(arg.get_id().as_str(), "help" | "version");
                if !builtin && arg.get_help().is_none() && arg.get_long_help().is_none() {
                    missing.push(format!("{path} {}", arg.get_id()));
                }
                // A doc comment's `\'` reaches the help as a stray backslash.
                let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
                if help.contains('\\') {
                    missing.push(format!(
                        "{path} {} (a stray backslash: {help})",
                        arg.get_id()
                    ));
                }
            }
            for sub in cmd.get_subcommands() {
                walk(sub, &path, missing);
            }
        }
        let mut missing = Vec::new();
        walk(&super::command(), "", &mut missing);
        assert!(missing.is_empty(), "no description: {missing:#?}");
    }

    /// Every command is in one group of the short help, or in the plumbing `--help` adds.
    #[test]
    fn every_command_is_listed_once_by_what_it_is_for() {
        let cmd = super::command();
        let mut listed: Vec<&str> = super::GROUPS
            .iter()
            .flat_map(|(_, names)| names.iter().copied())
            .chain(super::PLUMBING.iter().copied())
            .collect();
        listed.sort();
        // A hidden command is no one's to run (supervise's guard).
        let mut commands: Vec<&str> = cmd
            .get_subcommands()
            .filter(|c| !c.is_hide_set())
            .map(|c| c.get_name())
            .collect();
        commands.sort();
        // Without PostgreSQL there is no `store` command.
        listed.retain(|n| commands.contains(n));
        assert_eq!(listed, commands);
        for sub in cmd.get_subcommands() {
            let about = sub.get_about().map(|a| a.to_string()).unwrap_or_default();
            assert!(
                about.len() <= 80 && !about.contains('\n'),
                "{}: {about}",
                sub.get_name()
            );
        }
    }

    /// Every command of a group has a one-line about that keeps the group's command list within
    /// 80 columns; the rest of its doc comment is its `--help`.
    #[test]
    fn every_command_of_a_group_scans_in_one_line() {
        fn walk(cmd: &clap::Command, path: &str, long: &mut Vec<String>) {
            // The list is `  <name>  <about>`, the names padded to the longest.
            let shown = || cmd.get_subcommands().filter(|s| !s.is_hide_set());
            let names = shown().map(|s| s.get_name().len()).max();
            for sub in shown() {
                let path = format!("{path} {}", sub.get_name());
                let about = sub.get_about().map(|a| a.to_string()).unwrap_or_default();
                let line = 2 + names.unwrap_or_default() + 2 + about.chars().count();
                if line > 80 || about.contains('\n') {
                    long.push(format!("{path} ({line} columns): {about}"));
                }
                walk(sub, &path, long);
            }
        }
        let mut long = Vec::new();
        walk(&super::command(), "baton", &mut long);
        assert!(long.is_empty(), "abouts longer than a line: {long:#?}");
    }

    /// Every command the installed guide tells an agent to run is one baton accepts.
    #[test]
    fn the_guide_for_agents_names_real_commands() {
        use clap::Parser;
        let guide = baton_core::install::instructions::GUIDE;
        let commands: Vec<&str> = guide
            .split('`')
            .skip(1)
            .step_by(2)
            .filter(|c| c.starts_with("baton "))
            .collect();
        assert!(commands.len() >= 14, "{commands:?}");
        for command in commands {
            let filled = command
                .replace("<ticket>", "PROJ-1")
                .replace("<phase>", "qa")
                .replace("<action>", "spawned")
                .replace("\"<why>\"", "why")
                .replace("<plan-file>", "plan.md")
                .replace("<run-id>", "0123456789abcdef")
                .replace("<name>", "planner")
                .replace("<plan>", "plans/auth")
                .replace("<n>", "1")
                .replace("<x/y>", "41/42")
                .replace("<task>", "T-01");
            let args: Vec<&str> = filled.split_whitespace().collect();
            if let Err(e) = super::Cli::try_parse_from(&args) {
                panic!("`{command}` does not parse: {e}");
            }
        }
    }
}
