//! SVG charts drawn with `plotters`, for `anonymize_report()` and the paper report: panels
//! with linear axes, line, point and bar series, and one legend for the whole figure under
//! its panels. Colours come from the Okabe-Ito palette ([`PALETTE`]), which readers with
//! any common colour-vision deficiency can tell apart.

use plotters::coord::ranged1d::{KeyPointHint, Ranged, ValueFormatter};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

/// How a series is drawn.
#[derive(Clone, Copy, PartialEq)]
pub enum Style {
    /// Solid line with dots.
    Line,
    /// Dashed line with dots.
    Dashed,
    /// Dots only.
    Points,
    /// Rings only (stay visible over dots of another series).
    Rings,
    /// Large dots with a black outline: the one point a panel is about.
    Marked,
    /// Bars from zero; the bar series of a panel stand side by side around each x.
    Bars,
}

/// The Okabe-Ito colours (blue, orange, bluish green, vermillion, reddish purple, sky blue,
/// yellow, grey), distinguishable with any common colour-vision deficiency.
pub const PALETTE: [&str; 8] = [
    "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#999999",
];

/// One data series.
pub struct Series {
    /// Legend label.
    pub name: String,
    /// Colour as `#rrggbb`.
    pub color: &'static str,
    /// Line, dashed line, dots or rings.
    pub style: Style,
    /// (x, y) data; non-finite points are skipped.
    pub points: Vec<(f64, f64)>,
}

/// One panel of a figure.
pub struct Panel {
    /// Panel title.
    pub title: String,
    /// x axis label.
    pub x_label: String,
    /// y axis label.
    pub y_label: String,
    /// Data series.
    pub series: Vec<Series>,
    /// Optional explicit x tick positions (with labels); otherwise linear ticks.
    pub x_ticks: Option<Vec<(f64, String)>>,
    /// Force the y axis to start at zero.
    pub y_from_zero: bool,
}

const PANEL_W: u32 = 460;
const PANEL_H: u32 = 300;
/// Height of one legend row.
const LEGEND_ROW: i32 = 16;
/// Width of a legend item besides its text (the mark and the gaps).
const LEGEND_MARK: i32 = 34;
/// Estimated width of one character of the legend's 11 px font.
const LEGEND_CHAR: f64 = 6.2;
const FONT: &str = "sans-serif";

/// `#rrggbb` as a colour (black when malformed).
fn color(hex: &str) -> RGBColor {
    let byte = |i: usize| {
        hex.get(i..i + 2)
            .and_then(|h| u8::from_str_radix(h, 16).ok())
            .unwrap_or(0)
    };
    RGBColor(byte(1), byte(3), byte(5))
}

/// An x axis whose ticks are exactly the given positions, labelled as given.
#[derive(Clone)]
struct TickedAxis {
    range: RangedCoordf64,
    ticks: Vec<(f64, String)>,
}

impl Ranged for TickedAxis {
    type FormatOption = plotters::coord::ranged1d::NoDefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.range.map(value, limit)
    }

    fn key_points<Hint: KeyPointHint>(&self, _hint: Hint) -> Vec<f64> {
        self.ticks.iter().map(|t| t.0).collect()
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.range.range()
    }
}

impl ValueFormatter<f64> for TickedAxis {
    fn format_ext(&self, value: &f64) -> String {
        self.ticks
            .iter()
            .find(|t| (t.0 - value).abs() <= 1e-9 * (1.0 + value.abs()))
            .map_or_else(|| format_tick(*value), |t| t.1.clone())
    }
}

/// About six evenly spaced ticks at round values ("nice" steps of 1, 2 or 5 × 10^n).
fn linear_ticks(x0: f64, x1: f64) -> Vec<(f64, String)> {
    let raw = ((x1 - x0) / 6.0).max(1e-12);
    let magnitude = 10f64.powf(raw.log10().floor());
    let step = magnitude
        * match raw / magnitude {
            r if r < 1.5 => 1.0,
            r if r < 3.0 => 2.0,
            r if r < 7.0 => 5.0,
            _ => 10.0,
        };
    let first = (x0 / step).ceil() as i64;
    let last = (x1 / step).floor() as i64;
    (first..=last)
        .map(|i| {
            let x = i as f64 * step;
            (x, format_tick(x))
        })
        .collect()
}

/// Short tick label.
fn format_tick(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v.abs() >= 100.0 || (v.fract() == 0.0 && v.abs() >= 1.0) {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 {
        format!("{v:.1}")
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// The finite points of every series.
fn finite(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    points
        .iter()
        .copied()
        .filter(|(x, y)| x.is_finite() && y.is_finite())
        .collect()
}

/// The axes' ranges of a panel: the data (and explicit ticks), padded.
fn bounds(panel: &Panel) -> ((f64, f64), (f64, f64)) {
    let points: Vec<(f64, f64)> = panel
        .series
        .iter()
        .flat_map(|s| finite(&s.points))
        .collect();
    let fold = |f: fn(&(f64, f64)) -> f64| {
        points
            .iter()
            .map(f)
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
                (a.min(v), b.max(v))
            })
    };
    let (mut x0, mut x1) = fold(|p| p.0);
    let (mut y0, mut y1) = fold(|p| p.1);
    for (x, _) in panel.x_ticks.iter().flatten() {
        x0 = x0.min(*x);
        x1 = x1.max(*x);
    }
    if !x0.is_finite() {
        (x0, x1, y0, y1) = (0.0, 1.0, 0.0, 1.0);
    }
    if panel.y_from_zero {
        y0 = y0.min(0.0);
    }
    if x1 <= x0 {
        x1 = x0 + 1.0;
    }
    if y1 <= y0 {
        y1 = y0 + 1.0;
    }
    let bars = panel.series.iter().any(|s| s.style == Style::Bars);
    let x_pad = if bars { 0.5 } else { (x1 - x0) * 0.03 };
    let y_pad = (y1 - y0) * 0.05;
    let y0 = if panel.y_from_zero && y0 >= 0.0 {
        y0
    } else {
        y0 - y_pad
    };
    ((x0 - x_pad, x1 + x_pad), (y0, y1 + y_pad))
}

/// Draws one panel into `area`.
fn render_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    panel: &Panel,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let ((x0, x1), (y0, y1)) = bounds(panel);
    let x_axis = TickedAxis {
        range: (x0..x1).into(),
        ticks: panel
            .x_ticks
            .clone()
            .unwrap_or_else(|| linear_ticks(x0, x1)),
    };
    let mut builder = ChartBuilder::on(area);
    builder
        .caption(&panel.title, (FONT, 14).into_font().style(FontStyle::Bold))
        .margin(8)
        .x_label_area_size(36)
        .y_label_area_size(52);
    let mut chart = builder.build_cartesian_2d(x_axis, y0..y1)?;
    chart
        .configure_mesh()
        .light_line_style(WHITE)
        .bold_line_style(RGBColor(228, 228, 228))
        .y_labels(6)
        .y_label_formatter(&|v| format_tick(*v))
        .x_desc(&panel.x_label)
        .y_desc(&panel.y_label)
        .label_style((FONT, 11))
        .axis_desc_style((FONT, 12))
        .draw()?;
    draw_series(&mut chart, panel)?;
    Ok(())
}

/// The panel's series on a chart.
fn draw_series<DB: DrawingBackend, X: Ranged<ValueType = f64>>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<X, RangedCoordf64>>,
    panel: &Panel,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let bar_series = panel
        .series
        .iter()
        .filter(|s| s.style == Style::Bars)
        .count();
    let mut bar_index = 0;
    for s in &panel.series {
        let c = color(s.color);
        let points = finite(&s.points);
        if s.style == Style::Bars {
            // Side by side within 0.8 of the unit around each x.
            let width = 0.8 / bar_series as f64;
            let left = -0.4 + width * bar_index as f64;
            bar_index += 1;
            chart.draw_series(points.iter().map(|&(x, y)| {
                Rectangle::new([(x + left, 0.0), (x + left + width, y)], c.filled())
            }))?;
            continue;
        }
        match s.style {
            Style::Line if points.len() > 1 => {
                chart.draw_series(LineSeries::new(points.clone(), c.stroke_width(2)))?;
            }
            Style::Dashed if points.len() > 1 => {
                chart.draw_series(DashedLineSeries::new(
                    points.clone(),
                    6,
                    4,
                    c.stroke_width(2),
                ))?;
            }
            _ => {}
        }
        match s.style {
            Style::Rings => {
                chart.draw_series(points.iter().map(|&p| Circle::new(p, 4, c.stroke_width(1))))?;
            }
            Style::Points => {
                chart.draw_series(
                    points
                        .iter()
                        .map(|&p| Circle::new(p, 3, c.mix(0.8).filled())),
                )?;
            }
            Style::Marked => {
                chart.draw_series(points.iter().map(|&p| Circle::new(p, 6, c.filled())))?;
                chart.draw_series(
                    points
                        .iter()
                        .map(|&p| Circle::new(p, 6, BLACK.stroke_width(1))),
                )?;
            }
            Style::Line | Style::Dashed => {
                chart.draw_series(points.iter().map(|&p| Circle::new(p, 2, c.filled())))?;
            }
            Style::Bars => {}
        }
    }
    Ok(())
}

/// One legend entry per series name, in order of first appearance over the panels; a name
/// longer than a row of `width` pixels is shortened with an ellipsis.
fn legend_entries(panels: &[Panel], width: i32) -> Vec<(String, &'static str, Style)> {
    let fits = ((width - 24 - LEGEND_MARK) as f64 / LEGEND_CHAR)
        .floor()
        .max(4.0) as usize;
    let mut entries: Vec<(String, &'static str, Style)> = Vec::new();
    for s in panels.iter().flat_map(|p| &p.series) {
        let name = if s.name.chars().count() > fits {
            let short: String = s.name.chars().take(fits - 1).collect();
            format!("{}…", short.trim_end())
        } else {
            s.name.clone()
        };
        if !entries.iter().any(|e| e.0 == name) {
            entries.push((name, s.color, s.style));
        }
    }
    entries
}

/// Where each legend entry goes in a strip `width` wide: `(x, row)`, items left to right,
/// a new row when the next does not fit.
fn legend_layout(entries: &[(String, &'static str, Style)], width: i32) -> Vec<(i32, i32)> {
    let (mut x, mut row) = (12, 0);
    entries
        .iter()
        .map(|(name, _, _)| {
            let item = LEGEND_MARK + (LEGEND_CHAR * name.chars().count() as f64).ceil() as i32;
            if x + item > width - 12 && x > 12 {
                x = 12;
                row += 1;
            }
            let at = (x, row);
            x += item;
            at
        })
        .collect()
}

/// The figure's legend: one mark and name per entry.
fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    entries: &[(String, &'static str, Style)],
    layout: &[(i32, i32)],
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    for ((name, hex, style), &(x, row)) in entries.iter().zip(layout) {
        let c = color(hex);
        let y = 10 + row * LEGEND_ROW;
        match style {
            Style::Points => area.draw(&Circle::new((x + 9, y), 3, c.filled()))?,
            Style::Marked => {
                area.draw(&Circle::new((x + 9, y), 5, c.filled()))?;
                area.draw(&Circle::new((x + 9, y), 5, BLACK.stroke_width(1)))?;
            }
            Style::Bars => area.draw(&Rectangle::new(
                [(x + 3, y - 5), (x + 15, y + 5)],
                c.filled(),
            ))?,
            Style::Rings => area.draw(&Circle::new((x + 9, y), 4, c.stroke_width(1)))?,
            Style::Line => area.draw(&PathElement::new(
                vec![(x, y), (x + 18, y)],
                c.stroke_width(2),
            ))?,
            Style::Dashed => {
                for (a, b) in [(0, 5), (8, 13), (16, 18)] {
                    area.draw(&PathElement::new(
                        vec![(x + a, y), (x + b, y)],
                        c.stroke_width(2),
                    ))?;
                }
            }
        }
        area.draw(&Text::new(
            name.clone(),
            (x + 24, y - 6),
            (FONT, 11).into_font(),
        ))?;
    }
    Ok(())
}

/// Renders panels in a grid with `columns` columns under an overall title (none when
/// empty), as an SVG document.
pub fn figure(title: &str, panels: &[Panel], columns: usize) -> std::io::Result<String> {
    figure_sized(title, panels, columns, (PANEL_W, PANEL_H))
}

/// [`figure`] with panels of `(width, height)` pixels.
pub fn figure_sized(
    title: &str,
    panels: &[Panel],
    columns: usize,
    (panel_w, panel_h): (u32, u32),
) -> std::io::Result<String> {
    let columns = columns.max(1);
    let rows = panels.len().div_ceil(columns).max(1);
    let w = panel_w * columns as u32;
    let entries = legend_entries(panels, w as i32);
    let layout = legend_layout(&entries, w as i32);
    let legend_rows = layout.last().map_or(0, |l| l.1 + 1);
    let legend_h = (legend_rows * LEGEND_ROW + 8) as u32;
    let charts_h = panel_h * rows as u32 + 30;
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (w, charts_h + legend_h)).into_drawing_area();
        let drawn = (|| {
            root.fill(&WHITE)?;
            let (charts, legend) = root.split_vertically(charts_h);
            let body = if title.is_empty() {
                charts
            } else {
                charts.titled(title, (FONT, 16).into_font().style(FontStyle::Bold))?
            };
            let cells = body.split_evenly((rows, columns));
            for (panel, cell) in panels.iter().zip(cells.iter()) {
                render_panel(cell, panel)?;
            }
            draw_legend(&legend, &entries, &layout)?;
            root.present()
        })();
        if let Err(e) = drawn {
            return Err(std::io::Error::other(format!(
                "cannot draw figure '{title}': {e}"
            )));
        }
    }
    Ok(out)
}
