//! The lab report as data: every section's claim, scenarios in words,
//! checks, verdict, tables and plots. `results.json` is this structure;
//! `report.html` ([`crate::html`]) and the summary table ([`crate::text`])
//! render it.
//!
//! Nothing here depends on the machine or the time of day: the same suite,
//! seed and options give the same report, byte for byte.

use crate::claim::Source;
use crate::describe::{Described, describe};
use crate::output::run_files;
use crate::runner::{RunConfig, SectionRuns};
use crate::section::{Measured, Plot, Runs, SectionError, Table};
use crate::suite::Suite;
use crate::verdict::{Check, Verdict, verdict_line};
use brisk_sim::results::Results;
use brisk_sim::scenario::IpFamily;
use serde::Serialize;
use std::time::Duration;

/// Version of the results.json layout; bumped when a field changes meaning.
/// 2: a claim names its `source` and `citation` (no file name), and every
/// check has a `kind` ("claim" or "setup"; only claims make the verdict).
pub const FORMAT_VERSION: u32 = 2;

/// A whole lab run.
#[derive(Debug, Serialize)]
pub struct Report {
    pub format_version: u32,
    pub suite: String,
    pub title: String,
    pub description: String,
    /// The suite directory: "lab/default" for the built-in suite.
    pub location: String,
    pub seed: u64,
    /// "v4", "v6", or "as written" when each scenario keeps its own.
    pub ip: &'static str,
    pub quick: bool,
    /// Some section ran live experiments (real kernel TCP through the live
    /// lab) rather than the deterministic simulator.
    pub live: bool,
    /// Under `--quick`, the longest any scenario ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quick_duration_s: Option<f64>,
    pub totals: Totals,
    pub sections: Vec<SectionReport>,
}

/// How many sections got each verdict.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Totals {
    pub pass: usize,
    pub partial: usize,
    pub fail: usize,
}

#[derive(Debug, Serialize)]
pub struct SectionReport {
    pub id: &'static str,
    pub title: &'static str,
    pub claim: ClaimReport,
    pub scenarios: Vec<ScenarioReport>,
    pub checks: Vec<Check>,
    pub verdict: Verdict,
    pub verdict_line: String,
    pub tables: Vec<Table>,
    pub plots: Vec<Plot>,
}

#[derive(Debug, Serialize)]
pub struct ClaimReport {
    pub source: Source,
    /// Title, speaker, event and year, as the report cites it.
    pub citation: &'static str,
    pub text: &'static str,
    pub scope: &'static str,
}

#[derive(Debug, Serialize)]
pub struct ScenarioReport {
    pub stem: String,
    /// The file in the repository (or the suite directory given).
    pub file: String,
    /// Where this run's results, capture and a copy of the file are, relative
    /// to the output directory.
    pub output_dir: String,
    /// The command that reruns it alone.
    pub command: String,
    /// The file's own one-line description.
    pub description: String,
    pub described: Described,
    pub results: Results,
    /// A live run's numbers, by name (absent for the simulator's runs).
    #[serde(skip_serializing_if = "Measured::is_empty")]
    pub measured: Measured,
    /// The files in `output_dir`, by name.
    pub files: Vec<&'static str>,
}

/// The output directory of one scenario's files.
pub fn output_dir(section: &str, stem: &str) -> String {
    format!("runs/{section}/{stem}")
}

/// The `brisk sim` command that reruns one scenario as the lab ran it
/// (with `--quick`, for the shortened duration).
fn command(path: &str, duration: Duration, config: &RunConfig) -> String {
    let mut c = format!("brisk sim {path} --seed {}", config.seed);
    if config.quick {
        let d = if duration.subsec_nanos() == 0 {
            format!("{}s", duration.as_secs())
        } else {
            format!("{}ms", duration.as_millis())
        };
        c.push_str(&format!(" --duration {d}"));
    }
    match config.ip {
        Some(IpFamily::V4) => c.push_str(" --ip v4"),
        Some(IpFamily::V6) => c.push_str(" --ip v6"),
        None => {}
    }
    c
}

/// Evaluates every section's runs into the report.
pub fn build(
    suite: &Suite,
    config: &RunConfig,
    runs: &[SectionRuns],
) -> Result<Report, SectionError> {
    let mut sections = Vec::new();
    let mut totals = Totals::default();
    for (sec, done) in suite.sections.iter().zip(runs) {
        let section = sec.section;
        let findings = section.evaluate(&Runs {
            section: section.id(),
            runs: done.runs.iter().map(|f| &f.run).collect(),
        })?;
        let verdict = Verdict::of(&findings.checks);
        match verdict {
            Verdict::Pass => totals.pass += 1,
            Verdict::Partial => totals.partial += 1,
            Verdict::Fail => totals.fail += 1,
        }
        let claim = section.claim();
        let scenarios = done
            .runs
            .iter()
            .map(|f| ScenarioReport {
                stem: f.run.stem.clone(),
                file: f.run.path.clone(),
                output_dir: output_dir(section.id(), &f.run.stem),
                command: match section.live() {
                    // A live experiment runs only inside its suite's lab.
                    Some(_) => format!("sudo brisk lab --suite {}", suite.location),
                    None => command(&f.run.path, f.run.scenario.duration, config),
                },
                description: f.run.scenario.description.clone(),
                described: describe(&f.run.scenario),
                results: f.run.results.clone(),
                measured: f.run.measured.clone(),
                files: run_files(f),
            })
            .collect();
        sections.push(SectionReport {
            id: section.id(),
            title: section.title(),
            claim: ClaimReport {
                source: claim.source,
                citation: claim.source.citation(),
                text: claim.text,
                scope: claim.scope,
            },
            scenarios,
            verdict_line: verdict_line(&findings.checks),
            checks: findings.checks,
            verdict,
            tables: findings.tables,
            plots: findings.plots,
        });
    }
    Ok(Report {
        format_version: FORMAT_VERSION,
        suite: suite.name.clone(),
        title: suite.title.clone(),
        description: suite.description.clone(),
        location: suite.location.clone(),
        seed: config.seed,
        ip: match config.ip {
            Some(IpFamily::V4) => "v4",
            Some(IpFamily::V6) => "v6",
            None => "as written",
        },
        quick: config.quick,
        live: suite.sections.iter().any(|s| s.section.live().is_some()),
        quick_duration_s: config.quick.then_some(suite.quick_duration.as_secs_f64()),
        totals,
        sections,
    })
}

impl Report {
    /// results.json: pretty, with a final newline.
    pub fn to_json(&self) -> String {
        // Every field is a plain number, string, list or map of them, so
        // serialization cannot fail.
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quick_run_s_command_reruns_it_for_its_shortened_duration() {
        let mut config = RunConfig::default();
        let full = command("lab/default/a.toml", Duration::from_secs(30), &config);
        assert_eq!(full, "brisk sim lab/default/a.toml --seed 1");
        config.quick = true;
        config.ip = Some(IpFamily::V6);
        let quick = command("a.toml", Duration::from_secs(10), &config);
        assert_eq!(quick, "brisk sim a.toml --seed 1 --duration 10s --ip v6");
        let odd = command("a.toml", Duration::from_millis(2_500), &config);
        assert!(odd.contains("--duration 2500ms"), "{odd}");
    }
}
