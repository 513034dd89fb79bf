//! Kernel TCP (cubic, unpaced by the lab) downloading through the live
//! router with the TCP optimizer off and on: a 10 Mbit/s cell with 20 ms
//! each way and a 1000-packet FIFO, over IPv4 and IPv6. With the optimizer
//! the server's kernel measures the short RTT to the router (it is
//! acknowledged there), the down link's queue stays short, and the link is
//! kept as busy.

mod common;

use brisk_live::{IpMode, LabConfig};
use std::time::Duration;

struct Measured {
    goodput_mbps: f64,
    server_rtt_ms: f64,
    queue_p50_ms: f64,
    queue_p99_ms: f64,
    server_retransmits: u32,
}

fn run(ip: IpMode, optimized: bool) -> Measured {
    let toml = "[link.down]\nrate = \"10Mbit\"\ndelay = \"20ms\"\n\
                [link.up]\nrate = \"10Mbit\"\ndelay = \"20ms\"\n\
                [queue.fifo]\nlimit_packets = 1000\n";
    let mut config = LabConfig::new(common::scenario(toml));
    config.ip = ip;
    if optimized {
        config.optimizer = Some(brisk_optimizer::Config::default());
    }
    let lab = brisk_live::Lab::up(config).expect("lab comes up");
    let report = common::bulk(&lab, "cubic", false, Duration::from_secs(6));
    let results = lab
        .finish(None, Some(report.clone()))
        .expect("lab finishes");
    let m = Measured {
        goodput_mbps: report.goodput_mbps,
        server_rtt_ms: report.sender.rtt_ms,
        queue_p50_ms: results.queue.delay_ms.p50,
        queue_p99_ms: results.queue.delay_ms.p99,
        server_retransmits: report.sender.retransmitted_segments,
    };
    eprintln!(
        "{ip:?} optimizer {}: goodput {:.2} Mbit/s, server's kernel RTT {:.1} ms, \
         down queue delay p50 {:.1} ms p99 {:.1} ms, server retransmitted {} segments",
        if optimized { "on" } else { "off" },
        m.goodput_mbps,
        m.server_rtt_ms,
        m.queue_p50_ms,
        m.queue_p99_ms,
        m.server_retransmits
    );
    m
}

#[test]
fn kernel_tcp_through_the_optimizer_keeps_the_queue_short() {
    let Some(_g) = common::lab_guard("kernel_tcp_through_the_optimizer_keeps_the_queue_short")
    else {
        return;
    };
    for ip in [IpMode::V4, IpMode::V6] {
        common::within_attempts("kernel TCP through the optimizer", || {
            let off = run(ip, false);
            let on = run(ip, true);
            common::bound(on.server_rtt_ms < off.server_rtt_ms / 4.0, || {
                format!(
                    "server RTT {} -> {} ms",
                    off.server_rtt_ms, on.server_rtt_ms
                )
            })?;
            common::bound(on.queue_p50_ms <= off.queue_p50_ms / 2.0, || {
                format!("queue p50 {} -> {} ms", off.queue_p50_ms, on.queue_p50_ms)
            })?;
            common::bound(on.goodput_mbps >= off.goodput_mbps * 0.9, || {
                format!("goodput {} -> {} Mbit/s", off.goodput_mbps, on.goodput_mbps)
            })
        });
    }
}
