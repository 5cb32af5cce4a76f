//! The DP histogram's public metadata and owner-only diagnostics.

use super::{describe, DpHistogramParams, DpHistogramStats};
use crate::hierarchy::Hierarchy;
use crate::lattice::node_label;
use datafusion::arrow::array::{ArrayRef, RecordBatch, StringArray, UInt64Array};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::common::Result;
use std::sync::Arc;

/// The method's public metadata entries.
pub fn dp_histogram_metadata(
    params: &DpHistogramParams,
    hierarchies: &[&Hierarchy],
    stats: &DpHistogramStats,
    value_domain: usize,
    leaf_domain: Option<&str>,
) -> Vec<(String, String)> {
    let node_source = if params.levels.is_some() {
        "given by the 'levels' argument"
    } else {
        "the default rule: the first node by level sum, then lattice order, with at most max_cells cells (this depends only on the hierarchies and the number of informative values)"
    };
    let (domain, domain_claim) = match leaf_domain {
        Some(hierarchy) => (
            format!("the {value_domain} leaves of hierarchy '{hierarchy}' (a public declaration)"),
            format!(
                "the informative domain is the {value_domain} leaves of hierarchy '{hierarchy}', a public \
                 declaration, whatever the data hold (records with another value are left out of a public \
                 release): the set of cells is public, and the whole release is differentially private"
            ),
        ),
        None => (
            format!("{value_domain} distinct values taken from the data"),
            format!(
                "the informative domain is the {value_domain} distinct values of the informative column found in \
                 the data: it is not protected (which values occur at all is disclosed exactly), and must be \
                 public knowledge for the guarantee to hold"
            ),
        ),
    };
    let guarantee = format!(
        "epsilon-differential privacy with epsilon = {eps} (adding or removing one record), for the table of \
         noisy counts and everything derived from it, on the condition that the set of cells is public. The \
         quasi-identifier cells are all {qi} combinations of the hierarchies' labels at levels '{levels}' \
         ({node_source}), empty ones included; {domain_claim}. Each cell gets two-sided discrete \
         Laplace noise of scale 1/epsilon drawn exactly; negative counts are clamped to 0. Released rows are \
         not real records: counts and their informative values are noisy.",
        eps = params.epsilon,
        qi = stats.cells / value_domain.max(1) as u64,
        levels = describe(hierarchies, &stats.node),
    );
    vec![
        ("epsilon".into(), params.epsilon.to_string()),
        (
            "noise".into(),
            "two-sided geometric (discrete Laplace) with scale 1/epsilon on every cell, clamped at 0".into(),
        ),
        ("noise_scale".into(), (1.0 / params.epsilon).to_string()),
        ("cells".into(), stats.cells.to_string()),
        ("max_cells".into(), params.max_cells.to_string()),
        ("informative_domain".into(), domain),
        ("guarantee".into(), guarantee),
    ]
}

/// Schema of the method's diagnostics: one row.
pub fn dp_histogram_diagnostics_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("node", DataType::Utf8, false),
        Field::new("cells", DataType::UInt64, false),
        Field::new("empty_cells", DataType::UInt64, false),
        Field::new("released_cells", DataType::UInt64, false),
        Field::new("true_records", DataType::UInt64, false),
        Field::new("released_rows", DataType::UInt64, false),
        Field::new("added_rows", DataType::UInt64, false),
        Field::new("removed_rows", DataType::UInt64, false),
    ]))
}

/// The diagnostics batch.
pub fn dp_histogram_diagnostics_batch(stats: &DpHistogramStats) -> Result<RecordBatch> {
    let u = |x: u64| Arc::new(UInt64Array::from(vec![x])) as ArrayRef;
    Ok(RecordBatch::try_new(
        dp_histogram_diagnostics_schema(),
        vec![
            Arc::new(StringArray::from(vec![node_label(&stats.node)])),
            u(stats.cells),
            u(stats.empty_cells),
            u(stats.released_cells),
            u(stats.true_records),
            u(stats.released_rows),
            u(stats.added_rows),
            u(stats.removed_rows),
        ],
    )?)
}
