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
