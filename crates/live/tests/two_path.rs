//! A phone with two access paths on real sockets, downloading (the
//! `two_path` recipe): Wi-Fi through the lab's router (20 Mbit/s, 10 ms
//! each way), cellular on a second interface through a link model of its
//! own (10 Mbit/s, 30 ms each way: a 60 ms round trip).
//! The Wi-Fi stops delivering after the first MiB of 3 MiB. Brisk, failover
//! on, notices the stall though it only receives, moves to cellular and
//! finishes with the right SHA-256; kernel TCP with Happy Eyeballs over
//! both addresses and a 1 s read timeout reconnects over cellular and
//! finishes too. Each side's stall is printed; Brisk's must be shorter
//! than the app's read timeout alone. IPv4 and IPv6. A second case
//! connects while the Wi-Fi already passes nothing: both race cellular.

mod common;

use brisk_live::recipes::two_path::{self, ConnectStalledConfig, TwoPathConfig};

const WIFI: &str = "[link.down]\nrate = \"20Mbit\"\ndelay = \"10ms\"\n\
                    [link.up]\nrate = \"20Mbit\"\ndelay = \"10ms\"\n\
                    [queue.fifo]\nlimit_packets = 100\n";

fn stalled_wifi(ip: &str) {
    let test = format!("stalled_wifi_{ip}");
    let Some(_g) = common::lab_guard(&test) else {
        return;
    };
    let lab = common::lab(&format!("ip = \"{ip}\"\n{WIFI}"));
    let config = TwoPathConfig::default();
    let r = two_path::run(&lab, &config).expect("both downloads run");
    drop(lab);
    for (side, s) in [("brisk", &r.brisk), ("kernel TCP + Happy Eyeballs", &r.tcp)] {
        eprintln!(
            "{test}: {side}: {} bytes, SHA-256 ok {}; stall {:.0} ms, rest {:.0} ms after the \
             stall, whole download {:.0} ms; finished on cellular {}; stalls noticed {}, moves \
             {} (wall clock; cellular {:.0} Mbit/s and {:.0} ms round trip, TCP read timeout \
             {:.0} ms, attempt delay {:.0} ms)",
            s.bytes,
            s.sha256_ok,
            s.stall_ms,
            s.after_stall_ms,
            s.total_ms,
            s.finished_on_cellular,
            s.stalls_noticed,
            s.moves,
            r.cellular_mbps,
            r.cellular_rtt_ms,
            r.tcp_read_timeout_ms,
            r.attempt_delay_ms,
        );
        assert_eq!(s.bytes, config.bytes, "{test}: {side}");
        assert!(s.sha256_ok, "{test}: {side}");
        assert!(s.finished_on_cellular, "{test}: {side}");
        assert!(
            s.stalls_noticed >= 1 && s.moves >= 1,
            "{test}: {side}: {s:?}"
        );
    }
    assert!(
        r.brisk.stall_ms < r.tcp_read_timeout_ms,
        "{test}: Brisk's stall {:.0} ms",
        r.brisk.stall_ms
    );
    assert!(
        r.tcp.stall_ms >= r.tcp_read_timeout_ms,
        "{test}: TCP's stall {:.0} ms",
        r.tcp.stall_ms
    );
}

#[test]
fn a_download_leaves_a_stalled_wifi_for_cellular_v4() {
    stalled_wifi("v4");
}

#[test]
fn a_download_leaves_a_stalled_wifi_for_cellular_v6() {
    stalled_wifi("v6");
}

/// The phone connects while its Wi-Fi already passes nothing (the htb
/// stall set before either client starts). Brisk races its cellular
/// address after the attempt delay (`Endpoint::connect_racing`), as kernel
/// TCP's Happy Eyeballs does in the same run; both finish over cellular
/// with the right SHA-256. Brisk's first response byte comes after the
/// attempt delay and within it plus two cellular round trips (handshake,
/// request) and a margin for the host, far from the 5 s handshake timeout
/// a client that does not race waits out first.
fn connect_while_wifi_stalled(ip: &str) {
    let test = format!("connect_while_wifi_stalled_{ip}");
    let Some(_g) = common::lab_guard(&test) else {
        return;
    };
    let lab = common::lab(&format!("ip = \"{ip}\"\n{WIFI}"));
    let config = ConnectStalledConfig::default();
    let r = two_path::run_connect_stalled(&lab, &config).expect("both clients run");
    drop(lab);
    for (side, s) in [("brisk", &r.brisk), ("kernel TCP + Happy Eyeballs", &r.tcp)] {
        eprintln!(
            "{test}: {side}: {} bytes, SHA-256 ok {}; first response byte after {:.0} ms, last \
             after {:.0} ms; on cellular {}, attempts {} (wall clock; attempt delay {:.0} ms, \
             cellular round trip {:.0} ms)",
            s.bytes,
            s.sha256_ok,
            s.first_byte_ms,
            s.total_ms,
            s.on_cellular,
            s.attempts,
            r.attempt_delay_ms,
            r.cellular_rtt_ms,
        );
        assert_eq!(s.bytes, config.bytes, "{test}: {side}");
        assert!(s.sha256_ok && s.on_cellular, "{test}: {side}: {s:?}");
        assert_eq!(s.attempts, 2, "{test}: {side}");
        // Neither may start its cellular attempt before the delay.
        assert!(s.first_byte_ms >= r.attempt_delay_ms, "{test}: {side}");
    }
    // The host's scheduling on a shared 2-core machine: 150 ms of slack.
    let bound = r.attempt_delay_ms + 2.0 * r.cellular_rtt_ms + 150.0;
    assert!(
        r.brisk.first_byte_ms <= bound,
        "{test}: Brisk's first byte after {:.0} ms > {bound:.0} ms",
        r.brisk.first_byte_ms
    );
}

#[test]
fn a_connection_made_under_a_stalled_wifi_races_cellular_v4() {
    connect_while_wifi_stalled("v4");
}

#[test]
fn a_connection_made_under_a_stalled_wifi_races_cellular_v6() {
    connect_while_wifi_stalled("v6");
}
