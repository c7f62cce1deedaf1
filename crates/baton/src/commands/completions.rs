//! `baton completions <shell>`: the shell's completion script, from the command definitions;
//! and the completions themselves, which that script asks the binary for at each TAB
//! (`COMPLETE=<shell> baton -- <words>`), with the project's ticket ids, run ids and plan
//! directories.

use std::ffi::OsString;

use clap::Args;
use clap_complete::engine::{ArgValueCandidates, CompletionCandidate};
use clap_complete::env::Shells;
use clap_complete::{CompleteEnv, Shell};
use serde_json::json;

use crate::error::{CommandError, ExitStatus};
use crate::output::Report;
use baton_ops::{Ctx, completion};
use baton_store::StateStore;

/// The variable that asks baton for completions instead of running a command.
const VAR: &str = "COMPLETE";

/// Print the completion script for a shell on stdout: commands, options and their values,
/// with the project's ticket ids, run ids and plan directories.
///
/// The script asks `baton` (on PATH) for the candidates at each TAB, so it completes the ids
/// of the project the shell is in. Install it where the shell looks (and start a new shell):
///
///   bash:  baton completions bash > ~/.local/share/bash-completion/completions/baton
///
///   zsh:   baton completions zsh > ~/.zfunc/_baton, with `fpath=(~/.zfunc $fpath)` before
///          `compinit` in ~/.zshrc (any directory on $fpath will do; the file is `_baton`)
///
///   fish:  baton completions fish > ~/.config/fish/completions/baton.fish
///
///   PowerShell: add `baton completions powershell | Out-String | Invoke-Expression` to
///          $PROFILE
///
///   elvish: baton completions elvish > ~/.config/elvish/lib/baton.elv, and `use baton` in
///          ~/.config/elvish/rc.elv
///
/// Or load it afresh in every new shell, as `source <(COMPLETE=bash baton)` in ~/.bashrc
/// (`COMPLETE=zsh`, `COMPLETE=fish baton | source`, …): then an upgrade of baton never leaves
/// an old script behind. Regenerate a saved script after upgrading baton.
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, powershell or elvish.
    #[arg(value_enum)]
    pub shell: Shell,
    /// Print the self-contained script instead, which never runs baton while completing: it
    /// knows the commands and options, but no ticket, run or plan.
    #[arg(long = "static")]
    pub fixed: bool,
}

/// The script for `cmd`, the whole command tree.
pub fn cmd_completions(
    args: CompletionsArgs,
    mut cmd: clap::Command,
) -> Result<Report, CommandError> {
    let mut script = Vec::new();
    if args.fixed {
        clap_complete::generate(args.shell, &mut cmd, "baton", &mut script);
    } else {
        let shells = Shells::builtins();
        let shell = shells.completer(&args.shell.to_string()).ok_or_else(|| {
            CommandError::new(
                ExitStatus::Failure,
                format!("no completion for {} yet", args.shell),
            )
            .hint("print the self-contained script with `--static`")
        })?;
        shell
            .write_registration(VAR, "baton", "baton", "baton", &mut script)
            .map_err(|e| CommandError::new(ExitStatus::Failure, e.to_string()))?;
    }
    let script = String::from_utf8(script)
        .map_err(|_| CommandError::new(ExitStatus::Failure, "the script is not UTF-8"))?;
    Ok(Report::ok(
        json!({ "shell": args.shell.to_string(), "static": args.fixed, "script": script }),
        script,
    ))
}

/// Answers the shell when `COMPLETE` asks for completions (or for the script, with no words),
/// and says whether it did. Only those two forms are the shell's: `baton -- <words>`, as the
/// script calls it, and a bare `baton`. `COMPLETE` exported by a profile reaches every baton a
/// client or a hook runs, and a command with arguments of its own is never a question from the
/// shell: it runs as if the variable were not set. A `COMPLETE` naming no shell baton knows is
/// reported and ignored.
pub fn answer_shell(cmd: fn() -> clap::Command) -> bool {
    let Some(shell) = std::env::var_os(VAR) else {
        return false;
    };
    if shell.is_empty() || shell == "0" {
        return false;
    }
    let mut args = std::env::args_os().skip(1);
    match args.next() {
        None => {}
        Some(first) if first == "--" => {}
        Some(_) => return false,
    }
    let known = std::path::Path::new(&shell)
        .file_stem()
        .is_some_and(|name| {
            let shells = Shells::builtins();
            shells.completer(&name.to_string_lossy()).is_some()
        });
    if !known {
        eprintln!(
            "warning: {VAR}={} names no shell baton completes for (bash, zsh, fish, powershell, elvish), so it is ignored",
            shell.to_string_lossy()
        );
        return false;
    }
    // The words typed so far: a `-C DIR` among them is the project the candidates come from.
    let words: Vec<OsString> = std::env::args_os().collect();
    if let Some(dir) = words
        .windows(2)
        .skip_while(|pair| pair[0] != "--")
        .find(|pair| pair[0] == "-C")
        .map(|pair| pair[1].clone())
    {
        let _ = std::env::set_current_dir(dir);
    }
    let dir = std::env::current_dir().ok();
    if let Err(e) = CompleteEnv::with_factory(cmd)
        .var(VAR)
        .try_complete(words, dir.as_deref())
    {
        // The shell offers nothing; the reason is for whoever runs it by hand.
        eprint!("{e}");
        std::process::exit(ExitStatus::Failure as i32);
    }
    true
}

/// `cmd` with the values its arguments complete with: a ticket id, a run id, a plan
/// directory with a ledger, and for `log` any of them or `batch`.
pub fn with_candidates(cmd: clap::Command) -> clap::Command {
    fn walk(cmd: clap::Command, parents: &[String]) -> clap::Command {
        let mut here = parents.to_vec();
        here.push(cmd.get_name().to_string());
        let ledger_or_gate = here.iter().any(|n| n == "ledger" || n == "gate");
        let name = cmd.get_name().to_string();
        let cmd = cmd.mut_args(|arg| match arg.get_id().as_str() {
            "ticket" | "tickets" => arg.add(candidates(|_, store| {
                store.map(completion::tickets).unwrap_or_default()
            })),
            "run_id" if name != "import" => arg.add(candidates(|_, store| {
                store.map(completion::runs).unwrap_or_default()
            })),
            "plan" if ledger_or_gate && name != "init" => {
                arg.add(candidates(|ctx, _| completion::plans(ctx)))
            }
            "target" if name == "log" => arg.add(candidates(|ctx, store| {
                let mut all = vec!["batch".to_string()];
                if let Some(store) = store {
                    all.extend(completion::runs(store));
                }
                all.extend(completion::plans(ctx));
                if let Some(store) = store {
                    all.extend(completion::tickets(store));
                }
                all
            })),
            _ => arg,
        });
        cmd.mut_subcommands(|sub| walk(sub, &here))
    }
    walk(cmd, &[])
}

/// Candidates read from the project of the working directory, and from its store when it can
/// be opened.
fn candidates(list: fn(&Ctx, Option<&dyn StateStore>) -> Vec<String>) -> ArgValueCandidates {
    ArgValueCandidates::new(move || {
        Ctx::from_env(None, None)
            .map(|ctx| {
                let store = ctx.store().ok();
                list(&ctx, store.as_deref())
            })
            .unwrap_or_default()
            .into_iter()
            .map(|value| CompletionCandidate::new(OsString::from(value)))
            .collect::<Vec<_>>()
    })
}
