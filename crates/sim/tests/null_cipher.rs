//! The null cipher (`RunOptions::null_cipher`, `brisk sim --null-cipher`,
//! the bench's second Brisk figure) leaves packets unencrypted at the size
//! they would have sealed, so it must change no result: every Brisk
//! scenario of the repository and the bench's Brisk case give the same
//! results JSON both ways, on both families. Captures tell the two runs
//! apart (sealed payloads against clear ones), so the option is in force.

use brisk_netmodel::Direction;
use brisk_sim::scenario::{IpFamily, Scenario};
use brisk_sim::{RunOptions, run};
use brisk_time::Instant;
use std::path::Path;
use std::time::Duration;

type Captured = Vec<(Instant, Direction, Vec<u8>)>;

/// The results as JSON and the bottleneck's packets.
fn run_once(scenario: &Scenario, ip: IpFamily, null_cipher: bool) -> (String, Captured) {
    let mut packets = Captured::new();
    let options = RunOptions {
        ip: Some(ip),
        null_cipher,
        capture: Some(&mut packets),
        ..Default::default()
    };
    let r = run(scenario, options).results;
    (serde_json::to_string(&r).unwrap(), packets)
}

fn brisk_scenarios() -> Vec<(String, Scenario)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("brisk-") && n.ends_with(".toml"))
        })
        .collect();
    files.sort();
    assert!(files.len() >= 10, "found {files:?}");
    let mut out: Vec<_> = files
        .into_iter()
        .map(|p| (p.display().to_string(), Scenario::load(&p).unwrap()))
        .collect();
    let bench = brisk_sim::bench::cases(Duration::from_secs(2)).unwrap();
    let case = bench.into_iter().find(|c| c.name == "brisk-fq_codel");
    out.push(("bench brisk-fq_codel".into(), case.unwrap().scenario));
    out
}

#[test]
fn the_null_cipher_changes_no_result_on_either_family() {
    for (name, mut s) in brisk_scenarios() {
        s.duration = s.duration.min(Duration::from_secs(2));
        for ip in [IpFamily::V4, IpFamily::V6] {
            let (sealed, sealed_packets) = run_once(&s, ip, false);
            let (clear, clear_packets) = run_once(&s, ip, true);
            assert_eq!(sealed, clear, "{name} over {ip:?}");
            // Same packets, same sizes, same moments; only the bytes of
            // the 1-RTT packets differ.
            assert_eq!(sealed_packets.len(), clear_packets.len(), "{name} {ip:?}");
            assert!(sealed_packets.len() > 100, "{name} {ip:?}");
            let mut differ = 0;
            for (a, b) in sealed_packets.iter().zip(&clear_packets) {
                assert_eq!(
                    (a.0, a.1, a.2.len()),
                    (b.0, b.1, b.2.len()),
                    "{name} {ip:?}"
                );
                differ += usize::from(a.2 != b.2);
            }
            assert!(
                differ > sealed_packets.len() / 2,
                "{name} over {ip:?}: only {differ} of {} packets differ: the null cipher \
                 was not in force",
                sealed_packets.len()
            );
        }
    }
}
