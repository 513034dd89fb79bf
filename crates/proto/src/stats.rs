//! What a connection reports about itself: the numbers the seeds ask to
//! measure (RTT, window, losses, ECN marks) and counts of every packet it
//! refused.

use crate::congestion::EcnCounts;
use crate::ecn_validation::EcnState;
use brisk_wire::Ecn;
use std::time::Duration;

/// Datagrams or packets dropped on receipt, by reason. None of them
/// changes connection state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DropStats {
    /// Could not be parsed (bad header, bad lengths, reserved bits).
    pub malformed: u64,
    /// Failed authentication (tampered, or not from the peer).
    pub unauthenticated: u64,
    /// A packet number already received: duplicated or replayed.
    pub duplicate: u64,
    /// Arrived before the keys to open it existed.
    pub undecryptable: u64,
    /// A handshake message the Noise state machine rejected.
    pub bad_handshake: u64,
    /// Arrived after the connection closed, or is of no use in its state.
    pub unexpected: u64,
}

impl DropStats {
    /// All drops together.
    pub fn total(&self) -> u64 {
        self.malformed
            + self.unauthenticated
            + self.duplicate
            + self.undecryptable
            + self.bad_handshake
            + self.unexpected
    }
}

/// How the sender kept to the pacer's schedule: a driver wakes for a
/// release time a little late (a timer's slack, a thread waiting for a
/// core), and the pacer counts that lateness and credits it back, up to
/// a millisecond per packet, so the next packet keeps the schedule.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PacingStats {
    /// Packets that waited for a release time the pacer gave.
    pub waits: u64,
    /// Of those, packets sent after that release time.
    pub late_sends: u64,
    /// Their lateness summed.
    pub late_total: Duration,
    /// The largest lateness.
    pub late_max: Duration,
    /// Lateness credited back to the schedule (bounded per packet).
    pub credited: Duration,
}

/// A connection's counters and path estimates at one moment
/// ([`crate::Connection::stats`]); counters start at zero and only grow.
#[derive(Debug, Clone, PartialEq)]
pub struct ConnectionStats {
    /// Smoothed RTT (RFC 9002 §5.3).
    pub smoothed_rtt: Duration,
    /// Smallest RTT sample seen.
    pub min_rtt: Duration,
    /// The most recent RTT sample.
    pub latest_rtt: Duration,
    /// RTT variation (RFC 9002 §5.3).
    pub rttvar: Duration,
    /// Congestion window in bytes.
    pub cwnd_bytes: u64,
    /// Slow-start threshold in bytes; `None` until the first reduction.
    pub ssthresh_bytes: Option<u64>,
    /// Bytes sent and neither acknowledged nor declared lost.
    pub bytes_in_flight: u64,
    /// The pacer's current rate in bits per second.
    pub pacing_rate_bps: u64,
    /// What the controller means to send per smoothed RTT, before the
    /// pacer's headroom: the window for window-based controllers, the
    /// bandwidth estimate times the RTT for BBR (whose window is twice
    /// that). An application sizing its output to the path reads this.
    pub pacing_window_bytes: u64,
    /// Sends that waited for the pacer, and how late they left.
    pub pacing: PacingStats,
    /// UDP datagrams and their payload bytes.
    pub datagrams_sent: u64,
    /// UDP payload bytes sent.
    pub bytes_sent: u64,
    /// UDP datagrams received (including dropped ones).
    pub datagrams_received: u64,
    /// UDP payload bytes received.
    pub bytes_received: u64,
    /// 1-RTT packets.
    pub packets_sent: u64,
    /// 1-RTT packets received and authenticated.
    pub packets_received: u64,
    /// 1-RTT packets declared lost.
    pub packets_lost: u64,
    /// Bytes of the packets declared lost.
    pub bytes_lost: u64,
    /// Packets that carried stream data sent before, and those bytes.
    pub packets_retransmitted: u64,
    /// Stream bytes sent again after a loss.
    pub stream_bytes_retransmitted: u64,
    /// New stream bytes sent, and stream bytes received (each once).
    pub stream_bytes_sent: u64,
    /// Stream bytes received, each counted once.
    pub stream_bytes_received: u64,
    /// Losses declared and later shown to be reordering.
    pub spurious_losses: u64,
    /// Probe timeouts fired, and probe packets sent for them.
    pub ptos: u64,
    /// Probe packets sent for them.
    pub probes_sent: u64,
    /// Second copies of a handshake message sent right behind its first
    /// transmission because the connection asked for FEC (see
    /// `connection/handshake_copy.rs`).
    pub handshake_copies_sent: u64,
    /// Times the congestion window was reduced (loss or CE).
    pub congestion_events: u64,
    /// Packets that carried an ACK frame.
    pub ack_frames_sent: u64,
    /// ACK_FREQUENCY frames sent: how often we changed the ACK rate we ask
    /// of the peer (repeats of lost ones included).
    pub ack_frequency_sent: u64,
    /// Times RFC 9002 §7.6 persistent congestion collapsed the window.
    pub persistent_congestion_events: u64,
    /// Our 1-RTT packets per codepoint sent.
    pub ecn_sent: EcnCounts,
    /// The peer's latest cumulative counts: what it received from us.
    pub ecn_echoed: EcnCounts,
    /// Codepoints on the 1-RTT packets we received.
    pub ecn_received: EcnCounts,
    /// Where ECN validation stands for this path.
    pub ecn_state: EcnState,
    /// The codepoint the next packet would carry.
    pub ecn_codepoint: Ecn,
    /// Early data: bytes sent in the first flight (client), or received
    /// and delivered from it (server).
    pub early_data_sent_bytes: u64,
    /// Early-data bytes received and delivered (server).
    pub early_data_received_bytes: u64,
    /// Address changes: the peer's (NAT rebinding or a new network), and
    /// at a client its own moves (`Connection::migrate`).
    pub migrations: u64,
    /// New paths whose PATH_CHALLENGE the peer answered.
    pub paths_validated: u64,
    /// New paths given up on: the challenge went unanswered for three
    /// probe timeouts, or a packet from the old path showed the new
    /// address was a spoofed copy.
    pub path_validations_failed: u64,
    /// Stalls of the path in use reported to the driver
    /// (`TransportConfig::failover`): a probe timeout with data in flight,
    /// or a path moved to that never answered its challenge.
    pub path_stalls: u64,
    /// Moves of the peer to another network after our path to it fell
    /// silent (a probe timeout fired): what was in flight toward the old
    /// address was sent again at once on the new path.
    pub peer_failovers: u64,
    /// The server held back sending because of the 3x amplification limit.
    pub amplification_blocked: u64,
    /// Forward error correction: packets that carried a repair symbol
    /// (overhead the receiver gets no new data from).
    pub repair_packets_sent: u64,
    /// Bytes of those packets.
    pub repair_bytes_sent: u64,
    /// Packets this side rebuilt from the peer's repair instead of waiting
    /// for their retransmission.
    pub packets_rebuilt: u64,
    /// Unreliable datagrams (the application's, not UDP's): sent,
    /// received, and dropped by deadline or queue bound.
    pub app_datagrams: crate::datagrams::DatagramStats,
    /// Path MTU discovery: the datagram size in use and the probes spent
    /// finding it.
    pub pmtu: crate::pmtu::PmtuStats,
    /// Packets dropped on receipt, by reason.
    pub dropped: DropStats,
}
