//! The guard of a shared checkout (SPEC section 10): the git commands an agent is about to run,
//! read from its command line with a shell's own grammar, and the ones that would destroy or
//! move another live session's work.

pub mod git;
pub mod shell;
