//! The bursty link (`bursts = { interval, jitter }`) in whole runs: a
//! probe waits for the next transmit opportunity, so its round trips
//! spread over one interval above the base, and a saturating load still
//! gets the link's mean rate. Against the same link without bursts, on
//! both address families.

mod common;

use brisk_sim::scenario::Scenario;
use common::{FAMILIES, flow, run_on};

fn scenario(bursts: &str) -> Scenario {
    let text = format!(
        "duration = \"5s\"\nseed = 3\n\
         [link.down]\nrate = \"10Mbit\"\ndelay = \"10ms\"\n{bursts}\n\
         [link.up]\nrate = \"10Mbit\"\ndelay = \"10ms\"\n\
         [[flows]]\nname = \"load\"\nkind = \"cbr\"\nrate = \"9Mbit\"\n\
         [[flows]]\nname = \"ping\"\nkind = \"ping\"\ninterval = \"7ms\"\n"
    );
    Scenario::parse(&text, "bursts.toml").unwrap()
}

#[test]
fn probes_wait_up_to_one_interval_and_the_load_keeps_the_mean_rate() {
    let plain = scenario("");
    let bursty = scenario("bursts = { interval = \"4ms\", jitter = \"1ms\" }");
    for ip in FAMILIES {
        let (p, b) = (run_on(&plain, ip), run_on(&bursty, ip));
        let (pp, bp) = (flow(&p, "ping"), flow(&b, "ping"));
        let what = format!("{ip:?}: plain {:?}; bursts {:?}", pp.rtt_ms, bp.rtt_ms);
        // Plain: a 9 Mbit/s load on 10 Mbit/s leaves at most a packet or
        // two ahead of a probe. Bursts: the wait for the next opportunity
        // (0 to 4 +- 1 ms, 2 ms on average) comes on top.
        assert!(pp.rtt_ms.p50 < 22.0, "{what}");
        assert!(bp.rtt_ms.p50 > pp.rtt_ms.p50 + 1.0, "{what}");
        assert!(bp.rtt_ms.p99 < 20.0 + 5.0 + 3.0, "{what}");
        assert!(bp.rtt_ms.p99 - bp.rtt_ms.p50 > 1.0, "{what}");
        // The queue sees the waits (its AQM would act on them).
        assert!(
            b.queue.delay_ms.p50 > p.queue.delay_ms.p50 + 1.0,
            "{ip:?}: queue {:?} vs {:?}",
            b.queue.delay_ms,
            p.queue.delay_ms
        );
        // Same goodput for the load: bursts move when, not how much.
        let (pl, bl) = (flow(&p, "load"), flow(&b, "load"));
        assert!(
            (bl.goodput_mbps / pl.goodput_mbps - 1.0).abs() < 0.01,
            "{ip:?}: {} vs {}",
            bl.goodput_mbps,
            pl.goodput_mbps
        );
        assert_eq!(bl.queue_drops + bp.queue_drops, 0, "{ip:?}");
    }
}

#[test]
fn a_saturated_bursty_link_is_busy_at_its_mean_rate_and_runs_repeat() {
    let text = "duration = \"3s\"\n\
         [link.down]\nrate = \"20Mbit\"\ndelay = \"5ms\"\n\
         bursts = { interval = \"4ms\", jitter = \"2ms\" }\n\
         [link.up]\nrate = \"20Mbit\"\ndelay = \"5ms\"\n\
         [[flows]]\nname = \"load\"\nkind = \"cbr\"\nrate = \"30Mbit\"\n";
    let s = Scenario::parse(text, "saturated.toml").unwrap();
    for ip in FAMILIES {
        let r = run_on(&s, ip);
        assert!(r.link.utilization > 0.98, "{ip:?}: {}", r.link.utilization);
        assert!(
            (r.link.throughput_mbps / 20.0 - 1.0).abs() < 0.02,
            "{ip:?}: {}",
            r.link.throughput_mbps
        );
        let again = run_on(&s, ip);
        assert_eq!(
            serde_json::to_string(&r.flows).unwrap(),
            serde_json::to_string(&again.flows).unwrap()
        );
    }
}
