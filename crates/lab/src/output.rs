//! The output directory:
//!
//! ```text
//! DIR/report.html                      the report, self-contained
//! DIR/results.json                     every section, number and verdict
//! DIR/runs/<section>/<stem>/scenario.toml    the file as it was read
//! DIR/runs/<section>/<stem>/results.json     `brisk sim --json` of the run
//! DIR/runs/<section>/<stem>/bottleneck.pcap  both directions of the bottleneck
//! ```
//!
//! A live run's results.json is the router's results in the same shape,
//! then `measured` (the numbers the section's checks read), `fidelity`
//! (how closely the router kept to the models), `recipe` (the recipe's own
//! report) and `capture` (what its bottleneck.pcap holds: the first
//! `brisk_live::capture::BOTTLENECK_CAPTURE_LIMIT_BYTES` of the run).
//! bottleneck.pcap is there only when captured (not with `capture` off);
//! [`run_files`] names what a run's directory holds, and the report links
//! exactly those.
//!
//! A lab run never overwrites silently: [`check_dir`] refuses a directory
//! that exists and is not empty unless forced.

use crate::report::output_dir;
use crate::runner::{Finished, SectionRuns};
use crate::section::{LiveRecord, Measured};
use brisk_sim::results::Results;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// The copy of the scenario file in a run's directory.
pub const SCENARIO_FILE: &str = "scenario.toml";
/// The run's results.
pub const RESULTS_FILE: &str = "results.json";
/// The bottleneck capture.
pub const PCAP_FILE: &str = "bottleneck.pcap";

/// The files of `run`'s directory, by name, in the order written.
pub fn run_files(run: &Finished) -> Vec<&'static str> {
    let mut files = vec![SCENARIO_FILE, RESULTS_FILE];
    if run.pcap.is_some() {
        files.push(PCAP_FILE);
    }
    files
}

/// A run's results.json: the simulator's shape (exactly `brisk sim
/// --json` for a simulated run), then what only a live run has.
#[derive(Serialize)]
struct RunResults<'a> {
    #[serde(flatten)]
    results: &'a Results,
    #[serde(skip_serializing_if = "Measured::is_empty")]
    measured: &'a Measured,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    live: Option<&'a LiveRecord>,
}

/// The text of `run`'s results.json.
pub fn run_results_json(run: &Finished) -> String {
    let file = RunResults {
        results: &run.run.results,
        measured: &run.run.measured,
        live: run.live.as_ref(),
    };
    // Plain numbers, strings and maps with string keys: serialization
    // cannot fail.
    let mut text = serde_json::to_string_pretty(&file).unwrap_or_default();
    text.push('\n');
    text
}

/// Why the output could not be written.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    #[error("{0} exists and is not empty; choose another --out or pass --force to write over it")]
    NotEmpty(PathBuf),
    #[error("cannot write {path}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> OutputError + '_ {
    move |source| OutputError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Succeeds if `dir` is absent or empty, or if `force` is set.
pub fn check_dir(dir: &Path, force: bool) -> Result<(), OutputError> {
    if force {
        return Ok(());
    }
    match std::fs::read_dir(dir) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                Err(OutputError::NotEmpty(dir.to_path_buf()))
            } else {
                Ok(())
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io(dir)(e)),
    }
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), OutputError> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(io(parent))?;
    }
    std::fs::write(path, bytes).map_err(io(path))
}

/// Writes the report, results.json and every run's files into `dir`
/// (created if needed); returns how many files were written.
pub fn write_dir(
    dir: &Path,
    html: &str,
    json: &str,
    runs: &[SectionRuns],
) -> Result<usize, OutputError> {
    write(&dir.join("report.html"), html.as_bytes())?;
    write(&dir.join("results.json"), json.as_bytes())?;
    let mut files = 2;
    for section in runs {
        for f in &section.runs {
            let run_dir = dir.join(output_dir(section.id, &f.run.stem));
            for name in run_files(f) {
                let results;
                let bytes: &[u8] = match name {
                    SCENARIO_FILE => f.text.as_bytes(),
                    RESULTS_FILE => {
                        results = run_results_json(f);
                        results.as_bytes()
                    }
                    _ => f.pcap.as_deref().unwrap_or_default(),
                };
                write(&run_dir.join(name), bytes)?;
                files += 1;
            }
        }
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_absent_or_empty_directories_are_written_unforced() {
        let dir = std::env::temp_dir().join(format!("brisk-lab-out-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        assert!(check_dir(&dir, false).is_ok());
        std::fs::create_dir_all(&dir).unwrap();
        assert!(check_dir(&dir, false).is_ok());
        std::fs::write(dir.join("report.html"), "old").unwrap();
        let e = check_dir(&dir, false).unwrap_err().to_string();
        assert!(e.contains("--force"), "{e}");
        assert!(check_dir(&dir, true).is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A live section as the runner hands it over, without root: the
    /// simulator stands in for the router, the numbers and the recipe's
    /// report are made up. The first run has a capture, the second none.
    fn live_section() -> (crate::Suite, Vec<SectionRuns>) {
        use crate::section::{CaptureSummary, ScenarioRun};
        let mut suite = crate::Suite::embedded("live").unwrap();
        suite.sections.retain(|s| s.section.id() == "fast-open");
        let numbers = crate::live::tests::FAST_OPEN_MEASURED;
        let sec = &suite.sections[0];
        let runs = sec
            .scenarios
            .iter()
            .zip(numbers)
            .enumerate()
            .map(|(i, (s, numbers))| {
                let done = brisk_sim::run(&s.scenario, brisk_sim::RunOptions::default());
                let pcap = (i == 0).then(|| {
                    let mut c =
                        brisk_live::capture::BottleneckCapture::new(128, 0, 1 << 20).unwrap();
                    // An IPv4 header alone: the capture only reads the version.
                    let mut d = [0u8; 20];
                    d[0] = 0x45;
                    c.packet(brisk_time::Instant::from_millis(5), &d);
                    c.finish().unwrap()
                });
                Finished {
                    run: ScenarioRun {
                        stem: s.stem.clone(),
                        path: s.path.clone(),
                        scenario: s.scenario.clone(),
                        results: done.results,
                        series: Vec::new(),
                        reports: Vec::new(),
                        measured: numbers.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
                    },
                    text: s.text.clone(),
                    live: Some(LiveRecord {
                        fidelity: None,
                        recipe: serde_json::json!({ "first_ms": numbers[0].1 }),
                        capture: pcap.as_ref().map(|p| CaptureSummary {
                            packets: p.packets,
                            skipped_packets: p.skipped_packets,
                            limit_bytes: p.limit_bytes,
                        }),
                    }),
                    pcap: pcap.map(|p| p.bytes),
                }
            })
            .collect();
        let runs = vec![SectionRuns {
            id: sec.section.id(),
            runs,
        }];
        (suite, runs)
    }

    /// The relative links of a page (anchors within it aside).
    fn links(html: &str) -> Vec<&str> {
        html.split("href=\"")
            .skip(1)
            .filter_map(|rest| rest.split('"').next())
            .filter(|l| !l.starts_with('#'))
            .collect()
    }

    #[test]
    fn a_live_run_s_files_and_links_agree_and_its_results_carry_the_numbers() {
        let (suite, runs) = live_section();
        let config = crate::RunConfig::default();
        let report = crate::report::build(&suite, &config, &runs).unwrap();
        let html = crate::html::render(&report);
        let dir = std::env::temp_dir().join(format!("brisk-lab-live-out-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let written = write_dir(&dir, &html, &report.to_json(), &runs).unwrap();
        // report.html, results.json; 3 files with the capture, 2 without.
        assert_eq!(written, 2 + 3 + 2);
        let links = links(&html);
        for link in &links {
            assert!(
                dir.join(link).is_file(),
                "report.html links {link}, not written"
            );
        }
        let off = "runs/fast-open/tfo-off";
        let on = "runs/fast-open/tfo-on";
        for f in [SCENARIO_FILE, RESULTS_FILE, PCAP_FILE] {
            assert!(links.contains(&format!("{off}/{f}").as_str()), "{f}");
        }
        assert!(links.contains(&format!("{on}/{RESULTS_FILE}").as_str()));
        assert!(
            !links
                .iter()
                .any(|l| l.ends_with(&format!("{on}/{PCAP_FILE}")))
        );
        assert!(!dir.join(on).join(PCAP_FILE).exists());
        // The pcap as captured, the numbers as measured, in both the run's
        // results.json and the report's.
        let pcap = std::fs::read(dir.join(off).join(PCAP_FILE)).unwrap();
        assert_eq!(Some(&pcap), runs[0].runs[0].pcap.as_ref());
        let read = |p: PathBuf| -> serde_json::Value {
            serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
        };
        let on_run = read(dir.join(on).join(RESULTS_FILE));
        assert_eq!(on_run["measured"]["repeat_ms"], 101.0);
        assert_eq!(on_run["measured"]["repeat_syn_bytes"], 30.0);
        assert_eq!(on_run["recipe"]["first_ms"], 207.0);
        assert!(on_run["flows"].is_array() && on_run["link"].is_object());
        assert!(on_run.get("capture").is_none());
        let off_run = read(dir.join(off).join(RESULTS_FILE));
        assert_eq!(off_run["measured"]["repeat_ms"], 205.0);
        assert_eq!(off_run["capture"]["packets"], 1);
        let all = read(dir.join("results.json"));
        let scenarios = &all["sections"][0]["scenarios"];
        assert_eq!(scenarios[1]["measured"]["repeat_ms"], 101.0);
        assert_eq!(
            scenarios[0]["files"],
            serde_json::json!([SCENARIO_FILE, RESULTS_FILE, PCAP_FILE])
        );
        assert_eq!(
            scenarios[1]["files"],
            serde_json::json!([SCENARIO_FILE, RESULTS_FILE])
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A simulated run's results.json stays `brisk sim --json`'s text: no
    /// key added, none moved.
    #[test]
    fn a_simulated_run_s_results_are_the_simulator_s_json() {
        let (_, mut runs) = live_section();
        let mut f = runs[0].runs.remove(0);
        f.live = None;
        f.run.measured.clear();
        let mut want = serde_json::to_string_pretty(&f.run.results).unwrap();
        want.push('\n');
        assert_eq!(run_results_json(&f), want);
        assert!(!run_results_json(&f).contains("measured"));
    }
}
