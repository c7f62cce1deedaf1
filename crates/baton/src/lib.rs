//! The `baton` command line: parses arguments, gathers facts through `baton-store`, asks
//! `baton-core` for decisions and prints them for people (text) or programs (`--json`).

mod args;
mod cli;
mod commands;
mod environment;
mod error;
mod output;
mod view;

pub use cli::run;
