//! Bursty delivery: packets leave only at transmit opportunities, in
//! trains, at the configured mean rate; the queue sees the wait.

mod link_util;

use brisk_netmodel::link::{Bursts, RateModel, RateSchedule, RateStep};
use brisk_netmodel::{LinkConfig, LinkEvent};
use brisk_time::Instant;
use link_util::*;
use std::collections::BTreeMap;
use std::time::Duration;

fn bursty(bps: u64, interval_ms: u64, jitter_ms: u64) -> LinkConfig {
    LinkConfig {
        rate: RateModel::Constant { bps },
        delay: Duration::from_millis(10),
        bursts: Some(
            Bursts::new(
                Duration::from_millis(interval_ms),
                Duration::from_millis(jitter_ms),
            )
            .unwrap(),
        ),
        ..LinkConfig::default()
    }
}

#[test]
fn a_saturated_link_delivers_its_mean_rate_in_trains() {
    for v6 in [false, true] {
        for (interval, jitter) in [(4, 0), (4, 1), (20, 5)] {
            let mut l = link(bursty(10_000_000, interval, jitter), 100_000, 3);
            // Offered at 12 Mbit/s for 2 s: the link stays backlogged.
            let (got, _) = run(&mut l, paced(2000, Duration::from_millis(1), 1500, v6));
            let r = rate_bps(&got, ms(200), ms(1800));
            assert!((r / 10e6 - 1.0).abs() < 0.02, "v6={v6} {interval}ms: {r}");
            // Arrivals share few instants: one per opportunity, each a train
            // of about rate * interval bytes.
            let mut trains: BTreeMap<Instant, usize> = BTreeMap::new();
            for (t, p) in &got {
                *trains.entry(*t).or_default() += p.len();
            }
            let mean = got.len() as f64 * 1500.0 / trains.len() as f64;
            let want = 10e6 / 8.0 * interval as f64 / 1000.0;
            assert!(
                (mean / want - 1.0).abs() < 0.1,
                "v6={v6} {interval}ms: {mean} bytes a train, want {want}"
            );
            // Consecutive trains are about an interval apart, within the jitter.
            let times: Vec<Instant> = trains.keys().copied().collect();
            for w in times.windows(2).take(300) {
                let gap = (w[1] - w[0]).as_millis() as u64;
                assert!(gap <= interval + 2 * jitter, "{gap} ms");
            }
        }
    }
}

#[test]
fn a_lone_packet_waits_for_the_next_opportunity() {
    for v6 in [false, true] {
        // Without jitter the opportunities sit at 4, 8, 12 ms.
        let mut l = link(bursty(10_000_000, 4, 0), 100, 1);
        let mut p = udp(0, v6, 1000, brisk_wire::Ecn::NotEct);
        p.sent_at = ms(5);
        p.enqueued_at = ms(5);
        let (got, events) = run(&mut l, vec![(ms(5), p)]);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].0, ms(8) + Duration::from_millis(10));
        let waited = events.iter().find_map(|e| match e {
            LinkEvent::Dequeued { queue_delay, .. } => Some(*queue_delay),
            _ => None,
        });
        assert_eq!(waited, Some(Duration::from_millis(3)));
        // Arriving at the very instant of an opportunity misses it.
        let mut l = link(bursty(10_000_000, 4, 0), 100, 1);
        let (got, _) = run(
            &mut l,
            vec![(ms(8), udp(0, v6, 1000, brisk_wire::Ecn::NotEct))],
        );
        assert_eq!(got[0].0, ms(12) + Duration::from_millis(10));
    }
}

#[test]
fn a_packet_larger_than_one_budget_spans_opportunities() {
    // 1 Mbit/s for 4 ms is 500 bytes: a 1500-byte packet needs three.
    let mut l = link(bursty(1_000_000, 4, 0), 100, 1);
    let (got, _) = run(
        &mut l,
        vec![(ms(1), udp(0, false, 1500, brisk_wire::Ecn::NotEct))],
    );
    assert_eq!(got[0].0, ms(12) + Duration::from_millis(10));
}

#[test]
fn budgets_follow_a_rate_schedule() {
    let mut config = bursty(0, 4, 1);
    config.rate = RateModel::Schedule(
        RateSchedule::new(vec![
            RateStep {
                at: Duration::ZERO,
                bps: 20_000_000,
            },
            RateStep {
                at: Duration::from_secs(1),
                bps: 5_000_000,
            },
        ])
        .unwrap(),
    );
    let mut l = link(config, 100_000, 9);
    let (got, _) = run(&mut l, paced(6000, Duration::from_micros(333), 1500, true));
    let before = rate_bps(&got, ms(200), ms(900));
    let after = rate_bps(&got, ms(1200), ms(1900));
    assert!((before / 20e6 - 1.0).abs() < 0.02, "{before}");
    assert!((after / 5e6 - 1.0).abs() < 0.02, "{after}");
}

#[test]
fn the_same_seed_gives_the_same_trains_and_another_seed_others() {
    let trains = |seed| {
        let mut l = link(bursty(10_000_000, 4, 2), 100_000, seed);
        let (got, _) = run(&mut l, paced(500, Duration::from_millis(1), 1500, false));
        got.into_iter().map(|(t, p)| (t, p.id)).collect::<Vec<_>>()
    };
    assert_eq!(trains(4), trains(4));
    assert_ne!(trains(4), trains(5));
}

/// Sojourn times in the queue discipline, in dequeue order.
fn queue_delays(events: &[LinkEvent]) -> Vec<Duration> {
    events
        .iter()
        .filter_map(|e| match e {
            LinkEvent::Dequeued { queue_delay, .. } => Some(*queue_delay),
            _ => None,
        })
        .collect()
}

fn with_driver(config: LinkConfig, airtime_ms: u64) -> LinkConfig {
    let bursts = config
        .bursts
        .unwrap()
        .with_driver_queue(Duration::from_millis(airtime_ms))
        .unwrap();
    LinkConfig {
        bursts: Some(bursts),
        ..config
    }
}

#[test]
fn with_a_driver_queue_a_lone_packet_waits_below_the_queue() {
    for v6 in [false, true] {
        let mut l = link(with_driver(bursty(10_000_000, 4, 0), 8), 100, 1);
        let (got, events) = run(
            &mut l,
            vec![(ms(5), udp(0, v6, 1000, brisk_wire::Ecn::NotEct))],
        );
        // Same opportunity as without a driver queue ...
        assert_eq!(got[0].0, ms(8) + Duration::from_millis(10));
        // ... but the wait happened in the driver: none in the queue.
        assert_eq!(queue_delays(&events), vec![Duration::ZERO]);
    }
}

#[test]
fn with_a_driver_queue_the_queue_sees_only_what_the_driver_has_no_room_for() {
    for v6 in [false, true] {
        // 9 Mbit/s offered to 10 Mbit/s in 4 +- 1 ms bursts, 2 s.
        let load = || paced(1500, Duration::from_micros(1333), 1500, v6);
        let (plain_got, plain_ev) = run(&mut link(bursty(10_000_000, 4, 1), 1000, 3), load());
        let config = with_driver(bursty(10_000_000, 4, 1), 8);
        let (got, events) = run(&mut link(config, 1000, 3), load());
        // Without the driver the queue counts the wait for each
        // opportunity (2 ms on average); with it, never any wait.
        let plain = queue_delays(&plain_ev);
        let mean = plain.iter().sum::<Duration>() / plain.len() as u32;
        assert!(mean > Duration::from_millis(1), "v6={v6}: {mean:?}");
        assert!(queue_delays(&events).iter().all(|d| d.is_zero()), "v6={v6}");
        // Both deliver everything, at the same opportunities' pace.
        assert_eq!((got.len(), plain_got.len()), (1500, 1500));
        let (a, b) = (
            rate_bps(&got, ms(200), ms(1800)),
            rate_bps(&plain_got, ms(200), ms(1800)),
        );
        assert!((a / b - 1.0).abs() < 0.02, "v6={v6}: {a} vs {b}");
    }
}

#[test]
fn with_a_driver_queue_a_saturated_link_keeps_its_rate_and_the_queue_its_backlog() {
    for v6 in [false, true] {
        // 12 Mbit/s offered to 10 Mbit/s: the backlog builds in the queue
        // discipline while the driver holds 8 ms (10 KB) at most.
        let config = with_driver(bursty(10_000_000, 4, 1), 8);
        let mut l = link(config, 100_000, 3);
        let (got, events) = run(&mut l, paced(2000, Duration::from_millis(1), 1500, v6));
        let r = rate_bps(&got, ms(200), ms(1800));
        assert!((r / 10e6 - 1.0).abs() < 0.02, "v6={v6}: {r}");
        // The queue's sojourn grows with the 2 Mbit/s excess: about 0.2 s
        // of it after 1 s (the driver's 8 ms are not counted).
        let d = queue_delays(&events);
        let late = d[1000];
        assert!(
            late > Duration::from_millis(150) && late < Duration::from_millis(250),
            "v6={v6}: {late:?}"
        );
    }
}

#[test]
fn a_driver_queue_shorter_than_the_opportunity_spacing_is_refused() {
    let b = Bursts::new(Duration::from_millis(4), Duration::from_millis(1)).unwrap();
    let e = b.with_driver_queue(Duration::from_millis(5)).unwrap_err();
    assert!(e.contains("widest spacing"), "{e}");
    assert!(b.with_driver_queue(Duration::from_millis(6)).is_ok());
}
