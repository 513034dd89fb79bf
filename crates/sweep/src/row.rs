//! Tidy rows: one per run and one per flow, every input beside every
//! metric. Nested results flatten to dotted column names
//! (`queue.delay_ms.p99`, `transport.cc`), so a row is a flat record
//! pandas, DuckDB and R take as it is.

use crate::point::{BRISK_VERSION, Point};
use serde_json::Value as Json;
use toml::Value as Toml;

/// One value of a row.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Text(String),
}

/// Named cells in column order. A row holds no null cells: a column a
/// run lacks (a ping flow's transport fields) is absent, whether the row
/// was just made or read back from the store.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Row(pub Vec<(String, Cell)>);

impl Row {
    /// The cell of column `name`.
    pub fn get(&self, name: &str) -> Option<&Cell> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, c)| c)
    }

    /// The text of column `name`, when it is text.
    pub fn text(&self, name: &str) -> Option<&str> {
        match self.get(name) {
            Some(Cell::Text(s)) => Some(s),
            _ => None,
        }
    }

    /// Sets a column, replacing its cell or adding it at the end.
    pub fn set(&mut self, name: &str, cell: Cell) {
        match self.0.iter_mut().find(|(n, _)| n == name) {
            Some((_, c)) => *c = cell,
            None => self.0.push((name.to_string(), cell)),
        }
    }

    /// Adds a column unless one of that name is already there: inputs,
    /// added first, win over a metric of the same name.
    fn add(&mut self, name: String, cell: Cell) {
        if self.get(&name).is_none() {
            self.0.push((name, cell));
        }
    }

    fn flatten(&mut self, prefix: &str, value: &Json) {
        match value {
            Json::Object(map) => {
                for (k, v) in map {
                    let name = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    self.flatten(&name, v);
                }
            }
            Json::Array(items) => {
                for (i, v) in items.iter().enumerate() {
                    self.flatten(&format!("{prefix}[{i}]"), v);
                }
            }
            // Absent and null are one thing in a table: no cell.
            Json::Null => {}
            leaf => self.add(prefix.to_string(), Cell::from_json(leaf)),
        }
    }
}

impl Cell {
    fn from_json(value: &Json) -> Cell {
        match value {
            Json::Null => Cell::Null,
            Json::Bool(b) => Cell::Bool(*b),
            Json::Number(n) => match n.as_i64() {
                Some(i) => Cell::Int(i),
                None => n.as_f64().map_or(Cell::Null, Cell::Float),
            },
            Json::String(s) => Cell::Text(s.clone()),
            other => Cell::Text(other.to_string()),
        }
    }

    /// An axis value: scalars as they are, tables and lists as inline TOML.
    pub fn from_toml(value: &Toml) -> Cell {
        match value {
            Toml::String(s) => Cell::Text(s.clone()),
            Toml::Integer(i) => Cell::Int(*i),
            Toml::Float(f) => Cell::Float(*f),
            Toml::Boolean(b) => Cell::Bool(*b),
            other => Cell::Text(other.to_string()),
        }
    }
}

/// The columns every row starts with: the key and the inputs.
fn inputs(point: &Point, grid: &str) -> Row {
    let mut row = Row::default();
    row.add("run_key".into(), Cell::Text(point.key.clone()));
    row.add("grid".into(), Cell::Text(grid.to_string()));
    row.add("brisk_version".into(), Cell::Text(BRISK_VERSION.into()));
    row.add("seed".into(), Cell::Int(point.seed as i64));
    for (name, value) in &point.inputs {
        row.add(name.clone(), Cell::from_toml(value));
    }
    row
}

/// Sets the columns a stored row shares with `point`'s grid, for a run
/// another grid stored first under the same key.
pub fn relabel(row: &mut Row, point: &Point, grid: &str) {
    for (name, cell) in inputs(point, grid).0 {
        row.set(&name, cell);
    }
}

/// The run row and the flow rows of a run's results (as `--json` gives
/// them).
pub fn rows(point: &Point, grid: &str, results: &Json) -> (Row, Vec<Row>) {
    let mut run = inputs(point, grid);
    let mut flows = Vec::new();
    if let Json::Object(map) = results {
        for (k, v) in map {
            if k == "flows" {
                if let Json::Array(items) = v {
                    for flow in items {
                        let mut row = inputs(point, grid);
                        row.flatten("", flow);
                        flows.push(row);
                    }
                }
            } else {
                run.flatten(k, v);
            }
        }
    }
    run.add("flows".into(), Cell::Int(flows.len() as i64));
    run.add(
        "scenario_toml".into(),
        Cell::Text(point.scenario_toml.clone()),
    );
    (run, flows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flattens_nested_objects_and_lists() {
        let mut row = Row::default();
        let json: Json = serde_json::from_str(
            r#"{"a":{"b":1,"c":[2.5,"x"]},"d":null,"e":true,"f":18446744073709551615}"#,
        )
        .unwrap();
        row.flatten("", &json);
        assert_eq!(row.get("a.b"), Some(&Cell::Int(1)));
        assert_eq!(row.get("a.c[0]"), Some(&Cell::Float(2.5)));
        assert_eq!(row.get("a.c[1]"), Some(&Cell::Text("x".into())));
        assert_eq!(row.get("d"), None);
        assert_eq!(row.get("e"), Some(&Cell::Bool(true)));
        assert_eq!(row.get("f"), Some(&Cell::Float(u64::MAX as f64)));
    }

    #[test]
    fn tables_become_inline_toml() {
        let v: toml::Table = "q = { fifo = { limit_packets = 100 } }".parse().unwrap();
        let Cell::Text(t) = Cell::from_toml(&v["q"]) else {
            panic!("a table is text");
        };
        assert!(
            t.contains("fifo") && t.contains("limit_packets = 100"),
            "{t}"
        );
        assert!(!t.contains('\n'), "{t}");
    }
}
