//! `brisk sweep GRID.toml [--store DIR] [--jobs N] [--csv FILE] [--plots DIR]
//! [--calibrate DIR] [--live]`: runs a grid of scenarios (see
//! docs/SWEEPS.md), skipping the runs its store already holds, and
//! optionally draws Pantheon-style comparisons, fits emulators to its
//! recorded paths, or runs it in the live lab (kernel TCP beside Brisk).

use crate::progress;
use anyhow::{Context, Result, bail};
use brisk_sweep::calibrate::{Search, calibrate};
use brisk_sweep::{Cell, Grid, Progress, Row, Store, SweepOptions, SweepOutcome, sweep};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(clap::Args)]
pub struct SweepArgs {
    /// The grid file: a base scenario, axes and seeds (TOML).
    grid: PathBuf,
    /// The results store (a directory of Parquet files); default
    /// brisk-sweep-out/<grid name>.
    #[arg(long)]
    store: Option<PathBuf>,
    /// Runs at once; 0 runs one per local core.
    #[arg(long, default_value_t = 0)]
    jobs: usize,
    /// Also write the grid's run rows (run now or read back) as CSV.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Draw Pantheon-style comparisons into this directory: one SVG per
    /// path (each combination of the other axes), throughput against
    /// 95th-percentile one-way delay, a dot per run of each scheme.
    #[arg(long, value_name = "DIR")]
    plots: Option<PathBuf>,
    /// The axis whose values are the schemes compared in --plots and
    /// --calibrate; default `live.scheme` for a live grid, else
    /// `flows[0].cc`.
    #[arg(long)]
    schemes: Option<String>,
    /// Fit a constant-rate emulator (rate, one-way delay, random loss,
    /// buffer) to each recorded path (a down link replaying a trace) so
    /// that every scheme's throughput and p95 one-way delay match, and
    /// write each as a scenario file into this directory.
    #[arg(long, value_name = "DIR")]
    calibrate: Option<PathBuf>,
    /// Run the grid in the live lab (needs root): each run brings up
    /// network namespaces joined by the link models and runs its
    /// `live.scheme` (e.g. "tcp cubic" for kernel TCP, "brisk bbr") on real
    /// sockets; runs go one at a time.
    #[arg(long)]
    live: bool,
}

pub fn run(args: SweepArgs) -> Result<()> {
    let grid = Grid::load(&args.grid)?;
    let root = args
        .store
        .clone()
        .unwrap_or_else(|| brisk_sweep::store::default_root(&grid));
    let store = Store::open(&root)?;
    let axes: Vec<String> = grid
        .axes
        .iter()
        .map(|a| format!("{} ({})", a.path, a.values.len()))
        .collect();
    println!(
        "grid {}: {} runs = {} x {} seeds",
        grid.name,
        grid.len(),
        if axes.is_empty() {
            "no axes".to_string()
        } else {
            axes.join(" x ")
        },
        grid.seeds.len()
    );
    let bar = progress::bar(
        0,
        "{bar:40} {pos}/{len} runs, {elapsed} elapsed, {eta} left",
    );
    let started = Instant::now();
    let mut tell = |p: Progress| {
        bar.set_length(p.to_run as u64);
        bar.set_position(p.done as u64);
    };
    let outcome = if args.live {
        live::sweep(&grid, &store, &mut tell)?
    } else if grid.is_live() {
        bail!(
            "{}: the grid has a `live.` axis, an input of the live lab: run it with --live",
            grid.origin
        );
    } else {
        sweep(&grid, &store, &SweepOptions { jobs: args.jobs }, &mut tell)?
    };
    bar.finish_and_clear();
    let secs = started.elapsed().as_secs_f64();
    println!(
        "ran {} on {} in {secs:.2} s wall; skipped {} already in the store",
        plural(outcome.ran, "run"),
        plural(outcome.jobs, "thread"),
        outcome.skipped
    );
    println!(
        "store {}: {} run rows, {} flow rows for this grid (runs/ and flows/ hold Parquet parts)",
        store.root().display(),
        outcome.runs.len(),
        outcome.flows.len()
    );
    if let Some(path) = &args.csv {
        write_csv(path, &outcome.runs)
            .with_context(|| format!("cannot write {}", path.display()))?;
        println!("csv {}", path.display());
    }
    let schemes = args.schemes.clone().unwrap_or_else(|| {
        if grid.is_live() {
            "live.scheme".to_string()
        } else {
            "flows[0].cc".to_string()
        }
    });
    if let Some(dir) = &args.plots {
        write_plots(dir, &grid, &outcome.flows, &schemes)?;
    }
    if let Some(dir) = &args.calibrate {
        if args.live {
            bail!("--calibrate fits simulated emulators: run it without --live");
        }
        write_calibration(dir, &args, &grid, &store, &outcome, &schemes)?;
    }
    Ok(())
}

/// Fits an emulator to each recorded path of the grid and writes each as
/// a scenario file, printing the fitted parameters and the per-scheme
/// errors, and the grid `path` entry that adds the fitted path.
fn write_calibration(
    dir: &Path,
    args: &SweepArgs,
    grid: &Grid,
    store: &Store,
    outcome: &SweepOutcome,
    schemes: &str,
) -> Result<()> {
    let cal_store = Store::open(&store.root().join("calibration"))?;
    let bar = progress::bar(0, "{msg}: {bar:30} {pos}/{len} runs");
    let started = Instant::now();
    let fits = calibrate(
        grid,
        &outcome.flows,
        schemes,
        &cal_store,
        &Search::default(),
        &SweepOptions { jobs: args.jobs },
        &mut |label: &str, p: Progress| {
            bar.set_message(label.to_string());
            bar.set_length(p.to_run as u64);
            bar.set_position(p.done as u64);
        },
    )?;
    bar.finish_and_clear();
    if fits.is_empty() {
        bail!(
            "{}: no path replays a trace (a down link `rate = {{ mahimahi = ... }}`) to calibrate against",
            grid.origin
        );
    }
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let command = format!(
        "brisk sweep {} --calibrate {}",
        args.grid.display(),
        dir.display()
    );
    for fit in &fits {
        println!(
            "calibrated {} (mean {:.2} Mbit/s): {}; mean error {:.1}% over {} schemes ({} emulators tried, {} runs)",
            fit.trace,
            fit.trace_mean_bps / 1e6,
            fit.emulator.describe(),
            fit.error() * 100.0,
            fit.schemes.len(),
            fit.tried,
            fit.ran
        );
        for s in &fit.schemes {
            println!(
                "  {:8} trace {:6.2} Mbit/s p95 {:6.1} ms | fitted {:6.2} Mbit/s ({:+5.1}%) p95 {:6.1} ms ({:+5.1}%)",
                s.scheme,
                s.trace_mbps,
                s.trace_p95_ms,
                s.fitted_mbps,
                s.throughput_error() * 100.0,
                s.fitted_p95_ms,
                s.delay_error() * 100.0
            );
        }
        let stem = fit
            .trace
            .rsplit_once('.')
            .map_or(fit.trace.as_str(), |(s, _)| s);
        let path = dir.join(format!("{stem}-fitted.toml"));
        let text = fit.scenario_file(&command).map_err(anyhow::Error::msg)?;
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
        let entry = fit.emulator.path_value(&format!("{stem}, fitted"));
        println!("  scenario {}; as a grid path: {entry}", path.display());
    }
    println!(
        "calibration took {:.1} s wall",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The live lab as a sweep engine: each run the store lacks, one at a
/// time, in a lab of its own.
mod live {
    use super::*;
    use brisk_live::LabConfig;
    use brisk_live::recipes::pantheon;
    use brisk_netmodel::Network;
    use brisk_sweep::point::Point;

    /// The axis naming each run's scheme.
    const SCHEME_AXIS: &str = "live.scheme";

    pub fn sweep(
        grid: &Grid,
        store: &Store,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<SweepOutcome> {
        if !grid.axes.iter().any(|a| a.path.as_str() == SCHEME_AXIS) {
            bail!(
                "{}: a live grid needs a `{SCHEME_AXIS}` axis: the schemes to run, \
                 e.g. [\"tcp cubic\", \"tcp bbr\", \"brisk bbr\"]",
                grid.origin
            );
        }
        if !brisk_live::sys::has_net_admin() {
            bail!(
                "the live lab needs root (CAP_NET_ADMIN): each run makes network namespaces \
                 and TUN devices. Run it as root, e.g. `sudo brisk sweep --live ...`"
            );
        }
        let mut plan = brisk_sweep::plan_live(grid, store)?;
        // Schemes this machine cannot run are left out (and said so).
        let mut skipped: BTreeMap<String, String> = BTreeMap::new();
        let mut todo = Vec::new();
        for &i in &plan.todo {
            let text = scheme_text(&plan.points[i])?;
            let scheme = pantheon::parse_scheme(&text)
                .map_err(|e| anyhow::anyhow!("{}: {e}", grid.origin))?;
            if scheme.available() {
                todo.push(i);
            } else {
                skipped.insert(
                    text,
                    format!("{scheme} is not available on this machine or in this build"),
                );
            }
        }
        for (scheme, why) in &skipped {
            eprintln!("skipping {scheme}: {why}");
        }
        plan.todo = todo;
        let mut results = BTreeMap::new();
        progress(Progress {
            to_run: plan.todo.len(),
            done: 0,
        });
        for (done, &i) in plan.todo.iter().enumerate() {
            let point = &plan.points[i];
            let json = run_point(grid, point).with_context(|| {
                format!(
                    "live run of {} with seed {}",
                    point
                        .inputs
                        .iter()
                        .map(|(k, v)| format!("{k} = {v}"))
                        .collect::<Vec<_>>()
                        .join(", "),
                    point.seed
                )
            })?;
            results.insert(i, json);
            progress(Progress {
                to_run: plan.todo.len(),
                done: done + 1,
            });
        }
        Ok(brisk_sweep::finish(grid, store, &plan, results)?)
    }

    fn scheme_text(point: &Point) -> Result<String> {
        match point.input(SCHEME_AXIS) {
            Some(toml::Value::String(s)) => Ok(s.clone()),
            other => bail!("`{SCHEME_AXIS}` values are text such as \"tcp cubic\", not {other:?}"),
        }
    }

    /// One run: the point's network (traces read relative to the grid's
    /// base), its family and seed, for the scenario's duration.
    fn run_point(grid: &Grid, point: &Point) -> Result<serde_json::Value> {
        let scheme = pantheon::parse_scheme(&scheme_text(point)?).map_err(anyhow::Error::msg)?;
        let network = Network::parse_with_traces(&point.scenario_toml, |trace| {
            std::fs::read_to_string(grid.base_dir().join(trace))
        })
        .map_err(|e| anyhow::anyhow!("{}: {e}", grid.origin))?;
        let mut config = LabConfig::new(network);
        config.name = point.scenario.name.clone();
        config.seed = point.seed;
        config.ip = point.scenario.ip.into();
        Ok(pantheon::run(config, &scheme, point.scenario.duration)?)
    }
}

/// One SVG per panel of the comparison, named by the grid and the panel's
/// place in grid order, with a line per panel saying what it shows.
fn write_plots(dir: &Path, grid: &Grid, flows: &[Row], schemes: &str) -> Result<()> {
    let panels = brisk_sweep::compare::panels(grid, flows, schemes)?;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    for (i, panel) in panels.iter().enumerate() {
        let path = dir.join(format!("{}-{:02}.svg", grid.name, i + 1));
        std::fs::write(&path, panel.svg()?)
            .with_context(|| format!("cannot write {}", path.display()))?;
        let means: Vec<String> = panel
            .schemes
            .iter()
            .filter_map(|s| {
                let (delay_ms, mbps) = s.mean()?;
                Some(format!("{} {mbps:.2} Mbit/s at {delay_ms:.1} ms", s.name))
            })
            .collect();
        println!(
            "plot {}: {}: {}",
            path.display(),
            panel.title,
            means.join("; ")
        );
    }
    Ok(())
}

/// The rows as CSV (RFC 4180 quoting); columns are the union of the rows'
/// columns in first-seen order.
fn write_csv(path: &Path, rows: &[Row]) -> std::io::Result<()> {
    let mut names: Vec<&str> = Vec::new();
    for row in rows {
        for (name, _) in &row.0 {
            if !names.contains(&name.as_str()) {
                names.push(name);
            }
        }
    }
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    let quote = |s: &str| {
        if s.contains([',', '"', '\n', '\r']) {
            format!("\"{}\"", s.replace('"', "\"\""))
        } else {
            s.to_string()
        }
    };
    let header: Vec<String> = names.iter().map(|n| quote(n)).collect();
    writeln!(out, "{}", header.join(","))?;
    for row in rows {
        let line: Vec<String> = names
            .iter()
            .map(|n| match row.get(n) {
                None | Some(Cell::Null) => String::new(),
                Some(Cell::Bool(b)) => b.to_string(),
                Some(Cell::Int(i)) => i.to_string(),
                Some(Cell::Float(f)) => f.to_string(),
                Some(Cell::Text(s)) => quote(s),
            })
            .collect();
        writeln!(out, "{}", line.join(","))?;
    }
    out.flush()
}

/// "1 run", "2 runs".
fn plural(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}
