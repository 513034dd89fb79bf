//! Running a grid: the runs not yet in the store, on all local cores,
//! their rows stored, and every row of the grid returned in grid order.

use crate::error::SweepError;
use crate::grid::{AxisKind, Grid};
use crate::point::Point;
use crate::row::{Row, relabel, rows};
use crate::store::{Store, Table};
use brisk_sim::RunOptions;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

/// How to run a sweep.
#[derive(Debug, Clone, Default)]
pub struct SweepOptions {
    /// Runs at once; 0 means one per local core.
    pub jobs: usize,
}

/// What a sweep did and found.
#[derive(Debug, Clone)]
pub struct SweepOutcome {
    /// One row per run of the grid, in grid order: run now or read back.
    pub runs: Vec<Row>,
    /// One row per flow of those runs, grouped by run in the same order.
    pub flows: Vec<Row>,
    /// Runs simulated by this sweep.
    pub ran: usize,
    /// Runs found finished in the store and not run again.
    pub skipped: usize,
    /// Parallel runs used (local threads; 1 when another engine ran them).
    pub jobs: usize,
}

/// Progress of a sweep, told after each finished run.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    /// Runs to simulate (finished ones excluded).
    pub to_run: usize,
    pub done: usize,
}

/// A grid's points and which of them the store lacks.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Every point of the grid, in grid order.
    pub points: Vec<Point>,
    /// Indexes (into `points`) of the runs not in the store.
    pub todo: Vec<usize>,
}

/// Expands `grid` and looks its points up in `store`, for the simulator:
/// a grid with `live.*` axes is refused (see [`plan_live`]).
pub fn plan(grid: &Grid, store: &Store) -> Result<Plan, SweepError> {
    if let Some(axis) = grid.axes.iter().find(|a| a.kind == AxisKind::Live) {
        return Err(SweepError::Parse {
            origin: grid.origin.clone(),
            message: format!(
                "the axis `{}` is an input of the live lab: run this grid with `brisk sweep --live`",
                axis.path
            ),
        });
    }
    plan_live(grid, store)
}

/// Expands `grid` and looks its points up in `store`, `live.*` axes
/// allowed: the live lab's driver runs the points.
pub fn plan_live(grid: &Grid, store: &Store) -> Result<Plan, SweepError> {
    let points = grid.points()?;
    let finished = store.finished()?;
    let todo = points
        .iter()
        .filter(|p| !finished.contains(&p.key))
        .map(|p| p.index)
        .collect();
    Ok(Plan { points, todo })
}

/// Runs one point; its results as `brisk sim --json` prints them. Any
/// engine that runs points (local threads, a cluster) calls this.
pub fn simulate(point: &Point) -> Result<serde_json::Value, SweepError> {
    if let Some((name, _)) = point
        .inputs
        .iter()
        .find(|(n, _)| n.starts_with(crate::grid::LIVE_PREFIX))
    {
        return Err(SweepError::Point {
            origin: "simulator".to_string(),
            point: format!("seed {}", point.seed),
            message: format!("`{name}` is an input of the live lab, not of the simulator"),
        });
    }
    let run = brisk_sim::run(
        &point.scenario,
        RunOptions {
            seed: Some(point.seed),
            ..RunOptions::default()
        },
    );
    serde_json::to_value(&run.results).map_err(|e| SweepError::Point {
        origin: "results".to_string(),
        point: format!("seed {}", point.seed),
        message: e.to_string(),
    })
}

/// Runs `grid` on local threads: finished runs in `store` are read back,
/// the others run on `options.jobs` threads and are added to the store.
pub fn sweep(
    grid: &Grid,
    store: &Store,
    options: &SweepOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<SweepOutcome, SweepError> {
    let plan = plan(grid, store)?;
    let todo: Vec<&Point> = plan.todo.iter().map(|&i| &plan.points[i]).collect();
    let jobs = match options.jobs {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    }
    .min(todo.len().max(1));
    progress(Progress {
        to_run: todo.len(),
        done: 0,
    });

    let mut results: BTreeMap<usize, serde_json::Value> = BTreeMap::new();
    let next = AtomicUsize::new(0);
    let (tx, rx) = mpsc::channel::<(usize, Result<serde_json::Value, SweepError>)>();
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            let tx = tx.clone();
            let (todo, next) = (&todo, &next);
            scope.spawn(move || {
                while let Some(point) = todo.get(next.fetch_add(1, Ordering::Relaxed)) {
                    if tx.send((point.index, simulate(point))).is_err() {
                        return;
                    }
                }
            });
        }
        drop(tx);
        let mut first_error = None;
        for (index, out) in rx {
            match out {
                Ok(json) => {
                    results.insert(index, json);
                    progress(Progress {
                        to_run: todo.len(),
                        done: results.len(),
                    });
                }
                Err(e) => {
                    // Workers stop taking points; the error is reported.
                    next.store(usize::MAX / 2, Ordering::Relaxed);
                    first_error.get_or_insert(e);
                }
            }
        }
        first_error.map_or(Ok(()), Err)
    })?;
    let mut outcome = finish(grid, store, &plan, results)?;
    outcome.jobs = jobs;
    Ok(outcome)
}

/// Stores the results of the runs `plan` lacked (by point index, from any
/// engine), reads the others back, and returns every row in grid order.
/// A result for a point not in `plan.todo` is ignored; a point of it
/// without a result is an error, after the others are stored.
pub fn finish(
    grid: &Grid,
    store: &Store,
    plan: &Plan,
    results: BTreeMap<usize, serde_json::Value>,
) -> Result<SweepOutcome, SweepError> {
    let mut fresh: BTreeMap<usize, (Row, Vec<Row>)> = BTreeMap::new();
    for &index in &plan.todo {
        if let Some(json) = results.get(&index) {
            fresh.insert(index, rows(&plan.points[index], &grid.name, json));
        }
    }
    let new_runs: Vec<Row> = fresh.values().map(|(r, _)| r.clone()).collect();
    let new_flows: Vec<Row> = fresh.values().flat_map(|(_, f)| f.clone()).collect();
    store.append(Table::Flows, &new_flows)?;
    store.append(Table::Runs, &new_runs)?;
    if new_runs.len() < plan.todo.len() {
        return Err(SweepError::Incomplete {
            missing: plan.todo.len() - new_runs.len(),
            total: plan.todo.len(),
        });
    }

    let skipped = plan.points.len() - plan.todo.len();
    let mut stored_runs: BTreeMap<String, Row> = BTreeMap::new();
    let mut stored_flows: BTreeMap<String, Vec<Row>> = BTreeMap::new();
    if skipped > 0 {
        for row in store.read(Table::Runs)? {
            if let Some(key) = row.text("run_key") {
                stored_runs.entry(key.to_string()).or_insert(row);
            }
        }
        for row in store.read(Table::Flows)? {
            if let Some(key) = row.text("run_key") {
                stored_flows.entry(key.to_string()).or_default().push(row);
            }
        }
    }
    let mut runs = Vec::with_capacity(plan.points.len());
    let mut flows = Vec::new();
    for point in &plan.points {
        if let Some((run, f)) = fresh.remove(&point.index) {
            runs.push(run);
            flows.extend(f);
        } else if let Some(mut run) = stored_runs.get(&point.key).cloned() {
            relabel(&mut run, point, &grid.name);
            runs.push(run);
            for mut f in stored_flows.get(&point.key).cloned().unwrap_or_default() {
                relabel(&mut f, point, &grid.name);
                flows.push(f);
            }
        }
    }
    Ok(SweepOutcome {
        runs,
        flows,
        ran: new_runs.len(),
        skipped,
        jobs: 1,
    })
}
