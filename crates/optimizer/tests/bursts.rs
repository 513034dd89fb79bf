//! Loss under bursts: a fast-to-slow step with a small buffer. The server
//! sits 1 ms behind the optimizer (as at the live lab router's server
//! end), so local ACKs open its window at once and it hands the optimizer
//! whole windows at memory speed; the radio is 20 Mbit/s, 20 ms each way,
//! with a 40-packet FIFO (24 ms of buffer, a quarter of the path's
//! bandwidth-delay product). Without the optimizer the unpaced server's
//! bursts overflow the FIFO; with it, the optimizer paces at the measured
//! delivery rate and keeps about a bandwidth-delay product in flight, so
//! the queue stays short. The same seeded runs, IPv4 and IPv6: three
//! downloads one after another from one subscriber (100 KB, 1 MB, 4 MB),
//! servers with initial windows of 3 and 10 segments.

mod support;

use brisk_optimizer::Config;
use std::time::Duration;
use support::FAMILIES;
use support::download::{Network, Setup, download};

const BURSTS: Network = Network {
    rate_bps: 20_000_000,
    one_way: Duration::from_millis(20),
    queue_packets: 40,
    loss: 0.0,
    core_delay: Duration::from_millis(1),
};

fn setup(initial_window: u32, optimizer: Option<Config>) -> Setup {
    Setup {
        network: BURSTS,
        sizes: vec![100_000, 1_000_000, 4_000_000],
        initial_window,
        optimizer,
        stop_at: None,
        seed: 1,
    }
}

#[test]
fn the_optimizer_keeps_burst_loss_under_0_2_percent_at_a_small_buffer() {
    for f in FAMILIES {
        for iw in [3, 10] {
            let (off, _) = download(f, &setup(iw, None));
            let (on, opt) = download(f, &setup(iw, Some(Config::default())));
            let opt = opt.expect("on");
            // The earlier gains: 1.5 x the bandwidth-delay product in
            // flight, paced at twice the delivery rate.
            let earlier = Config {
                budget_gain: 1.5,
                pacing_gain: 2.0,
                ..Config::default()
            };
            let (before, _) = download(f, &setup(iw, Some(earlier)));
            eprintln!(
                "{f:?} IW {iw}: loss at the 40-packet FIFO {:.2}% -> {:.3}% ({} -> {} of {} / {} \
                 packets; {:.3}% with the earlier gains), radio RTT avg {:.0} -> {:.0} ms, p95 {:.0} -> {:.0} ms, downloads \
                 {:.2?} -> {:.2?} s; optimizer: {} sent, {} resent, {} probes, {} RACK losses",
                off.loss_pct(),
                on.loss_pct(),
                off.dropped,
                on.dropped,
                off.offered,
                on.offered,
                before.loss_pct(),
                off.rtt_avg_ms,
                on.rtt_avg_ms,
                off.rtt_p95_ms,
                on.rtt_p95_ms,
                off.done_s,
                on.done_s,
                opt.stats().segments_sent,
                opt.stats().retransmissions,
                opt.stats().tail_loss_probes,
                opt.stats().rack_losses,
            );
            assert!(off.hash_ok && on.hash_ok, "{f:?} IW {iw}: bytes differ");
            assert_eq!(opt.stats().optimized_connections, 3);
            // The baseline: the step overflows the FIFO without the optimizer.
            assert!(off.loss_pct() > 1.0, "{f:?} IW {iw}: {off:?}");
            assert!(on.loss_pct() < 0.2, "{f:?} IW {iw}: {on:?}");
            assert!(before.loss_pct() > 0.2, "{f:?} IW {iw}: {before:?}");
            // Pacing must not cost throughput: within 10% of unoptimized.
            assert!(
                on.total_s() <= off.total_s() * 1.1,
                "{f:?} IW {iw}: {:?} -> {:?} s",
                off.done_s,
                on.done_s
            );
        }
    }
}
