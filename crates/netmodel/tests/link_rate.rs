//! The transmitter delivers exactly the capacity its rate model describes:
//! constant, step schedule and mahimahi trace; plus fixed delay.

mod link_util;

use brisk_netmodel::link::{MahimahiTrace, RateModel, RateSchedule, RateStep};
use brisk_netmodel::{LinkConfig, LinkEvent};
use brisk_time::Instant;
use brisk_wire::Ecn;
use link_util::*;
use std::time::Duration;

fn within(measured: f64, want: f64, tolerance: f64) -> bool {
    (measured / want - 1.0).abs() <= tolerance
}

#[test]
fn constant_rate_is_delivered_within_one_percent() {
    for v6 in [false, true] {
        let config = LinkConfig {
            rate: RateModel::Constant { bps: 10_000_000 },
            delay: Duration::from_millis(20),
            ..LinkConfig::default()
        };
        let mut l = link(config, 100_000, 1);
        // Offered at 12 Mbit/s for 2 s: the link stays backlogged.
        let (got, _) = run(&mut l, paced(2000, Duration::from_millis(1), 1500, v6));
        let r = rate_bps(&got, ms(200), ms(1800));
        assert!(within(r, 10e6, 0.01), "v6={v6}: {r}");
        assert_eq!(got.len(), 2000);
    }
}

#[test]
fn schedule_steps_are_followed() {
    let steps = [(0, 10_000_000), (1000, 2_000_000), (2000, 5_000_000)];
    let schedule = RateSchedule::new(
        steps
            .iter()
            .map(|&(at, bps)| RateStep {
                at: Duration::from_millis(at),
                bps,
            })
            .collect(),
    )
    .unwrap();
    let config = LinkConfig {
        rate: RateModel::Schedule(schedule),
        ..LinkConfig::default()
    };
    let mut l = link(config, 100_000, 1);
    // 12 Mbit/s offered for 3 s keeps every step saturated.
    let (got, _) = run(&mut l, paced(3000, Duration::from_millis(1), 1500, false));
    for &(at, bps) in &steps {
        let r = rate_bps(&got, ms(at + 100), ms(at + 900));
        assert!(within(r, bps as f64, 0.01), "step at {at} ms: {r}");
    }
}

/// A trace whose opportunities bunch up: 0, 1 or 2 per millisecond in turn,
/// so one per millisecond on average, 12 Mbit/s.
fn bunched_trace() -> MahimahiTrace {
    let mut text = String::new();
    for ms in 1..=300u64 {
        for _ in 0..((ms + 1) % 3) {
            text.push_str(&format!("{ms}\n"));
        }
    }
    MahimahiTrace::parse(&text).unwrap()
}

#[test]
fn mahimahi_trace_rate_within_one_percent() {
    let trace = bunched_trace();
    assert!(within(trace.mean_bps(), 12e6, 1e-9));
    for v6 in [false, true] {
        let config = LinkConfig {
            rate: RateModel::Mahimahi(trace.clone()),
            ..LinkConfig::default()
        };
        let mut l = link(config, 100_000, 1);
        // 1500-byte packets, one opportunity each, offered at 15 Mbit/s.
        let (got, _) = run(&mut l, paced(2500, Duration::from_micros(800), 1500, v6));
        let r = rate_bps(&got, ms(100), ms(1900));
        assert!(within(r, trace.mean_bps(), 0.01), "v6={v6}: {r}");
        // Every delivery happens on an opportunity: whole milliseconds.
        assert!(got.iter().all(|(t, _)| t.as_nanos() % 1_000_000 == 0));
    }
}

#[test]
fn mahimahi_bytes_split_and_share_like_mahimahi() {
    // Opportunities at 10, 20, 30, 40 ms (and every 40 ms after).
    let trace = MahimahiTrace::parse("10\n20\n30\n40").unwrap();
    let config = LinkConfig {
        rate: RateModel::Mahimahi(trace),
        ..LinkConfig::default()
    };
    let mut l = link(config, 1000, 1);
    let arrivals = vec![
        // Three 500-byte packets share the 10 ms opportunity.
        (ms(1), udp(1, false, 500, Ecn::NotEct)),
        (ms(1), udp(2, false, 500, Ecn::NotEct)),
        (ms(1), udp(3, false, 500, Ecn::NotEct)),
        // 2000 bytes need the 20 and 30 ms opportunities; the 1000 bytes
        // left at 30 ms go to the next packet, whose other 200 bytes wait
        // for 40 ms.
        (ms(11), udp(4, false, 2000, Ecn::NotEct)),
        (ms(11), udp(5, false, 1200, Ecn::NotEct)),
        // Arriving at the very instant of the 50 ms opportunity misses it
        // (it was wasted on an empty queue): leaves at 60 ms.
        (ms(50), udp(6, false, 100, Ecn::NotEct)),
    ];
    let (got, events) = run(&mut l, arrivals);
    let got: Vec<(u64, u64)> = got.iter().map(|(t, p)| (t.as_millis(), p.id)).collect();
    assert_eq!(
        got,
        vec![(10, 1), (10, 2), (10, 3), (30, 4), (40, 5), (60, 6)]
    );
    // Packet 5 left the queue at 30 ms, when packet 4 finished.
    assert!(events.contains(&LinkEvent::Dequeued {
        at: ms(30),
        packet_id: 5,
        queue_delay: Duration::from_millis(19),
    }));
}

#[test]
fn idle_gaps_skip_opportunities_over_many_periods() {
    let trace = MahimahiTrace::parse("5\n10").unwrap();
    let config = LinkConfig {
        rate: RateModel::Mahimahi(trace),
        ..LinkConfig::default()
    };
    let mut l = link(config, 10, 1);
    // An hour later, the next opportunity after 3,600,000.001 s is at +5 ms.
    let at = Instant::from_micros(3_600_000_001);
    let (got, _) = run(&mut l, vec![(at, udp(1, true, 1500, Ecn::NotEct))]);
    assert_eq!(got[0].0, ms(3_600_005));
}

#[test]
fn one_way_delay_is_delay_plus_serialization() {
    for v6 in [false, true] {
        let config = LinkConfig {
            rate: RateModel::Constant { bps: 2_000_000 },
            delay: Duration::from_millis(35),
            ..LinkConfig::default()
        };
        let mut l = link(config, 1000, 1);
        // Spaced so the queue is always empty on arrival.
        let arrivals = paced(50, Duration::from_millis(10), 1000, v6);
        let (got, events) = run(&mut l, arrivals);
        assert_eq!(got.len(), 50);
        // 1000 B at 2 Mbit/s = 4 ms of serialization.
        for (t, p) in &got {
            assert_eq!(*t - p.sent_at, Duration::from_millis(39), "v6={v6}");
        }
        assert!(events.iter().all(|e| matches!(
            e,
            LinkEvent::Dequeued { queue_delay, .. } if queue_delay.is_zero()
        )));
        assert_eq!(l.stats().busy, Duration::from_millis(4 * 50));
    }
}
