//! A whole `brisk live` run with `--out`: every file it promises is
//! written, and the bottleneck capture holds the transfer in both
//! directions as tshark and tcptrace read it.

mod common;

use brisk_live::bulk::BulkConfig;
use brisk_live::{LabConfig, LiveRun, Workload};
use std::process::Command;
use std::time::Duration;

#[test]
fn a_run_with_out_writes_the_captures_and_the_bottleneck_pcap() {
    let Some(_g) = common::lab_guard("a_run_with_out_writes_the_captures_and_the_bottleneck_pcap")
    else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("brisk-live-run-{}", std::process::id()));
    let mut lab = LabConfig::new(common::scenario(
        "[link.down]\nrate = \"10Mbit\"\ndelay = \"10ms\"\n\
         [link.up]\nrate = \"10Mbit\"\ndelay = \"10ms\"\n",
    ));
    lab.out = Some(dir.clone());
    let outcome = brisk_live::run(LiveRun {
        lab,
        server: None,
        workload: Workload::Bulk(BulkConfig {
            cc: "cubic".into(),
            ecn: false,
            duration: Duration::from_secs(2),
        }),
        quiet_stdout: true,
        max_time: None,
    })
    .expect("the run completes");
    assert_eq!(outcome.exit_code, 0);
    let delivered: u64 = outcome
        .results
        .flows
        .iter()
        .map(|f| f.delivered_packets)
        .sum();
    assert!(delivered > 1000, "{:?}", outcome.results.flows);
    for file in [
        "client.pcap",
        "server.pcap",
        "events.csv",
        "bottleneck.pcap",
    ] {
        let len = std::fs::metadata(dir.join(file)).map(|m| m.len());
        assert!(len.as_ref().is_ok_and(|&l| l > 24), "{file}: {len:?}");
    }
    let pcap = dir.join("bottleneck.pcap");
    let count = |filter: &str| -> Option<u64> {
        let out = Command::new("tshark")
            .arg("-r")
            .arg(&pcap)
            .args(["-Y", filter, "-T", "fields", "-e", "frame.number"])
            .output()
            .ok()?;
        assert!(
            out.status.success(),
            "tshark: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Some(String::from_utf8_lossy(&out.stdout).lines().count() as u64)
    };
    match (count("tcp.srcport == 5299"), count("tcp.dstport == 5299")) {
        (Some(data), Some(acks)) => {
            eprintln!("bottleneck.pcap: {data} data-direction and {acks} ACK-direction segments");
            assert!(data > 1000 && acks > 100, "{data} / {acks}");
        }
        _ => eprintln!("tshark not installed: capture not checked (scripts/setup installs it)"),
    }
    if let Ok(o) = Command::new("tcptrace").arg("-n").arg(&pcap).output() {
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "{text}");
        assert!(text.contains(":5299"), "{text}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
