//! UPA's public metadata (including the guarantee text) and owner-only diagnostics.

use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, BooleanArray, Float64Array, RecordBatch, StringArray, UInt64Array,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::common::Result;

use super::{NodeOutcome, UpaParams, UpaResult};
use crate::hierarchy::Hierarchy;
use crate::lattice::{node_label, Lattice};
use crate::metric::degree::{loss_metric, Degrees};
use crate::metric::rce::public_rce;

/// The method's public metadata entries. Every figure is computed from the release and the
/// catalog alone (a recipient can recompute it), except the choice of the node itself.
pub fn upa_metadata(
    params: &UpaParams,
    result: &UpaResult,
    hierarchies: &[&Hierarchy],
    lattice: &Lattice,
) -> Vec<(String, String)> {
    let k = params.k;
    let h = result.h;
    let lm = loss_metric(&Degrees::new(hierarchies), &result.release);
    let rce = public_rce(hierarchies, &result.release, Some(&result.catalog));
    let described = params.models.describe(&[]);
    let disclosure = if described.is_empty() {
        "so k-anonymity does not prevent attribute disclosure".to_string()
    } else {
        format!(
            "and every class's real rows satisfy {} against the whole table, which limits attribute \
             disclosure as far as these models go",
            described.join(" and ")
        )
    };
    let guarantee = format!(
        "Syntactic k-anonymity with k = {k} under an h-ceiling h = {h}: every released combination of \
         quasi-identifier values is shared by at least {k} rows, and every row's generalization degree is at \
         most h. Rows may be counterfeit: a class with fewer than {k} records is filled up with rows carrying \
         its labels and a randomly drawn sensitive value. anonymize_catalog lists, per group of classes and \
         sensitive value, how many rows are counterfeit; every group satisfies Lemma 1 of Lee et al. 2017 \
         (for each class and value, the real rows of that value in the rest of the group are at least the \
         class's counterfeits of it), which prevents identifying a counterfeit with certainty, not estimating \
         it: a row of value s in a group with n such rows, c of them counterfeit, is counterfeit with \
         probability c/n. Real rows carry their true sensitive value, {disclosure}. No differential privacy: the node and the counterfeits' places follow the \
         exact data. upa_truthful(release, catalog, ...) rebuilds the real records (some suppressed) from the \
         two published tables."
    );
    let mut out: Vec<(String, String)> = vec![
        ("k".into(), k.to_string()),
        ("h".into(), h.to_string()),
        (
            "h_rule".into(),
            if params.h.is_some() {
                "given"
            } else {
                "chosen: the largest record degree of the node with the lowest RCE over the whole lattice"
            }
            .into(),
        ),
        ("privacy_models".into(), {
            let mut models = vec![format!("k-anonymity (k = {k}) under h = {h}")];
            models.extend(described);
            models.join("; ")
        }),
        ("counterfeit_sa".into(), params.counterfeit_sa.as_str().into()),
        ("counterfeits".into(), result.catalog.counterfeits().to_string()),
        ("catalog_groups".into(), result.catalog.groups.len().to_string()),
        ("lm".into(), lm.to_string()),
        ("rce".into(), rce.to_string()),
        (
            "metrics".into(),
            "lm: mean generalization degree D(r) of the released rows; rce: reconstruction error as a recipient computes it from the release and the catalog (each row of a catalogued value real with probability (n-c)/n), docs/METHODS.md §5.6; the exact RCE is owner-only (anonymize_information_loss)".into(),
        ),
        (
            "node_choice".into(),
            "lowest exact RCE among nodes within the h-ceiling whose counterfeits a catalog conceals; ties: fewer counterfeits, fewer generalization levels, lattice order".into(),
        ),
        ("lattice_nodes".into(), lattice.len().to_string()),
        ("guarantee".into(), guarantee),
    ];
    // Computed on the release as published, counterfeit rows included (every class has at
    // least k rows, so the prosecutor risk is at most 1/k).
    // Per person, the risks count persons (a counterfeit as one).
    match &result.class_persons {
        None => out.extend(crate::privacy::risk::release_risk(&result.release)),
        Some(persons) => out.extend(crate::privacy::risk::release_risk_per_person(
            &result.release,
            persons,
        )),
    }
    out
}

/// Schema of the method's diagnostics: one row per lattice node.
pub fn upa_diagnostics_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("node", DataType::Utf8, false),
        Field::new("chosen", DataType::Boolean, false),
        Field::new("status", DataType::Utf8, false),
        Field::new("max_degree", DataType::Float64, true),
        Field::new("classes", DataType::UInt64, false),
        Field::new("counterfeits", DataType::UInt64, false),
        Field::new("catalog_groups", DataType::UInt64, false),
        Field::new("lm", DataType::Float64, true),
        Field::new("rce", DataType::Float64, true),
    ]))
}

/// The diagnostics batch.
pub fn upa_diagnostics_batch(outcomes: &[NodeOutcome], chosen: usize) -> Result<RecordBatch> {
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(
            outcomes.iter().map(|o| node_label(&o.node)),
        )),
        Arc::new(BooleanArray::from_iter(
            (0..outcomes.len()).map(|i| Some(i == chosen)),
        )),
        Arc::new(StringArray::from_iter_values(
            outcomes.iter().map(|o| o.status.as_str()),
        )),
        Arc::new(Float64Array::from_iter(
            outcomes.iter().map(|o| o.max_degree),
        )),
        Arc::new(UInt64Array::from_iter_values(
            outcomes.iter().map(|o| o.classes as u64),
        )),
        Arc::new(UInt64Array::from_iter_values(
            outcomes.iter().map(|o| o.counterfeits),
        )),
        Arc::new(UInt64Array::from_iter_values(
            outcomes.iter().map(|o| o.groups as u64),
        )),
        Arc::new(Float64Array::from_iter(outcomes.iter().map(|o| o.lm))),
        Arc::new(Float64Array::from_iter(outcomes.iter().map(|o| o.rce))),
    ];
    Ok(RecordBatch::try_new(upa_diagnostics_schema(), columns)?)
}
