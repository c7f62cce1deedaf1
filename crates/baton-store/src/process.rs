//! Facts about processes and this machine, for the run lease: a pid alone never proves
//! liveness, so a holder is named by host, boot id, pid and the process's start time.

use baton_core::client::Client;

use crate::platform;

/// This machine's host name.
pub fn host() -> String {
    platform::hostname()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "localhost".into())
}

/// The kernel's boot id: differs after every reboot, so pids of an earlier boot mean nothing.
pub fn boot_id() -> Option<String> {
    platform::boot_id()
}

/// A process's start time (on Linux in clock ticks after boot).
pub fn start_time(pid: u32) -> Option<u64> {
    platform::stat(pid)?.start
}

/// The parent pid.
fn parent(pid: u32) -> Option<u32> {
    platform::stat(pid)?.parent
}

/// Whether the process that had `start` as its start time is still running. A reused pid has
/// another start time, and a zombie has finished.
pub fn is_alive(pid: u32, start: u64) -> bool {
    platform::stat(pid).is_some_and(|stat| !stat.zombie && stat.start == Some(start))
}

/// This process's ancestors, nearest first, each with its start time, up to pid 1 (which may
/// be a container's entry point, a supervisor among them).
pub fn ancestors() -> Vec<ProcessId> {
    let mut out = Vec::new();
    let mut pid = parent(std::process::id());
    while let Some(p) = pid.filter(|&p| p >= 1) {
        if out.len() >= 64 {
            break;
        }
        let Some(stat) = platform::stat(p) else { break };
        let Some(start) = stat.start else { break };
        out.push((p, start));
        pid = stat.parent;
    }
    out
}

/// Which agent client a process is, if it is one, by the program names of the clients'
/// definitions.
fn agent_of(pid: u32) -> Option<Client> {
    if let Some(agent) = platform::comm(pid).and_then(|c| Client::of_program(&c)) {
        return Some(agent);
    }
    // `node /…/bin/claude …`: the script, not the interpreter, names the agent.
    platform::cmdline(pid)
        .iter()
        .take(2)
        .find_map(|arg| Client::of_program(arg))
}

/// The nearest ancestor of this process that is an agent (Claude Code, Codex CLI, Gemini CLI).
pub fn agent_ancestor() -> Option<u32> {
    agent_ancestor_named().map(|(pid, _)| pid)
}

/// The nearest agent ancestor and which client it is.
pub fn agent_ancestor_named() -> Option<(u32, Client)> {
    let mut pid = parent(std::process::id())?;
    for _ in 0..64 {
        if pid <= 1 {
            return None;
        }
        if let Some(agent) = agent_of(pid) {
            return Some((pid, agent));
        }
        pid = parent(pid)?;
    }
    None
}

/// A process named by its pid and start time.
pub type ProcessId = (u32, u64);

/// The process a lease is held for, and how it was found: the pid the caller names (`flag`),
/// else the one an agent client names for itself (`named`: the variable, such as Claude Code's
/// `CLAUDE_PID`, and its value), else an agent among baton's ancestors; never baton's own
/// short-lived process.
pub fn resolve_holder(
    flag: Option<u32>,
    named: Option<(&'static str, &str)>,
) -> Result<(Option<ProcessId>, &'static str), String> {
    let with_start = |pid: u32| start_time(pid).map(|s| (pid, s));
    let me = std::process::id();
    if let Some(pid) = flag {
        if pid == me {
            return Err(format!(
                "--pid {pid} is baton's own process, which exits at once: name the long-lived agent process"
            ));
        }
        return match with_start(pid) {
            Some(found) => Ok((Some(found), "flag")),
            None => Err(format!("--pid {pid}: no such process on this machine")),
        };
    }
    // A client's variable that names no live process (or baton itself) is ignored, not
    // trusted.
    if let Some((variable, found)) = named.and_then(|(variable, value)| {
        let pid = value.trim().parse().ok().filter(|&p| p != me)?;
        Some((variable, with_start(pid)?))
    }) {
        return Ok((Some(found), variable));
    }
    Ok(match agent_ancestor().and_then(with_start) {
        Some(found) => (Some(found), "ancestor"),
        None => (None, "none"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_and_a_killed_child_is_not() {
        let me = std::process::id();
        let start = start_time(me).expect("own start time");
        assert!(is_alive(me, start));
        assert!(
            !is_alive(me, start + 1),
            "another start time is another process"
        );
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id();
        let child_start = start_time(pid).unwrap();
        assert!(is_alive(pid, child_start));
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(!is_alive(pid, child_start));
    }

    #[test]
    fn the_holder_is_never_baton_itself_unless_named() {
        let (holder, source) = resolve_holder(None, Some(("CLAUDE_PID", "1"))).unwrap();
        assert_eq!(source, "CLAUDE_PID");
        assert_eq!(holder.map(|h| h.0), Some(1));
        assert!(
            resolve_holder(Some(std::process::id()), None).is_err(),
            "never baton's own pid"
        );
        assert!(
            resolve_holder(Some(u32::MAX - 1), None).is_err(),
            "a named pid must exist"
        );
        assert!(boot_id().is_some_and(|b| !b.is_empty()));
        assert!(!host().is_empty());
    }
}
