//! End-to-end checks of the engine on small scenarios: what a queue theory
//! textbook predicts, and bit-for-bit determinism.

use brisk_sim::engine::Direction;
use brisk_sim::scenario::{IpFamily, Scenario};
use brisk_sim::{RunOptions, run};
use brisk_time::Instant;

fn scenario(text: &str) -> Scenario {
    Scenario::parse(text, "test.toml").unwrap()
}

const OVERLOAD: &str = r#"
duration = "20s"
[link.down]
rate = "10Mbit"
delay = "10ms"
[link.up]
rate = "10Mbit"
delay = "10ms"
[queue.fifo]
limit_packets = 200
[[flows]]
kind = "cbr"
rate = "12Mbit"
size = "1500B"
[[flows]]
kind = "ping"
interval = "50ms"
"#;

fn both_families() -> [IpFamily; 2] {
    [IpFamily::V4, IpFamily::V6]
}

#[test]
fn fifo_overload_shows_standing_queue_and_sheds_the_excess() {
    for ip in both_families() {
        let r = run(
            &scenario(OVERLOAD),
            RunOptions {
                ip: Some(ip),
                ..Default::default()
            },
        )
        .results;
        let cbr = &r.flows[0];
        // 200 packets of 1500 B at 10 Mbit/s drain in 240 ms: the standing queue.
        let packet_time_ms = 1500.0 * 8.0 / 10e6 * 1000.0;
        let standing = 200.0 * packet_time_ms;
        assert!(
            (cbr.queue_delay_ms.p50 - standing).abs() < 0.05 * standing,
            "{ip:?} {:?}",
            cbr.queue_delay_ms
        );
        // Offered 12, served 10: about 1/6 of the packets are dropped.
        assert!(
            (cbr.loss_rate - 1.0 / 6.0).abs() < 0.02,
            "{ip:?} loss {}",
            cbr.loss_rate
        );
        assert!(
            r.link.utilization > 0.99,
            "{ip:?} utilization {}",
            r.link.utilization
        );
        // The ping sits behind the same queue: RTT = base 20 ms + ~240 ms.
        // Most probes are tail-dropped: a departure frees one slot and the
        // next 1 ms CBR arrival takes it first (the classic phase effect of
        // tail drop with periodic sources), so look at the worst probe.
        let ping = &r.flows[1];
        assert!(ping.rtt_measured);
        assert!(
            ping.rtt_ms.max > 20.0 + 0.9 * standing,
            "{ip:?} {:?}",
            ping.rtt_ms
        );
        assert!(ping.unanswered > 100, "{ip:?} {}", ping.unanswered);
        assert_eq!(
            r.queue.drops,
            r.flows.iter().map(|f| f.queue_drops).sum::<u64>()
        );
    }
}

#[test]
fn an_unloaded_path_has_its_base_rtt() {
    let s = scenario(
        r#"
duration = "5s"
[link.down]
rate = "10Mbit"
delay = "10ms"
[link.up]
rate = "10Mbit"
delay = "10ms"
[[flows]]
kind = "ping"
interval = "100ms"
size = "100B"
rtt = "100ms"
"#,
    );
    for ip in both_families() {
        let r = run(
            &s,
            RunOptions {
                ip: Some(ip),
                ..Default::default()
            },
        )
        .results;
        let ping = &r.flows[0];
        // 100 ms base plus two serializations of 100 B at 10 Mbit/s (0.16 ms),
        // within the histogram's 0.1% precision.
        assert!(
            (ping.rtt_ms.p50 - 100.16).abs() < 0.15,
            "{ip:?} {:?}",
            ping.rtt_ms
        );
        // 50 probes; the last one's echo would arrive after the run ends.
        assert_eq!(ping.rtt_ms.count, 49);
        assert_eq!(ping.unanswered, 1);
        assert_eq!(ping.loss_rate, 0.0);
        assert_eq!(ping.queue_delay_ms.max, 0.0);
    }
}

#[test]
fn same_seed_same_bytes_in_results_and_capture() {
    let s = scenario(OVERLOAD);
    let once = || {
        let mut cap: Vec<(Instant, Direction, Vec<u8>)> = Vec::new();
        let r = run(
            &s,
            RunOptions {
                capture: Some(&mut cap),
                ..Default::default()
            },
        )
        .results;
        (serde_json::to_string(&r).unwrap(), cap)
    };
    let (a, cap_a) = once();
    let (b, cap_b) = once();
    assert_eq!(a, b);
    assert!(!cap_a.is_empty());
    assert!(cap_a == cap_b);
}

#[test]
fn flows_start_and_stop_on_time() {
    let s = scenario(
        r#"
duration = "10s"
[link.down]
rate = "100Mbit"
[link.up]
rate = "100Mbit"
[[flows]]
kind = "cbr"
rate = "8Mbit"
size = "1000B"
start = "2s"
stop = "4s"
"#,
    );
    let r = run(&s, RunOptions::default()).results;
    let f = &r.flows[0];
    // 1000 packets per second for 2 seconds.
    assert_eq!(f.sent_packets, 2000);
    assert_eq!(f.delivered_packets, 2000);
    assert!(
        (f.goodput_mbps - 8.0 * 972.0 / 1000.0).abs() < 0.01,
        "{}",
        f.goodput_mbps
    );
}
