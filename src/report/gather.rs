//! The report's figures, computed with the code of the SQL functions that give them:
//! `anonymize_assess` and `anonymize_class_sizes` on the source and on the release, and the
//! distributions of every released column read onto common bins ([`super::bins`]).

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::DataType;
use datafusion::catalog::TableProvider;
use datafusion::common::Result;
use datafusion::execution::SessionState;
use datafusion::functions_aggregate::expr_fn::count;
use datafusion::logical_expr::lit;
use datafusion::prelude::SessionContext;

use super::bins::{k_marginal_score, Binner, Marginals, Side};
use super::{ReportOptions, Subject};
use crate::assess::grouped::{counts_of, qi_text};
use crate::assess::{assess, class_sizes, AssessRequest, Entry, Population};
use crate::engine::load_hierarchy;
use crate::hierarchy::Hierarchy;
use crate::session::{local_state, reading_error};

/// Class sizes: `(size, classes, records)` rows of `anonymize_class_sizes`.
pub type ClassSizes = Vec<(u64, u64, u64)>;

/// Everything the page shows beyond the release's own output.
#[derive(Debug)]
pub struct Figures {
    /// `anonymize_assess` of the source.
    pub before: Vec<Entry>,
    /// `anonymize_assess` of the release.
    pub after: Vec<Entry>,
    /// `anonymize_class_sizes` of the source.
    pub sizes_before: ClassSizes,
    /// `anonymize_class_sizes` of the release.
    pub sizes_after: ClassSizes,
    /// The bins of every released column (quasi-identifiers, then sensitive columns).
    pub binners: Vec<Binner>,
    /// The source's counts on those bins.
    pub input: Marginals,
    /// The release's counts on those bins.
    pub release: Marginals,
    /// The 2-way k-marginal score and the score of each pair of columns.
    pub score: Option<(f64, Vec<f64>)>,
}

/// The sensitive columns the report assesses (pseudonyms of identifiers are not).
pub fn sensitive_columns(subject: &Subject<'_>) -> Vec<(String, DataType)> {
    subject
        .request
        .sensitive
        .iter()
        .filter(|s| !s.pseudonym)
        .map(|s| (s.column.clone(), s.data_type.clone()))
        .collect()
}

/// Computes the figures.
pub async fn gather(
    subject: &Subject<'_>,
    options: &ReportOptions,
    state: &SessionState,
) -> Result<Figures> {
    let request = subject.request;
    let qi: Vec<String> = request.qi.iter().map(|q| q.column.clone()).collect();
    let sensitive = sensitive_columns(subject);
    let population = match options.population_size {
        Some(rows) => Population::Rows(rows),
        None => Population::None,
    };
    let assessing = |name: &str, table: &Arc<dyn TableProvider>| AssessRequest {
        source_name: name.to_string(),
        source: table.clone(),
        qi: qi.clone(),
        sensitive: sensitive.clone(),
        population: population.clone(),
        risk_threshold: options.risk_threshold,
        weights: None,
        max_global_risk: crate::privacy::individual_risk::DEFAULT_MAX_GLOBAL_RISK,
        person: None,
    };
    let source = assessing(&request.source_name, &request.source);
    let release_name = format!("the release of '{}'", request.source_name);
    let released = assessing(&release_name, &subject.release);
    let before = assess(&source, state).await?;
    let after = assess(&released, state).await?;
    let sizes_before = sizes(&class_sizes(&source, state).await?)?;
    let sizes_after = sizes(&class_sizes(&released, state).await?)?;

    let local = SessionContext::new_with_state(local_state(state));
    let mut hierarchies: Vec<Option<Hierarchy>> = Vec::with_capacity(qi.len());
    for q in &request.qi {
        hierarchies.push(match &q.hierarchy {
            Some(table) => Some(load_hierarchy(&local, table, &q.column, &q.hierarchy_name).await?),
            None => None,
        });
    }
    let mut columns = qi.clone();
    columns.extend(sensitive.iter().map(|(c, _)| c.clone()));
    let input_counts = value_counts(&request.source, &columns, state, &request.source_name).await?;
    let release_counts = value_counts(&subject.release, &columns, state, &release_name).await?;
    let mut binners = Vec::with_capacity(columns.len());
    for (c, name) in columns.iter().enumerate() {
        let numeric = match c.checked_sub(qi.len()) {
            None => true,
            Some(s) => sensitive[s].1.is_numeric(),
        };
        binners.push(match hierarchies.get(c).and_then(Option::as_ref) {
            Some(h) => Binner::from_hierarchy(name, h),
            None if numeric => {
                let (lo, hi) = range(&input_counts, c)?;
                Binner::numeric(name, lo, hi)
            }
            None => Binner::categories(name, &frequencies(&input_counts, c)?),
        });
    }
    let input = marginals(&binners, &input_counts, Side::Input)?;
    let release = marginals(&binners, &release_counts, Side::Release)?;
    let score = k_marginal_score(&input, &release);
    Ok(Figures {
        before,
        after,
        sizes_before,
        sizes_after,
        binners,
        input,
        release,
        score,
    })
}

fn sizes(batches: &[RecordBatch]) -> Result<ClassSizes> {
    let size = counts_of(batches, 0)?;
    let classes = counts_of(batches, 1)?;
    let records = counts_of(batches, 2)?;
    Ok(size
        .into_iter()
        .zip(classes)
        .zip(records)
        .map(|((s, c), r)| (s, c, r))
        .collect())
}

/// `SELECT CAST(c AS text) …, COUNT(*) GROUP BY …` over `table`: the columns as text, the
/// record count last.
async fn value_counts(
    table: &Arc<dyn TableProvider>,
    columns: &[String],
    state: &SessionState,
    name: &str,
) -> Result<Vec<RecordBatch>> {
    let ctx = SessionContext::new_with_state(state.clone());
    // Sorted, so that every sum over the rows is taken in one order: the same page for
    // the same release.
    let order = columns
        .iter()
        .map(|c| crate::assess::grouped::column(c).sort(true, true))
        .collect();
    ctx.read_table(table.clone())?
        .aggregate(
            qi_text(columns),
            vec![count(lit(1)).alias("__report_count")],
        )?
        .sort(order)?
        .collect()
        .await
        .map_err(|e| reading_error("anonymize_report", &format!("table {name}"), e))
}

/// Calls `each` with every row's values (text, `None` for NULL) and record count.
fn for_each_row(batches: &[RecordBatch], mut each: impl FnMut(&[Option<&str>], f64)) -> Result<()> {
    for batch in batches {
        let width = batch.num_columns() - 1;
        let counts = counts_of(std::slice::from_ref(batch), width)?;
        let columns: Vec<_> = (0..width)
            .map(|c| batch.column(c).as_string::<i32>())
            .collect();
        let mut values: Vec<Option<&str>> = vec![None; width];
        for (row, &n) in counts.iter().enumerate() {
            for (c, column) in columns.iter().enumerate() {
                values[c] = (!column.is_null(row)).then(|| column.value(row));
            }
            each(&values, n as f64);
        }
    }
    Ok(())
}

/// The smallest and largest number in column `c` (0, 0 when none parses).
fn range(batches: &[RecordBatch], c: usize) -> Result<(f64, f64)> {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for_each_row(batches, |values, _| {
        if let Some(x) = values[c].and_then(|v| v.trim().parse::<f64>().ok()) {
            if x.is_finite() {
                lo = lo.min(x);
                hi = hi.max(x);
            }
        }
    })?;
    Ok(if lo <= hi { (lo, hi) } else { (0.0, 0.0) })
}

/// How many records hold each value of column `c`.
fn frequencies(batches: &[RecordBatch], c: usize) -> Result<Vec<(String, f64)>> {
    let mut counts: HashMap<String, f64> = HashMap::new();
    for_each_row(batches, |values, n| {
        if let Some(v) = values[c] {
            *counts.entry(v.to_string()).or_default() += n;
        }
    })?;
    Ok(counts.into_iter().collect())
}

fn marginals(binners: &[Binner], batches: &[RecordBatch], side: Side) -> Result<Marginals> {
    let mut out = Marginals::new(binners);
    for_each_row(batches, |values, n| out.add(binners, side, values, n))?;
    Ok(out)
}
