//! The results store: a directory of Parquet files, `runs/` with one row
//! per run and `flows/` with one row per flow, each sweep adding a part
//! file to each. pandas (`read_parquet`), DuckDB (`read_parquet('runs/*.parquet',
//! union_by_name = true)`) and R (arrow) read the directories as they are;
//! see docs/SWEEPS.md for why Parquet.
//!
//! A run is finished when its key is in `runs/`. The flows part is
//! written before the runs part, and each part appears whole (written
//! aside, then linked in under a name no other part has), so a sweep
//! stopped midway leaves no run marked finished without its flows.

use crate::error::SweepError;
use crate::row::{Cell, Row};
use parquet::basic::{LogicalType, Repetition, Type as Physical};
use parquet::data_type::{BoolType, ByteArray, ByteArrayType, DoubleType, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::file::writer::SerializedFileWriter;
use parquet::record::Field;
use parquet::schema::types::Type;
use std::collections::BTreeSet;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where a grid's results go unless told otherwise:
/// `brisk-sweep-out/<grid name>` under the working directory.
pub fn default_root(grid: &crate::Grid) -> PathBuf {
    Path::new("brisk-sweep-out").join(&grid.name)
}

/// The two tables of the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Table {
    Runs,
    Flows,
}

impl Table {
    /// The table's directory name.
    pub fn dir_name(self) -> &'static str {
        match self {
            Table::Runs => "runs",
            Table::Flows => "flows",
        }
    }
}

/// A results store on disk.
#[derive(Debug, Clone)]
pub struct Store {
    root: PathBuf,
}

impl Store {
    /// Opens the store at `root`. Its directories are made by the first
    /// write, so a grid that fails to expand leaves nothing behind.
    pub fn open(root: &Path) -> Result<Store, SweepError> {
        let store = Store {
            root: root.to_path_buf(),
        };
        if root.exists() && !root.is_dir() {
            return Err(store.error(root, "exists and is not a directory"));
        }
        Ok(store)
    }

    /// The store's directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The directory of `table`.
    pub fn dir(&self, table: Table) -> PathBuf {
        self.root.join(table.dir_name())
    }

    fn error(&self, path: &Path, e: impl std::fmt::Display) -> SweepError {
        SweepError::Store {
            path: path.to_path_buf(),
            message: e.to_string(),
        }
    }

    /// The part files of `table`, sorted by name.
    pub fn parts(&self, table: Table) -> Result<Vec<PathBuf>, SweepError> {
        let dir = self.dir(table);
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            // Nothing written yet.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(self.error(&dir, e)),
        };
        let mut parts = Vec::new();
        for entry in entries {
            let path = entry.map_err(|e| self.error(&dir, e))?.path();
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
            if name.is_some_and(|n| n.starts_with("part-") && n.ends_with(".parquet")) {
                parts.push(path);
            }
        }
        parts.sort();
        Ok(parts)
    }

    /// Every row of `table`, part by part.
    pub fn read(&self, table: Table) -> Result<Vec<Row>, SweepError> {
        let mut rows = Vec::new();
        for part in self.parts(table)? {
            let file = File::open(&part).map_err(|e| self.error(&part, e))?;
            let reader = SerializedFileReader::new(file).map_err(|e| self.error(&part, e))?;
            let iter = reader
                .get_row_iter(None)
                .map_err(|e| self.error(&part, e))?;
            for record in iter {
                let record = record.map_err(|e| self.error(&part, e))?;
                let row = record
                    .get_column_iter()
                    .map(|(name, field)| (name.clone(), cell_of(field)))
                    .filter(|(_, cell)| *cell != Cell::Null)
                    .collect();
                rows.push(Row(row));
            }
        }
        Ok(rows)
    }

    /// The keys of the finished runs.
    pub fn finished(&self) -> Result<BTreeSet<String>, SweepError> {
        Ok(self
            .read(Table::Runs)?
            .iter()
            .filter_map(|r| r.text("run_key").map(str::to_string))
            .collect())
    }

    /// Adds `rows` to `table` as a new part file; none when `rows` is
    /// empty. Returns the part's path.
    pub fn append(&self, table: Table, rows: &[Row]) -> Result<Option<PathBuf>, SweepError> {
        if rows.is_empty() {
            return Ok(None);
        }
        let dir = self.dir(table);
        std::fs::create_dir_all(&dir).map_err(|e| self.error(&dir, e))?;
        let aside = dir.join(format!(".writing-{}.parquet", std::process::id()));
        write_parquet(&aside, rows).map_err(|m| self.error(&aside, m))?;
        let mut n = self.parts(table)?.len() + 1;
        loop {
            let part = dir.join(format!("part-{n:05}.parquet"));
            // A hard link never replaces a file: two sweeps writing at once
            // each get a name of their own.
            match std::fs::hard_link(&aside, &part) {
                Ok(()) => {
                    std::fs::remove_file(&aside).map_err(|e| self.error(&aside, e))?;
                    return Ok(Some(part));
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => n += 1,
                Err(e) => return Err(self.error(&part, e)),
            }
        }
    }
}

fn cell_of(field: &Field) -> Cell {
    match field {
        Field::Null => Cell::Null,
        Field::Bool(b) => Cell::Bool(*b),
        Field::Long(i) => Cell::Int(*i),
        Field::Int(i) => Cell::Int(i64::from(*i)),
        Field::Double(f) => Cell::Float(*f),
        Field::Float(f) => Cell::Float(f64::from(*f)),
        Field::Str(s) => Cell::Text(s.clone()),
        other => Cell::Text(other.to_string()),
    }
}

/// A column's Parquet type, from the cells it holds: whole numbers stay
/// integers, integers beside fractions become doubles, anything mixed
/// becomes text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Bool,
    Int,
    Float,
    Text,
}

fn kind_of<'a>(cells: impl Iterator<Item = &'a Cell>) -> Kind {
    let mut kind = None;
    for cell in cells {
        let k = match cell {
            Cell::Null => continue,
            Cell::Bool(_) => Kind::Bool,
            Cell::Int(_) => Kind::Int,
            Cell::Float(_) => Kind::Float,
            Cell::Text(_) => Kind::Text,
        };
        kind = Some(match (kind, k) {
            (None, k) => k,
            (Some(a), b) if a == b => a,
            (Some(Kind::Int), Kind::Float) | (Some(Kind::Float), Kind::Int) => Kind::Float,
            _ => Kind::Text,
        });
    }
    kind.unwrap_or(Kind::Text)
}

fn text_of(cell: &Cell) -> String {
    match cell {
        Cell::Null => String::new(),
        Cell::Bool(b) => b.to_string(),
        Cell::Int(i) => i.to_string(),
        Cell::Float(f) => f.to_string(),
        Cell::Text(s) => s.clone(),
    }
}

/// Writes `rows` as one row group; the columns are the union of the rows'
/// columns in first-seen order, absent cells null.
fn write_parquet(path: &Path, rows: &[Row]) -> Result<(), String> {
    let mut names: Vec<&str> = Vec::new();
    for row in rows {
        for (name, _) in &row.0 {
            if !names.contains(&name.as_str()) {
                names.push(name);
            }
        }
    }
    let null = Cell::Null;
    let column =
        |name: &str| -> Vec<&Cell> { rows.iter().map(|r| r.get(name).unwrap_or(&null)).collect() };
    let mut fields = Vec::with_capacity(names.len());
    let mut kinds = Vec::with_capacity(names.len());
    for name in &names {
        let kind = kind_of(column(name).into_iter());
        let builder = match kind {
            Kind::Bool => Type::primitive_type_builder(name, Physical::BOOLEAN),
            Kind::Int => Type::primitive_type_builder(name, Physical::INT64),
            Kind::Float => Type::primitive_type_builder(name, Physical::DOUBLE),
            Kind::Text => Type::primitive_type_builder(name, Physical::BYTE_ARRAY)
                .with_logical_type(Some(LogicalType::String)),
        };
        let field = builder
            .with_repetition(Repetition::OPTIONAL)
            .build()
            .map_err(|e| e.to_string())?;
        fields.push(Arc::new(field));
        kinds.push(kind);
    }
    let schema = Type::group_type_builder("brisk_sweep")
        .with_fields(fields)
        .build()
        .map_err(|e| e.to_string())?;
    let props = WriterProperties::builder()
        .set_compression(parquet::basic::Compression::SNAPPY)
        .build();
    let file = File::create(path).map_err(|e| e.to_string())?;
    let mut writer = SerializedFileWriter::new(file, Arc::new(schema), Arc::new(props))
        .map_err(|e| e.to_string())?;
    let mut group = writer.next_row_group().map_err(|e| e.to_string())?;
    for (name, kind) in names.iter().zip(&kinds) {
        let cells = column(name);
        let defs: Vec<i16> = cells
            .iter()
            .map(|c| i16::from(!matches!(c, Cell::Null)))
            .collect();
        let present = cells.iter().filter(|c| !matches!(c, Cell::Null));
        let mut col = group
            .next_column()
            .map_err(|e| e.to_string())?
            .ok_or("the writer has fewer columns than the schema")?;
        let written = match kind {
            Kind::Bool => {
                let v: Vec<bool> = present.map(|c| matches!(c, Cell::Bool(true))).collect();
                col.typed::<BoolType>().write_batch(&v, Some(&defs), None)
            }
            Kind::Int => {
                let v: Vec<i64> = present
                    .map(|c| if let Cell::Int(i) = c { *i } else { 0 })
                    .collect();
                col.typed::<Int64Type>().write_batch(&v, Some(&defs), None)
            }
            Kind::Float => {
                let v: Vec<f64> = present
                    .map(|c| match c {
                        Cell::Int(i) => *i as f64,
                        Cell::Float(f) => *f,
                        _ => f64::NAN,
                    })
                    .collect();
                col.typed::<DoubleType>().write_batch(&v, Some(&defs), None)
            }
            Kind::Text => {
                let v: Vec<ByteArray> = present
                    .map(|c| ByteArray::from(text_of(c).into_bytes()))
                    .collect();
                col.typed::<ByteArrayType>()
                    .write_batch(&v, Some(&defs), None)
            }
        };
        written.map_err(|e| e.to_string())?;
        col.close().map_err(|e| e.to_string())?;
    }
    group.close().map_err(|e| e.to_string())?;
    writer.close().map_err(|e| e.to_string())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(cells: &[(&str, Cell)]) -> Row {
        Row(cells
            .iter()
            .map(|(n, c)| (n.to_string(), c.clone()))
            .collect())
    }

    #[test]
    fn rows_round_trip_through_parts() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let first = vec![
            row(&[
                ("run_key", Cell::Text("a".into())),
                ("x", Cell::Int(3)),
                ("ok", Cell::Bool(true)),
            ]),
            row(&[
                ("run_key", Cell::Text("b".into())),
                ("x", Cell::Float(2.5)),
                ("y", Cell::Text("q".into())),
            ]),
        ];
        store.append(Table::Runs, &first).unwrap();
        let second = vec![row(&[("run_key", Cell::Text("c".into()))])];
        store.append(Table::Runs, &second).unwrap();
        assert_eq!(store.parts(Table::Runs).unwrap().len(), 2);
        let back = store.read(Table::Runs).unwrap();
        assert_eq!(back.len(), 3);
        // An integer beside a fraction is stored as a double.
        assert_eq!(back[0].get("x"), Some(&Cell::Float(3.0)));
        assert_eq!(back[0].get("y"), None);
        assert_eq!(back[1].get("y"), Some(&Cell::Text("q".into())));
        assert_eq!(back[0].get("ok"), Some(&Cell::Bool(true)));
        assert_eq!(back[1].get("ok"), None);
        let keys: Vec<_> = store.finished().unwrap().into_iter().collect();
        assert_eq!(keys, ["a", "b", "c"]);
        assert_eq!(store.append(Table::Flows, &[]).unwrap(), None);
    }

    #[test]
    fn a_store_is_made_on_its_first_write() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("new");
        let store = Store::open(&root).unwrap();
        assert!(store.finished().unwrap().is_empty());
        assert!(
            !root.exists(),
            "opening and reading must not create the store"
        );
        store
            .append(Table::Runs, &[row(&[("run_key", Cell::Text("a".into()))])])
            .unwrap();
        assert_eq!(store.parts(Table::Runs).unwrap().len(), 1);
    }

    #[test]
    fn a_file_in_the_stores_place_is_refused() {
        let file = tempfile::NamedTempFile::new().unwrap();
        let err = Store::open(file.path()).unwrap_err().to_string();
        assert!(err.contains("not a directory"), "{err}");
    }
}
