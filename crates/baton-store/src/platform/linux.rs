//! Linux: `/proc`, `prctl(PR_SET_PDEATHSIG)` and `close_range(2)`.

use std::os::fd::RawFd;
use std::path::{Path, PathBuf};

use super::ProcStat;

fn proc_file(pid: u32, name: &str) -> PathBuf {
    Path::new("/proc").join(pid.to_string()).join(name)
}

/// This machine's host name, as the kernel has it.
pub fn hostname() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
}

/// The kernel's boot id: differs after every reboot.
pub fn boot_id() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .ok()
        .map(|s| s.trim().to_string())
}

/// `/proc/<pid>/stat`: the state (field 3), the parent (field 4) and the start time in clock
/// ticks after boot (field 22), read after the command name, which may hold spaces and
/// parentheses.
pub fn stat(pid: u32) -> Option<ProcStat> {
    let stat = std::fs::read_to_string(proc_file(pid, "stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    // Fields after the name start at field 3 (state); field 22 is index 19 here.
    Some(ProcStat {
        zombie: fields.first().is_some_and(|state| *state == "Z"),
        parent: fields.get(1).and_then(|s| s.parse().ok()),
        session: fields.get(3).and_then(|s| s.parse().ok()),
        start: fields.get(19).and_then(|s| s.parse().ok()),
    })
}

/// Every live process descended from `root` (its children, theirs, …), from `/proc`, parents
/// before children; `root` itself is not among them.
pub fn descendants(root: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let parents: Vec<(u32, u32)> = dir
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let st = stat(pid)?;
            (!st.zombie).then_some((pid, st.parent?))
        })
        .collect();
    let mut found = vec![root];
    let mut i = 0;
    while i < found.len() {
        let parent = found[i];
        found.extend(
            parents
                .iter()
                .filter(|(_, p)| *p == parent)
                .map(|(pid, _)| *pid),
        );
        i += 1;
    }
    found.remove(0);
    found
}

/// `root` (when `with_root`) and its descendants that stay in this process's session: a process
/// that started a session of its own (`setsid`, as baton's forwarder does) meant to outlive
/// whoever started it, and is left alone.
pub fn descendants_in_session(root: u32, with_root: bool) -> Vec<u32> {
    let ours = stat(std::process::id()).and_then(|s| s.session);
    with_root
        .then_some(root)
        .into_iter()
        .chain(descendants(root))
        .filter(|pid| stat(*pid).and_then(|s| s.session) == ours)
        .collect()
}

/// Ends `pids`, this process's descendants: SIGTERM, up to `grace` for them to exit, then
/// SIGKILL and up to `grace` again, reaping each that is this process's child (its own, or an
/// orphan given to it as subreaper).
pub fn stop_processes(pids: &[u32], grace: std::time::Duration) {
    let poll = std::time::Duration::from_millis(20);
    let running = |pids: &[u32]| -> Vec<u32> {
        pids.iter()
            .copied()
            .filter(|pid| {
                let mut status = 0;
                // SAFETY: waitpid(2) with WNOHANG on one pid never blocks and writes only
                // `status`.
                let got = unsafe { libc::waitpid(*pid as i32, &mut status, libc::WNOHANG) };
                got == 0 || (got < 0 && stat(*pid).is_some_and(|s| !s.zombie))
            })
            .collect()
    };
    let mut alive = pids.to_vec();
    for sig in [libc::SIGTERM, libc::SIGKILL] {
        if alive.is_empty() {
            return;
        }
        for pid in &alive {
            // SAFETY: kill(2) on a descendant the caller found just now.
            unsafe {
                libc::kill(*pid as i32, sig);
            }
        }
        let deadline = std::time::Instant::now() + grace;
        alive = running(&alive);
        while !alive.is_empty() && std::time::Instant::now() < deadline {
            std::thread::sleep(poll);
            alive = running(&alive);
        }
    }
}

/// Reaps every child of this process that has ended, without waiting, passing each one's pid
/// and wait status to `ended`.
pub fn reap_children(mut ended: impl FnMut(u32, i32)) {
    loop {
        let mut status = 0;
        // SAFETY: waitpid(2) with WNOHANG never blocks and writes only `status`.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        if pid <= 0 {
            return;
        }
        ended(pid as u32, status);
    }
}

/// This process's parent now: a process whose parent exited is given to a subreaper or init.
pub fn parent() -> u32 {
    // SAFETY: getppid(2) takes no arguments and cannot fail.
    unsafe { libc::getppid() as u32 }
}

/// Makes this process the one its orphaned descendants are given to (`PR_SET_CHILD_SUBREAPER`),
/// rather than init: an agent started through a launcher that exits stays among them.
pub fn become_subreaper() {
    // SAFETY: prctl(2) with PR_SET_CHILD_SUBREAPER reads only its integer arguments.
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1);
    }
}

/// The process's name (`/proc/<pid>/comm`).
pub fn comm(pid: u32) -> Option<String> {
    std::fs::read_to_string(proc_file(pid, "comm"))
        .ok()
        .map(|s| s.trim().to_string())
}

/// The process's arguments (`/proc/<pid>/cmdline`), empty ones left out.
pub fn cmdline(pid: u32) -> Vec<String> {
    std::fs::read(proc_file(pid, "cmdline"))
        .map(|b| {
            b.split(|&c| c == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The descriptors this process holds (`/proc/self/fd`); none when it cannot be read.
pub fn open_descriptors() -> Vec<RawFd> {
    let Ok(dir) = std::fs::read_dir("/proc/self/fd") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<RawFd>().ok())
        .collect()
}

/// In a child between fork and exec (`CommandExt::pre_exec`): have it sent `signal` when the
/// thread that started it dies. Async-signal-safe.
pub fn die_with_parent(signal: libc::c_int) {
    // SAFETY: prctl(2) with PR_SET_PDEATHSIG reads only its integer arguments.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, signal);
    }
}

/// In a child between fork and exec: close every descriptor from `first` up. Async-signal-safe.
pub fn close_descriptors_from(first: libc::c_uint) {
    // SAFETY: close_range(2) closes descriptors of this (child) process only and touches no
    // memory.
    unsafe {
        libc::syscall(libc::SYS_close_range, first, libc::c_uint::MAX, 0);
    }
}
