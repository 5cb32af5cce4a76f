//! Anonymization methods: each maps a histogram, parameters and a random stream to a release.

pub mod ipa;
