//! MST's budget: (ε, δ) converted to ρ-zCDP, split in three equal parts (1-way
//! measurements, the tree's selection, 2-way measurements), and the noise each part gets
//! (McKenna, Miklau & Sheldon 2021, §3; private-pgm's `mst.py`).

/// ρ such that ρ-zCDP implies (ε, δ)-DP: the larger of the two conversions
/// [`rho_bun_steinke`] and [`rho_canonne_kamath_steinke`] (both are valid bounds; the
/// second, which private-pgm uses, is the larger except at extreme parameters). `None`
/// unless `ε > 0` is finite and `0 < δ < 1`.
pub fn rho_for(epsilon: f64, delta: f64) -> Option<f64> {
    if !(epsilon.is_finite() && epsilon > 0.0 && delta > 0.0 && delta < 1.0) {
        return None;
    }
    let rho = rho_bun_steinke(epsilon, delta).max(rho_canonne_kamath_steinke(epsilon, delta));
    (rho > 0.0).then_some(rho)
}

/// ρ by Bun & Steinke 2016, Proposition 1.3 (`ε = ρ + 2·sqrt(ρ·ln(1/δ))`): the largest ρ
/// it allows, `(sqrt(ln(1/δ) + ε) − sqrt(ln(1/δ)))²`, rounded down so that the bound holds
/// in floating point.
pub fn rho_bun_steinke(epsilon: f64, delta: f64) -> f64 {
    let log = (1.0 / delta).ln();
    let mut rho = ((log + epsilon).sqrt() - log.sqrt()).powi(2);
    while rho > 0.0 && rho + 2.0 * (rho * log).sqrt() > epsilon {
        rho = rho.next_down();
    }
    rho
}

/// δ of (ε, δ)-DP that ρ-zCDP gives by Canonne, Kamath & Steinke 2020, Proposition 12, at
/// Rényi order `α > 1`: `exp((α − 1)(αρ − ε) + α·ln(1 − 1/α)) / (α − 1)`. Every `α > 1`
/// gives a valid bound.
fn delta_at_order(rho: f64, epsilon: f64, alpha: f64) -> f64 {
    ((alpha - 1.0) * (alpha * rho - epsilon) + alpha * (-1.0 / alpha).ln_1p()).exp() / (alpha - 1.0)
}

/// The δ that ρ-zCDP gives at ε ([`delta_at_order`] at the order where its derivative
/// vanishes, found by bisection on `[1.01, (ε + 1)/(2ρ) + 2]` as private-pgm's
/// `cdp_delta`; the order found needs no precision, any order being valid).
pub fn delta_canonne_kamath_steinke(rho: f64, epsilon: f64) -> f64 {
    if rho <= 0.0 {
        return 0.0;
    }
    let (mut low, mut high) = (1.01f64, (epsilon + 1.0) / (2.0 * rho) + 2.0);
    let mut alpha = (low + high) / 2.0;
    for _ in 0..200 {
        alpha = (low + high) / 2.0;
        let derivative = (2.0 * alpha - 1.0) * rho - epsilon + (-1.0 / alpha).ln_1p();
        if derivative < 0.0 {
            low = alpha;
        } else {
            high = alpha;
        }
    }
    delta_at_order(rho, epsilon, alpha).min(1.0)
}

/// The largest ρ (by bisection) whose [`delta_canonne_kamath_steinke`] is at most δ, with
/// a margin of one part in 10^9 for the rounding of `exp` and `ln`.
pub fn rho_canonne_kamath_steinke(epsilon: f64, delta: f64) -> f64 {
    let target = delta * (1.0 - 1e-9);
    let (mut low, mut high) = (0.0f64, epsilon + 1.0);
    for _ in 0..200 {
        let rho = (low + high) / 2.0;
        if delta_canonne_kamath_steinke(rho, epsilon) <= target {
            low = rho;
        } else {
            high = rho;
        }
    }
    low
}

/// How MST spends ρ over `d` attributes (d ≥ 2).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Split {
    /// The variance of the Gaussian noise on each cell of a 1-way marginal: each of the
    /// `d` marginals has L2 sensitivity 1, and `d / (2·σ1²) = ρ/3`.
    pub one_way_variance: f64,
    /// The ε of each of the `d − 1` exponential mechanisms that pick the tree's edges:
    /// `(d − 1)·ε²/8 = ρ/3` (an ε-DP mechanism is ε²/8-zCDP).
    pub edge_epsilon: f64,
    /// The variance on each cell of a 2-way marginal: `(d − 1) / (2·σ2²) = ρ/3`.
    pub two_way_variance: f64,
}

impl Split {
    /// The split of `rho` over `d` attributes.
    pub fn new(rho: f64, d: usize) -> Self {
        let third = rho / 3.0;
        let edges = d.saturating_sub(1).max(1) as f64;
        Split {
            one_way_variance: d as f64 / (2.0 * third),
            edge_epsilon: (8.0 * third / edges).sqrt(),
            two_way_variance: edges / (2.0 * third),
        }
    }

    /// The ρ the three parts spend together (for checks: `rho` of [`Split::new`], up to
    /// rounding).
    #[cfg(test)]
    pub fn rho(&self, d: usize) -> f64 {
        let edges = d.saturating_sub(1).max(1) as f64;
        d as f64 / (2.0 * self.one_way_variance)
            + edges * self.edge_epsilon.powi(2) / 8.0
            + edges / (2.0 * self.two_way_variance)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rho_is_the_largest_the_conversions_allow() {
        for (epsilon, delta) in [(1.0, 1e-9), (0.1, 1e-6), (10.0, 1e-12), (0.01, 1e-9)] {
            let bs = rho_bun_steinke(epsilon, delta);
            let log = (1.0 / delta).ln();
            assert!(bs + 2.0 * (bs * log).sqrt() <= epsilon);
            let more = bs * (1.0 + 1e-9);
            assert!(more + 2.0 * (more * log).sqrt() > epsilon);
            let rho = rho_for(epsilon, delta).expect("valid");
            assert!(rho >= bs);
            assert!(delta_canonne_kamath_steinke(rho, epsilon) <= delta);
            assert!(delta_canonne_kamath_steinke(rho * 1.001, epsilon) > delta);
        }
        // ε = 1, δ = 1e-9: Bun & Steinke give (4.66083 − 4.55229)² = 0.011781; Canonne,
        // Kamath & Steinke 0.014973, private-pgm's cdp_rho(1, 1e-9).
        assert!((rho_bun_steinke(1.0, 1e-9) - 0.011_781).abs() < 2e-6);
        let rho = rho_for(1.0, 1e-9).expect("valid");
        assert!((rho - 0.014_973).abs() < 2e-6, "{rho}");
        // ε = 0.1, δ = 1e-6: 0.00032105 (private-pgm: 0.000321048).
        let rho = rho_for(0.1, 1e-6).expect("valid");
        assert!((rho - 0.000_321_05).abs() < 1e-8, "{rho}");
        assert_eq!(rho_for(1.0, 0.0), None);
        assert_eq!(rho_for(0.0, 1e-9), None);
        assert_eq!(rho_for(f64::NAN, 1e-9), None);
    }

    #[test]
    fn the_three_parts_add_up_to_rho() {
        for d in [2usize, 3, 9, 40] {
            let split = Split::new(0.5, d);
            assert!((split.rho(d) - 0.5).abs() < 1e-12, "d = {d}");
        }
        // d = 9, ρ = 3/2: each part 1/2; 9/(2σ1²) = 1/2 → σ1² = 9.
        let split = Split::new(1.5, 9);
        assert!((split.one_way_variance - 9.0).abs() < 1e-12);
        assert!((split.two_way_variance - 8.0).abs() < 1e-12);
        assert!((split.edge_epsilon - (0.5f64).sqrt()).abs() < 1e-12);
    }
}
