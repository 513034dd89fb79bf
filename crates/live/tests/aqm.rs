//! What the scenario's queue does to real kernel TCP: a deep FIFO fills
//! and a ping beside the download waits behind it (bufferbloat); CoDel
//! keeps the queue near its 5 ms target; with ECN on, CoDel and DualPI2
//! mark instead of drop, and the marks are in the real IP headers (the
//! capture shows them, tshark counts them) and reach the sender.

mod common;

use brisk_live::FlowResults;
use brisk_live::echo::{self, EchoServer, PingConfig, PingReport};
use brisk_live::{Lab, LabConfig, LiveResults};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

const LINKS: &str = "[link.down]\nrate = \"10Mbit\"\ndelay = \"10ms\"\n\
                     [link.up]\nrate = \"10Mbit\"\ndelay = \"10ms\"\n";
/// The base round trip: both propagation delays.
const BASE_RTT_MS: f64 = 20.0;

struct Run {
    ping: PingReport,
    bulk: brisk_live::bulk::BulkReport,
    results: LiveResults,
}

impl Run {
    /// The download, as the router measured it.
    fn tcp(&self) -> &FlowResults {
        self.results
            .flows
            .iter()
            .find(|f| f.kind == "tcp")
            .expect("a tcp flow")
    }

    /// What the queue added to the ping's median round trip.
    fn added_ms(&self) -> f64 {
        self.ping.quantile(0.5).as_secs_f64() * 1000.0 - BASE_RTT_MS
    }
}

/// A bulk download for `secs`, with a ping every 50 ms from its second
/// second until one second before its end.
fn download_with_ping(queue: &str, cc: &str, ecn: bool, secs: u64, out: Option<PathBuf>) -> Run {
    let mut config = LabConfig::new(common::scenario(&format!("{LINKS}{queue}")));
    config.out = out;
    let lab = Lab::up(config).expect("lab comes up");
    let echo_addr = SocketAddr::new(lab.server_bind_addr(), echo::ECHO_PORT);
    let _echo = EchoServer::start(lab.server_ns(), echo_addr).expect("echo server");
    let (bulk, ping) = std::thread::scope(|s| {
        let pinger = s.spawn(|| {
            std::thread::sleep(Duration::from_secs(2));
            echo::ping(
                lab.client_ns(),
                SocketAddr::new(lab.server_addr(), echo::ECHO_PORT),
                PingConfig {
                    interval: Duration::from_millis(50),
                    count: (secs - 3) * 20,
                    ..PingConfig::default()
                },
            )
            .expect("ping runs")
        });
        let bulk = common::bulk(&lab, cc, ecn, Duration::from_secs(secs));
        (bulk, pinger.join().expect("pinger"))
    });
    let results = lab.finish(None, Some(bulk.clone())).expect("lab finishes");
    Run {
        ping,
        bulk,
        results,
    }
}

fn describe(label: &str, r: &Run) {
    let tcp = r.results.flows.iter().find(|f| f.kind == "tcp");
    eprintln!(
        "{label}: ping p50 {:.1} ms p99 {:.1} ms ({} of {}); goodput {:.2} Mbit/s; \
         queue drops {} marks {} delay p50 {:.1} ms; flow CE {} (sender saw {} CE, ecn {}); \
         retransmits {}",
        r.ping.quantile(0.5).as_secs_f64() * 1000.0,
        r.ping.quantile(0.99).as_secs_f64() * 1000.0,
        r.ping.received,
        r.ping.sent,
        r.bulk.steady_goodput_mbps,
        r.results.queue.drops,
        r.results.queue.marks,
        r.results.queue.delay_ms.p50,
        tcp.map_or(0, |f| f.ce_packets),
        r.bulk.sender.delivered_ce_segments,
        r.bulk.sender.ecn_negotiated,
        r.bulk.sender.retransmitted_segments,
    );
}

#[test]
fn codel_removes_the_bufferbloat_of_a_deep_fifo() {
    let Some(_g) = common::lab_guard("codel_removes_the_bufferbloat_of_a_deep_fifo") else {
        return;
    };
    let fifo = download_with_ping(
        "[queue.fifo]\nlimit_packets = 1000\n",
        "cubic",
        false,
        8,
        None,
    );
    describe("fifo 1000", &fifo);
    // 1000 packets at 10 Mbit/s is 1.2 s of buffer; CUBIC fills much of it.
    assert!(fifo.added_ms() > 100.0, "fifo adds {} ms", fifo.added_ms());
    common::within_attempts("codel beside a deep fifo", || {
        let codel = download_with_ping("[queue.codel]\necn = false\n", "cubic", false, 8, None);
        describe("codel", &codel);
        assert!(codel.results.queue.drops_aqm > 0);
        // CoDel holds the standing queue near its 5 ms target; a busy host
        // delays the ping's packets by as much as it delays the router.
        let late = common::router_lateness_ms(&codel.results.driver.fidelity);
        common::bound(codel.added_ms() < 15.0 + late, || {
            format!("codel adds {} ms, router late {late} ms", codel.added_ms())
        })?;
        common::bound(codel.added_ms() < 0.2 * fifo.added_ms(), || {
            format!(
                "codel adds {} ms, fifo {} ms",
                codel.added_ms(),
                fifo.added_ms()
            )
        })?;
        // ... without giving up the link.
        common::bound(codel.bulk.steady_goodput_mbps > 9.0, || {
            format!("codel goodput {} Mbit/s", codel.bulk.steady_goodput_mbps)
        })
    });
}

fn tshark_count(pcap: &std::path::Path, filter: &str) -> Option<u64> {
    let out = Command::new("tshark")
        .args(["-r"])
        .arg(pcap)
        .args(["-Y", filter, "-T", "fields", "-e", "frame.number"])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).lines().count() as u64)
}

#[test]
fn ecn_tcp_sees_ce_marks_through_codel_in_the_capture() {
    let Some(_g) = common::lab_guard("ecn_tcp_sees_ce_marks_through_codel_in_the_capture") else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("brisk-live-ecn-{}", std::process::id()));
    let r = download_with_ping(
        "[queue.codel]\necn = true\n",
        "cubic",
        true,
        5,
        Some(dir.clone()),
    );
    describe("codel ecn", &r);
    let tcp = r.tcp();
    assert!(r.bulk.sender.ecn_negotiated);
    assert!(r.results.queue.marks > 0 && tcp.ce_packets > 0);
    assert!(r.results.queue.marks > r.results.queue.drops_aqm);
    assert!(
        r.bulk.sender.delivered_ce_segments > 0,
        "{:?}",
        r.bulk.sender
    );
    // The client-side capture holds every delivered packet, marks included.
    match tshark_count(&dir.join("client.pcap"), "tcp && ip.dsfield.ecn == 3") {
        Some(n) => {
            eprintln!("tshark counts {n} CE-marked TCP packets in client.pcap");
            assert_eq!(n, tcp.ce_packets);
        }
        None => eprintln!("tshark not installed: capture not checked (scripts/setup installs it)"),
    }
    // tcptrace follows the connection in the server-side capture.
    match Command::new("tcptrace")
        .arg("-n")
        .arg(dir.join("server.pcap"))
        .output()
    {
        Ok(o) => {
            let text = String::from_utf8_lossy(&o.stdout);
            assert!(o.status.success(), "{text}");
            assert!(text.contains("10.1.0.1:5299"), "{text}");
        }
        Err(_) => {
            eprintln!("tcptrace not installed: capture not checked (scripts/setup installs it)")
        }
    }
    let events = std::fs::read_to_string(dir.join("events.csv")).expect("events.csv");
    let marks = events.lines().filter(|l| l.ends_with(",mark_ce,")).count() as u64;
    assert_eq!(marks, r.results.queue.marks);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ecn_tcp_sees_ce_marks_through_dualpi2() {
    let Some(_g) = common::lab_guard("ecn_tcp_sees_ce_marks_through_dualpi2") else {
        return;
    };
    common::within_attempts("dualpi2 with classic ecn", || {
        let r = download_with_ping("[queue.dualpi2]\n", "cubic", true, 5, None);
        describe("dualpi2 ecn", &r);
        let tcp = r.tcp();
        assert!(r.bulk.sender.ecn_negotiated);
        assert!(tcp.ce_packets > 0 && r.bulk.sender.delivered_ce_segments > 0);
        // Classic ECN traffic sits in DualPI2's classic queue, steered to
        // 15 ms; the bound allows the router's measured lateness.
        let added = r.added_ms();
        let late = common::router_lateness_ms(&r.results.driver.fidelity);
        common::bound(added < 30.0 + late, || {
            format!("dualpi2 adds {added} ms, router late {late} ms")
        })
    });
}
