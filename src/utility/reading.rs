//! Both tables of a release, read the one way the report and `anonymize_utility` read
//! them: grouped on the released columns (one assessment of the source and one of the
//! release, whose grouped rows are the value counts) and read onto common bins
//! ([`crate::report::bins`], docs/METHODS.md §11.2).

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch, UInt32Array};
use datafusion::arrow::compute::{cast, take};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::arrow::row::{RowConverter, SortField};
use datafusion::catalog::TableProvider;
use datafusion::common::Result;
use datafusion::execution::SessionState;
use datafusion::prelude::SessionContext;

use crate::assess::grouped::{concat_column, counts_of};
use crate::assess::{assess_table, AssessRequest, Assessed, Population};
use crate::engine::{load_hierarchy, AnonymizeRequest};
use crate::hierarchy::Hierarchy;
use crate::report::bins::{Binner, Marginals, Side};
use crate::session::local_state;

/// Both tables' released columns, grouped and read onto common bins: what the report's
/// distributions and `anonymize_utility`'s figures are computed from.
#[derive(Debug)]
pub(crate) struct Reading {
    /// `anonymize_assess` of the source, its class sizes and its grouped rows.
    pub before: Assessed,
    /// The same of the release.
    pub after: Assessed,
    /// The released columns: the quasi-identifiers, then the assessed sensitive columns.
    pub columns: Vec<String>,
    /// The bins of every released column.
    pub binners: Vec<Binner>,
    /// The source's distinct rows of the released columns (as text) with their counts, in
    /// one order; [`for_each_row`] reads them.
    pub input_counts: Vec<RecordBatch>,
    /// The release's, the same way.
    pub release_counts: Vec<RecordBatch>,
    /// The source's counts on the bins.
    pub input: Marginals,
    /// The release's counts on the bins.
    pub release: Marginals,
}

/// Groups the source and `release` on the released columns (one assessment of each) and
/// reads them onto common bins: a column with a hierarchy on its levels' leaves, a numeric
/// one on equal-width bins of the source's range, any other on its categories.
pub(crate) async fn read_columns(
    request: &AnonymizeRequest,
    release: &Arc<dyn TableProvider>,
    sensitive: &[(String, DataType)],
    population: Population,
    risk_threshold: f64,
    state: &SessionState,
) -> Result<Reading> {
    let qi: Vec<String> = request.qi.iter().map(|q| q.column.clone()).collect();
    let assessing = |name: &str, table: &Arc<dyn TableProvider>| AssessRequest {
        source_name: name.to_string(),
        source: table.clone(),
        qi: qi.clone(),
        sensitive: sensitive.to_vec(),
        population: population.clone(),
        risk_threshold,
        weights: None,
        max_global_risk: crate::privacy::individual_risk::DEFAULT_MAX_GLOBAL_RISK,
        person: None,
    };
    let source = assessing(&request.source_name, &request.source);
    let release_name = format!("the release of '{}'", request.source_name);
    let released = assessing(&release_name, release);
    // One grouped pass over each table gives its assessment, class sizes and value counts.
    let before = assess_table(&source, state).await?;
    let after = assess_table(&released, state).await?;

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
    let input_counts = value_counts(&before.batches, qi.len(), sensitive.len())?;
    let release_counts = value_counts(&after.batches, qi.len(), sensitive.len())?;
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
    Ok(Reading {
        before,
        after,
        columns,
        binners,
        input_counts,
        release_counts,
        input,
        release,
    })
}

/// The value counts of the grouped rows of an assessment (suppressed flag, quasi-identifiers
/// as text, `sensitive` sensitive columns, row count): the quasi-identifiers and the
/// sensitive columns as text with the row count last, in one order (ascending, NULLs
/// first), so that every sum over the rows is taken in one order: the same page for the
/// same release.
fn value_counts(grouped: &[RecordBatch], qi: usize, sensitive: usize) -> Result<Vec<RecordBatch>> {
    let Some(first) = grouped.first() else {
        return Ok(Vec::new());
    };
    let schema = first.schema();
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(qi + sensitive + 1);
    for c in 1..=qi + sensitive {
        let array = concat_column(grouped, c, &schema)?;
        columns.push(if c > qi {
            cast(&array, &DataType::Utf8)?
        } else {
            array
        });
    }
    // Sorted on the rows' byte encoding (one comparison of bytes per pair of rows).
    let converter = RowConverter::new(
        columns
            .iter()
            .map(|c| SortField::new(c.data_type().clone()))
            .collect(),
    )?;
    let rows = converter.convert_columns(&columns)?;
    let mut order: Vec<u32> = (0..rows.num_rows() as u32).collect();
    order.sort_unstable_by(|&a, &b| rows.row(a as usize).cmp(&rows.row(b as usize)));
    let order = UInt32Array::from(order);
    columns.push(concat_column(grouped, 1 + qi + sensitive, &schema)?);
    let columns = columns
        .iter()
        .map(|c| take(c.as_ref(), &order, None))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let fields: Vec<Field> = columns
        .iter()
        .enumerate()
        .map(|(i, c)| Field::new(format!("c{i}"), c.data_type().clone(), true))
        .collect();
    Ok(vec![RecordBatch::try_new(
        Arc::new(Schema::new(fields)),
        columns,
    )?])
}

/// Calls `each` with every row's values (text, `None` for NULL) and record count.
pub(crate) fn for_each_row<'a>(
    batches: &'a [RecordBatch],
    mut each: impl FnMut(&[Option<&'a str>], f64),
) -> Result<()> {
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
