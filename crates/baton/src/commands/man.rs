//! `baton man`: the manual page, rendered from the command definitions.

use std::path::{Path, PathBuf};

use clap::Args;
use serde_json::json;

use crate::error::{CommandError, ExitStatus};
use crate::output::Report;

/// Print the manual page of baton (roff, section 1) on stdout, or with `--dir` write one page
/// per command: baton.1, baton-loop.1, baton-loop-set.1 and so on.
///
/// Read it with `baton man > baton.1 && man -l baton.1`; install the pages with
/// `baton man --dir ~/.local/share/man/man1` (then `man baton`, `man baton-loop-set`).
#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write every page into DIR (created if missing) instead of printing baton's own.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// The pages of `cmd`, the whole command tree.
pub fn cmd_man(args: ManArgs, cmd: clap::Command) -> Result<Report, CommandError> {
    let cmd = cmd.disable_help_subcommand(true);
    let Some(dir) = args.dir else {
        let mut page = Vec::new();
        render(cmd, &mut page).map_err(|e| failed("render the manual page", &e))?;
        let page = String::from_utf8_lossy(&page).into_owned();
        return Ok(Report::ok(json!({ "page": page }), page));
    };
    std::fs::create_dir_all(&dir).map_err(|e| failed(&format!("create {}", dir.display()), &e))?;
    let mut cmd = cmd;
    // The pages of subcommands are named after their path: baton-loop-set.
    cmd.build();
    let mut written = Vec::new();
    write_pages(cmd, &dir, &mut written)?;
    written.sort();
    let text = format!("wrote {} manual pages to {}", written.len(), dir.display());
    Ok(Report::ok(
        json!({ "dir": dir.display().to_string(), "pages": written }),
        text,
    ))
}

/// baton's own page has the environment reference (`baton help environment`) as its
/// ENVIRONMENT section.
fn render(cmd: clap::Command, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    let top = cmd.get_bin_name().is_none_or(|b| b == "baton") && cmd.get_name() == "baton";
    let man = clap_mangen::Man::new(cmd);
    if !top {
        return man.render(out);
    }
    man.render_title(out)?;
    man.render_name_section(out)?;
    man.render_synopsis_section(out)?;
    man.render_description_section(out)?;
    man.render_options_section(out)?;
    man.render_subcommands_section(out)?;
    out.write_all(crate::environment::roff().as_bytes())?;
    man.render_version_section(out)
}

/// The page of `cmd` and of every command under it that `--help` shows.
fn write_pages(
    cmd: clap::Command,
    dir: &Path,
    written: &mut Vec<String>,
) -> Result<(), CommandError> {
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        write_pages(sub.clone(), dir, written)?;
    }
    let man = clap_mangen::Man::new(cmd);
    let name = man.get_filename();
    let path = dir.join(&name);
    let mut page = Vec::new();
    man.render(&mut page)
        .map_err(|e| failed("render the manual page", &e))?;
    std::fs::write(&path, page).map_err(|e| failed(&format!("write {}", path.display()), &e))?;
    written.push(name);
    Ok(())
}

fn failed(what: &str, e: &std::io::Error) -> CommandError {
    CommandError::new(ExitStatus::Failure, format!("cannot {what}: {e}"))
}
