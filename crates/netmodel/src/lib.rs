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
//! units ("10Mbit", "20ms") for configuration files; [`bottleneck`] both
//! directions of a link as the simulator, the live router and the
//! transport's test harness drive them, with per-flow accounting
//! ([`FlowMetrics`]) and result summaries (a whole run's in [`RunResults`]); [`direction`] down and up;
//! [`network`] the network half of a scenario file; [`family`] IPv4 or
//! IPv6.

#![deny(unsafe_code)]
#![warn(missing_docs, unreachable_pub)]

pub mod bottleneck;
pub mod direction;
pub mod family;
pub mod link;
pub mod network;
pub mod packet;
pub mod queue;
pub mod units;

pub use bottleneck::flow_metrics::FlowMetrics;
pub use bottleneck::flow_results::{FlowEnds, FlowLabel, FlowResults};
pub use bottleneck::run_results::RunResults;
pub use bottleneck::summary::{LinkResults, QueueResults};
pub use bottleneck::{Bottleneck, BottleneckOutput, FlowLedger};
pub use direction::Direction;
pub use family::IpFamily;
pub use link::{Link, LinkConfig, LinkEvent, LinkStats, LossCause, MtuChange, RateModel};
pub use network::{Network, NetworkError};
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
