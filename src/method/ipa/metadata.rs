//! IPA's public metadata (with the guarantee text) and owner-only diagnostics.

use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, BooleanArray, Float64Array, RecordBatch, StringArray, UInt64Array,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::common::Result;

use super::{NodeOutcome, NodeUtility};

use super::{CounterfeitValues, IpaParams, IpaResult, IpaVariant, NodeScore};
use crate::lattice::{node_label, Lattice};

/// IPA's own public metadata entries. `score_sensitivity` is the Δ the node choice used;
/// `leaf_domain` names the hierarchy whose leaves are the informative value domain, `None`
/// when the domain is the set of distinct values read from the data
/// ([`crate::sensitive::SensitiveDomain::leaf_domain`]).
pub fn ipa_metadata(
    params: &IpaParams,
    lattice: &Lattice,
    score_sensitivity: f64,
    leaf_domain: Option<&str>,
) -> Vec<(String, String)> {
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
    let weights = if params.qi_weights.is_empty() {
        "equal".to_string()
    } else {
        params
            .qi_weights
            .iter()
            .map(|(n, w)| format!("{n}={w}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    vec![
        ("variant".into(), params.variant.name().into()),
        ("node_score".into(), params.node_score.name().into()),
        ("epsilon".into(), format!("{}", params.claimed_epsilon())),
        ("epsilon_sup".into(), format!("{}", params.eps_sup)),
        ("epsilon_ins".into(), format!("{}", params.eps_ins)),
        ("epsilon_val".into(), format!("{}", params.eps_val)),
        ("epsilon_cand".into(), format!("{}", params.eps_cand)),
        ("epsilon_means".into(), format!("{}", params.eps_means)),
        (
            "score_sensitivity".into(),
            format!("{score_sensitivity:.6}"),
        ),
        ("qi_weights".into(), weights),
        (
            "workload".into(),
            match &params.workload {
                None => "none".to_string(),
                Some(spec) => spec
                    .iter()
                    .map(|(c, w)| match w {
                        Some(w) => format!("{c}:{w}"),
                        None => c.clone(),
                    })
                    .collect::<Vec<_>>()
                    .join(", "),
            },
        ),
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
        (
            "counterfeit_values".into(),
            match params.counterfeit_values {
                CounterfeitValues::Marginal => format!(
                    "marginal: drawn from one histogram of {} with two-sided geometric (discrete Laplace) noise of scale 1/epsilon_val on each count, clamped at 0{}; value domain: {}",
                    match &params.counterfeit_by {
                        Some(column) => format!("({column}'s label at the chosen node, informative value) over the whole table, a counterfeit drawing from its class's label's row (the suppressed class from their sum)"),
                        None => "the informative values over the whole table".to_string(),
                    },
                    if params.counterfeit_by.is_some() {
                        ", then less the noise floor ceil(ln(informative values / 0.05) / epsilon_val) (a class whose row is left empty draws from the sum)"
                    } else {
                        ""
                    },
                    match leaf_domain {
                        Some(h) => format!("the leaves of hierarchy '{h}', every leaf counted, zeros included"),
                        None => "the distinct informative values of the data".to_string(),
                    }
                ),
                CounterfeitValues::Class => "class: the exponential mechanism of the paper's Eq. 3-4 on each counterfeit's class, epsilon_val per draw".into(),
            },
        ),
        ("lattice_nodes".into(), lattice.len().to_string()),
        (
            "guarantee".into(),
            guarantee(params, lattice, score_sensitivity, leaf_domain),
        ),
    ]
}

/// What the marginal value histogram guarantees: unconditional `ε_val`-DP when the value
/// domain is a hierarchy's leaves, else only between tables with the same distinct values.
fn marginal_values_claim(leaf_domain: Option<&str>, by: Option<&str>) -> String {
    let histogram = match by {
        Some(column) => format!(
            "a noisy histogram of ({column}'s label at the chosen node, informative value) over the whole table \
             (one record is in one cell; the labels are the hierarchy's at the node chosen before)"
        ),
        None => "a noisy histogram of the informative values over the whole table".to_string(),
    };
    match leaf_domain {
        Some(h) => format!(
            "epsilon_val once, for {histogram} (epsilon_val-DP (value domain: the leaves of hierarchy '{h}'): every \
             cell gets a noisy count, zeros included, one record changes one count by 1, discrete Laplace of scale \
             1/epsilon_val) from which every counterfeit value is drawn without further cost"
        ),
        None => format!(
            "epsilon_val once, for {histogram} (discrete Laplace of scale 1/epsilon_val on each count), from which \
             every counterfeit value is drawn without further cost; this is epsilon_val-DP only between neighbouring \
             tables with the same set of distinct informative values, because the value domain is read from the data \
             (a value that only the added record has can appear among the counterfeits only when that record is \
             present); with one informative column, naming a hierarchy for it (informative => 'column:hierarchy') \
             makes its leaves the domain and the step unconditionally epsilon_val-DP"
        ),
    }
}

/// The `guarantee` text: what is proven for the chosen score, which step spends which part
/// of ε, and where the paper's claim fails (docs/METHODS.md §1.11, §1.13, §1.14).
fn guarantee(
    params: &IpaParams,
    lattice: &Lattice,
    score_sensitivity: f64,
    leaf_domain: Option<&str>,
) -> String {
    let claimed = params.claimed_epsilon() - params.eps_means;
    let means = if params.eps_means > 0.0 {
        format!(
            " The interval means of anonymize_interval_means spend epsilon_means = {} (proven epsilon_means-DP: per numeric quasi-identifier above its leaves an equal share, half for a noisy count and half for a noisy sum of offsets from the label's lower bound, discrete Laplace scaled by the label's width; the labels partition the records, and every label of the level is published). The budget charged is the sum of all five parts, {}.",
            params.eps_means,
            params.claimed_epsilon()
        )
    } else {
        String::new()
    };
    let base_failures = "(1) every real informative value is published truthfully, which no pure epsilon-DP \
         mechanism can do; (2) only classes holding real records can appear, so a class with one record is \
         visible with probability about 0.45 at epsilon_sup = 0.1 (t = 2) and never without that record; (3) the \
         counterfeit count uses noise clamped at zero (one-sided), so a class's released size is never below \
         its true size";
    let failures = match params.counterfeit_values {
        CounterfeitValues::Class => format!(
            "{base_failures}; (4) every counterfeit of a class spends epsilon_val again on the same class data"
        ),
        CounterfeitValues::Marginal => base_failures.to_string(),
    };
    let values = match params.counterfeit_values {
        CounterfeitValues::Class => "epsilon_val for each counterfeit's informative value (the paper's per-class exponential mechanism)".to_string(),
        CounterfeitValues::Marginal => marginal_values_claim(leaf_domain, params.counterfeit_by.as_deref()),
    };
    match params.node_score {
        NodeScore::Utility => format!(
            "No formal differential-privacy guarantee for the release as a whole. Proven: the choice of the \
             generalization node alone is epsilon_cand-DP ({cand}) up to the floating-point rounding of its scores: an \
             exact exponential mechanism (no floating point on its sampling path; epsilon_cand rounded down to a \
             multiple of 2^-30) over a score computed on the true class sizes of each of the {nodes} lattice nodes \
             from public quantities only (hierarchies, qi_weights, the workload, t and the noise scales; not the number of \
             records), whose sensitivity is proven to be at most {score_sensitivity:.4} for the exact real-valued \
             score when one record is added or removed. The scores are sums computed in floating point; if each is \
             within E of its exact value, the choice is epsilon_cand * (1 + 2E/{score_sensitivity:.4})-DP, with E at \
             most about (m + 10) * 2^-53 times the node's total cost for m classes, a bound that grows with the \
             number of records (2E/Delta is below 1e-5 on 1.36 million records; docs/METHODS.md section 1.13). The \
             data are then perturbed once, at \
             the chosen node (Algorithm 1): epsilon_sup for the noisy suppression threshold, epsilon_ins for the \
             counterfeit counts, {values}. The paper (Lee & Chung 2020, \
             Theorem 9) claims epsilon-DP with epsilon = epsilon_sup + epsilon_ins + epsilon_val + epsilon_cand = \
             {claimed}; for the perturbation step that claim does not hold: {failures}. Treat this release as \
             generalized, noise-augmented microdata that resists simple re-identification, not as differentially \
             private.{means}",
            cand = params.eps_cand,
            nodes = lattice.len()
        ),
        NodeScore::Paper => format!(
            "No formal differential-privacy guarantee. The IPA paper (Lee & Chung 2020, Theorem 9) claims \
             epsilon-DP with epsilon = epsilon_sup + epsilon_ins + epsilon_val + epsilon_cand = {claimed}; that claim \
             does not hold: {failures}; (5) all {nodes} lattice candidates are perturbed with fresh noise and scored \
             on the data, and the selection does not compose over them (its score has sensitivity \
             {score_sensitivity} only because it is bounded, so the choice is nearly uniform). Treat this release \
             as generalized, noise-augmented microdata that resists simple re-identification, not as \
             differentially private.{means}",
            nodes = lattice.len()
        ),
    }
}

/// Schema of `anonymize_diagnostics`: one row per lattice node. `score` is the node score
/// the selection used; the expected counts exist for the utility score; the perturbation
/// columns (ncp … released_rows) for every perturbed candidate (every node with
/// `node_score => 'paper'`, only the chosen one with `'utility'`).
pub fn ipa_diagnostics_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("node", DataType::Utf8, false),
        Field::new("chosen", DataType::Boolean, false),
        Field::new("score", DataType::Float64, false),
        Field::new("expected_suppressed", DataType::Float64, true),
        Field::new("expected_counterfeits", DataType::Float64, true),
        Field::new("ncp", DataType::Float64, true),
        Field::new("emd", DataType::Float64, true),
        Field::new("rate", DataType::Float64, true),
        Field::new("il", DataType::Float64, true),
        Field::new("classes", DataType::UInt64, true),
        Field::new("suppressed_classes", DataType::UInt64, true),
        Field::new("suppressed_records", DataType::UInt64, true),
        Field::new("counterfeits", DataType::UInt64, true),
        Field::new("released_rows", DataType::UInt64, true),
    ]))
}

/// One diagnostics row per lattice node.
pub fn ipa_diagnostics_batch(result: &IpaResult, lattice: &Lattice) -> Result<RecordBatch> {
    let nodes = lattice.nodes();
    let chosen_node = &result.outcomes[result.chosen].node;
    // The paper's utility is max_il − il with max_il = Δu (3, or 1 for `reference`).
    let max_il = result.score_sensitivity;
    // The perturbed candidate of each node, if any.
    let outcome_of: Vec<Option<&NodeOutcome>> = if result.utilities.is_empty() {
        result.outcomes.iter().map(Some).collect()
    } else {
        nodes
            .iter()
            .map(|n| (n == chosen_node).then(|| &result.outcomes[result.chosen]))
            .collect()
    };
    let score = |i: usize| -> f64 {
        match result.utilities.get(i) {
            Some(u) => u.score,
            // The paper's utility max_il − il, with max_il = Δu (3 or 1).
            None => outcome_of[i].map_or(f64::NAN, |o| max_il - o.il),
        }
    };
    let opt_f64 = |f: &dyn Fn(&NodeOutcome) -> f64| {
        Arc::new(Float64Array::from_iter(outcome_of.iter().map(|o| o.map(f)))) as ArrayRef
    };
    let opt_u64 = |f: &dyn Fn(&NodeOutcome) -> u64| {
        Arc::new(UInt64Array::from_iter(outcome_of.iter().map(|o| o.map(f)))) as ArrayRef
    };
    let expected = |f: &dyn Fn(&NodeUtility) -> f64| {
        Arc::new(Float64Array::from_iter(
            (0..nodes.len()).map(|i| result.utilities.get(i).map(f)),
        )) as ArrayRef
    };
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(
            nodes.iter().map(|n| node_label(n)),
        )),
        Arc::new(BooleanArray::from_iter(
            nodes.iter().map(|n| Some(n == chosen_node)),
        )),
        Arc::new(Float64Array::from_iter_values((0..nodes.len()).map(score))),
        expected(&|u| u.expected_suppressed),
        expected(&|u| u.expected_counterfeits),
        opt_f64(&|o| o.ncp),
        opt_f64(&|o| o.emd),
        opt_f64(&|o| o.rate),
        opt_f64(&|o| o.il),
        opt_u64(&|o| o.classes as u64),
        opt_u64(&|o| o.suppressed_classes as u64),
        opt_u64(&|o| o.suppressed_records),
        opt_u64(&|o| o.counterfeits),
        opt_u64(&|o| o.released_rows),
    ];
    Ok(RecordBatch::try_new(ipa_diagnostics_schema(), columns)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guarantee_of(leaf_domain: Option<&str>) -> String {
        let mut params = IpaParams::with_defaults(IpaVariant::Paper, 1.0, 2);
        params.node_score = NodeScore::Utility;
        params.counterfeit_values = CounterfeitValues::Marginal;
        let lattice = Lattice::new(vec![1, 1], 1000).expect("lattice");
        let metadata = ipa_metadata(&params, &lattice, 3.2285, leaf_domain);
        metadata
            .into_iter()
            .find(|(k, _)| k == "guarantee")
            .map(|(_, v)| v)
            .unwrap_or_default()
    }

    /// Without a hierarchy the value domain is read from the data: the marginal histogram's
    /// claim states its condition and is not called proven; with one it is unconditional
    /// and names the hierarchy.
    #[test]
    fn the_marginal_value_claim_depends_on_a_public_domain() {
        let claim = marginal_values_claim(None, None);
        assert!(!claim.to_lowercase().contains("proven"), "{claim}");
        let text = guarantee_of(None);
        assert!(
            text.contains(
                "only between neighbouring tables with the same set of distinct informative values"
            ),
            "{text}"
        );
        assert!(!text.contains("proven epsilon_val"), "{text}");
        let text = guarantee_of(Some("disease_h"));
        assert!(
            text.contains("epsilon_val-DP (value domain: the leaves of hierarchy 'disease_h')"),
            "{text}"
        );
        assert!(!text.contains("same set of distinct"), "{text}");
    }
}
