//! Errors as users see them: what went wrong (naming the file or argument), the fix, and an
//! exit status from the contract.

use baton_store::StoreError;
use baton_store::layout::LayoutError;

/// The exit statuses of the contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// Done, including every query that computed a verdict.
    Success = 0,
    /// I/O, a corrupt or unsupported file, an internal error.
    Failure = 1,
    /// Invalid input or usage.
    Usage = 2,
    /// Refused by a gate.
    Refused = 3,
    /// A human must decide first.
    AskHuman = 4,
    /// Done, but what it printed could not be written (a full disk, a broken stdout): any change
    /// the command made is made. Never a `kind` a reader sees, since nothing could be printed.
    Unprinted = 5,
}

impl ExitStatus {
    /// The status a verdict ends its command with.
    pub fn of(verdict: baton_core::Verdict) -> ExitStatus {
        match verdict.exit() {
            baton_core::Exit::Success => ExitStatus::Success,
            baton_core::Exit::Usage => ExitStatus::Usage,
            baton_core::Exit::Refused => ExitStatus::Refused,
            baton_core::Exit::AskHuman => ExitStatus::AskHuman,
        }
    }

    pub fn kind(self) -> &'static str {
        match self {
            ExitStatus::Success => "ok",
            ExitStatus::Failure => "error",
            ExitStatus::Usage => "usage",
            ExitStatus::Refused => "refused",
            ExitStatus::AskHuman => "ask-human",
            ExitStatus::Unprinted => "unprinted",
        }
    }
}

#[derive(Debug)]
pub struct CommandError {
    pub status: ExitStatus,
    pub message: String,
    pub hints: Vec<String>,
}

impl CommandError {
    pub fn new(status: ExitStatus, message: impl Into<String>) -> CommandError {
        CommandError {
            status,
            message: message.into(),
            hints: Vec::new(),
        }
    }

    pub fn usage(message: impl Into<String>) -> CommandError {
        CommandError::new(ExitStatus::Usage, message)
    }

    pub fn hint(mut self, hint: impl Into<String>) -> CommandError {
        self.hints.push(hint.into());
        self
    }
}

impl From<StoreError> for CommandError {
    fn from(err: StoreError) -> CommandError {
        let hint = err.hint();
        // A lock another process will not let go of is a gate (exit 3), not an I/O error, and
        // so is a record another writer changed since it was read (a retry may pass); a write
        // over the read cap is input baton refuses (exit 2), not a broken file.
        let status = match err {
            StoreError::LockBusy { .. } | StoreError::Conflict { .. } => ExitStatus::Refused,
            StoreError::TooLargeToWrite { .. } => ExitStatus::Usage,
            _ => ExitStatus::Failure,
        };
        CommandError {
            status,
            message: err.to_string(),
            hints: hint.into_iter().collect(),
        }
    }
}

impl From<LayoutError> for CommandError {
    fn from(err: LayoutError) -> CommandError {
        match err {
            LayoutError::Store(e) => e.into(),
            LayoutError::NotARepo(_) => CommandError::usage(err.to_string())
                .hint("run baton inside the project's git work tree, or pass `-C <DIR>`"),
            LayoutError::BadDir(..) => {
                CommandError::usage(err.to_string()).hint("check the `-C` argument")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fenced write that lost its race is refused like a busy lock: nothing changed, and a
    /// retry after a fresh read may pass.
    #[test]
    fn a_conflict_is_a_refusal_with_its_fix() {
        let err = CommandError::from(StoreError::Conflict {
            path: "loop-state-PROJ-1.json".into(),
            expected: "sha256:0123456789ab".into(),
            found: "sha256:ba9876543210".into(),
        });
        assert_eq!(err.status, ExitStatus::Refused);
        assert!(
            err.message.contains("nothing was written"),
            "{}",
            err.message
        );
        assert!(!err.hints.is_empty());
    }
}
