//! The imperative shell of baton: everything that touches the disk, the lock, the clock or git.
//! The commands gather facts here, hand them to `baton-core` for a decision, and carry the
//! decision out here.

pub mod append;
pub mod atomic;
pub mod breakers;
pub mod checkouts;
pub mod error;
pub mod faults;
pub mod feature;
pub mod gate;
pub mod git;
pub mod goals;
pub mod journal;
pub mod layout;
pub mod ledger;
pub mod local_zone;
pub mod lock;
pub mod outbox;
#[cfg(feature = "postgres")]
pub mod pg;
pub mod platform;
pub mod process;
pub mod read;
pub mod sessions;
pub mod store;
pub mod supervise;

pub use error::StoreError;
pub use journal::{Journal, JournalTarget};
pub use layout::{Layout, LockScope};
#[cfg(feature = "postgres")]
pub use pg::store::PgStore;
pub use store::{
    Expect, FileStore, Guard, MemStore, RecordKey, RecordKind, Revision, StateStore, Versioned,
};

/// The SHA-256 of `bytes`, as lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// `n` random bytes as lowercase hex, from the operating system's generator.
pub fn random_hex(n_bytes: usize) -> String {
    let mut buf = vec![0u8; n_bytes];
    // The OS generator failing is not something a CLI can recover from; fall back to the clock
    // and pid so that a key is still unlikely to collide.
    if getrandom::fill(&mut buf).is_err() {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default()
            ^ u128::from(std::process::id());
        for (i, b) in buf.iter_mut().enumerate() {
            *b = (seed >> ((i % 16) * 8)) as u8;
        }
    }
    buf.iter().map(|b| format!("{b:02x}")).collect()
}
