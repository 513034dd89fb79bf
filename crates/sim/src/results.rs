//! The results of a run, as `--json` prints them and `results.json` stores
//! them. Field names carry their units; see docs/SCENARIOS.md.

use crate::metrics::FlowMetrics;
use brisk_trace::stats::Percentiles;
use serde::Serialize;
use std::time::Duration;

#[derive(Debug, Clone, Serialize)]
pub struct Results {
    pub scenario: String,
    pub seed: u64,
    pub ip: &'static str,
    pub duration_s: f64,
    /// The down direction of the bottleneck (the one data queues in).
    pub link: LinkResults,
    pub link_up: LinkResults,
    /// The down direction's queue.
    pub queue: QueueResults,
    pub queue_up: QueueResults,
    pub flows: Vec<FlowResults>,
    pub engine: EngineResults,
}

#[derive(Debug, Clone, Serialize)]
pub struct LinkResults {
    /// Fraction of the run the transmitter was busy.
    pub utilization: f64,
    pub transmitted_packets: u64,
    pub transmitted_bytes: u64,
    /// Delivered bits over the run, in Mbit/s.
    pub throughput_mbps: f64,
    pub lost_packets: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct QueueResults {
    pub kind: &'static str,
    pub drops: u64,
    pub drops_overflow: u64,
    pub drops_aqm: u64,
    pub marks: u64,
    pub enqueued_packets: u64,
    /// Queue delay over every packet that left the queue.
    pub delay_ms: Percentiles,
}

#[derive(Debug, Clone, Serialize)]
pub struct FlowResults {
    pub id: usize,
    pub name: String,
    pub kind: &'static str,
    /// The sender's and receiver's address and port.
    pub src: String,
    pub dst: String,
    /// Application payload bytes handed to the network.
    pub sent_bytes: u64,
    /// Application payload bytes that reached the receiving application.
    pub delivered_bytes: u64,
    /// Delivered payload over the flow's active time, in Mbit/s.
    pub goodput_mbps: f64,
    /// Data-direction packets dropped or lost over packets sent.
    pub loss_rate: f64,
    /// Data-direction packets delivered with CE over packets delivered.
    pub ce_fraction: f64,
    /// Round trip as the application measured it; for one-way kinds, the
    /// measured one-way delay plus the return path's base delay.
    pub rtt_ms: Percentiles,
    /// Whether `rtt_ms` was measured end to end (false: estimated).
    pub rtt_measured: bool,
    pub one_way_delay_ms: Percentiles,
    pub queue_delay_ms: Percentiles,
    pub sent_packets: u64,
    pub delivered_packets: u64,
    pub queue_drops: u64,
    pub link_losses: u64,
    pub ce_packets: u64,
    /// Probes or requests that got no answer.
    pub unanswered: u64,
    /// Transport flows (brisk) only: what the application measured and
    /// the transport's own statistics, as fields of this object.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub brisk: Option<BriskResults>,
}

/// Who a flow is, for its [`FlowResults`].
#[derive(Debug, Clone)]
pub struct FlowLabel {
    pub id: usize,
    pub name: String,
    pub kind: &'static str,
    pub src: String,
    pub dst: String,
}

/// What a flow's own ends tell, beside what the network measured of it.
#[derive(Debug, Clone)]
pub struct FlowEnds {
    pub sent_bytes: u64,
    pub delivered_bytes: u64,
    /// Seconds the flow was active, for its goodput.
    pub active_s: f64,
    /// Round trips measured end to end, if the flow measures any.
    pub rtt_ms: Option<Percentiles>,
    /// Base delay of the direction opposite to the data: a one-way flow's
    /// round trip is estimated as its one-way delay plus this.
    pub return_delay: Duration,
    pub unanswered: u64,
    pub brisk: Option<BriskResults>,
}

impl FlowResults {
    /// A flow's results from its label, its ends' reports and the
    /// network's measurements: one shape for the simulator and the
    /// real-time lab.
    pub fn new(label: FlowLabel, ends: FlowEnds, m: &FlowMetrics) -> FlowResults {
        let ratio = |n: u64, of: u64| if of == 0 { 0.0 } else { n as f64 / of as f64 };
        let (rtt_ms, rtt_measured) = match ends.rtt_ms {
            Some(rtt) => (rtt, true),
            None => (estimated_rtt(m, ends.return_delay), false),
        };
        FlowResults {
            id: label.id,
            name: label.name,
            kind: label.kind,
            src: label.src,
            dst: label.dst,
            sent_bytes: ends.sent_bytes,
            delivered_bytes: ends.delivered_bytes,
            goodput_mbps: ends.delivered_bytes as f64 * 8.0 / ends.active_s.max(1e-9) / 1e6,
            loss_rate: ratio(m.queue_drops + m.link_losses, m.sent_packets),
            ce_fraction: ratio(m.ce_packets, m.delivered_packets),
            rtt_ms,
            rtt_measured,
            one_way_delay_ms: m.one_way_delay.percentiles(),
            queue_delay_ms: m.queue_delay.percentiles(),
            sent_packets: m.sent_packets,
            delivered_packets: m.delivered_packets,
            queue_drops: m.queue_drops,
            link_losses: m.link_losses,
            ce_packets: m.ce_packets,
            unanswered: ends.unanswered,
            brisk: ends.brisk,
        }
    }
}

/// A one-way flow's round trip: its measured one-way delay plus the
/// return path's base delay (the return path carries no load). All zero
/// when nothing arrived.
fn estimated_rtt(m: &FlowMetrics, return_delay: Duration) -> Percentiles {
    let owd = m.one_way_delay.percentiles();
    let back = return_delay.as_secs_f64() * 1000.0;
    let add = |v: f64| if owd.count == 0 { 0.0 } else { v + back };
    Percentiles {
        min: add(owd.min),
        p50: add(owd.p50),
        p90: add(owd.p90),
        p99: add(owd.p99),
        max: add(owd.max),
        mean: add(owd.mean),
        count: owd.count,
    }
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
}

#[derive(Debug, Clone, Serialize)]
pub struct EngineResults {
    /// Times the engine advanced the clock.
    pub steps: u64,
    /// Packets that crossed one link (one direction of the bottleneck).
    pub packet_hops: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn label() -> FlowLabel {
        FlowLabel {
            id: 3,
            name: "f".into(),
            kind: "cbr",
            src: "10.1.0.1:40000".into(),
            dst: "10.2.0.1:42000".into(),
        }
    }

    fn ends(rtt_ms: Option<Percentiles>) -> FlowEnds {
        FlowEnds {
            sent_bytes: 1000,
            delivered_bytes: 500,
            active_s: 2.0,
            rtt_ms,
            return_delay: Duration::from_millis(10),
            unanswered: 0,
            brisk: None,
        }
    }

    fn metrics() -> FlowMetrics {
        let mut m = FlowMetrics {
            sent_packets: 10,
            queue_drops: 1,
            link_losses: 1,
            ..FlowMetrics::default()
        };
        for ce in [true, false, false, false] {
            m.on_delivered(
                brisk_time::Instant::ZERO,
                100,
                ce,
                Duration::from_millis(25),
            );
        }
        m
    }

    #[test]
    fn a_one_way_flow_estimates_its_round_trip_from_the_return_delay() {
        let r = FlowResults::new(label(), ends(None), &metrics());
        assert!(!r.rtt_measured);
        assert!((r.rtt_ms.p50 - r.one_way_delay_ms.p50 - 10.0).abs() < 1e-9);
        assert!(
            (r.one_way_delay_ms.p50 - 25.0).abs() < 0.1,
            "{:?}",
            r.one_way_delay_ms
        );
        assert!((r.loss_rate - 0.2).abs() < 1e-12);
        assert!((r.ce_fraction - 0.25).abs() < 1e-12);
        assert!((r.goodput_mbps - 500.0 * 8.0 / 2.0 / 1e6).abs() < 1e-12);
        assert_eq!((r.id, r.kind, r.delivered_packets), (3, "cbr", 4));
    }

    #[test]
    fn a_measured_round_trip_is_kept_and_an_empty_flow_reads_zero() {
        let measured = Percentiles {
            p50: 42.0,
            count: 1,
            ..Percentiles::default()
        };
        let r = FlowResults::new(label(), ends(Some(measured)), &metrics());
        assert!(r.rtt_measured);
        assert_eq!(r.rtt_ms.p50, 42.0);
        let empty = FlowResults::new(label(), ends(None), &FlowMetrics::default());
        assert_eq!((empty.loss_rate, empty.ce_fraction), (0.0, 0.0));
        assert_eq!((empty.rtt_ms.p50, empty.rtt_ms.max), (0.0, 0.0));
    }
}
