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
    /// Packets that finished serialization, lost ones included.
    pub transmitted_packets: u64,
    /// Bytes (whole IP datagrams) that finished serialization, lost ones included.
    pub transmitted_bytes: u64,
    /// Transmitted bits (lost packets included) over the run, in Mbit/s.
    pub throughput_mbps: f64,
    /// Packets the link lost after transmitting them (impairments, not queue drops).
    pub lost_packets: u64,
}

/// What one direction's queue did over a run.
#[derive(Debug, Clone, Serialize)]
pub struct QueueResults {
    /// The discipline's short name: "fifo", "codel", "fq_codel", "pie", "dualpi2" or "cell".
    pub kind: &'static str,
    /// All drops: `drops_overflow` plus `drops_aqm`.
    pub drops: u64,
    /// Packets dropped because the queue's packet or byte limit was reached.
    pub drops_overflow: u64,
    /// Packets dropped by the AQM's control law.
    pub drops_aqm: u64,
    /// Packets marked CE instead of dropped.
    pub marks: u64,
    /// Packets accepted into the queue (overflow drops on arrival excluded).
    pub enqueued_packets: u64,
    /// Queue delay over every packet that left the queue.
    pub delay_ms: Percentiles,
}
