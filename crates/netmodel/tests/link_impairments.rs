//! Impairments measured against their configured statistics: jitter, loss
//! (random and Gilbert-Elliott), reordering, duplication, outages, ECN
//! rewriting; and determinism.

mod link_util;

use brisk_netmodel::link::{
    EcnRewrite, GilbertElliott, IdleLoss, Jitter, LossModel, Outage, PeriodicOutage, RateModel,
    Reorder, ReorderDepth,
};
use brisk_netmodel::{LinkConfig, LinkEvent, LossCause, Packet};
use brisk_time::Instant;
use brisk_wire::{Ecn, ip};
use link_util::*;
use std::collections::HashSet;
use std::time::Duration;

/// A fast link (1 Gbit/s: 1500 B take 12 us) so impairments dominate.
fn fast(config: LinkConfig) -> LinkConfig {
    LinkConfig {
        rate: RateModel::Constant { bps: 1_000_000_000 },
        ..config
    }
}

fn mean_sd(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
    (mean, var.sqrt())
}

/// One-way delays in ms, minus the 12 us of serialization.
fn one_way_ms(got: &[(Instant, Packet)]) -> Vec<f64> {
    got.iter()
        .map(|(t, p)| (*t - p.sent_at).as_secs_f64() * 1e3 - 0.012)
        .collect()
}

fn ids(got: &[(Instant, Packet)]) -> Vec<u64> {
    got.iter().map(|(_, p)| p.id).collect()
}

#[test]
fn jitter_statistics_match_the_distribution() {
    let cases = [
        // Uniform +-6 ms: sd 6/sqrt(3).
        (Jitter::Uniform(Duration::from_millis(6)), 6.0 / 3f64.sqrt()),
        (Jitter::Normal(Duration::from_millis(3)), 3.0),
    ];
    for (jitter, want_sd) in cases {
        let config = fast(LinkConfig {
            delay: Duration::from_millis(30),
            jitter: Some(jitter),
            reorder_on_jitter: true,
            ..LinkConfig::default()
        });
        let mut l = link(config, 1000, 2);
        let (got, _) = run(&mut l, paced(20_000, Duration::from_millis(1), 1500, false));
        let (mean, sd) = mean_sd(&one_way_ms(&got));
        assert!((mean - 30.0).abs() < 0.1, "{jitter:?}: mean {mean}");
        assert!((sd / want_sd - 1.0).abs() < 0.03, "{jitter:?}: sd {sd}");
        // 1 ms apart with several ms of jitter: the order does change.
        assert!(ids(&got).windows(2).any(|w| w[1] < w[0]));
    }
}

#[test]
fn jitter_keeps_order_unless_allowed() {
    for v6 in [false, true] {
        let config = fast(LinkConfig {
            delay: Duration::from_millis(30),
            jitter: Some(Jitter::Uniform(Duration::from_millis(6))),
            ..LinkConfig::default()
        });
        let mut l = link(config, 1000, 3);
        let (got, _) = run(&mut l, paced(5_000, Duration::from_millis(1), 1200, v6));
        let got_ids = ids(&got);
        assert!(got_ids.windows(2).all(|w| w[0] < w[1]), "v6={v6}");
        assert_eq!(got_ids.len(), 5_000);
        // Holding order only ever adds delay: never below delay - jitter,
        // and the mean rises above 30 ms.
        let delays = one_way_ms(&got);
        assert!(delays.iter().all(|d| *d >= 24.0 - 1e-6));
        let (mean, _) = mean_sd(&delays);
        assert!(mean > 30.5, "{mean}");
    }
}

#[test]
fn random_loss_rate_over_100k_packets() {
    let config = fast(LinkConfig {
        loss: Some(LossModel::Random { probability: 0.01 }),
        ..LinkConfig::default()
    });
    let mut l = link(config, 1000, 4);
    let n = 100_000;
    let (got, events) = run(&mut l, paced(n, Duration::from_micros(20), 100, false));
    let lost: Vec<u64> = events
        .iter()
        .filter_map(|e| match e {
            LinkEvent::Lost { packet, cause, .. } => {
                assert_eq!(*cause, LossCause::Random);
                Some(packet.id)
            }
            _ => None,
        })
        .collect();
    let rate = lost.len() as f64 / n as f64;
    // Binomial sd is sqrt(p(1-p)/n) = 0.00031; allow 4 sd.
    assert!((rate - 0.01).abs() < 0.00126, "{rate}");
    assert_eq!(got.len() + lost.len(), n as usize);
    let delivered: HashSet<u64> = ids(&got).into_iter().collect();
    assert!(lost.iter().all(|id| !delivered.contains(id)));
    assert_eq!(l.stats().lost_packets, lost.len() as u64);
}

/// Lengths of the runs of consecutive lost packet ids.
fn bursts(lost: &[u64]) -> Vec<u64> {
    let mut runs = Vec::new();
    let mut run_len = 0;
    for (i, id) in lost.iter().enumerate() {
        if i > 0 && lost[i - 1] + 1 == *id {
            run_len += 1;
        } else {
            if run_len > 0 {
                runs.push(run_len);
            }
            run_len = 1;
        }
    }
    runs.push(run_len);
    runs
}

fn lost_ids(events: &[LinkEvent]) -> Vec<u64> {
    events
        .iter()
        .filter_map(|e| match e {
            LinkEvent::Lost { packet, .. } => Some(packet.id),
            _ => None,
        })
        .collect()
}

#[test]
fn gilbert_elliott_mean_loss_and_burst_length() {
    let ge = GilbertElliott::new(0.02, 5.0).unwrap();
    let config = fast(LinkConfig {
        loss: Some(LossModel::GilbertElliott(ge)),
        ..LinkConfig::default()
    });
    let mut l = link(config, 1000, 5);
    let n = 200_000;
    let (_, events) = run(&mut l, paced(n, Duration::from_micros(20), 100, true));
    let lost = lost_ids(&events);
    let rate = lost.len() as f64 / n as f64;
    let runs = bursts(&lost);
    let mean_burst = lost.len() as f64 / runs.len() as f64;
    // About 800 bursts: the loss rate's sd is ~0.1% absolute and the mean
    // burst's ~0.16 packets; allow 4 sd.
    assert!((rate - 0.02).abs() < 0.004, "{rate}");
    assert!((mean_burst - 5.0).abs() < 0.65, "{mean_burst}");

    // The same loss rate drawn independently has bursts of about 1.
    let config = fast(LinkConfig {
        loss: Some(LossModel::Random { probability: 0.02 }),
        ..LinkConfig::default()
    });
    let mut l = link(config, 1000, 5);
    let (_, events) = run(&mut l, paced(n, Duration::from_micros(20), 100, true));
    let lost = lost_ids(&events);
    let mean_burst = lost.len() as f64 / bursts(&lost).len() as f64;
    assert!(mean_burst < 1.05, "{mean_burst}");
}

/// For each delivered packet, how many packets sent after it arrived
/// before it (ids are the send order; a Fenwick tree over ids counts).
fn displacement(got: &[(Instant, Packet)]) -> Vec<(u64, usize)> {
    let n = got
        .iter()
        .map(|(_, p)| p.id)
        .max()
        .map_or(0, |m| m as usize + 1);
    let mut tree = vec![0usize; n + 1];
    let mut seen = 0;
    got.iter()
        .map(|(_, p)| {
            let id = p.id as usize;
            let (mut i, mut not_after) = (id + 1, 0);
            while i > 0 {
                not_after += tree[i];
                i &= i - 1;
            }
            let mut i = id + 1;
            while i <= n {
                tree[i] += 1;
                i += i & i.wrapping_neg();
            }
            seen += 1;
            (p.id, seen - 1 - not_after)
        })
        .collect()
}

#[test]
fn reordering_by_packets_has_the_configured_depth_and_rate() {
    let config = LinkConfig {
        rate: RateModel::Constant { bps: 10_000_000 },
        reorder: Some(Reorder {
            probability: 0.01,
            depth: ReorderDepth::Packets(30),
        }),
        ..LinkConfig::default()
    };
    let mut l = link(config, 100_000, 6);
    let n = 20_000u64;
    // All queued at once: the transmitter stays backlogged.
    let arrivals = (0..n)
        .map(|i| (Instant::ZERO, udp(i, false, 200, Ecn::NotEct)))
        .collect();
    let (got, _) = run(&mut l, arrivals);
    assert_eq!(got.len(), n as usize);
    let moved: Vec<(u64, usize)> = displacement(&got).into_iter().filter(|d| d.1 > 0).collect();
    let share = moved.len() as f64 / n as f64;
    // sd of the share: sqrt(0.01 * 0.99 / 20000) = 0.0007.
    assert!((share - 0.01).abs() < 0.0028, "{share}");
    assert_eq!(l.stats().reordered_packets, moved.len() as u64);
    // Every reordered packet is overtaken by exactly 30 others, except at
    // the very end where fewer than 30 were left to overtake it.
    for (id, d) in &moved {
        assert!(*d == 30 || *id >= n - 30, "packet {id} overtaken by {d}");
    }
}

#[test]
fn reordering_by_time_delays_by_the_depth() {
    let config = fast(LinkConfig {
        delay: Duration::from_millis(10),
        reorder: Some(Reorder {
            probability: 0.02,
            depth: ReorderDepth::Time(Duration::from_micros(50_500)),
        }),
        ..LinkConfig::default()
    });
    let mut l = link(config, 1000, 7);
    let (got, events) = run(&mut l, paced(10_000, Duration::from_millis(1), 500, true));
    let held: HashSet<u64> = events
        .iter()
        .filter_map(|e| match e {
            LinkEvent::Reordered { packet_id, .. } => Some(*packet_id),
            _ => None,
        })
        .collect();
    let share = held.len() as f64 / 10_000.0;
    assert!((share - 0.02).abs() < 0.0056, "{share}");
    for (t, p) in &got {
        let extra = if held.contains(&p.id) { 50_500 } else { 0 };
        assert_eq!(
            (*t - p.sent_at).as_micros(),
            10_000 + 4 + extra,
            "packet {}",
            p.id
        );
    }
    // Packets 1 ms apart overtake a 50.5 ms-late one: the next 50, less
    // those held back themselves.
    for (id, d) in displacement(&got) {
        let want = if held.contains(&id) {
            (id + 1..=id + 50).filter(|i| !held.contains(i)).count()
        } else {
            0
        };
        assert!(d == want || id >= 10_000 - 51, "packet {id}: {d}");
    }
}

#[test]
fn duplication_rate_and_copies() {
    let config = fast(LinkConfig {
        duplicate: 0.01,
        ..LinkConfig::default()
    });
    let mut l = link(config, 1000, 8);
    let n = 100_000;
    let (got, events) = run(&mut l, paced(n, Duration::from_micros(20), 100, false));
    let dups = events
        .iter()
        .filter(|e| matches!(e, LinkEvent::Duplicated { .. }))
        .count();
    // sd sqrt(100000 * 0.01 * 0.99) = 31.5; allow 4 sd.
    assert!((dups as f64 - 1000.0).abs() < 126.0, "{dups}");
    assert_eq!(got.len(), n as usize + dups);
    // Copies arrive right behind their original, identical.
    let twins = got
        .windows(2)
        .filter(|w| w[0].1.id == w[1].1.id && w[0].1.data == w[1].1.data)
        .count();
    assert_eq!(twins, dups);
    assert_eq!(l.stats().delivered_packets, got.len() as u64);
}

/// A 4 Mbit/s offered load (500 B every 1 ms) on a 10 Mbit/s link with a
/// 1 s outage from 2 s to 3 s and 20 ms of delay.
fn outage_run(drops: bool, queue_limit: usize) -> (Vec<(Instant, Packet)>, Vec<LinkEvent>) {
    let config = LinkConfig {
        rate: RateModel::Constant { bps: 10_000_000 },
        delay: Duration::from_millis(20),
        outages: vec![Outage {
            start: Duration::from_secs(2),
            duration: Duration::from_secs(1),
        }],
        outage_drops: drops,
        ..LinkConfig::default()
    };
    let mut l = link(config, queue_limit, 9);
    run(&mut l, paced(5000, Duration::from_millis(1), 500, false))
}

fn count_in(got: &[(Instant, Packet)], from: u64, to: u64) -> usize {
    got.iter()
        .filter(|(t, _)| *t >= ms(from) && *t < ms(to))
        .count()
}

#[test]
fn outage_freezes_then_bursts() {
    let (got, events) = outage_run(false, 10_000);
    assert_eq!(got.len(), 5000);
    // Nothing arrives while the radio is down (shifted by the delay).
    assert_eq!(count_in(&got, 2021, 3020), 0);
    // Before: the offered 1 packet/ms. After: the backlog of ~1000 packets
    // drains at 10 Mbit/s, 2.5 packets/ms.
    assert_eq!(count_in(&got, 1020, 2020), 1000);
    let burst = count_in(&got, 3020, 3120);
    assert!((248..=251).contains(&burst), "{burst}");
    assert!(!events.iter().any(|e| matches!(e, LinkEvent::Lost { .. })));
}

#[test]
fn outage_overflows_a_small_queue() {
    let (got, events) = outage_run(false, 100);
    let drops = events
        .iter()
        .filter(|e| matches!(e, LinkEvent::QueueDrop { .. }))
        .count();
    // 1000 packets arrive in the outage; the queue keeps 100.
    assert!((899..=901).contains(&drops), "{drops}");
    assert_eq!(got.len() + drops, 5000);
}

#[test]
fn outage_drops_loses_instead_of_queueing() {
    let (got, events) = outage_run(true, 10_000);
    let lost: Vec<&LinkEvent> = events
        .iter()
        .filter(|e| matches!(e, LinkEvent::Lost { .. }))
        .collect();
    assert!(lost.iter().all(|e| matches!(
        e,
        LinkEvent::Lost { at, cause: LossCause::Outage, .. } if *at >= ms(2000) && *at < ms(3000)
    )));
    assert_eq!(lost.len(), 1000);
    assert_eq!(count_in(&got, 2021, 3020), 0);
    // No backlog: right after the outage the offered rate resumes.
    assert_eq!(count_in(&got, 3021, 3121), 100);
}

#[test]
fn periodic_outages_repeat() {
    let config = LinkConfig {
        outage_every: Some(
            PeriodicOutage::new(Duration::from_millis(500), Duration::from_millis(100), None)
                .unwrap(),
        ),
        outage_drops: true,
        ..fast(LinkConfig::default())
    };
    let mut l = link(config, 1000, 10);
    let (got, _) = run(&mut l, paced(2000, Duration::from_millis(1), 500, false));
    // Down 500-600, 1000-1100, 1500-1600 ms: 300 of 2000 lost.
    assert_eq!(got.len(), 1700);
    for window in [500, 1000, 1500] {
        assert_eq!(count_in(&got, window, window + 100), 0);
    }
}

#[test]
fn first_packets_after_idle_are_lost() {
    let config = LinkConfig {
        loss_after_idle: Some(IdleLoss {
            idle: Duration::from_secs(5),
            packets: 3,
        }),
        ..fast(LinkConfig::default())
    };
    let mut l = link(config, 100, 12);
    // Bursts of 10 packets at 0 s, 4 s (idle 4 s: kept) and 10 s (idle
    // 6 s: the first 3 are lost).
    let arrivals = [0u64, 4_000, 10_000]
        .iter()
        .flat_map(|&start| (0..10).map(move |i| start + i))
        .enumerate()
        .map(|(id, t)| (ms(t), udp(id as u64, false, 1000, Ecn::Ect1)))
        .collect();
    let (got, events) = run(&mut l, arrivals);
    let lost: Vec<(u64, LossCause)> = events
        .iter()
        .filter_map(|e| match e {
            LinkEvent::Lost { packet, cause, .. } => Some((packet.id, *cause)),
            _ => None,
        })
        .collect();
    let after_idle = LossCause::AfterIdle;
    assert_eq!(
        lost,
        vec![(20, after_idle), (21, after_idle), (22, after_idle)]
    );
    assert_eq!(got.len(), 27);
}

#[test]
fn ecn_rewrites_keep_packets_valid() {
    use Ecn::*;
    let cases = [
        (EcnRewrite::Bleach, [NotEct, NotEct, NotEct, NotEct]),
        (EcnRewrite::CeOnly, [NotEct, Ce, Ce, Ce]),
        (EcnRewrite::Ect1ToEct0, [NotEct, Ect0, Ect0, Ce]),
        (EcnRewrite::Pass, [NotEct, Ect1, Ect0, Ce]),
    ];
    let sent = [NotEct, Ect1, Ect0, Ce];
    for (rewrite, want) in cases {
        for v6 in [false, true] {
            let config = LinkConfig {
                ecn: rewrite,
                ..LinkConfig::default()
            };
            let mut l = link(config, 100, 11);
            let arrivals = sent
                .iter()
                .enumerate()
                .map(|(i, e)| (ms(i as u64), udp(i as u64, v6, 300, *e)))
                .collect();
            let (got, events) = run(&mut l, arrivals);
            let seen: Vec<Ecn> = got
                .iter()
                .map(|(_, p)| {
                    // parse_udp verifies the IPv4 header and UDP checksums.
                    let (_, _, ecn, payload) = ip::parse_udp(&p.data).unwrap();
                    assert_eq!(payload.len(), 300 - if v6 { 48 } else { 28 });
                    assert_eq!(ecn, p.ecn());
                    ecn
                })
                .collect();
            assert_eq!(seen, want, "{rewrite:?} v6={v6}");
            let changed = sent.iter().zip(&want).filter(|(a, b)| a != b).count();
            let events = events
                .iter()
                .filter(|e| matches!(e, LinkEvent::EcnRewritten { .. }))
                .count();
            assert_eq!(events, changed);
        }
    }
}

fn everything() -> LinkConfig {
    LinkConfig {
        rate: RateModel::Constant { bps: 5_000_000 },
        delay: Duration::from_millis(15),
        jitter: Some(Jitter::Normal(Duration::from_millis(2))),
        loss: Some(LossModel::GilbertElliott(
            GilbertElliott::new(0.03, 3.0).unwrap(),
        )),
        reorder: Some(Reorder {
            probability: 0.02,
            depth: ReorderDepth::Packets(5),
        }),
        duplicate: 0.01,
        outage_every: Some(
            PeriodicOutage::new(Duration::from_millis(700), Duration::from_millis(50), None)
                .unwrap(),
        ),
        ecn: EcnRewrite::CeOnly,
        ..LinkConfig::default()
    }
}

fn trace_of(seed: u64) -> Vec<(Instant, u64, Vec<u8>)> {
    let mut l = link(everything(), 50, seed);
    let (got, _) = run(&mut l, paced(3000, Duration::from_micros(700), 1000, false));
    got.into_iter().map(|(t, p)| (t, p.id, p.data)).collect()
}

#[test]
fn same_seed_same_deliveries() {
    let a = trace_of(42);
    assert_eq!(a, trace_of(42));
    assert_ne!(a, trace_of(43));
}

#[test]
fn late_calls_replay_the_same_run() {
    // Drive one link event by event and another with a coarse 7 ms tick:
    // arrivals at exact times, timers only on the tick.
    let arrivals = paced(3000, Duration::from_micros(700), 1000, true);
    let mut exact = link(everything(), 50, 5);
    let (want, want_events) = run(&mut exact, arrivals.clone());

    let mut coarse = link(everything(), 50, 5);
    let (mut got, mut got_events) = (Vec::new(), Vec::new());
    let mut pending = arrivals.into_iter().peekable();
    let mut now = Instant::ZERO;
    while pending.peek().is_some() || coarse.poll_timeout().is_some() {
        now += Duration::from_millis(7);
        while let Some((at, p)) = pending.next_if(|(at, _)| *at <= now) {
            coarse.handle_packet(at, p);
        }
        coarse.handle_timeout(now);
        got.extend(std::iter::from_fn(|| coarse.poll_delivery()));
        got_events.extend(std::iter::from_fn(|| coarse.poll_event()));
    }
    assert_eq!(got, want);
    assert_eq!(got_events, want_events);
    assert!(want_events.len() > 3000);
}
