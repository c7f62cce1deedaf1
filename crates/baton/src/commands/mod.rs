//! One module per command group, one file per command: an `Args` struct and a `cmd_` function.

pub mod batch;
pub mod demo;
pub mod gate;
pub mod ledger;
pub mod resume;
pub mod run;
pub mod schema;
pub mod ticket_loop;
