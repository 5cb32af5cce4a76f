//! The exact distribution of the noise on a sum of released counts, for error bars: the
//! sum of `m` independent discrete Laplace variables of scale `t` (what `m` cells of a
//! differentially private table carry), and the smallest symmetric interval that holds
//! it with a given probability.
//!
//! A discrete Laplace variable of scale `t`, `P(Y = y) ∝ α^|y|` with `α = e^(−1/t)`, is the
//! difference of two independent geometric variables (`P(G = k) = (1 − α) α^k`), so the
//! sum of `m` of them is `A − B` with `A` and `B` independent negative binomial
//! (`P(A = k) = C(k + m − 1, k) (1 − α)^m α^k`). Then
//! `P(|A − B| ≤ q) = Σ_k P(A = k) · P(k − q ≤ B ≤ k + q)`, one pass over the negative
//! binomial's probabilities and their running sums per `q`.

use super::NoiseError;

/// The negative binomial's probabilities are kept on this many standard deviations around
/// its mean (the mass beyond is below 1e-300 for any `m`).
const SPREAD: f64 = 40.0;

/// At most this many probabilities are kept; a larger sum is refused.
const MAX_WINDOW: usize = 16_000_000;

/// The noise on a sum of noisy counts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SumNoise {
    /// The smallest `q` with `P(|noise| ≤ q) ≥ confidence`.
    pub half_width: u64,
    /// `P(|noise| ≤ half_width)`, at least the confidence asked for.
    pub coverage: f64,
    /// The noise's standard deviation, `√(2 m α) / (1 − α)`.
    pub standard_deviation: f64,
}

/// The noise on the sum of `cells` independent discrete Laplace variables of scale
/// `scale`, at `confidence`. Errors name the parameter out of its domain.
pub fn sum_noise(scale: f64, cells: u64, confidence: f64) -> Result<SumNoise, NoiseError> {
    if !(scale.is_finite() && scale > 0.0) {
        return Err(NoiseError::invalid(
            "scale",
            format!("must be a positive number, got {scale}"),
        ));
    }
    if cells == 0 {
        return Err(NoiseError::invalid("cells", "must be at least 1, got 0"));
    }
    if !(confidence > 0.0 && confidence < 1.0) {
        return Err(NoiseError::invalid(
            "confidence",
            format!("must be in (0, 1), got {confidence}"),
        ));
    }
    let alpha = (-1.0 / scale).exp();
    let m = cells as f64;
    let mean = m * alpha / (1.0 - alpha);
    let sd = (m * alpha).sqrt() / (1.0 - alpha);
    let first = (mean - SPREAD * sd - 1.0).max(0.0).floor();
    let last = (mean + SPREAD * sd + SPREAD + 10.0).ceil();
    let width = (last - first) as usize + 1;
    if width > MAX_WINDOW {
        return Err(NoiseError::invalid(
            "cells",
            format!("{cells} cells at scale {scale} spread the sum's noise over too many values for an exact interval"),
        ));
    }
    // ln P(A = k) up to a constant, by the ratio P(k + 1) / P(k) = α (k + m) / (k + 1).
    let mut logs = Vec::with_capacity(width);
    let mut log = 0.0;
    let ln_alpha = alpha.ln();
    for i in 0..width {
        logs.push(log);
        let k = first + i as f64;
        log += ln_alpha + (k + m).ln() - (k + 1.0).ln();
    }
    let top = logs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut p: Vec<f64> = logs.iter().map(|l| (l - top).exp()).collect();
    let total: f64 = p.iter().sum();
    p.iter_mut().for_each(|x| *x /= total);
    // cumulative[i] = P(A < first + i).
    let mut cumulative = Vec::with_capacity(width + 1);
    let mut running = 0.0;
    cumulative.push(0.0);
    for x in &p {
        running += x;
        cumulative.push(running);
    }
    let below = |i: i64| -> f64 {
        // P(A < first + i), i an offset into the window.
        if i <= 0 {
            0.0
        } else if i as usize >= width {
            1.0
        } else {
            cumulative[i as usize]
        }
    };
    let coverage = |q: u64| -> f64 {
        let q = q as i64;
        p.iter()
            .enumerate()
            .map(|(i, pk)| {
                let i = i as i64;
                pk * (below(i + q + 1) - below(i - q))
            })
            .sum::<f64>()
            .min(1.0)
    };
    let (mut lo, mut hi) = (0u64, width as u64);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if coverage(mid) >= confidence {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    Ok(SumNoise {
        half_width: lo,
        coverage: coverage(lo),
        standard_deviation: (2.0 * m * alpha).sqrt() / (1.0 - alpha),
    })
}

/// The smallest `q` with `P(|Y| ≤ q) ≥ confidence` for one discrete Laplace variable `Y` of
/// scale `scale`, from the closed form `P(|Y| ≤ q) = 1 − 2 α^(q+1) / (1 + α)`, `α = e^(−1/scale)`
/// (what [`sum_noise`] gives for one cell, without its window: any scale).
pub fn one_cell_half_width(scale: f64, confidence: f64) -> Result<u64, NoiseError> {
    if !(scale.is_finite() && scale > 0.0) {
        return Err(NoiseError::invalid(
            "scale",
            format!("must be a positive number, got {scale}"),
        ));
    }
    if !(confidence > 0.0 && confidence < 1.0) {
        return Err(NoiseError::invalid(
            "confidence",
            format!("must be in (0, 1), got {confidence}"),
        ));
    }
    let alpha = (-1.0 / scale).exp();
    // α^(q+1) ≤ (1 − confidence)(1 + α)/2  ⇔  q + 1 ≥ −scale · ln((1 − confidence)(1 + α)/2).
    let tail = (1.0 - confidence) * (1.0 + alpha) / 2.0;
    let mut q = ((-scale * tail.ln()).ceil() - 1.0).max(0.0) as u64;
    let covers =
        |q: u64| 1.0 - 2.0 * (-((q + 1) as f64) / scale).exp() / (1.0 + alpha) >= confidence;
    // The logarithm's rounding may be one off either way.
    while q > 0 && covers(q - 1) {
        q -= 1;
    }
    while !covers(q) {
        q += 1;
    }
    Ok(q)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_cell_half_width_is_the_sums_for_one_cell() {
        for (scale, confidence) in [(1.0, 0.95), (2.5, 0.975), (40.0, 0.99), (0.3, 0.5)] {
            let exact = sum_noise(scale, 1, confidence).expect("noise").half_width;
            assert_eq!(
                one_cell_half_width(scale, confidence),
                Ok(exact),
                "{scale} {confidence}"
            );
        }
        // A scale far beyond sum_noise's window: q ≈ scale · ln(1/0.025) ≈ 3.69 · scale.
        let q = one_cell_half_width(1e7, 0.975).expect("q");
        assert!((q as f64 / 1e7 - (40.0f64).ln()).abs() < 1e-6, "{q}");
        assert!(one_cell_half_width(0.0, 0.9).is_err());
    }

    #[test]
    fn one_cell_has_the_closed_form() {
        // P(|Y| ≤ q) = 1 − 2 α^(q+1) / (1 + α); at scale 1 the 95 % half-width is 3.
        let noise = sum_noise(1.0, 1, 0.95).expect("noise");
        let alpha = (-1.0f64).exp();
        assert_eq!(noise.half_width, 3);
        assert!(
            (noise.coverage - (1.0 - 2.0 * alpha.powi(4) / (1.0 + alpha))).abs() < 1e-12,
            "{noise:?}"
        );
        let two = 1.0 - 2.0 * alpha.powi(3) / (1.0 + alpha);
        assert!(two < 0.95, "q = 2 covers only {two}");
    }

    #[test]
    fn two_cells_equal_a_direct_convolution() {
        let scale: f64 = 2.5;
        let alpha = (-1.0 / scale).exp();
        let one = |y: i64| (1.0 - alpha) / (1.0 + alpha) * alpha.powi(y.unsigned_abs() as i32);
        let within = |q: i64| -> f64 {
            (-q..=q)
                .map(|s| (-400..=400).map(|y| one(y) * one(s - y)).sum::<f64>())
                .sum()
        };
        let noise = sum_noise(scale, 2, 0.9).expect("noise");
        let q = noise.half_width as i64;
        assert!(
            (noise.coverage - within(q)).abs() < 1e-9,
            "{noise:?} vs {}",
            within(q)
        );
        assert!(within(q) >= 0.9 && within(q - 1) < 0.9);
    }

    #[test]
    fn many_cells_approach_the_normal_interval() {
        // 10,000 cells at scale 1: sd = √(2 m α) / (1 − α) ≈ 135.7; 1.96 sd ≈ 266.
        let noise = sum_noise(1.0, 10_000, 0.95).expect("noise");
        assert!((noise.standard_deviation - 135.7).abs() < 0.1, "{noise:?}");
        assert!(noise.half_width.abs_diff(266) <= 2, "{noise:?}");
    }

    #[test]
    fn parameters_out_of_range_are_named() {
        for (scale, cells, confidence, name) in [
            (0.0, 1, 0.95, "scale"),
            (1.0, 0, 0.95, "cells"),
            (1.0, 1, 1.0, "confidence"),
            (1000.0, 10_000_000, 0.95, "cells"),
        ] {
            let err = sum_noise(scale, cells, confidence)
                .expect_err(name)
                .to_string();
            assert!(err.contains(name), "{err}");
        }
    }
}
