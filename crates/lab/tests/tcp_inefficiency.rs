//! The tcp-inefficiency section from real runs: its scenarios edited so
//! the seed's collapse cannot show must get a verdict that says so.

use brisk_lab::Verdict;
use brisk_lab::runner::RunConfig;
use brisk_lab::suite::Suite;
use std::path::Path;
use std::time::Duration;

const SECTION: &str = "tcp-inefficiency";

#[test]
fn without_loss_a_long_rtt_shows_no_collapse() {
    // CUBIC's 5%-loss, 220 ms run given no loss: it keeps the link full.
    let dir = std::env::temp_dir().join(format!("brisk-lab-tcpi-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let original = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../lab/default");
    std::fs::create_dir_all(dir.join(SECTION)).unwrap();
    std::fs::copy(original.join("suite.toml"), dir.join("suite.toml")).unwrap();
    for e in std::fs::read_dir(original.join(SECTION)).unwrap().flatten() {
        std::fs::copy(e.path(), dir.join(SECTION).join(e.file_name())).unwrap();
    }
    let edited = dir.join(SECTION).join("cubic-220ms-5pct.toml");
    let text = std::fs::read_to_string(&edited).unwrap();
    assert!(text.contains("loss = \"5%\"\n"));
    std::fs::write(&edited, text.replace("loss = \"5%\"\n", "")).unwrap();
    let mut suite = Suite::from_dir(&dir).unwrap();
    suite.quick_duration = Duration::from_secs(6);
    let config = RunConfig {
        quick: true,
        jobs: 2,
        capture: false,
        ..RunConfig::default()
    };
    let lab = brisk_lab::run(&suite, &config, &|_| {}).unwrap();
    let s = lab
        .report
        .sections
        .iter()
        .find(|s| s.id == SECTION)
        .unwrap();
    let checks: Vec<bool> = s.checks.iter().map(|c| c.passed).collect();
    assert_eq!(s.verdict, Verdict::Partial);
    assert_eq!(checks, [true, false, true, true, true]);
    std::fs::remove_dir_all(dir).unwrap();
}
