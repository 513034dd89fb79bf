//! Prague through an RFC 3168 FQ-CoDel whose rate drops from 50 to
//! 1 Mbit/s, behind a hop that rewrites ECT(1) to ECT(0): the lab's
//! `classic-drop-ect0` case of "L4S where it usually breaks" (drop at
//! 4 s, 10 s run, 20 ms base RTT). The goal is the RTT back within 100 ms
//! of the base no later than 2 s after the drop. The return link drops to
//! 1 Mbit/s too. The queue the drop leaves holds the flight sent at
//! 50 Mbit/s (about 110 kB, 0.9 s at 1 Mbit/s). The first mark shows only
//! the start of that queue (150 ms) and left a window of 18 kB, seven
//! times what 1 Mbit/s carries in 25 ms; the later marks on the same
//! flight fell in the halving's recovery period and were ignored. On IPv6
//! no mark came on a packet sent after the halving until that window had
//! rebuilt a queue of 150 ms (2.01 s); now those later marks take the
//! window down with the queue: 1.09 s on both families, the same on seeds
//! 1-6 (Prague alone draws no randomness). Printed per seed and family:
//! `cargo test --profile ci -p brisk-sim --test
//! l4s_classic_rewrite_step -- --ignored --nocapture seeds`; per drop
//! time from 3 to 6 s: `... drop_times`; the sender's window, RTTs and
//! pacing rate around one drop: `... --exact trace`.

mod l4s_common;

use brisk_sim::scenario::IpFamily;
use l4s_common::{FAMILIES, bulk, dumbbell, run_series_seeded, series};
use std::time::Duration;

const DROP_AT: Duration = Duration::from_secs(4);
const SECS: u64 = 10;
const BASE_MS: u64 = 20;

/// Seconds from the drop to the last RTT sample more than 100 ms above
/// the base (the rest of the run if the last sample is still above), and
/// the worst RTT after the drop, on `seed` over `ip`.
fn recovery(seed: u64, ip: IpFamily) -> (f64, Duration) {
    recovery_at(DROP_AT, seed, ip)
}

/// [`recovery`] with the drop at `drop_at` (the run lasts `SECS` from the
/// start either way).
fn recovery_at(drop_at: Duration, seed: u64, ip: IpFamily) -> (f64, Duration) {
    let s = dumbbell(
        &format!(
            "{{ schedule = [[\"0s\", \"50Mbit\"], [\"{}s\", \"1Mbit\"]] }}",
            drop_at.as_secs_f64()
        ),
        "[queue.fq_codel]",
        "ecn = \"ect1_to_ect0\"",
        &[bulk("prague", "prague", BASE_MS)],
        SECS,
    );
    let (_, all) = run_series_seeded(&s, ip, Some(seed));
    let drop = brisk_time::Instant::ZERO + drop_at;
    let limit = Duration::from_millis(BASE_MS + 100);
    let after: Vec<_> = series(&all, "prague")
        .rtt
        .iter()
        .filter(|(t, _)| *t >= drop)
        .collect();
    let worst = after.iter().map(|(_, r)| *r).max().unwrap_or_default();
    if after.last().is_some_and(|(_, r)| *r > limit) {
        return ((Duration::from_secs(SECS) - drop_at).as_secs_f64(), worst);
    }
    let last_high = after
        .iter()
        .rev()
        .find(|(_, r)| *r > limit)
        .map_or(0.0, |(t, _)| (*t - drop).as_secs_f64());
    (last_high, worst)
}

/// Drop times along the sawtooth the default run holds: 4 s (the lab's
/// case), 3.5 and 4.75 s (the slowest of the quarter-second sweep) and
/// 4.25 s, where on IPv6 the queue was gone 1.23 s after the drop but the
/// sender, pacing its small window over a smoothed RTT still near a
/// second, left the link idle for 1.3 s more (3.57 s in all).
const HELD_DROPS_MS: [u64; 4] = [3500, 4000, 4250, 4750];

/// 0.95-1.51 s on IPv4 and on IPv6 at each drop time held.
#[test]
fn prague_behind_a_rewrite_recovers_from_a_rate_drop_within_2s() {
    for ip in FAMILIES {
        for ms in HELD_DROPS_MS {
            let at = Duration::from_millis(ms);
            let (recovered, worst) = recovery_at(at, 1, ip);
            assert!(
                recovered <= 2.0,
                "{ip:?}, drop at {at:?}: RTT above base + 100 ms until {recovered:.2} s after the drop (worst {worst:?})"
            );
            // The drop did build a queue: the bound is not met by accident.
            assert!(
                worst > Duration::from_millis(500),
                "{ip:?}, drop at {at:?}: worst {worst:?}"
            );
        }
    }
}

/// Recovery per seed 1-6 and family, printed.
#[test]
#[ignore = "prints a table; run it by hand"]
fn seeds() {
    println!("family | seed | recovery s | worst RTT after the drop ms");
    for ip in FAMILIES {
        for seed in 1..=6 {
            let (recovered, worst) = recovery(seed, ip);
            println!(
                "{ip:?} | {seed} | {recovered:.2} | {:.0}",
                worst.as_secs_f64() * 1e3
            );
        }
    }
}

/// Recovery with the drop anywhere from 3 to 6 s in quarter seconds (the
/// window the drop catches varies along Reno's sawtooth), printed.
#[test]
#[ignore = "prints a table; run it by hand"]
fn drop_times() {
    println!("family | drop at s | recovery s | worst RTT after the drop ms");
    for ip in FAMILIES {
        for quarter in 12..=24 {
            let at = Duration::from_millis(quarter * 250);
            let (recovered, worst) = recovery_at(at, 1, ip);
            println!(
                "{ip:?} | {:.2} | {recovered:.2} | {:.0}",
                at.as_secs_f64(),
                worst.as_secs_f64() * 1e3
            );
        }
    }
}

/// The sender's window, RTTs, pacing rate and bytes in flight around a
/// drop, every 50 ms of virtual time from 0.2 s before it to 3 s after,
/// with the queue delay of the packets dequeued in that slot: where the
/// recovery time goes. `TRACE_DROP_MS` sets the drop (4250 unless set),
/// `TRACE_V6=1` the family, `TRACE_PLAIN=1` leaves out the rewrite.
#[test]
#[ignore = "prints a trace; run it by hand"]
fn trace() {
    use brisk_proto::qlog::{QlogEvent, QlogSink, VantageKind};
    use std::sync::{Arc, Mutex};
    let drop_ms: u64 = std::env::var("TRACE_DROP_MS").map_or(4250, |v| v.parse().unwrap());
    let ip = if std::env::var("TRACE_V6").is_ok() {
        IpFamily::V6
    } else {
        IpFamily::V4
    };
    let drop_at = Duration::from_millis(drop_ms);
    let s = dumbbell(
        &format!(
            "{{ schedule = [[\"0s\", \"50Mbit\"], [\"{}s\", \"1Mbit\"]] }}",
            drop_at.as_secs_f64()
        ),
        "[queue.fq_codel]",
        if std::env::var("TRACE_PLAIN").is_ok() {
            ""
        } else {
            "ecn = \"ect1_to_ect0\""
        },
        &[bulk("prague", "prague", BASE_MS)],
        drop_at.as_secs() + 6,
    );
    type Log = Arc<Mutex<Vec<(brisk_time::Instant, brisk_proto::qlog::Metrics)>>>;
    struct Sink(Log);
    impl QlogSink for Sink {
        fn emit(&mut self, time: brisk_time::Instant, event: QlogEvent) {
            if let QlogEvent::MetricsUpdated(m) = event {
                self.0.lock().unwrap().push((time, m));
            }
        }
    }
    let log: Log = Arc::default();
    let l = log.clone();
    let r = brisk_sim::run(
        &s,
        brisk_sim::RunOptions {
            ip: Some(ip),
            seed: Some(1),
            series: true,
            qlog: Some(Arc::new(move |_, start| {
                (start.vantage == VantageKind::Client)
                    .then(|| Box::new(Sink(l.clone())) as Box<dyn QlogSink>)
            })),
            ..Default::default()
        },
    );
    let all = r.outcome.series();
    let f = series(&all, "prague");
    let log = log.lock().unwrap();
    let drop = brisk_time::Instant::ZERO + drop_at;
    println!(
        "t-drop ms | cwnd B | flight B | srtt ms | latest ms | min ms | pace kbit/s | app rtt max ms | queue max ms | updates"
    );
    let slot = Duration::from_millis(50);
    let mut t = drop - Duration::from_millis(200);
    while t < drop + Duration::from_secs(3) {
        let end = t + slot;
        let in_slot: Vec<_> = log.iter().filter(|(w, _)| *w >= t && *w < end).collect();
        let last = log.iter().rev().find(|(w, _)| *w < end).map(|(_, m)| m);
        let ms = |d: Option<Duration>| d.map_or(f64::NAN, |d| d.as_secs_f64() * 1e3);
        let app = f
            .rtt
            .iter()
            .filter(|(w, _)| *w >= t && *w < end)
            .map(|(_, r)| *r)
            .max();
        let q = f
            .queue_delay
            .iter()
            .filter(|(w, _)| *w >= t && *w < end)
            .map(|(_, r)| *r)
            .max();
        if let Some(m) = last {
            println!(
                "{:6.0} | {:6} | {:6} | {:6.1} | {:6.1} | {:5.1} | {:7.0} | {:6.1} | {:6.1} | {}",
                (t.saturating_duration_since(drop).as_secs_f64()
                    - drop.saturating_duration_since(t).as_secs_f64())
                    * 1e3,
                m.congestion_window_bytes.unwrap_or(0),
                m.bytes_in_flight.unwrap_or(0),
                ms(m.smoothed_rtt),
                ms(m.latest_rtt),
                ms(m.min_rtt),
                m.pacing_rate_bps.unwrap_or(0) as f64 / 1e3,
                ms(app),
                ms(q),
                in_slot.len()
            );
        }
        t = end;
    }
}
