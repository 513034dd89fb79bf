//! L4S on real sockets (WWDC 2023; `scenarios/brisk-l4s-dualpi2.toml` in
//! the simulator): a Brisk Prague download (ECT(1) in real IP headers)
//! and a kernel TCP CUBIC download (classic ECN) share a 10 Mbit/s,
//! 20 ms base RTT bottleneck at the same time. Through DualPI2 (3-packet
//! step, no classic protection, as the simulator's scenario) the
//! simulator gives Prague p50 0.46 ms, p99 1.91 ms of queue delay; the
//! live path may add a little: the router's own delay error (p99 about
//! 0.1 ms) and bursts of packets the host's stacks release together
//! (GSO trains, ACKs the scheduler delays), which DualPI2's step sees as
//! a standing queue for a moment. So the bound here is 3 ms, plus the
//! lateness the router itself measured in the same run: on a busy machine
//! the router reads and writes late, which no queue can undo. Through the
//! simulator's default FIFO (1000 packets) the same pair sees CUBIC's
//! standing queue.

mod common;

use brisk_live::recipes::brisk_bulk::{self, BriskBulkConfig};
use brisk_live::recipes::l4s::{self, PairExperiment, PairReport};
use brisk_live::{Lab, LabConfig};
use std::time::Duration;

const LINKS: &str = "[link.down]\nrate = \"10Mbit\"\ndelay = \"10ms\"\n\
                     [link.up]\nrate = \"10Mbit\"\ndelay = \"10ms\"\n";
const DUALPI2: &str = "[queue.dualpi2]\nstep_threshold = \"3p\"\nclassic_protection = \"0%\"\n";
const FIFO: &str = "[queue.fifo]\n";
const SECS: u64 = 12;

/// One run of the pair: the report and the host's slack, the router's
/// own lateness (p99 of its delay error towards the client, or of its
/// timer deadlines, whichever is larger) in ms.
fn pair(queue: &str, label: &str) -> (PairReport, f64) {
    let lab = Lab::up(LabConfig::new(common::scenario(&format!("{LINKS}{queue}"))))
        .expect("lab comes up");
    let outcome =
        l4s::run(&lab, &PairExperiment::l4s(Duration::from_secs(SECS))).expect("the pair runs");
    let results = lab.finish(None, None).expect("lab finishes");
    let report = PairReport::new(
        &outcome,
        &results.flows,
        &results.link,
        results.duration_s,
        10e6,
    )
    .expect("both flows crossed the router");
    let slack_ms = results
        .driver
        .fidelity
        .down
        .delay_error_ms
        .p99
        .max(results.driver.fidelity.timer_lateness_ms.p99);
    eprintln!(
        "{label}: link busy {:.1}%, goodput share {:.1}%; queue marks {} drops {}; \
         router kept up {}, its lateness p99 {slack_ms:.2} ms",
        report.link_utilization * 100.0,
        report.goodput_share_of_link * 100.0,
        results.queue.marks,
        results.queue.drops,
        results.driver.fidelity.kept_up,
    );
    for (name, f) in [("prague", report.brisk), ("cubic", report.tcp)] {
        eprintln!(
            "  {name:>6}: goodput {:.2} Mbit/s, queue delay p50 {:.2} p99 {:.2} ms, \
             rtt p50 {:.1} p99 {:.1} ms (path p99 {:.1}), CE {:.1}%, loss {:.2}%",
            f.goodput_mbps,
            f.queue_delay_p50_ms,
            f.queue_delay_p99_ms,
            f.rtt_p50_ms,
            f.rtt_p99_ms,
            f.path_rtt_p99_ms,
            f.ce_fraction * 100.0,
            f.loss_rate * 100.0
        );
    }
    eprintln!(
        "  brisk sender: ecn {} ect1 {} ce echoed {}; receiver saw ect0 {} ect1 {} ce {}; \
         tcp sender: ecn {} ce {} retransmits {}",
        outcome.brisk.sender.ecn_state,
        outcome.brisk.sender.sent_ect1,
        outcome.brisk.sender.echoed_ce,
        outcome.brisk.received_ect0,
        outcome.brisk.received_ect1,
        outcome.brisk.received_ce,
        outcome.tcp.sender.ecn_negotiated,
        outcome.tcp.sender.delivered_ce_segments,
        outcome.tcp.sender.retransmitted_segments,
    );
    (report, slack_ms)
}

#[test]
fn prague_keeps_its_queue_short_through_dualpi2_beside_kernel_cubic() {
    let Some(_g) =
        common::lab_guard("prague_keeps_its_queue_short_through_dualpi2_beside_kernel_cubic")
    else {
        return;
    };
    let dualpi2 = common::within_attempts("prague through dualpi2", || {
        let (r, slack) = pair(DUALPI2, "dualpi2");
        let p = r.brisk;
        // Prague is marked (that is how its queue stays short), and is not
        // starved by the classic flow.
        assert!(p.ce_fraction > 0.01, "prague CE {}", p.ce_fraction);
        assert!(p.goodput_mbps > 2.0, "prague {} Mbit/s", p.goodput_mbps);
        assert!(
            p.rtt_p50_ms > 19.0,
            "prague rtt p50 {} ms below the base",
            p.rtt_p50_ms
        );
        // The simulator's 1.91 ms, plus what the live path adds (module doc).
        common::bound(p.queue_delay_p99_ms < 3.0 + slack, || {
            format!(
                "prague p99 {} ms, router late {slack} ms",
                p.queue_delay_p99_ms
            )
        })?;
        // The seed's headline: RTT under 25 ms at a 20 ms base, on the
        // path. Brisk's own samples add the hosts' time and the receiver's
        // ACK delay (up to 25 ms), more on a busy machine. The router's
        // lateness is part of the path it measures.
        common::bound(p.path_rtt_p99_ms < 25.0 + slack, || {
            format!(
                "prague path rtt p99 {} ms, router late {slack} ms",
                p.path_rtt_p99_ms
            )
        })?;
        common::bound(p.rtt_p99_ms < 60.0, || {
            format!("prague rtt p99 {} ms", p.rtt_p99_ms)
        })?;
        // The classic queue is steered to DualPI2's 15 ms target, well
        // above Prague's.
        common::bound(
            r.tcp.queue_delay_p50_ms > 3.0 * p.queue_delay_p99_ms,
            || format!("cubic p50 {} ms", r.tcp.queue_delay_p50_ms),
        )?;
        common::bound(r.link_utilization > 0.93, || {
            format!("link busy {}", r.link_utilization)
        })?;
        Ok(r)
    });
    let p = dualpi2.brisk;
    let (fifo, _) = pair(FIFO, "fifo 1000");
    // The FIFO: both wait behind CUBIC's standing queue.
    assert!(fifo.link_utilization > 0.93, "{}", fifo.link_utilization);
    assert!(
        fifo.brisk.queue_delay_p99_ms > 20.0 * p.queue_delay_p99_ms,
        "fifo prague p99 {} ms",
        fifo.brisk.queue_delay_p99_ms
    );
    assert!(
        fifo.tcp.queue_delay_p50_ms > 50.0,
        "{}",
        fifo.tcp.queue_delay_p50_ms
    );
    assert!(fifo.brisk.ce_fraction == 0.0);
}

#[test]
fn prague_is_ect1_and_marked_over_ipv6_too() {
    let Some(_g) = common::lab_guard("prague_is_ect1_and_marked_over_ipv6_too") else {
        return;
    };
    let mut config = LabConfig::new(common::scenario(&format!("{LINKS}{DUALPI2}")));
    config.ip = brisk_live::IpMode::V6;
    let lab = Lab::up(config).expect("lab comes up");
    let report = brisk_bulk::run(
        &lab,
        &BriskBulkConfig::new("prague", Duration::from_secs(4)),
    )
    .expect("the download runs");
    let results = lab.finish(None, None).expect("lab finishes");
    let flow = l4s::flow_from_port(&results.flows, "udp", brisk_bulk::BRISK_PORT)
        .expect("the flow crossed the router");
    eprintln!(
        "ipv6 prague alone: {:.2} Mbit/s, queue delay p50 {:.2} p99 {:.2} ms, CE {:.1}%; \
         receiver saw ect0 {} ect1 {} ce {}; sender ecn {}",
        report.goodput_mbps,
        flow.queue_delay_ms.p50,
        flow.queue_delay_ms.p99,
        flow.ce_fraction * 100.0,
        report.received_ect0,
        report.received_ect1,
        report.received_ce,
        report.sender.ecn_state,
    );
    assert!(flow.src.starts_with('['), "{}", flow.src);
    // ECT(1) in the IPv6 traffic class, CE written into it by DualPI2,
    // and the sender keeps ECN after validating the echoes.
    assert!(report.received_ect1 > 100 && report.received_ect0 == 0);
    assert!(report.received_ce > 0 && flow.ce_packets > 0);
    assert_eq!(report.sender.ecn_state, "Capable");
    assert!(report.goodput_mbps > 5.0, "{}", report.goodput_mbps);
}
