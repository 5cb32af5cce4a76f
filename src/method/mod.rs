//! Anonymization methods: each maps a histogram, parameters and a random stream to a
//! released histogram plus its public metadata and owner-only diagnostics.

pub mod dp_histogram;
pub mod ipa;
pub mod kanon;
pub mod safepub;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::Result;

use crate::hierarchy::Hierarchy;
use crate::histogram::GroupedHistogram;
use crate::lattice::{Lattice, Node};
use crate::mechanism::rng::AnonRng;
use crate::release::ReleasedHistogram;

/// What every method receives.
pub struct MethodInput<'a> {
    /// Leaf-level histogram of the source (phase 1).
    pub histogram: &'a GroupedHistogram,
    /// Hierarchies in quasi-identifier order.
    pub hierarchies: &'a [&'a Hierarchy],
    /// Number of distinct informative values.
    pub value_domain: usize,
    /// The generalization lattice.
    pub lattice: &'a Lattice,
    /// Progress callback `(done, total)`.
    pub progress: &'a (dyn Fn(usize, usize) + Sync),
}

/// What every method returns.
pub struct MethodOutput {
    /// The released histogram.
    pub release: ReleasedHistogram,
    /// The chosen lattice node.
    pub node: Node,
    /// Method-specific public metadata (parameters, guarantee).
    pub metadata: Vec<(String, String)>,
    /// Owner-only diagnostics, in the method's diagnostics schema.
    pub diagnostics: RecordBatch,
}

/// Parameters of the chosen method.
#[derive(Debug, Clone, PartialEq)]
pub enum MethodParams {
    /// IPA (Lee & Chung 2020).
    Ipa(ipa::IpaParams),
    /// SafePub (Bild, Kuhn & Prasser 2018).
    SafePub(safepub::SafePubParams),
    /// Optimal full-domain k-anonymity with record suppression.
    Kanon(kanon::KanonParams),
    /// Noisy contingency table over a generalized domain (ε-DP).
    DpHistogram(dp_histogram::DpHistogramParams),
}

impl MethodParams {
    /// The method's name in SQL.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Ipa(_) => "ipa",
            Self::SafePub(_) => "safepub",
            Self::Kanon(_) => "kanon",
            Self::DpHistogram(_) => "dp_histogram",
        }
    }

    /// The privacy parameters `(ε, δ)` one release of this method charges to its source
    /// table's budget (see the `budget` module): the method's nominal parameters, whether or
    /// not its guarantee holds (IPA: the total its paper claims, δ = 0). A method without a
    /// differential-privacy parameter returns `(0, 0)`.
    pub fn budget(&self) -> (f64, f64) {
        match self {
            Self::Ipa(params) => (params.claimed_epsilon(), 0.0),
            // The requested δ is charged; the delivered δ is never larger.
            Self::SafePub(params) => (params.epsilon, params.delta),
            Self::Kanon(_) => (0.0, 0.0),
            Self::DpHistogram(params) => (params.epsilon, 0.0),
        }
    }

    /// Schema of the method's diagnostics.
    pub fn diagnostics_schema(&self) -> SchemaRef {
        match self {
            Self::Ipa(_) => ipa::ipa_diagnostics_schema(),
            Self::SafePub(_) => safepub::safepub_diagnostics_schema(),
            Self::Kanon(_) => kanon::kanon_diagnostics_schema(),
            Self::DpHistogram(_) => dp_histogram::dp_histogram_diagnostics_schema(),
        }
    }

    /// Runs the method.
    pub fn run(&self, input: &MethodInput<'_>, rng: &mut AnonRng) -> Result<MethodOutput> {
        match self {
            Self::Ipa(params) => {
                let result = ipa::run_ipa(
                    input.histogram,
                    input.hierarchies,
                    input.lattice,
                    input.value_domain,
                    params,
                    rng,
                    input.progress,
                )?;
                Ok(MethodOutput {
                    node: result.outcomes[result.chosen].node.clone(),
                    metadata: ipa::ipa_metadata(params, input.lattice),
                    diagnostics: ipa::ipa_diagnostics_batch(&result.outcomes, result.chosen)?,
                    release: result.release,
                })
            }
            Self::SafePub(params) => {
                let result = safepub::run_safepub(input, params, rng)?;
                Ok(MethodOutput {
                    node: result.search.chosen.clone(),
                    metadata: safepub::safepub_metadata(params, &result, input.lattice),
                    diagnostics: safepub::safepub_diagnostics_batch(&result)?,
                    release: result.release,
                })
            }
            Self::Kanon(params) => {
                let result = kanon::run_kanon(
                    input.histogram,
                    input.hierarchies,
                    input.lattice,
                    input.value_domain,
                    params,
                    input.progress,
                )?;
                Ok(MethodOutput {
                    node: result.outcomes[result.chosen].node.clone(),
                    metadata: kanon::kanon_metadata(params, input.lattice),
                    diagnostics: kanon::kanon_diagnostics_batch(&result.outcomes, result.chosen)?,
                    release: result.release,
                })
            }
            Self::DpHistogram(params) => {
                let result = dp_histogram::run_dp_histogram(
                    input.histogram,
                    input.hierarchies,
                    input.lattice,
                    input.value_domain,
                    params,
                    rng,
                    input.progress,
                )?;
                Ok(MethodOutput {
                    node: result.stats.node.clone(),
                    metadata: dp_histogram::dp_histogram_metadata(
                        params,
                        input.hierarchies,
                        &result.stats,
                        input.value_domain,
                    ),
                    diagnostics: dp_histogram::dp_histogram_diagnostics_batch(&result.stats)?,
                    release: result.release,
                })
            }
        }
    }
}
