//! k-anonymization's public metadata (with its `guarantee` text and the release's risk
//! figures) and owner-only diagnostics.

use super::cells::SuppressionMode;
use super::check::KanonNodeOutcome;
use super::objective::Score;
use super::{KanonParams, KanonResult};
use crate::lattice::{node_label, Lattice};
use crate::privacy::risk::{release_risk, release_risk_per_person};
use crate::sensitive::SensitiveDomain;
use datafusion::arrow::array::{
    ArrayRef, BooleanArray, Float64Array, RecordBatch, StringArray, UInt64Array,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::common::Result;
use std::sync::Arc;

/// The method's public metadata entries, with the risk figures of the release.
pub fn kanon_metadata(
    params: &KanonParams,
    lattice: &Lattice,
    sensitive: &SensitiveDomain,
    result: &KanonResult,
) -> Vec<(String, String)> {
    let columns: Vec<String> = sensitive
        .columns
        .iter()
        .filter(|c| !c.pseudonym)
        .map(|c| c.name.clone())
        .collect();
    let described = params.models.describe(&columns);
    let disclosure = if described.is_empty() {
        "k-anonymity does not prevent attribute disclosure (a class whose records share one \
         sensitive value reveals it)"
            .to_string()
    } else {
        format!(
            "every released class also satisfies {}, which limits attribute disclosure as far as \
             these models go (they compare with the distribution of the whole input table)",
            described.join(" and ")
        )
    };
    let suppressed = match params.suppression {
        SuppressionMode::Record => "the suppressed class '*' (every quasi-identifier '*') holds the records of classes smaller than k".to_string(),
        SuppressionMode::Cell => "records of classes smaller than k first lose single quasi-identifier values (shown as '*', which counts as a value: every released combination, '*' included, other than the fully suppressed class occurs at least k times); what cannot be fixed that way is suppressed as a record".to_string(),
    };
    let guarantee = format!(
        "k-anonymity with k = {k}: every released combination of quasi-identifier values other than the \
         fully suppressed class is shared by at least {k} records; {suppressed}; the fully suppressed class \
         may be smaller than k, and at most a fraction {limit} of the records are in classes smaller than k. \
         No differential privacy: the generalization is chosen deterministically from the data, every real \
         record is published with its true sensitive value, and {disclosure}.",
        k = params.k,
        limit = params.suppression_limit
    );
    let weights = if params.weights.is_empty() {
        "equal".to_string()
    } else {
        params
            .weights
            .iter()
            .map(|w| w.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut models = vec![format!("k-anonymity (k = {})", params.k)];
    models.extend(described);
    let mut out: Vec<(String, String)> = vec![
        ("k".into(), params.k.to_string()),
        ("suppression_limit".into(), params.suppression_limit.to_string()),
        ("privacy_models".into(), models.join("; ")),
        ("suppression".into(), params.suppression.name().into()),
        ("metric".into(), params.metric.name().into()),
        (
            "loss".into(),
            format!(
                "{}, minimized exactly over all feasible nodes; ties: fewest generalization levels, then lattice order",
                params.metric.describe()
            ),
        ),
        ("qi_weights".into(), weights),
        ("search".into(), params.search.name().into()),
        ("lattice_nodes".into(), lattice.len().to_string()),
        ("nodes_checked".into(), result.outcomes.len().to_string()),
        (
            "suppressed_records".into(),
            result.plan.suppressed_records.to_string(),
        ),
        (
            "suppressed_cells".into(),
            result.plan.suppressed_cells.to_string(),
        ),
        ("guarantee".into(), guarantee),
    ];
    match &result.class_persons {
        Some(persons) => out.extend(release_risk_per_person(&result.release, persons)),
        None => out.extend(release_risk(&result.release)),
    }
    out
}

/// Schema of the method's diagnostics: one row per checked node.
pub fn kanon_diagnostics_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("node", DataType::Utf8, false),
        Field::new("chosen", DataType::Boolean, false),
        Field::new("feasible", DataType::Boolean, false),
        Field::new("score", DataType::Float64, true),
        Field::new("bound", DataType::Float64, false),
        Field::new("classes", DataType::UInt64, false),
        Field::new("suppressed_classes", DataType::UInt64, false),
        Field::new("suppressed_records", DataType::UInt64, false),
        Field::new("suppressed_cells", DataType::UInt64, false),
    ]))
}

/// The diagnostics batch; `display` turns scores into numbers.
pub fn kanon_diagnostics_batch(
    outcomes: &[KanonNodeOutcome],
    chosen: usize,
    display: &dyn Fn(Score) -> f64,
) -> Result<RecordBatch> {
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(
            outcomes.iter().map(|o| node_label(&o.node)),
        )),
        Arc::new(BooleanArray::from_iter(
            (0..outcomes.len()).map(|i| Some(i == chosen)),
        )),
        Arc::new(BooleanArray::from_iter(
            outcomes.iter().map(|o| Some(o.feasible)),
        )),
        Arc::new(Float64Array::from_iter(
            outcomes.iter().map(|o| o.score.map(display)),
        )),
        Arc::new(Float64Array::from_iter_values(
            outcomes.iter().map(|o| display(o.bound)),
        )),
        Arc::new(UInt64Array::from_iter_values(
            outcomes.iter().map(|o| o.classes as u64),
        )),
        Arc::new(UInt64Array::from_iter_values(
            outcomes.iter().map(|o| o.suppressed_classes as u64),
        )),
        Arc::new(UInt64Array::from_iter_values(
            outcomes.iter().map(|o| o.suppressed_records),
        )),
        Arc::new(UInt64Array::from_iter_values(
            outcomes.iter().map(|o| o.suppressed_cells),
        )),
    ];
    Ok(RecordBatch::try_new(kanon_diagnostics_schema(), columns)?)
}
