//! Internals reachable from the crate's own tests, benchmarks, fuzz targets and examples.
//! Not part of the public API: nothing here is stable, and nothing here is documented for
//! embedding. Embed the crate through the items at its root.

pub use crate::demo::nps::{NPS_DEFAULT_ROWS, NPS_TABLE10_FEMALE_COUNTS, NPS_TABLE9_MALE_COUNTS};
pub use crate::hierarchy::builders::{
    interval_hierarchy_rows, mask_hierarchy_rows, parse_integer_domain, IntervalLevel,
};
pub use crate::hierarchy::load::hierarchy_from_batches;
pub use crate::hierarchy::Hierarchy;
pub use crate::histogram::GroupedHistogram;
pub use crate::lattice::Lattice;
pub use crate::mechanism::rng::rng_from_seed;
pub use crate::method::ipa::{run as run_ipa, IpaParams, IpaResult, IpaVariant};
pub use crate::method::{MethodInput, Standalone};
pub use crate::params::ParamValues;
pub use crate::privacy::individual_risk::{
    class_risk, global_threshold, individual_risk, IndividualRisk, IndividualRiskError, RiskMethod,
};
pub use crate::privacy::models::ordered_distance::{OrderedDistance, OrderedScratch};
pub use crate::privacy::suda::{
    suda2, suda2_with, DisUniques, SudaConfig, SudaResult, SudaScoring,
};
pub use crate::progress::Progress;
pub use crate::release::SUPPRESSED;
pub use crate::report::svg;
pub use crate::sql::args::{bind, CallArgs};
pub use crate::sql::functions::anonymize::ANONYMIZE_PARAMS;
pub use crate::sql::functions::FunctionList;
