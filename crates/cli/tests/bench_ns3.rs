//! `brisk bench` beside ns-3: the ns-3 program builds, simulates the
//! dumbbell plausibly and yields a ratio computed from this run; without
//! ns-3 the bench says so and prints no ratio at all.

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

const MODULES: &[&str] = &[
    "ns3-core",
    "ns3-network",
    "ns3-internet",
    "ns3-internet-apps",
    "ns3-point-to-point",
    "ns3-traffic-control",
    "ns3-applications",
];

/// `brisk bench` with the ns-3 build cached inside the target directory.
fn bench(args: &[&str], env: &[(&str, &Path)]) -> Output {
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("bench-cache");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_brisk"));
    cmd.arg("bench").args(args).env("XDG_CACHE_HOME", &cache);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("brisk runs");
    assert!(
        out.status.success(),
        "brisk bench {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn json_rows(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// Whether ns-3's modules and a compiler are installed; under CI=true
/// their absence is a failure, elsewhere the test says why it skips.
fn ns3_present(test: &str) -> bool {
    let found = Command::new("pkg-config")
        .arg("--exists")
        .args(MODULES)
        .status()
        .is_ok_and(|s| s.success())
        && Command::new("g++").arg("--version").output().is_ok();
    if !found {
        let why =
            "ns-3 (Debian's libns3-dev, pkg-config and g++) is not installed; run scripts/setup";
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("{test}: {why}");
        }
        eprintln!("{test}: skipped: {why}");
    }
    found
}

#[test]
fn ns3_runs_beside_brisk_and_the_ratio_comes_from_both() {
    if !ns3_present("ns3_runs_beside_brisk_and_the_ratio_comes_from_both") {
        return;
    }
    let out = bench(
        &["--only", "brisk-fq_codel", "--seconds", "2", "--json"],
        &[],
    );
    let rows = json_rows(&out);
    assert_eq!(rows.len(), 1, "{rows:?}");
    let row = &rows[0];
    let ns3 = &row["ns3"];
    let report = &ns3["report"];
    assert_eq!(report["version"], "3.37", "{ns3}");
    assert_eq!(report["simulated_s"].as_f64(), Some(2.0), "{ns3}");
    // One CUBIC flow on 100 Mbit/s with a 20 ms RTT leaves slow start in
    // a fraction of a second and cannot exceed the link.
    let goodput = report["goodput_bit_s"].as_f64().unwrap();
    assert!(goodput > 50e6 && goodput < 100e6, "goodput {goodput}");
    // Over 2 s: up to 16.7 k data packets down, an ACK per two of them
    // up, and 400 pings and echoes.
    let hops = report["bottleneck_packet_hops"].as_u64().unwrap();
    assert!(hops > 15_000 && hops < 30_000, "hops {hops}");
    assert!(report["link_packet_hops"].as_u64().unwrap() > 2 * hops);
    // The ratio is ns-3's CPU over Brisk's CPU, both of this run.
    let ns3_cpu = ns3["cpu_s"].as_f64().unwrap();
    let brisk_cpu = row["cpu_s"].as_f64().unwrap();
    assert!(ns3_cpu > 0.0 && brisk_cpu > 0.0);
    let versus = &row["versus_ns3"];
    assert_eq!(versus["clock"], "cpu", "{versus}");
    let speedup = versus["speedup_time"].as_f64().unwrap();
    assert!(
        (speedup / (ns3_cpu / brisk_cpu) - 1.0).abs() < 1e-9,
        "{row}"
    );
    assert!(row.get("ns3_absent").is_none(), "{row}");

    let out = bench(&["--only", "brisk-fq_codel", "--seconds", "1"], &[]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("ns-3.37 measured now on the same network"),
        "{text}"
    );
    assert!(text.contains("x ns-3 t"), "{text}");
    // ns-3's own row: its bottleneck hops, and 1x against itself.
    let ns3_row = text
        .lines()
        .find(|l| l.starts_with("ns-3.37 ") && !l.contains("measured"))
        .unwrap_or_else(|| panic!("no ns-3 row: {text}"));
    // The row is named "ns-3.37 N flow(s)"; its hops follow the name.
    let hops: u64 = ns3_row
        .split_once("flow(s)")
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .and_then(|h| h.parse().ok())
        .unwrap_or_else(|| panic!("no hop count in the ns-3 row: {ns3_row}"));
    assert!(hops > 7_000, "{ns3_row}");
    assert!(ns3_row.contains("1x"), "{ns3_row}");
}

/// Every way ns-3 can be missing: no ns-3 modules for pkg-config, and no
/// pkg-config at all.
#[test]
fn without_ns3_the_bench_says_so_and_prints_no_ratio() {
    let empty = tempfile::tempdir().unwrap();
    let nowhere = empty.path().join("no-pkg-config");
    let absences: [&[(&str, &Path)]; 2] = [
        &[
            ("PKG_CONFIG_LIBDIR", empty.path()),
            ("PKG_CONFIG_PATH", empty.path()),
        ],
        &[("PKG_CONFIG", &nowhere)],
    ];
    for env in absences {
        let args = ["--only", "brisk-fq_codel", "--seconds", "0.2"];
        let text = String::from_utf8_lossy(&bench(&args, env).stdout).into_owned();
        assert!(
            text.contains(
                "ns-3 not found: install Debian's libns3-dev to compare; no ratio printed"
            ),
            "{text}"
        );
        assert!(!text.contains("x ns-3"), "{text}");
        // No number followed by "x" anywhere: no ratio, stored or measured.
        let ratio = text.split_whitespace().any(|w| {
            w.strip_suffix('x')
                .is_some_and(|n| !n.is_empty() && n.parse::<f64>().is_ok())
        });
        assert!(!ratio, "{text}");
        // The header names the build measured: a cargo profile, or the
        // profile-guided build.
        let build = text
            .lines()
            .find_map(|l| l.strip_prefix("build: "))
            .unwrap_or_else(|| panic!("no build line: {text}"));
        assert!(
            build.contains(" profile, opt-level ") || build.contains("PGO"),
            "{build}"
        );

        let rows = json_rows(&bench(&[&args[..], &["--json"]].concat(), env));
        assert_eq!(rows.len(), 1);
        let row = &rows[0];
        assert!(row["ns3"].is_null(), "{row}");
        assert!(row["versus_ns3"].is_null(), "{row}");
        assert!(
            row["ns3_absent"].as_str().is_some_and(|s| !s.is_empty()),
            "{row}"
        );
        assert!(
            row["build"].as_str().is_some_and(|b| build.starts_with(b)),
            "{row}"
        );
        let all = row.to_string();
        assert!(!all.contains("speedup") && !all.contains("goal"), "{all}");
    }
}
