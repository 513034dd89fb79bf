//! The section format: what one report section is made of and the trait a
//! new experiment implements.
//!
//! A section names its claim and the scenario files it runs (by stem, found
//! in `<suite>/<section id>/<stem>.toml`); after the runner has run them it
//! turns the results into [`Findings`]: checks (from which the verdict is
//! computed), tables and plots. See `docs/LAB.md` for how to add one.
//!
//! A live section ([`Section::live`]) names networks instead: the runner
//! hands each scenario to its [`LiveExperiment`], which runs real programs
//! through that network in the live lab (`brisk-live`) and returns its
//! numbers as a typed struct ([`crate::numbers`]) beside the router's results.

use crate::claim::Claim;
use crate::verdict::Check;
use brisk_sim::engine::FlowSeries;
use brisk_sim::flows::{AppReport, TransportReport};
use brisk_sim::results::{FlowResults, Results};
use brisk_sim::scenario::Scenario;
use brisk_trace::plot::PlotError;
use brisk_trace::stats::Series;
use serde::Serialize;
use std::time::Duration;

/// One experiment of the lab: a claim, the scenarios that test it, and how
/// their results become checks, tables and plots.
pub trait Section: Sync {
    /// Stable id: the suite directory holding its scenarios, the report's
    /// anchor and the key in results.json. Lower case and dashes.
    fn id(&self) -> &'static str;
    /// Heading in the report.
    fn title(&self) -> &'static str;
    fn claim(&self) -> Claim;
    /// Stems of the scenario files, in the order the report lists them.
    fn scenarios(&self) -> &'static [&'static str];
    /// Reads the finished runs (one per stem) into findings.
    fn evaluate(&self, runs: &Runs<'_>) -> Result<Findings, SectionError>;
    /// Stems that keep their whole duration under `--quick`: the few
    /// scenarios whose claim needs the full run (a percentile over enough
    /// samples, a rate over a whole transfer). Empty by default.
    fn full_length_under_quick(&self) -> &'static [&'static str] {
        &[]
    }
    /// The experiment that runs this section's scenarios on real kernel
    /// TCP instead of the simulator; `None` (the default) for simulator
    /// sections.
    fn live(&self) -> Option<&dyn LiveExperiment> {
        None
    }
}

/// A live section's experiment: its scenario files describe the network
/// (links and queues), and the experiment runs real sockets through it.
/// Runs take wall-clock seconds, need root, and vary a little from run to
/// run; the runner runs them one at a time.
pub trait LiveExperiment: Sync {
    /// Runs scenario `stem` (as the suite's file describes its network),
    /// keeping a pcap of the bottleneck if `capture` is set.
    fn run_live(
        &self,
        stem: &str,
        scenario: &Scenario,
        capture: bool,
    ) -> Result<LiveRun, LiveRunError>;
}

/// Why a live run produced no numbers: each variant says which step
/// failed, so the runner and its tests can tell a machine that cannot host
/// the lab from an experiment that went wrong.
#[derive(Debug, thiserror::Error)]
pub enum LiveRunError {
    /// The section was handed a scenario it has no run for (the suite
    /// loader hands each section only its own stems).
    #[error("section {section} has no live run for scenario {stem:?}")]
    UnknownStem { section: &'static str, stem: String },
    /// The scenario's network lacks what the experiment needs.
    #[error("section {section}: the scenario's network does not fit: {need}")]
    UnsuitableNetwork {
        section: &'static str,
        need: &'static str,
    },
    /// Namespaces, TUN devices or the router could not be brought up.
    #[error("the live lab could not be set up: {0}")]
    LabSetup(#[source] brisk_live::LiveError),
    /// The programs in the namespaces failed (could not start, exited
    /// with an error, timed out, or reported something unreadable); the
    /// recipe's error says which.
    #[error("the experiment failed: {0}")]
    Experiment(#[source] brisk_live::recipes::RecipeError),
    /// The router stopped badly or its capture could not be kept.
    #[error("the live lab could not be torn down cleanly: {0}")]
    LabTeardown(#[source] brisk_live::LiveError),
    /// The recipe's report could not be kept as JSON.
    #[error("the recipe's report could not be recorded: {0}")]
    Report(#[source] serde_json::Error),
}

/// What one live run returns.
#[derive(Debug, Clone)]
pub struct LiveRun {
    /// The router's view of the run, in the simulator's result shape.
    pub results: Results,
    /// The experiment's numbers (its section's [`crate::numbers::Numbers`]
    /// struct, units in the names), as results.json keeps them.
    pub measured: Measured,
    /// What else the run's results.json keeps.
    pub record: LiveRecord,
    /// The bottleneck's packets, a pcap file's bytes, when captured.
    pub pcap: Option<Vec<u8>>,
}

/// What a live run's results.json holds beside the router's results and
/// the measured numbers: what the simulator's shape has no room for.
#[derive(Debug, Clone, Default, Serialize)]
pub struct LiveRecord {
    /// How closely the router kept to the models (`brisk live`'s
    /// `fidelity`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fidelity: Option<brisk_live::results::FidelityResults>,
    /// The recipe's own report, as the recipe returned it.
    pub recipe: serde_json::Value,
    /// How much of the run the bottleneck capture holds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capture: Option<CaptureSummary>,
}

/// A live run's bottleneck capture, in numbers: it keeps the first
/// `limit_bytes` of the run and counts what did not fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CaptureSummary {
    pub packets: u64,
    pub skipped_packets: u64,
    pub limit_bytes: usize,
}

pub use crate::numbers::Measured;
use crate::numbers::Numbers;

/// What a section concluded from its runs.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Findings {
    /// The numbers the verdict is computed from.
    pub checks: Vec<Check>,
    /// Further measured numbers shown beside the checks.
    pub tables: Vec<Table>,
    pub plots: Vec<Plot>,
}

/// A table of measured numbers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Table {
    pub caption: String,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Cell>>,
}

/// A table cell: a label or a number with its unit.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Cell {
    Text(String),
    Number {
        value: f64,
        unit: &'static str,
        #[serde(skip)]
        decimals: usize,
    },
}

impl Cell {
    pub fn text(s: impl Into<String>) -> Cell {
        Cell::Text(s.into())
    }

    pub fn num(value: f64, unit: &'static str, decimals: usize) -> Cell {
        Cell::Number {
            value,
            unit,
            decimals,
        }
    }

    /// A count, shown without decimals.
    pub fn count(value: u64) -> Cell {
        Cell::num(value as f64, "", 0)
    }

    /// The cell as the report prints it.
    pub fn display(&self) -> String {
        match self {
            Cell::Text(s) => s.clone(),
            Cell::Number {
                value,
                unit,
                decimals,
            } => crate::verdict::with_unit(*value, unit, *decimals),
        }
    }
}

/// A rendered figure.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Plot {
    pub title: String,
    /// One sentence on how to read it.
    pub caption: String,
    /// The SVG document (kept out of results.json).
    #[serde(skip)]
    pub svg: String,
}

/// Why a section could not be evaluated: its scenario files do not have
/// what it reads.
#[derive(Debug, thiserror::Error)]
pub enum SectionError {
    #[error("section {section}: no run of scenario {stem:?}")]
    MissingScenario { section: String, stem: String },
    #[error("scenario {scenario}: no flow named {flow:?} (the section reads it)")]
    MissingFlow { scenario: String, flow: String },
    #[error("scenario {scenario}: {message}")]
    Unsuitable { scenario: String, message: String },
    #[error("plot {title:?}: {source}")]
    Plot { title: String, source: PlotError },
}

/// One scenario after its run, as sections see it.
#[derive(Debug)]
pub struct ScenarioRun {
    /// File stem within the section's directory.
    pub stem: String,
    /// Where the file lives, relative to the repository root (or as the
    /// user named the suite directory).
    pub path: String,
    /// The scenario as run (with `--quick`, its duration shortened).
    pub scenario: Scenario,
    pub results: Results,
    /// Per-flow time series, in flow order.
    pub series: Vec<FlowSeries>,
    /// What each flow's application reported, in flow order (a transport
    /// flow's statistics, time-sequence events and frame rate included).
    pub reports: Vec<AppReport>,
    /// A live experiment's numbers (empty for simulator runs).
    pub measured: Measured,
}

impl ScenarioRun {
    pub fn flow(&self, name: &str) -> Result<&FlowResults, SectionError> {
        self.results
            .flows
            .iter()
            .find(|f| f.name == name)
            .ok_or_else(|| self.missing(name))
    }

    pub fn series(&self, name: &str) -> Result<&FlowSeries, SectionError> {
        self.series
            .iter()
            .find(|f| f.name == name)
            .ok_or_else(|| self.missing(name))
    }

    /// A transport flow's own report (brisk flows only).
    pub fn transport(&self, name: &str) -> Result<&TransportReport, SectionError> {
        let i = self
            .series
            .iter()
            .position(|f| f.name == name)
            .ok_or_else(|| self.missing(name))?;
        self.reports
            .get(i)
            .and_then(|r| r.transport.as_ref())
            .ok_or_else(|| SectionError::Unsuitable {
                scenario: self.path.clone(),
                message: format!("flow {name:?} is not a brisk transport flow"),
            })
    }

    /// The base round trip of a flow's path: its own `rtt`, or the
    /// bottleneck's two propagation delays.
    pub fn base_rtt(&self, name: &str) -> Result<Duration, SectionError> {
        let bottleneck =
            self.scenario.network.link.down.delay + self.scenario.network.link.up.delay;
        self.scenario
            .flows
            .iter()
            .enumerate()
            .find(|(i, f)| f.label(*i) == name)
            .map(|(_, f)| f.rtt.unwrap_or(bottleneck))
            .ok_or_else(|| self.missing(name))
    }

    /// The application's RTT samples of a flow as a plottable series in ms.
    pub fn rtt_series(&self, flow: &str, label: &str) -> Result<Series, SectionError> {
        let mut s = Series::new(label, "ms");
        for (at, rtt) in &self.series(flow)?.rtt {
            s.push_at(*at, ms(*rtt));
        }
        Ok(s)
    }

    /// The RTT samples of a flow in ms, in time order.
    pub fn rtt_samples_ms(&self, flow: &str) -> Result<Vec<f64>, SectionError> {
        Ok(self.series(flow)?.rtt.iter().map(|(_, d)| ms(*d)).collect())
    }

    /// The numbers a live experiment measured, as its section's struct.
    pub fn numbers<T: Numbers>(&self) -> Result<T, SectionError> {
        T::read("", &self.measured).map_err(|key| SectionError::Unsuitable {
            scenario: self.path.clone(),
            message: format!("the live run measured no {key:?}"),
        })
    }

    fn missing(&self, flow: &str) -> SectionError {
        SectionError::MissingFlow {
            scenario: self.path.clone(),
            flow: flow.to_string(),
        }
    }
}

/// A duration in milliseconds.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The runs of one section, looked up by stem.
pub struct Runs<'a> {
    pub section: &'a str,
    pub runs: Vec<&'a ScenarioRun>,
}

impl<'a> Runs<'a> {
    pub fn get(&self, stem: &str) -> Result<&'a ScenarioRun, SectionError> {
        self.runs
            .iter()
            .copied()
            .find(|r| r.stem == stem)
            .ok_or_else(|| SectionError::MissingScenario {
                section: self.section.to_string(),
                stem: stem.to_string(),
            })
    }
}

/// Renders a plot, naming it in the error.
pub fn plot(
    title: &str,
    caption: &str,
    render: impl FnOnce() -> Result<String, PlotError>,
) -> Result<Plot, SectionError> {
    let svg = render().map_err(|source| SectionError::Plot {
        title: title.to_string(),
        source,
    })?;
    Ok(Plot {
        title: title.to_string(),
        caption: caption.to_string(),
        svg,
    })
}
