//! Runs every scenario of a suite on a pool of threads.
//!
//! Each scenario is independent and deterministic, so the pool only changes
//! how fast the suite finishes, never what it finds: results come back in
//! suite order whatever order the threads finished in.
//!
//! Live sections ([`crate::section::LiveExperiment`]) run after the
//! simulator's scenarios, one at a time on the caller's thread: they take
//! wall-clock time on real sockets, and a busy pool would only add noise
//! to what they measure.

use crate::section::{LiveExperiment, LiveRecord, LiveRunError, Measured, ScenarioRun};
use crate::suite::{Suite, SuiteScenario};
use brisk_sim::capture::PcapSink;
use brisk_sim::engine::CaptureSink;
use brisk_sim::scenario::IpFamily;
use brisk_sim::{RunOptions, run};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// How to run a suite.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// Seed of every scenario (overrides the files' own).
    pub seed: u64,
    /// Cut every scenario to the suite's `quick_duration`.
    pub quick: bool,
    /// Threads; 0 or 1 runs on the caller's thread.
    pub jobs: usize,
    /// Address family of every scenario; `None` keeps each file's.
    pub ip: Option<IpFamily>,
    /// Keep a pcap of each scenario's bottleneck (a live run's: its first
    /// `brisk_live::capture::BOTTLENECK_CAPTURE_LIMIT_BYTES`).
    pub capture: bool,
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            seed: 1,
            quick: false,
            jobs: 1,
            ip: None,
            capture: true,
        }
    }
}

/// A scenario after its run, with its capture.
#[derive(Debug)]
pub struct Finished {
    pub run: ScenarioRun,
    /// The bottleneck capture, a pcap file's bytes, when asked for.
    pub pcap: Option<Vec<u8>>,
    /// The file as written, stored beside the results.
    pub text: String,
    /// A live run's record, kept in its results.json (`None` for the
    /// simulator's runs).
    pub live: Option<LiveRecord>,
}

/// The runs of one section, in the section's order.
#[derive(Debug)]
pub struct SectionRuns {
    pub id: &'static str,
    pub runs: Vec<Finished>,
}

/// Progress as the pool reports it: `done` of `total` finished, the last
/// being `path`.
#[derive(Debug, Clone, Copy)]
pub struct Progress<'a> {
    pub done: usize,
    pub total: usize,
    pub path: &'a str,
}

/// Why a run failed.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("{path}: cannot write its capture: {message}")]
    Capture { path: String, message: String },
    #[error("a worker thread panicked while running {0}")]
    Panicked(String),
    #[error("{path}: the live experiment failed: {source}")]
    Live { path: String, source: LiveRunError },
    #[error("{path}: not run: an earlier live experiment failed")]
    LiveSkipped { path: String },
}

/// The scenario as it runs under `config`; `full_length`: its section
/// keeps it whole under `--quick`.
fn prepare(
    s: &SuiteScenario,
    suite: &Suite,
    config: &RunConfig,
    full_length: bool,
) -> brisk_sim::scenario::Scenario {
    let mut scenario = s.scenario.clone();
    if config.quick && !full_length {
        scenario.duration = scenario.duration.min(suite.quick_duration);
        // A flow that would start after the cut could send nothing.
        let end = scenario.duration;
        scenario.flows.retain(|f| f.start.unwrap_or_default() < end);
    }
    if let Some(ip) = config.ip {
        scenario.ip = ip;
    }
    scenario
}

fn run_one(
    s: &SuiteScenario,
    suite: &Suite,
    config: &RunConfig,
    full_length: bool,
) -> Result<Finished, RunError> {
    let scenario = prepare(s, suite, config, full_length);
    let mut sink = if config.capture {
        let sink =
            PcapSink::new(Vec::new(), scenario.capture.snaplen).map_err(|e| RunError::Capture {
                path: s.path.clone(),
                message: e.to_string(),
            })?;
        Some(sink)
    } else {
        None
    };
    let done = run(
        &scenario,
        RunOptions {
            seed: Some(config.seed),
            capture: sink.as_mut().map(|p| p as &mut dyn CaptureSink),
            series: true,
            ip: None,
            qlog: None,
            progress: None,
            null_cipher: false,
        },
    );
    let pcap = match sink {
        Some(sink) => Some(sink.finish().map_err(|e| RunError::Capture {
            path: s.path.clone(),
            message: e.to_string(),
        })?),
        None => None,
    };
    let series = done.outcome.series();
    let reports = done.outcome.reports();
    Ok(Finished {
        run: ScenarioRun {
            stem: s.stem.clone(),
            path: s.path.clone(),
            scenario,
            results: done.results,
            series,
            reports,
            measured: Measured::new(),
        },
        pcap,
        text: s.text.clone(),
        live: None,
    })
}

/// Runs one scenario of a live section: the file gives the network, the
/// experiment the programs. `--quick`, `--ip` and the seed do not apply;
/// `capture` does.
fn run_live_one(
    s: &SuiteScenario,
    experiment: &dyn LiveExperiment,
    capture: bool,
) -> Result<Finished, RunError> {
    let live = experiment
        .run_live(&s.stem, &s.scenario, capture)
        .map_err(|source| RunError::Live {
            path: s.path.clone(),
            source,
        })?;
    Ok(Finished {
        run: ScenarioRun {
            stem: s.stem.clone(),
            path: s.path.clone(),
            scenario: s.scenario.clone(),
            results: live.results,
            series: Vec::new(),
            reports: Vec::new(),
            measured: live.measured,
        },
        pcap: live.pcap,
        text: s.text.clone(),
        live: Some(live.record),
    })
}

/// Runs every scenario of `suite` on `config.jobs` threads, calling
/// `progress` (from any thread) as each finishes.
pub fn run_suite(
    suite: &Suite,
    config: &RunConfig,
    progress: &(dyn Fn(Progress<'_>) + Sync),
) -> Result<Vec<SectionRuns>, RunError> {
    let work: Vec<(usize, &SuiteScenario)> = suite
        .sections
        .iter()
        .enumerate()
        .flat_map(|(i, sec)| sec.scenarios.iter().map(move |s| (i, s)))
        .collect();
    let total = work.len();
    let slots: Vec<Mutex<Option<Result<Finished, RunError>>>> =
        work.iter().map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let live = |section: usize| suite.sections[section].section.live();
    let simulated: Vec<usize> = (0..total).filter(|&i| live(work[i].0).is_none()).collect();
    let finish = |i: usize, result: Result<Finished, RunError>| {
        if let Ok(mut slot) = slots[i].lock() {
            *slot = Some(result);
        }
        let n = done.fetch_add(1, Ordering::Relaxed) + 1;
        progress(Progress {
            done: n,
            total,
            path: &work[i].1.path,
        });
    };
    let worker = || {
        loop {
            let k = next.fetch_add(1, Ordering::Relaxed);
            let Some(&i) = simulated.get(k) else { break };
            let (section, s) = work[i];
            let full_length = suite.sections[section]
                .section
                .full_length_under_quick()
                .iter()
                .any(|stem| *stem == s.stem);
            finish(i, run_one(s, suite, config, full_length));
        }
    };
    let threads = config.jobs.clamp(1, simulated.len().max(1));
    if threads == 1 {
        worker();
    } else {
        std::thread::scope(|scope| {
            for _ in 0..threads {
                scope.spawn(worker);
            }
        });
    }
    // After a live failure (no root, a kernel refusing an option) the rest
    // would most likely fail the same way: the first error is reported.
    let mut live_failed = false;
    for (i, (section, s)) in work.iter().enumerate() {
        if let Some(experiment) = live(*section) {
            let result = if live_failed {
                Err(RunError::LiveSkipped {
                    path: s.path.clone(),
                })
            } else {
                run_live_one(s, experiment, config.capture)
            };
            live_failed |= result.is_err();
            finish(i, result);
        }
    }
    let mut out: Vec<SectionRuns> = suite
        .sections
        .iter()
        .map(|s| SectionRuns {
            id: s.section.id(),
            runs: Vec::new(),
        })
        .collect();
    for ((section, s), slot) in work.iter().zip(slots) {
        let result = slot
            .into_inner()
            .ok()
            .flatten()
            .ok_or_else(|| RunError::Panicked(s.path.clone()))?;
        out[*section].runs.push(result?);
    }
    Ok(out)
}
