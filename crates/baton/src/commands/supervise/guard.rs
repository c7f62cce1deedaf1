//! The process between `supervise` and its agent. It starts the agent, keeps what the agent
//! starts (as their subreaper, so a launcher that exits leaves its agent here), and exits as
//! the agent did. Should `supervise` itself die (SIGKILL, the OOM killer), nothing of it runs:
//! the guard sees its parent gone and stops the agent's whole tree, which would otherwise work
//! on unsupervised.

use std::ffi::OsString;
use std::process::{Command, ExitCode};
use std::time::Duration;

use baton_store::platform;
use clap::Args;

/// The hidden command that runs the guard.
pub const COMMAND: &str = "supervise-guard";

#[derive(Args, Debug)]
pub struct GuardArgs {
    /// The supervise process the guard answers to: once its parent is another, supervise is
    /// gone.
    #[arg(long)]
    parent: u32,
    /// The agent command and its arguments.
    #[arg(last = true, required = true)]
    command: Vec<OsString>,
}

/// How often the agent and the parent are looked at.
const POLL: Duration = Duration::from_millis(20);

pub fn run(args: GuardArgs) -> ExitCode {
    platform::become_subreaper();
    // A signal meant for the agent (a terminal's Ctrl-C reaches the whole foreground group;
    // supervise passes its own on to the agent's tree) does not end the guard before its
    // agent. A handler, not SIG_IGN: the agent starts with the default again.
    super::catch_signals();
    if platform::parent() != args.parent {
        super::say("the guard runs only under `baton supervise`, which starts it");
        return ExitCode::FAILURE;
    }
    let mut cmd = Command::new(&args.command[0]);
    cmd.args(&args.command[1..]);
    // SAFETY: die_with_parent is async-signal-safe, and the closure touches no memory.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut cmd, || {
            platform::die_with_parent(libc::SIGTERM);
            Ok(())
        });
    }
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(e) => {
            super::say(&format!(
                "cannot run {}: {e}",
                baton_core::text::esc(&args.command[0].to_string_lossy())
            ));
            return ExitCode::from(127);
        }
    };
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return exit_as(status),
            Ok(None) => {}
            Err(_) => return ExitCode::FAILURE,
        }
        if platform::parent() != args.parent {
            let tree = platform::descendants_in_session(std::process::id(), false);
            platform::stop_processes(&tree, super::LEFTOVER_GRACE);
            return ExitCode::FAILURE;
        }
        std::thread::sleep(POLL);
    }
}

/// Exits as the agent did: its code, or the signal that ended it.
fn exit_as(status: std::process::ExitStatus) -> ExitCode {
    use std::os::unix::process::ExitStatusExt;
    if let Some(code) = status.code() {
        return ExitCode::from(code as u8);
    }
    let sig = status.signal().unwrap_or(libc::SIGKILL);
    // SAFETY: signal(2) back to the default action and raise(3) of the signal that ended the
    // agent, so that supervise reads the same ending.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
    ExitCode::from(128 + sig as u8)
}
