//! Operations several commands (and, later, the hooks) share, between the commands and the core
//! and store: a command is parse -> action -> print.

pub mod batch;
pub mod ledgers;
pub mod loops;
pub mod owned;
pub mod project;
pub mod run_facts;
pub mod runs;
pub mod survey;
