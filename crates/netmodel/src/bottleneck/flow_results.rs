//! One flow's results as the network measured them, in the shape
//! `brisk sim` and `brisk live` both print: who the flow is, what its ends
//! reported, and the bottleneck's [`FlowMetrics`] turned into rates and
//! percentiles. `T` is the transport's own report, flattened into the same
//! JSON object when a flow has one (the simulator's brisk flows).

use super::flow_metrics::FlowMetrics;
use brisk_trace::stats::Percentiles;
use serde::Serialize;
use std::time::Duration;

/// One flow's results, serialized as one JSON object per flow.
#[derive(Debug, Clone, Serialize)]
pub struct FlowResults<T> {
    /// The flow's index in the run.
    pub id: usize,
    /// The flow's name, from the scenario (simulator) or its kind and addresses (live).
    pub name: String,
    /// The flow's kind, e.g. its traffic generator or transport.
    pub kind: &'static str,
    /// The sender's address and port, as `ip:port`.
    pub src: String,
    /// The receiver's address and port, as `ip:port`.
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
    /// Percentiles of send-to-arrival delay over delivered data packets, in ms.
    pub one_way_delay_ms: Percentiles,
    /// Percentiles of bottleneck queue sojourn, in ms.
    pub queue_delay_ms: Percentiles,
    /// Data packets the sender put on the network.
    pub sent_packets: u64,
    /// Data packets that reached the receiver.
    pub delivered_packets: u64,
    /// Data packets the bottleneck queue dropped.
    pub queue_drops: u64,
    /// Data packets lost to link impairments.
    pub link_losses: u64,
    /// Data packets that arrived marked CE.
    pub ce_packets: u64,
    /// Probes or requests that got no answer.
    pub unanswered: u64,
    /// Transport flows (brisk) only: what the application measured and
    /// the transport's own statistics, as fields of this object.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub brisk: Option<T>,
}

/// Who a flow is, for its [`FlowResults`].
#[derive(Debug, Clone)]
pub struct FlowLabel {
    /// The flow's index in the run.
    pub id: usize,
    /// The flow's name for reports.
    pub name: String,
    /// The flow's kind, e.g. its traffic generator or transport.
    pub kind: &'static str,
    /// The sender's address and port, as `ip:port`.
    pub src: String,
    /// The receiver's address and port, as `ip:port`.
    pub dst: String,
}

/// What a flow's own ends tell, beside what the network measured of it.
#[derive(Debug, Clone)]
pub struct FlowEnds<T> {
    /// Application payload bytes handed to the network.
    pub sent_bytes: u64,
    /// Application payload bytes that reached the receiving application.
    pub delivered_bytes: u64,
    /// Seconds the flow was active, for its goodput.
    pub active_s: f64,
    /// Round trips measured end to end, if the flow measures any.
    pub rtt_ms: Option<Percentiles>,
    /// Base delay of the direction opposite to the data: a one-way flow's
    /// round trip is estimated as its one-way delay plus this.
    pub return_delay: Duration,
    /// Probes or requests that got no answer.
    pub unanswered: u64,
    /// The transport's own report (brisk flows in the simulator).
    pub brisk: Option<T>,
}

impl<T> FlowResults<T> {
    /// A flow's results from its label, its ends' reports and the
    /// network's measurements: one shape for the simulator and the
    /// real-time lab.
    pub fn new(label: FlowLabel, ends: FlowEnds<T>, m: &FlowMetrics) -> FlowResults<T> {
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

    /// The same results with the transport's report converted, for a
    /// caller that keeps results of another transport type side by side.
    pub fn map_transport<U>(self, f: impl FnOnce(T) -> U) -> FlowResults<U> {
        FlowResults {
            id: self.id,
            name: self.name,
            kind: self.kind,
            src: self.src,
            dst: self.dst,
            sent_bytes: self.sent_bytes,
            delivered_bytes: self.delivered_bytes,
            goodput_mbps: self.goodput_mbps,
            loss_rate: self.loss_rate,
            ce_fraction: self.ce_fraction,
            rtt_ms: self.rtt_ms,
            rtt_measured: self.rtt_measured,
            one_way_delay_ms: self.one_way_delay_ms,
            queue_delay_ms: self.queue_delay_ms,
            sent_packets: self.sent_packets,
            delivered_packets: self.delivered_packets,
            queue_drops: self.queue_drops,
            link_losses: self.link_losses,
            ce_packets: self.ce_packets,
            unanswered: self.unanswered,
            brisk: self.brisk.map(f),
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
        p95: add(owd.p95),
        p99: add(owd.p99),
        max: add(owd.max),
        mean: add(owd.mean),
        count: owd.count,
    }
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

    fn ends(rtt_ms: Option<Percentiles>) -> FlowEnds<()> {
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
        let r = FlowResults::<()>::new(label(), ends(None), &metrics());
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
        let r = FlowResults::<()>::new(label(), ends(Some(measured)), &metrics());
        assert!(r.rtt_measured);
        assert_eq!(r.rtt_ms.p50, 42.0);
        let empty = FlowResults::<()>::new(label(), ends(None), &FlowMetrics::default());
        assert_eq!((empty.loss_rate, empty.ce_fraction), (0.0, 0.0));
        assert_eq!((empty.rtt_ms.p50, empty.rtt_ms.max), (0.0, 0.0));
    }
}
