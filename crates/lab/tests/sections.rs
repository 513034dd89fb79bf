//! The section registry, and verdicts computed from real runs: a suite
//! edited so that a claim cannot hold must get a verdict that says so.

use brisk_lab::Verdict;
use brisk_lab::runner::RunConfig;
use brisk_lab::sections::{all, by_id};
use brisk_lab::suite::{DEFAULT_SUITE, Suite};
use brisk_lab::verdict::Kind;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[test]
fn every_section_has_an_id_a_claim_and_scenarios_in_the_default_suite() {
    let suite = Suite::embedded(DEFAULT_SUITE).unwrap();
    for (i, s) in all().iter().enumerate() {
        let id = s.id();
        assert!(
            !id.is_empty()
                && id
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
            "{id:?}"
        );
        assert!(
            all()[i + 1..].iter().all(|o| o.id() != id),
            "duplicate id {id}"
        );
        assert!(by_id(id).is_some_and(|b| b.title() == s.title()));
        assert!(!s.title().is_empty());
        let claim = s.claim();
        assert!(claim.text.len() > 40, "{id}: claim too thin");
        assert!(!claim.scope.is_empty(), "{id}: no scope");
        assert!(!s.scenarios().is_empty(), "{id}: no scenarios");
        let in_suite = suite
            .sections
            .iter()
            .find(|x| x.section.id() == id)
            .unwrap_or_else(|| panic!("{id} is not in the default suite"));
        assert_eq!(in_suite.scenarios.len(), s.scenarios().len());
    }
    assert!(by_id("no-such-section").is_none());
}

/// A scratch copy of the default suite with some files rewritten.
fn edited_suite(tag: &str, edits: &[(&str, &str, &str)]) -> (Suite, PathBuf) {
    let dir = std::env::temp_dir().join(format!("brisk-lab-edit-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let original = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../lab/default");
    copy(&original, &dir);
    for (file, from, to) in edits {
        let path = dir.join(file);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(from), "{file} has no {from:?}");
        std::fs::write(&path, text.replace(from, to)).unwrap();
    }
    let mut suite = Suite::from_dir(&dir).unwrap();
    suite.quick_duration = Duration::from_secs(4);
    (suite, dir)
}

fn copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        if e.path().is_dir() {
            copy(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

fn verdicts(suite: &Suite) -> Vec<(String, Verdict, Vec<bool>)> {
    let config = RunConfig {
        quick: true,
        jobs: 2,
        capture: false,
        ..RunConfig::default()
    };
    let lab = brisk_lab::run(suite, &config, &|_| {}).unwrap();
    lab.report
        .sections
        .iter()
        .map(|s| {
            (
                s.id.to_string(),
                s.verdict,
                s.checks.iter().map(|c| c.passed).collect(),
            )
        })
        .collect()
}

#[test]
fn a_shallow_fifo_misses_the_bufferbloat_claim() {
    // 20 packets hold 24 ms at 10 Mbit/s: no "hundreds of ms".
    let (suite, dir) = edited_suite(
        "fifo",
        &[(
            "bufferbloat/fifo.toml",
            "limit_packets = 200",
            "limit_packets = 20",
        )],
    );
    let v = verdicts(&suite);
    let (_, verdict, checks) = v.iter().find(|(id, ..)| id == "bufferbloat").unwrap();
    assert_eq!(*verdict, Verdict::Partial);
    // The queue-only half: only the FIFO misses; the transfer half runs
    // its own files.
    assert_eq!(&checks[..5], &[false, true, true, true, true]);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_call_not_marked_ect1_gets_no_l4s_benefit() {
    // Both calls Not-ECT: no short queue, nothing cut, losses as before.
    let (suite, dir) = edited_suite(
        "l4s",
        &[("l4s-queue/l4s.toml", "ecn = \"ect1\"", "ecn = \"not_ect\"")],
    );
    let v = verdicts(&suite);
    let (_, verdict, checks) = v.iter().find(|(id, ..)| id == "l4s-queue").unwrap();
    assert_eq!(*verdict, Verdict::Fail, "{checks:?}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_profile_with_other_numbers_misses_its_setup_checks_not_the_claim() {
    // The Wi-Fi scenario run on the LTE profile: RTT and loss both off.
    // Those checks confirm the configuration, so they are named as the
    // setup not being as intended, while the verdict counts the claims.
    let (suite, dir) = edited_suite(
        "mobile",
        &[(
            "mobile/wifi.toml",
            "profile = \"wifi\"",
            "profile = \"lte\"",
        )],
    );
    let mobile = |suite: &Suite| {
        let config = RunConfig {
            quick: true,
            jobs: 2,
            capture: false,
            ..RunConfig::default()
        };
        let lab = brisk_lab::run(suite, &config, &|_| {}).unwrap();
        lab.report
            .sections
            .into_iter()
            .find(|s| s.id == "mobile")
            .unwrap()
    };
    let s = mobile(&suite);
    let checks: Vec<bool> = s.checks.iter().map(|c| c.passed).collect();
    assert_eq!(&checks[..6], &[true; 6]);
    assert!(!checks[6], "Wi-Fi RTT on LTE should miss");
    assert_eq!(s.checks[6].kind, Kind::Setup);
    assert!(
        s.verdict_line
            .contains("setup not as intended: Wi-Fi: base RTT (fastest ping) measured"),
        "{}",
        s.verdict_line
    );
    // The claims and the verdict are those of the suite as shipped (cut to
    // the same duration).
    let (shipped, shipped_dir) = edited_suite("mobile-shipped", &[]);
    let as_shipped = mobile(&shipped);
    assert_eq!(s.verdict, as_shipped.verdict);
    let claims = |s: &brisk_lab::report::SectionReport| -> Vec<bool> {
        s.checks
            .iter()
            .filter(|c| c.is_claim())
            .map(|c| c.passed)
            .collect()
    };
    assert_eq!(claims(&s), claims(&as_shipped));
    std::fs::remove_dir_all(shipped_dir).unwrap();
    std::fs::remove_dir_all(dir).unwrap();
}
