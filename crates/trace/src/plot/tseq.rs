//! The tcptrace-style time-sequence graph: what a sender sent and what the
//! receiver acknowledged, over time, in one picture.
//!
//! Each data segment is a vertical tick from its first to its last sequence
//! offset at the time it was sent; retransmissions are red; CE-marked
//! segments carry an orange dot. The cumulative ACK is a green staircase and
//! the receive window's right edge (ACK + advertised window) a gold one
//! above it. Stalls show as flat stretches, losses as red ticks below the
//! frontier, a window limit as ticks pressing against the gold line.
//!
//! The input is a plain list of [`SeqEvent`]s so that the simulator, the
//! transport and a pcap reader can all produce it.

use super::{
    Frame, LegendEntry, Mark, PlotError, builder, finite_span, no_data, padded_range, render,
    si_label, time_range,
};
use plotters::prelude::*;

const DATA: RGBColor = RGBColor(0x1f, 0x3a, 0x93);
const RETRANSMIT: RGBColor = RGBColor(0xd6, 0x27, 0x28);
const CE_MARK: RGBColor = RGBColor(0xff, 0x7f, 0x0e);
const ACK: RGBColor = RGBColor(0x2c, 0xa0, 0x2c);
const WINDOW: RGBColor = RGBColor(0xc9, 0xa2, 0x00);
/// How far above the data the y axis reaches for the receive window, as a
/// fraction of the data's span.
const WINDOW_HEADROOM: f64 = 0.25;
/// Half the width of the cap drawn at each end of a segment tick.
const CAP_PX: i32 = 3;

/// What an event is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeqKind {
    /// A data segment sent for the first time: `start..end` are its bytes.
    Data,
    /// A data segment sent again.
    Retransmit,
    /// An acknowledgement: `start` is the cumulative ACK, `end` the right
    /// edge of the receive window (ACK + advertised window).
    Ack,
}

/// One point of a time-sequence graph. Sequence offsets are bytes relative
/// to the start of the stream (or any base the caller picks).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SeqEvent {
    /// Seconds since the run's start.
    pub time_s: f64,
    /// Data: offset of the first byte. ACK: the cumulative ACK.
    pub start: u64,
    /// Data: offset just past the last byte. ACK: the receive window's
    /// right edge.
    pub end: u64,
    /// Data, retransmission or ACK: what `start` and `end` mean.
    pub kind: SeqKind,
    /// For data, the segment carried (or arrived with) a CE mark; for an
    /// ACK, it echoed congestion (ECE or a grown CE count).
    pub ce: bool,
}

/// Which sequence offsets an event covers on the y axis.
fn extent(e: &SeqEvent) -> [f64; 2] {
    [e.start as f64, e.end.max(e.start) as f64]
}

/// The y range: the data and the cumulative ACK, and the window's edge as
/// far as [`WINDOW_HEADROOM`] of their span above them. A receive window
/// far ahead of the data would otherwise squash the transfer into a thin
/// band at the bottom; its line is clipped at the top instead.
fn seq_range(events: &[SeqEvent]) -> std::ops::Range<f64> {
    let core = finite_span(events.iter().flat_map(|e| match e.kind {
        SeqKind::Ack => [e.start as f64; 2],
        _ => extent(e),
    }));
    let Some((lo, hi)) = core else {
        return padded_range(finite_span(events.iter().flat_map(extent)));
    };
    let ceiling = hi + (hi - lo) * WINDOW_HEADROOM;
    let window = events
        .iter()
        .filter(|e| e.kind == SeqKind::Ack)
        .map(|e| extent(e)[1].min(ceiling));
    padded_range(finite_span(window.chain([lo, hi])))
}

/// The time-sequence graph of `events`, in any order.
pub fn time_sequence_chart(frame: &Frame, events: &[SeqEvent]) -> Result<String, PlotError> {
    let events: Vec<SeqEvent> = {
        let mut v: Vec<SeqEvent> = events
            .iter()
            .copied()
            .filter(|e| e.time_s.is_finite())
            .collect();
        v.sort_by(|a, b| a.time_s.total_cmp(&b.time_s));
        v
    };
    let x = time_range(finite_span(events.iter().map(|e| e.time_s)));
    let y = seq_range(&events);
    let clipped = events
        .iter()
        .any(|e| e.kind == SeqKind::Ack && extent(e)[1] > y.end);
    let has = |k: SeqKind| events.iter().any(|e| e.kind == k);
    let data = |e: &&SeqEvent| e.kind != SeqKind::Ack;
    let mut entries = Vec::new();
    if has(SeqKind::Data) {
        entries.push(LegendEntry::new("data segment", Mark::Line(DATA)));
    }
    if has(SeqKind::Retransmit) {
        entries.push(LegendEntry::new("retransmission", Mark::Cross(RETRANSMIT)));
    }
    if events.iter().filter(data).any(|e| e.ce) {
        entries.push(LegendEntry::new("CE-marked", Mark::Dot(CE_MARK)));
    }
    if has(SeqKind::Ack) {
        entries.push(LegendEntry::new("cumulative ACK", Mark::Line(ACK)));
        entries.push(LegendEntry::new(
            if clipped {
                "receive window (clipped at the top)"
            } else {
                "receive window"
            },
            Mark::Line(WINDOW),
        ));
    }
    if events.iter().any(|e| e.kind == SeqKind::Ack && e.ce) {
        entries.push(LegendEntry::new("ACK echoing CE", Mark::Dot(ACK)));
    }

    render(frame, &entries, |area| {
        let y_end = y.end;
        let mut chart = builder(area).build_cartesian_2d(x.clone(), y.clone())?;
        let y_fmt = |v: &f64| si_label(*v);
        let mut mesh = chart.configure_mesh();
        super::style_mesh(&mut mesh, frame);
        mesh.y_label_formatter(&y_fmt).draw()?;

        // The ACK and window staircases, each extended to the right edge.
        let acks: Vec<&SeqEvent> = events.iter().filter(|e| e.kind == SeqKind::Ack).collect();
        for (pick, c) in [(0, ACK), (1, WINDOW)] {
            let mut path = Vec::with_capacity(2 * acks.len() + 1);
            for e in &acks {
                let v = extent(e)[pick].min(y_end);
                if let Some(&(_, prev)) = path.last() {
                    path.push((e.time_s, prev));
                }
                path.push((e.time_s, v));
            }
            if let Some(&(_, last)) = path.last() {
                path.push((x.end, last));
            }
            chart.draw_series(LineSeries::new(path, c.stroke_width(2)))?;
        }
        chart.draw_series(
            acks.iter()
                .filter(|e| e.ce)
                .map(|e| Circle::new((e.time_s, e.start as f64), 3, ACK.filled())),
        )?;

        // Segment ticks with tcptrace's end caps; retransmissions drawn last
        // so they sit on top.
        for kind in [SeqKind::Data, SeqKind::Retransmit] {
            let (c, width) = if kind == SeqKind::Data {
                (DATA, 1)
            } else {
                (RETRANSMIT, 2)
            };
            let style = c.stroke_width(width);
            for e in events.iter().filter(|e| e.kind == kind) {
                let [lo, hi] = extent(e);
                let cap = || PathElement::new(vec![(-CAP_PX, 0), (CAP_PX, 0)], style);
                chart.plotting_area().draw(&PathElement::new(
                    vec![(e.time_s, lo), (e.time_s, hi)],
                    style,
                ))?;
                chart
                    .plotting_area()
                    .draw(&(EmptyElement::at((e.time_s, lo)) + cap()))?;
                chart
                    .plotting_area()
                    .draw(&(EmptyElement::at((e.time_s, hi)) + cap()))?;
            }
        }
        chart.draw_series(
            events
                .iter()
                .filter(data)
                .filter(|e| e.ce)
                .map(|e| Circle::new((e.time_s, extent(e)[1]), 3, CE_MARK.filled())),
        )?;
        // A cross on each retransmission: a single tick is too short to
        // find at the scale of a whole transfer.
        chart.draw_series(
            events
                .iter()
                .filter(|e| e.kind == SeqKind::Retransmit)
                .map(|e| Cross::new((e.time_s, extent(e)[1]), 5, RETRANSMIT.stroke_width(2))),
        )?;

        if events.is_empty() {
            no_data(area)?;
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::Axis;
    use crate::plot::testing::assert_valid_svg;

    fn frame() -> Frame {
        Frame::new(
            "Time-sequence graph",
            Axis::new("time", "s"),
            Axis::new("sequence offset", "bytes"),
        )
    }

    /// A window-limited transfer with one loss, its fast retransmission and
    /// a CE mark, with ACKs one RTT later.
    fn transfer() -> Vec<SeqEvent> {
        let (mss, rtt_s, rwnd) = (1_448_u64, 0.020, 64 * 1_448_u64);
        let mut out = Vec::new();
        for i in 0..200_u64 {
            let t = i as f64 * 0.0005;
            let lost = i == 60;
            let ce = i % 37 == 0;
            out.push(SeqEvent {
                time_s: t,
                start: i * mss,
                end: (i + 1) * mss,
                kind: SeqKind::Data,
                ce,
            });
            let ack = if (60..63).contains(&i) {
                60 * mss
            } else {
                (i + 1) * mss
            };
            if !lost {
                out.push(SeqEvent {
                    time_s: t + rtt_s,
                    start: ack,
                    end: ack + rwnd,
                    kind: SeqKind::Ack,
                    ce,
                });
            }
        }
        out.push(SeqEvent {
            time_s: 0.052,
            start: 60 * mss,
            end: 61 * mss,
            kind: SeqKind::Retransmit,
            ce: false,
        });
        out
    }

    #[test]
    fn transfer_renders_every_layer() {
        let svg = time_sequence_chart(&frame(), &transfer()).unwrap();
        assert_valid_svg(
            &svg,
            &[
                "Time-sequence graph",
                "time (s)",
                "sequence offset (bytes)",
                "data segment",
                "retransmission",
                "CE-marked",
                "cumulative ACK",
                "receive window",
                "ACK echoing CE",
            ],
        );
        // The retransmission is drawn in its own colour.
        assert!(svg.contains("#D62728"), "no red retransmission");
    }

    #[test]
    fn a_window_far_ahead_is_clipped_so_the_transfer_keeps_the_height() {
        let data_top = 200.0 * 1_448.0;
        let with_window = |ahead: u64| {
            let mut events = transfer();
            for e in events.iter_mut().filter(|e| e.kind == SeqKind::Ack) {
                e.end = e.start + ahead;
            }
            events
        };
        // Ten segments ahead fits within the headroom: drawn whole.
        let near = with_window(10 * 1_448);
        assert!(seq_range(&near).end >= data_top);
        let svg = time_sequence_chart(&frame(), &near).unwrap();
        assert_valid_svg(&svg, &["receive window"]);
        assert!(!svg.contains("clipped"));
        // Ten times the transfer ahead: the axis stops a quarter of the
        // data's span above it and the legend says the line is clipped.
        let far = with_window(2_000 * 1_448);
        let end = seq_range(&far).end;
        assert!(end < data_top * 1.4 && end > data_top * 1.2, "{end}");
        let svg = time_sequence_chart(&frame(), &far).unwrap();
        assert_valid_svg(&svg, &["receive window (clipped at the top)"]);
    }

    #[test]
    fn empty_single_and_odd_events_render() {
        assert_valid_svg(&time_sequence_chart(&frame(), &[]).unwrap(), &["no data"]);
        let one = SeqEvent {
            time_s: 1.0,
            start: 0,
            end: 1_000,
            kind: SeqKind::Data,
            ce: false,
        };
        assert_valid_svg(
            &time_sequence_chart(&frame(), &[one]).unwrap(),
            &["data segment"],
        );
        let weird = [
            SeqEvent {
                time_s: f64::NAN,
                start: 5,
                end: 1,
                kind: SeqKind::Ack,
                ce: true,
            },
            SeqEvent {
                time_s: 2.0,
                start: 10,
                end: 3,
                kind: SeqKind::Ack,
                ce: false,
            },
            SeqEvent {
                time_s: 2.0,
                start: u64::MAX - 1,
                end: u64::MAX,
                kind: SeqKind::Retransmit,
                ce: true,
            },
        ];
        assert_valid_svg(
            &time_sequence_chart(&frame(), &weird).unwrap(),
            &["retransmission"],
        );
    }
}
