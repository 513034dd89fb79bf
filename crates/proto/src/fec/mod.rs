//! Forward error correction (docs/PROTOCOL.md §6.6): repair symbols that
//! let a receiver rebuild lost 1-RTT packets without waiting a round trip
//! for a retransmission.
//!
//! A sender groups consecutive 1-RTT packets into a *block* (their
//! decrypted payloads are the source symbols), and after the block sends
//! REPAIR frames, each in a packet of its own, holding Reed-Solomon repair
//! symbols over it. A receiver that lost up to as many of the block's
//! packets as it got repair symbols rebuilds their payloads, processes
//! their frames and acknowledges them as received, so nothing it rebuilt
//! is retransmitted. It then reports what it rebuilt in a REPAIRED frame,
//! and the sender's congestion controller takes those packets as lost:
//! repair saves the round trip, never the congestion response.
//!
//! Files: [`codec`] the erasure code (source shards, encode, decode);
//! `estimator` the loss rate and burst length the repair count follows;
//! `sender` blocks and repair symbols; `receiver` kept payloads and
//! decoding.

pub mod codec;
mod estimator;
mod receiver;
mod sender;

pub(crate) use receiver::FecReceiver;
pub(crate) use sender::FecSender;

/// How much repair a stream's data gets, set by the application per stream
/// (`Connection::set_stream_fec`) or for all streams in [`FecConfig`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FecPolicy {
    /// No repair: bulk data whose losses cost only goodput.
    Off,
    /// Repair at the measured loss rate and burst length: none on a clean
    /// path, more as losses show up.
    #[default]
    Adaptive,
    /// At least one repair symbol per block, and repair even before any
    /// loss was measured (a fresh connection assumes [`ON_LOSS_FLOOR`],
    /// an assumption that fades as packets are measured): requests and
    /// small objects, where one round trip costs more than the repair
    /// bytes.
    On,
}

/// The loss rate data sent under `policy` is protected against at least:
/// `None` for no protection, zero for repair at the measured rate only.
pub(crate) fn policy_floor(policy: FecPolicy) -> Option<f64> {
    match policy {
        FecPolicy::Off => None,
        FecPolicy::Adaptive => Some(0.0),
        FecPolicy::On => Some(ON_LOSS_FLOOR),
    }
}

/// The loss rate an [`FecPolicy::On`] stream is protected against on a
/// fresh connection (2%, a mobile network's common range is 1 to 5%);
/// it counts as [`ON_PRIOR_PACKETS`] packets of history, so a clean path
/// soon outweighs it while a lossy one raises the estimate at once.
pub const ON_LOSS_FLOOR: f64 = 0.05;

/// See [`ON_LOSS_FLOOR`].
pub const ON_PRIOR_PACKETS: f64 = 500.0;

/// FEC knobs of one connection.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FecConfig {
    /// Announce the FEC transport parameter; repair flows only when both
    /// sides did, so a peer without it never sees a REPAIR frame.
    pub enabled: bool,
    /// The policy of streams the application set none for.
    pub default_policy: FecPolicy,
    /// Source packets in a block at most: larger blocks cost fewer repair
    /// symbols per loss, smaller ones repair sooner.
    pub max_block_packets: usize,
    /// The chance a block of an [`FecPolicy::On`] stream may be left
    /// unrepairable, at the measured loss rate, that its repair count is
    /// chosen for: small, as each such block costs a round trip.
    pub target_block_failure: f64,
    /// The same for [`FecPolicy::Adaptive`]: larger, as bulk data pays for
    /// repair in goodput and a block left to retransmission costs it
    /// little.
    pub adaptive_block_failure: f64,
    /// Send each handshake message twice while FEC is enabled (see
    /// `connection/handshake_copy.rs`): a lost handshake packet otherwise
    /// costs the one-second initial timeout, since repair protects only
    /// 1-RTT packets.
    pub handshake_copies: bool,
}

impl Default for FecConfig {
    fn default() -> Self {
        FecConfig {
            enabled: false,
            default_policy: FecPolicy::Adaptive,
            max_block_packets: 32,
            target_block_failure: 0.01,
            adaptive_block_failure: 0.2,
            handshake_copies: true,
        }
    }
}
