//! Calibrated paths, as Pantheon calibrated its emulators: for a recorded
//! path (a down link replaying a mahimahi trace), find a simple emulator
//! (a constant rate, a one-way delay, random loss, a drop-tail buffer)
//! on which every scheme gets about the throughput and the 95th-percentile
//! one-way delay it gets on the recording.
//!
//! The search is coordinate descent over candidate lists, run through the
//! sweep engine: starting from the trace's mean rate, the path's own delay,
//! no loss and the path's buffer, each round tries every candidate of one
//! parameter with the others held (each candidate one value of a `path`
//! axis, every scheme, every seed of the grid) and keeps the one with the
//! smallest error; rounds repeat until one changes nothing. Runs go through
//! a results store, so an emulator tried twice runs once.
//!
//! A scheme's error is the mean of its relative throughput error and its
//! relative p95 delay error; an emulator's is the mean over the schemes.

use crate::compare;
use crate::error::SweepError;
use crate::grid::Grid;
use crate::row::{Cell, Row};
use crate::run::{Progress, SweepOptions, sweep};
use crate::store::Store;
use brisk_netmodel::RateModel;
use std::collections::BTreeMap;
use toml::Value;

/// A constant-rate emulator of one path's down link.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Emulator {
    /// Constant rate, bit/s (a multiple of 10 kbit/s).
    pub rate_bps: u64,
    /// One-way propagation delay, ms (whole).
    pub delay_ms: u64,
    /// Random loss, a fraction of packets (0.01 is 1%).
    pub loss: f64,
    /// Drop-tail buffer, packets.
    pub buffer_packets: u64,
}

impl Emulator {
    /// The rate as a scenario writes it, e.g. "4.71Mbit".
    pub fn rate_text(&self) -> String {
        format!("{:.2}Mbit", self.rate_bps as f64 / 1e6)
    }

    /// The loss as a scenario writes it, e.g. "0.5%".
    pub fn loss_text(&self) -> String {
        format!("{}%", (self.loss * 1e4).round() / 1e2)
    }

    /// The scenario fields this emulator sets, by dotted path (loss only
    /// when there is some).
    pub fn fields(&self) -> Vec<(&'static str, Value)> {
        let mut fifo = toml::Table::new();
        fifo.insert(
            "limit_packets".into(),
            Value::Integer(self.buffer_packets as i64),
        );
        let mut queue = toml::Table::new();
        queue.insert("fifo".into(), Value::Table(fifo));
        let mut fields = vec![
            ("link.down.rate", Value::String(self.rate_text())),
            (
                "link.down.delay",
                Value::String(format!("{}ms", self.delay_ms)),
            ),
            ("queue", Value::Table(queue)),
        ];
        if self.loss > 0.0 {
            fields.push(("link.down.loss", Value::String(self.loss_text())));
        }
        fields
    }

    /// This emulator as a value of a grid's `path` axis, named `name`.
    pub fn path_value(&self, name: &str) -> Value {
        let mut t = toml::Table::new();
        t.insert("name".into(), Value::String(name.to_string()));
        for (k, v) in self.fields() {
            t.insert(k.to_string(), v);
        }
        Value::Table(t)
    }

    /// Sets this emulator's fields in a scenario table (whose `link.down`
    /// table exists).
    pub fn apply(&self, scenario: &mut toml::Table) -> Result<(), String> {
        for (k, v) in self.fields() {
            crate::path::FieldPath::parse(k)?.set(scenario, v)?;
        }
        Ok(())
    }

    /// One line for people: "4.71 Mbit/s, 31 ms one way, 0.1% loss, 60-packet buffer".
    pub fn describe(&self) -> String {
        format!(
            "{:.2} Mbit/s, {} ms one way, {} loss, {}-packet buffer",
            self.rate_bps as f64 / 1e6,
            self.delay_ms,
            self.loss_text(),
            self.buffer_packets
        )
    }
}

/// The candidates the search tries for each parameter.
#[derive(Debug, Clone, PartialEq)]
pub struct Search {
    /// Rates as fractions of the trace's mean rate.
    pub rate_factors: Vec<f64>,
    /// One-way delays added to the path's own, ms.
    pub extra_delays_ms: Vec<u64>,
    /// Random loss fractions.
    pub losses: Vec<f64>,
    /// Drop-tail buffers, packets.
    pub buffers_packets: Vec<u64>,
    /// Rounds at most (a round visits every parameter once).
    pub rounds: usize,
    /// How many of the grid's seeds (its first ones) the fit uses, for the
    /// recording's numbers and each candidate's alike.
    pub seeds: usize,
}

impl Default for Search {
    fn default() -> Search {
        Search {
            rate_factors: vec![0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3],
            extra_delays_ms: vec![0, 5, 10, 20, 40, 80],
            losses: vec![0.0, 0.001, 0.005, 0.01, 0.02],
            buffers_packets: vec![10, 20, 50, 100, 200, 400, 800],
            rounds: 3,
            seeds: 1,
        }
    }
}

/// One scheme's numbers on the recording and on the fitted emulator.
#[derive(Debug, Clone, PartialEq)]
pub struct SchemeFit {
    pub scheme: String,
    /// Mean over the seeds the fit uses on the recorded path: throughput
    /// (Mbit/s) and p95 one-way delay (ms).
    pub trace_mbps: f64,
    pub trace_p95_ms: f64,
    /// The same on the fitted emulator.
    pub fitted_mbps: f64,
    pub fitted_p95_ms: f64,
}

impl SchemeFit {
    /// (fitted - recorded) / recorded throughput.
    pub fn throughput_error(&self) -> f64 {
        (self.fitted_mbps - self.trace_mbps) / self.trace_mbps
    }

    /// (fitted - recorded) / recorded p95 one-way delay.
    pub fn delay_error(&self) -> f64 {
        (self.fitted_p95_ms - self.trace_p95_ms) / self.trace_p95_ms
    }

    /// The mean of both errors' magnitudes.
    pub fn error(&self) -> f64 {
        (self.throughput_error().abs() + self.delay_error().abs()) / 2.0
    }
}

/// The fit of one recorded path.
#[derive(Debug, Clone, PartialEq)]
pub struct Fit {
    /// The path's title in the comparison plots.
    pub path: String,
    /// The trace file (its name only).
    pub trace: String,
    /// The trace's mean rate, bit/s.
    pub trace_mean_bps: f64,
    pub emulator: Emulator,
    /// Where the search started: the trace's mean rate, the path's own
    /// delay and buffer, no loss; and its error (the mean over schemes).
    pub start: Emulator,
    pub start_error: f64,
    /// Per scheme, in the scheme axis' order.
    pub schemes: Vec<SchemeFit>,
    /// Emulators tried, and simulator runs made (runs found in the store
    /// not counted).
    pub tried: usize,
    pub ran: usize,
    /// The recorded path's scenario with the emulator in place of the
    /// trace (no seed): what [`Fit::scenario_file`] writes.
    pub scenario: toml::Table,
}

impl Fit {
    /// The mean of the schemes' errors.
    pub fn error(&self) -> f64 {
        self.schemes.iter().map(SchemeFit::error).sum::<f64>() / self.schemes.len().max(1) as f64
    }

    /// The fitted path as a scenario file, its header saying how it was
    /// fitted and how far each scheme is off.
    pub fn scenario_file(&self, command: &str) -> Result<String, String> {
        let mut head = format!(
            "# A constant-rate emulator fitted to the recorded path {} (mean {:.2} Mbit/s):\n\
             # {}.\n# Fitted by `{command}`: each scheme's throughput and 95th-percentile\n\
             # one-way delay here against the recording (error = mean of both relative errors):\n",
            self.trace,
            self.trace_mean_bps / 1e6,
            self.emulator.describe()
        );
        for s in &self.schemes {
            head.push_str(&format!(
                "#   {:8} {:6.2} Mbit/s ({:+5.1}%), p95 {:6.1} ms ({:+5.1}%); recorded {:.2} Mbit/s, {:.1} ms\n",
                s.scheme,
                s.fitted_mbps,
                s.throughput_error() * 100.0,
                s.fitted_p95_ms,
                s.delay_error() * 100.0,
                s.trace_mbps,
                s.trace_p95_ms
            ));
        }
        head.push_str(&format!(
            "# Mean error over the schemes: {:.1}%.\n",
            self.error() * 100.0
        ));
        let body = toml::to_string(&self.scenario).map_err(|e| e.to_string())?;
        Ok(head + &body)
    }
}

/// A scheme's name with its mean p95 one-way delay (ms) and throughput
/// (Mbit/s) on one path.
type SchemeMean = (String, f64, f64);

/// Each scheme's mean (p95 one-way delay ms, throughput Mbit/s) per path
/// title, from a sweep's flow rows.
fn means(
    grid: &Grid,
    flows: &[Row],
    scheme_axis: &str,
) -> Result<BTreeMap<String, Vec<SchemeMean>>, SweepError> {
    let panels = compare::panels(grid, flows, scheme_axis).map_err(|e| SweepError::Parse {
        origin: grid.origin.clone(),
        message: e.to_string(),
    })?;
    Ok(panels
        .into_iter()
        .map(|p| {
            let schemes = p
                .schemes
                .iter()
                .filter_map(|s| s.mean().map(|(ms, mbps)| (s.name.clone(), ms, mbps)))
                .collect();
            (p.title, schemes)
        })
        .collect())
}

/// A recorded path of a grid: its title, scenario (one point's, seed
/// removed), trace file and mean rate.
struct Recorded {
    title: String,
    scenario: toml::Table,
    trace: String,
    mean_bps: f64,
}

fn recorded_paths(grid: &Grid, scheme_axis: &str) -> Result<Vec<Recorded>, SweepError> {
    let points = grid.points()?;
    let mut out: Vec<Recorded> = Vec::new();
    for point in &points {
        let RateModel::Mahimahi(recording) = &point.scenario.network.link.down.rate else {
            continue;
        };
        let inputs = Row(point
            .inputs
            .iter()
            .map(|(n, v)| (n.clone(), Cell::from_toml(v)))
            .collect());
        let title = compare::path_title(grid, &inputs, scheme_axis);
        if out.iter().any(|r| r.title == title) {
            continue;
        }
        let mut scenario: toml::Table =
            point
                .scenario_toml
                .parse()
                .map_err(|e: toml::de::Error| SweepError::Parse {
                    origin: grid.origin.clone(),
                    message: e.to_string(),
                })?;
        scenario.remove("seed");
        let file = scenario
            .get("link")
            .and_then(|l| l.get("down"))
            .and_then(|d| d.get("rate"))
            .and_then(|r| r.get("mahimahi"))
            .and_then(Value::as_str)
            .unwrap_or("trace");
        let trace = file.rsplit(['/', '\\']).next().unwrap_or(file).to_string();
        out.push(Recorded {
            title,
            scenario,
            trace,
            mean_bps: recording.mean_bps(),
        });
    }
    Ok(out)
}

/// The one-way delay a scenario table's down link sets, ms (0 when none).
fn base_delay_ms(scenario: &toml::Table) -> u64 {
    let text = scenario
        .get("link")
        .and_then(|l| l.get("down"))
        .and_then(|d| d.get("delay"))
        .and_then(Value::as_str)
        .unwrap_or("0ms");
    brisk_netmodel::units::parse_duration(text).map_or(0, |d| d.as_millis() as u64)
}

/// The drop-tail buffer a scenario table sets, packets (200 when none).
fn base_buffer(scenario: &toml::Table) -> u64 {
    scenario
        .get("queue")
        .and_then(|q| q.get("fifo"))
        .and_then(|f| f.get("limit_packets"))
        .and_then(Value::as_integer)
        .map_or(200, |n| n.max(1) as u64)
}

/// Fits an emulator to every recorded path of `grid`, given the grid's
/// flow rows (`flows`, from a sweep of it) and its scheme axis. Runs go
/// into `store`; `progress` hears of each step's runs.
pub fn calibrate(
    grid: &Grid,
    flows: &[Row],
    scheme_axis: &str,
    store: &Store,
    search: &Search,
    options: &SweepOptions,
    progress: &mut dyn FnMut(&str, Progress),
) -> Result<Vec<Fit>, SweepError> {
    let axis = grid
        .axes
        .iter()
        .find(|a| a.path.as_str() == scheme_axis)
        .ok_or_else(|| SweepError::Parse {
            origin: grid.origin.clone(),
            message: format!("the grid has no scheme axis `{scheme_axis}` to calibrate by"),
        })?;
    let schemes = axis.values.clone();
    let seeds: Vec<u64> = grid
        .seeds
        .iter()
        .copied()
        .take(search.seeds.max(1))
        .collect();
    let kept: Vec<Row> = flows
        .iter()
        .filter(|r| matches!(r.get("seed"), Some(Cell::Int(s)) if seeds.contains(&(*s as u64))))
        .cloned()
        .collect();
    let reference = means(grid, &kept, scheme_axis)?;
    let mut fits = Vec::new();
    for path in recorded_paths(grid, scheme_axis)? {
        let target = reference.get(&path.title).cloned().unwrap_or_default();
        if target.is_empty() {
            return Err(SweepError::Parse {
                origin: grid.origin.clone(),
                message: format!("no results for the recorded path {}", path.title),
            });
        }
        let fit = fit_path(
            grid,
            &path,
            &target,
            scheme_axis,
            &schemes,
            &seeds,
            store,
            search,
            options,
            progress,
        )?;
        fits.push(fit);
    }
    Ok(fits)
}

#[allow(clippy::too_many_arguments)]
fn fit_path(
    grid: &Grid,
    path: &Recorded,
    target: &[SchemeMean],
    scheme_axis: &str,
    schemes: &[Value],
    seeds: &[u64],
    store: &Store,
    search: &Search,
    options: &SweepOptions,
    progress: &mut dyn FnMut(&str, Progress),
) -> Result<Fit, SweepError> {
    let base_delay = base_delay_ms(&path.scenario);
    let rate = |f: f64| ((path.mean_bps * f / 1e4).round() as u64).max(1) * 10_000;
    let mut best = Emulator {
        rate_bps: rate(1.0),
        delay_ms: base_delay,
        loss: 0.0,
        buffer_packets: base_buffer(&path.scenario),
    };
    let start = best;
    let mut start_score = f64::NAN;
    let mut best_score = f64::INFINITY;
    let mut best_results: Vec<SchemeMean> = Vec::new();
    let (mut tried, mut ran) = (0usize, 0usize);
    let mut seen: Vec<Emulator> = Vec::new();
    for _round in 0..search.rounds.max(1) {
        let before = best;
        for param in 0..4 {
            let candidates: Vec<Emulator> = match param {
                0 => search
                    .rate_factors
                    .iter()
                    .map(|&f| Emulator {
                        rate_bps: rate(f),
                        ..best
                    })
                    .collect(),
                1 => search
                    .buffers_packets
                    .iter()
                    .map(|&b| Emulator {
                        buffer_packets: b.max(1),
                        ..best
                    })
                    .collect(),
                2 => search
                    .extra_delays_ms
                    .iter()
                    .map(|&d| Emulator {
                        delay_ms: base_delay + d,
                        ..best
                    })
                    .collect(),
                _ => search
                    .losses
                    .iter()
                    .map(|&l| Emulator { loss: l, ..best })
                    .collect(),
            };
            let mut unique: Vec<Emulator> = Vec::new();
            if start_score.is_nan() {
                unique.push(start);
            }
            for c in candidates {
                if !unique.contains(&c) {
                    unique.push(c);
                }
            }
            let (results, n) = evaluate(
                grid,
                path,
                &unique,
                scheme_axis,
                schemes,
                seeds,
                store,
                options,
                progress,
            )?;
            ran += n;
            for (c, r) in unique.iter().zip(results) {
                if !seen.contains(c) {
                    seen.push(*c);
                    tried += 1;
                }
                let score = score(target, &r);
                if *c == start {
                    start_score = score;
                }
                // Ties keep the earlier (the current) emulator.
                if score < best_score - 1e-12 {
                    best_score = score;
                    best = *c;
                    best_results = r;
                }
            }
        }
        if best == before {
            break;
        }
    }
    let schemes_fit = target
        .iter()
        .map(|(name, ms, mbps)| {
            let (fms, fmbps) = best_results
                .iter()
                .find(|(n, _, _)| n == name)
                .map_or((f64::NAN, f64::NAN), |(_, a, b)| (*a, *b));
            SchemeFit {
                scheme: name.clone(),
                trace_mbps: *mbps,
                trace_p95_ms: *ms,
                fitted_mbps: fmbps,
                fitted_p95_ms: fms,
            }
        })
        .collect();
    let mut scenario = path.scenario.clone();
    best.apply(&mut scenario).map_err(|m| SweepError::Parse {
        origin: grid.origin.clone(),
        message: m,
    })?;
    let stem = path
        .trace
        .rsplit_once('.')
        .map_or(path.trace.as_str(), |(s, _)| s);
    scenario.insert("name".into(), Value::String(format!("{stem}-fitted")));
    scenario.insert(
        "description".into(),
        Value::String(format!(
            "a constant-rate emulator fitted to the recorded path {}: {}",
            path.trace,
            best.describe()
        )),
    );
    Ok(Fit {
        path: path.title.clone(),
        trace: path.trace.clone(),
        trace_mean_bps: path.mean_bps,
        emulator: best,
        start,
        start_error: start_score,
        schemes: schemes_fit,
        tried,
        ran,
        scenario,
    })
}

/// The mean over `target`'s schemes of the mean relative error of
/// throughput and p95 delay; infinite when a scheme has no result.
fn score(target: &[SchemeMean], got: &[SchemeMean]) -> f64 {
    let mut sum = 0.0;
    for (name, ms, mbps) in target {
        let Some((_, gms, gmbps)) = got.iter().find(|(n, _, _)| n == name) else {
            return f64::INFINITY;
        };
        let e = ((gmbps - mbps) / mbps).abs() / 2.0 + ((gms - ms) / ms).abs() / 2.0;
        if !e.is_finite() {
            return f64::INFINITY;
        }
        sum += e;
    }
    sum / target.len().max(1) as f64
}

/// Runs every scheme over each emulator (as one grid: a `path` axis of the
/// emulators and the scheme axis, the grid's seeds) and returns, per
/// emulator, each scheme's (name, mean p95 ms, mean Mbit/s); and the runs
/// made.
#[allow(clippy::too_many_arguments)]
fn evaluate(
    grid: &Grid,
    path: &Recorded,
    emulators: &[Emulator],
    scheme_axis: &str,
    schemes: &[Value],
    seeds: &[u64],
    store: &Store,
    options: &SweepOptions,
    progress: &mut dyn FnMut(&str, Progress),
) -> Result<(Vec<Vec<SchemeMean>>, usize), SweepError> {
    let mut axes = toml::Table::new();
    axes.insert(
        crate::grid::BUNDLE_AXIS.into(),
        Value::Array(
            emulators
                .iter()
                .enumerate()
                .map(|(i, e)| e.path_value(&format!("emulator {i}")))
                .collect(),
        ),
    );
    axes.insert(scheme_axis.into(), Value::Array(schemes.to_vec()));
    let mut file = toml::Table::new();
    file.insert(
        "name".into(),
        Value::String(format!("{}-calibration", grid.name)),
    );
    file.insert(
        "seeds".into(),
        Value::Array(seeds.iter().map(|&s| Value::Integer(s as i64)).collect()),
    );
    file.insert("base".into(), Value::Table(path.scenario.clone()));
    file.insert("axes".into(), Value::Table(axes));
    let text = toml::to_string(&file).map_err(|e| SweepError::Parse {
        origin: grid.origin.clone(),
        message: e.to_string(),
    })?;
    let origin = format!("{} (calibrating {})", grid.origin, path.trace);
    let step = Grid::parse(&text, &origin, grid.base_dir(), "calibration")?;
    let label = format!("fitting {}", path.trace);
    let outcome = sweep(&step, store, options, &mut |p| progress(&label, p))?;
    let by_title = means(&step, &outcome.flows, scheme_axis)?;
    let results = (0..emulators.len())
        .map(|i| {
            by_title
                .get(&format!("path = emulator {i}"))
                .cloned()
                .unwrap_or_default()
        })
        .collect();
    Ok((results, outcome.ran))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_emulator_writes_scenario_fields() {
        let e = Emulator {
            rate_bps: 4_710_000,
            delay_ms: 31,
            loss: 0.005,
            buffer_packets: 60,
        };
        assert_eq!(e.rate_text(), "4.71Mbit");
        assert_eq!(e.loss_text(), "0.5%");
        let mut t: toml::Table = "[link.down]\nrate = \"1Mbit\"\n".parse().unwrap();
        e.apply(&mut t).unwrap();
        assert_eq!(t["link"]["down"]["delay"].as_str(), Some("31ms"));
        assert_eq!(t["queue"]["fifo"]["limit_packets"].as_integer(), Some(60));
        assert_eq!(
            e.describe(),
            "4.71 Mbit/s, 31 ms one way, 0.5% loss, 60-packet buffer"
        );
    }

    #[test]
    fn the_score_is_the_mean_relative_error() {
        let target = vec![("a".to_string(), 100.0, 10.0), ("b".to_string(), 50.0, 5.0)];
        let got = vec![("a".to_string(), 110.0, 9.0), ("b".to_string(), 50.0, 5.0)];
        // a: (10% + 10%) / 2 = 10%; b: 0; mean 5%.
        assert!((score(&target, &got) - 0.05).abs() < 1e-12);
        assert!(score(&target, &got[..1]).is_infinite());
    }
}
