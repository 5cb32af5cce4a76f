//! IPA's public metadata (with the guarantee text) and owner-only diagnostics.

use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, BooleanArray, Float64Array, RecordBatch, StringArray, UInt64Array,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::common::Result;

use super::{IpaParams, IpaVariant, NodeOutcome};
use crate::lattice::{node_label, Lattice};

/// IPA's own public metadata entries.
pub fn ipa_metadata(params: &IpaParams, lattice: &Lattice) -> Vec<(String, String)> {
    let (sup_scale, comparison) = match params.variant {
        IpaVariant::Paper => (
            format!("Lap(({}-1)/epsilon_sup)", params.threshold),
            "suppress iff |E| <= t + noise",
        ),
        IpaVariant::Reference => (
            "Lap(1/epsilon_sup), threshold clamped at t".to_string(),
            "suppress iff |E| < max(t, t + noise)",
        ),
    };
    let claimed = params.claimed_epsilon();
    let guarantee = format!(
        "No formal differential-privacy guarantee. The IPA paper (Lee & Chung 2020, Theorem 9) claims \
         epsilon-DP with epsilon = epsilon_sup + epsilon_ins + epsilon_val + epsilon_cand = {claimed}; that claim \
         does not hold: (1) every real informative value is published truthfully, which no pure epsilon-DP \
         mechanism can do; (2) only classes holding real records can appear, so a class with one record is \
         visible with probability about 0.45 at epsilon_sup = 0.1 and never without that record; (3) the \
         counterfeit count uses noise clamped at zero (one-sided), so a class's released size is never below \
         its true size; (4) all {nodes} lattice candidates are perturbed with fresh noise and scored on the \
         data, and the selection does not compose over them. Treat this release as generalized, \
         noise-augmented microdata that resists simple re-identification, not as differentially private.",
        nodes = lattice.len()
    );
    vec![
        ("variant".into(), params.variant.name().into()),
        ("epsilon".into(), format!("{claimed}")),
        ("epsilon_sup".into(), format!("{}", params.eps_sup)),
        ("epsilon_ins".into(), format!("{}", params.eps_ins)),
        ("epsilon_val".into(), format!("{}", params.eps_val)),
        ("epsilon_cand".into(), format!("{}", params.eps_cand)),
        ("suppression_threshold".into(), params.threshold.to_string()),
        (
            "suppression_noise".into(),
            format!("{sup_scale}; {comparison}"),
        ),
        (
            "insertion_noise".into(),
            "two-sided geometric (discrete Laplace) with scale 1/epsilon_ins, clamped at 0".into(),
        ),
        (
            "insert_into_suppressed".into(),
            params.insert_into_suppressed.to_string(),
        ),
        ("lattice_nodes".into(), lattice.len().to_string()),
        ("guarantee".into(), guarantee),
    ]
}

/// Schema of `anonymize_diagnostics`.
pub fn ipa_diagnostics_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("node", DataType::Utf8, false),
        Field::new("chosen", DataType::Boolean, false),
        Field::new("ncp", DataType::Float64, false),
        Field::new("emd", DataType::Float64, false),
        Field::new("rate", DataType::Float64, false),
        Field::new("il", DataType::Float64, false),
        Field::new("classes", DataType::UInt64, false),
        Field::new("suppressed_classes", DataType::UInt64, false),
        Field::new("suppressed_records", DataType::UInt64, false),
        Field::new("counterfeits", DataType::UInt64, false),
        Field::new("released_rows", DataType::UInt64, false),
    ]))
}

/// One diagnostics row per lattice node.
pub fn ipa_diagnostics_batch(outcomes: &[NodeOutcome], chosen: usize) -> Result<RecordBatch> {
    let u64s = |f: &dyn Fn(&NodeOutcome) -> u64| {
        Arc::new(UInt64Array::from_iter_values(outcomes.iter().map(f))) as ArrayRef
    };
    let f64s = |f: &dyn Fn(&NodeOutcome) -> f64| {
        Arc::new(Float64Array::from_iter_values(outcomes.iter().map(f))) as ArrayRef
    };
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(
            outcomes.iter().map(|o| node_label(&o.node)),
        )),
        Arc::new(BooleanArray::from_iter(
            (0..outcomes.len()).map(|i| Some(i == chosen)),
        )),
        f64s(&|o| o.ncp),
        f64s(&|o| o.emd),
        f64s(&|o| o.rate),
        f64s(&|o| o.il),
        u64s(&|o| o.classes as u64),
        u64s(&|o| o.suppressed_classes as u64),
        u64s(&|o| o.suppressed_records),
        u64s(&|o| o.counterfeits),
        u64s(&|o| o.released_rows),
    ];
    Ok(RecordBatch::try_new(ipa_diagnostics_schema(), columns)?)
}
