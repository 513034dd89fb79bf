//! The results of a run, as `--json` prints them and `results.json` stores
//! them. Field names carry their units; see docs/SCENARIOS.md.

use brisk_trace::stats::Percentiles;
use serde::Serialize;

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
}

#[derive(Debug, Clone, Serialize)]
pub struct EngineResults {
    /// Times the engine advanced the clock.
    pub steps: u64,
    /// Packets that crossed one link (one direction of the bottleneck).
    pub packet_hops: u64,
}
