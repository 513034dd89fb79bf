//! Kernel TCP through the router gets the configured rate: goodput as the
//! receiving application measures it, against the most the link can carry
//! (IP and TCP headers with timestamps take 52 of each 1500 bytes).

mod common;

use brisk_live::IpMode;
use brisk_live::LabConfig;
use std::time::Duration;

/// Payload share of a full-size IPv4 TCP segment with timestamps.
const PAYLOAD_SHARE_V4: f64 = 1448.0 / 1500.0;

fn rate_run(rate_mbit: u64, limit_packets: u64, secs: u64) -> (f64, brisk_live::LiveResults) {
    let toml = format!(
        "[link.down]\nrate = \"{rate_mbit}Mbit\"\ndelay = \"10ms\"\n\
         [link.up]\nrate = \"{rate_mbit}Mbit\"\ndelay = \"10ms\"\n\
         [queue.fifo]\nlimit_packets = {limit_packets}\n"
    );
    let mut config = LabConfig::new(common::scenario(&toml));
    config.ip = IpMode::V4;
    let lab = brisk_live::Lab::up(config).expect("lab comes up");
    let report = common::bulk(&lab, "cubic", false, Duration::from_secs(secs));
    let results = lab
        .finish(None, Some(report.clone()))
        .expect("lab finishes");
    let model = rate_mbit as f64 * PAYLOAD_SHARE_V4;
    let share = report.steady_goodput_mbps / model;
    let f = &results.driver.fidelity;
    eprintln!(
        "{rate_mbit} Mbit/s: steady goodput {:.3} Mbit/s = {:.2}% of the {model:.3} Mbit/s payload rate; \
         router achieved {:.4} Mbit/s (error {:+.3}%); delay error p50 {:.3} ms p99 {:.3} ms; \
         timer lateness p99 {:.3} ms; late packets {}; tun drops {}; router cpu {:.0}%; retransmits {}",
        report.steady_goodput_mbps,
        share * 100.0,
        f.down.achieved_bps.unwrap_or(0.0) / 1e6,
        f.down.rate_error.unwrap_or(0.0) * 100.0,
        f.down.delay_error_ms.p50,
        f.down.delay_error_ms.p99,
        f.timer_lateness_ms.p99,
        f.down.late_packets,
        f.tun_drops,
        f.router_cpu_fraction * 100.0,
        report.sender.retransmitted_segments,
    );
    (share, results)
}

#[test]
fn kernel_tcp_gets_10_mbit() {
    let Some(_g) = common::lab_guard("kernel_tcp_gets_10_mbit") else {
        return;
    };
    common::within_attempts("kernel TCP at 10 Mbit/s", || {
        let (share, results) = rate_run(10, 100, 6);
        let e = results
            .driver
            .fidelity
            .down
            .rate_error
            .expect("rate measured");
        common::bound((0.98..=1.005).contains(&share), || {
            format!("goodput share {share}")
        })?;
        common::bound(e.abs() < 0.01, || format!("router rate error {e}"))
    });
}

#[test]
fn kernel_tcp_gets_100_mbit() {
    let Some(_g) = common::lab_guard("kernel_tcp_gets_100_mbit") else {
        return;
    };
    common::within_attempts("kernel TCP at 100 Mbit/s", || {
        let (share, results) = rate_run(100, 400, 6);
        // The goal is 1%; a loaded 2-core machine may not keep up at this
        // rate, which the fidelity report says. The bound here is what it
        // must reach even then.
        if !results.driver.fidelity.kept_up {
            eprintln!(
                "100 Mbit/s: the router did not keep up: {:?}",
                results.driver.fidelity.warnings
            );
        }
        common::bound(share > 0.9 && share <= 1.005, || {
            format!("goodput share {share}")
        })
    });
}
