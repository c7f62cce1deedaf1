//! The pure core of baton: the shapes of the state files and every decision the four resume
//! protocols make, as functions of facts. Nothing here touches a disk, a clock, a process or
//! the environment; the shell in `baton-store` gathers the facts and carries out the verdicts.

pub mod breaker;
pub mod client;
pub mod decide;
pub mod feature;
pub mod glob;
pub mod guard;
pub mod hook;
pub mod install;
pub mod journal;
pub mod judge;
pub mod key;
pub mod ledger;
pub mod model;
pub mod packet;
pub mod reset;
pub mod rules;
pub mod run_id;
pub mod sections;
pub mod text;
pub mod time;
pub mod timeline;

pub use decide::{Decision, Exit, Reason, Verdict};
pub use rules::Rule;
