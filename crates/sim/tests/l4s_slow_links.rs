//! Prague through DualPI2 exactly as Linux configures it by default (1 ms
//! step, 10% classic protection), on slow and fast links: alone it must
//! fill the link with a queue of at most the step plus one packet time, and
//! beside CUBIC it must take a fair share. Below 12 Mbit/s one 1500-byte
//! packet takes longer to serialize than the 1 ms step, so any packet that
//! waits behind another is marked: a sender that sends pairs back to back
//! has half its packets marked whatever its rate (docs/PROTOCOL.md).
//!
//! The tests sample the grid; `full_grid` (ignored) sweeps all of it:
//! `cargo test --release -p brisk-sim --test l4s_slow_links -- --ignored --nocapture`.

mod l4s_common;

use brisk_sim::engine::FlowSeries;
use brisk_sim::scenario::{IpFamily, Scenario};
use brisk_sim::{RunOptions, run};
use brisk_time::Instant;
use l4s_common::{
    DUALPI2_LINUX, FAMILIES, Flow, WindowSample, bulk, bulk_pipe_cap, bulk_small_datagrams,
    dumbbell, packet_ms, queue_delay_ms, rate_mbps, run_series, run_series_seeded, series,
    window_qlog,
};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What one run of Prague alone measured over its steady state.
#[derive(Debug)]
struct Alone {
    utilization: f64,
    queue_p99_ms: f64,
}

/// Prague alone through default DualPI2 at `mbit` and `rtt_ms`, measured
/// over the second half of the run (long enough for slow start and the
/// first cuts at any RTT of the grid).
fn alone(mbit: f64, rtt_ms: u64, ip: IpFamily) -> Alone {
    alone_with("prague", mbit, rtt_ms, ip)
}

/// A bulk flow with controller `cc` alone through default DualPI2, as
/// [`alone`].
fn alone_with(cc: &str, mbit: f64, rtt_ms: u64, ip: IpFamily) -> Alone {
    alone_flow(bulk(cc, cc, rtt_ms), mbit, ip)
}

/// `flow` alone through default DualPI2, as [`alone`].
fn alone_flow(flow: Flow, mbit: f64, ip: IpFamily) -> Alone {
    let secs = 8 + flow.rtt_ms / 20;
    let name = flow.name;
    let s = dumbbell(
        &format!("\"{}kbit\"", (mbit * 1000.0) as u64),
        DUALPI2_LINUX,
        "",
        &[flow],
        secs,
    );
    let (_, all) = run_series(&s, ip);
    let f = series(&all, name);
    let (from, to) = (Duration::from_secs(secs / 2), Duration::from_secs(secs));
    Alone {
        utilization: rate_mbps(f, from, to) / mbit,
        queue_p99_ms: queue_delay_ms(f, from, to, 0.99),
    }
}

/// How long a run beside `other` lasts. Beside CUBIC 40 s: DualPI2 marks
/// the classic queue so rarely (3-6 cuts per 10 s at 100 Mbit/s) that a
/// 10 s second half samples too few of CUBIC's cycles, and the ratio
/// left 0.67-1.5 on some seeds; a 20 s second half held it on every seed
/// (docs/PROTOCOL.md). Beside BBR 20 s: no goal is held there, only a
/// floor, and the reference table's and the lab's BBR runs last 20 s too.
fn beside_secs(other: &str) -> u64 {
    if other == "cubic" { 40 } else { 20 }
}

/// Prague's and `other`'s delivered rates sharing default DualPI2, over
/// the second half of a run of [`beside_secs`].
fn beside(mbit: f64, rtt_ms: u64, other: &str, ip: IpFamily) -> (f64, f64) {
    beside_flow(bulk("prague", "prague", rtt_ms), mbit, other, ip)
}

/// The Prague flow `prague` (named "prague") beside `other`, as [`beside`].
fn beside_flow(prague: Flow, mbit: f64, other: &str, ip: IpFamily) -> (f64, f64) {
    let secs = beside_secs(other);
    shares(prague, mbit, other, secs, l4s_common::seed_override(), ip)
}

/// Prague's and `other`'s delivered rates (Mbit/s) over the second half
/// of a `secs` run beside each other in default DualPI2, on `seed` (the
/// scenario's own when `None`).
fn shares(
    prague: Flow,
    mbit: f64,
    other: &str,
    secs: u64,
    seed: Option<u64>,
    ip: IpFamily,
) -> (f64, f64) {
    let rtt_ms = prague.rtt_ms;
    let s = dumbbell(
        &format!("\"{}kbit\"", (mbit * 1000.0) as u64),
        DUALPI2_LINUX,
        "",
        &[prague, bulk(other, other, rtt_ms)],
        secs,
    );
    let (_, all) = run_series_seeded(&s, ip, seed);
    let (from, to) = (Duration::from_secs(secs / 2), Duration::from_secs(secs));
    (
        rate_mbps(series(&all, "prague"), from, to),
        rate_mbps(series(&all, other), from, to),
    )
}

/// Utilization at least 95% and a queue p99 of at most 1 ms plus
/// `packets` packet times.
fn check_alone(mbit: f64, rtt_ms: u64, packets: f64) {
    for ip in FAMILIES {
        let a = alone(mbit, rtt_ms, ip);
        let bound = 1.0 + packets * packet_ms(mbit);
        let what = format!("{mbit} Mbit/s, {rtt_ms} ms, {ip:?}: {a:?}, queue bound {bound} ms");
        assert!(a.utilization >= 0.95, "{what}");
        assert!(a.queue_p99_ms <= bound, "{what}");
    }
}

/// Below 12 Mbit/s Prague's packets leave more than the 1 ms step apart;
/// alone, its own overshoot marks only about half the rounds, so the
/// faster increase at wide spacing stays off and the queue stays within
/// the step plus one packet time.
#[test]
fn prague_alone_fills_4_and_10mbit_links_with_a_short_queue() {
    check_alone(4.0, 20, 1.0);
    check_alone(10.0, 5, 1.0);
}

#[test]
fn prague_alone_fills_25_to_100mbit_links_with_a_one_packet_queue() {
    check_alone(25.0, 20, 1.0);
    check_alone(100.0, 5, 1.0);
    // Slow start's first mark came at half the path here (IPv6: 124 of
    // 265 kB); halving it left the window climbing until 8 s.
    check_alone(100.0, 20, 1.0);
}

/// A Prague bulk flow with its small datagrams at low rates on or off
/// (`prague_small_datagrams`, on by default), as [`alone`].
fn alone_small(on: bool, mbit: f64, rtt_ms: u64, ip: IpFamily) -> Alone {
    alone_flow(bulk_small_datagrams("prague", rtt_ms, on), mbit, ip)
}

/// At 1 and 2 Mbit/s a 1500-byte packet takes 12 or 6 ms, more than the
/// step, so any packet behind another is marked. With datagrams of 4 ms of
/// the path's rate and an increase of 0.5 ms of it per RTT (the default),
/// Prague fills these links within the step plus one packet time (without
/// them, 1 Mbit/s at 20 ms kept 83.5% and a 44 ms queue p99).
#[test]
fn prague_alone_fills_1_and_2mbit_links_with_a_short_queue() {
    for (mbit, rtt_ms) in [
        (1.0, 5),
        (1.0, 20),
        (1.0, 50),
        (2.0, 5),
        (2.0, 20),
        (2.0, 50),
        (2.0, 100),
    ] {
        check_alone(mbit, rtt_ms, 1.0);
    }
}

/// At 4 Mbit/s datagrams are full, and the increase unit is partly the
/// low-rate one (the path's rate is within 3 to 6 Mbit/s): at 50 and
/// 100 ms the goal is met (with whole-datagram units 95.6% and a 6.2 ms
/// queue p99 at 50 ms, 92.4% and 11.3 ms at 100 ms).
#[test]
fn prague_alone_fills_4mbit_links_at_50_and_100ms() {
    check_alone(4.0, 50, 1.0);
    check_alone(4.0, 100, 1.0);
}

/// At 1 Mbit/s and 100 ms the pipe cap holds Prague's small datagrams
/// at the pipe over their own RTT while a queue shows (89.0% / 92.5% busy
/// with the marks alone, IPv4 / IPv6; 95.3% / 95.2% with the cap, 97.5% /
/// 97.4% and 3.5 ms of queue p99 since it also holds through the refill).
#[test]
fn prague_alone_fills_1mbit_at_100ms() {
    check_alone(1.0, 100, 1.0);
}

/// At 200 ms, 1 and 2 Mbit/s (the bound: 13 and 7 ms) were 93.6-94.9%
/// busy: the window refilled below the pipe after each cut for longer than
/// the cap's queue memory, grew past the pipe, and the marks cut it twice
/// (docs/PROTOCOL.md). Now the refill keeps the cap on, the smallest RTT
/// per datagram size follows the datagram that timed it, and the limit
/// takes the rate the window at it delivered: 95.0-100% on both families.
#[test]
fn prague_alone_fills_1_and_2mbit_links_at_long_rtts() {
    for (mbit, rtt_ms) in [(1.0, 200), (2.0, 200)] {
        check_alone(mbit, rtt_ms, 1.0);
    }
}

/// The small datagrams are what meets the 1 Mbit/s cell: with full-size
/// datagrams the queue p99 is several packet times.
#[test]
fn without_small_datagrams_a_1mbit_link_queues_several_packets() {
    for ip in FAMILIES {
        let bound = 1.0 + packet_ms(1.0);
        let (off, on) = (
            alone_small(false, 1.0, 20, ip),
            alone_small(true, 1.0, 20, ip),
        );
        let what = format!("1 Mbit/s, 20 ms, {ip:?}: off {off:?}, on {on:?}, bound {bound} ms");
        assert!(off.queue_p99_ms > 2.0 * bound, "{what}");
        assert!(on.queue_p99_ms <= bound && on.utilization >= 0.95, "{what}");
    }
}

/// The low-rate grid with `prague_small_datagrams` off and on (the
/// default), both families (run with `--ignored --nocapture
/// small_datagrams_grid`).
#[test]
#[ignore = "prints a table; run it by hand"]
fn small_datagrams_grid() {
    println!("Prague alone, Linux-default DualPI2, second half: off | on");
    println!("family | Mbit/s | base RTT ms | link use, queue p99 ms off | on");
    for ip in FAMILIES {
        for (mbit, rtt_ms) in [
            (1.0, 5),
            (1.0, 20),
            (1.0, 50),
            (1.0, 100),
            (1.0, 200),
            (2.0, 5),
            (2.0, 20),
            (2.0, 50),
            (2.0, 100),
            (2.0, 200),
            (4.0, 20),
            (4.0, 50),
            (4.0, 100),
            (4.0, 200),
            (10.0, 5),
        ] {
            let off = alone_small(false, mbit, rtt_ms, ip);
            let on = alone_small(true, mbit, rtt_ms, ip);
            println!(
                "{ip:?} | {mbit} | {rtt_ms} | {:.1}%, {:.2} | {:.1}%, {:.2}",
                100.0 * off.utilization,
                off.queue_p99_ms,
                100.0 * on.utilization,
                on.queue_p99_ms
            );
        }
        for mbit in [4.0, 10.0] {
            let (p, c) = beside_flow(bulk_small_datagrams("prague", 20, false), mbit, "cubic", ip);
            let (q, d) = beside_flow(bulk_small_datagrams("prague", 20, true), mbit, "cubic", ip);
            println!(
                "{ip:?} | beside CUBIC {mbit} Mbit/s | {p:.2} vs {c:.2} ({:.2}) | {q:.2} vs {d:.2} ({:.2})",
                p / c,
                q / d
            );
        }
    }
}

fn check_ratio(mbit: f64, other: &str, range: std::ops::RangeInclusive<f64>) {
    for ip in FAMILIES {
        let (p, o) = beside(mbit, 20, other, ip);
        let ratio = p / o;
        assert!(
            range.contains(&ratio),
            "{mbit} Mbit/s {ip:?}: prague {p:.2} vs {other} {o:.2} Mbit/s, ratio {ratio:.2}"
        );
    }
}

/// The goal is 0.67 to 1.5 from 4 Mbit/s up. At 4 and 10 Mbit/s the step
/// marks Prague's packets whenever they wait behind one of CUBIC's,
/// whatever its rate, in nearly every round; the faster increase at wide
/// packet spacing wins the share back (docs/PROTOCOL.md).
#[test]
fn prague_and_cubic_share_default_dualpi2_at_4_and_10mbit() {
    check_ratio(4.0, "cubic", 0.67..=1.5);
    check_ratio(10.0, "cubic", 0.67..=1.5);
}

#[test]
fn prague_and_cubic_share_default_dualpi2_at_25_and_100mbit() {
    check_ratio(25.0, "cubic", 0.67..=1.5);
    check_ratio(100.0, "cubic", 0.67..=1.5);
}

/// BBR keeps its own queue in the classic side, which DualPI2 can only
/// answer by dropping; Prague keeps about half of BBR's rate.
#[test]
fn prague_beside_bbr_in_default_dualpi2_keeps_a_share() {
    check_ratio(50.0, "bbr", 0.4..=1.5);
}

/// At 200 ms a bulk flow used to deliver 21.9 Mbit/s at 25 and at
/// 100 Mbit/s whatever its controller: the receiver's 1 MiB stream window,
/// granted again after half of it is read, carries about half of it per
/// round trip, and it grew only behind a hole. It now also grows when the
/// sender says it is blocked and half of it is read within two round
/// trips, so at 100 Mbit/s CUBIC and Prague deliver well over twice that
/// (Prague's own increase, not the window, then sets its rate).
#[test]
fn bulk_at_100mbit_and_200ms_is_not_held_by_the_receive_window() {
    const OLD_CAP_MBPS: f64 = 21.9;
    for ip in FAMILIES {
        for cc in ["cubic", "prague"] {
            let a = alone_with(cc, 100.0, 200, ip);
            let rate = a.utilization * 100.0;
            assert!(
                rate > 2.0 * OLD_CAP_MBPS,
                "{cc} {ip:?}: {rate:.1} Mbit/s at 100 Mbit/s, 200 ms ({a:?})"
            );
        }
    }
}

/// At 100 and 200 ms the first mark comes while slow start's window is
/// still below the BDP (its doubling is paced at twice the window's rate,
/// so a queue builds early). Halving there, and cutting again for the
/// queue that burst left, kept Prague at 61% of 100 Mbit/s at 200 ms and
/// 70% at 100 ms, refilling for the whole run; the exit now keeps what
/// the path delivered and the link stays over 95% busy. The queue bound
/// is not met there yet (below).
#[test]
fn prague_alone_fills_100mbit_at_100_and_200ms() {
    for rtt_ms in [100, 200] {
        for ip in FAMILIES {
            let a = alone(100.0, rtt_ms, ip);
            assert!(
                a.utilization >= 0.95,
                "100 Mbit/s, {rtt_ms} ms, {ip:?}: {a:?}"
            );
        }
    }
}

/// The goal at 200 ms on faster links: 100 Mbit/s (99.6%, 0.77 ms) and
/// 25 Mbit/s, where on IPv6 the minimum RTT comes from a full-size
/// datagram, the pipe cap's margin is 0.98 ms of queue, and the marks
/// that come at the cap's limit once took 17% off the window (94.5%,
/// 1.60 ms); a cut there now stops at the pipe and the margin shrinks
/// (100%, 0.53 ms; docs/PROTOCOL.md).
#[test]
fn prague_alone_fills_25_and_100mbit_links_at_200ms() {
    check_alone(25.0, 200, 1.0);
    check_alone(100.0, 200, 1.0);
}

/// Prague alone stops growing at the delivered pipe plus 0.5 ms and a
/// datagram (its pipe cap, on by default) instead of a round trip's
/// increase past the step: at 100 Mbit/s, 200 ms the queue p99 falls from
/// 2.67 to about 0.75 ms, at 10 Mbit/s, 200 ms from 11.9 ms to about
/// 0.5 ms, at 25 and 50 Mbit/s, 100 ms from 2.8 and 2.4 ms to 1.2 ms or
/// less, the link 96-100% busy; at 25 Mbit/s, 100 ms the estimate also
/// has to survive the refill after slow start's last cut, which takes
/// longer than its ten rounds (docs/PROTOCOL.md). Below 12 Mbit/s, where
/// one datagram outlasts the 1 ms step, the cap holds while under half
/// the rounds (counted from zero) carry a mark, without its datagram, and
/// from 100 ms with a window that covers the receiver's ACK holdback:
/// 4 Mbit/s at 50, 100 and 200 ms (6.2, 11.3 and 23.7-56 ms of queue p99
/// without) and 10 Mbit/s at 100 ms (94.9% busy without) now read 100%
/// with under 1 ms.
#[test]
fn pipe_cap_fills_links_at_50_to_200ms_within_the_queue_bound() {
    for (mbit, rtt_ms) in [
        (100.0, 200),
        (10.0, 200),
        (10.0, 100),
        (4.0, 50),
        (4.0, 100),
        (4.0, 200),
        (25.0, 50),
        (25.0, 100),
        (50.0, 100),
    ] {
        for ip in FAMILIES {
            let a = alone(mbit, rtt_ms, ip);
            let bound = 1.0 + packet_ms(mbit);
            let what = format!("{mbit} Mbit/s, {rtt_ms} ms, {ip:?}: {a:?}, queue bound {bound} ms");
            assert!(a.utilization >= 0.95, "{what}");
            assert!(a.queue_p99_ms <= bound, "{what}");
        }
    }
}

/// Without the pipe cap (`prague_pipe_cap = false`) the first mark comes a
/// round trip after the queue passed the step: at 100 Mbit/s, 200 ms the
/// queue p99 is 2.67 ms, over the 1.12 ms bound, so the cap is what meets
/// it there.
#[test]
fn without_the_pipe_cap_the_long_rtt_queue_overshoots() {
    for ip in FAMILIES {
        let a = alone_flow(bulk_pipe_cap("prague", 200, false), 100.0, ip);
        assert!(a.queue_p99_ms > 1.0 + packet_ms(100.0), "{ip:?}: {a:?}");
    }
}

/// Bulk flows alone through default DualPI2 at 200 ms base RTT, each
/// controller, both families (run with `--ignored --nocapture long_rtt`).
#[test]
#[ignore = "prints a table; run it by hand"]
fn long_rtt_table() {
    println!("bulk alone, 200 ms base RTT, Linux-default DualPI2 (second half of 18 s)");
    println!("cc | link Mbit/s | family | link use | rate Mbit/s | queue p99 ms");
    for ip in FAMILIES {
        for (cc, mbit) in [
            ("prague", 25.0),
            ("prague", 100.0),
            ("cubic", 100.0),
            ("bbr", 100.0),
        ] {
            let a = alone_with(cc, mbit, 200, ip);
            println!(
                "{cc} | {mbit} | {ip:?} | {:.1}% | {:.2} | {:.2}",
                100.0 * a.utilization,
                a.utilization * mbit,
                a.queue_p99_ms
            );
        }
    }
}

/// The whole grid, printed as a table (run with `--ignored --nocapture`).
#[test]
#[ignore = "a sweep of minutes; run it by hand"]
fn full_grid() {
    let ip = IpFamily::V4;
    println!("Prague alone through Linux-default DualPI2 (steady state, second half of the run)");
    println!("rate Mbit/s | base RTT ms | utilization | queue p99 ms | bound ms");
    for mbit in [1.0, 2.0, 4.0, 10.0, 25.0, 50.0, 100.0] {
        for rtt in [5, 20, 50, 100, 200] {
            let a = alone(mbit, rtt, ip);
            println!(
                "{mbit:>6} | {rtt:>4} | {:.3} | {:.2} | {:.2}",
                a.utilization,
                a.queue_p99_ms,
                1.0 + packet_ms(mbit)
            );
        }
    }
    println!(
        "Prague beside CUBIC and beside BBR, 20 ms, Linux-default DualPI2 (Mbit/s, second \
         half of {} s and {} s runs)",
        beside_secs("cubic"),
        beside_secs("bbr")
    );
    for mbit in [4.0, 10.0, 25.0, 50.0, 100.0] {
        let (p, c) = beside(mbit, 20, "cubic", ip);
        let (q, b) = beside(mbit, 20, "bbr", ip);
        println!(
            "{mbit:>6} | prague {p:.2} cubic {c:.2} ratio {:.2} | prague {q:.2} bbr {b:.2} ratio {:.2}",
            p / c,
            q / b
        );
    }
}

/// The family a hand-run trace uses: `IP=v6` for IPv6, else IPv4.
fn trace_family() -> IpFamily {
    match std::env::var("IP").as_deref() {
        Ok("v6") => IpFamily::V6,
        _ => IpFamily::V4,
    }
}

/// Runs `s` with series on, over `IP` (`v6`, else IPv4) and seed
/// `L4S_SEED`, keeping every end's window samples from its qlog.
fn run_logging_windows(s: &Scenario) -> (Vec<FlowSeries>, Vec<WindowSample>) {
    let samples: Arc<Mutex<Vec<WindowSample>>> = Arc::default();
    let qlog = window_qlog(&samples);
    let options = RunOptions {
        ip: Some(trace_family()),
        seed: l4s_common::seed_override(),
        series: true,
        qlog: Some(qlog),
        ..Default::default()
    };
    let all = run(s, options).outcome.series();
    let samples = std::mem::take(&mut *samples.lock().expect("the run is over"));
    (all, samples)
}

/// Prague alone through default DualPI2, per `bin`: the link's use, the
/// queue delay's median and p99, and the sender's window (smallest and
/// largest, in bytes) and smoothed RTT. It shows what holds the window
/// back: a queue that is empty most of the time and a window that swings
/// from below the BDP to above it within a few round trips.
fn trace(mbit: f64, rtt_ms: u64, secs: u64, bin: Duration) {
    let s = dumbbell(
        &format!("\"{}kbit\"", (mbit * 1000.0) as u64),
        DUALPI2_LINUX,
        "",
        &[bulk("prague", "prague", rtt_ms)],
        secs,
    );
    let (all, samples) = run_logging_windows(&s);
    let f = series(&all, "prague");
    // `QDUMP=from:to` (seconds) also prints each packet's wait in the
    // bottleneck queue and the time since the one before it.
    if let Ok(r) = std::env::var("QDUMP") {
        let (a, b) = r.split_once(':').expect("QDUMP: from:to in seconds");
        let (a, b): (f64, f64) = (
            a.parse().expect("QDUMP: from in seconds"),
            b.parse().expect("QDUMP: to in seconds"),
        );
        let mut last = 0.0;
        for (t, d) in &f.queue_delay {
            let t = t.as_secs_f64();
            if t >= a && t < b {
                println!(
                    "{t:.4} s: {:.2} ms after the previous packet, waited {:.2} ms",
                    (t - last) * 1e3,
                    d.as_secs_f64() * 1e3
                );
            }
            last = t;
        }
    }
    // The sender is the end whose window the controller keeps moving.
    let updates = |client: bool| samples.iter().filter(|w| w.client == client).count();
    let sender = updates(true) >= updates(false);
    let ip = trace_family();
    println!("Prague alone, {mbit} Mbit/s, {rtt_ms} ms base RTT, {ip:?}, Linux-default DualPI2");
    println!("from s | link use | queue p50 ms | queue p99 ms | cwnd min / max bytes | srtt ms");
    let mut from = Duration::ZERO;
    while from < Duration::from_secs(secs) {
        let to = from + bin;
        let (a, z) = (Instant::ZERO + from, Instant::ZERO + to);
        let window: Vec<&WindowSample> = samples
            .iter()
            .filter(|w| w.client == sender && w.at >= a && w.at < z)
            .collect();
        let cwnd = |pick: fn(u64, u64) -> u64| {
            window
                .iter()
                .map(|w| w.cwnd_bytes)
                .reduce(pick)
                .unwrap_or(0)
        };
        let srtt = window.last().map_or(0.0, |w| w.srtt.as_secs_f64() * 1e3);
        println!(
            "{:>6.2} | {:>5.1}% | {:>6.2} | {:>6.2} | {:>7} / {:>7} | {srtt:.1}",
            from.as_secs_f64(),
            100.0 * rate_mbps(f, from, to) / mbit,
            queue_delay_ms(f, from, to, 0.5),
            queue_delay_ms(f, from, to, 0.99),
            cwnd(u64::min),
            cwnd(u64::max),
        );
        from = to;
    }
}

/// Per-second trace at 10 Mbit/s and 200 ms (run with `cargo test
/// --release -p brisk-sim --test l4s_slow_links -- --ignored --nocapture
/// trace_`).
#[test]
#[ignore = "prints a trace; run it by hand"]
fn trace_200ms_per_second() {
    trace(10.0, 200, 18, Duration::from_secs(1));
}

/// Per-half-second trace at 1 Mbit/s and 20 ms (see
/// [`trace_200ms_per_second`]).
#[test]
#[ignore = "prints a trace; run it by hand"]
fn trace_1mbit_per_half_second() {
    trace(1.0, 20, 9, Duration::from_millis(500));
}

/// Prague alone at the cells named by `CELLS` ("mbit:rtt_ms,..."), both
/// families, printed (run with `--ignored --nocapture cells`).
#[test]
#[ignore = "prints a table; run it by hand"]
fn cells() {
    let cells = std::env::var("CELLS").unwrap_or_else(|_| "100:200".into());
    for cell in cells.split(',') {
        let (m, r) = cell.split_once(':').expect("mbit:rtt_ms");
        let (mbit, rtt): (f64, u64) = (m.parse().unwrap(), r.parse().unwrap());
        for ip in FAMILIES {
            let a = alone(mbit, rtt, ip);
            println!(
                "{mbit} Mbit/s {rtt} ms {ip:?}: {:.1}%, queue p99 {:.2} ms (bound {:.2})",
                100.0 * a.utilization,
                a.queue_p99_ms,
                1.0 + packet_ms(mbit)
            );
        }
    }
}

/// A trace of the cell `TRACE` ("mbit:rtt_ms:secs:bin_ms"), as
/// [`trace_200ms_per_second`]; IPv6 with `IP=v6`.
#[test]
#[ignore = "prints a trace; run it by hand"]
fn trace_cell() {
    let spec = std::env::var("TRACE").unwrap_or_else(|_| "100:200:18:1000".into());
    let v: Vec<f64> = spec.split(':').map(|x| x.parse().unwrap()).collect();
    trace(
        v[0],
        v[1] as u64,
        v[2] as u64,
        Duration::from_millis(v[3] as u64),
    );
}

/// Prague's rate over CUBIC's beside it in default DualPI2 at 4 Mbit/s and
/// 20 ms, second half of a `secs` run, on `seed` in `ip`.
fn cubic_ratio_at_4mbit(prague_body: &str, secs: u64, seed: u64, ip: IpFamily) -> f64 {
    let prague = Flow {
        name: "prague",
        body: prague_body,
        rtt_ms: 20,
    };
    let (p, c) = shares(prague, 4.0, "cubic", secs, Some(seed), ip);
    p / c
}

/// The share goal (0.67 to 1.5 of CUBIC's rate) on every seed from 1 to 6,
/// both families, with a margin below: 0.78-0.89 measured in 40 s runs
/// (0.75-0.92 in 20 s runs; 0.64-0.83 before the boost's cap rose with
/// the marked share).
#[test]
fn prague_keeps_its_share_beside_cubic_at_4mbit_on_every_seed() {
    for ip in FAMILIES {
        for seed in 1..=6 {
            let ratio = cubic_ratio_at_4mbit(
                "kind = \"brisk\"\ncc = \"prague\"",
                beside_secs("cubic"),
                seed,
                ip,
            );
            assert!(
                (0.72..=1.4).contains(&ratio),
                "{ip:?} seed {seed}: Prague / CUBIC {ratio:.2}"
            );
        }
    }
}

/// Prague beside CUBIC at 4 Mbit/s and 20 ms over seeds 1-6 and both
/// families, with Prague's small datagrams at low rates on and off
/// (second half of `SECS`, default 40 s): `cargo test --profile ci -p
/// brisk-sim --test l4s_slow_links -- --ignored --nocapture cubic_seeds`.
#[test]
#[ignore = "prints a table; run it by hand"]
fn cubic_seeds() {
    let secs: u64 =
        std::env::var("SECS").map_or(beside_secs("cubic"), |s| s.parse().expect("SECS: seconds"));
    for ip in FAMILIES {
        for seed in 1..=6 {
            let ratio = |body: &str| cubic_ratio_at_4mbit(body, secs, seed, ip);
            let on = ratio("kind = \"brisk\"\ncc = \"prague\"");
            let off = ratio("kind = \"brisk\"\ncc = \"prague\"\nprague_small_datagrams = false");
            println!(
                "{ip:?} seed {seed}: Prague / CUBIC {on:.2} (small datagrams on), {off:.2} (off)"
            );
        }
    }
}

/// Prague's rate over CUBIC's at 20 ms through default DualPI2, second
/// half of 40 s runs, for every (link Mbit/s, family, seed) of `cases`,
/// in order. The runs spread over two threads: this binary's other tests
/// are shorter, so the two cores would otherwise idle at its end.
fn cubic_ratios(cases: &[(f64, IpFamily, u64)]) -> Vec<f64> {
    let next = AtomicUsize::new(0);
    let ratios = Mutex::new(vec![f64::NAN; cases.len()]);
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&(mbit, ip, seed)) = cases.get(i) else {
                        break;
                    };
                    let prague = bulk("prague", "prague", 20);
                    let secs = beside_secs("cubic");
                    let (p, c) = shares(prague, mbit, "cubic", secs, Some(seed), ip);
                    ratios.lock().expect("no panic while held")[i] = p / c;
                }
            });
        }
    });
    ratios.into_inner().expect("the runs are over")
}

/// The goal from 25 to 100 Mbit/s on seeds 1-5, both families: 0.78-1.37
/// over the second half of 40 s runs. Over a 10 s half (20 s runs) it
/// fails: seed 2 at 50 Mbit/s over IPv4 read 1.63, seeds 4 and 5 at
/// 100 Mbit/s over IPv6 1.55 and 1.57.
#[test]
fn prague_and_cubic_share_default_dualpi2_from_25_to_100mbit_on_every_seed() {
    let mut cases = Vec::new();
    for mbit in [25.0, 50.0, 100.0] {
        for ip in FAMILIES {
            for seed in 1..=5 {
                cases.push((mbit, ip, seed));
            }
        }
    }
    let ratios = cubic_ratios(&cases);
    let outside: Vec<String> = cases
        .iter()
        .zip(&ratios)
        .filter(|(_, r)| !(0.67..=1.5).contains(*r))
        .map(|((mbit, ip, seed), r)| format!("{mbit} Mbit/s {ip:?} seed {seed}: {r:.2}"))
        .collect();
    assert!(
        outside.is_empty(),
        "Prague / CUBIC outside 0.67-1.5: {outside:?}"
    );
}

/// Prague alone at 4 Mbit/s, 20 ms, 10 s as the live lab's check runs it,
/// both families: link busy over the second half and the share of its
/// packets marked CE, printed beside the live figures (run with
/// `--ignored --nocapture alone_at_4mbit`).
#[test]
#[ignore = "prints a table; run it by hand"]
fn alone_at_4mbit_like_the_live_check() {
    // Prague alone draws no randomness: every seed runs the same.
    for ip in FAMILIES {
        let s = dumbbell(
            "\"4000kbit\"",
            DUALPI2_LINUX,
            "",
            &[bulk("prague", "prague", 20)],
            10,
        );
        let r = run(
            &s,
            RunOptions {
                ip: Some(ip),
                seed: Some(1),
                series: true,
                ..Default::default()
            },
        );
        let all = r.outcome.series();
        let f = series(&all, "prague");
        let (from, to) = (Duration::from_secs(5), Duration::from_secs(10));
        println!(
            "{ip:?}: busy {:.1}%, queue p99 {:.2} ms, CE {:.1}% of packets",
            rate_mbps(f, from, to) / 4.0 * 100.0,
            queue_delay_ms(f, from, to, 0.99),
            r.results.flows[0].ce_fraction * 100.0
        );
    }
}

/// Prague over CUBIC at 20 ms through default DualPI2 (second half of
/// `SECS`, default 40 s) at the rates `RATES` (Mbit/s, default
/// 4,10,25,50,100) and seeds `SEEDS` ("a-b", default 1-8), both families;
/// `OTHER=newreno` (or `bbr`) in CUBIC's place: `cargo test --profile ci
/// -p brisk-sim --test l4s_slow_links -- --ignored --nocapture --exact
/// cubic_share_seeds`.
#[test]
#[ignore = "prints a table; run it by hand"]
fn cubic_share_seeds() {
    let rates: Vec<f64> = std::env::var("RATES")
        .unwrap_or_else(|_| "4,10,25,50,100".into())
        .split(',')
        .map(|r| r.parse().expect("RATES: Mbit/s, comma-separated"))
        .collect();
    let seeds = std::env::var("SEEDS").unwrap_or_else(|_| "1-8".into());
    let (a, b) = seeds.split_once('-').expect("SEEDS: first-last");
    let (a, b): (u64, u64) = (a.parse().expect("SEEDS"), b.parse().expect("SEEDS"));
    let secs: u64 =
        std::env::var("SECS").map_or(beside_secs("cubic"), |s| s.parse().expect("SECS: seconds"));
    let other = std::env::var("OTHER").unwrap_or_else(|_| "cubic".into());
    println!("second half of {secs} s runs, Prague / {other} (* outside 0.67-1.5)");
    for mbit in rates {
        for ip in FAMILIES {
            let ratios: Vec<String> = (a..=b)
                .map(|seed| {
                    let prague = bulk("prague", "prague", 20);
                    let (p, o) = shares(prague, mbit, &other, secs, Some(seed), ip);
                    let r = p / o;
                    let outside = if (0.67..=1.5).contains(&r) { "" } else { "*" };
                    format!("{r:.2}{outside}")
                })
                .collect();
            println!(
                "{mbit:>5} Mbit/s {ip:?} seeds {a}-{b}: {}",
                ratios.join(" ")
            );
        }
    }
}

/// Prague beside CUBIC at `TRACE` ("mbit:secs:bin_ms", 20 ms base RTT),
/// seed `L4S_SEED`, `IP=v6` for IPv6: per bin each flow's rate, mean
/// window and queue delay p50.
#[test]
#[ignore = "prints a trace; run it by hand"]
fn trace_beside_cubic() {
    let spec = std::env::var("TRACE").unwrap_or_else(|_| "50:40:500".into());
    let v: Vec<f64> = spec.split(':').map(|x| x.parse().unwrap()).collect();
    let (mbit, secs, bin) = (v[0], v[1] as u64, Duration::from_millis(v[2] as u64));
    let s = dumbbell(
        &format!("\"{}kbit\"", (mbit * 1000.0) as u64),
        DUALPI2_LINUX,
        "",
        &[bulk("prague", "prague", 20), bulk("cubic", "cubic", 20)],
        secs,
    );
    let (all, samples) = run_logging_windows(&s);
    let sender = |flow: &str| {
        let n = |c: bool| {
            samples
                .iter()
                .filter(|w| w.flow == flow && w.client == c)
                .count()
        };
        n(true) >= n(false)
    };
    let (ps, cs) = (sender("prague"), sender("cubic"));
    println!("from s | prague Mbit/s cwnd kB q50 ms srtt | cubic Mbit/s cwnd kB q50 ms srtt");
    let mut from = Duration::ZERO;
    while from < Duration::from_secs(secs) {
        let to = from + bin;
        let (a, z) = (Instant::ZERO + from, Instant::ZERO + to);
        let stat = |flow: &str, client: bool| {
            let w: Vec<&WindowSample> = samples
                .iter()
                .filter(|w| w.flow == flow && w.client == client && w.at >= a && w.at < z)
                .collect();
            let mean = w.iter().map(|w| w.cwnd_bytes as f64).sum::<f64>() / w.len().max(1) as f64;
            let srtt = w.last().map_or(0.0, |w| w.srtt.as_secs_f64() * 1e3);
            let f = series(&all, flow);
            format!(
                "{:>6.2} {:>7.1} {:>5.2} {:>5.1}",
                rate_mbps(f, from, to),
                mean / 1e3,
                queue_delay_ms(f, from, to, 0.5),
                srtt
            )
        };
        println!(
            "{:>6.2} | {} | {}",
            from.as_secs_f64(),
            stat("prague", ps),
            stat("cubic", cs)
        );
        from = to;
    }
    // The classic flow's window reductions (a drop of more than 10%
    // between two samples): when, and from how much to how much.
    let cubic: Vec<&WindowSample> = samples
        .iter()
        .filter(|w| w.flow == "cubic" && w.client == cs)
        .collect();
    for pair in cubic.windows(2) {
        if (pair[1].cwnd_bytes as f64) < 0.9 * pair[0].cwnd_bytes as f64 {
            println!(
                "cubic cut at {:.3} s: {} -> {} bytes",
                (pair[1].at - Instant::ZERO).as_secs_f64(),
                pair[0].cwnd_bytes,
                pair[1].cwnd_bytes
            );
        }
    }
    let (from, to) = (Duration::from_secs(secs / 2), Duration::from_secs(secs));
    println!(
        "second half: prague / cubic {:.2}",
        rate_mbps(series(&all, "prague"), from, to) / rate_mbps(series(&all, "cubic"), from, to)
    );
}
