//! BBR's bounded Startup (`bbr_bounded_startup = true`, off by default) on
//! the lossy mobile path (10 Mbit/s, 220 ms RTT, a 200-packet FIFO, about
//! 1.1 bandwidth-delay products), IPv4 and IPv6.
//! Startup's window (two BDPs of the delivery rate, BBRv3's gain) stops
//! about one BDP of queue above the pipe instead of 1.9, so the FIFO does
//! not overflow in the round the pipe fills.

mod common;

use std::path::Path;

use brisk_sim::results::Results;
use brisk_sim::scenario::{IpFamily, Scenario};
use brisk_sim::{RunOptions, run};
use common::{FAMILIES, flow};

/// One of the lab's bulk scenarios (5% random loss toward the receiver)
/// cut to its first 30 s, its flow (the file's last table) with BBR's
/// bounded Startup.
fn lab_bulk(file: &str) -> Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../lab/default/lossy-mobile")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    let mut s = Scenario::parse(&format!("{text}bbr_bounded_startup = true\n"), file).unwrap();
    s.duration = std::time::Duration::from_secs(30);
    s
}

fn run_seeded(s: &Scenario, ip: IpFamily, seed: u64) -> Results {
    run(
        s,
        RunOptions {
            ip: Some(ip),
            seed: Some(seed),
            ..Default::default()
        },
    )
    .results
}

/// The lab's bulk runs (FEC `adaptive` and off) over their whole 30 s, on
/// two seeds: Startup overflows the FIFO far less (38-56 drops in the
/// first 5 s against 179-368 before), and the goodput holds what the runs
/// gave (8.24-8.48 Mbit/s). The lab's goal, 0.9 x rate x (1 - loss) = 8.55
/// Mbit/s over the whole run, is still missed (docs/PROTOCOL.md, section
/// 6.6): the start costs about 2 s of the link, of which Startup's drops
/// were not the main part.
#[test]
fn bulk_at_5_percent_loss_starts_without_overflowing_the_fifo() {
    const FLOOR_MBPS: f64 = 8.2;
    const START_DROPS: u64 = 80;
    for file in ["bulk-fec.toml", "bulk-nofec.toml"] {
        let s = lab_bulk(file);
        for ip in FAMILIES {
            for seed in 1..=2 {
                let r = run_seeded(&s, ip, seed);
                let f = flow(&r, "bulk");
                // A run is a pure function of scenario and seed: the first
                // 5 s of the 30 s run (Startup, Drain and the first ProbeBw
                // cycles) are the 5 s run.
                let mut start = s.clone();
                start.duration = std::time::Duration::from_secs(5);
                let start_drops = flow(&run_seeded(&start, ip, seed), "bulk").queue_drops;
                println!(
                    "{file} {ip:?} seed {seed}: {:.2} Mbit/s over 30 s, {} FIFO drops ({start_drops} in the first 5 s)",
                    f.goodput_mbps, f.queue_drops
                );
                assert!(
                    start_drops <= START_DROPS,
                    "{file} {ip:?} seed {seed}: {start_drops} drops in the first 5 s"
                );
                assert!(
                    f.goodput_mbps >= FLOOR_MBPS,
                    "{file} {ip:?} seed {seed}: {:.2} Mbit/s against at least {FLOOR_MBPS:.2}",
                    f.goodput_mbps
                );
            }
        }
    }
}

/// On the same path without loss, the bounded Startup fills the pipe
/// without overflowing the FIFO, where BBRv1's (the default) drops
/// hundreds of packets.
#[test]
fn startup_through_a_shallow_fifo_loses_at_most_a_few_packets() {
    let text = |bounded: bool| {
        format!(
            "duration = \"4s\"\n\
             [link.down]\nrate = \"10Mbit\"\ndelay = \"110ms\"\n\
             [link.up]\nrate = \"10Mbit\"\ndelay = \"110ms\"\n\
             [queue.fifo]\nlimit_packets = 200\n\
             [[flows]]\nname = \"bulk\"\nkind = \"brisk\"\ncc = \"bbr\"\n\
             bbr_bounded_startup = {bounded}\n"
        )
    };
    let bounded = Scenario::parse(&text(true), "bbr_startup clean path").unwrap();
    let v1 = Scenario::parse(&text(false), "bbr_startup clean path").unwrap();
    for ip in FAMILIES {
        for seed in 1..=2 {
            let f = flow(&run_seeded(&bounded, ip, seed), "bulk").clone();
            let before = flow(&run_seeded(&v1, ip, seed), "bulk").queue_drops;
            let mbit = f.delivered_bytes as f64 * 8.0 / 1e6;
            println!(
                "{ip:?} seed {seed}: {} FIFO drops ({before} with BBRv1's Startup), {mbit:.2} Mbit read by 4 s",
                f.queue_drops
            );
            assert!(
                f.queue_drops <= 3,
                "{ip:?} seed {seed}: {} drops",
                f.queue_drops
            );
            assert!(
                before > 50,
                "{ip:?} seed {seed}: BBRv1's Startup dropped {before}"
            );
        }
    }
}
