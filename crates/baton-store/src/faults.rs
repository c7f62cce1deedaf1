//! Named fault points on every step of every write protocol, for the fault and crash harnesses
//! (`crates/baton/tests/cli/faults.rs`, docs/reliability.md).
//!
//! Each step that touches the disk or starts git passes through [`point`] (or [`write`] for a
//! write) just before its system call, and so does each step of a PostgreSQL write
//! (`pg.write.before`, `pg.write.before-commit`, `pg.write.after-commit`: an error there is the
//! connection lost at that step; `crates/baton/tests/cli/pg_faults.rs`). In an ordinary build a point is nothing at all. Built
//! with the `faults` feature (the test build turns it on), a point reads `BATON_FAULTS`, a
//! comma-separated list of `POINT[@N]=ACTION`, and on the Nth pass of that point (default the
//! first) acts:
//!
//! - `eio`: the step fails with an I/O error, as a failing disk would report it;
//! - `enospc`: the step fails as on a full disk; a write first writes half of its bytes, as a
//!   write that runs out of space part-way does;
//! - `crash`: the process kills itself with SIGKILL, so nothing after that step runs, no
//!   destructor included.
//!
//! With `BATON_FAULTS_TRACE=FILE`, every pass appends the point's name to FILE: that is how
//! the harness learns the steps of a command before it fails each of them in turn.

use std::io::{self, Write};

/// Passes the fault point `name`: `Ok` unless `BATON_FAULTS` arms it for this pass.
#[inline(always)]
pub fn point(name: &'static str) -> io::Result<()> {
    #[cfg(feature = "faults")]
    armed::pass(name)?;
    let _ = name;
    Ok(())
}

/// Writes `buf` to `out` at the fault point `name` (one `write` call, as `Write::write`).
#[inline(always)]
pub fn write(name: &'static str, out: &mut impl Write, buf: &[u8]) -> io::Result<usize> {
    #[cfg(feature = "faults")]
    if let Err(e) = armed::pass(name) {
        if e.raw_os_error() == Some(libc::ENOSPC) {
            out.write_all(&buf[..buf.len() / 2])?;
        }
        return Err(e);
    }
    let _ = name;
    out.write(buf)
}

#[cfg(feature = "faults")]
mod armed {
    use std::collections::HashMap;
    use std::io::{self, Write};
    use std::sync::{Mutex, OnceLock};

    #[derive(Clone, Copy)]
    enum Action {
        Eio,
        Enospc,
        Crash,
    }

    struct Armed {
        /// point -> (the pass it fires on, what it does)
        faults: HashMap<String, (u32, Action)>,
        passes: HashMap<&'static str, u32>,
        trace: Option<std::fs::File>,
    }

    fn state() -> &'static Mutex<Armed> {
        static STATE: OnceLock<Mutex<Armed>> = OnceLock::new();
        STATE.get_or_init(|| {
            let faults = std::env::var("BATON_FAULTS")
                .unwrap_or_default()
                .split(',')
                .filter(|s| !s.trim().is_empty())
                .map(parse)
                .collect();
            let trace = std::env::var_os("BATON_FAULTS_TRACE").map(|path| {
                std::fs::File::options()
                    .create(true)
                    .append(true)
                    .open(&path)
                    .unwrap_or_else(|e| panic!("BATON_FAULTS_TRACE {path:?}: {e}"))
            });
            Mutex::new(Armed {
                faults,
                passes: HashMap::new(),
                trace,
            })
        })
    }

    /// `POINT[@N]=ACTION`; a malformed entry stops the process, since a test that believes it
    /// armed a fault it did not would pass for the wrong reason.
    fn parse(entry: &str) -> (String, (u32, Action)) {
        fn bad<T>(entry: &str) -> T {
            panic!("BATON_FAULTS: cannot read {entry:?} (POINT[@N]=eio|enospc|crash)")
        }
        let (point, action) = entry.trim().split_once('=').unwrap_or_else(|| bad(entry));
        let (point, nth) = match point.split_once('@') {
            Some((point, n)) => (point, n.parse().unwrap_or_else(|_| bad(entry))),
            None => (point, 1),
        };
        let action = match action {
            "eio" => Action::Eio,
            "enospc" => Action::Enospc,
            "crash" => Action::Crash,
            _ => bad(entry),
        };
        (point.to_string(), (nth, action))
    }

    pub(super) fn pass(name: &'static str) -> io::Result<()> {
        let action = {
            let mut armed = state().lock().unwrap_or_else(|e| e.into_inner());
            let armed = &mut *armed;
            let n = armed.passes.entry(name).or_default();
            *n += 1;
            let n = *n;
            if let Some(trace) = &mut armed.trace {
                let _ = trace.write_all(format!("{name}\n").as_bytes());
            }
            match armed.faults.get(name) {
                Some(&(nth, action)) if nth == n => action,
                _ => return Ok(()),
            }
        };
        match action {
            Action::Eio => Err(io::Error::from_raw_os_error(libc::EIO)),
            Action::Enospc => Err(io::Error::from_raw_os_error(libc::ENOSPC)),
            Action::Crash => {
                // SAFETY: kill and getpid have no preconditions.
                unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
                unreachable!("SIGKILL did not stop the process")
            }
        }
    }
}
