//! The plan ledger (`plans/<plan>/STATE.md`): its event grammar, a parser that keeps what it
//! cannot read, and a writer whose every line parses back to the same event.

mod derive;
pub mod gates;
mod grammar;

pub use derive::{
    DeriveFacts, Derived, PhaseFacts, PhaseRow, PhaseVerdict, decide_ledger, phase_claims,
};
pub use grammar::{
    Event, FinishOutcome, Ledger, Line, ParseError, Review, parse_header, parse_ledger, parse_line,
    render_header, render_line,
};
