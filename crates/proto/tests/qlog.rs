//! qlog: endpoints trace each connection from its creation, so the trace
//! starts with the handshake; every record passes the qlog schema and
//! qvis-loader checks, and event classes keep traces small.

mod util;

use brisk_proto::qlog::{EventClasses, QlogFactory, QlogWriter, TraceStart, VantagePoint};
use brisk_time::Instant;
use brisk_trace::qlog_check::{CheckedTrace, check};
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Write;
use std::sync::{Arc, Mutex};
use util::*;

#[derive(Clone, Default)]
struct SharedBuf(Arc<Mutex<Vec<u8>>>);

impl Write for SharedBuf {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A wall clock the test controls: the run starts at this epoch time.
const EPOCH_MS: f64 = 1_764_190_800_000.0;

/// Each trace by its vantage point ("client", "server").
type Traces = Arc<Mutex<BTreeMap<String, SharedBuf>>>;

fn factory(classes: EventClasses) -> (QlogFactory, Traces) {
    let traces: Traces = Arc::default();
    let t = traces.clone();
    let f = QlogFactory(Arc::new(move |s| {
        let buf = SharedBuf::default();
        let kind = format!("{:?}", s.vantage).to_lowercase();
        t.lock().unwrap().insert(kind.clone(), buf.clone());
        let start = TraceStart {
            title: format!("brisk {kind}"),
            vantage: VantagePoint::new(s.vantage, "brisk"),
            reference: s.now,
            reference_time_ms: EPOCH_MS + s.now.as_nanos() as f64 / 1e6,
            group_id: Some(s.group_id.clone()),
            classes,
        };
        let w = QlogWriter::new(buf, &start).ok()?;
        Some(Box::new(w) as Box<dyn brisk_proto::qlog::QlogSink>)
    }));
    (f, traces)
}

fn trace(traces: &Traces, side: &str) -> CheckedTrace {
    let bytes = traces.lock().unwrap()[side].0.lock().unwrap().clone();
    check(&bytes).unwrap_or_else(|e| panic!("{side} trace: {e}"))
}

fn packets(t: &CheckedTrace) -> Vec<&Value> {
    t.events
        .iter()
        .filter(|e| e["name"].as_str().unwrap().starts_with("transport:packet_"))
        .collect()
}

fn bulk_pair(family: Family, classes: EventClasses) -> (Pair, Traces) {
    let (f, traces) = factory(classes);
    let mut cfg = PairConfig::new(family, 50).link(|l| {
        l.rate_bps = Some(10_000_000);
        l.queue_bytes = 30_000;
    });
    cfg.qlog = Some(f);
    let mut p = Pair::new(cfg);
    let mut bulk = Bulk::new(payload(300_000, 1));
    assert!(p.run_until(Instant::from_millis(10_000), |p| bulk.pump(p)));
    (p, traces)
}

#[test]
fn both_traces_start_at_the_handshake_and_pass_the_schema() {
    for family in FAMILIES {
        let (mut p, traces) = bulk_pair(family, EventClasses::ALL);
        let client = trace(&traces, "client");
        let server = trace(&traces, "server");
        for (t, side) in [(&client, "client"), (&server, "server")] {
            let h = &t.header;
            assert_eq!(h["trace"]["vantage_point"]["type"], side);
            assert_eq!(t.events[0]["name"], "connectivity:connection_started");
            assert_eq!(t.events[0]["time"], 0.0);
            let ip_version = match family {
                Family::V4 => "ipv4",
                Family::V6 => "ipv6",
            };
            assert_eq!(t.events[0]["data"]["ip_version"], ip_version);
        }
        // The server's connection starts when the client's Initial arrives:
        // 10 ms of delay and the time to send 1200 bytes of UDP payload in
        // an IP packet (28 bytes of headers over IPv4, 48 over IPv6) at
        // 10 Mbit/s: 0.9824 ms or 0.9984 ms.
        let reference = |t: &CheckedTrace| {
            t.header["trace"]["common_fields"]["reference_time"]
                .as_f64()
                .unwrap()
        };
        assert_eq!(reference(&client), EPOCH_MS);
        let headers = match family {
            Family::V4 => 28.0,
            Family::V6 => 48.0,
        };
        let arrival_ms = 10.0 + (1200.0 + headers) * 8.0 / 10_000.0;
        let got = reference(&server) - EPOCH_MS;
        assert!(
            (got - arrival_ms).abs() < 1e-3,
            "{got} ms, want {arrival_ms} ms"
        );
        let peer = &client.events[0]["data"];
        assert_eq!(peer["dst_ip"], p.server_addr.ip().to_string());
        assert_eq!(peer["dst_port"], p.server_addr.port());
        assert_eq!(
            server.events[0]["data"]["dst_ip"],
            p.client_addr.ip().to_string()
        );
        assert_eq!(
            client.header["trace"]["common_fields"]["group_id"],
            server.header["trace"]["common_fields"]["group_id"],
            "one connection, one group"
        );

        let first = packets(&client)[0];
        assert_eq!(first["name"], "transport:packet_sent");
        assert_eq!(first["data"]["header"]["packet_type"], "initial");
        assert_eq!(first["data"]["header"]["packet_number"], 0);
        let first = packets(&server)[0];
        assert_eq!(first["name"], "transport:packet_received");
        assert_eq!(first["data"]["header"]["packet_type"], "initial");
        assert_eq!(first["data"]["header"]["packet_number"], 0);
        let server_sent: Vec<&Value> = packets(&server)
            .into_iter()
            .filter(|e| e["name"] == "transport:packet_sent")
            .collect();
        assert_eq!(server_sent[0]["data"]["header"]["packet_type"], "handshake");
        assert_eq!(server_sent[0]["data"]["header"]["packet_number"], 0);

        let count = |t: &CheckedTrace, name: &str, ty: &str| {
            t.events
                .iter()
                .filter(|e| e["name"] == name && e["data"]["header"]["packet_type"] == ty)
                .count() as u64
        };
        let stats = p.client_conn().stats();
        assert_eq!(
            count(&client, "transport:packet_sent", "1RTT"),
            stats.packets_sent
        );
        assert_eq!(count(&client, "transport:packet_sent", "initial"), 1);
        assert_eq!(count(&client, "transport:packet_received", "handshake"), 1);
        assert_eq!(
            count(&client, "recovery:packet_lost", "1RTT"),
            stats.packets_lost
        );
        assert!(stats.packets_lost > 0, "the small queue overflows");
        let names = |t: &CheckedTrace, n: &str| t.events.iter().filter(|e| e["name"] == n).count();
        assert!(names(&client, "recovery:metrics_updated") > 10);
        assert!(names(&client, "recovery:congestion_state_updated") >= 1);
        assert!(names(&client, "recovery:ecn_state_updated") >= 1);
    }
}

#[test]
fn the_default_classes_keep_the_handshake_and_drop_1rtt_packets() {
    for family in FAMILIES {
        let (_, all) = bulk_pair(family, EventClasses::ALL);
        let (_, default) = bulk_pair(family, EventClasses::default());
        let all = trace(&all, "client");
        let small = trace(&default, "client");
        let kinds: Vec<&str> = packets(&small)
            .iter()
            .map(|e| e["data"]["header"]["packet_type"].as_str().unwrap())
            .collect();
        assert_eq!(kinds, ["initial", "handshake"]);
        let without_packets: Vec<&Value> = all
            .events
            .iter()
            .filter(|e| {
                e["data"]["header"]["packet_type"] != "1RTT" || e["name"] == "recovery:packet_lost"
            })
            .collect();
        assert_eq!(small.events.iter().collect::<Vec<_>>(), without_packets);
        assert!(
            small.events.len() * 2 < all.events.len(),
            "{} of {} events kept",
            small.events.len(),
            all.events.len()
        );
    }
}
