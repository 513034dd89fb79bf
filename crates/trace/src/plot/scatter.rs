//! Scatter plots of one point per run and a marked mean per contender, as
//! Pantheon draws its comparisons: throughput against a delay percentile,
//! with the delay axis reversed so that "better" is up and to the right.

use super::{
    Frame, LegendEntry, Mark, PlotError, builder, colour, finite_span, no_data, padded_range,
    render, style_mesh, tick_label, value_range,
};
use plotters::prelude::*;
use plotters::style::text_anchor;

/// One contender's runs, as `(x, y)` points in the frame's units.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PointSet {
    /// The legend entry, also written beside the mean.
    pub name: String,
    /// One point per run; points with a non-finite coordinate are left out.
    pub points: Vec<(f64, f64)>,
}

impl PointSet {
    /// A named set of points.
    pub fn new(name: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        PointSet {
            name: name.into(),
            points,
        }
    }

    fn finite(&self) -> impl Iterator<Item = (f64, f64)> + '_ {
        self.points
            .iter()
            .copied()
            .filter(|(x, y)| x.is_finite() && y.is_finite())
    }

    /// The mean of the finite points, if any.
    pub fn mean(&self) -> Option<(f64, f64)> {
        let (n, sx, sy) = self
            .finite()
            .fold((0usize, 0.0, 0.0), |(n, sx, sy), (x, y)| {
                (n + 1, sx + x, sy + y)
            });
        (n > 0).then(|| (sx / n as f64, sy / n as f64))
    }
}

/// Each set's runs as small dots and its mean as a large dot labelled with
/// its name; the y axis starts at zero. With `reverse_x` the x axis grows to the left (Pantheon's
/// delay axis: lower delay, further right).
pub fn scatter_chart(
    frame: &Frame,
    sets: &[PointSet],
    reverse_x: bool,
) -> Result<String, PlotError> {
    let sign = if reverse_x { -1.0 } else { 1.0 };
    let xs = finite_span(sets.iter().flat_map(|s| s.finite().map(|p| p.0)));
    // Plotted as sign * x, so a reversed axis is an ordinary one of -x.
    let x = padded_range(xs.map(|(lo, hi)| if reverse_x { (-hi, -lo) } else { (lo, hi) }));
    // The y axis starts at zero (or below, for negative data), so that
    // close throughputs are not drawn as far apart.
    let y = value_range(
        finite_span(sets.iter().flat_map(|s| s.finite().map(|p| p.1)))
            .map(|(lo, hi)| (lo.min(0.0), hi)),
    );
    let entries: Vec<LegendEntry> = sets
        .iter()
        .enumerate()
        .filter(|(_, s)| s.mean().is_some())
        .map(|(i, s)| LegendEntry::new(&s.name, Mark::Dot(colour(i))))
        .collect();
    let unsign = move |v: &f64| tick_label(&(sign * v));

    render(frame, &entries, |area| {
        let mut chart = builder(area).build_cartesian_2d(x.clone(), y.clone())?;
        let mut mesh = chart.configure_mesh();
        style_mesh(&mut mesh, frame);
        mesh.x_label_formatter(&unsign);
        mesh.draw()?;
        let label = TextStyle::from((super::FONT, super::LABEL_FONT_PX).into_font()).pos(
            text_anchor::Pos::new(text_anchor::HPos::Left, text_anchor::VPos::Center),
        );
        for (i, set) in sets.iter().enumerate() {
            let c = colour(i);
            chart.draw_series(
                set.finite()
                    .map(|(px, py)| Circle::new((sign * px, py), 3, c.mix(0.45).filled())),
            )?;
            if let Some((mx, my)) = set.mean() {
                chart.draw_series(std::iter::once(Circle::new((sign * mx, my), 7, c.filled())))?;
                chart.draw_series(std::iter::once(
                    EmptyElement::at((sign * mx, my))
                        + Text::new(set.name.clone(), (10, 0), label.clone()),
                ))?;
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
            "T-Mobile LTE",
            Axis::new("95th percentile one-way delay", "ms"),
            Axis::new("throughput", "Mbit/s"),
        )
    }

    #[test]
    fn the_mean_leaves_out_non_finite_points() {
        let s = PointSet::new("cubic", vec![(10.0, 2.0), (f64::NAN, 9.0), (30.0, 4.0)]);
        assert_eq!(s.mean(), Some((20.0, 3.0)));
        assert_eq!(
            PointSet::new("none", vec![(f64::INFINITY, 1.0)]).mean(),
            None
        );
    }

    #[test]
    fn a_reversed_axis_labels_the_true_values() {
        let sets = [
            PointSet::new("cubic", vec![(120.0, 8.0), (140.0, 9.0)]),
            PointSet::new("bbr", vec![(60.0, 7.5)]),
        ];
        let svg = scatter_chart(&frame(), &sets, true).expect("draws");
        assert_valid_svg(
            &svg,
            &["T-Mobile LTE", "cubic", "bbr", "throughput (Mbit/s)"],
        );
        // Tick labels show delays as positive numbers, never "-120".
        assert!(
            !svg.contains(">-"),
            "a negative tick label: the axis shows -x"
        );
        // The lower-delay scheme's mean sits further right.
        // The x of the first text element reading `name`: the label beside
        // the mean (the legend comes after the plot).
        let x_of = |name: &str| -> f64 {
            let element = svg
                .split("<text")
                .skip(1)
                .find(|e| {
                    let content = e.split_once('>').map_or("", |(_, rest)| rest);
                    content.split("</text>").next().map(str::trim) == Some(name)
                })
                .expect("label drawn");
            let x = element.split("x=\"").nth(1).expect("x attribute");
            x[..x.find('"').expect("closing quote")]
                .parse()
                .expect("a number")
        };
        assert!(
            x_of("bbr") > x_of("cubic"),
            "bbr {} cubic {}",
            x_of("bbr"),
            x_of("cubic")
        );
    }

    #[test]
    fn no_points_says_no_data() {
        let svg = scatter_chart(&frame(), &[PointSet::new("x", vec![])], false).expect("draws");
        assert_valid_svg(&svg, &["no data"]);
    }
}
