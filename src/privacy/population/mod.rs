//! Population uniqueness: how many records of the population are unique on the
//! quasi-identifiers, estimated from the sample's class-size histogram.
//!
//! The estimators and the decision rule follow ARX (package `org.deidentifier.arx.risk`):
//!
//! * Zayatz (1991), *Estimation of the number of unique population elements using a
//!   sample* — ARX `ModelZayatz`.
//! * Pitman's two-parameter Poisson–Dirichlet model as proposed for uniqueness by
//!   Hoshino (2001), *Applying Pitman's sampling formula to microdata disclosure risk
//!   assessment* — ARX `ModelPitman`.
//! * The slide negative binomial (SNB) model of Chen & Keller-McNulty (1998), *Estimation
//!   of identification disclosure risk in microdata* — ARX `ModelSNB`.
//! * The decision rule of Dankar, El Emam, Neisa & Roffey (2012), *Estimating the
//!   re-identification risk of clinical data sets* (BMC Med. Inf. Dec. Making 12:66) —
//!   ARX `RiskModelPopulationUniqueness.getNumUniqueTuplesDankar`.
//!
//! The two maximum-likelihood models are solved with the same Newton–Raphson procedure
//! ARX uses (library `de.linearbits.newtonraphson` 0.0.1, class `NewtonRaphson2D`, with
//! the defaults of `ARXSolverConfiguration`): accuracy 1e-6, at most 1000 iterations per
//! try, the caller's start value followed by 16 prepared start values, and ARX's digamma /
//! trigamma approximations (`org.deidentifier.arx.risk.Gamma`).
//!
//! Every figure is a number of population uniques; divide by the population size for the
//! share ([`PopulationUniqueness::share`]).

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

mod dankar;
mod gamma;
pub(crate) use gamma::ln_gamma;
mod pitman;
mod snb;
mod solver;
#[cfg(test)]
mod tests;
mod zayatz;

use pitman::pitman;
use snb::snb;
use zayatz::zayatz;

/// The result of one population-uniqueness estimator.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Estimate {
    /// Estimated number of population uniques (records of the population that are unique
    /// on the quasi-identifiers). Always finite and non-negative.
    Uniques(f64),
    /// The estimator produced no usable number: the Newton–Raphson solver found no root
    /// within its limits, or the estimate was NaN, zero, negative or infinite although the
    /// sample holds uniques (ARX reports such estimates as unavailable).
    NotConverged,
    /// The estimator was not evaluated because its model does not apply; this module uses
    /// it for the super-population models (Pitman, SNB) when the sample is the whole
    /// population (sampling fraction 1).
    NotApplicable,
}

impl Estimate {
    #[cfg(test)]
    /// The estimated number of population uniques, if there is one.
    pub fn uniques(self) -> Option<f64> {
        match self {
            Estimate::Uniques(v) => Some(v),
            _ => None,
        }
    }

    /// The estimated share of population uniques, `uniques / population_size`
    /// (ARX `getFractionOfUniqueTuples*`), if there is an estimate and the population is
    /// not empty.
    pub fn share_of(self, population_size: u64) -> Option<f64> {
        match self {
            Estimate::Uniques(v) if population_size > 0 => Some(v / population_size as f64),
            _ => None,
        }
    }
}

/// The statistical model picked by Dankar et al.'s decision rule (ARX
/// `RiskModelPopulationUniqueness.PopulationUniquenessModel`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PopulationUniquenessModel {
    /// Pitman's model (chosen for sampling fractions ≤ 0.1 when it converges).
    Pitman,
    /// Zayatz's model (fallback, or the smaller of Zayatz and SNB above 0.1).
    Zayatz,
    /// The SNB model (the smaller of Zayatz and SNB above sampling fraction 0.1).
    Snb,
    /// The sample has no uniques, so no model is needed and the estimate is 0 (ARX reports
    /// this case as model `DANKAR`).
    NoSampleUniques,
}

/// Limits of the Newton–Raphson solver, mirroring ARX's `ARXSolverConfiguration` (which
/// extends `de.linearbits.newtonraphson.NewtonRaphsonConfiguration`).
#[derive(Debug, Clone, PartialEq)]
pub struct SolverConfig {
    /// A root is accepted when both equations are within this distance of 0 (ARX: 1e-6).
    pub accuracy: f64,
    /// Newton steps per start value; a try ends after `iterations_per_try + 1` steps
    /// (ARX: 1000, and the library's `iterations++ >= iterationsPerTry` test).
    pub iterations_per_try: u32,
    /// Start values tried, in order, after the model's own start value (ARX's
    /// deterministic grid: (x, y) for x, y in {0, 0.33, 0.66, 0.99}). As in the library,
    /// the search stops right after the first Newton step from the last of them. An empty
    /// list means only the model's own start value is tried (ARX would then draw random
    /// start values, which this port does not do).
    pub start_values: Vec<(f64, f64)>,
    /// Wall-clock limit of one try (ARX: 100 ms); `None` for no limit.
    pub time_per_try: Option<Duration>,
    /// Wall-clock limit of the whole search (ARX: 1000 ms); `None` for no limit.
    pub time_total: Option<Duration>,
}

impl SolverConfig {
    /// ARX's defaults (`ARXSolverConfiguration.create()`), including its wall-clock limits
    /// of 100 ms per try and 1 s in total.
    pub fn arx_default() -> Self {
        let mut start_values = Vec::with_capacity(16);
        // ARXSolverConfiguration.getDefaultStartValues(): for (d1 = 0; d1 < 1; d1 += 0.33),
        // same for d2, accumulated in floating point exactly as there.
        let mut d1 = 0.0f64;
        while d1 < 1.0 {
            let mut d2 = 0.0f64;
            while d2 < 1.0 {
                start_values.push((d1, d2));
                d2 += 0.33;
            }
            d1 += 0.33;
        }
        Self {
            accuracy: 1e-6,
            iterations_per_try: 1000,
            start_values,
            time_per_try: Some(Duration::from_millis(100)),
            time_total: Some(Duration::from_millis(1000)),
        }
    }

    /// The same limits without the wall-clock limits, so that results do not depend on the
    /// machine's speed (iteration limits still bound the work).
    pub fn without_time_limits(mut self) -> Self {
        self.time_per_try = None;
        self.time_total = None;
        self
    }
}

impl Default for SolverConfig {
    /// [`SolverConfig::arx_default`].
    fn default() -> Self {
        Self::arx_default()
    }
}

/// Input that the estimators cannot work with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PopulationError {
    /// The sampling fraction is not in (0, 1] (or is NaN).
    InvalidSamplingFraction,
    /// The population is smaller than the sample.
    PopulationSmallerThanSample,
    /// The histogram holds classes of size 0.
    ZeroClassSize,
    /// The number of records or classes does not fit in 64 bits.
    Overflow,
}

impl fmt::Display for PopulationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = match self {
            PopulationError::InvalidSamplingFraction => "sampling fraction must be in (0, 1]",
            PopulationError::PopulationSmallerThanSample => {
                "population size must be at least the sample size"
            }
            PopulationError::ZeroClassSize => "class-size histogram holds classes of size 0",
            PopulationError::Overflow => "class-size histogram overflows 64-bit counts",
        };
        f.write_str(text)
    }
}

impl std::error::Error for PopulationError {}

/// Population-uniqueness estimates of one sample (ARX `RiskModelPopulationUniqueness`).
#[derive(Debug, Clone, PartialEq)]
pub struct PopulationUniqueness {
    /// Records in the sample, `n = Σ i·c_i`.
    pub sample_size: u64,
    /// Records in the population, `N`.
    pub population_size: u64,
    /// `n / N` as ARX computes it (`RiskModelPopulation.getSamplingFraction`).
    pub sampling_fraction: f64,
    /// Classes in the sample, `u = Σ c_i`.
    pub classes: u64,
    /// Classes of size 1 in the sample, `c_1`.
    pub sample_uniques: u64,
    /// Zayatz's estimate (ARX `ModelZayatz`).
    pub zayatz: Estimate,
    /// Pitman's estimate (ARX `ModelPitman`).
    pub pitman: Estimate,
    /// The SNB estimate (ARX `ModelSNB`).
    pub snb: Estimate,
    /// The estimate Dankar et al.'s decision rule picks (ARX
    /// `getNumUniqueTuplesDankar()`, with Zayatz as fallback).
    pub dankar: Estimate,
    /// The model the decision rule picked.
    pub dankar_model: PopulationUniquenessModel,
}

impl PopulationUniqueness {
    /// The share of population uniques of an estimate, `uniques / N`.
    pub fn share(&self, estimate: Estimate) -> Option<f64> {
        estimate.share_of(self.population_size)
    }
}

/// The population size ARX derives from a sample size and a sampling fraction:
/// `round(n / π)` (ARX `ARXPopulationModel.create(sampleSize, samplingFraction)`).
pub fn population_size_from_sampling_fraction(
    sample_size: u64,
    sampling_fraction: f64,
) -> Result<u64, PopulationError> {
    if !(sampling_fraction > 0.0 && sampling_fraction <= 1.0) {
        return Err(PopulationError::InvalidSamplingFraction);
    }
    let size = (sample_size as f64 / sampling_fraction).round();
    if !size.is_finite() || size >= u64::MAX as f64 {
        return Err(PopulationError::Overflow);
    }
    // Rounding can only move the value up from n / π ≥ n, but guard anyway.
    Ok((size as u64).max(sample_size))
}

#[cfg(test)]
/// Estimates population uniqueness from the sample's class-size histogram — pairs
/// `(class size i, number of classes of that size c_i)`, in any order, sizes may repeat —
/// and the sampling fraction `π = n / N` in (0, 1]. The population size is
/// `round(n / π)` as in ARX. Uses [`SolverConfig::arx_default`].
pub fn estimate_from_sampling_fraction(
    histogram: &[(u64, u64)],
    sampling_fraction: f64,
) -> Result<PopulationUniqueness, PopulationError> {
    estimate_from_sampling_fraction_with(histogram, sampling_fraction, &SolverConfig::default())
}

#[cfg(test)]
/// [`estimate_from_sampling_fraction`] with explicit solver limits.
pub fn estimate_from_sampling_fraction_with(
    histogram: &[(u64, u64)],
    sampling_fraction: f64,
    config: &SolverConfig,
) -> Result<PopulationUniqueness, PopulationError> {
    if !(sampling_fraction > 0.0 && sampling_fraction <= 1.0) {
        return Err(PopulationError::InvalidSamplingFraction);
    }
    let hist = Histogram::new(histogram)?;
    let population = population_size_from_sampling_fraction(hist.records, sampling_fraction)?;
    Ok(estimate(&hist, population, config))
}

#[cfg(test)]
/// Estimates population uniqueness from the sample's class-size histogram and the
/// population size `N ≥ n`. Uses [`SolverConfig::arx_default`].
pub fn estimate_from_population_size(
    histogram: &[(u64, u64)],
    population_size: u64,
) -> Result<PopulationUniqueness, PopulationError> {
    estimate_from_population_size_with(histogram, population_size, &SolverConfig::default())
}

/// [`estimate_from_population_size`] with explicit solver limits.
pub fn estimate_from_population_size_with(
    histogram: &[(u64, u64)],
    population_size: u64,
    config: &SolverConfig,
) -> Result<PopulationUniqueness, PopulationError> {
    let hist = Histogram::new(histogram)?;
    if population_size < hist.records {
        return Err(PopulationError::PopulationSmallerThanSample);
    }
    Ok(estimate(&hist, population_size, config))
}

/// A normalised class-size histogram: ascending sizes, no zero counts (ARX
/// `RiskModelHistogram`).
pub(super) struct Histogram {
    /// `(size, count)`, ascending by size, counts > 0.
    pub(super) entries: Vec<(u64, u64)>,
    pub(super) records: u64,
    pub(super) classes: u64,
}

impl Histogram {
    fn new(raw: &[(u64, u64)]) -> Result<Self, PopulationError> {
        let mut merged: BTreeMap<u64, u64> = BTreeMap::new();
        for &(size, count) in raw {
            if count == 0 {
                continue;
            }
            if size == 0 {
                return Err(PopulationError::ZeroClassSize);
            }
            let slot = merged.entry(size).or_insert(0);
            *slot = slot.checked_add(count).ok_or(PopulationError::Overflow)?;
        }
        let mut records = 0u64;
        let mut classes = 0u64;
        for (&size, &count) in &merged {
            let recs = size.checked_mul(count).ok_or(PopulationError::Overflow)?;
            records = records.checked_add(recs).ok_or(PopulationError::Overflow)?;
            classes = classes
                .checked_add(count)
                .ok_or(PopulationError::Overflow)?;
        }
        Ok(Self {
            entries: merged.into_iter().collect(),
            records,
            classes,
        })
    }

    /// Number of classes of the given size (ARX `getNumClassesOfSize`).
    pub(super) fn classes_of_size(&self, size: u64) -> u64 {
        self.entries
            .iter()
            .find(|&&(s, _)| s == size)
            .map_or(0, |&(_, c)| c)
    }
}

/// ARX's `isValid` (not NaN, not 0), tightened to finite and positive.
fn to_estimate(value: f64) -> Estimate {
    if value.is_finite() && value > 0.0 {
        Estimate::Uniques(value)
    } else {
        Estimate::NotConverged
    }
}

fn estimate(hist: &Histogram, population_size: u64, config: &SolverConfig) -> PopulationUniqueness {
    let n = hist.records;
    let c1 = hist.classes_of_size(1);
    let sampling_fraction = if population_size == 0 {
        1.0
    } else {
        n as f64 / population_size as f64
    };
    let mut result = PopulationUniqueness {
        sample_size: n,
        population_size,
        sampling_fraction,
        classes: hist.classes,
        sample_uniques: c1,
        zayatz: Estimate::Uniques(0.0),
        pitman: Estimate::Uniques(0.0),
        snb: Estimate::Uniques(0.0),
        dankar: Estimate::Uniques(0.0),
        dankar_model: PopulationUniquenessModel::NoSampleUniques,
    };
    // RiskModelPopulationUniqueness: without sample uniques every estimate is 0.
    if c1 == 0 {
        return result;
    }
    let census = population_size == n;
    result.zayatz = to_estimate(zayatz(hist, population_size as f64));
    if census {
        result.pitman = Estimate::NotApplicable;
        result.snb = Estimate::NotApplicable;
    } else {
        result.pitman = to_estimate(pitman(hist, population_size as f64, config));
        result.snb = to_estimate(snb(hist, sampling_fraction, config));
    }
    let (dankar, model) = dankar::decide(&result);
    result.dankar = dankar;
    result.dankar_model = model;
    result
}
