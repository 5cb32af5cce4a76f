//! Anonymization methods: each maps a histogram, parameters and a random stream to a
//! released histogram plus its public metadata and owner-only diagnostics.

pub mod ipa;

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
}

impl MethodParams {
    /// The method's name in SQL.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Ipa(_) => "ipa",
        }
    }

    /// The privacy parameters `(ε, δ)` one release of this method charges to its source
    /// table's budget (see the `budget` module): the method's nominal parameters, whether or
    /// not its guarantee holds (IPA: the total its paper claims, δ = 0). A method without a
    /// differential-privacy parameter returns `(0, 0)`.
    pub fn budget(&self) -> (f64, f64) {
        match self {
            Self::Ipa(params) => (params.claimed_epsilon(), 0.0),
        }
    }

    /// Schema of the method's diagnostics.
    pub fn diagnostics_schema(&self) -> SchemaRef {
        match self {
            Self::Ipa(_) => ipa::ipa_diagnostics_schema(),
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
        }
    }
}
