//! The bottleneck's own results, one object per direction for the link and
//! one for its queue: the shape `brisk sim` and `brisk live` both print.
//! Field names carry their units (see docs/SCENARIOS.md).

use brisk_trace::stats::Percentiles;
use serde::Serialize;

/// What one direction's link carried over a run.
#[derive(Debug, Clone, Serialize)]
pub struct LinkResults {
    /// Fraction of the run the transmitter was busy (for a trace rate:
    /// bytes sent over the bytes the trace offered).
    pub utilization: f64,
    pub transmitted_packets: u64,
    pub transmitted_bytes: u64,
    /// Delivered bits over the run, in Mbit/s.
    pub throughput_mbps: f64,
    pub lost_packets: u64,
}

/// What one direction's queue did over a run.
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
