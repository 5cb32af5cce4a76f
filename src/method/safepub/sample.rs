//! SafePub's random sampling: every record is kept independently with probability β.
//!
//! Works on the histogram: the count `n` of every (class, informative value) pair becomes a
//! Binomial(n, β) draw, made of `n` exact Bernoulli trials with β = `num / 2^64`
//! ([`bernoulli_rational`]), so the sample has exactly the distribution of per-record coin
//! flips.

use crate::histogram::GroupedHistogram;
use crate::mechanism::noise::bernoulli_rational;
use crate::mechanism::rng::AnonRng;

/// Denominator of the sampling probability.
const BETA_DEN: u128 = 1u128 << 64;

/// Number of successes in `n` Bernoulli(`beta_num / 2^64`) trials.
pub fn binomial(rng: &mut AnonRng, n: u64, beta_num: u128) -> u64 {
    (0..n)
        .filter(|_| bernoulli_rational(rng, beta_num, BETA_DEN))
        .count() as u64
}

/// The sample of a leaf-level histogram: classes and pairs that keep no record are dropped;
/// the order of classes and values is unchanged.
pub fn sample_histogram(
    base: &GroupedHistogram,
    beta_num: u128,
    rng: &mut AnonRng,
) -> GroupedHistogram {
    let attrs = base.class_codes.len();
    let mut class_codes: Vec<Vec<u32>> = vec![Vec::new(); attrs];
    let mut class_offsets = vec![0usize];
    let mut pair_values = Vec::new();
    let mut pair_counts = Vec::new();
    for c in 0..base.class_count() {
        for p in base.class_range(c) {
            let kept = binomial(rng, base.pair_counts[p], beta_num);
            if kept > 0 {
                pair_values.push(base.pair_values[p]);
                pair_counts.push(kept);
            }
        }
        if pair_values.len() > *class_offsets.last().unwrap_or(&0) {
            for (codes, base_codes) in class_codes.iter_mut().zip(&base.class_codes) {
                codes.push(base_codes[c]);
            }
            class_offsets.push(pair_values.len());
        }
    }
    GroupedHistogram {
        levels: base.levels.clone(),
        class_codes,
        class_offsets,
        pair_values,
        pair_counts,
    }
}

/// Which records the search scores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SearchSample {
    /// A second β-sample drawn independently of the released one (the default): the search
    /// and the release use independent randomness, so their budgets compose sequentially.
    #[default]
    Independent,
    /// The released sample itself (the paper's and ARX's behaviour): the search and the
    /// release share their randomness, which the sequential composition does not cover.
    Shared,
}

impl SearchSample {
    /// Parses `independent` or `shared`.
    pub fn parse(text: &str) -> datafusion::common::Result<Self> {
        match text.trim().to_ascii_lowercase().as_str() {
            "independent" => Ok(Self::Independent),
            "shared" => Ok(Self::Shared),
            other => datafusion::common::plan_err!(
                "unknown search_sample '{other}' for method 'safepub'; valid: 'independent', 'shared'"
            ),
        }
    }

    /// The name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Independent => "independent",
            Self::Shared => "shared",
        }
    }
}
