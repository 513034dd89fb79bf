//! The `brisk._native` Python module behind the `brisk` package
//! (python/brisk/__init__.py wraps it). Results cross as JSON text: the
//! shapes `brisk sim --json` and the sweep store already define, parsed
//! once on the Python side. Runs release the interpreter lock.
//!
//! `sweep` runs a grid on local threads. For another engine (Dask),
//! `plan` lists the runs the store lacks, `run_point` runs one of them
//! wherever the engine puts it, and `finish` stores what came back and
//! returns the same rows `sweep` would.

use brisk_sim::RunOptions;
use brisk_sim::scenario::{IpFamily, Scenario};
use brisk_sweep::{Cell, Grid, Row, Store, SweepOptions, SweepOutcome};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// Text that has neither a newline nor an `=` is a file name, not TOML.
fn is_path(arg: &str) -> bool {
    Path::new(arg).is_file() || !(arg.contains('\n') || arg.contains('='))
}

fn value_error(e: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// Runs one scenario (a file path or TOML text); returns its results as
/// JSON text.
#[pyfunction]
#[pyo3(signature = (scenario, seed=None, ip=None))]
fn sim(py: Python<'_>, scenario: &str, seed: Option<u64>, ip: Option<&str>) -> PyResult<String> {
    let parsed = if is_path(scenario) {
        Scenario::load(Path::new(scenario))
    } else {
        Scenario::parse(scenario, "<scenario text>")
    }
    .map_err(value_error)?;
    parsed.require_flows(scenario).map_err(value_error)?;
    let ip = match ip {
        None => None,
        Some("v4") => Some(IpFamily::V4),
        Some("v6") => Some(IpFamily::V6),
        Some(other) => {
            return Err(value_error(format!(
                "ip is \"v4\" or \"v6\", not {other:?}"
            )));
        }
    };
    py.detach(|| {
        let run = brisk_sim::run(
            &parsed,
            RunOptions {
                seed,
                ip,
                ..RunOptions::default()
            },
        );
        serde_json::to_string(&run.results).map_err(value_error)
    })
}

/// Rows as `{"columns": [...], "rows": [[...], ...]}`.
fn table(rows: &[Row]) -> Value {
    let mut columns: Vec<&str> = Vec::new();
    for row in rows {
        for (name, _) in &row.0 {
            if !columns.contains(&name.as_str()) {
                columns.push(name);
            }
        }
    }
    let cells: Vec<Value> = rows
        .iter()
        .map(|row| {
            columns
                .iter()
                .map(|c| match row.get(c) {
                    None | Some(Cell::Null) => Value::Null,
                    Some(Cell::Bool(b)) => json!(b),
                    Some(Cell::Int(i)) => json!(i),
                    Some(Cell::Float(f)) => json!(f),
                    Some(Cell::Text(s)) => json!(s),
                })
                .collect()
        })
        .collect();
    json!({ "columns": columns, "rows": cells })
}

/// Runs a grid (a file path or TOML text) into its store; returns both
/// tables and the counts as JSON text.
#[pyfunction]
#[pyo3(signature = (grid, store=None, jobs=0))]
fn sweep(py: Python<'_>, grid: &str, store: Option<&str>, jobs: usize) -> PyResult<String> {
    let grid = load_grid(grid)?;
    let (root, store) = open_store(&grid, store)?;
    py.detach(|| {
        let outcome = brisk_sweep::sweep(&grid, &store, &SweepOptions { jobs }, &mut |_| {})
            .map_err(value_error)?;
        Ok(outcome_json(&outcome, &root))
    })
}

fn load_grid(grid: &str) -> PyResult<Grid> {
    if is_path(grid) {
        Grid::load(Path::new(grid))
    } else {
        Grid::parse(grid, "<grid text>", Path::new("."), "grid")
    }
    .map_err(value_error)
}

fn open_store(grid: &Grid, store: Option<&str>) -> PyResult<(PathBuf, Store)> {
    let root = store.map_or_else(|| brisk_sweep::store::default_root(grid), Into::into);
    let store = Store::open(&root).map_err(value_error)?;
    Ok((root, store))
}

fn outcome_json(outcome: &SweepOutcome, root: &Path) -> String {
    json!({
        "runs": table(&outcome.runs),
        "flows": table(&outcome.flows),
        "ran": outcome.ran,
        "skipped": outcome.skipped,
        "store": root.display().to_string(),
    })
    .to_string()
}

/// The runs of a grid its store lacks, for another engine to run: JSON
/// text, a list of `{index, scenario, seed, base_dir}`.
#[pyfunction]
#[pyo3(signature = (grid, store=None))]
fn plan(grid: &str, store: Option<&str>) -> PyResult<String> {
    let grid = load_grid(grid)?;
    let (_, store) = open_store(&grid, store)?;
    let plan = brisk_sweep::plan(&grid, &store).map_err(value_error)?;
    let base_dir = grid.base_dir().display().to_string();
    let todo: Vec<Value> = plan
        .todo
        .iter()
        .map(|&i| {
            let p = &plan.points[i];
            json!({ "index": i, "scenario": p.scenario_toml, "seed": p.seed, "base_dir": base_dir })
        })
        .collect();
    Ok(Value::Array(todo).to_string())
}

/// Runs one planned point (its canonical scenario text and seed, trace
/// files relative to `base_dir`); its results as JSON text.
#[pyfunction]
fn run_point(py: Python<'_>, scenario: &str, seed: u64, base_dir: &str) -> PyResult<String> {
    let base = PathBuf::from(base_dir);
    let parsed = Scenario::parse_with_traces(scenario, "<planned run>", |trace| {
        std::fs::read_to_string(base.join(trace))
    })
    .map_err(value_error)?;
    py.detach(|| {
        let run = brisk_sim::run(
            &parsed,
            RunOptions {
                seed: Some(seed),
                ..RunOptions::default()
            },
        );
        serde_json::to_string(&run.results).map_err(value_error)
    })
}

/// Stores results another engine computed (point index to results JSON
/// text) and returns the grid's rows as `sweep` does.
#[pyfunction]
#[pyo3(signature = (grid, results, store=None))]
fn finish(
    py: Python<'_>,
    grid: &str,
    results: HashMap<usize, String>,
    store: Option<&str>,
) -> PyResult<String> {
    let grid = load_grid(grid)?;
    let (root, store) = open_store(&grid, store)?;
    py.detach(|| {
        let plan = brisk_sweep::plan(&grid, &store).map_err(value_error)?;
        let mut parsed = BTreeMap::new();
        for (index, text) in results {
            parsed.insert(index, serde_json::from_str(&text).map_err(value_error)?);
        }
        let outcome = brisk_sweep::finish(&grid, &store, &plan, parsed).map_err(value_error)?;
        Ok(outcome_json(&outcome, &root))
    })
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(sim, m)?)?;
    m.add_function(wrap_pyfunction!(sweep, m)?)?;
    m.add_function(wrap_pyfunction!(plan, m)?)?;
    m.add_function(wrap_pyfunction!(run_point, m)?)?;
    m.add_function(wrap_pyfunction!(finish, m)?)?;
    Ok(())
}
