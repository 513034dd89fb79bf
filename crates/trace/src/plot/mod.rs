//! SVG plots for reports, rendered to a `String` by plotters' SVG backend.
//!
//! No font files are read: plotters' built-in size estimate lays out text,
//! and the SVG carries `<text font-family="sans-serif">` elements that the
//! viewer renders with its own fonts, so plotting works on a machine with no
//! fonts installed. Every plot has a title, axes labelled with units, a
//! legend in its own column at the right (so it never hides data), and
//! colours from the Tableau 10 palette, distinct hues readable on white. Non-finite values are skipped, empty input gives an empty
//! frame saying "no data", and nothing here panics on odd input.
//!
//! Kinds: [`line`] (series over time), [`cdf`] (distributions),
//! [`tseq`] (tcptrace-style time-sequence graph), [`bars`] (grouped bars
//! with an optional reference curve), [`scatter`] (a point per run and a
//! marked mean per contender, optionally with the x axis reversed).

pub mod bars;
pub mod cdf;
pub mod line;
pub mod scatter;
pub mod tseq;

pub use bars::{BarChart, BarSeries, bar_chart};
pub use cdf::{Samples, cdf_chart};
pub use line::line_chart;
pub use scatter::{PointSet, scatter_chart};
pub use tseq::{SeqEvent, SeqKind, time_sequence_chart};

use plotters::chart::MeshStyle;
use plotters::coord::Shift;
use plotters::coord::ranged1d::Ranged;
use plotters::prelude::*;
use plotters::style::text_anchor;
use std::ops::Range;

/// Report-sized: wide enough for a few seconds of detail, short enough that
/// two fit on a screen.
pub const DEFAULT_WIDTH_PX: u32 = 900;
/// Height of a report-sized figure in pixels.
pub const DEFAULT_HEIGHT_PX: u32 = 420;
/// Below this a frame cannot fit its labels.
const MIN_WIDTH_PX: u32 = 200;
const MIN_HEIGHT_PX: u32 = 150;
/// Above this a side is a mistake, not a figure (and would strain the
/// backend's 32-bit pixel coordinates).
const MAX_SIDE_PX: u32 = 20_000;

const FONT: &str = "sans-serif";
/// Font sizes as plotters takes them; its SVG backend writes `size / 1.24`
/// (so 15 becomes 12.1 px on the page).
const TITLE_FONT_PX: u32 = 22;
const LABEL_FONT_PX: u32 = 15;
const DESC_FONT_PX: u32 = 16;

/// Tableau 10: distinct hues, readable on white.
const PALETTE: [RGBColor; 10] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0xe3, 0x77, 0xc2),
    RGBColor(0x7f, 0x7f, 0x7f),
    RGBColor(0xbc, 0xbd, 0x22),
    RGBColor(0x17, 0xbe, 0xcf),
];

/// The colour of the `i`th series; repeats after ten.
fn colour(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// What an axis measures and in which unit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Axis {
    /// What is measured, e.g. "time" or "RTT".
    pub name: String,
    /// Printed in parentheses after the name; empty for unitless ratios.
    pub unit: String,
}

impl Axis {
    /// An axis; pass "" as the unit for a unitless ratio.
    pub fn new(name: impl Into<String>, unit: impl Into<String>) -> Self {
        Axis {
            name: name.into(),
            unit: unit.into(),
        }
    }

    /// "name (unit)", or the name alone when unitless.
    pub fn label(&self) -> String {
        if self.unit.is_empty() {
            self.name.clone()
        } else {
            format!("{} ({})", self.name, self.unit)
        }
    }
}

/// The parts every plot shares: title, axes and pixel size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// Printed above the plot area.
    pub title: String,
    /// The horizontal axis.
    pub x: Axis,
    /// The vertical axis.
    pub y: Axis,
    /// Width of the SVG in pixels, 200 to 20,000.
    pub width_px: u32,
    /// Height of the SVG in pixels, 150 to 20,000.
    pub height_px: u32,
}

impl Frame {
    /// A report-sized frame ([`DEFAULT_WIDTH_PX`] x [`DEFAULT_HEIGHT_PX`]).
    pub fn new(title: impl Into<String>, x: Axis, y: Axis) -> Self {
        Frame {
            title: title.into(),
            x,
            y,
            width_px: DEFAULT_WIDTH_PX,
            height_px: DEFAULT_HEIGHT_PX,
        }
    }

    /// The same frame at another size; drawing checks the bounds and fails
    /// with [`PlotError::BadSize`] outside them.
    pub fn with_size(self, width_px: u32, height_px: u32) -> Self {
        Frame {
            width_px,
            height_px,
            ..self
        }
    }
}

/// Why a plot could not be drawn.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlotError {
    #[error(
        "plot of {width_px}x{height_px} px: sides must be from {MIN_WIDTH_PX}x{MIN_HEIGHT_PX} to {MAX_SIDE_PX} px"
    )]
    /// A side below the minimum (the labels would not fit) or above 20,000 px.
    BadSize {
        /// The width asked for.
        width_px: u32,
        /// The height asked for.
        height_px: u32,
    },
    /// The SVG backend refused a drawing step; the text is the backend's.
    #[error("drawing failed: {0}")]
    Draw(String),
}

impl<E: std::error::Error + Send + Sync> From<DrawingAreaErrorKind<E>> for PlotError {
    fn from(e: DrawingAreaErrorKind<E>) -> Self {
        PlotError::Draw(e.to_string())
    }
}

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// How a legend entry is drawn beside its name.
#[derive(Debug, Clone, Copy)]
enum Mark {
    Line(RGBColor),
    Dashed(RGBColor),
    Bar(RGBColor),
    Dot(RGBColor),
    Cross(RGBColor),
}

/// One named thing in the legend.
#[derive(Debug, Clone)]
struct LegendEntry {
    name: String,
    mark: Mark,
}

impl LegendEntry {
    fn new(name: &str, mark: Mark) -> Self {
        LegendEntry {
            name: name.to_string(),
            mark,
        }
    }
}

/// Pixels per legend row and per character of a legend name (a generous
/// estimate for the legend's 12 px sans-serif text, so names stay inside
/// their column).
const LEGEND_ROW_PX: i32 = 22;
const LEGEND_CHAR_PX: u32 = 8;
const LEGEND_SWATCH_PX: i32 = 26;
/// The first legend row lines up with the top of the plotting area.
const LEGEND_TOP_PX: i32 = 30;

/// Renders onto a white canvas of the frame's size and returns the SVG.
///
/// The title spans the top; the legend, when there are entries, gets its
/// own column at the right so it never hides data; `draw` gets the rest.
fn render(
    frame: &Frame,
    entries: &[LegendEntry],
    draw: impl FnOnce(&Area) -> Result<(), PlotError>,
) -> Result<String, PlotError> {
    let (width_px, height_px) = (frame.width_px, frame.height_px);
    if width_px < MIN_WIDTH_PX
        || height_px < MIN_HEIGHT_PX
        || width_px > MAX_SIDE_PX
        || height_px > MAX_SIDE_PX
    {
        return Err(PlotError::BadSize {
            width_px,
            height_px,
        });
    }
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width_px, height_px)).into_drawing_area();
        root.fill(&WHITE)?;
        let body = root.titled(&frame.title, (FONT, TITLE_FONT_PX))?;
        if entries.is_empty() {
            draw(&body)?;
        } else {
            let longest = entries
                .iter()
                .map(|e| e.name.chars().count())
                .max()
                .unwrap_or(0);
            let text_px = u32::try_from(longest)
                .unwrap_or(u32::MAX)
                .saturating_mul(LEGEND_CHAR_PX);
            let legend_px = text_px
                .saturating_add(LEGEND_SWATCH_PX as u32 + 24)
                .clamp(90, width_px / 3);
            let (plot, side) = body.split_horizontally(width_px - legend_px);
            draw(&plot)?;
            draw_legend(&side, entries)?;
        }
        root.present()?;
    }
    Ok(svg)
}

/// The legend column: a swatch and a name per row, from the top of the
/// plotting area down.
fn draw_legend(area: &Area, entries: &[LegendEntry]) -> Result<(), PlotError> {
    let text = TextStyle::from((FONT, LABEL_FONT_PX).into_font()).pos(text_anchor::Pos::new(
        text_anchor::HPos::Left,
        text_anchor::VPos::Center,
    ));
    let x0 = 4;
    for (i, e) in entries.iter().enumerate() {
        let y = LEGEND_TOP_PX + i as i32 * LEGEND_ROW_PX;
        let (a, b) = ((x0, y), (x0 + LEGEND_SWATCH_PX - 4, y));
        match e.mark {
            Mark::Line(c) => area.draw(&PathElement::new(vec![a, b], c.stroke_width(3)))?,
            Mark::Dashed(c) => {
                for k in 0..3 {
                    let s = x0 + k * 9;
                    area.draw(&PathElement::new(
                        vec![(s, y), (s + 5, y)],
                        c.stroke_width(2),
                    ))?;
                }
            }
            Mark::Bar(c) => area.draw(&Rectangle::new(
                [(x0 + 4, y - 6), (x0 + 18, y + 6)],
                c.filled(),
            ))?,
            Mark::Dot(c) => area.draw(&Circle::new((x0 + 11, y), 5, c.filled()))?,
            Mark::Cross(c) => area.draw(&Cross::new((x0 + 11, y), 5, c.stroke_width(2)))?,
        }
        area.draw_text(&e.name, &text, (x0 + LEGEND_SWATCH_PX + 4, y))?;
    }
    Ok(())
}

/// A chart builder with the shared margins and label areas.
fn builder<'a, 'b>(area: &'a Area<'b>) -> ChartBuilder<'a, 'b, SVGBackend<'b>> {
    let mut b = ChartBuilder::on(area);
    b.margin(12)
        .margin_top(6)
        .x_label_area_size(48)
        .y_label_area_size(72);
    b
}

/// Applies the shared mesh style: a light grid, labelled axes, short tick
/// labels.
fn style_mesh<X, Y>(mesh: &mut MeshStyle<'_, '_, X, Y, SVGBackend<'_>>, frame: &Frame)
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    mesh.x_desc(frame.x.label())
        .y_desc(frame.y.label())
        .label_style((FONT, LABEL_FONT_PX))
        .axis_desc_style((FONT, DESC_FONT_PX))
        .bold_line_style(BLACK.mix(0.1))
        .max_light_lines(0)
        .axis_style(BLACK.mix(0.6))
        .x_label_formatter(&tick_label)
        .y_label_formatter(&tick_label);
}

/// Writes "no data" in the middle of the plotting area.
fn no_data(root: &Area) -> Result<(), PlotError> {
    let (w, h) = root.dim_in_pixel();
    let grey = BLACK.mix(0.5);
    let style = TextStyle::from((FONT, DESC_FONT_PX).into_font())
        .color(&grey)
        .pos(text_anchor::Pos::new(
            text_anchor::HPos::Center,
            text_anchor::VPos::Center,
        ));
    root.draw_text("no data", &style, (w as i32 / 2, h as i32 / 2))?;
    Ok(())
}

/// The smallest and largest finite values, if any.
fn finite_span(values: impl IntoIterator<Item = f64>) -> Option<(f64, f64)> {
    values
        .into_iter()
        .filter(|v| v.is_finite())
        .fold(None, |acc, v| match acc {
            None => Some((v, v)),
            Some((lo, hi)) => Some((lo.min(v), hi.max(v))),
        })
}

/// An axis range showing `span` with a little air. Zero is included when the
/// data are non-negative and not far from it, so small differences are not
/// drawn as large ones. A degenerate span is widened; none gives `0..1`.
fn value_range(span: Option<(f64, f64)>) -> Range<f64> {
    let Some((mut lo, hi)) = span else {
        return 0.0..1.0;
    };
    if lo >= 0.0 && lo <= hi * 0.5 {
        lo = 0.0;
    }
    let width = hi - lo;
    if width <= f64::EPSILON * hi.abs().max(1.0) {
        let pad = (hi.abs() * 0.1).max(1.0);
        return (lo - pad)..(hi + pad);
    }
    let pad = width * 0.05;
    let lo = if lo == 0.0 { 0.0 } else { lo - pad };
    lo..(hi + pad)
}

/// An axis range showing exactly `span` plus 5% air on both sides, for
/// distributions whose shape matters more than their distance from zero.
fn padded_range(span: Option<(f64, f64)>) -> Range<f64> {
    match span {
        None => 0.0..1.0,
        Some((lo, hi)) if hi - lo <= f64::EPSILON * hi.abs().max(1.0) => {
            let pad = (hi.abs() * 0.1).max(1.0);
            (lo - pad)..(hi + pad)
        }
        Some((lo, hi)) => (lo - (hi - lo) * 0.05)..(hi + (hi - lo) * 0.05),
    }
}

/// A time axis range: exactly the data, widened when degenerate.
fn time_range(span: Option<(f64, f64)>) -> Range<f64> {
    match span {
        None => 0.0..1.0,
        Some((lo, hi)) if hi - lo <= f64::EPSILON * hi.abs().max(1.0) => (lo - 0.5)..(hi + 0.5),
        Some((lo, hi)) => lo..hi,
    }
}

/// A tick label without trailing zeros ("45", "2.5", "0.05"); from 10 000
/// up, with an SI suffix ("12k").
fn tick_label(v: &f64) -> String {
    if v.abs() >= 1e4 {
        return si_label(*v);
    }
    if v.abs() < 1e-9 {
        return "0".to_string();
    }
    let text = format!("{v:.6}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Short tick labels: 1500000 -> "1.5M".
fn si_label(v: f64) -> String {
    let a = v.abs();
    let (scaled, suffix) = if a >= 1e9 {
        (v / 1e9, "G")
    } else if a >= 1e6 {
        (v / 1e6, "M")
    } else if a >= 1e3 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    let text = format!("{scaled:.2}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text}{suffix}")
}

#[cfg(test)]
pub(crate) mod testing {
    //! Checks shared by the plot tests.

    /// Minimal structural checks of an SVG string: it is an svg document,
    /// carries every expected text, and has no NaN coordinates.
    pub(crate) fn assert_valid_svg(svg: &str, texts: &[&str]) {
        assert!(
            svg.starts_with("<svg"),
            "does not start with <svg: {}",
            &svg[..svg.len().min(80)]
        );
        assert!(svg.trim_end().ends_with("</svg>"), "unterminated svg");
        for t in texts {
            assert!(svg.contains(t), "missing text {t:?}");
        }
        assert!(!svg.contains("NaN"), "NaN in svg");
        assert_eq!(svg.matches("<text").count(), svg.matches("</text>").count());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_labels_carry_units() {
        assert_eq!(Axis::new("RTT", "ms").label(), "RTT (ms)");
        assert_eq!(Axis::new("fraction", "").label(), "fraction");
    }

    #[test]
    fn ranges_are_never_degenerate() {
        assert_eq!(value_range(None), 0.0..1.0);
        assert_eq!(value_range(Some((5.0, 5.0))), 4.0..6.0);
        assert_eq!(value_range(Some((0.0, 0.0))), -1.0..1.0);
        assert_eq!(value_range(Some((10.0, 20.0))), 0.0..21.0);
        let r = value_range(Some((100.0, 110.0)));
        assert!(r.start > 99.0 && r.start < 100.0 && r.end > 110.0, "{r:?}");
        let r = value_range(Some((-3.0, -3.0)));
        assert!(r.start < -3.0 && r.end > -3.0);
        assert_eq!(time_range(Some((2.0, 2.0))), 1.5..2.5);
        assert_eq!(padded_range(Some((20.0, 40.0))), 19.0..41.0);
        assert_eq!(padded_range(Some((7.0, 7.0))), 6.0..8.0);
        assert_eq!(padded_range(None), 0.0..1.0);
        assert_eq!(time_range(Some((0.0, 10.0))), 0.0..10.0);
        assert_eq!(
            finite_span([f64::NAN, 3.0, f64::INFINITY, -1.0]),
            Some((-1.0, 3.0))
        );
        assert_eq!(finite_span([f64::NAN]), None);
    }

    #[test]
    fn tick_labels_drop_trailing_zeros() {
        assert_eq!(tick_label(&45.0), "45");
        assert_eq!(tick_label(&2.5), "2.5");
        assert_eq!(tick_label(&(0.1 * 3.0)), "0.3");
        assert_eq!(tick_label(&-0.0), "0");
        assert_eq!(tick_label(&-7.25), "-7.25");
        assert_eq!(tick_label(&9_000.0), "9000");
        assert_eq!(tick_label(&12_000.0), "12k");
    }

    #[test]
    fn si_labels_are_short() {
        assert_eq!(si_label(0.0), "0");
        assert_eq!(si_label(1500.0), "1.5k");
        assert_eq!(si_label(2_000_000.0), "2M");
        assert_eq!(si_label(12.346), "12.35");
        assert_eq!(si_label(3.2e9), "3.2G");
    }

    #[test]
    fn odd_sizes_are_refused_and_long_names_fit() {
        let f = Frame::new("t", Axis::new("x", ""), Axis::new("y", ""));
        for (w, h) in [(10, 10), (900, 0), (u32::MAX, 420), (900, 20_001)] {
            let bad = f.clone().with_size(w, h);
            let err = PlotError::BadSize {
                width_px: w,
                height_px: h,
            };
            assert_eq!(render(&bad, &[], |_| Ok(())), Err(err));
        }
        let long = [LegendEntry::new(
            &"n".repeat(100_000),
            Mark::Line(colour(0)),
        )];
        testing::assert_valid_svg(&render(&f, &long, |_| Ok(())).unwrap(), &["nnnn"]);
    }
}
