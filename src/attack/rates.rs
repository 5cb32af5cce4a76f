//! Success rates and risks with their confidence intervals, as anonymeter computes them
//! (`anonymeter.stats.confidence`): the Wilson score interval of a rate, and the residual
//! `(main − control) / (1 − control)` with its error propagated to first order.

/// A rate with its symmetric error at the chosen confidence level.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    /// The Wilson estimate of the rate.
    pub value: f64,
    /// Half the width of its interval.
    pub error: f64,
}

impl Rate {
    /// The Wilson score estimate of `successes` out of `trials` Bernoulli trials (Wilson
    /// 1927): `(s + z²/2) / (n + z²)` and error `z / (n + z²) · √(s(n − s)/n + z²/4)`, `z`
    /// the two-sided normal quantile of `confidence`. No trials: 0.5 ± 0.5.
    pub fn wilson(successes: f64, trials: u64, confidence: f64) -> Self {
        if trials == 0 {
            return Self {
                value: 0.5,
                error: 0.5,
            };
        }
        let n = trials as f64;
        let z = normal_quantile(0.5 * (1.0 + confidence));
        let z2 = z * z;
        let spread = (successes * (n - successes) / n).max(0.0);
        let denominator = n + z2;
        Self {
            value: (successes + 0.5 * z2) / denominator,
            error: z / denominator * (spread + 0.25 * z2).sqrt(),
        }
    }

    /// The residual success of `self` (the attack on the source) over `control` (the same
    /// attack on records the release did not use): `(a − c) / (1 − c)`, with the error
    /// `√((e_a / |1 − c|)² + (e_c (a − 1) / (1 − c)²)²)`.
    pub fn residual(self, control: Rate) -> Self {
        let margin = 1.0 - control.value;
        let value = (self.value - control.value) / margin;
        let by_attack = 1.0 / margin.abs();
        let by_control = (self.value - 1.0) / (margin * margin);
        Self {
            value,
            error: ((self.error * by_attack).powi(2) + (control.error * by_control).powi(2)).sqrt(),
        }
    }

    /// The rate as a risk: the value and its interval clipped to [0, 1].
    pub fn risk(self) -> (f64, f64, f64) {
        let clip = |x: f64| x.clamp(0.0, 1.0);
        (
            clip(self.value),
            clip(self.value - self.error),
            clip(self.value + self.error),
        )
    }
}

/// The standard normal quantile of `p` in (0, 1), by Acklam's rational approximation
/// (relative error below 1.2e-9).
pub fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969683028665376e1,
        2.209460984245205e2,
        -2.759285104469687e2,
        1.383_577_518_672_69e2,
        -3.066479806614716e1,
        2.506628277459239,
    ];
    const B: [f64; 5] = [
        -5.447609879822406e1,
        1.615858368580409e2,
        -1.556989798598866e2,
        6.680131188771972e1,
        -1.328068155288572e1,
    ];
    const C: [f64; 6] = [
        -7.784894002430293e-3,
        -3.223964580411365e-1,
        -2.400758277161838,
        -2.549732539343734,
        4.374664141464968,
        2.938163982698783,
    ];
    const D: [f64; 4] = [
        7.784695709041462e-3,
        3.224671290700398e-1,
        2.445134137142996,
        3.754408661907416,
    ];
    let p = p.clamp(1e-300, 1.0 - 1e-16);
    let low = 0.02425;
    if p < low {
        let q = (-2.0 * p.ln()).sqrt();
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    } else if p <= 1.0 - low {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    } else {
        -normal_quantile(1.0 - p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_of_the_normal_distribution() {
        assert!((normal_quantile(0.975) - 1.959_963_984_540_054).abs() < 1e-8);
        assert!((normal_quantile(0.5)).abs() < 1e-12);
        assert!((normal_quantile(0.005) + 2.575_829_303_548_901).abs() < 1e-8);
    }

    #[test]
    fn wilson_rates_equal_anonymeters() {
        // anonymeter's success_rate(500, 100, 0.95) and success_rate(500, 0, 0.95).
        let r = Rate::wilson(100.0, 500, 0.95);
        let z2 = 1.959_963_984_540_054_f64.powi(2);
        assert!((r.value - (100.0 + z2 / 2.0) / (500.0 + z2)).abs() < 1e-9);
        let expected =
            1.959_963_984_540_054 / (500.0 + z2) * (100.0 * 400.0 / 500.0 + z2 / 4.0).sqrt();
        assert!((r.error - expected).abs() < 1e-9);
        let none = Rate::wilson(0.0, 500, 0.95);
        assert!((none.value - 0.003_812).abs() < 1e-5, "{none:?}");
        // No success: the interval's lower end is 0 (z²/2 minus itself, to rounding).
        let (risk, low, high) = none.risk();
        assert!(low < 1e-15, "{low}");
        assert!(risk > 0.0 && high > risk);
    }

    #[test]
    fn residual_risk_over_the_control() {
        let attack = Rate {
            value: 0.6,
            error: 0.04,
        };
        let control = Rate {
            value: 0.2,
            error: 0.03,
        };
        let residual = attack.residual(control);
        assert!((residual.value - 0.5).abs() < 1e-12);
        let expected = ((0.04_f64 / 0.8).powi(2) + (0.03_f64 * -0.4 / 0.64).powi(2)).sqrt();
        assert!((residual.error - expected).abs() < 1e-12);
        // A control more attackable than the source: no risk, clipped.
        let (risk, low, _) = control.residual(attack).risk();
        assert_eq!((risk, low), (0.0, 0.0));
    }
}
