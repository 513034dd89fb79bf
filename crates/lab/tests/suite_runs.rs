//! The default suite end to end: every section runs, gets numbers and a
//! computed verdict, renders its plots, and the same seed gives the same
//! bytes.

use brisk_lab::runner::RunConfig;
use brisk_lab::suite::{DEFAULT_SUITE, Suite};
use brisk_lab::{Lab, Verdict};
use brisk_sim::scenario::IpFamily;
use std::time::Duration;

/// As short as `--quick` can be while every section still measures
/// everything: a fetch on EDGE (900 ms round trips) counts only when it
/// had 2 s plus eight round trips (9.2 s) before the end.
const SHORT: Duration = Duration::from_secs(10);

/// The default suite cut to `quick`;
/// `the_quick_suite_writes_its_output_directory` runs the real thing.
fn suite(quick: Duration) -> Suite {
    let mut s = Suite::embedded(DEFAULT_SUITE).unwrap();
    s.quick_duration = quick;
    s
}

fn run(suite: &Suite, seed: u64, jobs: usize, ip: Option<IpFamily>) -> Lab {
    let config = RunConfig {
        seed,
        quick: true,
        jobs,
        ip,
        capture: true,
    };
    brisk_lab::run(suite, &config, &|_| {}).unwrap()
}

fn assert_complete(lab: &Lab) {
    let r = &lab.report;
    assert_eq!(r.sections.len(), brisk_lab::sections::all().len());
    for s in &r.sections {
        assert!(!s.checks.is_empty(), "{}: no checks", s.id);
        for c in &s.checks {
            assert!(c.measured.is_finite(), "{}: {} not measured", s.id, c.name);
            assert_eq!(c.passed, c.bound.holds(c.measured));
        }
        assert_eq!(s.verdict, Verdict::of(&s.checks));
        assert!(s.verdict_line.starts_with(&s.verdict.name().to_uppercase()));
        assert!(!s.plots.is_empty(), "{}: no plots", s.id);
        for p in &s.plots {
            assert!(p.svg.starts_with("<svg") && p.svg.trim_end().ends_with("</svg>"));
            assert!(
                lab.html.contains(p.svg.trim()),
                "{}: plot {} not inline",
                s.id,
                p.title
            );
        }
        assert!(lab.html.contains(&format!("id=\"{}\"", s.id)));
        for sc in &s.scenarios {
            assert!(lab.html.contains(&sc.file), "{}", sc.file);
            assert!(
                sc.command
                    .starts_with(&format!("brisk sim {} --seed ", sc.file))
            );
            assert!(sc.results.flows.iter().all(|f| f.sent_packets > 0));
        }
    }
    let plots: usize = r.sections.iter().map(|s| s.plots.len()).sum();
    assert_eq!(lab.html.matches("<svg").count(), plots);
    // Self-contained: nothing fetched from anywhere.
    for needle in [
        "<script",
        "<link",
        "<img",
        "src=",
        "href=\"http",
        "url(",
        "@import",
    ] {
        assert!(!lab.html.contains(needle), "report.html contains {needle}");
    }
    let json: serde_json::Value = serde_json::from_str(&lab.json).unwrap();
    for (s, j) in r.sections.iter().zip(json["sections"].as_array().unwrap()) {
        assert_eq!(j["verdict"], s.verdict.name());
        assert_eq!(j["checks"].as_array().unwrap().len(), s.checks.len());
    }
}

#[test]
fn same_seed_gives_the_same_bytes_whatever_the_threads() {
    let s = suite(SHORT);
    let a = run(&s, 1, 1, None);
    let b = run(&s, 1, 3, None);
    assert!(a.html == b.html, "report.html differs between runs");
    assert_eq!(a.json, b.json);
    let pcaps = |l: &Lab| -> Vec<Vec<u8>> {
        l.runs
            .iter()
            .flat_map(|s| s.runs.iter().map(|f| f.pcap.clone().unwrap()))
            .collect()
    };
    assert_eq!(pcaps(&a), pcaps(&b));
    assert_complete(&a);
    // And the seed matters: another one gives other numbers.
    let c = run(&s, 2, 2, None);
    assert_ne!(a.json, c.json);
    assert!(c.html.contains("seed</dt><dd>2<"));
}

#[test]
fn every_section_runs_over_ipv6() {
    let lab = run(&suite(SHORT), 1, 2, Some(IpFamily::V6));
    assert_complete(&lab);
    assert_eq!(lab.report.ip, "v6");
    for s in &lab.report.sections {
        for sc in &s.scenarios {
            assert_eq!(sc.results.ip, "v6");
            assert!(sc.command.ends_with("--ip v6"), "{}", sc.command);
        }
    }
}

#[test]
fn the_quick_suite_writes_its_output_directory() {
    let s = Suite::embedded(DEFAULT_SUITE).unwrap();
    let lab = run(&s, 1, 2, None);
    assert_complete(&lab);
    let dir = std::env::temp_dir().join(format!("brisk-lab-quick-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let files = lab.write_to(&dir).unwrap();
    assert_eq!(files, 2 + 3 * s.scenario_count());
    assert_eq!(
        std::fs::read_to_string(dir.join("report.html")).unwrap(),
        lab.html
    );
    for sec in &lab.report.sections {
        for sc in &sec.scenarios {
            let run_dir = dir.join(&sc.output_dir);
            let pcap = std::fs::read(run_dir.join("bottleneck.pcap")).unwrap();
            assert!(pcap.len() > 24, "{}: empty capture", sc.file);
            let toml = std::fs::read_to_string(run_dir.join("scenario.toml")).unwrap();
            // Flows as tables or as one inline array.
            assert!(toml.contains("[[flows]]") || toml.contains("flows = ["));
            let results: serde_json::Value = serde_json::from_str(
                &std::fs::read_to_string(run_dir.join("results.json")).unwrap(),
            )
            .unwrap();
            // A section's goal runs keep their whole length; the rest are cut.
            let full_length = s
                .sections
                .iter()
                .find(|x| x.section.id() == sec.id)
                .map(|x| x.section.full_length_under_quick())
                .unwrap_or_default();
            if full_length.contains(&sc.stem.as_str()) {
                let secs = results["duration_s"].as_f64().unwrap();
                assert!(secs > 10.0, "{}: a goal run cut to {secs} s", sc.file);
            } else {
                assert_eq!(results["duration_s"], 10.0, "{}", sc.file);
            }
        }
    }
    assert!(brisk_lab::output::check_dir(&dir, false).is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn without_capture_no_pcap_is_written_or_linked() {
    let config = RunConfig {
        quick: true,
        jobs: 2,
        capture: false,
        ..RunConfig::default()
    };
    let s = suite(Duration::from_secs(4));
    let lab = brisk_lab::run(&s, &config, &|_| {}).unwrap();
    let dir = std::env::temp_dir().join(format!("brisk-lab-nocap-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let files = lab.write_to(&dir).unwrap();
    assert_eq!(files, 2 + 2 * s.scenario_count());
    assert!(!lab.html.contains("bottleneck.pcap"));
    for sec in &lab.report.sections {
        for sc in &sec.scenarios {
            assert!(!dir.join(&sc.output_dir).join("bottleneck.pcap").exists());
            assert!(dir.join(&sc.output_dir).join("results.json").exists());
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
