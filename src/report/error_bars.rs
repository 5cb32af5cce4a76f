//! The report's error bars on differentially private figures, from public values only:
//! for a release whose counts carry discrete Laplace noise (its `noise_scale` metadata),
//! the exact 95 % interval of the noise on a sum of 1, 10, 100 and 1,000 released counts
//! (`dp_noise_interval`, docs/METHODS.md §4.5); for a release with interval means, each
//! mean with its 95 % interval (§1.15); for a sampled and thresholded release (SafePub:
//! its `beta` and `k`), the source's rows behind its smallest, median and largest released
//! cell and behind all of them, with their 95 % intervals (`sample_count_interval`, §2.14).

use std::fmt::Write;

use super::html::{escape, shown};
use super::Subject;
use crate::mechanism::noise::sum_noise;
use crate::privacy::sample_counts::count_interval;

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
    let sampled = sampling(subject);
    if scale.is_none() && means.is_none_or(|m| m.means.is_empty()) && sampled.is_none() {
        return;
    }
    out.push_str("<h3>Error bars</h3>");
    if let Some((beta, k)) = sampled {
        sample_intervals(out, subject, beta, k);
    }
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

/// The public `beta` (the probability each record was sampled with) and `k` (the sampled
/// records a cell needed to be released) of a release whose metadata has both (SafePub's).
fn sampling(subject: &Subject<'_>) -> Option<(f64, u64)> {
    let value = |key: &str| {
        subject
            .output
            .metadata
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
    };
    Some((value("beta")?.parse().ok()?, value("k")?.parse().ok()?))
}

/// The released cells' sizes (the released histogram's entries: a class with one
/// informative value), smallest first.
fn cell_sizes(subject: &Subject<'_>) -> Vec<u64> {
    let mut sizes: Vec<u64> = subject
        .output
        .rows
        .histogram()
        .counts
        .iter()
        .copied()
        .filter(|&n| n > 0)
        .collect();
    sizes.sort_unstable();
    sizes
}

/// SafePub's counts with their intervals.
fn sample_intervals(out: &mut String, subject: &Subject<'_>, beta: f64, k: u64) {
    let sizes = cell_sizes(subject);
    let _ = write!(
        out,
        "<p class=\"explain\">Each source record was kept with probability β = {} and a released cell (a distinct released row) was kept only if at least k = {k} of its sampled records fell in it. So c released rows over m cells stand for about c / β source records; the interval holds that number with probability at least 95 % given that the cells were released (<code>sample_count_interval(c, m, β, k)</code>; conservative, from public values only).</p>",
        shown(beta)
    );
    if sizes.is_empty() {
        out.push_str("<p>No cell was released.</p>");
        return;
    }
    out.push_str("<table><tr><th>released rows</th><th>rows</th><th>cells</th><th>source records (c / β)</th><th>95 % interval</th></tr>");
    let total: u64 = sizes.iter().sum();
    let rows = [
        ("smallest", sizes[0], 1),
        ("median", sizes[sizes.len() / 2], 1),
        ("largest", sizes[sizes.len() - 1], 1),
        ("all", total, sizes.len() as u64),
    ];
    for (name, count, cells) in rows {
        let what = match name {
            "all" => "all released rows".to_string(),
            _ => format!("the {name} cell"),
        };
        match count_interval(count, cells, beta, k, 0.95) {
            Some(found) => {
                let _ = write!(
                    out,
                    "<tr><td>{what}</td><td class=\"num\">{count}</td><td class=\"num\">{cells}</td><td class=\"num\">{}</td><td class=\"num\" data-figure=\"sample_interval:{name}\" data-value=\"{}\" data-high=\"{}\">{} – {}</td></tr>",
                    shown(found.estimate),
                    found.low,
                    found.high,
                    found.low,
                    found.high
                );
            }
            None => {
                let _ = write!(
                    out,
                    "<tr><td>{what}</td><td class=\"num\">{count}</td><td class=\"num\">{cells}</td><td colspan=\"2\">no interval (fewer than k rows per cell)</td></tr>"
                );
            }
        }
    }
    out.push_str("</table>");
}
