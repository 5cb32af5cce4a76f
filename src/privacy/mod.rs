//! Privacy-parameter calculations that must hold exactly: SafePub's sampling probability,
//! suppression threshold k and the δ they deliver, on reliable interval arithmetic; the
//! privacy models of syntactic releases (ℓ-diversity, t-closeness); re-identification risk
//! from class sizes and population uniqueness (ARX's estimators); and warnings about
//! privacy parameters that depend on the data.

pub mod assessment;
pub mod interval;
pub mod models;
pub mod population;
pub mod risk;
pub mod sampling_dp;
pub mod warnings;
