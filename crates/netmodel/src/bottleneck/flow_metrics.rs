//! Per-flow measurements taken by the network itself, as a capture point
//! at the bottleneck would: packets sent, delivered, dropped, marked, and
//! the delay each one saw. The simulator and the live router keep one per
//! flow (per direction in the router); the [`super::Bottleneck`] charges
//! queue delays, drops, losses and marks to it from its link events, and
//! the driver adds what only it sees (sending, arrival at the far host).

use brisk_time::Instant;
use brisk_trace::stats::LatencySummary;
use std::time::Duration;

/// What the network saw of one flow's data direction (sender to receiver).
#[derive(Debug, Clone, Default)]
pub struct FlowMetrics {
    /// Data packets the sender put on the network.
    pub sent_packets: u64,
    /// Bytes (whole IP datagrams) the sender put on the network.
    pub sent_bytes: u64,
    /// Data packets that reached the receiver.
    pub delivered_packets: u64,
    /// Bytes (whole IP datagrams) that reached the receiver.
    pub delivered_bytes: u64,
    /// Delivered packets that arrived marked CE.
    pub ce_packets: u64,
    /// Dropped by the bottleneck queue.
    pub queue_drops: u64,
    /// Lost to link impairments (random, bursty, outages).
    pub link_losses: u64,
    /// Packets the queue marked CE (whether or not they arrived).
    pub marks: u64,
    /// Sending to arrival at the receiver.
    pub one_way_delay: LatencySummary,
    /// Time spent in the bottleneck queue.
    pub queue_delay: LatencySummary,
    /// Optional time series for plots: (time, queue delay) per packet.
    pub queue_delay_series: Option<Vec<(Instant, Duration)>>,
    /// Optional time series: (time, cumulative delivered IP bytes).
    pub delivered_series: Option<Vec<(Instant, u64)>>,
}

impl FlowMetrics {
    /// Empty metrics; with `series`, also per-packet time series for plots (memory grows with the run).
    pub fn with_series(series: bool) -> Self {
        FlowMetrics {
            queue_delay_series: series.then(Vec::new),
            delivered_series: series.then(Vec::new),
            ..FlowMetrics::default()
        }
    }

    /// Records one packet's sojourn `d` in the bottleneck queue, leaving it at `at`.
    pub fn on_queue_delay(&mut self, at: Instant, d: Duration) {
        self.queue_delay.record(d);
        if let Some(s) = &mut self.queue_delay_series {
            s.push((at, d));
        }
    }

    /// Records one packet of `bytes` (whole IP datagram) reaching the receiver at `at`, marked CE or not, after `one_way` since it was sent.
    pub fn on_delivered(&mut self, at: Instant, bytes: usize, ce: bool, one_way: Duration) {
        self.delivered_packets += 1;
        self.delivered_bytes += bytes as u64;
        self.ce_packets += u64::from(ce);
        self.one_way_delay.record(one_way);
        if let Some(s) = &mut self.delivered_series {
            s.push((at, self.delivered_bytes));
        }
    }
}
