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
    let agent = match cmd.spawn() {
        Ok(child) => child.id(),
        Err(e) => {
            super::say(&format!(
                "cannot run {}: {e}",
                baton_core::text::esc(&args.command[0].to_string_lossy())
            ));
            return ExitCode::from(127);
        }
    };
    let mut ended = None;
    loop {
        // Every child that ended is reaped (an orphan given to the guard would otherwise stay
        // a zombie for the whole attempt); the agent's ending is kept.
        platform::reap_children(|pid, status| {
            if pid == agent {
                ended = Some(status);
            }
        });
        // Supervise is gone, whether or not the agent ended with it (its stdout's reader
        // died, so its next write ended it): nothing of the agent works on unsupervised.
        // What starts while the first processes end is looked for again.
        if platform::parent() != args.parent {
            for _ in 0..3 {
                let tree = platform::descendants_in_session(std::process::id(), false);
                if tree.is_empty() {
                    break;
                }
                platform::stop_processes(&tree, super::LEFTOVER_GRACE);
            }
            return ExitCode::FAILURE;
        }
        if let Some(status) = ended {
            use std::os::unix::process::ExitStatusExt;
            return exit_as(std::process::ExitStatus::from_raw(status));
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
    // SAFETY: setrlimit(2) with a filled struct (no core file of the guard's own for a
    // signal that dumps one: the agent's was the crash), signal(2) back to the default action
    // and raise(3) of the signal that ended the agent, so that supervise reads the same ending.
    unsafe {
        let none = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        libc::setrlimit(libc::RLIMIT_CORE, &none);
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
    ExitCode::from(128 + sig as u8)
}
