//! Every operation of baton, between the commands (and hook adapters, and the supervisor) and
//! the core and store: a command is parse -> operation -> render, a hook adapter is payload ->
//! operation -> the client's output shape. Nothing here parses a command line or prints.
//!
//! The environment an operation runs in (`env::Ctx`: the directory, the session, the clock,
//! the lock wait, the store) is resolved once at the edge and handed down.

pub mod batch;
pub mod completion;
pub mod continuation;
pub mod env;
pub mod error;
pub mod evidence;
pub mod forward;
pub mod guard;
pub mod install;
pub mod journal;
pub mod judge;
pub mod ledgers;
pub mod loops;
pub mod owned;
pub mod project;
pub mod run_facts;
pub mod runs;
pub mod single_run;
#[cfg(feature = "postgres")]
pub mod store_transfer;
pub mod survey;
pub mod ticket_loop;

pub use env::Ctx;
pub use error::{Kind, OpError};
pub mod window;
