//! Grid files: a base scenario, axes over its fields, and seeds.
//!
//! ```toml
//! name = "rates-by-queue"
//! base = "../scenarios/fifo-overload.toml"  # or an inline [base] table
//! seeds = [1, 2, 3]                          # or a count: seeds = 3 is 1, 2, 3
//! [axes]
//! "link.down.rate" = ["5Mbit", "10Mbit"]
//! queue = [{ fifo = { limit_packets = 100 } }, { codel = {} }]
//! "flows[0].cc" = ["prague", "cubic"]
//! ```
//!
//! Every combination of axis values is one scenario, run once per seed.
//! Axes keep their order in the file; the last varies fastest, seeds
//! innermost. Each point is checked as a whole scenario before anything
//! runs, so a bad value fails the sweep at once, naming the values.
//!
//! Two axis names are not scenario fields:
//! - `path` sets several fields at once: each value is a table of dotted
//!   field paths and their values, with an optional `name` for plots
//!   (`{ name = "LTE, fitted", "link.down.rate" = "4.7Mbit", "link.down.delay" = "31ms" }`);
//! - an axis under `live.` (`live.scheme`) is an input of the live lab's
//!   driver, not of the scenario: it goes into the run's key and rows, and
//!   the simulator refuses to run it.

use crate::error::SweepError;
use crate::path::FieldPath;
use crate::point::Point;
use brisk_sim::scenario::Scenario;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use toml::{Spanned, Value};

/// Most points one grid may expand to: a guard against a typo that would
/// queue days of runs.
pub const MAX_POINTS: usize = 1_000_000;

/// A validated grid.
#[derive(Debug, Clone)]
pub struct Grid {
    /// Where the grid came from, for errors.
    pub origin: String,
    /// The grid's name (its file stem when the file names none).
    pub name: String,
    /// The axes in file order.
    pub axes: Vec<Axis>,
    /// Seeds, each run for every combination of axis values.
    pub seeds: Vec<u64>,
    base: toml::Table,
    /// Trace files the base names are read relative to this directory.
    base_dir: PathBuf,
}

/// One axis: a scenario field and the values it takes.
#[derive(Debug, Clone)]
pub struct Axis {
    pub path: FieldPath,
    pub values: Vec<Value>,
    /// Line of the axis in the grid file.
    pub line: usize,
    pub kind: AxisKind,
}

/// What an axis' values set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AxisKind {
    /// One scenario field, named by the axis path.
    Field,
    /// `path`: several fields at once, each value a table of dotted paths
    /// and values (and an optional `name`).
    Bundle,
    /// `live.*`: an input of the live lab's driver.
    Live,
}

/// The axis name that sets several fields at once.
pub const BUNDLE_AXIS: &str = "path";
/// The prefix of axes that only the live lab reads.
pub const LIVE_PREFIX: &str = "live.";

impl AxisKind {
    fn of(name: &str) -> AxisKind {
        if name == BUNDLE_AXIS {
            AxisKind::Bundle
        } else if name.starts_with(LIVE_PREFIX) {
            AxisKind::Live
        } else {
            AxisKind::Field
        }
    }
}

/// The fields a `path` value sets, in its order, without its `name`.
fn bundle_fields(value: &Value) -> Result<Vec<(FieldPath, Value)>, String> {
    let Value::Table(t) = value else {
        return Err(format!(
            "a `path` value is a table of field paths and values, not {}",
            value.type_str()
        ));
    };
    let mut fields = Vec::new();
    for (k, v) in t {
        if k == "name" {
            if !v.is_str() {
                return Err("a path's `name` is text".to_string());
            }
            continue;
        }
        fields.push((FieldPath::parse(k)?, v.clone()));
    }
    if fields.is_empty() {
        return Err("a `path` value sets at least one field".to_string());
    }
    Ok(fields)
}

impl Axis {
    /// Applies `value` of this axis to a scenario table.
    fn apply(&self, table: &mut toml::Table, value: &Value) -> Result<(), String> {
        match self.kind {
            AxisKind::Field => self.path.set(table, value.clone()),
            AxisKind::Bundle => {
                for (path, v) in bundle_fields(value)? {
                    path.set(table, v)?;
                }
                Ok(())
            }
            AxisKind::Live => Ok(()),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGrid {
    name: Option<String>,
    base: Spanned<Value>,
    seeds: Option<Spanned<Value>>,
    #[serde(default)]
    axes: BTreeMap<String, Spanned<Value>>,
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

impl Grid {
    /// Reads a grid file; a base scenario path in it is relative to the
    /// grid file.
    pub fn load(path: &Path) -> Result<Grid, SweepError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| SweepError::Io {
            path: shown.clone(),
            source,
        })?;
        let dir = path.parent().unwrap_or(Path::new("."));
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "grid".to_string());
        Grid::parse(&text, &shown, dir, &stem)
    }

    /// Parses grid text. `origin` names it in errors, paths in it are
    /// relative to `dir`, and `default_name` is its name unless it sets one.
    pub fn parse(
        text: &str,
        origin: &str,
        dir: &Path,
        default_name: &str,
    ) -> Result<Grid, SweepError> {
        let raw: RawGrid = toml::from_str(text).map_err(|e| SweepError::Parse {
            origin: origin.to_string(),
            message: e.to_string().trim_end().to_string(),
        })?;
        let field =
            |span: std::ops::Range<usize>, field: &str, message: String| SweepError::Field {
                origin: origin.to_string(),
                line: line_of(text, span.start),
                field: field.to_string(),
                message,
            };
        let base_span = raw.base.span();
        let (base, base_dir) = match raw.base.into_inner() {
            Value::Table(t) => (t, dir.to_path_buf()),
            Value::String(p) => {
                let path = dir.join(&p);
                let body = std::fs::read_to_string(&path).map_err(|e| {
                    field(
                        base_span.clone(),
                        "base",
                        format!("{}: {e}", path.display()),
                    )
                })?;
                let table = body.parse::<toml::Table>().map_err(|e| {
                    field(
                        base_span.clone(),
                        "base",
                        format!("{}: {}", path.display(), e.to_string().trim_end()),
                    )
                })?;
                let parent = path.parent().unwrap_or(Path::new(".")).to_path_buf();
                (table, parent)
            }
            other => {
                return Err(field(
                    base_span,
                    "base",
                    format!(
                        "expected a scenario file path or a [base] table, found {}",
                        other.type_str()
                    ),
                ));
            }
        };
        let seeds = match raw.seeds {
            None => vec![base.get("seed").and_then(Value::as_integer).unwrap_or(1) as u64],
            Some(s) => {
                let span = s.span();
                parse_seeds(s.into_inner()).map_err(|m| field(span, "seeds", m))?
            }
        };
        let mut axes = Vec::new();
        let mut spanned: Vec<_> = raw.axes.into_iter().collect();
        spanned.sort_by_key(|(_, v)| v.span().start);
        for (name, value) in spanned {
            let span = value.span();
            let err = |m: String| field(span.clone(), &format!("axes.{name}"), m);
            let path = FieldPath::parse(&name).map_err(err)?;
            if path.as_str() == "seed" {
                return Err(err("vary seeds with `seeds`, not an axis".to_string()));
            }
            let Value::Array(values) = value.into_inner() else {
                return Err(err("an axis is a list of the values to try".to_string()));
            };
            if values.is_empty() {
                return Err(err("an axis needs at least one value".to_string()));
            }
            let axis = Axis {
                kind: AxisKind::of(path.as_str()),
                path,
                values,
                line: line_of(text, span.start),
            };
            for (i, v) in axis.values.iter().enumerate() {
                if axis.values[..i].contains(v) {
                    return Err(err(format!("the value {v} is listed twice")));
                }
                axis.apply(&mut base.clone(), v).map_err(err)?;
            }
            axes.push(axis);
        }
        let points = axes
            .iter()
            .try_fold(seeds.len(), |n, a| n.checked_mul(a.values.len()))
            .filter(|&n| n <= MAX_POINTS);
        if points.is_none() {
            return Err(SweepError::Parse {
                origin: origin.to_string(),
                message: format!("the grid expands to more than {MAX_POINTS} runs"),
            });
        }
        Ok(Grid {
            origin: origin.to_string(),
            name: raw.name.unwrap_or_else(|| default_name.to_string()),
            axes,
            seeds,
            base,
            base_dir,
        })
    }

    /// The directory trace files named by the base scenario are read
    /// relative to: an engine that runs a point's `scenario_toml`
    /// elsewhere needs it.
    pub fn base_dir(&self) -> &Path {
        &self.base_dir
    }

    /// Whether an axis is an input of the live lab (`live.*`): such a grid
    /// runs only there.
    pub fn is_live(&self) -> bool {
        self.axes.iter().any(|a| a.kind == AxisKind::Live)
    }

    /// Runs the grid expands to: combinations times seeds.
    pub fn len(&self) -> usize {
        self.axes.iter().map(|a| a.values.len()).product::<usize>() * self.seeds.len()
    }

    /// Whether the grid has no runs (never, once parsed).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every run of the grid in order, each checked as a scenario.
    pub fn points(&self) -> Result<Vec<Point>, SweepError> {
        let mut points = Vec::with_capacity(self.len());
        let mut choice = vec![0usize; self.axes.len()];
        loop {
            let inputs: Vec<(String, Value)> = self
                .axes
                .iter()
                .zip(&choice)
                .map(|(a, &i)| (a.path.as_str().to_string(), a.values[i].clone()))
                .collect();
            let mut table = self.base.clone();
            for (axis, value) in self.axes.iter().zip(inputs.iter().map(|(_, v)| v)) {
                // Checked for each value alone when parsing; an earlier
                // axis may still have replaced a table a later one reaches.
                axis.apply(&mut table, value)
                    .map_err(|m| self.point_error(&inputs, m))?;
            }
            let scenario = self.scenario(&table, &inputs)?;
            for &seed in &self.seeds {
                let mut seeded = table.clone();
                seeded.insert("seed".to_string(), Value::Integer(seed as i64));
                let text = toml::to_string(&seeded)
                    .map_err(|e| self.point_error(&inputs, e.to_string()))?;
                points.push(Point::new(
                    points.len(),
                    inputs.clone(),
                    seed,
                    text,
                    Arc::clone(&scenario),
                ));
            }
            // Next combination: the last axis varies fastest.
            let mut axis = self.axes.len();
            loop {
                if axis == 0 {
                    return Ok(points);
                }
                axis -= 1;
                choice[axis] += 1;
                if choice[axis] < self.axes[axis].values.len() {
                    break;
                }
                choice[axis] = 0;
            }
        }
    }

    fn scenario(
        &self,
        table: &toml::Table,
        inputs: &[(String, Value)],
    ) -> Result<Arc<Scenario>, SweepError> {
        let text = toml::to_string(table).map_err(|e| self.point_error(inputs, e.to_string()))?;
        let origin = format!("{} ({})", self.origin, describe(inputs));
        Scenario::parse_with_traces(&text, &origin, |trace| {
            std::fs::read_to_string(self.base_dir.join(trace))
        })
        .map(Arc::new)
        .map_err(|e| self.point_error(inputs, e.to_string()))
    }

    fn point_error(&self, inputs: &[(String, Value)], message: String) -> SweepError {
        SweepError::Point {
            origin: self.origin.clone(),
            point: describe(inputs),
            message,
        }
    }
}

/// `a = 1, b = "x"`, or "no axes".
fn describe(inputs: &[(String, Value)]) -> String {
    if inputs.is_empty() {
        return "no axes".to_string();
    }
    inputs
        .iter()
        .map(|(k, v)| format!("{k} = {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn parse_seeds(value: Value) -> Result<Vec<u64>, String> {
    let seeds: Vec<u64> = match value {
        Value::Integer(n) if (1..=MAX_POINTS as i64).contains(&n) => (1..=n as u64).collect(),
        Value::Integer(n) => {
            return Err(format!(
                "a seed count must be from 1 to {MAX_POINTS}, not {n}"
            ));
        }
        Value::Array(list) => list
            .iter()
            .map(|v| match v.as_integer() {
                Some(n) if n >= 0 => Ok(n as u64),
                _ => Err(format!("seeds are whole numbers of 0 or more, not {v}")),
            })
            .collect::<Result<_, _>>()?,
        other => {
            return Err(format!(
                "expected a list of seeds or a count, found {}",
                other.type_str()
            ));
        }
    };
    if seeds.is_empty() {
        return Err("the list of seeds is empty".to_string());
    }
    for (i, s) in seeds.iter().enumerate() {
        if seeds[..i].contains(s) {
            return Err(format!("seed {s} is listed twice"));
        }
    }
    Ok(seeds)
}
