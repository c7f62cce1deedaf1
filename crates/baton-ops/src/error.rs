//! The operations' errors: what went wrong (naming the file or argument), the fix, what kind of
//! failure it is, and what caused it. Which exit status a kind ends a command with is the
//! binary's business (`baton::error`), not the operations'.

use baton_store::StoreError;
use baton_store::layout::LayoutError;

/// What kind of failure an operation met.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// I/O, a corrupt or unsupported file, an internal error: the operation could not be done.
    Broken,
    /// The input was invalid: an argument, a setting, a file baton was pointed at.
    Invalid,
    /// Refused by a gate: a lock another process holds, a record another writer changed, a
    /// live owner.
    Refused,
    /// A human must decide first.
    AskHuman,
}

/// An operation's error.
#[derive(Debug)]
pub struct OpError {
    pub kind: Kind,
    pub message: String,
    /// The fixes, each a sentence a person or an agent can act on.
    pub hints: Vec<String>,
    /// The error this one was met on the way to (`OpError::context`), if any, its hints
    /// moved to this one or dropped.
    pub cause: Option<Box<OpError>>,
}

impl OpError {
    pub fn new(kind: Kind, message: impl Into<String>) -> OpError {
        OpError {
            kind,
            message: message.into(),
            hints: Vec::new(),
            cause: None,
        }
    }

    /// Invalid input.
    pub fn usage(message: impl Into<String>) -> OpError {
        OpError::new(Kind::Invalid, message)
    }

    /// The operation could not be done.
    pub fn broken(message: impl Into<String>) -> OpError {
        OpError::new(Kind::Broken, message)
    }

    pub fn hint(mut self, hint: impl Into<String>) -> OpError {
        self.hints.push(hint.into());
        self
    }

    /// `cause` as what was met while doing `what`: the kind and hints of `cause`, a message that
    /// says what was being done, and `cause` kept whole as the first link of the chain.
    pub fn context(what: impl Into<String>, cause: impl Into<OpError>) -> OpError {
        let mut cause = cause.into();
        OpError {
            kind: cause.kind,
            message: what.into(),
            hints: std::mem::take(&mut cause.hints),
            cause: Some(Box::new(cause)),
        }
    }

    /// `self`, met on the way to `cause`: its own kind and hints, `cause`'s message (and chain)
    /// as the first link of the chain, `cause`'s hints dropped.
    pub fn caused_by(mut self, cause: impl Into<OpError>) -> OpError {
        let mut cause = cause.into();
        cause.hints.clear();
        self.cause = Some(Box::new(cause));
        self
    }

    /// The messages of the causes, nearest first.
    pub fn causes(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut next = self.cause.as_deref();
        while let Some(err) = next {
            out.push(err.message.clone());
            next = err.cause.as_deref();
        }
        out
    }
}

impl std::fmt::Display for OpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for OpError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.cause.as_deref().map(|c| c as _)
    }
}

impl From<StoreError> for OpError {
    fn from(err: StoreError) -> OpError {
        let hint = err.hint();
        // A lock another process will not let go of is a gate, not an I/O error, and so is a
        // record another writer changed since it was read (a retry may pass); a write over the
        // read cap is input baton refuses, not a broken file.
        let kind = match err {
            StoreError::LockBusy { .. } | StoreError::Conflict { .. } => Kind::Refused,
            StoreError::TooLargeToWrite { .. } => Kind::Invalid,
            _ => Kind::Broken,
        };
        OpError {
            kind,
            message: err.to_string(),
            hints: hint.into_iter().collect(),
            cause: None,
        }
    }
}

impl From<LayoutError> for OpError {
    fn from(err: LayoutError) -> OpError {
        match err {
            LayoutError::Store(e) => e.into(),
            LayoutError::NotARepo(_) => OpError::usage(err.to_string())
                .hint("run baton inside the project's git work tree, or pass `-C <DIR>`"),
            LayoutError::BadDir(..) => {
                OpError::usage(err.to_string()).hint("check the `-C` argument")
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
        let err = OpError::from(StoreError::Conflict {
            path: "loop-state-PROJ-1.json".into(),
            expected: "sha256:0123456789ab".into(),
            found: "sha256:ba9876543210".into(),
        });
        assert_eq!(err.kind, Kind::Refused);
        assert!(
            err.message.contains("nothing was written"),
            "{}",
            err.message
        );
        assert!(!err.hints.is_empty());
    }

    /// Context keeps what it wraps: its kind, its fix, and its message as the first cause.
    #[test]
    fn context_keeps_the_cause_chain() {
        let inner = OpError::context(
            "cannot read the project's settings",
            StoreError::Empty {
                path: ".baton.toml".into(),
            },
        );
        let outer = OpError::context("cannot open the store", inner);
        assert_eq!(outer.kind, Kind::Broken);
        assert_eq!(outer.message, "cannot open the store");
        assert_eq!(
            outer.causes(),
            vec![
                "cannot read the project's settings".to_string(),
                ".baton.toml is empty".to_string()
            ]
        );
    }
}
