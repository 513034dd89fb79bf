//! Brisk's lab: runs a suite of simulator scenarios and writes a report
//! that sets each seed document's claim beside the numbers measured, with a
//! verdict computed from those numbers.
//!
//! Layer: the top of the simulator stack, under the CLI (`brisk lab`). It
//! drives `brisk-sim` runs (on a thread pool, each run deterministic),
//! describes scenarios from `brisk-netmodel`'s configs, and draws plots
//! with `brisk-trace`. It reads no clock: the same suite, seed and options
//! give the same report and results.json byte for byte. The exception is
//! the live suite (`lab/live`, root only): its sections run real kernel
//! TCP through `brisk-live` in wall-clock time, so their numbers vary a
//! little from run to run.
//!
//! Modules:
//! - [`suite`]: suite directories (built-in ones embedded at build time);
//! - [`section`]: the [`Section`] trait a report section implements, and
//!   what it returns; [`sections`]: the registry and the sections
//!   themselves, one file each; [`live`]: sections whose runs are live
//!   experiments with real kernel TCP (`brisk-live`), their own registry;
//! - [`numbers`]: a live section's measured numbers as a typed struct;
//! - [`claim`]: the seed documents and claims; [`verdict`]: checks against
//!   thresholds and the pass / partial / fail verdict;
//! - [`runner`]: runs a suite's scenarios in parallel;
//! - [`describe`]: a scenario in words;
//! - [`report`]: the report as data (results.json); [`html`] renders
//!   report.html, [`text`] the terminal summary; [`output`] writes the
//!   output directory.
//!
//! See docs/LAB.md for the suite layout and how to add a section.

#![forbid(unsafe_code)]

pub mod claim;
pub mod describe;
pub mod html;
pub mod live;
pub mod numbers;
pub mod output;
pub mod report;
pub mod runner;
pub mod section;
pub mod sections;
pub mod suite;
pub mod text;
pub mod verdict;

pub use claim::{Claim, Source};
pub use report::Report;
pub use runner::{Progress, RunConfig, SectionRuns};
pub use section::{Findings, Section};
pub use suite::Suite;
pub use verdict::{Bound, Check, Verdict};

/// Anything that stops a lab run.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    #[error(transparent)]
    Suite(#[from] suite::SuiteError),
    #[error(transparent)]
    Run(#[from] runner::RunError),
    #[error(transparent)]
    Section(#[from] section::SectionError),
    #[error(transparent)]
    Output(#[from] output::OutputError),
}

/// A finished lab run: the report, rendered, and the runs behind it.
pub struct Lab {
    pub report: Report,
    pub html: String,
    pub json: String,
    pub runs: Vec<SectionRuns>,
}

/// Runs `suite` under `config` and builds its report; `progress` is called
/// (from worker threads) as each scenario finishes.
pub fn run(
    suite: &Suite,
    config: &RunConfig,
    progress: &(dyn Fn(Progress<'_>) + Sync),
) -> Result<Lab, LabError> {
    let runs = runner::run_suite(suite, config, progress)?;
    let report = report::build(suite, config, &runs)?;
    let html = html::render(&report);
    let json = report.to_json();
    Ok(Lab {
        report,
        html,
        json,
        runs,
    })
}

impl Lab {
    /// Writes the output directory (see [`output`]); returns the number
    /// of files written.
    pub fn write_to(&self, dir: &std::path::Path) -> Result<usize, LabError> {
        Ok(output::write_dir(dir, &self.html, &self.json, &self.runs)?)
    }
}
