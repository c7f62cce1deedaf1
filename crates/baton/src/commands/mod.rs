//! One module per command group, one file per command: an `Args` struct and a `cmd_` function.

pub mod batch;
pub mod completions;
pub mod continue_cmd;
pub mod demo;
pub mod doctor;
pub mod gate;
pub mod goal;
pub mod guard;
pub mod hook;
pub mod init;
pub mod ledger;
pub mod log;
pub mod man;
pub mod pause;
pub mod resume;
pub mod run;
pub mod schema;
pub mod status;
#[cfg(feature = "postgres")]
pub mod store;
pub mod supervise;
pub mod ticket_loop;
pub mod verdict;
pub mod wait;
pub mod window;
