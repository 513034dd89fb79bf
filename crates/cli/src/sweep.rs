//! `brisk sweep GRID.toml [--store DIR] [--jobs N] [--csv FILE] [--plots DIR]`:
//! runs a grid of scenarios (see docs/SWEEPS.md), skipping the runs its
//! store already holds, and optionally draws Pantheon-style comparisons.

use crate::progress;
use anyhow::{Context, Result};
use brisk_sweep::{Cell, Grid, Progress, Row, Store, SweepOptions, sweep};
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
    /// The axis whose values are the schemes compared in --plots.
    #[arg(long, default_value = "flows[0].cc")]
    schemes: String,
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
    let outcome = sweep(
        &grid,
        &store,
        &SweepOptions { jobs: args.jobs },
        &mut |p: Progress| {
            bar.set_length(p.to_run as u64);
            bar.set_position(p.done as u64);
        },
    )?;
    bar.finish_and_clear();
    let secs = started.elapsed().as_secs_f64();
    println!(
        "ran {} runs on {} threads in {secs:.2} s wall; skipped {} already in the store",
        outcome.ran, outcome.jobs, outcome.skipped
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
    if let Some(dir) = &args.plots {
        write_plots(dir, &grid, &outcome.flows, &args.schemes)?;
    }
    Ok(())
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
