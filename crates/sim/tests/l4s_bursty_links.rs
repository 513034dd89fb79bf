//! Prague through a Wi-Fi-like link that sends in 4 ms (+-1 ms) bursts,
//! 50 Mbit/s, behind DualPI2 with Linux's defaults, 20 ms base RTT.
//!
//! Where the wait for a transmit opportunity happens decides the result.
//! With the wait in the queue discipline (the link model's default) about
//! three packets in four wait longer than DualPI2's 1 ms step whatever the
//! sender does, so Prague's window sits at its floor. With the wait in a
//! driver queue below the queue discipline (`driver_queue`, as Linux Wi-Fi
//! holds it under its airtime queue limit, 12 ms per station by default),
//! DualPI2 sees only its own sojourn time and Prague must keep the link at
//! least 90% busy. The driver queue's size matters: at 8 ms Prague kept
//! 85%, at 16 ms 95%, both families.
//! Utilization is Prague's delivered rate over the link rate, over the
//! second half of the run.

mod l4s_common;

use brisk_sim::scenario::IpFamily;
use l4s_common::{
    DUALPI2_LINUX, FAMILIES, Flow, bulk, dumbbell, queue_delay_ms, rate_mbps, run_series, series,
};
use std::time::Duration;

const LINK_MBIT: f64 = 50.0;
const SECS: u64 = 10;

/// The link's `bursts` line: 4 +- 1 ms, with the wait in a driver queue of
/// `driver` air time, or in the queue discipline.
fn bursts(driver: Option<&str>) -> String {
    match driver {
        Some(d) => {
            format!("bursts = {{ interval = \"4ms\", jitter = \"1ms\", driver_queue = \"{d}\" }}")
        }
        None => "bursts = { interval = \"4ms\", jitter = \"1ms\" }".to_string(),
    }
}

/// `flow` alone on the bursty link: its delivered rate over the link rate
/// in the second half of the run.
fn utilization(flow: Flow, driver: Option<&str>, ip: IpFamily) -> f64 {
    let name = flow.name;
    let s = dumbbell("\"50Mbit\"", DUALPI2_LINUX, &bursts(driver), &[flow], SECS);
    let (_, all) = run_series(&s, ip);
    let half = Duration::from_secs(SECS / 2);
    rate_mbps(series(&all, name), half, 2 * half) / LINK_MBIT
}

#[test]
fn prague_keeps_a_bursty_link_busy_when_the_driver_holds_the_wait() {
    for ip in FAMILIES {
        let below = utilization(bulk("prague", "prague", 20), Some("12ms"), ip);
        let above = utilization(bulk("prague", "prague", 20), None, ip);
        println!(
            "{ip:?}: Prague through 4 ms bursts at 50 Mbit/s, link busy: \
             {:.1}% with the wait in a 12 ms driver queue, {:.1}% with it in DualPI2",
            100.0 * below,
            100.0 * above
        );
        assert!(below >= 0.90, "{ip:?}: {below}");
        // The baseline: the same link counting the wait as queue time.
        assert!(above < 0.5, "{ip:?}: {above}");
    }
}

/// The reference UDP Prague peer on the same link, beside Brisk's Prague
/// in the same run (`cargo test --release -p brisk-sim --features
/// reference-prague --test l4s_bursty_links -- --nocapture`).
#[cfg(feature = "reference-prague")]
#[test]
fn the_reference_peer_on_the_same_bursty_link() {
    for ip in FAMILIES {
        let reference = || Flow {
            name: "reference",
            body: "kind = \"udp_prague\"",
            rtt_ms: 20,
        };
        let brisk = utilization(bulk("prague", "prague", 20), Some("12ms"), ip);
        let below = utilization(reference(), Some("12ms"), ip);
        let above = utilization(reference(), None, ip);
        println!(
            "{ip:?}: 4 ms bursts at 50 Mbit/s, link busy with a 12 ms driver queue: \
             Brisk {:.1}%, reference {:.1}% (reference with the wait in DualPI2: {:.1}%)",
            100.0 * brisk,
            100.0 * below,
            100.0 * above
        );
        // The reference gains from the driver queue as Brisk does.
        assert!(below > above, "{ip:?}: {below} vs {above}");
    }
}

/// Prague (with its cut floor on aggregating links or without) alone on
/// the bursty link with a 12 ms driver queue, `secs` long with `seed`:
/// its delivered rate over the link rate in the second half, and its
/// queue delay p99 in ms.
fn seeded(floor: bool, seed: u64, secs: u64, ip: IpFamily) -> (f64, f64) {
    let body = if floor {
        "kind = \"brisk\"\ncc = \"prague\""
    } else {
        "kind = \"brisk\"\ncc = \"prague\"\nprague_burst_floor = false"
    };
    let flow = Flow {
        name: "prague",
        body,
        rtt_ms: 20,
    };
    let s = dumbbell(
        "\"50Mbit\"",
        DUALPI2_LINUX,
        &bursts(Some("12ms")),
        &[flow],
        secs,
    );
    let r = brisk_sim::run(
        &s,
        brisk_sim::RunOptions {
            ip: Some(ip),
            seed: Some(seed),
            series: true,
            ..Default::default()
        },
    );
    let all = r.outcome.series();
    let half = Duration::from_secs(secs) / 2;
    let f = series(&all, "prague");
    (
        rate_mbps(f, half, 2 * half) / LINK_MBIT,
        queue_delay_ms(f, half, 2 * half, 0.99),
    )
}

/// The 90% goal with a margin over more seeds, and what the cut floor on
/// aggregating links is worth: without it, the marks that come once the
/// 12 ms driver queue is full read as a classic AQM's (a standing queue
/// of 8 ms or more), Prague halves like Reno, and the link is 89-91%
/// busy; with it the halving stops at the delivered window.
#[test]
fn prague_keeps_a_bursty_link_busy_across_seeds_with_its_cut_floor() {
    for ip in FAMILIES {
        for seed in [2, 3, 4] {
            let (on, queue) = seeded(true, seed, SECS, ip);
            println!(
                "{ip:?} seed {seed}: link busy {:.1}%, queue p99 {queue:.2} ms",
                100.0 * on
            );
            assert!(on >= 0.92, "{ip:?} seed {seed}: {on}");
        }
        let (on, _) = seeded(true, 5, SECS, ip);
        let (off, _) = seeded(false, 5, SECS, ip);
        println!(
            "{ip:?} seed 5: link busy {:.1}% with the cut floor, {:.1}% without",
            100.0 * on,
            100.0 * off
        );
        assert!(on > off + 0.02, "{ip:?}: {on} vs {off}");
    }
}

/// Prague on the bursty link with a 12 ms driver queue, per seed and
/// family, with and without its cut floor, over the second half of `SECS`
/// (default 20) seconds: `SEEDS=1,2,3 SECS=20 cargo test --profile ci -p
/// brisk-sim --test l4s_bursty_links -- --ignored --nocapture seeds`.
#[test]
#[ignore = "a grid over seeds; prints, holds nothing"]
fn seeds() {
    let seeds: Vec<u64> = std::env::var("SEEDS")
        .unwrap_or_else(|_| "1,2,3,4,5".into())
        .split(',')
        .map(|s| s.parse().expect("SEEDS: comma-separated integers"))
        .collect();
    let secs: u64 = std::env::var("SECS").map_or(20, |s| s.parse().expect("SECS: seconds"));
    for ip in FAMILIES {
        for &seed in &seeds {
            let (on, on_q) = seeded(true, seed, secs, ip);
            let (off, off_q) = seeded(false, seed, secs, ip);
            println!(
                "{ip:?} seed {seed}: link busy {:.1}% (queue p99 {on_q:.2} ms) with the cut floor, \
                 {:.1}% ({off_q:.2} ms) without",
                100.0 * on,
                100.0 * off
            );
        }
    }
}
