//! Quality metrics of a release measured against its original data.

pub mod information_loss;
