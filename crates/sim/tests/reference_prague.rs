//! The reference UDP Prague peer (`kind = "udp_prague"`, built with the
//! `reference-prague` feature): alone through DualPI2 with Linux's
//! defaults at 10 and 50 Mbit/s and 20 ms base RTT it keeps the link busy
//! with ECT(1) packets, reacts to CE marks, keeps its RTT near the base,
//! and repeats exactly run after run, on both address families.
#![cfg(feature = "reference-prague")]

mod common;

use brisk_sim::scenario::Scenario;
use common::{FAMILIES, flow, run_on};

fn alone(rate_mbit: u32) -> Scenario {
    let text = format!(
        "duration = \"8s\"\n\
         [link.down]\nrate = \"{rate_mbit}Mbit\"\ndelay = \"10ms\"\n\
         [link.up]\nrate = \"{rate_mbit}Mbit\"\ndelay = \"10ms\"\n\
         [queue.dualpi2]\n\
         [[flows]]\nname = \"reference\"\nkind = \"udp_prague\"\n"
    );
    Scenario::parse(&text, "reference.toml").unwrap()
}

#[test]
fn the_reference_peer_fills_a_default_dualpi2_at_10_and_50_mbit() {
    for rate in [10, 50] {
        let s = alone(rate);
        for ip in FAMILIES {
            let r = run_on(&s, ip);
            let f = flow(&r, "reference");
            let what = format!("{rate} Mbit/s {ip:?}: link {:?} flow {f:?}", r.link);
            assert!(r.link.utilization > 0.8, "{what}");
            assert!(f.goodput_mbps > 0.75 * rate as f64, "{what}");
            // ECT(1) into the L queue, marked there and answered: the
            // delay stays within a few milliseconds of the base.
            assert!(f.ce_packets > 100 && f.ce_fraction < 0.5, "{what}");
            assert!(f.rtt_measured && f.rtt_ms.p50 < 20.0 + 5.0, "{what}");
            assert!(f.queue_delay_ms.p99 < 5.0, "{what}");
            assert_eq!(f.queue_drops, 0, "{what}");
        }
    }
}

#[test]
fn reference_runs_repeat_exactly() {
    let s = alone(10);
    let a = run_on(&s, FAMILIES[0]);
    let b = run_on(&s, FAMILIES[0]);
    assert_eq!(
        serde_json::to_string(&a.flows).unwrap(),
        serde_json::to_string(&b.flows).unwrap()
    );
}
