//! Grouped bar charts: one group per condition (a loss rate, a network
//! profile), one bar per contender (a congestion controller), and an
//! optional reference curve across the groups, such as the Mathis et al.
//! throughput bound for the same loss rates.

use super::{
    Frame, LegendEntry, Mark, PlotError, builder, colour, finite_span, no_data, render, style_mesh,
    value_range,
};
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::prelude::*;
use std::ops::Range;

/// The reference curve's colour: near-black, distinct from every bar.
const REFERENCE: RGBColor = RGBColor(0x33, 0x33, 0x33);
/// The fraction of a group's slot its bars fill; the rest separates groups.
const GROUP_FILL: f64 = 0.8;
/// The fraction of a bar's slot it fills, leaving a hairline between bars.
const BAR_FILL: f64 = 0.9;

/// The x axis of a bar chart: positions `-0.5..n - 0.5` whose ticks and
/// labels sit at the category centres `0..n`, thinned evenly when there are
/// more categories than room for labels.
struct CategoryAxis {
    categories: usize,
}

impl Ranged for CategoryAxis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let Range { start, end } = self.range();
        let fraction = (value - start) / (end - start);
        limit.0 + (fraction * f64::from(limit.1 - limit.0)).round() as i32
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() || hint.max_num_points() == 0 {
            return Vec::new();
        }
        let step = self.categories.div_ceil(hint.max_num_points()).max(1);
        (0..self.categories)
            .step_by(step)
            .map(|i| i as f64)
            .collect()
    }

    fn range(&self) -> Range<f64> {
        -0.5..self.categories.max(1) as f64 - 0.5
    }
}

/// One contender's values, one per category (missing or non-finite values
/// draw no bar).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BarSeries {
    /// The legend entry.
    pub name: String,
    /// One value per category, in the y axis' unit; a missing or
    /// non-finite value leaves a gap.
    pub values: Vec<f64>,
}

impl BarSeries {
    /// A contender's row of values.
    pub fn new(name: impl Into<String>, values: Vec<f64>) -> Self {
        BarSeries {
            name: name.into(),
            values,
        }
    }
}

/// The data of a grouped bar chart.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BarChart {
    /// Group labels along the x axis, e.g. "0%", "1%", "5%".
    pub categories: Vec<String>,
    /// The contenders, one bar each per group, in legend order.
    pub series: Vec<BarSeries>,
    /// Drawn as a dashed line through the group centres.
    pub reference: Option<BarSeries>,
}

/// Grouped bars from zero, categories in the order given.
pub fn bar_chart(frame: &Frame, data: &BarChart) -> Result<String, PlotError> {
    let n = data.categories.len();
    let m = data.series.len().max(1);
    let in_range = |s: &BarSeries| s.values.iter().copied().take(n).collect::<Vec<f64>>();
    let all = data.series.iter().chain(&data.reference).flat_map(in_range);
    let y = value_range(finite_span(all.chain(std::iter::once(0.0))));
    let x = CategoryAxis { categories: n };
    let has_values = |s: &BarSeries| in_range(s).iter().any(|v| v.is_finite());
    let mut entries: Vec<LegendEntry> = data
        .series
        .iter()
        .enumerate()
        .filter(|(_, s)| has_values(s))
        .map(|(i, s)| LegendEntry::new(&s.name, Mark::Bar(colour(i))))
        .collect();
    if let Some(r) = data.reference.as_ref().filter(|r| has_values(r)) {
        entries.push(LegendEntry::new(&r.name, Mark::Dashed(REFERENCE)));
    }

    render(frame, &entries, |area| {
        let mut chart = builder(area).build_cartesian_2d(x, y)?;
        let category = |v: &f64| {
            let i = v.round();
            if (v - i).abs() < 1e-6 && i >= 0.0 {
                data.categories.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        };
        let mut mesh = chart.configure_mesh();
        style_mesh(&mut mesh, frame);
        mesh.disable_x_mesh().x_label_formatter(&category).draw()?;

        let slot = GROUP_FILL / m as f64;
        for (j, s) in data.series.iter().enumerate() {
            let c = colour(j);
            let bars = in_range(s)
                .into_iter()
                .enumerate()
                .filter(|(_, v)| v.is_finite())
                .map(|(i, v)| {
                    let centre = i as f64 - GROUP_FILL / 2.0 + slot * (j as f64 + 0.5);
                    let half = slot * BAR_FILL / 2.0;
                    Rectangle::new([(centre - half, 0.0), (centre + half, v)], c.filled())
                });
            chart.draw_series(bars)?;
        }
        if let Some(r) = &data.reference {
            let points: Vec<(f64, f64)> = in_range(r)
                .into_iter()
                .enumerate()
                .filter(|(_, v)| v.is_finite())
                .map(|(i, v)| (i as f64, v))
                .collect();
            chart.draw_series(DashedLineSeries::new(
                points.iter().copied(),
                7,
                4,
                REFERENCE.stroke_width(2),
            ))?;
            chart.draw_series(
                points
                    .iter()
                    .map(|&p| Circle::new(p, 3, REFERENCE.filled())),
            )?;
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
            "Utilization under random loss",
            Axis::new("packet loss", "%"),
            Axis::new("link utilization", "%"),
        )
    }

    fn utilization() -> BarChart {
        BarChart {
            categories: ["0", "0.5", "1", "2", "5"].map(String::from).to_vec(),
            series: vec![
                BarSeries::new("Reno", vec![99.0, 81.0, 70.0, 58.0, 45.0]),
                BarSeries::new("CUBIC", vec![99.0, 88.0, 79.0, 66.0, 52.0]),
                BarSeries::new("Prague", vec![98.0, 90.0, 83.0, 70.0, 55.0]),
            ],
            reference: Some(BarSeries::new(
                "Mathis bound",
                vec![100.0, 95.0, 80.0, 57.0, 36.0],
            )),
        }
    }

    #[test]
    fn grouped_bars_with_reference_render() {
        let svg = bar_chart(&frame(), &utilization()).unwrap();
        assert_valid_svg(
            &svg,
            &[
                "Utilization under random loss",
                "packet loss (%)",
                "link utilization (%)",
                "Reno",
                "CUBIC",
                "Prague",
                "Mathis bound",
                ">\n0.5\n<",
            ],
        );
        // 15 bars plus the background and the legend swatches.
        assert!(
            svg.matches("<rect").count() >= 15 + 3,
            "{}",
            svg.matches("<rect").count()
        );
    }

    #[test]
    fn empty_ragged_and_odd_inputs_render() {
        assert_valid_svg(
            &bar_chart(&frame(), &BarChart::default()).unwrap(),
            &["no data"],
        );
        let ragged = BarChart {
            categories: vec!["a".into(), "b".into()],
            series: vec![
                BarSeries::new("short", vec![1.0]),
                BarSeries::new("long", vec![1.0, 2.0, 3.0, 4.0]),
                BarSeries::new("nan", vec![f64::NAN, f64::INFINITY]),
            ],
            reference: Some(BarSeries::new("ref", vec![])),
        };
        let svg = bar_chart(&frame(), &ragged).unwrap();
        assert_valid_svg(&svg, &["short", "long"]);
        assert!(
            !svg.contains(">\nnan\n<") && !svg.contains(">\nref\n<"),
            "empty series in legend"
        );
        let negative = BarChart {
            categories: vec!["x".into()],
            series: vec![BarSeries::new("delta", vec![-3.0])],
            reference: None,
        };
        assert_valid_svg(&bar_chart(&frame(), &negative).unwrap(), &["delta"]);
        let no_categories = BarChart {
            categories: vec![],
            ..utilization()
        };
        assert_valid_svg(&bar_chart(&frame(), &no_categories).unwrap(), &["no data"]);
    }
}
