//! `baton completions <shell>`: the shell's completion script, from the command definitions.

use clap::Args;
use clap_complete::Shell;
use serde_json::json;

use crate::output::Report;
use baton_ops::error::CommandError;

/// Print the completion script for a shell on stdout: commands, options and their values.
///
/// Install it where the shell looks (and start a new shell):
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
/// Regenerate the script after upgrading baton.
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, powershell or elvish.
    #[arg(value_enum)]
    pub shell: Shell,
}

/// The script for `cmd`, the whole command tree.
pub fn cmd_completions(
    args: CompletionsArgs,
    mut cmd: clap::Command,
) -> Result<Report, CommandError> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "baton", &mut script);
    let script = String::from_utf8(script).map_err(|_| {
        CommandError::new(
            baton_ops::error::ExitStatus::Failure,
            "the script is not UTF-8",
        )
    })?;
    Ok(Report::ok(
        json!({ "shell": args.shell.to_string(), "script": script }),
        script,
    ))
}
