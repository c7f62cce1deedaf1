//! What baton asks of the operating system beyond POSIX, one module per platform: the host
//! name, the boot id, a process's start time, parent, session and name, a process's
//! descendants, the descriptors this process holds, the two things a child is set up with before
//! it runs (dying with its parent, closing inherited descriptors), keeping orphaned
//! descendants (a subreaper), stopping a set of them with a grace and reaping those that
//! ended.
//!
//! Only Linux is implemented (`linux.rs`, from `/proc` and two Linux calls). Any other target
//! stops at compile time here rather than building a binary whose leases and liveness checks
//! are wrong: a port is a sibling module with the same functions (docs/install.md says what
//! macOS needs for each).

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
pub use linux::*;

#[cfg(not(target_os = "linux"))]
compile_error!(
    "baton is built for Linux only: crates/baton-store/src/platform/ has no module for this \
     target (docs/install.md, \"Platforms\", says what a port needs)"
);

/// What `/proc/<pid>/stat` (or a port's equivalent) says of one process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcStat {
    /// The process has exited and not been reaped (a zombie).
    pub zombie: bool,
    /// Its parent's pid.
    pub parent: Option<u32>,
    /// Its session's id (`setsid`): a process that started a session of its own meant to
    /// outlive whoever started it.
    pub session: Option<u32>,
    /// Its start time, in the platform's unit (Linux: clock ticks after boot); with the pid it
    /// names the process, since a reused pid has another start time.
    pub start: Option<u64>,
}
