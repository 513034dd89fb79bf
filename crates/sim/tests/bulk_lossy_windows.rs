//! Bulk over the lossy mobile path (10 Mbit/s, 220 ms RTT, 5%
//! random loss toward the receiver, a 200-packet FIFO), Brisk BBR, IPv4 and
//! IPv6: flow control no longer holds the sender. With fixed 1 MiB stream
//! windows and send buffers, each counted from the first byte not yet
//! delivered in order, a hole that takes one or two retransmissions to
//! fill stalled the sender: 7.39 / 6.74 Mbit/s without FEC and 7.46 /
//! 7.47 with FEC `adaptive` (IPv4 / IPv6). The receive window now grows
//! while the sender uses all of it and the reader keeps up, and the send
//! buffer follows the window granted (7.88 / 7.83 and 7.70 / 7.62), and
//! adaptive repair no longer covers bulk blocks in mid-flight (7.85 /
//! 7.76 with FEC).
//!
//! Then BBR makes up for the random loss share its delivery rate lacks and
//! keeps its minimum RTT fresh while the queue stays empty, so ProbeRtt
//! (half a BDP now) seldom runs: 8.41 / 8.24 Mbit/s without FEC and 8.36 /
//! 8.27 with it over the whole run, and 9.02 / 8.99 and 9.15 / 8.95 over
//! its second half, the steady state, against 8.38 / 8.46 and 8.47 / 8.36
//! before (the goal, 0.9 x rate x (1 - loss), is 8.55 Mbit/s).
//!
//! Then the receive window doubles as soon as half of it waits behind a
//! hole the reader cannot pass, instead of after the repair: the sender
//! no longer stalls at the 1 MiB window during Startup, whose queue
//! doubles the time a hole waits. Whole run 8.51 / 8.38 Mbit/s without FEC
//! and 8.54 / 8.42 with it (against 8.41 / 8.24 and 8.36 / 8.27).

mod common;

use brisk_sim::scenario::Scenario;
use common::{FAMILIES, flow, run_on};

/// The lab's bulk scenario with FEC `fec`, for `secs` seconds.
fn bulk(fec: &str, secs: u64) -> Scenario {
    let text = format!(
        "duration = \"{secs}s\"\n\
         [link.down]\nrate = \"10Mbit\"\ndelay = \"110ms\"\nloss = \"5%\"\n\
         [link.up]\nrate = \"10Mbit\"\ndelay = \"110ms\"\n\
         [queue.fifo]\nlimit_packets = 200\n\
         [[flows]]\nname = \"bulk\"\nkind = \"brisk\"\ncc = \"bbr\"\nfec = \"{fec}\"\n"
    );
    Scenario::parse(&text, "bulk_lossy_windows test").unwrap()
}

#[test]
fn bulk_at_5_percent_loss_is_not_held_by_flow_control() {
    // The 0.9 x rate x (1 - loss), in Mbit/s, held over the second
    // half of the run. Over the whole run, the handshake and Startup's
    // first seconds keep it lower (docs/PROTOCOL.md, section 6.6): there,
    // above what the run gave while a hole's repair held the window
    // (at most 8.27 on IPv6).
    const GOAL_MBPS: f64 = 0.9 * 10.0 * (1.0 - 0.05);
    for ip in FAMILIES {
        for (fec, floor_mbps) in [("off", 8.33), ("adaptive", 8.33)] {
            let r = run_on(&bulk(fec, 30), ip);
            let f = flow(&r, "bulk");
            // A run is a pure function of scenario and seed, so the first
            // 15 s of the 30 s run are the 15 s run: what the receiver read
            // after it is the second half's.
            let half = run_on(&bulk(fec, 15), ip);
            let second_half_mbps =
                f.delivered_bytes
                    .saturating_sub(flow(&half, "bulk").delivered_bytes) as f64
                    * 8.0
                    / 15.0
                    / 1e6;
            let t = &f.brisk.as_ref().unwrap().transport;
            println!(
                "{ip:?} FEC {fec}: goodput {:.2} Mbit/s (second half {second_half_mbps:.2}), {} packets sent, {} lost, {} retransmitted ({} bytes), {} repair, {} rebuilt",
                f.goodput_mbps,
                t.packets_sent,
                t.packets_lost,
                t.packets_retransmitted,
                t.bytes_retransmitted,
                t.repair_packets_sent,
                t.packets_rebuilt
            );
            assert!(t.data_intact, "{ip:?} FEC {fec}");
            // Adaptive repair leaves bulk blocks in mid-flight alone and
            // repairs only the flight's tails: under 1% of the packets
            // (2,481 of 23,799 when every full block got repair).
            assert!(
                t.repair_packets_sent * 100 < t.packets_sent,
                "{ip:?} FEC {fec}: {} repair packets of {}",
                t.repair_packets_sent,
                t.packets_sent
            );
            assert!(
                f.goodput_mbps >= floor_mbps,
                "{ip:?} FEC {fec}: {:.2} Mbit/s against at least {floor_mbps:.2}",
                f.goodput_mbps
            );
            assert!(
                second_half_mbps >= GOAL_MBPS,
                "{ip:?} FEC {fec}: {second_half_mbps:.2} Mbit/s in the second half against at least {GOAL_MBPS:.2}"
            );
        }
    }
}

/// The bulk goal over a whole transfer of a minute, start
/// included, as the lab measures it: at least 0.9 x rate x (1 - loss) on
/// both families, with FEC `adaptive` and without. Over 30 s the start
/// from a ten-packet window (the link full only after about five round
/// trips of doubling, some 1.3 MB short of a full link) takes nearly all
/// of the slack IPv6's headers leave, and the runs give 8.38-8.62 Mbit/s.
#[test]
fn a_minute_of_bulk_meets_the_goal_over_the_whole_run() {
    const GOAL_MBPS: f64 = 0.9 * 10.0 * (1.0 - 0.05);
    for ip in FAMILIES {
        for fec in ["off", "adaptive"] {
            let r = run_on(&bulk(fec, 60), ip);
            let f = flow(&r, "bulk");
            println!(
                "{ip:?} FEC {fec}: {:.2} Mbit/s over the whole 60 s",
                f.goodput_mbps
            );
            assert!(
                f.brisk.as_ref().unwrap().transport.data_intact,
                "{ip:?} FEC {fec}"
            );
            assert!(
                f.goodput_mbps >= GOAL_MBPS,
                "{ip:?} FEC {fec}: {:.2} Mbit/s over 60 s against at least {GOAL_MBPS:.2}",
                f.goodput_mbps
            );
        }
    }
}

/// The whole 30 s and 60 s runs over seeds 1 to 3, both families, with and
/// without FEC: the figures docs/PROTOCOL.md (section 6.6) and docs/LAB.md
/// quote.
/// About 10 to 16 s in the ci profile; run with `cargo test --profile ci
/// -p brisk-sim --test bulk_lossy_windows -- --ignored --nocapture`.
#[test]
#[ignore = "a table for the docs, 10 to 16 s"]
fn whole_run_goodput_over_seeds() {
    const GOAL_MBPS: f64 = 0.9 * 10.0 * (1.0 - 0.05);
    let (mut met, mut sum) = (0, 0.0);
    for secs in [30, 60] {
        for fec in ["off", "adaptive"] {
            for ip in FAMILIES {
                let mut line = Vec::new();
                for seed in 1..=3 {
                    let r = brisk_sim::run(
                        &bulk(fec, secs),
                        brisk_sim::RunOptions {
                            ip: Some(ip),
                            seed: Some(seed),
                            ..Default::default()
                        },
                    )
                    .results;
                    let mbps = flow(&r, "bulk").goodput_mbps;
                    if secs == 30 {
                        met += usize::from(mbps >= GOAL_MBPS);
                        sum += mbps;
                    }
                    line.push(format!("{mbps:.2}"));
                }
                println!(
                    "{ip:?} FEC {fec}: whole {secs} s run {} Mbit/s (seeds 1, 2, 3)",
                    line.join(" / ")
                );
            }
        }
    }
    let mean = sum / 12.0;
    println!("30 s: {met} of 12 runs at or above {GOAL_MBPS:.2} Mbit/s, mean {mean:.3}");
    // 8.34 while the sender waited at the window for a hole's repair.
    assert!(mean >= 8.42, "mean {mean:.3} Mbit/s");
}
