//! MST's budget: (ε, δ) converted to ρ-zCDP, split in three equal parts (1-way
//! measurements, the tree's selection, 2-way measurements), and the noise each part gets
//! (McKenna, Miklau & Sheldon 2021, §3; private-pgm's `mst.py`).

/// ρ such that ρ-zCDP implies (ε, δ)-DP by `ε = ρ + 2·sqrt(ρ·ln(1/δ))` (Bun & Steinke
/// 2016, Proposition 1.3): the largest ρ that bound allows, `(sqrt(ln(1/δ) + ε) −
/// sqrt(ln(1/δ)))²`, rounded down so that the bound holds in floating point.
pub fn rho_for(epsilon: f64, delta: f64) -> Option<f64> {
    if !(epsilon.is_finite() && epsilon > 0.0 && delta > 0.0 && delta < 1.0) {
        return None;
    }
    let log = (1.0 / delta).ln();
    let mut rho = ((log + epsilon).sqrt() - log.sqrt()).powi(2);
    while rho > 0.0 && rho + 2.0 * (rho * log).sqrt() > epsilon {
        rho = rho.next_down();
    }
    (rho > 0.0).then_some(rho)
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
    fn rho_is_the_largest_the_conversion_allows() {
        for (epsilon, delta) in [(1.0, 1e-9), (0.1, 1e-6), (10.0, 1e-12)] {
            let rho = rho_for(epsilon, delta).expect("valid");
            let log = (1.0 / delta).ln();
            assert!(rho + 2.0 * (rho * log).sqrt() <= epsilon);
            let more = rho * (1.0 + 1e-9);
            assert!(more + 2.0 * (more * log).sqrt() > epsilon);
        }
        // ε = 1, δ = 1e-9: ln(1e9) = 20.7233, ρ = (4.66083 − 4.55229)² = 0.011781.
        let rho = rho_for(1.0, 1e-9).expect("valid");
        assert!((rho - 0.011_781).abs() < 2e-6, "{rho}");
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
