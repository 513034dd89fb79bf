//! Prague over real sockets on the slow links where L4S usually breaks
//! (root only; skipped without it unless `CI=true`): a Brisk Prague
//! download (`brisk-io`, ECT(1) in real IP headers) alone through the live
//! router at 4 and 10 Mbit/s, 20 ms base RTT, DualPI2 exactly as Linux sets
//! it up by default (1 ms step, 10% classic protection), IPv4 and IPv6.
//!
//! Measured as the simulator's `l4s_slow_links` tests measure (second half
//! of the transfer, `brisk_live::steady_state`): the down link's busy
//! fraction, Prague's queue delay p50/p99 and its CE fraction. The goals
//! are the simulator's: at least 95% busy, queue delay p99 at most 1 ms
//! plus one 1500-byte packet's serialization time (3 ms at 4 Mbit/s,
//! 1.2 ms at 10), plus the lateness the router measured in the same run
//! (on a loaded host it reads and writes late, which no queue can undo).
//!
//! Both ends run at a real-time priority below the router's
//! (`BriskBulkConfig::realtime`): Prague paces one packet at a time, so
//! time its sender's thread waits for a core on a loaded host is link
//! time lost for good (at load 17 on 2 cores: 88-90% busy per second
//! against 94-95% with the priority, in back-to-back runs).

mod common;

use brisk_live::recipes::brisk_bulk::BriskBulkConfig;
use brisk_live::recipes::steady_bulk::{self, SteadyBulkRun};
use brisk_live::{IpMode, LabConfig};
use std::time::Duration;

/// The goal, held by the full-length test.
const BUSY_GOAL: f64 = 0.95;
/// The quick test's floor: 4 s runs measured 94.4-95.5% per second at
/// 4 Mbit/s and 98% at 10 (load 18 on 2 cores); with the ends at normal
/// priority on that host, 88-90%; before Prague's rework, about 30%. On a
/// shared 2-core VM the same build measured anywhere from 84.7% to 94.1%
/// at 4 Mbit/s within minutes on an otherwise idle machine, a quarter of
/// the runs under 90%, so the quick floor is 90% with five attempts: far
/// above any collapse, while the 95% goal is the full-length test's.
const BUSY_QUICK_MIN: f64 = 0.90;
/// Attempts per rate and family for the quick test.
const QUICK_ATTEMPTS: usize = 5;

/// One download of `secs` at `rate_mbps` in `mode`, both ends at a
/// real-time priority if `realtime`, its per-second trace printed.
fn download(mode: IpMode, rate_mbps: u64, secs: u64, realtime: bool) -> SteadyBulkRun {
    let mut config = LabConfig::new(common::scenario(&format!(
        "[link.down]\nrate = \"{rate_mbps}Mbit\"\ndelay = \"10ms\"\n\
         [link.up]\nrate = \"{rate_mbps}Mbit\"\ndelay = \"10ms\"\n\
         [queue.dualpi2]\n"
    )));
    config.ip = mode;
    let mut bulk = BriskBulkConfig::new("prague", Duration::from_secs(secs));
    bulk.realtime = realtime;
    // `QLOG_DIR=DIR` keeps both ends' qlog traces of the latest run there,
    // to set beside `brisk sim FILE --qlog DIR`.
    bulk.qlog_dir = std::env::var_os("QLOG_DIR").map(std::path::PathBuf::from);
    // `LAB_MTU=BYTES` sets the path MTU the ends probe up to (default:
    // the lab's own, 1500), e.g. 1480 for brisk-io's default ceiling.
    bulk.path_mtu = std::env::var("LAB_MTU")
        .ok()
        .map(|m| m.parse().expect("LAB_MTU: bytes"));
    let run = steady_bulk::run(config, &bulk).expect("the download runs");
    let s = &run.steady;
    let f = &run.results.driver.fidelity;
    eprintln!(
        "{mode:?} {rate_mbps} Mbit/s, real-time ends {}, second half of {secs} s: link busy {:.1}%, queue delay \
         p50 {:.2} p99 {:.2} ms, CE {:.1}% ({} marks); arrivals within a packet time of \
         the one before {:.1}%, gap p50 {:.2} p99 {:.2} max {:.2} ms; Brisk RTT p50 {:.1} p99 {:.1} ms; \
         router late p99 {:.2} ms down, {:.2} ms up, kept up {}; sender: {}-byte datagrams, {} cut to 1200 \
         bytes to check the path MTU, {} of {} paced packets \
         left after the pacer's scheduled time, by {:.3} ms on average, {:.2} ms at most, {:.0} ms credited",
        run.bulk.realtime,
        s.busy * 100.0,
        s.queue_delay.p50_ms,
        s.queue_delay.p99_ms,
        s.ce_fraction * 100.0,
        s.marks,
        s.close_arrivals * 100.0,
        s.arrival_gap.p50_ms,
        s.arrival_gap.p99_ms,
        s.arrival_gap.max_ms,
        run.bulk.rtt.p50_ms,
        run.bulk.rtt.p99_ms,
        f.down.delay_error_ms.p99,
        f.up.delay_error_ms.p99,
        f.kept_up,
        run.bulk.sender.datagram_bytes,
        run.bulk.sender.size_checks,
        run.bulk.sender.paced_late,
        run.bulk.sender.paced_waits,
        run.bulk.sender.paced_late_mean_ms,
        run.bulk.sender.paced_late_max_ms,
        run.bulk.sender.paced_credited_ms,
    );
    for b in &s.bins {
        eprintln!(
            "  {:>4.1} s: busy {:>5.1}%, queue p99 {:>5.2} ms, CE {:>5.1}%",
            b.from_s,
            b.busy * 100.0,
            b.queue_delay_p99_ms,
            b.ce_fraction * 100.0
        );
    }
    run
}

/// One 1500-byte packet's time on a `rate_mbps` link, in ms.
fn packet_ms(rate_mbps: u64) -> f64 {
    1500.0 * 8.0 / (rate_mbps as f64 * 1e3)
}

/// Holds one rate's queue goal and `busy_min` in `mode`, up to `attempts`
/// attempts.
fn holds_the_goals(mode: IpMode, rate_mbps: u64, secs: u64, busy_min: f64, attempts: usize) {
    let label = format!("prague alone, {mode:?}, {rate_mbps} Mbit/s");
    common::within_n_attempts(&label, attempts, || {
        let run = download(mode, rate_mbps, secs, true);
        assert!(run.bulk.realtime, "both ends run at a real-time priority");
        let s = &run.steady;
        // Structure: ECT(1) on the wire, CE written into it and echoed,
        // over the whole run: a flow the pipe cap holds at the pipe may
        // see no mark in the second half (0 of 952 packets at 4 Mbit/s).
        assert!(run.bulk.received_ect1 > 100, "{}", run.bulk.received_ect1);
        assert_eq!(run.bulk.received_ect0, 0);
        assert!(run.bulk.received_ce > 0 && run.bulk.sender.echoed_ce > 0);
        assert_eq!(run.bulk.sender.ecn_state, "Capable");
        // Datagrams as large as the lab's 1500-byte path carries, as the
        // simulator's on its links (with the host's 1400-byte uplink as
        // the ceiling, 1372/1352 bytes: 93.2-93.5% busy at 4 Mbit/s).
        let full = match mode {
            IpMode::V4 => 1500 - 28,
            _ => 1500 - 48,
        };
        assert_eq!(run.bulk.sender.datagram_bytes, full);
        let late = common::router_lateness_ms(&run.results.driver.fidelity);
        common::bound(s.busy >= busy_min, || {
            format!("link busy {:.1}%", s.busy * 100.0)
        })?;
        let queue_max = 1.0 + packet_ms(rate_mbps) + late;
        common::bound(s.queue_delay.p99_ms <= queue_max, || {
            format!(
                "queue delay p99 {:.2} ms above {queue_max:.2} ms",
                s.queue_delay.p99_ms
            )
        })?;
        Ok(())
    });
}

/// The quick version: 4 s per download, both rates on both families, the
/// queue goal and a busy floor just below the goal.
#[test]
fn prague_keeps_slow_default_dualpi2_links_busy_with_a_short_queue() {
    let Some(_g) =
        common::lab_guard("prague_keeps_slow_default_dualpi2_links_busy_with_a_short_queue")
    else {
        return;
    };
    for mode in [IpMode::V4, IpMode::V6] {
        for rate in [4, 10] {
            holds_the_goals(mode, rate, 4, BUSY_QUICK_MIN, QUICK_ATTEMPTS);
        }
    }
}

/// The full length, 20 s per download as the simulator's runs, holding
/// the 95% goal. Met at the first attempt since both ends send the lab
/// path's full-size datagrams: 98.2% (IPv4) and 95.7% (IPv6) at 4 Mbit/s,
/// 97.9% on both at 10, load 11 on 2 cores (with 1372/1352-byte datagrams
/// 4 Mbit/s read 94.9-95.0% at load 19):
/// `cargo test --profile ci -p brisk-live --test l4s_slow_links -- --ignored --nocapture twenty`.
#[test]
#[ignore]
fn prague_keeps_slow_default_dualpi2_links_busy_for_twenty_seconds() {
    let Some(_g) =
        common::lab_guard("prague_keeps_slow_default_dualpi2_links_busy_for_twenty_seconds")
    else {
        return;
    };
    for mode in [IpMode::V4, IpMode::V6] {
        for rate in [4, 10] {
            holds_the_goals(mode, rate, 20, BUSY_GOAL, 3);
        }
    }
}

/// What the real-time priority of the ends is worth on this host, both
/// sides in one run (printed, not asserted: an idle host shows no gap):
/// `cargo test --release -p brisk-live --test l4s_slow_links -- --ignored --nocapture priority`.
#[test]
#[ignore]
fn prague_with_and_without_priority_for_its_ends() {
    let Some(_g) = common::lab_guard("prague_with_and_without_priority_for_its_ends") else {
        return;
    };
    for rate in [4, 10] {
        let plain = download(IpMode::V4, rate, 10, false).steady.busy;
        let rt = download(IpMode::V4, rate, 10, true).steady.busy;
        eprintln!(
            "{rate} Mbit/s: link busy {:.1}% with normal priority, {:.1}% with real-time ends",
            plain * 100.0,
            rt * 100.0
        );
    }
}

/// The lab section's length (10 s) at 4 Mbit/s (or `RATE` Mbit/s), `RUNS`
/// (default 3) runs per family, each with its per-second trace, printed,
/// not asserted:
/// `cargo test --profile ci -p brisk-live --test l4s_slow_links -- --ignored --nocapture ten_seconds`.
#[test]
#[ignore]
fn prague_at_4mbit_for_ten_seconds_per_family() {
    let Some(_g) = common::lab_guard("prague_at_4mbit_for_ten_seconds_per_family") else {
        return;
    };
    let runs: usize = std::env::var("RUNS").map_or(3, |r| r.parse().expect("RUNS: a count"));
    let rate: u64 = std::env::var("RATE").map_or(4, |r| r.parse().expect("RATE: Mbit/s"));
    for mode in [IpMode::V4, IpMode::V6] {
        let busy: Vec<String> = (0..runs)
            .map(|_| format!("{:.1}%", download(mode, rate, 10, true).steady.busy * 100.0))
            .collect();
        eprintln!(
            "{mode:?} {rate} Mbit/s, second half of 10 s: link busy {}",
            busy.join(", ")
        );
    }
}
