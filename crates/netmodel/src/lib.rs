//! Network models: queue disciplines and link impairments.
//!
//! Layer: pure state machines driven by `(now, input) -> outputs`, with no
//! clock, socket or thread of their own. The simulator (`brisk-sim`) drives
//! them in virtual time; the live lab drives the very same code with packets
//! read from TUN devices. Everything random draws from a seeded RNG that the
//! caller provides, so a run is reproducible bit for bit.
//!
//! Modules: [`packet`] the unit that flows (a real IP datagram plus
//! bookkeeping); [`queue`] the [`Queue`] trait and its disciplines (FIFO,
//! CoDel, FQ-CoDel, PIE, DualPI2); [`link`] one direction of a link: a queue
//! drained at a rate, then propagation and impairments; [`units`] human
//! units ("10Mbit", "20ms") for configuration files.

pub mod link;
pub mod packet;
pub mod queue;
pub mod units;

pub use link::{Link, LinkConfig, LinkEvent, LinkStats, LossCause, RateModel};
pub use packet::Packet;
pub use queue::{DropReason, Queue, QueueEvent, QueueStats};

/// The one RNG type of all models: small, fast, and stable across platforms
/// and crate versions for a given seed.
pub type Rng = rand_chacha::ChaCha8Rng;

/// Builds a model RNG from a run seed and a per-component stream id, so that
/// adding a component never shifts the random draws of the others.
pub fn rng(seed: u64, stream: u64) -> Rng {
    use rand::SeedableRng;
    let mut r = Rng::seed_from_u64(seed);
    r.set_stream(stream);
    r
}
