//! Errors as users see them: what went wrong (naming the file or argument), the fix, what it
//! was met on the way to, and the exit status of the contract. The operations' errors
//! (`baton_ops::OpError`) say what kind of failure they are; the status each kind ends a
//! command with is decided here, once.

use baton_ops::{Kind, OpError};
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

    /// The status an operation's failure of `kind` ends its command with.
    pub fn of_kind(kind: Kind) -> ExitStatus {
        match kind {
            Kind::Broken => ExitStatus::Failure,
            Kind::Invalid => ExitStatus::Usage,
            Kind::Refused => ExitStatus::Refused,
            Kind::AskHuman => ExitStatus::AskHuman,
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

/// A command's error, as printed: `error:` with the message, a `caused by:` line per cause,
/// then a `hint:` line per fix.
#[derive(Debug)]
pub struct CommandError {
    pub status: ExitStatus,
    pub message: String,
    pub hints: Vec<String>,
    /// What the error was met on the way to, nearest first.
    pub causes: Vec<String>,
}

impl CommandError {
    pub fn new(status: ExitStatus, message: impl Into<String>) -> CommandError {
        CommandError {
            status,
            message: message.into(),
            hints: Vec::new(),
            causes: Vec::new(),
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

impl From<OpError> for CommandError {
    fn from(err: OpError) -> CommandError {
        CommandError {
            status: ExitStatus::of_kind(err.kind),
            causes: err.causes(),
            message: err.message,
            hints: err.hints,
        }
    }
}

impl From<StoreError> for CommandError {
    fn from(err: StoreError) -> CommandError {
        OpError::from(err).into()
    }
}

impl From<LayoutError> for CommandError {
    fn from(err: LayoutError) -> CommandError {
        OpError::from(err).into()
    }
}
