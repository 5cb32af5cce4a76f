//! The report's SVG charts, drawn with `plotters`: panels with linear axes, line and point
//! series, and a legend under each panel.

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
}

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
const PANEL_H: u32 = 330;
/// Height of the legend strip under each panel's chart.
const LEGEND_H: u32 = 44;
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
    let (x_pad, y_pad) = ((x1 - x0) * 0.03, (y1 - y0) * 0.05);
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
    let (chart_area, legend_area) = area.split_vertically(PANEL_H - LEGEND_H);
    let ((x0, x1), (y0, y1)) = bounds(panel);
    let x_axis = TickedAxis {
        range: (x0..x1).into(),
        ticks: panel.x_ticks.clone().unwrap_or_default(),
    };
    let mut builder = ChartBuilder::on(&chart_area);
    builder
        .caption(&panel.title, (FONT, 14).into_font().style(FontStyle::Bold))
        .margin(8)
        .x_label_area_size(36)
        .y_label_area_size(52);
    if panel.x_ticks.is_some() {
        let mut chart = builder.build_cartesian_2d(x_axis, y0..y1)?;
        chart
            .configure_mesh()
            .light_line_style(WHITE)
            .bold_line_style(RGBColor(228, 228, 228))
            .x_desc(&panel.x_label)
            .y_desc(&panel.y_label)
            .label_style((FONT, 11))
            .axis_desc_style((FONT, 12))
            .draw()?;
        draw_series(&mut chart, panel)?;
    } else {
        let mut chart = builder.build_cartesian_2d(x0..x1, y0..y1)?;
        chart
            .configure_mesh()
            .light_line_style(WHITE)
            .bold_line_style(RGBColor(228, 228, 228))
            .x_labels(7)
            .y_labels(6)
            .x_label_formatter(&|v| format_tick(*v))
            .y_label_formatter(&|v| format_tick(*v))
            .x_desc(&panel.x_label)
            .y_desc(&panel.y_label)
            .label_style((FONT, 11))
            .axis_desc_style((FONT, 12))
            .draw()?;
        draw_series(&mut chart, panel)?;
    }
    draw_legend(&legend_area, panel)
}

/// The panel's series on a chart.
fn draw_series<DB: DrawingBackend, X: Ranged<ValueType = f64>>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<X, RangedCoordf64>>,
    panel: &Panel,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    for s in &panel.series {
        let c = color(s.color);
        let points = finite(&s.points);
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
            Style::Line | Style::Dashed => {
                chart.draw_series(points.iter().map(|&p| Circle::new(p, 2, c.filled())))?;
            }
        }
    }
    Ok(())
}

/// The legend under a panel: one mark and name per series, wrapping into rows.
fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    panel: &Panel,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let (width, _) = area.dim_in_pixel();
    let (mut x, mut y) = (52i32, 10i32);
    for s in &panel.series {
        let c = color(s.color);
        let item = 30 + 6 * s.name.chars().count() as i32;
        if x + item > width as i32 - 4 && x > 52 {
            x = 52;
            y += 15;
        }
        match s.style {
            Style::Points => area.draw(&Circle::new((x + 9, y), 3, c.filled()))?,
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
            s.name.clone(),
            (x + 24, y - 6),
            (FONT, 11).into_font(),
        ))?;
        x += item;
    }
    Ok(())
}

/// Renders panels in a grid with `columns` columns under an overall title, as an SVG
/// document.
pub fn figure(title: &str, panels: &[Panel], columns: usize) -> String {
    let columns = columns.max(1);
    let rows = panels.len().div_ceil(columns).max(1);
    let (w, h) = (PANEL_W * columns as u32, PANEL_H * rows as u32 + 30);
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (w, h)).into_drawing_area();
        let drawn = (|| {
            root.fill(&WHITE)?;
            let body = root.titled(title, (FONT, 16).into_font().style(FontStyle::Bold))?;
            let cells = body.split_evenly((rows, columns));
            for (panel, cell) in panels.iter().zip(cells.iter()) {
                render_panel(cell, panel)?;
            }
            root.present()
        })();
        if let Err(e) = drawn {
            eprintln!("cannot draw figure '{title}': {e}");
        }
    }
    out
}
