//! Privacy-parameter calculations that must hold exactly: SafePub's sampling probability,
//! suppression threshold k and the δ they deliver, on reliable interval arithmetic; the
//! privacy models of syntactic releases (ℓ-diversity, t-closeness); re-identification risk
//! from class sizes, population uniqueness (ARX's estimators), sdcMicro's individual risk
//! and SUDA2's special uniques; and warnings about privacy parameters that depend on the
//! data.

pub mod assessment;
pub mod individual_risk;
pub mod interval;
pub mod models;
pub mod population;
pub mod risk;
pub mod sample_counts;
pub mod sampling_dp;
pub mod suda;
pub mod warnings;
