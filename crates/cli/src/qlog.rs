//! qlog files for `--qlog DIR`: one JSON-SEQ trace per connection end,
//! named `<client|server>-<connection id>.sqlog` (the client's first
//! destination connection ID, the same at both ends), so the two traces of
//! one connection sort together and qvis can load them side by side.

use anyhow::{Context, Result};
use brisk_proto::qlog::{
    EventClasses, QlogFactory, QlogSink, QlogStart, QlogWriter, TraceStart, VantageKind,
    VantagePoint,
};
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// Traces into `dir` (created now, so a bad path fails before the run),
/// with `reference_time` from the wall clock at each connection's start.
pub fn files(dir: &Path, classes: EventClasses) -> Result<QlogFactory> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let dir = dir.to_path_buf();
    Ok(QlogFactory(Arc::new(move |s: &QlogStart| {
        let epoch_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64() * 1e3);
        let name = format!("{}-{}", side(s.vantage), s.group_id);
        open(&dir, &name, s, epoch_ms, classes)
    })))
}

/// `client` or `server`.
pub fn side(v: VantageKind) -> &'static str {
    match v {
        VantageKind::Client => "client",
        VantageKind::Server => "server",
        VantageKind::Network => "network",
    }
}

/// Opens `dir/<name>.sqlog` and writes its header; a file that cannot be
/// created is reported and the connection runs untraced.
pub fn open(
    dir: &Path,
    name: &str,
    s: &QlogStart,
    reference_time_ms: f64,
    classes: EventClasses,
) -> Option<Box<dyn QlogSink>> {
    let path: PathBuf = dir.join(format!("{name}.sqlog"));
    let start = TraceStart {
        title: format!("brisk {name}"),
        vantage: VantagePoint::new(s.vantage, "brisk"),
        reference: s.now,
        reference_time_ms,
        group_id: Some(s.group_id.clone()),
        classes,
    };
    let writer = File::create(&path)
        .map_err(anyhow::Error::from)
        .and_then(|f| Ok(QlogWriter::new(BufWriter::new(f), &start)?));
    match writer {
        Ok(w) => Some(Box::new(w)),
        Err(e) => {
            eprintln!("brisk: cannot write qlog {}: {e}", path.display());
            None
        }
    }
}
