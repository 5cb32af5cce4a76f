//! Error bars for counts of a sampled and thresholded release (SafePub): each source record
//! is kept with probability β, and a released cell (a combination of released values) is
//! released only when at least k kept records fall in it. An analyst who counts `c`
//! released rows over `m` released cells estimates the source's rows in those cells as
//! `c / β`; this module gives an interval that holds that number with at least the asked
//! confidence, from public figures only (β, k, c, m).
//!
//! Why it holds (docs/METHODS.md §2.14). Let `N` be the source's records in the cells and
//! `X_i` the kept records of cell `i`; the cells are disjoint and records are kept
//! independently, so the `X_i` are independent binomials, each seen only when `X_i ≥ k`.
//!
//! * **High end.** Given `X_i ≥ k`, `X_i` is stochastically larger than the untruncated
//!   binomial, and so is the sum: `P(ΣX_i ≤ c | released) ≤ P(Bin(N, β) ≤ c)`. Every `N`
//!   with `P(Bin(N, β) ≤ c) < α/2` is therefore ruled out at level α/2.
//! * **Low end.** Count a cell's trials until its `k`-th kept record; the rest are fresh
//!   trials, fewer than the cell's records, so given `X_i ≥ k`, `X_i ≤st k + Bin(N_i, β)`
//!   and `ΣX_i ≤st m·k + Bin(N, β)`. Every `N` with `P(Bin(N, β) ≥ c − m·k) < α/2` is ruled
//!   out; and `N ≥ c` always (kept records are source records). With one cell the exact
//!   truncated law `P(X ≥ c | X ≥ k) = P(X ≥ c) / P(X ≥ k)` is used instead.
//!
//! The two ends together hold `N` with probability at least `1 − α` for any fixed set of
//! cells, given that they were released, when the sample is drawn independently of the
//! node choice (SafePub's default `search_sample => 'independent'`).

use super::population::ln_gamma;

/// The largest source count searched (a count above it is reported as this bound).
const MAX_COUNT: u64 = 1 << 50;

/// The largest released count taken: more rows than any table holds, and a bound on the
/// work (each tail sum runs over a few standard deviations of a binomial this large).
pub const MAX_RELEASED: u64 = 1 << 40;

/// An interval for the source's records behind released counts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CountInterval {
    /// `c / β`.
    pub estimate: f64,
    pub low: u64,
    pub high: u64,
}

/// ln P(Bin(n, p) = j).
fn ln_pmf(n: u64, p: f64, j: u64) -> f64 {
    let (n, j) = (n as f64, j as f64);
    ln_gamma(n + 1.0) - ln_gamma(j + 1.0) - ln_gamma(n - j + 1.0)
        + j * p.ln()
        + (n - j) * (-p).ln_1p()
}

/// The most likely value of Bin(n, p).
fn mode(n: u64, p: f64) -> u64 {
    (((n + 1) as f64 * p).floor() as u64).min(n)
}

/// Σ P(Bin(n, p) = j) from `from` away from the mode (down when `down`), where the terms
/// only fall: it stops once they no longer count. `from` lies on that side of the mode.
fn falling_sum(n: u64, p: f64, from: u64, down: bool) -> f64 {
    let mut term = ln_pmf(n, p, from).exp();
    let mut sum = term;
    let mut j = from;
    loop {
        if down {
            if j == 0 {
                break;
            }
            term *= j as f64 / (n - j + 1) as f64 * ((1.0 - p) / p);
            j -= 1;
        } else {
            if j >= n {
                break;
            }
            term *= (n - j) as f64 / (j + 1) as f64 * (p / (1.0 - p));
            j += 1;
        }
        sum += term;
        if term <= sum * 1e-17 {
            break;
        }
    }
    sum.min(1.0)
}

/// P(Bin(n, p) ≤ c), summed over the tail away from the mode.
fn cdf(n: u64, p: f64, c: u64) -> f64 {
    if c >= n {
        return 1.0;
    }
    if c < mode(n, p) {
        falling_sum(n, p, c, true)
    } else {
        (1.0 - falling_sum(n, p, c + 1, false)).max(0.0)
    }
}

/// P(Bin(n, p) ≥ c), summed over the tail away from the mode.
fn upper_tail(n: u64, p: f64, c: u64) -> f64 {
    if c == 0 {
        return 1.0;
    }
    if c > n {
        return 0.0;
    }
    if c > mode(n, p) {
        falling_sum(n, p, c, false)
    } else {
        (1.0 - falling_sum(n, p, c - 1, true)).max(0.0)
    }
}

/// The smallest `n` in `[lo, hi]` with `holds(n)`, for `holds` false then true as `n`
/// grows; `hi` if none.
fn first(mut lo: u64, mut hi: u64, holds: impl Fn(u64) -> bool) -> u64 {
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if holds(mid) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo
}

/// The interval for the source's records behind `count` released rows in `cells` released
/// cells, each released when at least `k` of its records were kept with probability `beta`,
/// at `confidence` (in (0, 1)). `None` for arguments outside their domains (β in (0, 1],
/// `cells ≥ 1`, `cells · k ≤ count ≤` [`MAX_RELEASED`]).
pub fn count_interval(
    count: u64,
    cells: u64,
    beta: f64,
    k: u64,
    confidence: f64,
) -> Option<CountInterval> {
    let valid = beta > 0.0
        && beta <= 1.0
        && cells >= 1
        && confidence > 0.0
        && confidence < 1.0
        && count >= cells.saturating_mul(k)
        && count <= MAX_RELEASED;
    if !valid {
        return None;
    }
    let estimate = count as f64 / beta;
    if beta == 1.0 {
        return Some(CountInterval {
            estimate,
            low: count,
            high: count,
        });
    }
    let tail = (1.0 - confidence) / 2.0;
    // The high end: the last n whose P(Bin(n, β) ≤ c) is at least the tail.
    let mut top = ((estimate * 2.0) as u64).max(count + 16);
    while top < MAX_COUNT && cdf(top, beta, count) >= tail {
        top = top.saturating_mul(2).min(MAX_COUNT);
    }
    let high = first(count, top, |n| cdf(n, beta, count) < tail)
        .saturating_sub(1)
        .max(count);
    // The low end.
    let low = if cells == 1 {
        let released = |n: u64| upper_tail(n, beta, k);
        first(count, high, |n| {
            let at_k = released(n);
            at_k > 0.0 && upper_tail(n, beta, count) / at_k >= tail
        })
    } else {
        match count.checked_sub(cells * k) {
            Some(shifted) if shifted > 0 => {
                first(count, high, |n| upper_tail(n, beta, shifted) >= tail)
            }
            _ => count,
        }
    };
    Some(CountInterval {
        estimate,
        low,
        high,
    })
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::*;

    #[test]
    fn the_binomial_sums_are_exact_where_they_can_be_checked() {
        // Bin(10, 0.5): P(X ≤ 3) = 176/1024, P(X ≥ 8) = 56/1024.
        assert!((cdf(10, 0.5, 3) - 176.0 / 1024.0).abs() < 1e-13);
        assert!((upper_tail(10, 0.5, 8) - 56.0 / 1024.0).abs() < 1e-13);
        // Far tails of a large binomial stay finite and ordered.
        let (n, p) = (1_000_000, 0.1);
        assert!(cdf(n, p, 99_000) < 0.001 && cdf(n, p, 101_000) > 0.999);
        assert!((cdf(n, p, 100_000) + upper_tail(n, p, 100_001) - 1.0).abs() < 1e-9);
        // Far from the mode on either side, the tails are 0 and 1, not lost to underflow.
        assert!(cdf(3_000_000, 0.0864, 130_000) < 1e-300);
        assert_eq!(cdf(260_000, 0.0864, 130_000), 1.0);
        assert_eq!(upper_tail(260_000, 0.0864, 130_000), 0.0);
        assert_eq!(upper_tail(3_000_000, 0.0864, 130_000), 1.0);
    }

    #[test]
    fn bad_arguments_give_no_interval() {
        assert_eq!(count_interval(10, 1, 0.0, 5, 0.95), None);
        assert_eq!(count_interval(10, 0, 0.5, 5, 0.95), None);
        assert_eq!(count_interval(9, 2, 0.5, 5, 0.95), None, "below m·k");
        assert_eq!(count_interval(10, 1, 0.5, 5, 1.0), None);
        assert_eq!(count_interval(MAX_RELEASED + 1, 1, 0.5, 5, 0.95), None);
        let all = count_interval(10, 1, 1.0, 5, 0.95).expect("β = 1");
        assert_eq!((all.low, all.high), (10, 10));
    }

    /// Cells of known sizes sampled and thresholded as SafePub does; the interval must
    /// hold the true count in at least 95 % of released draws, less a margin: 1,000
    /// released draws per case, so a coverage of 95 % falls below 93.2 % with probability
    /// under 0.3 % (binomial tail); the six cases fail by chance with probability under
    /// 2 %.
    #[test]
    fn the_interval_holds_the_true_count() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let cases: [(&[u64], f64, u64); 6] = [
            (&[40], 0.3, 8),
            (&[200], 0.1, 10),
            (&[30, 25, 60], 0.5, 9),
            (&[12, 14, 16, 18], 0.7, 7),
            (&[5_000, 20_000], 0.05, 25),
            (&[90], 0.9, 70),
        ];
        for (sizes, beta, k) in cases {
            let truth: u64 = sizes.iter().sum();
            let (mut held, mut released, mut widths) = (0u32, 0u32, 0f64);
            while released < 1_000 {
                let kept: Vec<u64> = sizes
                    .iter()
                    .map(|&n| (0..n).filter(|_| rng.random::<f64>() < beta).count() as u64)
                    .collect();
                if kept.iter().any(|&x| x < k) {
                    continue;
                }
                released += 1;
                let count = kept.iter().sum();
                let found =
                    count_interval(count, sizes.len() as u64, beta, k, 0.95).expect("an interval");
                assert!(found.low <= found.high);
                widths += (found.high - found.low) as f64;
                if (found.low..=found.high).contains(&truth) {
                    held += 1;
                }
            }
            assert!(
                held >= 932,
                "{sizes:?}, β {beta}, k {k}: held {held} of 1000 (mean width {})",
                widths / 1000.0
            );
        }
    }
}
