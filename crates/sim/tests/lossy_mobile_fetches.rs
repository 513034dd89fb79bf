//! The lab's "Lossy mobile links" goal on the simulator, on IPv4 and
//! IPv6: 40 fetches of a 50 KB object, each on a fresh connection, over
//! 10 Mbit/s at 220 ms RTT with 5% random loss on the data direction (the
//! lab's own scenario files). A fetch's time runs from its connection's
//! start to the object's last byte, handshake included, as in the lab.
//! The test holds the first goal (at most 1.3 times the loss-free
//! p95 with FEC) and FEC beating no FEC by a fifth; the issue's "twice
//! better than without FEC" cannot hold here, as without FEC the p95 is
//! under twice the loss-free one (see docs/PROTOCOL.md).
//!
//! `cargo test --release -p brisk-sim --test lossy_mobile_fetches -- --nocapture`

mod common;

use brisk_sim::scenario::{Brisk, BriskWorkloadSpec, IpFamily, Scenario, Traffic};
use common::{FAMILIES, run_on};
use std::path::Path;

const GOAL_BYTES: u64 = 50_000;

/// The lab scenario `stem`'s 50 KB fetches over `ip`, sorted by time: (the
/// fetch's time in ms, its handshake's in ms, its sender's probe
/// timeouts). A fetch that never finished counts as the time it had.
fn fetches(stem: &str, ip: IpFamily) -> Vec<(f64, f64, u64)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../lab/default/lossy-mobile")
        .join(format!("{stem}.toml"));
    let s = Scenario::load(&path).expect("the lab's scenario file");
    let r = run_on(&s, ip);
    let mut ms = Vec::new();
    for (spec, flow) in s.flows.iter().zip(&r.flows) {
        let Traffic::Brisk(Brisk {
            app: BriskWorkloadSpec::Feed { objects, .. },
            ..
        }) = &spec.traffic
        else {
            continue;
        };
        if objects.iter().sum::<u64>() != GOAL_BYTES {
            continue;
        }
        let had = s.duration.saturating_sub(spec.start.unwrap_or_default());
        let b = flow.brisk.as_ref();
        let done = b.and_then(|b| b.completion_time_s);
        let t = done.map_or(had.as_secs_f64(), |s| s) * 1000.0;
        let hs = b.and_then(|b| b.transport.handshake_ms).unwrap_or(f64::NAN);
        let ptos = b.map_or(0, |b| b.transport.ptos);
        ms.push((t, hs, ptos));
    }
    ms.sort_by(|a, b| a.0.total_cmp(&b.0));
    ms
}

/// The 95th percentile (nearest rank) of sorted fetches, in ms.
fn p95(sorted: &[(f64, f64, u64)]) -> f64 {
    let rank = (sorted.len() as f64 * 0.95).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1].0
}

#[test]
fn a_50_kb_fetch_at_5_percent_loss_stays_near_the_loss_free_one() {
    for ip in FAMILIES {
        let clean = p95(&fetches("nofec-220ms-0pct", ip));
        let fec_clean = p95(&fetches("fec-220ms-0pct", ip));
        let fec = fetches("fec-220ms-5pct", ip);
        let plain = fetches("nofec-220ms-5pct", ip);
        let (fec95, plain95) = (p95(&fec), p95(&plain));
        eprintln!(
            "{ip:?}: 50 KB at 220 ms, p95 of {} fetches from connection start: loss-free \
             {clean:.0} ms (with FEC {fec_clean:.0} ms); 5% loss: with FEC {fec95:.0} ms \
             ({:.2}x loss-free), without {plain95:.0} ms ({:.2}x with FEC); the three slowest with \
             FEC (ms, handshake ms, probe timeouts): {:.0?}",
            fec.len(),
            fec95 / clean,
            plain95 / fec95,
            &fec[fec.len().saturating_sub(3)..],
        );
        assert!(
            fec95 <= 1.3 * clean,
            "{ip:?}: FEC p95 {fec95} ms vs loss-free {clean} ms"
        );
        assert!(
            plain95 >= 1.2 * fec95,
            "{ip:?}: without FEC {plain95} ms vs with {fec95} ms"
        );
    }
}
