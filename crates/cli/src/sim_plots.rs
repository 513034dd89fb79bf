//! The figures `brisk sim --out DIR` writes beside its results: delivered
//! bytes, RTT and bottleneck queue delay over time for every flow, and a
//! tcptrace-style time-sequence graph per Brisk flow.

use anyhow::{Context, Result};
use brisk_sim::Run;
use brisk_sim::engine::FlowSeries;
use brisk_sim::flows::AppReport;
use brisk_time::Instant;
use brisk_trace::plot::{Axis, Frame, SeqEvent, line_chart, time_sequence_chart};
use brisk_trace::stats::Series;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Points per line: enough for a smooth figure, and the spikes survive
/// the thinning.
const MAX_POINTS: usize = 4_000;
/// A time-sequence graph draws every event; past this many it shows only
/// the start of the transfer, where slow start and the first losses are.
const MAX_SEQ_EVENTS: usize = 20_000;

/// Writes every figure into `dir`; returns the files written.
pub fn write(dir: &Path, run: &Run) -> Result<Vec<PathBuf>> {
    let series = run.outcome.series();
    let mut written = Vec::new();
    let mut save = |name: String, svg: String| -> Result<()> {
        let path = dir.join(name);
        std::fs::write(&path, svg).with_context(|| format!("cannot write {}", path.display()))?;
        written.push(path);
        Ok(())
    };
    let lines = [
        (
            "delivered-bytes.svg",
            "Bytes delivered to each receiver",
            Axis::new("delivered", "MB"),
            lines_of(&series, |f| {
                f.delivered
                    .iter()
                    .map(|&(t, b)| (t, b as f64 / 1e6))
                    .collect()
            }),
        ),
        (
            "rtt.svg",
            "Round-trip time each flow measured",
            Axis::new("RTT", "ms"),
            lines_of(&series, |f| ms(&f.rtt)),
        ),
        (
            "queue-delay.svg",
            "Time each flow's packets waited in the bottleneck queue",
            Axis::new("queue delay", "ms"),
            lines_of(&series, |f| ms(&f.queue_delay)),
        ),
    ];
    for (file, title, y, lines) in lines {
        let frame = Frame::new(title, Axis::new("time", "s"), y);
        save(file.to_string(), line_chart(&frame, &lines)?)?;
    }
    for (f, report) in series.iter().zip(run.outcome.reports()) {
        if let Some((title, events)) = sequence(f, &report) {
            let frame = Frame::new(
                title,
                Axis::new("time", "s"),
                Axis::new("sequence offset", "bytes"),
            );
            let svg = time_sequence_chart(&frame, &events)?;
            save(format!("time-sequence-{}.svg", file_name(&f.name)), svg)?;
        }
    }
    Ok(written)
}

/// One line per flow that has points.
fn lines_of(
    flows: &[FlowSeries],
    points: impl Fn(&FlowSeries) -> Vec<(Instant, f64)>,
) -> Vec<Series> {
    flows
        .iter()
        .filter_map(|f| {
            let pts = points(f);
            if pts.is_empty() {
                return None;
            }
            let mut s = Series::new(&f.name, "");
            for (t, v) in pts {
                s.push_at(t, v);
            }
            Some(s.downsample(MAX_POINTS))
        })
        .collect()
}

fn ms(points: &[(Instant, Duration)]) -> Vec<(Instant, f64)> {
    points
        .iter()
        .map(|&(t, d)| (t, d.as_secs_f64() * 1e3))
        .collect()
}

/// A Brisk flow's time-sequence events and the graph's title, cut to the
/// first [`MAX_SEQ_EVENTS`].
fn sequence(f: &FlowSeries, report: &AppReport) -> Option<(String, Vec<SeqEvent>)> {
    let seq = &report.transport.as_ref()?.seq;
    if seq.is_empty() {
        return None;
    }
    let title = if seq.len() > MAX_SEQ_EVENTS {
        let until = seq[MAX_SEQ_EVENTS - 1].time_s;
        format!("Time-sequence graph of {} (its first {until:.2} s)", f.name)
    } else {
        format!("Time-sequence graph of {}", f.name)
    };
    Some((title, seq.iter().take(MAX_SEQ_EVENTS).copied().collect()))
}

/// A flow name made safe for a file name.
pub fn file_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}
