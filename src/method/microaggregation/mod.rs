//! Microaggregation of numeric quasi-identifiers with MDAV (METHODS.md §10), as sdcMicro's
//! `microaggregation(method = "mdav")`: the records are partitioned into groups of at least
//! `k` by [`mdav`] over the standardized quasi-identifiers, and each quasi-identifier value
//! is replaced by its group's mean (or median). Every released combination of the
//! microaggregated values is then shared by at least `k` records; the other released
//! columns keep their values.
//!
//! Unlike the lattice methods, the released values are numbers, not hierarchy labels, so
//! the engine gives this method its own phase 1 ([`crate::engine`]'s `microaggregate`):
//! the method here is its parameters, its guarantee and the pure steps (`mdav`, then
//! `groups`, which turns groups into released classes).

use std::sync::Arc;

use datafusion::arrow::array::{Float64Array, RecordBatch, UInt64Array};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::common::{plan_err, Result};

use crate::budget::Cost;
use crate::method::{Guarantee, Input, Persons};
use crate::method::{Method, MethodArgs, MethodSpec};
use crate::params::{ParamDefault, ParamKind, ParamSpec};
use crate::progress::Progress;
use crate::sensitive::SensitiveSpec;

pub mod groups;
pub mod mdav;
#[cfg(test)]
mod tests;

pub use crate::method::numeric::{NumericOutput, NumericPoints};
pub use groups::{microaggregate, Aggregate, Microaggregated};

/// Default `k`, as sdcMicro's `aggr`.
pub const DEFAULT_K: u64 = 3;

/// Why microaggregation refuses the lattice methods' arguments.
const NO_LATTICE: &str =
    "microaggregation replaces values by group means; it has no hierarchies or lattice";

const PARAMS: &[ParamSpec] = &[
    ParamSpec::new(
        "k",
        ParamKind::Count,
        ParamDefault::Integer(DEFAULT_K),
        "smallest number of records in a group (at least 2); every group has k to 2k - 1 records",
    ),
    ParamSpec::new(
        "aggregate",
        ParamKind::Choice(&["mean", "median"]),
        ParamDefault::Text("mean"),
        "the value that replaces a group's values: their mean, or their median",
    ),
];

const REFUSES: &[(&str, &str)] = &[
    ("min_levels", NO_LATTICE),
    ("max_levels", NO_LATTICE),
    ("levels", NO_LATTICE),
    ("max_nodes", NO_LATTICE),
    ("suppression_limit", "microaggregation groups every record; nothing is suppressed"),
    ("seed", "microaggregation is deterministic: it draws nothing"),
    ("epsilon", "microaggregation is deterministic grouping, not differentially private; it has no privacy budget"),
    ("delta", "microaggregation is deterministic grouping, not differentially private; it has no privacy budget"),
];

/// Microaggregation in the method registry.
pub const METHOD: MethodSpec = MethodSpec {
    name: "microaggregation",
    about: "MDAV microaggregation of numeric quasi-identifiers: groups of at least k records get their group's mean (or median); k-anonymity on those columns only, no differential privacy",
    params: PARAMS,
    refuses: REFUSES,
    guarantee: Guarantee::Syntactic,
    methods_section: "§10.3",
    input: Input::Numeric,
    persons: Persons::Refused("its groups hold k records, not k persons; use 'kanon' (which counts persons) or a differentially private method"),
    pseudonyms: false,
    diagnostics_score: None,
    configure,
};

fn configure(args: &MethodArgs<'_>) -> Result<Arc<dyn Method>> {
    let k = args.values.u64("k")?;
    if k < 2 {
        return plan_err!("method 'microaggregation': k must be at least 2, got {k}");
    }
    let aggregate = match args.values.text("aggregate")? {
        "median" => Aggregate::Median,
        _ => Aggregate::Mean,
    };
    Ok(Arc::new(Microaggregation { k, aggregate }))
}

/// Microaggregation configured for one release.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Microaggregation {
    /// Smallest group.
    pub k: u64,
    /// What replaces a group's values.
    pub aggregate: Aggregate,
}

impl Microaggregation {
    /// The `guarantee` text, for the microaggregated `columns`.
    pub fn guarantee(&self, columns: &[String]) -> String {
        format!(
            "k-anonymity with k = {k} on the microaggregated columns only ({columns}): the records were partitioned by MDAV into groups of at least {k}, and each of these columns' values was replaced by its group's {aggregate}, so every released combination of their values is shared by at least {k} records. The other released columns keep their true values: a value of theirs that is rare can single out its record, and a group whose records share a value reveals it. No differential privacy: the grouping is computed deterministically from the data.",
            k = self.k,
            columns = columns.join(", "),
            aggregate = self.aggregate.name(),
        )
    }

    /// The method's public metadata entries, `guarantee` included.
    pub fn metadata(&self, columns: &[String]) -> Vec<(String, String)> {
        vec![
            ("k".into(), self.k.to_string()),
            ("aggregate".into(), self.aggregate.name().into()),
            (
                "grouping".into(),
                "MDAV (Domingo-Ferrer and Torra 2005) on the quasi-identifiers, each scaled to unit standard deviation; Euclidean distance".into(),
            ),
            ("guarantee".into(), self.guarantee(columns)),
        ]
    }

    /// The owner-only diagnostics: one row describing the grouping.
    pub fn diagnostics(&self, result: &Microaggregated) -> Result<RecordBatch> {
        let group_sizes = result.group_sizes();
        let sizes = || group_sizes.iter().copied();
        let sse_ratio = if result.sst > 0.0 {
            result.sse / result.sst
        } else {
            0.0
        };
        Ok(RecordBatch::try_new(
            microaggregation_diagnostics_schema(),
            vec![
                Arc::new(UInt64Array::from(vec![group_sizes.len() as u64])),
                Arc::new(UInt64Array::from(vec![result.release.class_count() as u64])),
                Arc::new(UInt64Array::from(vec![sizes().min().unwrap_or(0)])),
                Arc::new(UInt64Array::from(vec![sizes().max().unwrap_or(0)])),
                Arc::new(Float64Array::from(vec![result.sse])),
                Arc::new(Float64Array::from(vec![result.sst])),
                Arc::new(Float64Array::from(vec![sse_ratio])),
            ],
        )?)
    }
}

/// Schema of microaggregation's owner-only diagnostics.
pub fn microaggregation_diagnostics_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("groups", DataType::UInt64, false),
        Field::new("released_combinations", DataType::UInt64, false),
        Field::new("smallest_group", DataType::UInt64, false),
        Field::new("largest_group", DataType::UInt64, false),
        Field::new("sse", DataType::Float64, false),
        Field::new("sst", DataType::Float64, false),
        Field::new("sse_over_sst", DataType::Float64, false),
    ]))
}

impl Method for Microaggregation {
    fn spec(&self) -> &'static MethodSpec {
        &METHOD
    }

    fn budget(&self) -> Cost {
        Cost::NONE
    }

    fn max_nodes(&self) -> usize {
        1
    }

    fn diagnostics_schema(&self) -> SchemaRef {
        microaggregation_diagnostics_schema()
    }

    fn run_numeric(
        &self,
        points: &NumericPoints,
        columns: &[String],
        progress: &Progress,
    ) -> Result<NumericOutput> {
        let result = microaggregate(points, self.k, self.aggregate, progress)?;
        Ok(NumericOutput {
            metadata: self.metadata(columns),
            diagnostics: self.diagnostics(&result)?,
            release: result.release,
            class_values: result.class_values,
            information_loss: result.information_loss,
            own_rows: Some(result.own_rows),
        })
    }

    fn max_sensitive_columns(&self) -> usize {
        usize::MAX
    }

    fn check_sensitive(&self, columns: &[SensitiveSpec]) -> Result<()> {
        if let Some(c) = columns.iter().find(|c| c.hierarchy.is_some()) {
            return plan_err!(
                "method 'microaggregation' checks no l-diversity or t-closeness, so sensitive column '{}' takes no hierarchy table: write it without ':table'",
                c.column
            );
        }
        Ok(())
    }
}
