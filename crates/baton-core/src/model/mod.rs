//! The files baton reads and writes, in the originating projects' own field names.
//!
//! Every struct keeps the fields it does not know in `extra`, so a rewrite by baton never drops
//! what another tool (or a newer baton) put there.

mod batch_state;
mod interrupt;
mod loop_state;
mod pause;
mod run_state;

pub use batch_state::{BatchState, BatchStatus, BatchTicket, TICKET_STATUSES, replan_entry};
pub use interrupt::InterruptReason;
pub use loop_state::{
    DiscardedWork, LoopProgress, LoopState, LoopStatus, OPEN_FINDING, Phase, PromotionTier,
};
pub use pause::{FeatureInterrupt, PauseMark, Pauses};
pub use run_state::{
    AlignmentRecord, Completion, Lease, PlanRecord, RunPolicy, RunState, RunStatus, SectionRecord,
    StepRecord,
};

/// The newest `schema_version` this build reads and writes.
pub const SCHEMA_VERSION: u32 = 1;

pub(crate) fn schema_v1() -> u32 {
    SCHEMA_VERSION
}

/// Reads `null` as the default, so a file written by a tool that nulls its counters (for
/// example `"max_iterations": null`) still parses.
pub(crate) fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + serde::Deserialize<'de>,
{
    Ok(<Option<T> as serde::Deserialize>::deserialize(d)?.unwrap_or_default())
}
