//! `brisk sim` as a binary: `--qlog DIR` writes a trace per Brisk flow end
//! that passes the qlog schema and qvis-loader checks, `--out DIR` writes
//! the plots, and neither changes the `--json` results.

use brisk_trace::qlog_check::{CheckedTrace, check};
use std::path::Path;
use std::process::Command;

const SCENARIO: &str = r#"
name = "traced"
duration = "1500ms"

[link.down]
rate = "10Mbit"
delay = "10ms"

[link.up]
rate = "10Mbit"
delay = "10ms"

[queue.fifo]
limit_packets = 50

[[flows]]
name = "bulk one"
kind = "brisk"
cc = "cubic"

[[flows]]
name = "late"
kind = "brisk"
cc = "prague"
start = "200ms"

[[flows]]
name = "ping"
kind = "ping"
interval = "20ms"
"#;

fn sim(dir: &Path, ip: &str, extra: &[&str]) -> String {
    let scenario = dir.join("traced.toml");
    std::fs::write(&scenario, SCENARIO).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_brisk"))
        .arg("sim")
        .arg(&scenario)
        .args(["--ip", ip, "--json"])
        .args(extra)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn trace(path: &Path) -> CheckedTrace {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    check(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn reference_ms(t: &CheckedTrace) -> f64 {
    t.header["trace"]["common_fields"]["reference_time"]
        .as_f64()
        .unwrap()
}

#[test]
fn qlog_and_plots_beside_unchanged_results() {
    for ip in ["v4", "v6"] {
        let tmp = tempfile::tempdir().unwrap();
        let plain = sim(tmp.path(), ip, &[]);
        let qlog = tmp.path().join("qlog");
        let out = tmp.path().join("out");
        let traced = sim(
            tmp.path(),
            ip,
            &[
                "--qlog",
                qlog.to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
            ],
        );
        assert_eq!(plain, traced, "--qlog and --out leave the results alone");

        let mut names: Vec<String> = std::fs::read_dir(&qlog)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(
            names,
            [
                "bulk_one-client.sqlog",
                "bulk_one-server.sqlog",
                "late-client.sqlog",
                "late-server.sqlog"
            ]
        );
        let family = if ip == "v4" { "ipv4" } else { "ipv6" };
        for (flow, start_ms) in [("bulk_one", 0.0), ("late", 200.0)] {
            let client = trace(&qlog.join(format!("{flow}-client.sqlog")));
            let server = trace(&qlog.join(format!("{flow}-server.sqlog")));
            // The virtual clock: the client starts at the flow's start, the
            // server when the Initial arrives: one way delay and a
            // transmission later through the empty queue, later still when
            // the second flow's Initial meets the first flow's queue or is
            // lost to it.
            assert_eq!(reference_ms(&client), start_ms);
            let late = reference_ms(&server) - start_ms;
            let initials = client
                .events
                .iter()
                .filter(|e| e["data"]["header"]["packet_type"] == "initial")
                .count();
            // Only the first flow meets an empty queue.
            if initials == 1 && flow == "bulk_one" {
                assert!(
                    (10.0..12.0).contains(&late),
                    "server starts {late} ms later"
                );
            } else {
                assert!(late > 10.0, "server starts {late} ms later");
            }
            assert_eq!(client.header["trace"]["vantage_point"]["type"], "client");
            assert_eq!(server.header["trace"]["vantage_point"]["type"], "server");
            assert_eq!(client.events[0]["data"]["ip_version"], family);
            let first = client
                .events
                .iter()
                .find(|e| e["name"] == "transport:packet_sent")
                .unwrap();
            assert_eq!(first["data"]["header"]["packet_type"], "initial");
            assert_eq!(first["data"]["header"]["packet_number"], 0);
            assert!(
                client
                    .events
                    .iter()
                    .any(|e| e["name"] == "recovery:metrics_updated")
            );
        }

        for (file, title) in [
            ("delivered-bytes.svg", "Bytes delivered to each receiver"),
            ("rtt.svg", "Round-trip time each flow measured"),
            ("queue-delay.svg", "bottleneck queue"),
            (
                "time-sequence-bulk_one.svg",
                "Time-sequence graph of bulk one",
            ),
            ("time-sequence-late.svg", "Time-sequence graph of late"),
        ] {
            let svg = std::fs::read_to_string(out.join(file)).unwrap();
            assert!(svg.starts_with("<svg"), "{file}");
            assert!(svg.contains(title), "{file} is titled {title:?}");
        }
        for flow in ["bulk one", "late", "ping"] {
            let rtt = std::fs::read_to_string(out.join("rtt.svg")).unwrap();
            assert!(rtt.contains(flow), "rtt.svg has a line for {flow}");
        }
    }
}

#[test]
fn an_unknown_event_class_is_refused_by_name() {
    let tmp = tempfile::tempdir().unwrap();
    let scenario = tmp.path().join("traced.toml");
    std::fs::write(&scenario, SCENARIO).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_brisk"))
        .arg("sim")
        .arg(&scenario)
        .args(["--qlog", tmp.path().to_str().unwrap()])
        .args(["--qlog-events", "recovery,streems"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("streems") && err.contains("--qlog-events"),
        "{err}"
    );
}
