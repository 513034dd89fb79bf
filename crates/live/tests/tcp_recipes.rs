//! `brisk-tcp`'s recipes with real kernel TCP through the lab's router:
//! each test measures the effect without and with the recipe and asserts
//! it with margins wide enough for a busy machine and narrow enough to
//! fail when the recipe does nothing. The networks are the live suite's
//! (lab/live/*/).

mod common;

use brisk_live::recipes::happy_eyeballs::Strategy;
use brisk_live::recipes::{RecipeError, fastopen, happy_eyeballs, lowat, nat64, write_sizing};
use brisk_live::{IpMode, Lab, LabConfig};
use std::time::Duration;

fn lab_in(mode: IpMode, toml: &str) -> Lab {
    let mut config = LabConfig::new(common::scenario(toml));
    config.ip = mode;
    Lab::up(config).expect("lab comes up")
}

/// Runs `f` in a fresh lab and tears the lab down.
fn in_lab<T>(mode: IpMode, toml: &str, f: impl FnOnce(&Lab) -> T) -> T {
    let lab = lab_in(mode, toml);
    let out = f(&lab);
    lab.finish(None, None).expect("lab finishes");
    out
}

/// The seed's screen-sharing uplink: 50 KB/s, 20 ms base RTT, FQ-CoDel.
const SLOW_LINK: &str = "[link.down]\nrate = \"400kbit\"\ndelay = \"10ms\"\n\
                         [link.up]\nrate = \"400kbit\"\ndelay = \"10ms\"\n[queue.fq_codel]\n";
/// H2O's Ireland-Tokyo path: 250 ms RTT, not rate-limited in practice.
const LONG_PATH: &str = "[link.down]\nrate = \"20Mbit\"\ndelay = \"125ms\"\n\
                         [link.up]\nrate = \"20Mbit\"\ndelay = \"125ms\"\n\
                         [queue.fifo]\nlimit_packets = 1000\n";
/// 100 ms RTT.
const PATH_100MS: &str = "[link.down]\nrate = \"10Mbit\"\ndelay = \"50ms\"\n\
                          [link.up]\nrate = \"10Mbit\"\ndelay = \"50ms\"\n";
/// 50 ms RTT.
const PATH_50MS: &str = "[link.down]\nrate = \"10Mbit\"\ndelay = \"25ms\"\n\
                         [link.up]\nrate = \"10Mbit\"\ndelay = \"25ms\"\n";

fn say(line: String) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{line}");
}

#[test]
fn notsent_lowat_removes_the_send_buffer_delay() {
    let Some(_g) = common::lab_guard("notsent_lowat_removes_the_send_buffer_delay") else {
        return;
    };
    let run = |mark| {
        in_lab(IpMode::V4, SLOW_LINK, |lab| {
            lowat::run(lab, &lowat::LowatExperiment::seed(mark)).expect("lowat run")
        })
    };
    let before = run(None);
    let after = run(Some(16_384));
    say(format!(
        "NOTSENT_LOWAT: default p50 {:.0} ms p99 {:.0} ms (send buffer {} B, {:.0} B ahead); \
         16 KiB mark p50 {:.0} ms p99 {:.0} ms ({:.0} B ahead)",
        before.latency.p50_ms,
        before.latency.p99_ms,
        before.send_buffer_bytes,
        before.queued_ahead_p50_bytes,
        after.latency.p50_ms,
        after.latency.p99_ms,
        after.queued_ahead_p50_bytes
    ));
    assert_eq!(before.latency.count, 25);
    assert_eq!(after.latency.count, 25);
    // The seed: 120 KB at 50 KB/s is about 2.4 s of delay.
    assert!(
        (1500.0..3500.0).contains(&before.latency.p50_ms),
        "{before:?}"
    );
    // A 16 KB mark leaves a third of a second or so.
    assert!(after.latency.p50_ms < 700.0, "{after:?}");
    assert!(
        after.latency.p99_ms < 0.5 * before.latency.p50_ms,
        "{after:?}"
    );
    // The bulk stream still moved (the mark limits what waits, not what
    // flows): about 50 KB/s over both runs.
    assert!(after.bulk_bytes > 100_000, "{after:?}");
}

#[test]
fn write_sizing_saves_a_round_trip_at_250_ms() {
    let Some(_g) = common::lab_guard("write_sizing_saves_a_round_trip_at_250_ms") else {
        return;
    };
    let run = |sizing| {
        in_lab(IpMode::V4, LONG_PATH, |lab| {
            write_sizing::run(lab, &write_sizing::SizingExperiment::seed(sizing))
                .expect("write sizing run")
        })
    };
    let before = run(false);
    let after = run(true);
    say(format!(
        "write sizing: off {:.0} ms {:?} ({:.0} B behind), on {:.0} ms {:?} ({:.0} B behind), RTT {:.0} ms",
        before.small_complete_ms,
        before.small_complete_runs_ms,
        before.waited_behind_bytes,
        after.small_complete_ms,
        after.small_complete_runs_ms,
        after.waited_behind_bytes,
        after.rtt_ms
    ));
    // The seed: 511 ms -> 250 ms, 2 RTT -> 1 RTT. The default's extra wait
    // depends on how far send-buffer autotuning ran ahead of the window:
    // 2 to 3 RTT here.
    assert!(
        (400.0..900.0).contains(&before.small_complete_ms),
        "{before:?}"
    );
    assert!(
        (240.0..360.0).contains(&after.small_complete_ms),
        "{after:?}"
    );
    assert!(before.small_complete_ms - after.small_complete_ms > 150.0);
}

#[test]
fn fast_open_saves_one_rtt_on_repeat_connections() {
    let Some(_g) = common::lab_guard("fast_open_saves_one_rtt_on_repeat_connections") else {
        return;
    };
    let off = in_lab(IpMode::V4, PATH_100MS, |lab| {
        fastopen::run(lab, &fastopen::TfoExperiment::new(false))
    });
    let on = in_lab(IpMode::V4, PATH_100MS, |lab| {
        fastopen::run(lab, &fastopen::TfoExperiment::new(true))
    });
    let (off, on) = match (off, on) {
        (Ok(a), Ok(b)) => (a, b),
        (_, Err(RecipeError::Unsupported(why))) | (Err(RecipeError::Unsupported(why)), _) => {
            say(format!(
                "fast_open_saves_one_rtt_on_repeat_connections: SKIPPED: {why}"
            ));
            return;
        }
        (a, b) => panic!("Fast Open runs failed: {a:?} {b:?}"),
    };
    say(format!(
        "Fast Open (RTT 100 ms): off first {:.0} repeat {:.0} ms; on first {:.0} repeat {:.0} ms (SYN data acked: {})",
        off.first_ms, off.repeat_ms, on.first_ms, on.repeat_ms, on.repeat_syn_data_acked
    ));
    assert!(on.repeat_syn_data_acked, "{on:?}");
    assert_eq!(
        on.connections[0].syn_bytes, 0,
        "the first SYN only asks for a cookie"
    );
    // Without Fast Open, and on the cookie's connection: two round trips.
    for t in [off.first_ms, off.repeat_ms, on.first_ms] {
        assert!((190.0..300.0).contains(&t), "{off:?} {on:?}");
    }
    // With a cookie: one round trip.
    assert!((90.0..150.0).contains(&on.repeat_ms), "{on:?}");
    assert!(off.repeat_ms - on.repeat_ms > 70.0);
}

#[test]
fn happy_eyeballs_recovers_from_a_blackholed_ipv6_path() {
    let Some(_g) = common::lab_guard("happy_eyeballs_recovers_from_a_blackholed_ipv6_path") else {
        return;
    };
    let limit = Duration::from_secs(2);
    let seq = in_lab(IpMode::V4, PATH_50MS, |lab| {
        happy_eyeballs::run(
            lab,
            Strategy::Sequential {
                per_address_timeout: limit,
            },
        )
        .expect("sequential run")
    });
    let race = in_lab(IpMode::V4, PATH_50MS, |lab| {
        happy_eyeballs::run(
            lab,
            Strategy::Racing {
                attempt_delay: Duration::from_millis(250),
            },
        )
        .expect("racing run")
    });
    say(format!(
        "Happy Eyeballs (RTT 50 ms, IPv6 blackholed): sequential {:.0} ms via {}, racing {:.0} ms via {} \
         (IPv6 control {:.0} ms); racing attempts {:?}",
        seq.connect_ms, seq.winner, race.connect_ms, race.winner, race.control_v6_ms, race.attempts
    ));
    // The IPv6 path worked before the blackhole.
    assert!(race.control_v6_ms < 100.0 && seq.control_v6_ms < 100.0);
    assert!(seq.winner.is_ipv4() && race.winner.is_ipv4());
    // Sequential: the whole timeout, then a handshake.
    assert!(
        seq.connect_ms >= 2000.0 && seq.connect_ms < 2200.0,
        "{seq:?}"
    );
    // Racing: IPv4 starts at the attempt delay and needs one RTT.
    assert_eq!(race.attempts.len(), 2, "{race:?}");
    assert!(
        (240.0..290.0).contains(&race.attempts[1].started_ms),
        "{race:?}"
    );
    assert!((290.0..400.0).contains(&race.connect_ms), "{race:?}");
    assert_eq!(race.attempts[0].outcome, "cancelled", "{race:?}");
}

#[test]
fn nat64_synthesis_lets_an_ipv4_literal_work_on_ipv6_only() {
    let Some(_g) = common::lab_guard("nat64_synthesis_lets_an_ipv4_literal_work_on_ipv6_only")
    else {
        return;
    };
    let without = in_lab(IpMode::V6Only, PATH_50MS, |lab| {
        nat64::run(lab, false).expect("run without synthesis")
    });
    let with = in_lab(IpMode::V6Only, PATH_50MS, |lab| {
        nat64::run(lab, true).expect("run with synthesis")
    });
    say(format!(
        "NAT64 (RTT 50 ms): {} without synthesis: {:?} after {:.1} ms; with: {:?}, connected in {:?} ms, \
         first byte {:.0} ms",
        without.literal,
        without.error,
        without.elapsed_ms,
        with.dialed,
        with.connect_ms,
        with.elapsed_ms
    ));
    assert!(!without.connected);
    assert!(without.elapsed_ms < 1000.0, "fails fast: no IPv4 route");
    assert!(with.connected, "{with:?}");
    assert!(with.dialed_synthesized);
    assert_eq!(
        with.dialed.map(|a| a.ip().to_string()),
        Some("64:ff9b::a01:1".to_string())
    );
    // Discovery (one DNS round trip) plus the handshake plus the request:
    // three round trips of 50 ms, give or take.
    assert!((140.0..260.0).contains(&with.elapsed_ms), "{with:?}");
}
