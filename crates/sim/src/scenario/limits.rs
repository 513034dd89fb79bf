//! The bounds a scenario is held to, and why each exists.

use std::time::Duration;

/// Why a `udp_prague` flow cannot run in a build without the feature.
pub const REFERENCE_NOT_BUILT: &str = "kind \"udp_prague\" (the reference UDP Prague \
     controller) is not in this build: its crate includes GPL-2.0-only code, so it is \
     built only with the reference-prague feature; rebuild with \
     `--features brisk-sim/reference-prague` (for the lab: \
     `--features brisk-lab/reference-prague`)";

/// Feed objects are fetched on streams the receiver opens, within the
/// transport's default limit on concurrent streams.
pub const MAX_FEED_OBJECTS: usize = 100;
/// More handshake round trips than any real stack needs is a typo.
pub const MAX_SETUP_ROUND_TRIPS: u32 = 10;
/// The smallest message: its header (length, sequence number, time).
pub const MIN_MESSAGE_BYTES: u64 = 20;
/// The largest message.
pub const MAX_MESSAGE_BYTES: u64 = 16_000_000;
/// The largest frame rate of a video call.
pub const MAX_FPS: u32 = 240;
/// The largest IP datagram a built-in source sends.
pub const MAX_DATAGRAM_BYTES: u64 = 65_000;
/// The longest run: the simulator keeps per-flow series for the whole
/// run, so memory grows with virtual time; a day of it is already far
/// beyond any experiment here (they run seconds to minutes).
pub const MAX_RUN_DURATION: Duration = Duration::from_secs(24 * 3600);
/// The most flows in one run: each has its own pair of hosts, metrics and
/// series (about 0.4 MB apiece).
pub const MAX_FLOWS: usize = 1000;
/// The most datagrams the built-in sources (cbr, on_off, ping) may send
/// in one run, all flows together: each is an event the engine handles,
/// and a rate typed with a wrong unit would otherwise run for hours.
pub const MAX_SOURCE_PACKETS: u64 = 100_000_000;
/// The range of a live stream's fixed encoder rate, in bit/s: a key
/// frame at 100 Mbit/s is already about 3 MB.
pub const MIN_STREAM_BPS: u64 = 100_000;
pub const MAX_STREAM_BPS: u64 = 100_000_000;
