//! `anonymize_utility`'s figures: how close a release stays to its source, by the measures
//! NIST's Collaborative Research Cycle scores every deidentified sample with (SDNist 2.4, whose
//! definitions 2.5 keeps; docs/METHODS.md §11.5): the 2-way k-marginal score with its sampling baseline, the
//! propensity mean squared error and the unique exact matches.
//!
//! Both tables are read the way the report reads them ([`reading`]): grouped on the
//! released columns (the quasi-identifiers, then the released sensitive columns), and, for
//! the k-marginal score, onto common bins over which a generalized value spreads evenly.

pub mod exact_matches;
pub mod pmse;
pub mod reading;
pub mod subsample;

use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::catalog::TableProvider;
use datafusion::common::{plan_err, HashMap, HashSet, Result};
use datafusion::execution::SessionState;

use crate::assess::Population;
use crate::engine::AnonymizeRequest;
use crate::names::parse_list;
use crate::report::bins::{k_marginal_score, Binner};
use exact_matches::unique_exact_matches;
use pmse::{pmse, Cell, MAX_DEPTH};
use reading::{for_each_row, read_columns, Reading};
use subsample::{equivalent_share, sample_scores};

const NAME: &str = "anonymize_utility";

/// Every metric, by name.
pub const METRIC_NAMES: &[&str] = &["k_marginal", "pmse", "uem"];

/// One figure of `anonymize_utility`.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    /// What it measures.
    pub metric: &'static str,
    /// Its value (`None` where the tables do not allow it, e.g. one column for k-marginal).
    pub value: Option<f64>,
    /// What the value means, with the counts behind it.
    pub explain: String,
}

/// The metrics asked for and the seed of the sampling baseline.
#[derive(Debug, Clone)]
pub struct UtilityPlan {
    /// Metric names, comma-separated (`all` for every one).
    pub metrics: String,
    /// Seed of the samples the k-marginal score is compared with.
    pub seed: u64,
}

impl UtilityPlan {
    /// The metric names asked for, checked, in [`METRIC_NAMES`] order.
    pub fn kinds(&self) -> Result<Vec<&'static str>> {
        let mut wanted = Vec::new();
        for item in parse_list("metrics", &self.metrics, false)? {
            let name = item.column.text.to_ascii_lowercase();
            if name == "all" {
                wanted.extend_from_slice(METRIC_NAMES);
            } else if let Some(known) = METRIC_NAMES.iter().find(|m| **m == name) {
                wanted.push(*known);
            } else {
                return plan_err!(
                    "{NAME}(): metric '{name}' is not one of {}, all",
                    METRIC_NAMES.join(", ")
                );
            }
        }
        let kinds: Vec<&'static str> = METRIC_NAMES
            .iter()
            .copied()
            .filter(|m| wanted.contains(m))
            .collect();
        if kinds.is_empty() {
            return plan_err!("{NAME}(): metrics names no metric");
        }
        Ok(kinds)
    }
}

/// The figures of `release` against the source of `request`, for the released columns
/// `sensitive` beyond the quasi-identifiers.
pub async fn utility_of_release(
    request: &AnonymizeRequest,
    release: Arc<dyn TableProvider>,
    sensitive: &[(String, datafusion::arrow::datatypes::DataType)],
    plan: &UtilityPlan,
    state: &SessionState,
) -> Result<Vec<Figure>> {
    plan.kinds()?;
    let reading = read_columns(request, &release, sensitive, Population::None, 0.0, state).await?;
    figures_of(&reading, plan)
}

/// The figures of a release already read (the report reads it once for all its figures).
pub(crate) fn figures_of(reading: &Reading, plan: &UtilityPlan) -> Result<Vec<Figure>> {
    let kinds = plan.kinds()?;
    let columns = reading.columns.len();
    let coded = code_cells(&reading.input_counts, &reading.release_counts, columns)?;
    let cells = &coded.cells;
    let mut figures = Vec::new();
    if kinds.contains(&"k_marginal") {
        let score = k_marginal_score(&reading.input, &reading.release).map(|(s, _)| s);
        let pairs = columns * columns.saturating_sub(1) / 2;
        figures.push(Figure {
            metric: "k_marginal",
            value: score,
            explain: format!(
                "0 to 1000: 1000 × (1 − total variation distance) between the source's and the release's joint distributions, averaged over the {pairs} pairs of the {columns} released columns (SDNist's k-marginal score); a generalized value spreads evenly over the bins of the values it covers"
            ),
        });
        let (bins, counts) = coded.source_groups(&reading.binners);
        let samples = sample_scores(&reading.binners, &reading.input, &bins, &counts, plan.seed);
        let equivalent = score.and_then(|s| equivalent_share(&samples, s));
        let listed: Vec<String> = samples
            .iter()
            .map(|(share, s)| format!("{}%: {s:.0}", (share * 100.0).round()))
            .collect();
        figures.push(Figure {
            metric: "k_marginal_sample_equivalent",
            value: equivalent,
            explain: format!(
                "the largest share of the source whose random sample scores no better than the release (NULL below a 1% sample); the samples' scores: {}",
                listed.join(", ")
            ),
        });
    }
    if kinds.contains(&"pmse") {
        let p = pmse(cells, columns, MAX_DEPTH);
        figures.push(Figure {
            metric: "pmse",
            value: p.map(|p| p.value),
            explain: match p {
                Some(p) => format!(
                    "propensity mean squared error: a decision tree of depth {MAX_DEPTH} ({} leaves) fitted to tell the release's rows from the source's; 0 when it cannot, c(1 − c) = {:.4} when it always can, c = {:.4} the release's share of the rows (SDNist's pMSE)",
                    p.leaves,
                    p.share * (1.0 - p.share),
                    p.share
                ),
                None => "the release or the source has no rows".into(),
            },
        });
    }
    if kinds.contains(&"uem") {
        let m = unique_exact_matches(cells);
        figures.push(Figure {
            metric: "unique_exact_matches",
            value: Some(m.matched as f64),
            explain: format!(
                "source records unique on the released columns ({} of {}) that a released row equals on every column (SDNist's unique exact matches)",
                m.unique, m.records
            ),
        });
        figures.push(Figure {
            metric: "unique_exact_match_share",
            value: Some(m.share()),
            explain: format!(
                "the share of the {} unique source records that the release holds exactly",
                m.unique
            ),
        });
    }
    Ok(figures)
}

/// Both tables' distinct rows on one coding ([`code_cells`]), and each column's values by
/// code.
struct Coded {
    cells: Vec<Cell>,
    /// Per column, the value of each code.
    values: Vec<Vec<Option<String>>>,
}

impl Coded {
    /// The source's distinct rows as the k-marginal bins read them: each row's bin per
    /// column (`None` for NULL or a value the bins do not know) and how many source
    /// records hold it. A value's bin is looked up once, not once per row.
    fn source_groups(&self, binners: &[Binner]) -> (Vec<Vec<Option<usize>>>, Vec<u64>) {
        let code_bins: Vec<Vec<Option<usize>>> = binners
            .iter()
            .zip(&self.values)
            .map(|(binner, values)| {
                values
                    .iter()
                    .map(|v| v.as_deref().and_then(|v| binner.input_bin(v)))
                    .collect()
            })
            .collect();
        self.cells
            .iter()
            .filter(|cell| cell.source > 0.0)
            .map(|cell| {
                let bins = cell
                    .codes
                    .iter()
                    .zip(&code_bins)
                    .map(|(&code, bins)| bins[code as usize])
                    .collect();
                (bins, cell.source as u64)
            })
            .unzip()
    }
}

/// Both tables' distinct rows on one coding: per column, every value either table holds,
/// numbers in numeric order when every value of the column is one, else in text order,
/// NULL first; rows equal in both tables share a cell.
fn code_cells(source: &[RecordBatch], release: &[RecordBatch], columns: usize) -> Result<Coded> {
    // Every row of both tables, flat: `columns` values per row, and its two counts.
    let mut values: Vec<Option<&str>> = Vec::new();
    let mut counts: Vec<(f64, f64)> = Vec::new();
    for (batches, side) in [(source, 0), (release, 1)] {
        for_each_row(batches, |row, n| {
            values.extend_from_slice(row);
            counts.push(if side == 0 { (n, 0.0) } else { (0.0, n) });
        })?;
    }
    let mut values_by_code: Vec<Vec<Option<String>>> = Vec::with_capacity(columns);
    let mut coding: Vec<HashMap<Option<&str>, u32>> = Vec::with_capacity(columns);
    for c in 0..columns {
        let distinct: HashSet<Option<&str>> = values
            .iter()
            .skip(c)
            .step_by(columns.max(1))
            .copied()
            .collect();
        let mut column: Vec<Option<&str>> = distinct.into_iter().collect();
        column.sort_unstable();
        let numeric: Option<Vec<f64>> = column
            .iter()
            .flatten()
            .map(|v| v.trim().parse::<f64>().ok().filter(|x| x.is_finite()))
            .collect();
        if let Some(numbers) = numeric {
            let has_null = column.first().is_some_and(Option::is_none);
            let mut order: Vec<(f64, Option<&str>)> = numbers
                .into_iter()
                .zip(column.iter().skip(usize::from(has_null)).copied())
                .collect();
            order.sort_by(|a, b| a.0.total_cmp(&b.0));
            let mut sorted: Vec<Option<&str>> = Vec::with_capacity(column.len());
            if has_null {
                sorted.push(None);
            }
            sorted.extend(order.into_iter().map(|(_, v)| v));
            column = sorted;
        }
        values_by_code.push(column.iter().map(|v| v.map(str::to_string)).collect());
        coding.push(
            column
                .into_iter()
                .enumerate()
                .map(|(i, v)| (v, i as u32))
                .collect(),
        );
    }
    let mut merged: HashMap<Vec<u32>, (f64, f64)> = HashMap::new();
    if columns == 0 {
        // No column: every row is the one empty row.
        let totals = counts
            .iter()
            .fold((0.0, 0.0), |(s, r), (x, y)| (s + x, r + y));
        merged.insert(Vec::new(), totals);
    } else {
        for (row, (s, r)) in values.chunks_exact(columns).zip(&counts) {
            let codes: Vec<u32> = row
                .iter()
                .zip(&coding)
                .map(|(v, coding)| coding[v])
                .collect();
            let entry = merged.entry(codes).or_default();
            entry.0 += s;
            entry.1 += r;
        }
    }
    let mut cells: Vec<Cell> = merged
        .into_iter()
        .map(|(codes, (source, release))| Cell {
            codes,
            source,
            release,
        })
        .collect();
    cells.sort_by(|a, b| a.codes.cmp(&b.codes));
    Ok(Coded {
        cells,
        values: values_by_code,
    })
}
