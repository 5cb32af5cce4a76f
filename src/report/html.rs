//! The report's small HTML pieces: escaping, numbers for reading, figure cells and section
//! headings.

use std::fmt::Write;

/// Text made safe inside HTML content and quoted attribute values: `<`, `>`, `&`, `"` and
/// `'` escaped.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A number for reading: integers whole, others to four significant digits.
pub(super) fn shown(x: f64) -> String {
    if !x.is_finite() {
        return if x.is_nan() {
            "—".into()
        } else {
            "∞".into()
        };
    }
    if x.fract() == 0.0 && x.abs() < 1e15 {
        return format!("{x:.0}");
    }
    let digits = (3 - x.abs().log10().floor() as i32).clamp(0, 10) as usize;
    let text = format!("{x:.digits$}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

/// A table cell holding one figure.
pub(super) fn figure_cell(name: &str, value: Option<f64>) -> String {
    match value {
        Some(x) => format!(
            "<td class=\"num\" data-figure=\"{}\" data-value=\"{x}\">{}</td>",
            escape(name),
            shown(x)
        ),
        None => format!("<td class=\"num\" data-figure=\"{}\">—</td>", escape(name)),
    }
}

/// Opens a `<section>` with its heading and its one-sentence explanation.
pub(super) fn section(out: &mut String, id: &str, title: &str, explain: &str) {
    let _ = write!(
        out,
        "<section id=\"{id}\"><h2>{}</h2><p class=\"explain\">{}</p>",
        escape(title),
        escape(explain)
    );
}
