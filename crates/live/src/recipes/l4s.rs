//! L4S on real sockets (WWDC 2023; the simulator's
//! `scenarios/brisk-l4s-dualpi2.toml`): a Brisk Prague download (ECT(1)
//! on real packets, [`super::brisk_bulk`]) and a kernel TCP CUBIC download
//! ([`crate::bulk`], classic ECN as the namespaces set it) share one
//! bottleneck at the same time. Through DualPI2 the Prague flow's packets
//! take the L queue, marked early and often, and the CUBIC flow's the
//! classic queue; through a FIFO both wait behind CUBIC's standing queue.
//!
//! [`run`] returns what the applications measured; [`PairReport::new`]
//! adds the router's per-flow numbers (queue delay, CE fraction) once the
//! lab has finished, and the link's utilization over the transfer.

use super::RecipeError;
use super::brisk_bulk::{self, BRISK_PORT, BriskBulkConfig, BriskBulkReport};
use crate::bulk::{self, BULK_PORT, BulkConfig, BulkReport};
use crate::lab::Lab;
use brisk_netmodel::FlowResults as NetFlowResults;
use brisk_netmodel::LinkResults;
use serde::Serialize;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// One run of the pair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PairExperiment {
    /// Brisk's controller ("prague").
    pub brisk_cc: String,
    /// The kernel's (`TCP_CONGESTION`, "cubic").
    pub tcp_cc: String,
    /// `net.ipv4.tcp_ecn = 1` in both namespaces (classic ECN, ECT(0)).
    pub tcp_ecn: bool,
    pub duration: Duration,
}

impl PairExperiment {
    /// The simulator scenario's pair: Prague against CUBIC with classic
    /// ECN.
    pub fn l4s(duration: Duration) -> PairExperiment {
        PairExperiment {
            brisk_cc: "prague".into(),
            tcp_cc: "cubic".into(),
            tcp_ecn: true,
            duration,
        }
    }
}

/// What the two applications measured.
#[derive(Debug, Clone, Serialize)]
pub struct PairOutcome {
    pub brisk: BriskBulkReport,
    pub tcp: BulkReport,
    /// From the start of both transfers to the end of the later one.
    pub window_s: f64,
}

/// Runs both downloads at once in `lab`, each for `exp.duration`.
pub fn run(lab: &Lab, exp: &PairExperiment) -> Result<PairOutcome, RecipeError> {
    lab.set_tcp_ecn(exp.tcp_ecn)?;
    let tcp_config = BulkConfig {
        cc: exp.tcp_cc.clone(),
        ecn: exp.tcp_ecn,
        duration: exp.duration,
    };
    let brisk_config = BriskBulkConfig::new(&exp.brisk_cc, exp.duration);
    let started = Instant::now();
    let (brisk, tcp) = std::thread::scope(|s| {
        let tcp = s.spawn(|| {
            bulk::run(
                lab.server_ns(),
                SocketAddr::new(lab.server_bind_addr(), BULK_PORT),
                lab.client_ns(),
                SocketAddr::new(lab.server_addr(), BULK_PORT),
                &tcp_config,
            )
        });
        let brisk = brisk_bulk::run(lab, &brisk_config);
        (brisk, tcp.join())
    });
    let window_s = started.elapsed().as_secs_f64();
    let tcp =
        tcp.map_err(|_| RecipeError::failed("kernel TCP download", "its thread panicked"))??;
    Ok(PairOutcome {
        brisk: brisk?,
        tcp,
        window_s,
    })
}

/// One flow's figures, the router's and the application's.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct FlowFigures {
    /// Payload over the transfer, as the receiving application counted.
    pub goodput_mbps: f64,
    /// Time in the bottleneck's queue, per packet (the router's).
    pub queue_delay_p50_ms: f64,
    pub queue_delay_p99_ms: f64,
    /// Brisk: the sender's own RTT samples (host delays and the
    /// receiver's ACK delay included); TCP: the router's, from a segment
    /// leaving its sender to the first ACK covering it.
    pub rtt_p50_ms: f64,
    pub rtt_p99_ms: f64,
    /// The path's round trip as the router saw it: TCP, as `rtt_*`; other
    /// flows, each packet's one-way delay plus the return link's base
    /// delay (no host time).
    pub path_rtt_p50_ms: f64,
    pub path_rtt_p99_ms: f64,
    /// Data packets delivered with CE over data packets delivered.
    pub ce_fraction: f64,
    /// Dropped by the queue or lost by the link, over sent.
    pub loss_rate: f64,
}

/// Both flows through one bottleneck.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PairReport {
    pub brisk: FlowFigures,
    pub tcp: FlowFigures,
    /// Time the bottleneck's transmitter was busy over the transfer's
    /// window (the router's busy time, counted over its whole run, falls
    /// almost entirely inside the window).
    pub link_utilization: f64,
    /// Both flows' goodput over the link rate.
    pub goodput_share_of_link: f64,
}

impl PairReport {
    /// Joins the applications' numbers with the router's: `flows` and
    /// `link` from the finished lab's results, whose run lasted
    /// `run_duration_s`; `link_rate_bps` is the bottleneck's rate.
    pub fn new<T>(
        outcome: &PairOutcome,
        flows: &[NetFlowResults<T>],
        link: &LinkResults,
        run_duration_s: f64,
        link_rate_bps: f64,
    ) -> Result<PairReport, RecipeError> {
        let brisk_flow = flow_from_port(flows, "udp", BRISK_PORT)?;
        let tcp_flow = flow_from_port(flows, "tcp", BULK_PORT)?;
        let brisk = FlowFigures {
            goodput_mbps: outcome.brisk.goodput_mbps,
            rtt_p50_ms: outcome.brisk.rtt.p50_ms,
            rtt_p99_ms: outcome.brisk.rtt.p99_ms,
            ..router_figures(brisk_flow)
        };
        let tcp = FlowFigures {
            goodput_mbps: outcome.tcp.goodput_mbps,
            rtt_p50_ms: tcp_flow.rtt_ms.p50,
            rtt_p99_ms: tcp_flow.rtt_ms.p99,
            ..router_figures(tcp_flow)
        };
        let busy_s = link.utilization * run_duration_s;
        Ok(PairReport {
            brisk,
            tcp,
            link_utilization: (busy_s / outcome.window_s.max(1e-9)).min(1.0),
            goodput_share_of_link: (brisk.goodput_mbps + tcp.goodput_mbps) * 1e6
                / link_rate_bps.max(1.0),
        })
    }
}

fn router_figures<T>(f: &NetFlowResults<T>) -> FlowFigures {
    FlowFigures {
        goodput_mbps: f.goodput_mbps,
        queue_delay_p50_ms: f.queue_delay_ms.p50,
        queue_delay_p99_ms: f.queue_delay_ms.p99,
        rtt_p50_ms: f.rtt_ms.p50,
        rtt_p99_ms: f.rtt_ms.p99,
        path_rtt_p50_ms: f.rtt_ms.p50,
        path_rtt_p99_ms: f.rtt_ms.p99,
        ce_fraction: f.ce_fraction,
        loss_rate: f.loss_rate,
    }
}

/// The router's flow of `kind` ("tcp", "udp") whose data came from the
/// server's `port`, the busiest if several did.
pub fn flow_from_port<'a, T>(
    flows: &'a [NetFlowResults<T>],
    kind: &str,
    port: u16,
) -> Result<&'a NetFlowResults<T>, RecipeError> {
    let suffix = format!(":{port}");
    flows
        .iter()
        .filter(|f| f.kind == kind && f.src.ends_with(&suffix))
        .max_by_key(|f| f.delivered_bytes)
        .ok_or_else(|| {
            RecipeError::failed(
                "router flows",
                format!("no {kind} flow from port {port} crossed the bottleneck"),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{FlowResults, NoTransport};
    use brisk_trace::stats::Percentiles;

    fn flow(kind: &'static str, src: &str, delivered_bytes: u64, q99: f64) -> FlowResults {
        let p = |v: f64| Percentiles {
            min: v / 4.0,
            p50: v / 2.0,
            p90: v,
            p95: v,
            p99: v,
            max: v,
            mean: v / 2.0,
            count: 10,
        };
        FlowResults {
            id: 0,
            name: String::new(),
            kind,
            src: src.into(),
            dst: "10.2.0.1:40000".into(),
            sent_bytes: delivered_bytes,
            delivered_bytes,
            goodput_mbps: 1.0,
            loss_rate: 0.0,
            ce_fraction: 0.1,
            rtt_ms: p(30.0),
            rtt_measured: kind == "tcp",
            one_way_delay_ms: p(10.0),
            queue_delay_ms: p(q99),
            sent_packets: 10,
            delivered_packets: 10,
            queue_drops: 0,
            link_losses: 0,
            ce_packets: 1,
            unanswered: 0,
            brisk: None,
        }
    }

    #[test]
    fn flows_are_found_by_kind_and_server_port_in_both_families() {
        let flows = vec![
            flow("udp", "10.1.0.1:4433", 100, 1.0),
            flow("udp", "10.1.0.1:53", 1_000, 9.0),
            flow("tcp", "[2001:db8:1::1]:5299", 50, 30.0),
            flow("tcp", "[2001:db8:1::1]:5299", 5_000, 40.0),
        ];
        assert_eq!(
            flow_from_port(&flows, "udp", 4433).unwrap().delivered_bytes,
            100
        );
        // Two connections from the port: the one that carried the data.
        assert_eq!(
            flow_from_port(&flows, "tcp", 5299).unwrap().delivered_bytes,
            5_000
        );
        assert!(flow_from_port(&flows, "tcp", 4433).is_err());
        assert!(flow_from_port::<NoTransport>(&[], "udp", 4433).is_err());
    }
}
