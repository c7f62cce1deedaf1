//! Operations the hooks and `supervise` share that are not yet in `baton-ops`.

pub mod owned;
