//! Individual and global re-identification risk of a weighted sample, as sdcMicro computes
//! them (Benedetti & Franconi 1998, *Statistical and technological solutions for controlled
//! data dissemination*; Franconi & Polettini 2004, *Individual risk estimation in μ-Argus: a
//! review*, PSD 2004, LNCS 3050, 262–272).
//!
//! Model: a key (class) `k` has `f_k` sample records and an unknown population frequency
//! `F_k`; given `f_k`, `F_k − f_k` is negative binomial with `f_k` successes and success
//! probability `p_k = f_k / Ŵ_k`, where `Ŵ_k` is the sum of the sampling weights of the
//! class's records. The individual risk is the expected chance of a correct match,
//! `r_k = E[1/F_k | f_k] = Σ_{h ≥ f_k} (1/h) · C(h−1, f_k−1) · p_k^{f_k} · (1−p_k)^{h−f_k}
//!      = p_k^{f_k} ∫_0^1 t^{f_k−1} (1 − (1−p_k) t)^{−f_k} dt`.
//!
//! sdcMicro evaluates it in R function `indivRisk` (file `R/indivRisk.R`), which
//! `measure_risk` calls with its defaults (`method = "approx"`, `qual = 1`,
//! `survey = TRUE` when a weight variable is given); see [`RiskMethod`] for the formulas.
//! The global risk is `measure_risk`'s `global_risk_ER = Σ_records r_k` (expected number of
//! re-identifications) and `global_risk = global_risk_ER / n`; the global threshold is
//! sdcMicro's `measure_threshold` (C++ `src/Measure_Threshold.h`, μ-Argus 4.1 manual
//! §2.3.4.1).

use std::fmt;

/// Default `risk_threshold` of `records_at_risk`.
pub const DEFAULT_RISK_THRESHOLD: f64 = 0.2;

/// Default `max_global_risk` of the global risk threshold (sdcMicro's `measure_risk`).
pub const DEFAULT_MAX_GLOBAL_RISK: f64 = 0.01;

/// Which of sdcMicro's formulas evaluates `r_k = E[1/F_k | f_k]`. In all three, with
/// `p = f_k / Ŵ_k` and `q = 1 − p`, classes with `Ŵ_k == f_k` (every weight 1: the sample is
/// the population for that key) get `r_k = 1 / f_k` (`indivRisk`: `rk[fk == Fk] <- 1/fk`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RiskMethod {
    /// `indivRisk(method = "approx")`, the method `measure_risk` uses:
    /// `f = 1: (p/q)·ln(1/p)`; `f = 2: p/q − (p/q)²·ln(1/p)` (both exact);
    /// `f ≥ 3: p / (f − q)` (an approximation of the series).
    #[default]
    Approx,
    /// `indivRisk(method = "exact")`: for `f ≥ 3`
    /// `(p/q)^f · [A·(1 + Σ_{m=0}^{f−3} (−1)^{m+1} Π_{i=0}^{m} B_i) + (−1)^f ln p]` with
    /// `A = (p^{1−f} − 1)/(f − 1)` and
    /// `B_i = (f−1−i)² / ((i+1)(f−2−i)) · (p^{i+2−f} − 1)/(p^{i+1−f} − 1)`;
    /// `f = 1, 2` as in `Approx`. The alternating sum loses precision as `f` grows (as in
    /// R); it may return non-finite values for large classes.
    Exact,
    /// The μ-Argus 4.1 closed forms that sdcMicro's C++ `compute_risk` carried in a
    /// disabled branch (`src/Measure_Risk.h` before commit 1083fe0):
    /// `f = 1: −ln(p)·p/q`; `f = 2: (p·ln p + q)·p/q²`;
    /// `f = 3: (q(3q − 2) − 2p²·ln p)·p/(2q³)`;
    /// `f ≥ 4: (p/f)·[1 + Σ_{j=1}^{7} j!·q^j / ((f+1)(f+2)…(f+j))]`
    /// (the hypergeometric series `(p/f)·₂F₁(1, 1; f+1; q)` cut after eight terms).
    ArgusSeries,
}

/// Input the risk measures cannot work with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum IndividualRiskError {
    /// A class with records has a weight sum that is not finite and positive.
    InvalidWeightSum {
        /// Position of the class in the input.
        class: usize,
    },
    /// `max_global_risk` of the global threshold is not in (0, 1) (sdcMicro stops with
    /// "max_global_risk argument must be between 0 and 1!").
    InvalidMaxGlobalRisk,
    /// The number of records does not fit in 64 bits.
    Overflow,
}

impl fmt::Display for IndividualRiskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IndividualRiskError::InvalidWeightSum { class } => {
                write!(
                    f,
                    "class {class}: sum of sampling weights must be finite and positive"
                )
            }
            IndividualRiskError::InvalidMaxGlobalRisk => {
                f.write_str("max_global_risk must be between 0 and 1")
            }
            IndividualRiskError::Overflow => f.write_str("number of records overflows 64 bits"),
        }
    }
}

impl std::error::Error for IndividualRiskError {}

/// The individual risk `r_k` of one class with `f_k` sample records whose sampling weights
/// sum to `weight_sum` (sdcMicro `indivRisk`, `survey = TRUE`, `qual = 1`).
///
/// A class without records (`f_k = 0`) has risk 0 (sdcMicro's C++ `compute_risk`
/// fallback). Weight sums that are not finite and positive are an error. Weight sums below
/// `f_k` (weights under 1) are outside the model; the formulas are applied as sdcMicro
/// applies them.
pub fn class_risk(
    f_k: u64,
    weight_sum: f64,
    method: RiskMethod,
) -> Result<f64, IndividualRiskError> {
    if f_k == 0 {
        return Ok(0.0);
    }
    if !(weight_sum.is_finite() && weight_sum > 0.0) {
        return Err(IndividualRiskError::InvalidWeightSum { class: 0 });
    }
    Ok(risk_unchecked(f_k, weight_sum, method))
}

fn risk_unchecked(f_k: u64, weight_sum: f64, method: RiskMethod) -> f64 {
    let f = f_k as f64;
    // indivRisk: TF <- fk == Fk; rk[TF] <- 1/fk[TF].
    if f == weight_sum {
        return 1.0 / f;
    }
    let p = f / weight_sum;
    let q = 1.0 - p;
    match f_k {
        // indivRisk, both methods: (pk/(1-pk)) * log(1/pk).
        1 if method != RiskMethod::ArgusSeries => (p / (1.0 - p)) * (1.0 / p).ln(),
        // indivRisk, both methods: (pk/(1-pk)) - ((pk/(1-pk))^2) * log(1/pk).
        2 if method != RiskMethod::ArgusSeries => {
            (p / (1.0 - p)) - ((p / (1.0 - p)).powi(2) * (1.0 / p).ln())
        }
        _ => match method {
            RiskMethod::Approx => p / (f - (1.0 - p)),
            RiskMethod::Exact => exact_series(f_k, p),
            RiskMethod::ArgusSeries => argus(f_k, p, q),
        },
    }
}

/// `indivRisk(method = "exact")` for `f ≥ 3`, term by term as in R.
fn exact_series(f_k: u64, p: f64) -> f64 {
    let f = f_k as f64;
    let a = (p.powf(1.0 - f) - 1.0) / (f - 1.0);
    let b = |i: f64| {
        (f - 1.0 - i).powi(2) / ((i + 1.0) * (f - 2.0 - i)) * (p.powf(i + 2.0 - f) - 1.0)
            / (p.powf(i + 1.0 - f) - 1.0)
    };
    // BB: for (m in 0:(fk-3)) { b <- prod_{m2=0}^{m} B(m2); bb <- bb + (-1)^(m+1) * b }.
    let mut bb = 0.0;
    let mut product = 1.0;
    let mut sign = -1.0;
    let mut m = 0u64;
    while m + 3 <= f_k {
        product *= b(m as f64);
        bb += sign * product;
        sign = -sign;
        m += 1;
    }
    let eins = (p / (1.0 - p)).powf(f);
    let drei = if f_k.is_multiple_of(2) {
        p.ln()
    } else {
        -p.ln()
    };
    eins * ((a * (1.0 + bb)) + drei)
}

/// μ-Argus 4.1 closed forms (sdcMicro's disabled C++ branch), in floating point.
fn argus(f_k: u64, p: f64, q: f64) -> f64 {
    match f_k {
        1 => -p.ln() * (p / q),
        2 => ((p * p.ln()) + q) * (p / (q * q)),
        3 => {
            let risk = q * ((3.0 * q) - 2.0) - 2.0 * p * p * p.ln();
            risk * (p / (2.0 * q.powi(3)))
        }
        _ => {
            let f = f_k as f64;
            let mut risk = 1.0;
            let mut denominator = 1.0;
            let mut factorial = 1.0;
            for j in 1..=7 {
                let jf = f64::from(j);
                denominator *= f + jf;
                factorial *= jf;
                risk += factorial * q.powi(j) / denominator;
            }
            risk * p / f
        }
    }
}

/// Per-class risks and their totals over the records (sdcMicro `measure_risk`).
#[derive(Debug, Clone, PartialEq)]
pub struct IndividualRisk {
    /// `r_k` of each input class, in input order (the risk of every record of the class).
    pub class_risks: Vec<f64>,
    /// Records, `n = Σ f_k`.
    pub records: u64,
    /// `global_risk_ER = Σ_records r_k = Σ_k f_k·r_k`: the expected number of
    /// re-identifications.
    pub expected_reidentifications: f64,
    /// `global_risk = global_risk_ER / n` (0 when there are no records); sdcMicro prints it
    /// ×100 as `global_risk_pct`.
    pub global_risk: f64,
    /// The threshold the record count below uses.
    pub threshold: f64,
    /// Records whose risk is strictly above `threshold`.
    pub records_above_threshold: u64,
}

/// Individual risks of classes given as `(f_k, Ŵ_k)` (sample frequency, sum of the
/// sampling weights of its records), the expected number of re-identifications and the
/// number of records with risk above `threshold`.
///
/// For unweighted data pass `Ŵ_k = f_k`: every class then has risk `1/f_k`, which is what
/// sdcMicro's `measure_risk` reports without a weight variable (`survey = FALSE`).
pub fn individual_risk(
    classes: &[(u64, f64)],
    method: RiskMethod,
    threshold: f64,
) -> Result<IndividualRisk, IndividualRiskError> {
    let mut class_risks = Vec::with_capacity(classes.len());
    let mut records = 0u64;
    let mut expected = 0.0;
    let mut above = 0u64;
    for (index, &(f_k, weight_sum)) in classes.iter().enumerate() {
        let risk = class_risk(f_k, weight_sum, method)
            .map_err(|_| IndividualRiskError::InvalidWeightSum { class: index })?;
        records = records
            .checked_add(f_k)
            .ok_or(IndividualRiskError::Overflow)?;
        expected += f_k as f64 * risk;
        if risk > threshold {
            above = above
                .checked_add(f_k)
                .ok_or(IndividualRiskError::Overflow)?;
        }
        class_risks.push(risk);
    }
    Ok(IndividualRisk {
        class_risks,
        records,
        expected_reidentifications: expected,
        global_risk: if records == 0 {
            0.0
        } else {
            expected / records as f64
        },
        threshold,
        records_above_threshold: above,
    })
}

/// sdcMicro's global risk threshold (`measure_threshold`, C++ `src/Measure_Threshold.h`,
/// after μ-Argus 4.1 manual §2.3.4.1, equation 17): the individual-risk level `τ` such that
/// protecting every record with risk above `τ` (counting its risk as `τ`) brings the
/// expected number of re-identifications below `max_global_risk · n`.
///
/// `classes` pairs each class's record count `f_k` with its risk `r_k`. Records are visited
/// from the highest risk down; at each new risk level `r`, if
/// `Σ_{remaining records} r_i + r · (records passed) < max_global_risk · n` the threshold is
/// `r`. Returns `None` where `measure_risk` reports `NA`: when the data already meet the
/// target (sdcMicro's safe and unsafe thresholds coincide), when a risk is NaN, or when
/// there are no records. If no level works, the threshold is 0, as in sdcMicro.
pub fn global_threshold(
    classes: &[(u64, f64)],
    max_global_risk: f64,
) -> Result<Option<f64>, IndividualRiskError> {
    if !(max_global_risk > 0.0 && max_global_risk < 1.0) {
        return Err(IndividualRiskError::InvalidMaxGlobalRisk);
    }
    if classes.iter().any(|&(f, r)| f > 0 && r.is_nan()) {
        return Ok(None);
    }
    let mut sorted: Vec<(u64, f64)> = classes.iter().copied().filter(|&(f, _)| f > 0).collect();
    // measure_risk: ind <- order(risk, decreasing = TRUE).
    sorted.sort_by(|a, b| b.1.total_cmp(&a.1));
    let Some(&(_, first_risk)) = sorted.first() else {
        return Ok(None);
    };
    let mut n_obs = 0u64;
    let mut sum_risk = 0.0;
    for &(f, r) in &sorted {
        n_obs = n_obs.checked_add(f).ok_or(IndividualRiskError::Overflow)?;
        for _ in 0..f {
            sum_risk += r;
        }
    }
    let er = max_global_risk * n_obs as f64;
    let mut current_risk = first_risk;
    let mut threshold = 0.0;
    if sum_risk < er {
        threshold = current_risk;
    } else {
        let mut sum_freq = 0u64;
        'records: for &(f, risk) in &sorted {
            for _ in 0..f {
                if risk != current_risk {
                    let sum = sum_risk + (risk * sum_freq as f64);
                    if sum < er {
                        threshold = risk;
                        break 'records;
                    }
                    current_risk = risk;
                }
                sum_freq += 1;
                sum_risk -= risk;
            }
        }
    }
    // measure_risk: NA when global_threshold_unsafe == global_threshold (the safe value
    // always equals the threshold).
    if current_risk == threshold {
        Ok(None)
    } else {
        Ok(Some(threshold))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * a.abs().max(b.abs())
    }

    /// `E[1/F | f]` by summing the negative-binomial series
    /// `Σ_{y≥0} C(f+y−1, y) p^f q^y / (f+y)` until the terms vanish.
    fn series(f: u64, p: f64) -> f64 {
        let q = 1.0 - p;
        let ff = f as f64;
        let mut prob = p.powf(ff); // P(Y = 0)
        let mut sum = 0.0;
        let mut y = 0.0;
        loop {
            let term = prob / (ff + y);
            sum += term;
            if term < 1e-19 * sum && y > 10.0 {
                break;
            }
            prob *= (ff + y) / (y + 1.0) * q;
            y += 1.0;
        }
        sum
    }

    /// `p^f ∫_0^1 t^{f−1} (1 − q t)^{−f} dt` by composite Simpson's rule.
    fn integral(f: u64, p: f64) -> f64 {
        let q = 1.0 - p;
        let ff = f as f64;
        let steps = 20_000;
        let h = 1.0 / steps as f64;
        let g = |t: f64| t.powf(ff - 1.0) * (1.0 - q * t).powf(-ff);
        let mut s = g(0.0) + g(1.0);
        for i in 1..steps {
            let t = i as f64 * h;
            s += if i % 2 == 1 { 4.0 } else { 2.0 } * g(t);
        }
        p.powf(ff) * s * h / 3.0
    }

    #[test]
    fn sdcmicro_test_indiv_risk_weighted() {
        // sdcMicro tests/testthat/test_indivRisk.R, weighted data without missing values:
        // keys (A,B,C) = (2,3,1)×3 with weights 18, 39, 51 → f = 3, Ŵ = 108;
        // (3,3,3): f = 1, Ŵ = 45.5; (2,3,2): f = 1, Ŵ = 17; (3,3,1)×2: f = 2, Ŵ = 92 + 8 = 100;
        // (1,4,1): f = 1, Ŵ = 123.5.
        let classes = [(3, 108.0), (1, 45.5), (1, 17.0), (2, 100.0), (1, 123.5)];
        let approx = [0.01369863, 0.08579129, 0.17707583, 0.01877883, 0.03931625];
        let exact = [0.01355297, 0.08579129, 0.17707583, 0.01877883, 0.03931625];
        let ra = individual_risk(&classes, RiskMethod::Approx, 0.05).unwrap();
        let re = individual_risk(&classes, RiskMethod::Exact, 0.05).unwrap();
        for i in 0..classes.len() {
            assert!(
                close(ra.class_risks[i], approx[i], 5e-7),
                "{i}: {}",
                ra.class_risks[i]
            );
            assert!(
                close(re.class_risks[i], exact[i], 5e-7),
                "{i}: {}",
                re.class_risks[i]
            );
        }
        // global_risk_ER = Σ_records r: 3·0.01369863 + 0.08579129 + 0.17707583
        //                 + 2·0.01877883 + 0.03931625 = 0.38083692.
        assert!(close(ra.expected_reidentifications, 0.380_836_92, 1e-6));
        assert_eq!(ra.records, 8);
        assert!(close(ra.global_risk, 0.380_836_92 / 8.0, 1e-6));
        // Above 0.05: the classes with risk 0.0858 and 0.1771, one record each.
        assert_eq!(ra.records_above_threshold, 2);
    }

    #[test]
    fn unweighted_is_inverse_frequency() {
        // Ŵ = f (all weights 1): sdcMicro sets r = 1/f for every method.
        for method in [
            RiskMethod::Approx,
            RiskMethod::Exact,
            RiskMethod::ArgusSeries,
        ] {
            let r = individual_risk(&[(3, 3.0), (1, 1.0), (2, 2.0)], method, 0.4).unwrap();
            assert_eq!(r.class_risks, vec![1.0 / 3.0, 1.0, 0.5]);
            // ER = number of classes = 3; 1 + 2 records above 0.4.
            assert!(close(r.expected_reidentifications, 3.0, 1e-15));
            assert_eq!(r.records_above_threshold, 3);
        }
    }

    #[test]
    fn equal_weights_closed_form() {
        // Every record has weight w, so Ŵ_k = w·f_k and p_k = 1/w for every class:
        //   f = 1: r = (p/q)·ln(1/p) = ln(w) / (w − 1)
        //   f = 2: r = p/q − (p/q)²·ln(1/p) = 1/(w − 1) − ln(w)/(w − 1)²
        //   f ≥ 3 (approx): r = p/(f − q) = 1 / (w·f − w + 1)
        for w in [1.5f64, 2.0, 10.0, 250.0] {
            let l = w.ln();
            let r1 = class_risk(1, w, RiskMethod::Approx).unwrap();
            assert!(close(r1, l / (w - 1.0), 1e-13));
            let r2 = class_risk(2, 2.0 * w, RiskMethod::Approx).unwrap();
            assert!(close(
                r2,
                1.0 / (w - 1.0) - l / ((w - 1.0) * (w - 1.0)),
                1e-12
            ));
            for f in [3u64, 7, 40] {
                let ff = f as f64;
                let r = class_risk(f, ff * w, RiskMethod::Approx).unwrap();
                assert!(close(r, 1.0 / (w * ff - w + 1.0), 1e-13));
            }
        }
    }

    #[test]
    fn formulas_match_the_defining_sum_and_integral() {
        for p in [0.9, 0.5, 0.2, 0.05, 0.01] {
            for f in 1..=8u64 {
                let w = f as f64 / p;
                let truth = series(f, p);
                assert!(
                    close(truth, integral(f, p), 1e-7),
                    "series vs integral f={f} p={p}"
                );
                // Exact (R's alternating sum) is exact in theory; in floating point the
                // alternating sum cancels (relative error ~2e-8 at f = 7, p = 0.9).
                let exact = class_risk(f, w, RiskMethod::Exact).unwrap();
                assert!(
                    close(exact, truth, 1e-6),
                    "exact f={f} p={p}: {exact} vs {truth}"
                );
                // μ-Argus closed forms are exact for f ≤ 3; the 8-term series is within
                // (p/f)·Σ_{j≥8} j! q^j/((f+1)…(f+j)) ≤ (p/f)·q^8/(1−q) of the truth for f ≥ 4
                // since j!/((f+1)…(f+j)) ≤ 1.
                let argus = class_risk(f, w, RiskMethod::ArgusSeries).unwrap();
                let q: f64 = 1.0 - p;
                let bound = if f <= 3 {
                    1e-9 * truth
                } else {
                    p / f as f64 * q.powi(8) / p
                };
                assert!((argus - truth).abs() <= bound + 1e-15, "argus f={f} p={p}");
                // Approx equals the truth for f ≤ 2 and is an approximation above.
                let approx = class_risk(f, w, RiskMethod::Approx).unwrap();
                if f <= 2 {
                    assert!(close(approx, truth, 1e-10));
                } else {
                    assert!(close(approx, truth, 0.1), "approx f={f} p={p}");
                }
            }
        }
    }

    #[test]
    fn edge_cases_are_defined() {
        assert_eq!(class_risk(0, 0.0, RiskMethod::Approx), Ok(0.0));
        assert_eq!(
            class_risk(1, 0.0, RiskMethod::Approx),
            Err(IndividualRiskError::InvalidWeightSum { class: 0 })
        );
        assert_eq!(
            individual_risk(&[(1, 2.0), (1, f64::NAN)], RiskMethod::Approx, 0.1),
            Err(IndividualRiskError::InvalidWeightSum { class: 1 })
        );
        let empty = individual_risk(&[], RiskMethod::Approx, 0.1).unwrap();
        assert_eq!(empty.records, 0);
        assert_eq!(empty.global_risk, 0.0);
        // Large classes and tiny p stay finite for the default method.
        let r = class_risk(1_000_000, 1e12, RiskMethod::Approx).unwrap();
        assert!(r.is_finite() && r > 0.0);
        let r = class_risk(1, 1e300, RiskMethod::Approx).unwrap();
        assert!(r.is_finite() && r >= 0.0);
    }

    #[test]
    fn global_threshold_follows_measure_threshold() {
        // Risks (descending, one record per class): 0.5, 0.3, 0.1, 0.1, 0.0 → n = 5,
        // Σ = 1.0; max_global_risk 0.1 → ER = 0.5.
        // r = 0.5: first record, same as current → passed = 1, remaining Σ = 0.5.
        // r = 0.3: 0.5 + 0.3·1 = 0.8 ≥ 0.5 → passed = 2, remaining 0.2.
        // r = 0.1: 0.2 + 0.1·2 = 0.4 < 0.5 → threshold 0.1.
        let classes = [(1, 0.3), (1, 0.5), (2, 0.1), (1, 0.0)];
        assert_eq!(global_threshold(&classes, 0.1), Ok(Some(0.1)));
        // Already safe (Σ = 1.0 < 0.3·5 = 1.5): sdcMicro reports NA.
        assert_eq!(global_threshold(&classes, 0.3), Ok(None));
        assert_eq!(
            global_threshold(&classes, 1.0),
            Err(IndividualRiskError::InvalidMaxGlobalRisk)
        );
        assert_eq!(global_threshold(&[], 0.1), Ok(None));
    }
}
