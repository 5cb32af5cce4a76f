//! The SUDA and DIS-SUDA scores of records from their MSUs (sdcMicro's `g_ab` weights and
//! DIS fraction).

use super::SudaScoring;

/// The weight of an MSU of size `k` among `attrs` quasi-identifiers (sdcMicro `g_ab`).
pub(super) fn msu_weight(attrs: usize, k: usize, scoring: SudaScoring) -> f64 {
    match scoring {
        SudaScoring::Original => {
            // for (j = i+1; j < M; ++j) result *= (M - j), with i = k - 1.
            let mut result = 1.0f64;
            for j in k..attrs {
                result *= (attrs - j) as f64;
            }
            result
        }
        SudaScoring::Alternative => {
            // (2^(M-k) - 1) · k!(M-k)!/M!, the last factor as 1/C(M, k) to stay finite.
            let a = 2f64.powi((attrs - k) as i32) - 1.0;
            let mut inverse_binomial = 1.0f64;
            for i in 1..=k {
                inverse_binomial *= i as f64 / (attrs - k + i) as f64;
            }
            a * inverse_binomial
        }
    }
}

/// DIS-SUDA scores exactly as `src/Suda2.h` computes them, including its single-precision
/// steps (`Dis`, `Q` and `U/Dis − U` are `float` there).
pub(super) fn dis_scores(
    score: &[f64],
    uniques: u64,
    pairs: u64,
    dis_fraction: f64,
    attrs: usize,
) -> (f64, Vec<f64>) {
    let mut fraction = dis_fraction as f32;
    if fraction == 0.0 {
        fraction = 0.5;
    }
    let u = uniques as f32;
    let dis = u * fraction / (u * fraction + pairs as f32 * (1.0f32 - fraction));
    let q = f64::from(1.0f32 + (8.0f32 - attrs as f32) / 20.0f32);
    let mut adj = 0.0f64;
    for &s in score {
        if s != 0.0 {
            adj += 1.0 / s.powf(q);
        }
    }
    let numerator = f64::from(u / dis - u);
    let dis_score = score
        .iter()
        .map(|&s| {
            if s != 0.0 {
                1.0 / (1.0 + numerator / (s.powf(q) * adj))
            } else {
                0.0
            }
        })
        .collect();
    (f64::from(dis), dis_score)
}
