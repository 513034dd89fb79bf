//! The results of a run, as `--json` prints them and `results.json` stores
//! them. Field names carry their units; see docs/SCENARIOS.md.

/// The bottleneck's own summaries, shared with the live lab.
pub use brisk_netmodel::{FlowLabel, LinkResults, QueueResults};
use brisk_trace::stats::Percentiles;
use serde::Serialize;

/// A flow's results: what the network measured of it, and for brisk
/// flows the transport's own report.
pub type FlowResults = brisk_netmodel::FlowResults<BriskResults>;

/// What a flow's ends report, for its [`FlowResults`].
pub type FlowEnds = brisk_netmodel::FlowEnds<BriskResults>;

/// A simulated run's results: the shape the live lab shares
/// ([`brisk_netmodel::RunResults`]), with brisk flows' transport reports
/// and the engine's counters.
pub type Results = brisk_netmodel::RunResults<BriskResults, Simulated>;

/// What the simulator adds to the shared results.
#[derive(Debug, Clone, Serialize)]
pub struct Simulated {
    pub engine: EngineResults,
}

/// The fields a brisk flow adds to its [`FlowResults`].
#[derive(Debug, Clone, Serialize)]
pub struct BriskResults {
    /// Bulk and feed: from the flow's start to the last byte read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completion_time_s: Option<f64>,
    /// Messages and video frames: from the sending application's write to
    /// the receiving application's read; feed: each object's fetch time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_latency_ms: Option<Percentiles>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frames: Option<FrameResults>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream: Option<StreamResults>,
    pub transport: TransportResults,
}

/// The video call at the receiver.
#[derive(Debug, Clone, Serialize)]
pub struct FrameResults {
    pub fps: u32,
    pub sent: u64,
    /// Capture instants the send path refused.
    pub skipped: u64,
    /// Frames the sender reset after the deadline.
    pub abandoned: u64,
    pub received: u64,
    /// Received whole within `deadline_ms` of capture.
    pub on_time: u64,
    pub deadline_ms: f64,
    /// Share of 100 ms windows with no frame on time.
    pub stall_fraction: f64,
    /// On-time frames per second over the call's whole seconds.
    pub fps_mean: f64,
    pub fps_min: f64,
    /// Share of those seconds below 25 frames per second.
    pub below_25_fps_fraction: f64,
}

/// A live stream as its viewer saw it, up to the end of the run.
#[derive(Debug, Clone, Serialize)]
pub struct StreamResults {
    pub fps: u32,
    /// The player's start-up and refill buffer.
    pub buffer_ms: f64,
    /// Frames the publisher captured, and those shown by the end.
    pub frames_sent: u64,
    pub frames_shown: u64,
    /// Frames passed over to get back to the live edge after a freeze.
    pub frames_skipped: u64,
    /// From the viewer joining (the flow's start) to the first frame on
    /// screen; absent if the buffer never filled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub startup_ms: Option<f64>,
    /// Capture to screen, over the frames shown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub glass_to_glass_ms: Option<Percentiles>,
    /// Share of the watching time (first frame to the end) spent frozen.
    pub rebuffering_ratio: f64,
    /// Freezes after start-up, and their total length.
    pub rebuffer_events: u64,
    pub rebuffering_s: f64,
    /// The bitrate of the video shown, over the video time it covers.
    pub delivered_mbps: f64,
    /// The encoder's mean rate over all frames.
    pub encoded_mbps: f64,
    /// Times the encoder changed rung.
    pub rung_switches: u64,
}

/// The sender's connection, from its own statistics.
#[derive(Debug, Clone, Serialize)]
pub struct TransportResults {
    pub cc: &'static str,
    pub app: &'static str,
    /// The handshake's duration (IK: one round trip).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handshake_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub srtt_ms: f64,
    pub min_rtt_ms: f64,
    /// At the end of the run.
    pub cwnd_bytes: u64,
    pub packets_sent: u64,
    pub packets_lost: u64,
    pub packets_retransmitted: u64,
    pub bytes_retransmitted: u64,
    pub spurious_losses: u64,
    pub ptos: u64,
    pub congestion_events: u64,
    /// ACK_FREQUENCY frames the sender sent: changes of the ACK rate it
    /// asked for.
    pub ack_frequency_sent: u64,
    /// UDP payload bytes the sender sent, all packets included.
    pub bytes_sent: u64,
    /// Forward error correction: packets that carried a repair symbol.
    pub repair_packets_sent: u64,
    /// Bytes of those packets (part of `bytes_sent`).
    pub repair_bytes_sent: u64,
    /// Packets the receiver rebuilt from repair instead of waiting for a
    /// retransmission.
    pub packets_rebuilt: u64,
    /// Unreliable datagrams the sender sent (each once), dropped unsent
    /// past their deadline, and the receiver took (video on datagrams).
    pub datagrams_sent: u64,
    pub datagrams_expired: u64,
    pub datagrams_received: u64,
    /// Packets the receiver sent with an ACK frame in them.
    pub receiver_acks: u64,
    /// CE marks the receiver echoed back.
    pub ce_echoed: u64,
    /// ECN validation: "testing", "capable" or "failed".
    pub ecn_state: String,
    /// The codepoint the sender ended with ("ect1", "ect0", "not_ect").
    pub ecn_codepoint: &'static str,
    /// Received bytes equal to the deterministic pattern at their offsets,
    /// and a stream read to its end lacks nothing (bulk) and hashes as
    /// it was written (messages).
    pub data_intact: bool,
    /// The sender's path MTU discovery, when it ran (a link has an `mtu`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path_mtu: Option<PathMtuResults>,
}

/// What the sender's path MTU discovery found and spent.
#[derive(Debug, Clone, Serialize)]
pub struct PathMtuResults {
    /// The UDP payload size in use at the end, in bytes.
    pub datagram_bytes: u64,
    /// Probe packets sent.
    pub probes: u64,
    /// Probes lost, or refused by a Packet Too Big.
    pub probes_lost: u64,
    /// Falls back to 1200 bytes after losses alone.
    pub black_holes: u64,
    /// ICMP Packet Too Big messages acted on.
    pub too_big_accepted: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct EngineResults {
    /// Times the engine advanced the clock.
    pub steps: u64,
    /// Packets that crossed one link (one direction of the bottleneck).
    pub packet_hops: u64,
}
