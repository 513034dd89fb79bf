//! Pantheon-style comparisons of a sweep's results: for each path (each
//! combination of the grid's other axes), one point per run and scheme at
//! (95th-percentile one-way delay, throughput) of the flow the scheme axis
//! sets, the scheme's mean marked, the delay axis reversed so that better
//! is up and to the right, as Pantheon's reports draw it.

use std::collections::BTreeMap;

use brisk_trace::plot::{Axis, Frame, PlotError, PointSet, scatter_chart};

use crate::grid::Grid;
use crate::row::{Cell, Row};

/// The metric on the x axis: what Pantheon reports as a scheme's delay.
pub const DELAY_COLUMN: &str = "one_way_delay_ms.p95";
/// The metric on the y axis: the flow's delivered payload rate.
pub const THROUGHPUT_COLUMN: &str = "goodput_mbps";

/// One plot: a path and every scheme's runs on it.
#[derive(Debug, Clone, PartialEq)]
pub struct Panel {
    /// The path: the values of the other axes, e.g. `link.down.rate =
    /// TMobile-LTE-driving.down`.
    pub title: String,
    /// One set per scheme, in the scheme axis' order.
    pub schemes: Vec<PointSet>,
}

impl Panel {
    /// The panel drawn as an SVG.
    pub fn svg(&self) -> Result<String, PlotError> {
        let frame = Frame::new(
            self.title.clone(),
            Axis::new("95th percentile one-way delay (better to the right)", "ms"),
            Axis::new("throughput", "Mbit/s"),
        );
        scatter_chart(&frame, &self.schemes, true)
    }
}

/// Why a grid cannot be compared.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CompareError {
    /// The scheme axis is not one of the grid's axes.
    #[error("the grid has no axis `{0}` to compare schemes by (its axes: {1})")]
    NoSchemeAxis(String, String),
}

/// The flow a scheme axis such as `flows[2].cc` sets: 2; 0 for an axis
/// outside `flows`.
fn flow_index(scheme_axis: &str) -> i64 {
    scheme_axis
        .strip_prefix("flows[")
        .and_then(|rest| rest.split_once(']'))
        .and_then(|(n, _)| n.parse().ok())
        .unwrap_or(0)
}

/// A short form of an axis value for a title: a path by its `name`, a
/// trace by its file.
fn short(cell: Option<&Cell>) -> String {
    match cell {
        Some(Cell::Text(t)) if named(t).is_some() => named(t).unwrap_or_default(),
        Some(Cell::Text(t)) => match t.split_once("mahimahi = \"") {
            Some((_, path)) => {
                let path = path.trim_end_matches(['"', ' ', '}']);
                let file = path.rsplit(['/', '\\']).next().unwrap_or(path);
                format!("{file} (trace)")
            }
            None => t.clone(),
        },
        Some(Cell::Int(i)) => i.to_string(),
        Some(Cell::Float(f)) => f.to_string(),
        Some(Cell::Bool(b)) => b.to_string(),
        Some(Cell::Null) | None => "-".to_string(),
    }
}

/// The `name` of a `path` axis value written as inline TOML.
fn named(text: &str) -> Option<String> {
    if !text.starts_with('{') {
        return None;
    }
    let table: toml::Table = format!("v = {text}").parse().ok()?;
    table.get("v")?.get("name")?.as_str().map(str::to_string)
}

/// The title of the path a row (or a point's inputs) belongs to: the
/// values of every axis but `scheme_axis`, shortened.
pub fn path_title(grid: &Grid, row: &Row, scheme_axis: &str) -> String {
    let others: Vec<&str> = grid
        .axes
        .iter()
        .map(|a| a.path.as_str())
        .filter(|a| *a != scheme_axis)
        .collect();
    if others.is_empty() {
        return grid.name.clone();
    }
    others
        .iter()
        .map(|a| format!("{a} = {}", short(row.get(a))))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The short name of a row's scheme.
pub fn scheme_name(row: &Row, scheme_axis: &str) -> String {
    short(row.get(scheme_axis))
}

fn number(row: &Row, column: &str) -> f64 {
    match row.get(column) {
        Some(Cell::Float(f)) => *f,
        Some(Cell::Int(i)) => *i as f64,
        _ => f64::NAN,
    }
}

/// The panels of a sweep's flow rows: one per combination of the axes
/// other than `scheme_axis`, in grid order.
pub fn panels(grid: &Grid, flows: &[Row], scheme_axis: &str) -> Result<Vec<Panel>, CompareError> {
    let axes: Vec<&str> = grid.axes.iter().map(|a| a.path.as_str()).collect();
    if !axes.contains(&scheme_axis) {
        return Err(CompareError::NoSchemeAxis(
            scheme_axis.to_string(),
            axes.join(", "),
        ));
    }
    let flow = flow_index(scheme_axis);
    let mut order: Vec<String> = Vec::new();
    let mut by_path: BTreeMap<String, Vec<PointSet>> = BTreeMap::new();
    for row in flows
        .iter()
        .filter(|r| r.get("id") == Some(&Cell::Int(flow)))
    {
        let title = path_title(grid, row, scheme_axis);
        let scheme = scheme_name(row, scheme_axis);
        if !by_path.contains_key(&title) {
            order.push(title.clone());
        }
        let sets = by_path.entry(title).or_default();
        let point = (number(row, DELAY_COLUMN), number(row, THROUGHPUT_COLUMN));
        match sets.iter_mut().find(|s| s.name == scheme) {
            Some(set) => set.points.push(point),
            None => sets.push(PointSet::new(scheme, vec![point])),
        }
    }
    Ok(order
        .into_iter()
        .map(|title| {
            let schemes = by_path.remove(&title).unwrap_or_default();
            Panel { title, schemes }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flow_comes_from_the_axis_path() {
        assert_eq!(flow_index("flows[2].cc"), 2);
        assert_eq!(flow_index("flows[0].cc"), 0);
        assert_eq!(flow_index("queue"), 0);
    }

    #[test]
    fn a_trace_is_named_by_its_file() {
        let cell =
            Cell::Text(r#"{ mahimahi = "../../shared/traces/ATT-LTE-driving.down" }"#.into());
        assert_eq!(short(Some(&cell)), "ATT-LTE-driving.down (trace)");
        assert_eq!(short(Some(&Cell::Text("12Mbit".into()))), "12Mbit");
        let path = Cell::Text(
            r#"{ "link.down.rate" = "4.2Mbit", name = "ATT-LTE-driving, fitted" }"#.into(),
        );
        assert_eq!(short(Some(&path)), "ATT-LTE-driving, fitted");
    }
}
