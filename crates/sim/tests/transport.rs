//! The Brisk transport through the simulator's impaired links: every byte
//! arrives, in order and intact, whatever the network does; runs are
//! reproducible. Each case runs over IPv4 and IPv6.
//!
//! Integrity: the receiver compares every byte with the deterministic
//! pattern due at its offset, and a stream read to its end must lack no
//! byte the sender wrote.

use brisk_sim::engine::Direction;
use brisk_sim::flows::TransportReport;
use brisk_sim::results::{FlowResults, Results};
use brisk_sim::scenario::{IpFamily, Scenario};
use brisk_sim::{Run, RunOptions, run};
use brisk_time::Instant;
use brisk_trace::plot::SeqKind;

const FAMILIES: [IpFamily; 2] = [IpFamily::V4, IpFamily::V6];

/// One bulk flow of `bytes` over a 10 Mbit/s, 20 ms path; `down` and `up`
/// are extra lines for the two link tables.
fn bulk(bytes: u64, duration: &str, down: &str, up: &str) -> Scenario {
    let text = format!(
        r#"
duration = "{duration}"
[link.down]
rate = "10Mbit"
delay = "10ms"
{down}
[link.up]
rate = "10Mbit"
delay = "10ms"
{up}
[queue.fifo]
limit_packets = 100
[[flows]]
kind = "brisk"
bytes = "{bytes}B"
"#
    );
    Scenario::parse(&text, "transport.toml").unwrap()
}

fn run_on(s: &Scenario, ip: IpFamily, series: bool) -> Run {
    run(
        s,
        RunOptions {
            ip: Some(ip),
            series,
            ..Default::default()
        },
    )
}

fn transport(run: &Run) -> TransportReport {
    run.outcome.reports()[0].transport.clone().unwrap()
}

/// Every byte arrived, intact and in order, and the transfer completed.
fn assert_delivered(r: &Results, bytes: u64) -> &FlowResults {
    let f = &r.flows[0];
    let b = f.brisk.as_ref().unwrap();
    let what = format!("{} {}: {:?}", r.scenario, r.ip, b.transport);
    assert_eq!(f.sent_bytes, bytes, "{what}");
    assert_eq!(f.delivered_bytes, bytes, "{what}");
    assert!(b.transport.data_intact, "{what}");
    assert!(b.completion_time_s.is_some(), "{what}");
    assert!(b.transport.error.is_none(), "{what}");
    f
}

#[test]
fn clean_path_delivers_and_reports_its_own_rtt() {
    for ip in FAMILIES {
        let run = run_on(&bulk(1_000_000, "3s", "", ""), ip, false);
        let f = assert_delivered(&run.results, 1_000_000);
        let b = f.brisk.as_ref().unwrap();
        let t = transport(&run);
        let i = t.integrity;
        assert_eq!((i.checked_bytes, i.corrupt_bytes), (1_000_000, 0));
        assert!(i.stream_complete && i.missing_bytes == 0, "{i:?}");
        // The transport's own samples: never below the 20 ms path.
        assert!(f.rtt_measured && f.rtt_ms.count > 50, "{:?}", f.rtt_ms);
        assert!(b.transport.min_rtt_ms >= 20.0, "{:?}", b.transport);
        // IK: one round trip, plus the padded Initial's serialization.
        let hs = b.transport.handshake_ms.unwrap();
        assert!((20.0..23.0).contains(&hs), "{hs}");
        // Full-size datagrams: 1500-byte packets on either family.
        let per_packet = run.results.link.transmitted_bytes / run.results.link.transmitted_packets;
        assert!(per_packet > 1400, "{per_packet}");
        assert_eq!(f.link_losses, 0);
    }
}

/// The flow's receivers take UDP checksums on trust and its senders leave
/// them for the capture to fill in, so the test is here: every datagram at
/// the bottleneck, both ways, verifies, including the ones whose ECN field
/// a hop bleached.
#[test]
fn every_datagram_on_the_wire_has_valid_checksums() {
    let s = bulk(300_000, "3s", r#"ecn = "bleach""#, "");
    for ip in FAMILIES {
        let mut cap: Vec<(Instant, Direction, Vec<u8>)> = Vec::new();
        let r = run(
            &s,
            RunOptions {
                ip: Some(ip),
                capture: Some(&mut cap),
                ..Default::default()
            },
        );
        assert_delivered(&r.results, 300_000);
        for dir in [Direction::Down, Direction::Up] {
            let n = cap.iter().filter(|(_, d, _)| *d == dir).count();
            assert!(n > 80, "{ip:?} {dir:?}: {n} datagrams");
        }
        for (at, dir, d) in &cap {
            assert!(
                brisk_wire::ip::parse_udp(d).is_ok(),
                "{ip:?} {dir:?} at {at:?}: {:?}",
                brisk_wire::ip::parse_udp(d)
            );
        }
    }
}

#[test]
fn random_loss_of_1_5_and_20_percent_in_both_directions() {
    for (loss, bytes, duration) in [
        ("1%", 2_000_000, "10s"),
        ("5%", 1_000_000, "10s"),
        ("20%", 1_000_000, "30s"),
    ] {
        let line = format!("loss = \"{loss}\"");
        for ip in FAMILIES {
            let run = run_on(&bulk(bytes, duration, &line, &line), ip, false);
            let f = assert_delivered(&run.results, bytes);
            let t = &f.brisk.as_ref().unwrap().transport;
            assert!(run.results.link.lost_packets > 0, "{loss}");
            assert!(
                t.packets_lost > 0 && t.bytes_retransmitted > 0,
                "{loss} {t:?}"
            );
        }
    }
}

#[test]
fn gilbert_elliott_bursts() {
    let line = r#"loss = { gilbert_elliott = { loss = "3%", burst_packets = 8 } }"#;
    for ip in FAMILIES {
        let run = run_on(&bulk(1_000_000, "10s", line, ""), ip, false);
        let f = assert_delivered(&run.results, 1_000_000);
        assert!(f.link_losses > 5, "{}", f.link_losses);
    }
}

#[test]
fn reordering_by_30_packets_is_not_mistaken_for_much_loss() {
    let line = r#"reorder = { probability = "2%", depth_packets = 30 }"#;
    for ip in FAMILIES {
        let run = run_on(&bulk(2_000_000, "10s", line, ""), ip, false);
        let f = assert_delivered(&run.results, 2_000_000);
        assert_eq!(f.link_losses + f.queue_drops, 0);
        // Reordering costs at most a little: nothing was lost on the path.
        let t = &f.brisk.as_ref().unwrap().transport;
        let resent = t.bytes_retransmitted as f64 / 2e6;
        assert!(resent < 0.05, "{t:?}");
    }
}

#[test]
fn duplicated_packets_are_dropped_once_seen() {
    let line = r#"duplicate = "5%""#;
    for ip in FAMILIES {
        let run = run_on(&bulk(1_000_000, "5s", line, line), ip, false);
        assert_delivered(&run.results, 1_000_000);
        let t = transport(&run);
        assert!(t.receiver.unwrap().dropped.duplicate > 10);
        assert!(t.sender.unwrap().dropped.duplicate > 0);
    }
}

#[test]
fn a_five_second_outage_is_survived() {
    // The radio goes dead in both directions: everything sent is lost.
    let line = r#"outages = [{ start = "200ms", duration = "5s" }]
outage_drops = true"#;
    for ip in FAMILIES {
        let run = run_on(&bulk(1_000_000, "20s", line, line), ip, false);
        let f = assert_delivered(&run.results, 1_000_000);
        let b = f.brisk.as_ref().unwrap();
        assert!(b.completion_time_s.unwrap() > 5.2, "{b:?}");
        assert!(b.transport.ptos > 2, "{:?}", b.transport);
    }
}

#[test]
fn same_seed_same_json_other_seed_other_json() {
    let line = r#"loss = "2%""#;
    let s = bulk(500_000, "5s", line, line);
    for ip in FAMILIES {
        let json = |seed| {
            let r = run(
                &s,
                RunOptions {
                    seed: Some(seed),
                    ip: Some(ip),
                    ..Default::default()
                },
            );
            serde_json::to_string(&r.results).unwrap()
        };
        assert_eq!(json(3), json(3));
        assert_ne!(json(3), json(4));
    }
}

#[test]
fn series_give_a_time_sequence_graph_with_retransmissions() {
    let line = r#"loss = "3%""#;
    for ip in FAMILIES {
        let run = run_on(&bulk(1_000_000, "5s", line, ""), ip, true);
        let t = transport(&run);
        let count = |k| t.seq.iter().filter(|e| e.kind == k).count();
        assert!(count(SeqKind::Data) > 500 && count(SeqKind::Ack) > 100);
        assert!(count(SeqKind::Retransmit) > 0);
        // Fresh data covers the stream once; the cumulative ACK only grows
        // and ends at the last byte.
        let fresh: u64 = t
            .seq
            .iter()
            .filter(|e| e.kind == SeqKind::Data)
            .map(|e| e.end - e.start)
            .sum();
        assert_eq!(fresh, 1_000_000);
        let acks: Vec<u64> = t
            .seq
            .iter()
            .filter(|e| e.kind == SeqKind::Ack)
            .map(|e| e.start)
            .collect();
        assert!(acks.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!(acks.last(), Some(&1_000_000));
        // The window edge stays ahead of the data.
        assert!(
            t.seq
                .iter()
                .filter(|e| e.kind == SeqKind::Ack)
                .all(|e| e.end >= e.start)
        );
        assert!(t.cwnd.len() > 10 && t.cwnd.windows(2).all(|w| w[0].0 <= w[1].0));
        let series = &run.outcome.series()[0];
        assert_eq!(series.rtt.len() as u64, run.results.flows[0].rtt_ms.count);
    }
}
