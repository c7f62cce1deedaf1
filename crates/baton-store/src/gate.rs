//! Running a declared exit gate: the plan's own command through `sh -c`, with a timeout, its
//! output captured so that the evidence is verbatim. Ids and paths from baton reach it only as
//! environment variables, never spliced into the command.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::StoreError;

#[derive(Debug, Clone, PartialEq)]
pub struct GateRun {
    /// `None` when it was killed by a signal or the timeout.
    pub exit: Option<i32>,
    pub timed_out: bool,
    /// The last non-empty line of its output (stdout and stderr together).
    pub last_line: String,
    pub seconds: f64,
}

impl GateRun {
    /// How the gate ended: `exit <code>`, `timed out after <N>s` or `killed by a signal`.
    pub fn status_text(&self, timeout: Duration) -> String {
        match (self.timed_out, self.exit) {
            (true, _) => format!("timed out after {}s", timeout.as_secs()),
            (false, Some(code)) => format!("exit {code}"),
            (false, None) => "killed by a signal".into(),
        }
    }

    /// `exit 0: <last line>`, as the evidence's result.
    pub fn result_text(&self, timeout: Duration) -> String {
        let status = self.status_text(timeout);
        if self.last_line.is_empty() {
            status
        } else {
            format!("{status}: {}", self.last_line)
        }
    }
}

/// Runs `command` with `sh -c` in `cwd`, with `env` added, killing its whole process group at
/// the timeout.
pub fn run_gate(
    command: &str,
    cwd: &Path,
    env: &[(&str, &str)],
    timeout: Duration,
) -> Result<GateRun, StoreError> {
    let out = tempfile_in_tmp()?;
    let err_handle = out
        .try_clone()
        .map_err(StoreError::io("open", "gate output"))?;
    let start = Instant::now();
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(cwd)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(
            out.try_clone()
                .map_err(StoreError::io("open", "gate output"))?,
        )
        .stderr(err_handle)
        .process_group(0)
        .spawn()
        .map_err(StoreError::io("start sh for", cwd))?;
    let mut timed_out = false;
    let status = loop {
        if let Some(status) = child.try_wait().map_err(StoreError::io("wait for", cwd))? {
            break Some(status);
        }
        if start.elapsed() >= timeout {
            timed_out = true;
            // SAFETY: kill has no memory preconditions; the negative pid names the gate's group.
            unsafe {
                libc::kill(-(child.id() as i32), libc::SIGKILL);
            }
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    // The last line is at the end: read the tail, and decode it lossily so that one bad byte
    // in the output does not lose the evidence.
    let mut reader = out;
    use std::io::Seek;
    let len = reader.seek(std::io::SeekFrom::End(0)).unwrap_or(0);
    let _ = reader.seek(std::io::SeekFrom::Start(len.saturating_sub(64 * 1024)));
    let mut tail = Vec::new();
    let _ = reader.read_to_end(&mut tail);
    let text = String::from_utf8_lossy(&tail);
    let last_line = text
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or_default();
    // Evidence is one line of text: keep it short, and escape control bytes (a terminal colour,
    // a NUL) so that STATE.md stays a text file that git diffs and merges by line.
    let last_line: String =
        baton_core::text::esc(&last_line.chars().take(200).collect::<String>()).into_owned();
    Ok(GateRun {
        exit: status.and_then(|s| s.code()),
        timed_out,
        last_line,
        seconds: start.elapsed().as_secs_f64(),
    })
}

fn tempfile_in_tmp() -> Result<std::fs::File, StoreError> {
    let dir = std::env::temp_dir();
    let path = dir.join(format!(
        "baton-gate-{}-{}",
        std::process::id(),
        crate::random_hex(4)
    ));
    let file = std::fs::File::options()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)
        .map_err(StoreError::io("create", &path))?;
    let _ = std::fs::remove_file(&path);
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gate_reports_its_exit_and_last_line() {
        let dir = tempfile::tempdir().unwrap();
        let run = run_gate(
            "echo first; echo \"id=$BATON_PHASE\" >&2; exit 3",
            dir.path(),
            &[("BATON_PHASE", "2")],
            Duration::from_secs(10),
        )
        .unwrap();
        assert_eq!(
            (run.exit, run.timed_out, run.last_line.as_str()),
            (Some(3), false, "id=2")
        );
        assert_eq!(run.result_text(Duration::from_secs(10)), "exit 3: id=2");
    }

    #[test]
    fn the_last_line_survives_long_and_invalid_output() {
        let dir = tempfile::tempdir().unwrap();
        let run = run_gate(
            "seq 1 300000; printf 'ok\\377\\nlast line\\n'",
            dir.path(),
            &[],
            Duration::from_secs(30),
        )
        .unwrap();
        assert_eq!(run.last_line, "last line");
    }

    #[test]
    fn a_gate_past_its_timeout_is_killed_with_its_children() {
        let dir = tempfile::tempdir().unwrap();
        let run = run_gate(
            "sleep 30 & sleep 30",
            dir.path(),
            &[],
            Duration::from_millis(200),
        )
        .unwrap();
        assert!(run.timed_out);
        assert!(run.seconds < 5.0);
        assert_eq!(
            run.result_text(Duration::from_secs(1)),
            "timed out after 1s"
        );
    }
}
