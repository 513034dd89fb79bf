//! What a brisk flow reports: the transport's own view (its statistics,
//! RTT and window over time, time-sequence events) and what the
//! application measured (completion, per-message latency, video frames).

use brisk_proto::ConnectionStats;
use brisk_time::Instant;
use brisk_trace::plot::SeqEvent;
use std::time::Duration;

/// A brisk flow's report, beyond the byte counts every flow has.
#[derive(Debug, Clone, Default)]
pub struct TransportReport {
    /// The congestion controller's name.
    pub cc: &'static str,
    /// The workload's name ("bulk", "messages", "video", "feed").
    pub app: &'static str,
    /// When the flow started (the client's first packet).
    pub started_at: Instant,
    /// When the sender's handshake completed.
    pub connected_at: Option<Instant>,
    /// Why the connection failed, if it did.
    pub error: Option<String>,
    /// The sender's connection statistics at the end of the run (or when
    /// it failed).
    pub sender: Option<ConnectionStats>,
    /// The receiver's.
    pub receiver: Option<ConnectionStats>,
    /// Bulk: the receiver read the last byte; feed: the last object.
    pub completed_at: Option<Instant>,
    /// Feed: the receiver read the first object (the API response) whole.
    pub first_object_at: Option<Instant>,
    /// Feed: the receiver read the first byte of the first object.
    pub first_byte_at: Option<Instant>,
    /// Bulk: the longest wait of the receiving application for new
    /// in-order bytes that ended in each whole second of the run (index:
    /// the second; zero where no wait ended), after its first read.
    pub read_gaps: Vec<Duration>,
    /// Messages and frames: from the sending application's write to the
    /// receiving application's read of the last byte; feed objects: from
    /// the request to the last byte.
    pub latencies: Vec<Duration>,
    pub frames: Option<FrameReport>,
    /// Live streaming: what the viewer saw.
    pub stream: Option<StreamReport>,
    pub integrity: Integrity,
    /// With early data: what became of first flights at the server.
    pub early_data: Option<EarlyDataReport>,
    /// (when, congestion window) at every change (with series only).
    pub cwnd: Vec<(Instant, u64)>,
    /// Time-sequence events (with series only).
    pub seq: Vec<SeqEvent>,
}

impl TransportReport {
    /// How long the bulk transfer or the feed page took from the start.
    pub fn completion(&self) -> Option<Duration> {
        self.completed_at.map(|t| t - self.started_at)
    }

    /// How long the feed's first object took from the start.
    pub fn first_object(&self) -> Option<Duration> {
        self.first_object_at.map(|t| t - self.started_at)
    }
}

/// What the server on the sender host did with first flights' early data.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EarlyDataReport {
    /// Times early data reached the server's application (one per
    /// genuine connection; more means a replay got through).
    pub served: u64,
    /// First flights whose early data the server refused (a replay its
    /// register had seen, a time outside its window, or one it could not
    /// decide).
    pub refused: u64,
    /// Copies of the first flight an attacker sent (`replay_first_flight`).
    pub replays_sent: u64,
}

/// Did the receiving application get exactly what the sender wrote?
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Integrity {
    /// FNV-1a over every byte the sender wrote, in order, and over every
    /// byte the receiver read (messages; the other workloads check each
    /// byte against its offset instead and leave both zero).
    pub sent_hash: u64,
    pub received_hash: u64,
    /// The receiver read the stream to its end, so the two hashes must
    /// agree (a run may end with bytes still in flight).
    pub stream_complete: bool,
    /// Bytes written that a receiver who read the stream to its end never
    /// got (bulk).
    pub missing_bytes: u64,
    /// Bytes the receiver checked against the deterministic pattern.
    pub checked_bytes: u64,
    /// Bytes that differed from it.
    pub corrupt_bytes: u64,
}

impl Integrity {
    /// No byte differed from the pattern, and a stream read to its end
    /// hashes as it was written and lacks nothing.
    pub fn intact(&self) -> bool {
        self.corrupt_bytes == 0
            && self.missing_bytes == 0
            && (!self.stream_complete || self.sent_hash == self.received_hash)
    }
}

/// What the video call looked like at the receiver.
#[derive(Debug, Clone, Default)]
pub struct FrameReport {
    pub fps: u32,
    /// Frames captured and written to the transport.
    pub sent: u64,
    /// Capture instants that produced no frame: the send path was full.
    pub skipped: u64,
    /// Frames the sender reset because they passed the deadline unsent or
    /// unacknowledged.
    pub abandoned: u64,
    /// Frames read whole by the receiver, and those within the deadline.
    pub received: u64,
    pub on_time: u64,
    /// A frame later than this after capture is useless to the call.
    pub deadline: Duration,
    /// Share of 100 ms windows of the call in which no frame arrived on time.
    pub stall_fraction: f64,
    /// Frames received on time per second, one point per whole second of
    /// the call: (end of the second, fps).
    pub frame_rate: Vec<(Instant, f64)>,
}

/// What a live stream's viewer saw (see the player's rules in
/// `stream_player`).
#[derive(Debug, Clone, Default)]
pub struct StreamReport {
    pub fps: u32,
    /// The player's start-up and refill buffer.
    pub buffer: Duration,
    /// Frames the publisher captured, and those the viewer saw by the end.
    pub frames_sent: u64,
    pub frames_shown: u64,
    /// Frames passed over to get back to the live edge after a freeze.
    pub frames_skipped: u64,
    /// From the flow's start (the viewer joining) to the first frame on
    /// screen; `None`: the buffer never filled.
    pub startup: Option<Duration>,
    /// Capture to screen, per frame shown.
    pub glass_to_glass: Vec<Duration>,
    /// Time the picture froze after start-up, and how many times.
    pub stalled: Duration,
    pub stalls: u64,
    /// `stalled` over the time from the first frame shown to the end.
    pub rebuffering_ratio: f64,
    /// The rate of the video shown, in bit/s.
    pub shown_bps: f64,
    /// The encoder's mean rate over all frames, in bit/s.
    pub encoded_bps: u64,
    /// Times the encoder changed rung.
    pub rung_switches: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_read_to_its_end_is_intact_only_if_nothing_differs_or_lacks() {
        let whole = Integrity {
            stream_complete: true,
            checked_bytes: 1000,
            ..Integrity::default()
        };
        assert!(whole.intact());
        for broken in [
            Integrity {
                corrupt_bytes: 1,
                ..whole
            },
            Integrity {
                missing_bytes: 1,
                ..whole
            },
            Integrity {
                sent_hash: 1,
                ..whole
            },
        ] {
            assert!(!broken.intact(), "{broken:?}");
        }
        // Mid-run, the hashes of a stream still in flight may differ.
        assert!(
            Integrity {
                sent_hash: 1,
                stream_complete: false,
                ..whole
            }
            .intact()
        );
    }
}
