//! Line charts of time series: RTT, rate, queue delay over time, one line
//! per scenario or flow.

use super::{
    Frame, LegendEntry, Mark, PlotError, builder, colour, finite_span, no_data, render, style_mesh,
    time_range, value_range,
};
use crate::stats::Series;
use plotters::prelude::*;

/// At most this many points of a series reach the SVG; longer series are
/// thinned by [`Series::downsample`], which keeps every spike.
pub const MAX_POINTS_PER_SERIES: usize = 2_000;
/// Series this short also get a dot per sample, so single samples show.
const DOTS_MAX_POINTS: usize = 60;

/// One line per series, x in seconds, in the order given.
pub fn line_chart(frame: &Frame, series: &[Series]) -> Result<String, PlotError> {
    let thinned: Vec<Series> = series
        .iter()
        .map(|s| s.downsample(MAX_POINTS_PER_SERIES))
        .collect();
    let points = || thinned.iter().flat_map(|s| s.points.iter());
    let x = time_range(finite_span(points().map(|p| p.0)));
    let y = value_range(finite_span(points().map(|p| p.1)));
    let entries: Vec<LegendEntry> = thinned
        .iter()
        .enumerate()
        .filter(|(_, s)| !s.points.is_empty())
        .map(|(i, s)| LegendEntry::new(&s.name, Mark::Line(colour(i))))
        .collect();

    render(frame, &entries, |area| {
        let mut chart = builder(area).build_cartesian_2d(x, y)?;
        let mut mesh = chart.configure_mesh();
        style_mesh(&mut mesh, frame);
        mesh.draw()?;
        for (i, s) in thinned.iter().enumerate() {
            let c = colour(i);
            chart.draw_series(LineSeries::new(s.points.iter().copied(), c.stroke_width(2)))?;
            if s.points.len() <= DOTS_MAX_POINTS {
                chart.draw_series(s.points.iter().map(|&p| Circle::new(p, 3, c.filled())))?;
            }
        }
        if entries.is_empty() {
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
            "RTT over time",
            Axis::new("time", "s"),
            Axis::new("RTT", "ms"),
        )
    }

    #[test]
    fn two_scenarios_render_with_title_axes_and_legend() {
        let mut legacy = Series::new("FIFO (legacy)", "ms");
        let mut l4s = Series::new("DualQ (L4S)", "ms");
        for i in 0..5_000 {
            let t = i as f64 * 0.002;
            legacy.push(t, 20.0 + 25.0 * ((t * 3.0).sin().abs()));
            l4s.push(t, 20.0 + 4.0 * ((t * 7.0).sin().abs()));
        }
        let svg = line_chart(&frame(), &[legacy, l4s]).unwrap();
        assert_valid_svg(
            &svg,
            &[
                "RTT over time",
                "time (s)",
                "RTT (ms)",
                "FIFO (legacy)",
                "DualQ (L4S)",
            ],
        );
        // Thinned to a bounded size: two polylines of at most 2000 points.
        assert!(svg.len() < 200_000, "{} bytes", svg.len());
    }

    #[test]
    fn empty_and_single_point_inputs_render() {
        let svg = line_chart(&frame(), &[]).unwrap();
        assert_valid_svg(&svg, &["RTT over time", "no data"]);
        let svg = line_chart(&frame(), &[Series::new("nothing", "ms")]).unwrap();
        assert_valid_svg(&svg, &["no data"]);
        let mut one = Series::new("one", "ms");
        one.push(1.0, 25.0);
        let svg = line_chart(&frame(), &[one]).unwrap();
        assert_valid_svg(&svg, &["one", "<circle"]);
    }

    #[test]
    fn non_finite_values_are_skipped() {
        let mut s = Series::new("gappy", "ms");
        for (t, v) in [
            (0.0, 1.0),
            (1.0, f64::NAN),
            (f64::INFINITY, 2.0),
            (2.0, f64::NEG_INFINITY),
            (3.0, 4.0),
        ] {
            s.push(t, v);
        }
        assert_valid_svg(&line_chart(&frame(), &[s]).unwrap(), &["gappy"]);
    }
}
