//! The fuzz targets of baton, one function per target, each taking the fuzzer's bytes.
//!
//! Every target feeds the bytes to the parser the binary uses on that input and asserts what
//! must hold of whatever comes out: a value baton writes reads back as the same value, a
//! decision over a parsed state returns rather than panics, an id that reaches a path stays
//! inside the safe alphabet. A failed assertion is a panic, which the fuzzer reports as a crash.
//!
//! `fuzz/` at the repository root wraps each function in a libFuzzer target (nightly), and
//! `tests/corpus.rs` replays the committed corpus through the same functions on stable.

mod feature;
mod gates;
mod hook_stdin;
mod ids;
mod ledger;
mod state_json;
mod transcript;

pub use feature::feature;
pub use gates::gates;
pub use hook_stdin::hook_stdin;
pub use ids::ids;
pub use ledger::ledger;
pub use state_json::state_json;
pub use transcript::transcript;

/// A fuzz target: the fuzzer's bytes in, a panic when a property fails.
pub type Target = fn(&[u8]);

/// Every target by name, as `fuzz/fuzz_targets/<name>.rs` and `fuzz/corpus/<name>/` name it.
pub const TARGETS: [(&str, Target); 7] = [
    ("state_json", state_json),
    ("ledger", ledger),
    ("gates", gates),
    ("ids", ids),
    ("hook_stdin", hook_stdin),
    ("transcript", transcript),
    ("feature", feature),
];

/// The first byte picks a variant of a target (which state file, which client); the rest is the
/// input. Empty input picks variant 0 with no bytes.
fn split_selector(data: &[u8], variants: u8) -> (u8, &[u8]) {
    match data.split_first() {
        Some((first, rest)) => (first % variants, rest),
        None => (0, data),
    }
}

/// The times decisions are asked at: one inside any plausible state's life, and the ends of
/// the range a state's times may hold, where arithmetic on them overflows if it is careless.
fn nows() -> [jiff::Timestamp; 3] {
    [
        jiff::Timestamp::from_second(1_772_366_400).expect("2026-03-01T12:00:00Z"),
        jiff::Timestamp::MIN,
        jiff::Timestamp::MAX,
    ]
}
