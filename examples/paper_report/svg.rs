//! Minimal hand-written SVG charts: panels with linear axes, line and point series, legend.

use std::fmt::Write;

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
    /// CSS color.
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
    /// Optional explicit x tick positions (with labels); otherwise nice linear ticks.
    pub x_ticks: Option<Vec<(f64, String)>>,
    /// Force the y axis to start at zero.
    pub y_from_zero: bool,
}

const PANEL_W: f64 = 460.0;
const PANEL_H: f64 = 330.0;
const MARGIN_L: f64 = 62.0;
const MARGIN_R: f64 = 16.0;
const MARGIN_T: f64 = 34.0;
const MARGIN_B: f64 = 80.0;

/// Escapes text for SVG.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// "Nice" tick step for a range split into about `n` parts.
fn nice_step(range: f64, n: f64) -> f64 {
    let raw = (range / n).max(1e-12);
    let magnitude = 10f64.powf(raw.log10().floor());
    let residual = raw / magnitude;
    let nice = if residual < 1.5 {
        1.0
    } else if residual < 3.0 {
        2.0
    } else if residual < 7.0 {
        5.0
    } else {
        10.0
    };
    nice * magnitude
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

/// Draws one panel with its top-left corner at (`ox`, `oy`).
fn render_panel(out: &mut String, panel: &Panel, ox: f64, oy: f64) {
    let points: Vec<(f64, f64)> = panel
        .series
        .iter()
        .flat_map(|s| s.points.iter().copied())
        .filter(|(x, y)| x.is_finite() && y.is_finite())
        .collect();
    let (mut x0, mut x1) = points
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| {
            (a.min(p.0), b.max(p.0))
        });
    if let Some(ticks) = &panel.x_ticks {
        for (x, _) in ticks {
            x0 = x0.min(*x);
            x1 = x1.max(*x);
        }
    }
    let (mut y0, mut y1) = points
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| {
            (a.min(p.1), b.max(p.1))
        });
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
    let y_step = nice_step(y1 - y0, 5.0);
    y0 = (y0 / y_step).floor() * y_step;
    y1 = (y1 / y_step).ceil() * y_step;
    let pad = (x1 - x0) * 0.03;
    let (x0, x1) = (x0 - pad, x1 + pad);

    let left = ox + MARGIN_L;
    let top = oy + MARGIN_T;
    let width = PANEL_W - MARGIN_L - MARGIN_R;
    let height = PANEL_H - MARGIN_T - MARGIN_B;
    let sx = |x: f64| left + (x - x0) / (x1 - x0) * width;
    let sy = |y: f64| top + height - (y - y0) / (y1 - y0) * height;

    let _ = writeln!(
        out,
        r#"<text x="{:.1}" y="{:.1}" font-size="14" font-weight="bold" text-anchor="middle">{}</text>"#,
        left + width / 2.0,
        oy + 20.0,
        escape(&panel.title)
    );
    let _ = writeln!(
        out,
        r##"<rect x="{left:.1}" y="{top:.1}" width="{width:.1}" height="{height:.1}" fill="none" stroke="#888"/>"##
    );
    // y grid and ticks
    let mut y = y0;
    while y <= y1 + y_step * 1e-6 {
        let py = sy(y);
        let _ = writeln!(
            out,
            r##"<line x1="{left:.1}" y1="{py:.1}" x2="{:.1}" y2="{py:.1}" stroke="#e4e4e4"/><text x="{:.1}" y="{:.1}" font-size="11" text-anchor="end">{}</text>"##,
            left + width,
            left - 5.0,
            py + 4.0,
            format_tick(y)
        );
        y += y_step;
    }
    // x ticks
    let ticks: Vec<(f64, String)> = match &panel.x_ticks {
        Some(t) => t.clone(),
        None => {
            let step = nice_step(x1 - x0, 6.0);
            let mut t = Vec::new();
            let mut x = (x0 / step).ceil() * step;
            while x <= x1 {
                t.push((x, format_tick(x)));
                x += step;
            }
            t
        }
    };
    for (x, label) in &ticks {
        let px = sx(*x);
        let _ = writeln!(
            out,
            r##"<line x1="{px:.1}" y1="{:.1}" x2="{px:.1}" y2="{:.1}" stroke="#888"/><text x="{px:.1}" y="{:.1}" font-size="11" text-anchor="middle">{}</text>"##,
            top + height,
            top + height + 4.0,
            top + height + 16.0,
            escape(label)
        );
    }
    let _ = writeln!(
        out,
        r#"<text x="{:.1}" y="{:.1}" font-size="12" text-anchor="middle">{}</text>"#,
        left + width / 2.0,
        top + height + 36.0,
        escape(&panel.x_label)
    );
    let _ = writeln!(
        out,
        r#"<text transform="translate({:.1},{:.1}) rotate(-90)" font-size="12" text-anchor="middle">{}</text>"#,
        ox + 16.0,
        top + height / 2.0,
        escape(&panel.y_label)
    );
    // series
    for s in &panel.series {
        let pts: Vec<(f64, f64)> = s
            .points
            .iter()
            .copied()
            .filter(|(x, y)| x.is_finite() && y.is_finite())
            .collect();
        let markers_only = matches!(s.style, Style::Points | Style::Rings);
        if !markers_only && pts.len() > 1 {
            let path: Vec<String> = pts
                .iter()
                .map(|(x, y)| format!("{:.1},{:.1}", sx(*x), sy(*y)))
                .collect();
            let dash = if s.style == Style::Dashed {
                r#" stroke-dasharray="6,4""#
            } else {
                ""
            };
            let _ = writeln!(
                out,
                r#"<polyline points="{}" fill="none" stroke="{}" stroke-width="2"{dash}/>"#,
                path.join(" "),
                s.color
            );
        }
        for (x, y) in &pts {
            let (cx, cy) = (sx(*x), sy(*y));
            let _ = match s.style {
                Style::Rings => writeln!(
                    out,
                    r#"<circle cx="{cx:.1}" cy="{cy:.1}" r="3.6" fill="none" stroke="{}" stroke-width="1.3"/>"#,
                    s.color
                ),
                Style::Points => writeln!(
                    out,
                    r#"<circle cx="{cx:.1}" cy="{cy:.1}" r="2.6" fill="{}" fill-opacity="0.8"/>"#,
                    s.color
                ),
                _ => writeln!(
                    out,
                    r#"<circle cx="{cx:.1}" cy="{cy:.1}" r="2.2" fill="{}"/>"#,
                    s.color
                ),
            };
        }
    }
    // legend, below the x axis label, wrapping into rows
    let (mut lx, mut ly) = (left, top + height + 56.0);
    for s in &panel.series {
        let item_width = 30.0 + 6.0 * s.name.chars().count() as f64;
        if lx + item_width > ox + PANEL_W - 4.0 && lx > left {
            lx = left;
            ly += 15.0;
        }
        let dash = if s.style == Style::Dashed {
            r#" stroke-dasharray="5,3""#
        } else {
            ""
        };
        if s.style == Style::Points {
            let _ = writeln!(
                out,
                r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{}"/>"#,
                lx + 9.0,
                ly - 4.0,
                s.color
            );
        } else if s.style == Style::Rings {
            let _ = writeln!(
                out,
                r#"<circle cx="{:.1}" cy="{:.1}" r="3.6" fill="none" stroke="{}" stroke-width="1.3"/>"#,
                lx + 9.0,
                ly - 4.0,
                s.color
            );
        } else {
            let _ = writeln!(
                out,
                r#"<line x1="{lx:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{}" stroke-width="2"{dash}/>"#,
                ly - 4.0,
                lx + 18.0,
                ly - 4.0,
                s.color
            );
        }
        let _ = writeln!(
            out,
            r#"<text x="{:.1}" y="{ly:.1}" font-size="11">{}</text>"#,
            lx + 24.0,
            escape(&s.name)
        );
        lx += item_width;
    }
}

/// Renders panels in a grid with `columns` columns and an overall title.
pub fn figure(title: &str, panels: &[Panel], columns: usize) -> String {
    let columns = columns.max(1);
    let rows = panels.len().div_ceil(columns);
    let w = PANEL_W * columns as f64;
    let h = PANEL_H * rows as f64 + 30.0;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w:.0}" height="{h:.0}" viewBox="0 0 {w:.0} {h:.0}" font-family="Helvetica, Arial, sans-serif">"#
    );
    let _ = writeln!(out, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        out,
        r#"<text x="{:.1}" y="20" font-size="16" font-weight="bold" text-anchor="middle">{}</text>"#,
        w / 2.0,
        escape(title)
    );
    for (i, panel) in panels.iter().enumerate() {
        let ox = PANEL_W * (i % columns) as f64;
        let oy = 30.0 + PANEL_H * (i / columns) as f64;
        render_panel(&mut out, panel, ox, oy);
    }
    out.push_str("</svg>\n");
    out
}
