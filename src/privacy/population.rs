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
use std::time::{Duration, Instant};

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
struct Histogram {
    /// `(size, count)`, ascending by size, counts > 0.
    entries: Vec<(u64, u64)>,
    records: u64,
    classes: u64,
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
    fn classes_of_size(&self, size: u64) -> u64 {
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
    // Decision rule by Dankar et al. (RiskModelPopulationUniqueness.getNumUniqueTuplesDankar
    // with useZayatzAsFallback = true).
    let (dankar, model) = if sampling_fraction <= 0.1 {
        match result.pitman {
            Estimate::Uniques(_) => (result.pitman, PopulationUniquenessModel::Pitman),
            _ => (result.zayatz, PopulationUniquenessModel::Zayatz),
        }
    } else {
        match (result.snb, result.zayatz) {
            (Estimate::Uniques(s), Estimate::Uniques(z)) if z < s => {
                (result.zayatz, PopulationUniquenessModel::Zayatz)
            }
            (Estimate::Uniques(_), _) => (result.snb, PopulationUniquenessModel::Snb),
            _ => (result.zayatz, PopulationUniquenessModel::Zayatz),
        }
    };
    result.dankar = dankar;
    result.dankar_model = model;
    result
}

// ---------------------------------------------------------------------------------------
// Zayatz
// ---------------------------------------------------------------------------------------

/// Hypergeometric probability that a sample of `n` out of `population` holds exactly one
/// of the `size` population members of a class: `size · C(N−size, n−1) / C(N, n)`,
/// evaluated as `size · (n/N) · Π_{j=1}^{size−1} (N−n−size+1+j)/(N−j)` (Apache Commons
/// Math `HypergeometricDistribution(N, size, n).probability(1)` in ARX).
fn hypergeometric_one(population: f64, size: u64, n: f64) -> f64 {
    if population <= 0.0 || n <= 0.0 {
        return 0.0;
    }
    let s = size as f64;
    let mut p = s * (n / population);
    let base = population - n - s + 1.0;
    let mut j = 1u64;
    while j < size {
        let jf = j as f64;
        let num = base + jf;
        if num <= 0.0 {
            return 0.0;
        }
        p *= num / (population - jf);
        if p == 0.0 {
            return 0.0;
        }
        j += 1;
    }
    p
}

/// Zayatz's estimate (ARX `ModelZayatz`): the probability that a sample unique is a
/// population unique,
/// `P = (c_1/u)·P_1(1) / Σ_i (c_i/u)·P_i(1)` with `P_i(1)` the hypergeometric probability
/// of drawing exactly one member of a population class of size `i` into a sample of `n`
/// out of `N`, and the estimate `c_1 · P / (n/N)`.
fn zayatz(hist: &Histogram, population: f64) -> f64 {
    let n = hist.records as f64;
    let u = hist.classes as f64;
    let c1 = hist.classes_of_size(1) as f64;
    let mut temp = 0.0;
    for &(size, count) in &hist.entries {
        temp += (count as f64 / u) * hypergeometric_one(population, size, n);
    }
    let uniqueness = ((c1 / u) * hypergeometric_one(population, 1, n)) / temp;
    c1 * uniqueness / (n / population)
}

// ---------------------------------------------------------------------------------------
// Pitman
// ---------------------------------------------------------------------------------------

/// Pitman's estimate (ARX `ModelPitman`): maximum-likelihood estimates of θ and α of the
/// Pitman sampling formula, solving
/// `Σ_{i=1}^{u−1} 1/(θ+iα) − Σ_{i=1}^{n−1} 1/(θ+i) = 0` and
/// `Σ_{i=1}^{u−1} i/(θ+iα) − Σ_{j≥2} c_j Σ_{k=1}^{j−1} 1/(k−α) = 0`
/// (closed forms via digamma/trigamma first, checked against and if need be replaced by the
/// direct sums), then `N^α · Γ(θ+1)/Γ(θ+α)` population uniques.
fn pitman(hist: &Histogram, population: f64, config: &SolverConfig) -> f64 {
    let c1 = hist.classes_of_size(1) as f64;
    let mut c2 = hist.classes_of_size(2) as f64;
    let u = hist.classes as f64;
    let n = hist.records as f64;
    let p = population;

    // Initial guess (ModelPitman constructor).
    c2 = if c2 != 0.0 { c2 } else { 1.0 };
    let c = (c1 * (c1 - 1.0)) / c2;
    let t = ((n * u * c) - (c1 * (n - 1.0) * ((2.0 * u) + c)))
        / (((2.0 * c1 * u) + (c1 * c)) - (n * c));
    let a = ((t * (c1 - n)) + ((n - 1.0) * c1)) / (n * u);

    let classes = &hist.entries;
    let constraint = |theta: f64, _alpha: f64| theta >= 0.0;
    let mut result = newton_raphson(
        |x, y| pitman_closed(classes, u, n, x, y),
        constraint,
        (t, a),
        config,
    );
    let use_iterative = if result.0.is_nan() || result.1.is_nan() {
        true
    } else {
        let test = pitman_iterative(classes, u, n, result.0, result.1, false).0;
        test[0].is_nan()
            || test[1].is_nan()
            || test[0].abs() > config.accuracy
            || test[1].abs() > config.accuracy
    };
    if use_iterative {
        result = newton_raphson(
            |x, y| pitman_iterative(classes, u, n, x, y, true),
            constraint,
            (t, a),
            config,
        );
    }
    pitman_result(result.0, result.1, p)
}

/// `ModelPitman.getMasterFunctionClosed`: the likelihood equations and their Jacobian in
/// closed form (digamma / trigamma), term by term as in ARX.
fn pitman_closed(classes: &[(u64, u64)], u: f64, n: f64, t: f64, a: f64) -> ([f64; 2], [f64; 4]) {
    let val0 = u - 1.0;
    let val1 = arx_digamma(val0 + (t / a) + 1.0);
    let val2 = arx_trigamma((a + t + (a * val0)) / a);
    let val3 = arx_trigamma((t / a) + 1.0);
    let val4 = arx_digamma((t / a) + 1.0);
    let val5 = a * a;

    let d1 = (val3 - val2) / val5;
    let d5 = (((a * val1) + (t * val2)) - (a * val4) - (t * val3)) / (val5 * a);
    let d3 = (((((val5 * val0) - (t * t * val2)) + (t * t * val3)) - (2.0 * a * t * val1))
        + (2.0 * a * t * val4))
        / (val5 * val5);
    let o1 = (val1 - val4) / a;
    let o3 = ((-t * val1) + (a * val0) + (t * val4)) / (a * a);
    let o2 = arx_digamma(n + t) - arx_digamma(t + 1.0);
    let d2 = arx_trigamma(t + 1.0) - arx_trigamma(n + t);

    let mut d4 = 0.0;
    let mut o4 = 0.0;
    let val6 = arx_digamma(1.0 - a);
    let val7 = arx_trigamma(1.0 - a);
    for &(key, value) in classes {
        if key != 1 {
            let key = key as f64;
            let value = value as f64;
            d4 += value * (val7 - arx_trigamma(key - a));
            o4 += value * (arx_digamma(key - a) - val6);
        }
    }
    (
        [o1 - o2, o3 - o4],
        [d2 - d1, 0.0 - d5, 0.0 - d5, 0.0 - d3 - d4],
    )
}

/// `ModelPitman.getMasterFunctionIterative` (and, without derivatives,
/// `getObjectFunctionsIterative`): the likelihood equations as direct sums.
fn pitman_iterative(
    classes: &[(u64, u64)],
    u: f64,
    n: f64,
    t: f64,
    a: f64,
    derivatives: bool,
) -> ([f64; 2], [f64; 4]) {
    let (mut d1, mut d2, mut d3, mut d4, mut d5) = (0.0, 0.0, 0.0, 0.0, 0.0);
    let (mut o1, mut o2, mut o3, mut o4) = (0.0, 0.0, 0.0, 0.0);

    let mut i = 1u64;
    while (i as f64) < u {
        let fi = i as f64;
        let val0 = t + (fi * a);
        let val1 = 1.0 / val0;
        o1 += val1;
        o3 += fi * val1;
        if derivatives {
            let val3 = 1.0 / (val0 * val0);
            let val4 = fi * val3;
            d1 += val3;
            d5 += val4;
            d3 += fi * val4;
        }
        i += 1;
    }
    for &(key, value) in classes {
        if key != 1 {
            let mut v1 = 0.0;
            let mut v2 = 0.0;
            let mut j = 1u64;
            while j < key {
                let val3 = j as f64 - a;
                if derivatives {
                    v1 += 1.0 / (val3 * val3);
                }
                v2 += 1.0 / val3;
                j += 1;
            }
            d4 += value as f64 * v1;
            o4 += value as f64 * v2;
        }
    }
    let mut i = 1u64;
    while (i as f64) < n {
        let val0 = t + i as f64;
        if derivatives {
            d2 += 1.0 / (val0 * val0);
        }
        o2 += 1.0 / val0;
        i += 1;
    }
    (
        [o1 - o2, o3 - o4],
        [d2 - d1, 0.0 - d5, 0.0 - d5, 0.0 - d3 - d4],
    )
}

/// `ModelPitman.getResult`: `N^α · Γ(θ+1)/Γ(θ+α)`, computed once through log-gamma and
/// once through gamma; each is kept only if it lies in [0, N], and the larger is used.
fn pitman_result(t: f64, a: f64, p: f64) -> f64 {
    if a.is_nan() || t.is_nan() || a == 0.0 {
        return f64::NAN;
    }
    let keep = |v: f64| if v >= 0.0 && v <= p { v } else { f64::NAN };
    let val1 = keep((ln_gamma(t + 1.0) - ln_gamma(t + a)).exp() * p.powf(a));
    let val2 = keep((gamma(t + 1.0) / gamma(t + a)) * p.powf(a));
    match (val1.is_nan(), val2.is_nan()) {
        (true, true) => f64::NAN,
        (false, false) => val1.max(val2),
        (true, false) => val2,
        (false, true) => val1,
    }
}

// ---------------------------------------------------------------------------------------
// SNB
// ---------------------------------------------------------------------------------------

/// The SNB estimate (ARX `ModelSNB`): the number of non-empty population classes `K` is
/// estimated with ARX's variant of Haas & Stokes' Shlosser estimator,
/// `K = u + c_1 · (Σ i f² (1−f²)^{i−1} c_i / Σ [(1−f)^i c_i (1+f)^i − 1])
///       · (Σ (1−f)^i c_i / Σ i f (1−f)^{i−1} c_i)²`,
/// then α and β solve ARX's two SNB moment equations for `c_1` and `c_2`, and the estimate
/// is `K · β^α`.
fn snb(hist: &Histogram, f: f64, config: &SolverConfig) -> f64 {
    let c1 = hist.classes_of_size(1) as f64;
    let c2 = hist.classes_of_size(2) as f64;
    let k = snb_nonempty_classes(&hist.entries, hist.classes as f64, c1, f);
    let result = newton_raphson(
        |a, b| (snb_object(k, f, c1, c2, a, b), snb_derivatives(k, f, a, b)),
        |_, _| true,
        (1.0, 1.0),
        config,
    );
    k * result.1.powf(result.0)
}

/// `ModelSNB.estimateNonEmptyEquivalenceClasses`, literally (including its `− 1` inside
/// the second sum).
fn snb_nonempty_classes(classes: &[(u64, u64)], u: f64, c1: f64, f: f64) -> f64 {
    let (mut var1, mut var2, mut var3, mut var4) = (0.0, 0.0, 0.0, 0.0);
    let var5 = f * f;
    for &(size, count) in classes {
        let val0 = size as f64;
        let val1 = count as f64;
        let val2 = (1.0 - f).powf(val0) * val1;
        var1 += val0 * var5 * (1.0 - var5).powf(val0 - 1.0) * val1;
        var2 += val2 * (1.0 + f).powf(val0) - 1.0;
        var3 += val2;
        var4 += val0 * f * (1.0 - f).powf(val0 - 1.0) * val1;
    }
    u + c1 * (var1 / var2) * (var3 / var4) * (var3 / var4)
}

/// `ModelSNB.getObjectFunction`, literally.
fn snb_object(k: f64, f: f64, c1: f64, c2: f64, a: f64, b: f64) -> [f64; 2] {
    let dividend = (1.0 - f) * (1.0 - b);
    let x =
        k * f * (b / (1.0 - dividend)).powf(a) * (((a * dividend) / (1.0 - dividend)) + 1.0) - c1;
    let y = k * a * b.powf(a) * (f * f) * (1.0 - b) / 2.0
        * (1.0 - dividend).powf(a + 2.0)
        * (2.0 - (1.0 - a) * dividend)
        - c2;
    [x, y]
}

/// `ModelSNB.getDerivatives`, literally.
fn snb_derivatives(k: f64, f: f64, a: f64, b: f64) -> [f64; 4] {
    let val0 = (b - 1.0) * (f - 1.0);
    let val1 = val0 - 1.0;
    let val2 = 1.0 - val0;
    let val3 = a * val0 / val1 - 1.0;
    let val4 = (-b / val1).powf(a);
    let val6 = f.powf(2.0);
    let val7 = b.powf(a);
    let val8 = val7 * val6 * k;
    let val9 = a * val8;
    let val10 = 2.0 * val2.powf(a + 2.0);
    let val11 = val1.powf(2.0);
    let val13 = f * k;
    let val14 = f - 1.0;
    let val15 = a - 1.0;
    let val16 = b - 1.0;
    let val17 = val15 * val0;
    let val18 = val6 * k;
    let val19 = val17 + 2.0;
    let val20 = val18 * val19;

    let x1 = -val13 * (-b / val1).ln() * val3 * val4 - (val13 * val4 * val0) / val1;
    let x2 = a * val13 * (1.0 / val1 - (b * val14) / val11) * val3 * (-b / val1).powf(val15)
        - val13 * val4 * ((a * val14) / val1 - (a * val16 * val14.powf(2.0)) / val11);
    let y1 = (val9 * val2.ln() * val19 * val16) / val10
        - (val9 * val16.powf(2.0) * val14) / val10
        - (val7 * val20 * val16) / val10
        - (a * val7 * val18 * b.ln() * val19 * val16) / val10;
    let y2 = -(val9 * val19) / val10
        - (a.powf(2.0) * b.powf(val15) * val20 * val16) / val10
        - (a * val7 * val18 * val17) / val10
        - (a * val7 * val20 * (a + 2.0) * val0) / (2.0 * val2.powf(a + 3.0));
    [x1, x2, y1, y2]
}

// ---------------------------------------------------------------------------------------
// Newton–Raphson (de.linearbits.newtonraphson.NewtonRaphson2D._solve)
// ---------------------------------------------------------------------------------------

/// Two-dimensional Newton–Raphson as in `NewtonRaphson2D._solve`: `function` returns the
/// two equation values and the Jacobian `[∂f1/∂x, ∂f1/∂y, ∂f2/∂x, ∂f2/∂y]`. Returns the
/// root, or `(NaN, NaN)` when none was found within the limits.
fn newton_raphson<F, C>(
    mut function: F,
    constraint: C,
    start: (f64, f64),
    config: &SolverConfig,
) -> (f64, f64)
where
    F: FnMut(f64, f64) -> ([f64; 2], [f64; 4]),
    C: Fn(f64, f64) -> bool,
{
    let prepared = &config.start_values;
    let per_try = u64::from(config.iterations_per_try);
    // NewtonRaphson2D.configure: with prepared start values the total is (len + 1) · per try.
    let iterations_total = (prepared.len() as u64 + 1).saturating_mul(per_try);
    let total_start = Instant::now();
    let mut total_iterations = 0u64;
    let mut offset = 0usize;
    let mut first = true;

    'outer: while total_iterations <= iterations_total {
        let try_start = Instant::now();
        let mut iterations = 0u64;
        let (mut x, mut y) = if first {
            first = false;
            start
        } else if let Some(&value) = prepared.get(offset) {
            offset += 1;
            value
        } else {
            // ARX would draw random start values here; this port stops.
            break 'outer;
        };

        loop {
            total_iterations += 1;
            let (object, d) = function(x, y);
            if object[0].abs() <= config.accuracy && object[1].abs() <= config.accuracy {
                return (x, y);
            }
            // SquareMatrix2D.inverse(), Vector2D.times(), Vector2D.minus().
            let scalar = 1.0 / (d[0] * d[3] - d[1] * d[2]);
            let (i1, i2, i3, i4) = (d[3] * scalar, -d[1] * scalar, -d[2] * scalar, d[0] * scalar);
            let step_x = i1 * object[0] + i2 * object[1];
            let step_y = i3 * object[0] + i4 * object[1];
            x -= step_x;
            y -= step_y;

            let over_total = config
                .time_total
                .is_some_and(|limit| total_start.elapsed() > limit);
            if over_total || (!prepared.is_empty() && offset == prepared.len()) {
                break 'outer;
            }
            if !constraint(x, y) {
                break;
            }
            let exhausted = iterations >= per_try;
            iterations += 1;
            let over_try = config
                .time_per_try
                .is_some_and(|limit| try_start.elapsed() > limit);
            if x.is_nan() || y.is_nan() || exhausted || over_try {
                break;
            }
        }
    }
    (f64::NAN, f64::NAN)
}

// ---------------------------------------------------------------------------------------
// Special functions
// ---------------------------------------------------------------------------------------

const DIGAMMA_1: f64 = -0.577_215_664_901_532_9;
const TRIGAMMA_1: f64 = std::f64::consts::PI * std::f64::consts::PI / 6.0;
const TETRAGAMMA_1: f64 = -2.0 * 1.202_056_903_159_594_2;
const LARGE_DIGAMMA: f64 = 12.0;
const LARGE_TRIGAMMA: f64 = 8.0;
const SMALL_DIGAMMA: f64 = 1e-6;
const SMALL_TRIGAMMA: f64 = 1e-4;
const S3: f64 = 1.0 / 12.0;
const S4: f64 = 1.0 / 120.0;
const S5: f64 = 1.0 / 252.0;
const S6: f64 = 1.0 / 240.0;
const S7: f64 = 1.0 / 132.0;
const B2: f64 = 1.0 / 6.0;
const B4: f64 = -1.0 / 30.0;
const B6: f64 = 1.0 / 42.0;
const B8: f64 = -1.0 / 30.0;
const B10: f64 = 5.0 / 66.0;

/// Digamma ψ(x) as ARX's `Gamma.digamma` (a port of Minka's Lightspeed toolbox 2.7):
/// reflection for x < 0, Taylor series for x ≤ 1e-6, recurrence up to 12 and de Moivre's
/// asymptotic expansion.
fn arx_digamma(x: f64) -> f64 {
    if x.is_infinite() || x.is_nan() {
        return f64::NAN;
    }
    if x == 0.0 {
        return f64::NEG_INFINITY;
    }
    if x < 0.0 {
        return arx_digamma(1.0 - x) + std::f64::consts::PI / (-std::f64::consts::PI * x).tan();
    }
    if x <= SMALL_DIGAMMA {
        return (DIGAMMA_1 - (1.0 / x)) + (TRIGAMMA_1 * x);
    }
    let mut x = x;
    let mut result = 0.0;
    while x < LARGE_DIGAMMA {
        result -= 1.0 / x;
        x += 1.0;
    }
    let mut r = 1.0 / x;
    result += x.ln() - (0.5 * r);
    r *= r;
    result -= r * (S3 - (r * (S4 - (r * (S5 - (r * (S6 - (r * S7))))))));
    result
}

/// Trigamma ψ′(x) exactly as ARX's `Gamma.trigamma` computes it. ARX reduces the argument
/// until it is at least 8 (`LARGE_TRIGAMMA`) but adds the asymptotic tail only when it is at
/// least 12 (`LARGE_DIGAMMA`); for arguments below 12 the result therefore lacks the tail
/// `ψ′(x+m)` and is too small. The Pitman solver only uses it in the Jacobian (the root is
/// checked against the exact equations), so the port keeps ARX's behaviour to follow the
/// same Newton path.
fn arx_trigamma(x: f64) -> f64 {
    if x.is_infinite() || x.is_nan() {
        return f64::NAN;
    }
    if x == 0.0 {
        return f64::NEG_INFINITY;
    }
    if x < 0.0 {
        let r = std::f64::consts::PI / (-std::f64::consts::PI * x).sin();
        return -arx_trigamma(1.0 - x) + (r * r);
    }
    if x <= SMALL_TRIGAMMA {
        return (1.0 / (x * x)) + TRIGAMMA_1 + (TETRAGAMMA_1 * x);
    }
    let mut x = x;
    let mut result = 0.0;
    while x < LARGE_TRIGAMMA {
        result += 1.0 / (x * x);
        x += 1.0;
    }
    if x >= LARGE_DIGAMMA {
        let r = 1.0 / (x * x);
        result +=
            (0.5 * r) + ((1.0 + (r * (B2 + (r * (B4 + (r * (B6 + (r * (B8 + (r * B10)))))))))) / x);
    }
    result
}

/// Lanczos coefficients (g = 7, n = 9).
const LANCZOS: [f64; 9] = [
    0.999_999_999_999_809_9,
    676.520_368_121_885_1,
    -1_259.139_216_722_402_8,
    771.323_428_777_653_1,
    -176.615_029_162_140_6,
    12.507_343_278_686_905,
    -0.138_571_095_265_720_12,
    9.984_369_578_019_572e-6,
    1.505_632_735_149_311_6e-7,
];

/// ln Γ(x) for x ≥ 0.5 by the Lanczos approximation.
fn ln_gamma_lanczos(x: f64) -> f64 {
    let x = x - 1.0;
    let mut sum = LANCZOS[0];
    for (i, &c) in LANCZOS.iter().enumerate().skip(1) {
        sum += c / (x + i as f64);
    }
    let t = x + 7.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

/// ln Γ(x) for x > 0; NaN for x ≤ 0 or NaN, like Apache Commons Math `Gamma.logGamma`.
fn ln_gamma(x: f64) -> f64 {
    if x.is_nan() || x <= 0.0 {
        return f64::NAN;
    }
    if x.is_infinite() {
        return f64::INFINITY;
    }
    if x < 0.5 {
        // Reflection: Γ(x) Γ(1−x) = π / sin(πx), positive for 0 < x < 1.
        return (std::f64::consts::PI / (std::f64::consts::PI * x).sin()).ln()
            - ln_gamma_lanczos(1.0 - x);
    }
    ln_gamma_lanczos(x)
}

/// Γ(x), including negative non-integers (reflection); NaN at 0 and the negative integers,
/// like Apache Commons Math `Gamma.gamma`.
fn gamma(x: f64) -> f64 {
    if x.is_nan() || (x <= 0.0 && x == x.floor()) {
        return f64::NAN;
    }
    if x >= 0.5 {
        return ln_gamma_lanczos(x).exp();
    }
    let s = (std::f64::consts::PI * x).sin();
    std::f64::consts::PI / (s * gamma(1.0 - x))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> SolverConfig {
        SolverConfig::arx_default().without_time_limits()
    }

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * a.abs().max(b.abs()).max(1e-300)
    }

    /// The class-size histogram of ARX's `data/adult.csv` (30,162 records) on all nine
    /// attributes, which `TestRiskMetrics.testDecisionRule2` uses as quasi-identifiers.
    const ADULT: [(u64, u64); 34] = [
        (1, 15512),
        (2, 2098),
        (3, 754),
        (4, 375),
        (5, 189),
        (6, 155),
        (7, 97),
        (8, 73),
        (9, 39),
        (10, 37),
        (11, 29),
        (12, 18),
        (13, 23),
        (14, 14),
        (15, 15),
        (16, 9),
        (17, 11),
        (18, 10),
        (19, 10),
        (20, 5),
        (21, 3),
        (22, 4),
        (23, 3),
        (24, 2),
        (25, 1),
        (26, 3),
        (27, 5),
        (29, 1),
        (30, 2),
        (32, 1),
        (34, 1),
        (35, 1),
        (36, 1),
        (45, 1),
    ];

    /// ARX's `compareUniqueness`: equality on four decimal digits, by truncation.
    fn arx_digits(v: f64) -> i64 {
        (v * 10000.0) as i64
    }

    #[test]
    fn adult_matches_arx_test_risk_metrics() {
        let n = 30162u64;
        assert_eq!(ADULT.iter().map(|&(i, c)| i * c).sum::<u64>(), n);
        // TestRiskMetrics.testDecisionRule2, sampling fraction 0.1: Pitman 0.27684993883653597
        // or, when Pitman does not converge, Zayatz 0.3207402393466189.
        let r = estimate_from_sampling_fraction_with(&ADULT, 0.1, &cfg()).unwrap();
        assert_eq!(r.population_size, 301_620);
        let share = r.share(r.dankar).unwrap();
        match r.dankar_model {
            PopulationUniquenessModel::Pitman => {
                assert_eq!(arx_digits(share), arx_digits(0.276_849_938_836_535_97))
            }
            PopulationUniquenessModel::Zayatz => {
                assert_eq!(arx_digits(share), arx_digits(0.320_740_239_346_618_9))
            }
            other => panic!("unexpected model {other:?}"),
        }
        // Zayatz's number is the same whichever model the rule picks.
        assert_eq!(
            arx_digits(r.share(r.zayatz).unwrap()),
            arx_digits(0.320_740_239_346_618_9)
        );
        // Sampling fraction 0.2: 0.3577099234829125.
        let r = estimate_from_sampling_fraction_with(&ADULT, 0.2, &cfg()).unwrap();
        assert_eq!(
            arx_digits(r.share(r.dankar).unwrap()),
            arx_digits(0.357_709_923_482_912_5)
        );
        // Sampling fraction 0.01: 0.1446083531167384.
        let r = estimate_from_sampling_fraction_with(&ADULT, 0.01, &cfg()).unwrap();
        assert_eq!(
            arx_digits(r.share(r.dankar).unwrap()),
            arx_digits(0.144_608_353_116_738_4)
        );
        // Sampling fraction 1: 0.5142895033485844 = sample uniqueness 15512 / 30162.
        let r = estimate_from_sampling_fraction_with(&ADULT, 1.0, &cfg()).unwrap();
        assert_eq!(
            arx_digits(r.share(r.dankar).unwrap()),
            arx_digits(0.514_289_503_348_584_4)
        );
    }

    #[test]
    fn zayatz_hand_computed() {
        // Histogram: two classes of size 1, one of size 2 → n = 4, u = 3, c1 = 2; N = 8.
        // P_1(1) = n/N = 1/2.
        // P_2(1) = C(2,1)·C(6,3)/C(8,4) = 2·20/70 = 4/7.
        // Σ (c_i/u)·P_i(1) = (2/3)(1/2) + (1/3)(4/7) = 1/3 + 4/21 = 11/21.
        // P(unique | sample unique) = (2/3)(1/2) / (11/21) = 7/11.
        // Estimate = c1 · 7/11 / (n/N) = 2 · 7/11 · 2 = 28/11.
        let r = estimate_from_population_size_with(&[(1, 2), (2, 1)], 8, &cfg()).unwrap();
        assert!(close(r.zayatz.uniques().unwrap(), 28.0 / 11.0, 1e-14));
        assert!(close(r.share(r.zayatz).unwrap(), 28.0 / 11.0 / 8.0, 1e-14));
    }

    #[test]
    fn hypergeometric_matches_binomial_coefficients() {
        fn binom(n: u64, k: u64) -> f64 {
            if k > n {
                return 0.0;
            }
            (0..k).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64)
        }
        for population in 1..25u64 {
            for n in 1..=population {
                for size in 1..=n {
                    let direct =
                        size as f64 * binom(population - size, n - 1) / binom(population, n);
                    let ours = hypergeometric_one(population as f64, size, n as f64);
                    assert!(
                        (direct - ours).abs() <= 1e-12,
                        "N={population} n={n} K={size}: {direct} vs {ours}"
                    );
                }
            }
        }
    }

    #[test]
    fn census_gives_sample_uniques() {
        // π = 1: the sample is the population, Zayatz's P_i(1) is 1 for i = 1 and 0 otherwise,
        // so the estimate is exactly c1; Pitman and SNB do not apply.
        let hist = [(1, 3), (2, 2), (5, 1)];
        let r = estimate_from_sampling_fraction_with(&hist, 1.0, &cfg()).unwrap();
        assert_eq!(r.population_size, 12);
        assert_eq!(r.zayatz, Estimate::Uniques(3.0));
        assert_eq!(r.pitman, Estimate::NotApplicable);
        assert_eq!(r.snb, Estimate::NotApplicable);
        assert_eq!(r.dankar, Estimate::Uniques(3.0));
        assert_eq!(r.dankar_model, PopulationUniquenessModel::Zayatz);
        let r = estimate_from_population_size_with(&hist, 12, &cfg()).unwrap();
        assert_eq!(r.dankar, Estimate::Uniques(3.0));
    }

    #[test]
    fn no_sample_uniques_gives_zero() {
        let r = estimate_from_sampling_fraction_with(&[(2, 5), (3, 1)], 0.05, &cfg()).unwrap();
        for e in [r.zayatz, r.pitman, r.snb, r.dankar] {
            assert_eq!(e, Estimate::Uniques(0.0));
        }
        assert_eq!(r.dankar_model, PopulationUniquenessModel::NoSampleUniques);
        // Empty histogram: no records, no uniques, population 0, share undefined.
        let r = estimate_from_sampling_fraction_with(&[], 0.5, &cfg()).unwrap();
        assert_eq!(r.dankar, Estimate::Uniques(0.0));
        assert_eq!(r.population_size, 0);
        assert_eq!(r.share(r.dankar), None);
    }

    #[test]
    fn all_classes_unique() {
        // Every record unique: Zayatz's P(unique | sample unique) is 1, so the estimate is
        // c1 / π = N. Pitman/SNB may or may not converge, but the rule returns a number.
        let r = estimate_from_sampling_fraction_with(&[(1, 100)], 0.1, &cfg()).unwrap();
        assert!(close(r.zayatz.uniques().unwrap(), 1000.0, 1e-12));
        assert!(r.dankar.uniques().is_some());
        let r = estimate_from_sampling_fraction_with(&[(1, 100)], 0.5, &cfg()).unwrap();
        assert!(close(r.zayatz.uniques().unwrap(), 200.0, 1e-12));
        assert!(r.dankar.uniques().is_some());
    }

    #[test]
    fn degenerate_inputs_do_not_panic() {
        let hists: [&[(u64, u64)]; 7] = [
            &[(1, 1)],
            &[(1, 1), (2, 1)],
            &[(1, 2)],
            &[(1, 1), (1000, 1)],
            &[(1, 5), (2, 0), (3, 1)],
            &[(1, 20_000)],
            &[(1, 3), (4, 2), (4, 1)],
        ];
        for hist in hists {
            for pi in [1e-9, 0.001, 0.1, 0.1000001, 0.3, 0.999, 1.0] {
                let r = estimate_from_sampling_fraction_with(hist, pi, &cfg()).unwrap();
                for e in [r.zayatz, r.pitman, r.snb, r.dankar] {
                    if let Estimate::Uniques(v) = e {
                        assert!(v.is_finite() && v >= 0.0);
                    }
                }
            }
        }
    }

    #[test]
    fn invalid_inputs_are_errors() {
        let h = [(1, 2), (2, 1)];
        for pi in [0.0, -0.1, 1.0000001, f64::NAN, f64::INFINITY] {
            assert_eq!(
                estimate_from_sampling_fraction(&h, pi),
                Err(PopulationError::InvalidSamplingFraction)
            );
        }
        assert_eq!(
            estimate_from_population_size(&h, 3),
            Err(PopulationError::PopulationSmallerThanSample)
        );
        assert_eq!(
            estimate_from_population_size(&[(0, 1)], 3),
            Err(PopulationError::ZeroClassSize)
        );
        assert_eq!(
            estimate_from_population_size(&[(u64::MAX, 2)], 3),
            Err(PopulationError::Overflow)
        );
        // Zero counts and size-0 entries with zero count are ignored; sizes are merged.
        let a = estimate_from_population_size_with(&[(1, 2), (0, 0), (2, 0), (2, 1)], 8, &cfg());
        let b = estimate_from_population_size_with(&[(2, 1), (1, 1), (1, 1)], 8, &cfg());
        assert_eq!(a, b);
    }

    #[test]
    fn population_size_rounding_follows_arx() {
        assert_eq!(population_size_from_sampling_fraction(3, 0.7), Ok(4));
        assert_eq!(
            population_size_from_sampling_fraction(30162, 0.01),
            Ok(3_016_200)
        );
        assert_eq!(population_size_from_sampling_fraction(0, 0.5), Ok(0));
    }

    #[test]
    fn special_functions() {
        let euler = 0.577_215_664_901_532_9;
        assert!(close(arx_digamma(1.0), -euler, 1e-12));
        assert!(close(arx_digamma(0.5), -euler - 2.0 * 2f64.ln(), 1e-12));
        assert!(close(arx_digamma(100.0), 4.600_161_852_738_087, 1e-12));
        assert!(close(arx_digamma(-0.5), 0.036_489_973_978_576_52, 1e-10));
        // ARX's trigamma is exact from 12 on (ψ′(12) = π²/6 − Σ_{k=1}^{11} 1/k²) ...
        let exact12 = TRIGAMMA_1 - (1..12).map(|k| 1.0 / (k * k) as f64).sum::<f64>();
        assert!(close(arx_trigamma(12.0), exact12, 1e-12));
        // ... and below 12 only sums the recurrence up to 8 (ARX Gamma.trigamma).
        let arx1 = (1..8).map(|k| 1.0 / (k * k) as f64).sum::<f64>();
        assert!(close(arx_trigamma(1.0), arx1, 1e-15));
        // Gamma and log-gamma.
        assert!(close(gamma(5.0), 24.0, 1e-13));
        assert!(close(gamma(0.5), std::f64::consts::PI.sqrt(), 1e-13));
        assert!(close(
            gamma(-0.5),
            -2.0 * std::f64::consts::PI.sqrt(),
            1e-13
        ));
        assert!(gamma(-2.0).is_nan() && gamma(0.0).is_nan());
        assert!(close(ln_gamma(0.1), 2.252_712_651_734_206, 1e-13));
        assert!(close(ln_gamma(1000.0), 5_905.220_423_209_181, 1e-13));
        assert!(ln_gamma(0.0).is_nan() && ln_gamma(-1.5).is_nan());
    }

    #[test]
    fn newton_raphson_finds_simple_root() {
        // x² + y² = 2, x − y = 0 → (1, 1) from (2, 0.5).
        let root = newton_raphson(
            |x, y| ([x * x + y * y - 2.0, x - y], [2.0 * x, 2.0 * y, 1.0, -1.0]),
            |_, _| true,
            (2.0, 0.5),
            &cfg(),
        );
        assert!(close(root.0, 1.0, 1e-6) && close(root.1, 1.0, 1e-6));
        // No root: x² + 1 = 0 → NaN after all tries.
        let none = newton_raphson(
            |x, y| ([x * x + 1.0, y], [2.0 * x, 0.0, 0.0, 1.0]),
            |_, _| true,
            (1.0, 1.0),
            &cfg(),
        );
        assert!(none.0.is_nan() && none.1.is_nan());
    }

    #[test]
    fn arx_start_values() {
        let c = SolverConfig::arx_default();
        assert_eq!(c.start_values.len(), 16);
        assert_eq!(c.start_values[0], (0.0, 0.0));
        assert!(close(c.start_values[15].0, 0.99, 1e-12));
    }
}
