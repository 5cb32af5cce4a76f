//! Privacy-parameter calculations that must hold exactly: SafePub's sampling probability,
//! suppression threshold k and the δ they deliver, on reliable interval arithmetic; and
//! warnings about privacy parameters that depend on the data.

pub mod interval;
pub mod safepub_params;
pub mod warnings;
