//! The report's error bars on differentially private figures, from public values only:
//! for a release whose counts carry discrete Laplace noise (its `noise_scale` metadata),
//! the exact 95 % interval of the noise on a sum of 1, 10, 100 and 1,000 released counts
//! (`dp_noise_interval`, docs/METHODS.md §4.5); for a release with interval means, each
//! mean with its 95 % interval (§1.15).

use std::fmt::Write;

use super::html::{escape, shown};
use super::Subject;
use crate::mechanism::noise::sum_noise;

/// How many released counts a sum in the table adds up.
const CELLS: [u64; 4] = [1, 10, 100, 1_000];

/// Writes the error bars, if the release has any noisy figure.
pub fn error_bars(out: &mut String, subject: &Subject<'_>) {
    let scale = subject
        .output
        .metadata
        .iter()
        .find(|(k, _)| k == "noise_scale")
        .and_then(|(_, v)| v.parse::<f64>().ok());
    let means = subject.output.interval_means.as_ref();
    if scale.is_none() && means.is_none_or(|m| m.means.is_empty()) {
        return;
    }
    out.push_str("<h3>Error bars</h3>");
    if let Some(scale) = scale {
        let _ = write!(
            out,
            "<p class=\"explain\">Every released count carries independent discrete Laplace noise of scale {} (the public <code>noise_scale</code>). A count, or a sum of released counts (a marginal, any GROUP BY of the release), lies within ± the half-width below of the true one with probability 95 % (exact, <code>dp_noise_interval</code>); counts clamped at 0 only ever rose.</p><table><tr><th>counts summed</th><th>95 % half-width</th><th>standard deviation</th></tr>",
            shown(scale)
        );
        for cells in CELLS {
            match sum_noise(scale, cells, 0.95) {
                Ok(noise) => {
                    let _ = write!(
                        out,
                        "<tr><td class=\"num\">{cells}</td><td class=\"num\" data-figure=\"noise_half_width:{cells}\" data-value=\"{}\">± {}</td><td class=\"num\">{}</td></tr>",
                        noise.half_width,
                        noise.half_width,
                        shown(noise.standard_deviation)
                    );
                }
                Err(e) => {
                    let _ = write!(
                        out,
                        "<tr><td class=\"num\">{cells}</td><td colspan=\"2\">{}</td></tr>",
                        escape(&e.to_string())
                    );
                }
            }
        }
        out.push_str("</table>");
    }
    if let Some(means) = means.filter(|m| !m.means.is_empty()) {
        out.push_str("<p class=\"explain\">The interval means (<code>anonymize_interval_means</code>): each generalized numeric value's noisy mean, and an interval that holds the true mean of the records under it with probability at least 95 % (from the noisy count and sum and their public noise scales).</p><table><tr><th>column</th><th>label</th><th>mean</th><th>95 % interval</th></tr>");
        for m in &means.means {
            let _ = write!(
                out,
                "<tr><td>{}</td><td>{}</td><td class=\"num\" data-figure=\"interval_mean:{}:{}\" data-value=\"{}\">{}</td><td class=\"num\">{} – {}</td></tr>",
                escape(&m.column),
                escape(&m.label),
                escape(&m.column),
                escape(&m.label),
                m.mean,
                shown(m.mean),
                shown(m.mean_low),
                shown(m.mean_high)
            );
        }
        out.push_str("</table>");
    }
}
