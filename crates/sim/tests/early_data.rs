//! Early data in the simulator's feed, on IPv4 and IPv6: a phone that
//! knows the server's key from an earlier visit (the resumed case) puts
//! its first request in its first flight and reads the answer's first byte
//! one round trip after it started, against two when it asks after the
//! handshake; an attacker's copy of that first flight, replayed after the
//! phone closed its connection, is refused by the server's anti-replay
//! register, so the request is served once.

use brisk_sim::flows::AppReport;
use brisk_sim::scenario::{IpFamily, Scenario};
use brisk_sim::{RunOptions, run};
use std::time::Duration;

const FAMILIES: [IpFamily; 2] = [IpFamily::V4, IpFamily::V6];

/// A feed page (a 10 kB API response, then two images) at 10 Mbit/s over
/// `rtt_ms`, the phone connecting with `early_data` and the given extra
/// flow lines; returns the flow's report.
fn page(ip: IpFamily, rtt_ms: u64, early_data: bool, extra: &str) -> AppReport {
    let text = format!(
        r#"
duration = "4s"
seed = 9
[link.down]
rate = "10Mbit"
delay = "{half}ms"
[link.up]
rate = "10Mbit"
delay = "{half}ms"
[queue.fifo]
limit_packets = 200
[[flows]]
kind = "brisk"
cc = "cubic"
app = "feed"
objects = ["10kB", "30kB", "30kB"]
early_data = {early_data}
{extra}
"#,
        half = rtt_ms / 2
    );
    let s = Scenario::parse(&text, "early_data.toml").unwrap();
    let r = run(
        &s,
        RunOptions {
            ip: Some(ip),
            ..Default::default()
        },
    );
    let f = &r.results.flows[0];
    let b = f.brisk.as_ref().unwrap();
    assert!(
        b.transport.error.is_none() && b.completion_time_s.is_some(),
        "{ip:?} {rtt_ms} ms early {early_data}: {:?}",
        b.transport.error
    );
    r.outcome.reports().remove(0)
}

/// When the phone read the first byte of the page's first answer, from
/// the flow's start.
fn first_byte(report: &AppReport) -> Duration {
    let t = report.transport.as_ref().unwrap();
    t.first_byte_at.expect("an answer") - t.started_at
}

#[test]
fn the_first_answer_byte_comes_one_round_trip_in_with_early_data_and_two_without() {
    for ip in FAMILIES {
        for rtt_ms in [40, 200] {
            let rtt = Duration::from_millis(rtt_ms);
            let early = first_byte(&page(ip, rtt_ms, true, ""));
            let late = first_byte(&page(ip, rtt_ms, false, ""));
            println!(
                "{ip:?} {rtt_ms} ms RTT: first answer byte {:.1} ms ({:.2} RTT) with early data, \
                 {:.1} ms ({:.2} RTT) after the handshake",
                early.as_secs_f64() * 1e3,
                early.as_secs_f64() / rtt.as_secs_f64(),
                late.as_secs_f64() * 1e3,
                late.as_secs_f64() / rtt.as_secs_f64(),
            );
            // Serialization at 10 Mbit/s: the first flight, then the
            // server's handshake message and the answer's first packet.
            let slack = Duration::from_millis(4);
            assert!(
                early >= rtt && early <= rtt + slack,
                "{ip:?} {rtt_ms} ms: early data answered at {early:?}"
            );
            assert!(
                late >= 2 * rtt && late <= 2 * rtt + slack,
                "{ip:?} {rtt_ms} ms: answered at {late:?} after the handshake"
            );
        }
    }
}

#[test]
fn a_replayed_first_flight_is_served_once() {
    for ip in FAMILIES {
        let plain = page(ip, 40, true, "");
        let replayed = page(ip, 40, true, "replay_first_flight = \"2s\"");
        let (a, b) = (
            plain.transport.as_ref().unwrap().early_data.unwrap(),
            replayed.transport.as_ref().unwrap().early_data.unwrap(),
        );
        println!("{ip:?}: without a replay {a:?}; with one {b:?}");
        assert_eq!((a.served, a.refused, a.replays_sent), (1, 0, 0), "{ip:?}");
        assert_eq!(b.replays_sent, 1, "{ip:?}: the attacker's copy left");
        assert_eq!(
            (b.served, b.refused),
            (1, 1),
            "{ip:?}: the copy reached the register and was refused"
        );
    }
}
