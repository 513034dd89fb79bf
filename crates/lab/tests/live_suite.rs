//! The live suite's output from real runs (root only; skipped without it
//! unless `CI=true`): one live section through `brisk lab`, written out,
//! must leave in each run's directory the numbers its checks read and a
//! bottleneck capture that tshark opens, and the report must link only
//! files that exist.

use brisk_lab::runner::RunConfig;
use brisk_lab::suite::Suite;
use std::path::Path;
use std::process::Command;
use std::sync::{Mutex, MutexGuard};

/// One live lab at a time: labs run side by side would share the cores
/// and skew each other's timings.
static LIVE_LAB: Mutex<()> = Mutex::new(());

fn one_lab_at_a_time() -> MutexGuard<'static, ()> {
    LIVE_LAB.lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether this machine can run live labs; says so when it cannot.
fn can_run_live(test: &str) -> bool {
    if brisk_live::sys::has_net_admin() {
        return true;
    }
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{test}: the live tests need root (CAP_NET_ADMIN) in CI");
    }
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "{test}: SKIPPED: needs root (CAP_NET_ADMIN) for namespaces and TUN devices"
    );
    false
}

/// Records in a pcap file, walking its record headers.
fn pcap_records(file: &[u8]) -> u64 {
    let mut at = 24;
    let mut n = 0;
    while at + 16 <= file.len() {
        let incl = u32::from_le_bytes(file[at + 8..at + 12].try_into().unwrap()) as usize;
        at += 16 + incl;
        n += 1;
    }
    assert_eq!(at, file.len(), "the last record ends the file");
    n
}

/// tshark's frame count for `path`, or `None` when tshark is not installed;
/// fails on any complaint.
fn tshark_frames(path: &Path) -> Option<u64> {
    let out = Command::new("tshark")
        .arg("-r")
        .arg(path)
        .args(["-T", "fields", "-e", "frame.number"])
        .output()
        .ok()?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "tshark -r {}: {stderr}",
        path.display()
    );
    let complaints: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.contains("Running as user \"root\""))
        .collect();
    assert!(
        complaints.is_empty(),
        "tshark -r {}: {stderr}",
        path.display()
    );
    Some(String::from_utf8_lossy(&out.stdout).lines().count() as u64)
}

#[test]
fn a_live_section_leaves_its_numbers_and_a_capture_tshark_reads() {
    let test = "a_live_section_leaves_its_numbers_and_a_capture_tshark_reads";
    if !can_run_live(test) {
        return;
    }
    let _one = one_lab_at_a_time();
    let mut suite = Suite::embedded("live").unwrap();
    suite.sections.retain(|s| s.section.id() == "fast-open");
    let lab = brisk_lab::run(&suite, &RunConfig::default(), &|_| {}).expect("the section runs");
    let dir = std::env::temp_dir().join(format!("brisk-lab-live-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    lab.write_to(&dir).unwrap();
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    for link in html
        .split("href=\"")
        .skip(1)
        .filter_map(|r| r.split('"').next())
    {
        if !link.starts_with('#') {
            assert!(
                dir.join(link).is_file(),
                "report.html links {link}, not written"
            );
        }
    }
    let section = &lab.report.sections[0];
    assert_eq!(section.scenarios.len(), 2);
    for sc in &section.scenarios {
        let run_dir = dir.join(&sc.output_dir);
        assert_eq!(
            sc.files,
            ["scenario.toml", "results.json", "bottleneck.pcap"],
            "{}",
            sc.stem
        );
        assert!(html.contains(&format!("href=\"{}/bottleneck.pcap\"", sc.output_dir)));
        let text = std::fs::read_to_string(run_dir.join("results.json")).unwrap();
        let results: serde_json::Value = serde_json::from_str(&text).unwrap();
        // Every number the section's checks read, as measured.
        assert!(sc.measured.contains_key("repeat_ms"), "{:?}", sc.measured);
        // (serde_json's default parser may miss the last bit of a float.)
        for (k, v) in &sc.measured {
            let read = results["measured"][k].as_f64().unwrap_or(f64::NAN);
            assert!(
                (read - v).abs() <= v.abs() * 1e-12,
                "{}: {k}: {read} in results.json, {v} measured",
                sc.stem
            );
        }
        assert!(results["recipe"]["connections"].is_array(), "{text}");
        assert!(
            results["fidelity"]["timer_fires"].as_u64() > Some(0),
            "{text}"
        );
        // Four connections of a 1 KB fetch each, both directions.
        let packets = results["capture"]["packets"].as_u64().unwrap();
        assert!(packets >= 4 * 6, "{}: {packets} packets", sc.stem);
        assert_eq!(results["capture"]["skipped_packets"], 0);
        let pcap_path = run_dir.join("bottleneck.pcap");
        let pcap = std::fs::read(&pcap_path).unwrap();
        assert_eq!(pcap_records(&pcap), packets);
        if let Some(frames) = tshark_frames(&pcap_path) {
            assert_eq!(frames, packets, "{}", sc.stem);
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Prints a section's tables and checks.
fn print_section(section: &brisk_lab::report::SectionReport) {
    for table in &section.tables {
        println!("  {}", table.caption);
        println!("    {}", table.columns.join(" | "));
        for row in &table.rows {
            let cells: Vec<String> = row.iter().map(|c| c.display()).collect();
            println!("    {}", cells.join(" | "));
        }
    }
    for c in &section.checks {
        println!(
            "  {}: {} (bound {}) {}",
            c.name,
            c.measured_text(),
            c.bound_text(),
            if c.passed { "met" } else { "MISSED" }
        );
    }
}

/// Runs the first-contact section on `ip` with every network's delays
/// divided by `shrink` (rates kept), prints its tables and checks, and
/// requires every check, setup ones included, to be met.
fn first_contact(test: &str, ip: brisk_netmodel::IpFamily, shrink: u32) {
    if !can_run_live(test) {
        return;
    }
    let _one = one_lab_at_a_time();
    let mut suite = Suite::embedded("live").unwrap();
    suite.sections.retain(|s| s.section.id() == "first-contact");
    for sc in &mut suite.sections[0].scenarios {
        let link = &mut sc.scenario.network.link;
        link.down.delay /= shrink;
        link.up.delay /= shrink;
        sc.scenario.ip = ip;
    }
    let config = RunConfig {
        capture: false,
        ..RunConfig::default()
    };
    let lab = brisk_lab::run(&suite, &config, &|_| {}).expect("the section runs");
    let section = &lab.report.sections[0];
    println!("first contact, {ip:?}, delays / {shrink}:");
    print_section(section);
    assert_eq!(section.scenarios.len(), 4);
    for c in &section.checks {
        assert!(c.passed, "{ip:?}: {}: {}", c.name, c.measured_text());
    }
}

/// The first-contact section at a fifth of OK.ru's round trips (22 to
/// 180 ms), IPv4: Brisk's first answer byte within one round trip plus
/// the transfer time, quinn's 0-RTT taken, TLS over TCP 1.5 RTT later.
#[test]
fn first_contact_answers_in_one_round_trip_ipv4() {
    first_contact(
        "first_contact_answers_in_one_round_trip_ipv4",
        brisk_netmodel::IpFamily::V4,
        5,
    );
}

/// The same over IPv6.
#[test]
fn first_contact_answers_in_one_round_trip_ipv6() {
    first_contact(
        "first_contact_answers_in_one_round_trip_ipv6",
        brisk_netmodel::IpFamily::V6,
        5,
    );
}

/// The section at OK.ru's full round trips (110 to 900 ms), both families,
/// about two minutes: `cargo test --release -p brisk-lab --test live_suite
/// -- --ignored first_contact_full --nocapture`.
#[test]
#[ignore]
fn first_contact_full_round_trips() {
    for ip in [brisk_netmodel::IpFamily::V4, brisk_netmodel::IpFamily::V6] {
        first_contact("first_contact_full_round_trips", ip, 1);
    }
}

/// Runs the lossy-mobile-live section on `ip` with its networks' delays
/// divided by `shrink` and `length` per file (one fetch of each size per
/// transport per whole second, at least one, and bulk downloads that
/// long), prints its tables and checks, and requires every transport to
/// have finished every object and Brisk with FEC to have rebuilt packets
/// on the lossy path.
fn lossy_mobile_live(
    test: &str,
    ip: brisk_netmodel::IpFamily,
    shrink: u32,
    length: std::time::Duration,
) {
    if !can_run_live(test) {
        return;
    }
    let _one = one_lab_at_a_time();
    let mut suite = Suite::embedded("live").unwrap();
    suite
        .sections
        .retain(|s| s.section.id() == "lossy-mobile-live");
    for sc in &mut suite.sections[0].scenarios {
        let link = &mut sc.scenario.network.link;
        link.down.delay /= shrink;
        link.up.delay /= shrink;
        sc.scenario.ip = ip;
        sc.scenario.duration = length;
    }
    let config = RunConfig {
        capture: false,
        ..RunConfig::default()
    };
    let lab = brisk_lab::run(&suite, &config, &|_| {}).expect("the section runs");
    let section = &lab.report.sections[0];
    println!("lossy mobile links live, {ip:?}, delays / {shrink}, {length:?} per file:");
    print_section(section);
    assert_eq!(section.scenarios.len(), 2);
    for sc in &section.scenarios {
        for (key, value) in &sc.measured {
            assert!(value.is_finite(), "{}: {key} = {value}", sc.stem);
        }
    }
    let setup = section
        .checks
        .iter()
        .find(|c| c.name.contains("rebuilt packets"))
        .expect("the FEC setup check");
    assert!(
        setup.passed,
        "{ip:?}: {}: {}",
        setup.name,
        setup.measured_text()
    );
}

/// The lossy-mobile-live section at a fifth of its round trip (44 ms),
/// one fetch of each object per transport and 0.5 s bulk downloads, IPv4:
/// every transport completes, FEC rebuilds packets.
#[test]
fn lossy_mobile_live_quick_ipv4() {
    lossy_mobile_live(
        "lossy_mobile_live_quick_ipv4",
        brisk_netmodel::IpFamily::V4,
        5,
        std::time::Duration::from_millis(500),
    );
}

/// The section at its full 220 ms round trip, 10 fetches of each object
/// per transport and 10 s bulk downloads, both families, about ten
/// minutes: `cargo test --release -p brisk-lab --test live_suite --
/// --ignored lossy_mobile_live_full --nocapture`.
#[test]
#[ignore]
fn lossy_mobile_live_full() {
    for ip in [brisk_netmodel::IpFamily::V4, brisk_netmodel::IpFamily::V6] {
        lossy_mobile_live(
            "lossy_mobile_live_full",
            ip,
            1,
            std::time::Duration::from_secs(10),
        );
    }
}

/// The stalled-wifi-live section as shipped, both families, about 20 s:
/// Brisk and kernel TCP moving off a Wi-Fi that stalls mid-download, then
/// both connecting while it passes nothing; every check, setup ones
/// included, must be met: `cargo test --profile ci -p brisk-lab --test
/// live_suite -- --ignored stalled_wifi_live_section --nocapture`.
#[test]
#[ignore = "about 20 s of live runs; the recipe's own test covers CI"]
fn stalled_wifi_live_section() {
    let test = "stalled_wifi_live_section";
    if !can_run_live(test) {
        return;
    }
    let _one = one_lab_at_a_time();
    let mut suite = Suite::embedded("live").unwrap();
    suite
        .sections
        .retain(|s| s.section.id() == "stalled-wifi-live");
    let config = RunConfig {
        capture: false,
        ..RunConfig::default()
    };
    let lab = brisk_lab::run(&suite, &config, &|_| {}).expect("the section runs");
    let section = &lab.report.sections[0];
    println!("stalled Wi-Fi, live:");
    print_section(section);
    for c in &section.checks {
        assert!(c.passed, "{}: {}", c.name, c.measured_text());
    }
}

/// The l4s-slow section as shipped, about 45 s: Brisk's Prague alone on
/// real sockets through 4 and 10 Mbit/s default DualPI2, over IPv4 and
/// IPv6; prints every check (a wall-clock run on a loaded host may miss
/// one, so none is required): `cargo test --profile ci -p brisk-lab
/// --test live_suite -- --ignored l4s_slow_section --nocapture`.
#[test]
#[ignore = "about 45 s of live runs; the recipe's own test covers CI"]
fn l4s_slow_section() {
    let test = "l4s_slow_section";
    if !can_run_live(test) {
        return;
    }
    let _one = one_lab_at_a_time();
    let mut suite = Suite::embedded("live").unwrap();
    suite.sections.retain(|s| s.section.id() == "l4s-slow");
    let config = RunConfig {
        capture: false,
        ..RunConfig::default()
    };
    let lab = brisk_lab::run(&suite, &config, &|_| {}).expect("the section runs");
    let section = &lab.report.sections[0];
    println!("l4s-slow, live: {}", section.verdict_line);
    print_section(section);
    assert_eq!(section.checks.len(), 8, "two checks per rate and family");
}
