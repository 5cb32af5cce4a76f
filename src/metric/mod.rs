//! Quality metrics of a release measured against its original data.

pub mod degree;
pub mod information_loss;
pub mod rce;
