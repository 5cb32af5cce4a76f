//! Zayatz (1991), *Estimation of the number of unique population elements using a sample*
//! (ARX `ModelZayatz`).

use super::Histogram;

/// Hypergeometric probability that a sample of `n` out of `population` holds exactly one
/// of the `size` population members of a class: `size · C(N−size, n−1) / C(N, n)`,
/// evaluated as `size · (n/N) · Π_{j=1}^{size−1} (N−n−size+1+j)/(N−j)` (Apache Commons
/// Math `HypergeometricDistribution(N, size, n).probability(1)` in ARX).
pub(super) fn hypergeometric_one(population: f64, size: u64, n: f64) -> f64 {
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
pub(super) fn zayatz(hist: &Histogram, population: f64) -> f64 {
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
