//! The report's charts as SVG documents: class sizes, each column's distribution before
//! and after, and the search over the generalization lattice.

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Float64Type};
use datafusion::common::{DataFusionError, Result};

use super::bins::{Binner, Marginals};
use super::gather::ClassSizes;
use super::svg::{figure_sized, Panel, Series, Style, PALETTE};

/// Colour of the input's series.
const INPUT: &str = PALETTE[0];
/// Colour of the release's series.
const RELEASE: &str = PALETTE[1];
/// Colour of the chosen node.
const CHOSEN: &str = PALETTE[3];
/// Most x labels on one axis.
const MAX_LABELS: usize = 14;

/// Upper bounds of the class-size bins and their labels.
pub const SIZE_BINS: [(u64, &str); 9] = [
    (1, "1"),
    (2, "2"),
    (4, "3–4"),
    (9, "5–9"),
    (19, "10–19"),
    (49, "20–49"),
    (99, "50–99"),
    (999, "100–999"),
    (u64::MAX, "≥1000"),
];

fn svg_error(e: std::io::Error) -> DataFusionError {
    DataFusionError::Execution(format!("anonymize_report(): {e}"))
}

/// Tick labels at the bins' centres, thinned to at most [`MAX_LABELS`].
fn ticks(labels: &[String]) -> Vec<(f64, String)> {
    let step = labels.len().div_ceil(MAX_LABELS).max(1);
    labels
        .iter()
        .enumerate()
        .filter(|(i, _)| i % step == 0)
        .map(|(i, l)| (i as f64, shorten(l)))
        .collect()
}

fn shorten(label: &str) -> String {
    if label.chars().count() > 14 {
        let short: String = label.chars().take(13).collect();
        format!("{short}…")
    } else {
        label.to_string()
    }
}

/// The share of records (percent) in each class-size bin.
pub fn size_shares(sizes: &ClassSizes, total: u64) -> Vec<f64> {
    let mut records = vec![0u64; SIZE_BINS.len()];
    for &(size, _, r) in sizes {
        let bin = SIZE_BINS
            .iter()
            .position(|&(upper, _)| size <= upper)
            .unwrap_or(SIZE_BINS.len() - 1);
        records[bin] += r;
    }
    records
        .iter()
        .map(|&r| percent(r as f64, total as f64))
        .collect()
}

fn percent(part: f64, total: f64) -> f64 {
    if total > 0.0 {
        100.0 * part / total
    } else {
        0.0
    }
}

/// Records by the size of their class, input next to release (suppressed records in their
/// own bar).
pub fn class_sizes(
    before: &ClassSizes,
    after: &ClassSizes,
    (rows_before, rows_after, suppressed_after): (u64, u64, u64),
) -> Result<String> {
    let mut labels: Vec<String> = SIZE_BINS.iter().map(|(_, l)| l.to_string()).collect();
    labels.push("suppressed".into());
    let mut input = size_shares(before, rows_before);
    input.push(0.0);
    let mut release = size_shares(after, rows_after);
    release.push(percent(suppressed_after as f64, rows_after as f64));
    let panel = Panel {
        title: "Records by the size of their equivalence class".into(),
        x_label: "class size (records sharing the quasi-identifier values)".into(),
        y_label: "share of records (%)".into(),
        series: vec![
            bars("input", INPUT, &input),
            bars("release", RELEASE, &release),
        ],
        x_ticks: Some(ticks(&labels)),
        y_from_zero: true,
    };
    figure_sized("", &[panel], 1, (860, 320)).map_err(svg_error)
}

fn bars(name: &str, color: &'static str, values: &[f64]) -> Series {
    Series {
        name: name.into(),
        color,
        style: Style::Bars,
        points: values
            .iter()
            .enumerate()
            .map(|(i, &v)| (i as f64, v))
            .collect(),
    }
}

/// Column `c`'s distribution in the input and in the release, as shares of each table's
/// records; the release's `*` values in their own bar.
pub fn distribution(
    binner: &Binner,
    c: usize,
    input: &Marginals,
    release: &Marginals,
) -> Result<String> {
    let mut labels = binner.labels.clone();
    let mut a: Vec<f64> = input.one_way[c]
        .iter()
        .map(|&n| percent(n, input.records))
        .collect();
    let mut b: Vec<f64> = release.one_way[c]
        .iter()
        .map(|&n| percent(n, release.records))
        .collect();
    if release.suppressed[c] > 0.0 {
        labels.push("* (suppressed)".into());
        a.push(0.0);
        b.push(percent(release.suppressed[c], release.records));
    }
    let panel = Panel {
        title: format!(
            "{}: share of records per value, input and release",
            binner.column
        ),
        x_label: format!("{} ({})", binner.column, short_reading(&binner.reading)),
        y_label: "share of records (%)".into(),
        series: vec![bars("input", INPUT, &a), bars("release", RELEASE, &b)],
        x_ticks: Some(ticks(&labels)),
        y_from_zero: true,
    };
    figure_sized("", &[panel], 1, (860, 300)).map_err(svg_error)
}

fn short_reading(reading: &str) -> &str {
    reading.split(';').next().unwrap_or(reading)
}

/// A lattice node's generalization height (the sum of its levels) from its label `2,0,1`.
pub fn height(node: &str) -> Option<f64> {
    node.split(',')
        .map(|l| l.trim().parse::<f64>().ok())
        .sum::<Option<f64>>()
}

/// The searched nodes' scores against their generalization height, the chosen node
/// marked. `None` when the diagnostics have no node, score or chosen column.
pub fn search(method: &str, diagnostics: &[RecordBatch]) -> Result<Option<(String, String)>> {
    let Some(first) = diagnostics.first() else {
        return Ok(None);
    };
    let schema = first.schema();
    let find = |names: &[&str]| names.iter().find_map(|n| schema.index_of(n).ok());
    let (Some(node), Some(score), Some(chosen)) = (
        find(&["node", "pivot"]),
        find(&["score", "lm"]),
        find(&["chosen"]),
    ) else {
        return Ok(None);
    };
    let score_name = schema.field(score).name().clone();
    let (mut others, mut marked) = (Vec::new(), Vec::new());
    for batch in diagnostics {
        let nodes = cast(batch.column(node), &DataType::Utf8)?;
        let nodes = nodes.as_string::<i32>();
        let scores = cast(batch.column(score), &DataType::Float64)?;
        let scores = scores.as_primitive::<Float64Type>();
        let chosen = batch.column(chosen).as_boolean();
        for row in 0..batch.num_rows() {
            if scores.is_null(row) || nodes.is_null(row) {
                continue;
            }
            let Some(h) = height(nodes.value(row)) else {
                continue;
            };
            let point = (h, scores.value(row));
            if chosen.value(row) {
                marked.push(point);
            } else {
                others.push(point);
            }
        }
    }
    if others.is_empty() && marked.is_empty() {
        return Ok(None);
    }
    let panel = Panel {
        title: format!("{method}: every evaluated node"),
        x_label: "generalization height (sum of the node's levels)".into(),
        y_label: score_name.clone(),
        series: vec![
            Series {
                name: "evaluated node".into(),
                color: INPUT,
                style: Style::Points,
                points: others,
            },
            Series {
                name: "chosen node".into(),
                color: CHOSEN,
                style: Style::Marked,
                points: marked,
            },
        ],
        x_ticks: None,
        y_from_zero: false,
    };
    let svg = figure_sized("", &[panel], 1, (860, 340)).map_err(svg_error)?;
    Ok(Some((score_name, svg)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn class_sizes_fall_in_their_bins() {
        let sizes = vec![(1, 3, 3), (2, 1, 2), (5, 1, 5), (1500, 1, 1500)];
        let shares = size_shares(&sizes, 1510);
        let expect = |records: f64| 100.0 * records / 1510.0;
        assert_eq!(shares[0], expect(3.0));
        assert_eq!(shares[1], expect(2.0));
        assert_eq!(shares[3], expect(5.0));
        assert_eq!(shares[8], expect(1500.0));
        assert_eq!(shares.iter().filter(|&&s| s > 0.0).count(), 4);
    }

    #[test]
    fn heights_are_level_sums() {
        assert_eq!(height("2,0,1"), Some(3.0));
        assert_eq!(height("x"), None);
    }
}
