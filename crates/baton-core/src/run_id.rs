//! Run ids of the single-run protocol. An id passes this allowlist before it touches a path.

use std::fmt;

/// A validated single-run id: 16 lowercase hex digits (8 random bytes), or the legacy
/// `YYYYMMDD-HHMMSS` form.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RunId(String);

/// What a `--resume <id>` argument names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunTarget {
    Run(RunId),
    /// `batch-*`: the batch resume of the ticket loop.
    Batch(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidRunId(pub String);

impl fmt::Display for InvalidRunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?} is not a run id: expected 16 lowercase hex digits (like `3f9a0c1d2b4e5f60`), a legacy `YYYYMMDD-HHMMSS`, or `batch-<id>`",
            self.0
        )
    }
}

impl RunId {
    pub fn parse(raw: &str) -> Result<RunId, InvalidRunId> {
        let b = raw.as_bytes();
        let modern = b.len() == 16
            && b.iter()
                .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c));
        let legacy =
            b.len() == 15 && b[8] == b'-' && b[..8].iter().chain(&b[9..]).all(u8::is_ascii_digit);
        if modern || legacy {
            Ok(RunId(raw.to_string()))
        } else {
            Err(InvalidRunId(raw.to_string()))
        }
    }

    /// A new id from 8 random bytes.
    pub fn from_bytes(bytes: [u8; 8]) -> RunId {
        RunId(bytes.iter().map(|b| format!("{b:02x}")).collect())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl RunTarget {
    /// A run id, or a batch id: the originating `batch-<…>`, or what `baton batch start`
    /// writes, `<ticket-prefix>-batch-<stamp>-<hex>`. A batch id is only ever compared with the
    /// project's batch, never made into a path, but it keeps to a safe alphabet all the same.
    pub fn parse(raw: &str) -> Result<RunTarget, InvalidRunId> {
        let safe = !raw.is_empty()
            && raw.len() <= 200
            && raw
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(&b));
        let batch = raw.strip_prefix("batch-").is_some_and(|r| !r.is_empty())
            || raw
                .split_once("-batch-")
                .is_some_and(|(p, r)| !p.is_empty() && !r.is_empty());
        if batch && safe {
            return Ok(RunTarget::Batch(raw.to_string()));
        }
        RunId::parse(raw).map(RunTarget::Run)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_id_table() {
        let ok = ["0123456789abcdef", "ffffffffffffffff", "20260301-120000"];
        for raw in ok {
            assert!(RunId::parse(raw).is_ok(), "{raw}");
        }
        let bad = [
            "../../etc/passwd",
            "ABCDEF0123456789",
            "0123456789abcde",
            "0123456789abcdef0",
            "0123456789abcdeg",
            "2026030-1120000",
            "20260301_120000",
            "2026030112000",
            "",
            "batch-",
            "٠١٢٣٤٥٦٧-٠١٢٣٤٥",
            "0123456789abcdef\n",
        ];
        for raw in bad {
            assert!(RunTarget::parse(raw).is_err(), "{raw:?}");
        }
        assert_eq!(
            RunTarget::parse("batch-x"),
            Ok(RunTarget::Batch("batch-x".into()))
        );
        assert_eq!(
            RunTarget::parse("PROJ-batch-20261130T125419Z-6794"),
            Ok(RunTarget::Batch("PROJ-batch-20261130T125419Z-6794".into()))
        );
        assert_eq!(
            RunId::from_bytes([0, 1, 2, 3, 0xfa, 0xfb, 0xfc, 0xff]).as_str(),
            "00010203fafbfcff"
        );
    }

    proptest::proptest! {
        /// Whatever parses is a plain file-name component.
        #[test]
        fn parsed_ids_are_safe_path_components(raw in ".{0,40}") {
            if let Ok(id) = RunId::parse(&raw) {
                proptest::prop_assert!(id.as_str().bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'));
                proptest::prop_assert!(!id.as_str().starts_with('-'));
            }
        }
    }
}
