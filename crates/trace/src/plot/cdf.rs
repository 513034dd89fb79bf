//! Cumulative distribution plots: the whole distribution of a sample set
//! (RTT of legacy vs L4S traffic, frame delays), where tails show.

use super::{
    Frame, LegendEntry, Mark, PlotError, builder, colour, finite_span, no_data, padded_range,
    render, style_mesh,
};
use plotters::prelude::*;

/// At most this many steps of each distribution reach the SVG; beyond it the
/// empirical CDF is sampled at evenly spaced ranks, always keeping the
/// smallest and largest sample.
pub const MAX_STEPS_PER_SET: usize = 1_000;

/// A named set of samples in the x axis' unit.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Samples {
    /// The legend entry.
    pub name: String,
    /// The samples in any order; non-finite ones are left out.
    pub values: Vec<f64>,
}

impl Samples {
    /// A named set of samples.
    pub fn new(name: impl Into<String>, values: Vec<f64>) -> Self {
        Samples {
            name: name.into(),
            values,
        }
    }
}

/// The empirical CDF as a staircase: for each kept sample `v` of rank `i`
/// (0-based, of `n`), a riser from `(v, i/n)` to `(v, (i+1)/n)`.
fn staircase(values: &[f64]) -> Vec<(f64, f64)> {
    let mut sorted: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    if n == 0 {
        return Vec::new();
    }
    let steps = n.min(MAX_STEPS_PER_SET);
    let mut out = Vec::with_capacity(2 * steps);
    let mut lower = 0;
    for k in 1..=steps {
        // Rank of the last sample in this step; the final step ends at n - 1.
        let upper = (k * n).div_ceil(steps) - 1;
        let v = sorted[upper];
        out.push((v, lower as f64 / n as f64));
        out.push((v, (upper + 1) as f64 / n as f64));
        lower = upper + 1;
    }
    out
}

/// One CDF per sample set, y from 0 to 1.
pub fn cdf_chart(frame: &Frame, sets: &[Samples]) -> Result<String, PlotError> {
    let curves: Vec<Vec<(f64, f64)>> = sets.iter().map(|s| staircase(&s.values)).collect();
    let x = padded_range(finite_span(curves.iter().flatten().map(|p| p.0)));
    let entries: Vec<LegendEntry> = sets
        .iter()
        .zip(&curves)
        .enumerate()
        .filter(|(_, (_, c))| !c.is_empty())
        .map(|(i, (s, _))| LegendEntry::new(&s.name, Mark::Line(colour(i))))
        .collect();

    render(frame, &entries, |area| {
        let mut chart = builder(area).build_cartesian_2d(x.clone(), 0.0..1.0)?;
        let mut mesh = chart.configure_mesh();
        style_mesh(&mut mesh, frame);
        mesh.draw()?;
        for (i, curve) in curves.iter().enumerate() {
            let Some(&(first, _)) = curve.first() else {
                continue;
            };
            let c = colour(i);
            // Start on the x axis at the left edge and run out to the right
            // edge at 1, so every curve spans the frame like a CDF should.
            let path = std::iter::once((x.start, 0.0))
                .chain(std::iter::once((first, 0.0)))
                .chain(curve.iter().copied())
                .chain(std::iter::once((x.end, 1.0)));
            chart.draw_series(LineSeries::new(path, c.stroke_width(2)))?;
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
            "RTT distribution",
            Axis::new("RTT", "ms"),
            Axis::new("fraction of packets", ""),
        )
    }

    #[test]
    fn staircase_is_the_empirical_cdf() {
        assert_eq!(
            staircase(&[3.0, 1.0, 2.0]),
            vec![
                (1.0, 0.0),
                (1.0, 1.0 / 3.0),
                (2.0, 1.0 / 3.0),
                (2.0, 2.0 / 3.0),
                (3.0, 2.0 / 3.0),
                (3.0, 1.0)
            ]
        );
        assert!(staircase(&[f64::NAN]).is_empty());
    }

    #[test]
    fn long_sets_are_sampled_but_keep_both_ends() {
        let values: Vec<f64> = (0..100_003).map(|i| i as f64).collect();
        let s = staircase(&values);
        assert_eq!(s.len(), 2 * MAX_STEPS_PER_SET);
        assert_eq!(
            s.first(),
            Some(&(values[values.len() / MAX_STEPS_PER_SET], 0.0))
        );
        assert_eq!(s.last(), Some(&(100_002.0, 1.0)));
        // Monotone in both coordinates.
        assert!(s.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 <= w[1].1));
        // The median sits at the middle value, within one step.
        let median = s.iter().find(|p| p.1 >= 0.5).unwrap().0;
        assert!((median - 50_001.0).abs() <= 101.0, "{median}");
    }

    #[test]
    fn legacy_vs_l4s_renders() {
        let legacy: Vec<f64> = (0..2_000)
            .map(|i| 20.0 + 25.0 * (i as f64 / 2_000.0))
            .collect();
        let l4s: Vec<f64> = (0..2_000)
            .map(|i| 20.0 + 4.0 * (i as f64 / 2_000.0))
            .collect();
        let svg = cdf_chart(
            &frame(),
            &[Samples::new("legacy", legacy), Samples::new("L4S", l4s)],
        )
        .unwrap();
        assert_valid_svg(
            &svg,
            &[
                "RTT distribution",
                "RTT (ms)",
                "fraction of packets",
                "legacy",
                "L4S",
            ],
        );
    }

    #[test]
    fn empty_and_single_sample_render() {
        assert_valid_svg(&cdf_chart(&frame(), &[]).unwrap(), &["no data"]);
        assert_valid_svg(
            &cdf_chart(&frame(), &[Samples::new("none", vec![])]).unwrap(),
            &["no data"],
        );
        let one = cdf_chart(&frame(), &[Samples::new("one", vec![7.0])]).unwrap();
        assert_valid_svg(&one, &["one", "<polyline"]);
        let odd = Samples::new("odd", vec![f64::NAN, f64::INFINITY, -2.0]);
        assert_valid_svg(&cdf_chart(&frame(), &[odd]).unwrap(), &["odd"]);
    }
}
