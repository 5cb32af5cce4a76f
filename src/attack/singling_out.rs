//! The singling-out attack as anonymeter defines it (`SinglingOutEvaluator`, after Cohen
//! and Nissim 2020): queries that single out exactly one row of the release are asked of
//! the source; each that singles out exactly one source record is a success. The baseline
//! asks random queries; the control asks the release's queries of held-out records.

use std::collections::HashSet;

use rand::seq::{IndexedRandom, SliceRandom};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::data::{Column, Table, Values, NULL_CODE};
use super::index::{Index, Op, Rows};
use super::Counts;

/// How the attacker writes queries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// One rare value (or the smallest or largest number) per query.
    Univariate,
    /// The values of one released row on `columns` columns, numbers as `>=` or `<=`.
    Multivariate,
}

/// One condition: a column, a comparison and a value (a number's bits or a code).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Condition {
    column: usize,
    op: Op,
    value: u64,
}

type Query = Vec<Condition>;

/// At most this many tries per query asked for before the attacker gives up (a
/// k-anonymous release may single out no row at all).
const TRIES_PER_QUERY: usize = 200;

/// Whether row `row` of `table` meets `c`. `covering`: a categorical value meets `=` with
/// a label that covers it (the source read against released labels); else labels compare
/// as they are (the release read against itself). NULL compares as pandas compares NaN.
fn meets(table: &Table, columns: &[Column], row: usize, c: &Condition, covering: bool) -> bool {
    match &table.columns[c.column] {
        Values::Numbers(x) => {
            let x = x[row];
            let v = f64::from_bits(c.value);
            match c.op {
                Op::IsNull => x.is_nan(),
                Op::NotNull => !x.is_nan(),
                Op::Eq => x == v,
                Op::Ne => x != v,
                Op::Gt => x > v,
                Op::Lt => x < v,
                Op::Ge => x >= v,
                Op::Le => x <= v,
            }
        }
        Values::Codes(x) => {
            let code = x[row];
            let label = c.value as u32;
            let equal = || {
                if covering {
                    code != NULL_CODE && columns[c.column].covers(label, code)
                } else {
                    code == label
                }
            };
            match c.op {
                Op::IsNull => code == NULL_CODE,
                Op::NotNull => code != NULL_CODE,
                Op::Eq => equal(),
                Op::Ne => !equal(),
                // Categorical columns get only = and != (and NULL tests).
                _ => false,
            }
        }
    }
}

/// Whether `query` matches exactly one row of `table`, reading only the rows its most
/// selective condition allows when the table is indexed.
fn singles_out(
    table: &Table,
    index: Option<&Index>,
    columns: &[Column],
    query: &Query,
    covering: bool,
) -> bool {
    let mut best = Rows::All;
    if let Some(index) = index {
        for c in query {
            let rows = index.rows(c.column, c.op, c.value, covering, columns[c.column].star());
            if let Some(n) = rows.count() {
                if best.count().is_none_or(|m| n < m) {
                    best = rows;
                }
            }
        }
    }
    let mut found = 0;
    best.for_each(table.rows, |row| {
        if query
            .iter()
            .all(|c| meets(table, columns, row, c, covering))
        {
            found += 1;
        }
        found < 2
    });
    found == 1
}

/// How many of `queries` single out one row of `table`.
fn successes(
    table: &Table,
    index: Option<&Index>,
    columns: &[Column],
    queries: &[Query],
    covering: bool,
) -> usize {
    use rayon::prelude::*;
    queries
        .par_iter()
        .filter(|q| singles_out(table, index, columns, q, covering))
        .count()
}

/// The value of row `row` of column `c` as a condition's value, or `None` for NULL.
fn value_of(table: &Table, c: usize, row: usize) -> Option<u64> {
    match &table.columns[c] {
        Values::Numbers(x) => (!x[row].is_nan()).then(|| x[row].to_bits()),
        Values::Codes(x) => (x[row] != NULL_CODE).then_some(x[row] as u64),
    }
}

/// The median of each numeric column of `table` (NaN left out; NaN for none).
fn medians(table: &Table) -> Vec<f64> {
    table
        .columns
        .iter()
        .map(|values| match values {
            Values::Numbers(x) => {
                let mut v: Vec<f64> = x.iter().copied().filter(|x| !x.is_nan()).collect();
                if v.is_empty() {
                    return f64::NAN;
                }
                v.sort_by(f64::total_cmp);
                let m = v.len() / 2;
                if v.len() % 2 == 1 {
                    v[m]
                } else {
                    (v[m - 1] + v[m]) / 2.0
                }
            }
            Values::Codes(_) => f64::NAN,
        })
        .collect()
}

/// The query of one released row on `chosen` columns.
fn query_of_row(release: &Table, medians: &[f64], row: usize, chosen: &[usize]) -> Query {
    chosen
        .iter()
        .map(
            |&c| match (value_of(release, c, row), &release.columns[c]) {
                (None, _) => Condition {
                    column: c,
                    op: Op::IsNull,
                    value: 0,
                },
                (Some(bits), Values::Numbers(_)) => Condition {
                    column: c,
                    op: if f64::from_bits(bits) > medians[c] {
                        Op::Ge
                    } else {
                        Op::Le
                    },
                    value: bits,
                },
                (Some(code), Values::Codes(_)) => Condition {
                    column: c,
                    op: Op::Eq,
                    value: code,
                },
            },
        )
        .collect()
}

/// The attacker's queries: at most `wanted` distinct queries that single out one row of
/// the release.
fn attack_queries(
    release: &Table,
    columns: &[Column],
    attacked: &[usize],
    mode: Mode,
    per_query: usize,
    wanted: usize,
    rng: &mut ChaCha8Rng,
) -> Vec<Query> {
    let index = Index::new(release, columns);
    let mut kept = Vec::new();
    let mut seen: HashSet<Query> = HashSet::new();
    let mut consider = |query: Query, kept: &mut Vec<Query>| {
        let mut key = query.clone();
        key.sort_by_key(|c| (c.column, c.op as u8, c.value));
        if !seen.contains(&key) && singles_out(release, Some(&index), columns, &query, false) {
            seen.insert(key);
            kept.push(query);
        }
    };
    match mode {
        Mode::Multivariate => {
            let medians = medians(release);
            let per_query = per_query.min(attacked.len());
            let mut tries = 0;
            while kept.len() < wanted && tries < wanted * TRIES_PER_QUERY && release.rows > 0 {
                tries += 1;
                let row = rng.random_range(0..release.rows);
                let chosen: Vec<usize> =
                    attacked.choose_multiple(rng, per_query).copied().collect();
                consider(query_of_row(release, &medians, row, &chosen), &mut kept);
            }
        }
        Mode::Univariate => {
            let mut candidates = Vec::new();
            for &c in attacked {
                let mut counts: std::collections::HashMap<Option<u64>, usize> =
                    std::collections::HashMap::new();
                for row in 0..release.rows {
                    *counts.entry(value_of(release, c, row)).or_default() += 1;
                }
                if counts.get(&None) == Some(&1) {
                    candidates.push(vec![Condition {
                        column: c,
                        op: Op::IsNull,
                        value: 0,
                    }]);
                }
                if let Values::Numbers(x) = &release.columns[c] {
                    let present = x.iter().copied().filter(|x| !x.is_nan());
                    let (lo, hi) = present
                        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
                            (lo.min(x), hi.max(x))
                        });
                    if lo.is_finite() {
                        candidates.push(vec![Condition {
                            column: c,
                            op: Op::Le,
                            value: lo.to_bits(),
                        }]);
                        candidates.push(vec![Condition {
                            column: c,
                            op: Op::Ge,
                            value: hi.to_bits(),
                        }]);
                    }
                }
                let mut rare: Vec<u64> = counts
                    .iter()
                    .filter_map(|(v, &n)| (n == 1).then_some(*v).flatten())
                    .collect();
                rare.sort_unstable();
                candidates.extend(rare.into_iter().map(|value| {
                    vec![Condition {
                        column: c,
                        op: Op::Eq,
                        value,
                    }]
                }));
            }
            candidates.shuffle(rng);
            for query in candidates {
                if kept.len() == wanted {
                    break;
                }
                consider(query, &mut kept);
            }
        }
    }
    kept
}

/// The baseline's queries: `wanted` random queries on `per_query` columns, each value
/// drawn from the release's distinct values of its column, each comparison at random.
fn random_queries(
    release: &Table,
    attacked: &[usize],
    per_query: usize,
    wanted: usize,
    rng: &mut ChaCha8Rng,
) -> Vec<Query> {
    let distinct: Vec<Vec<Option<u64>>> = (0..release.columns.len())
        .map(|c| {
            let mut seen = HashSet::new();
            (0..release.rows)
                .map(|row| value_of(release, c, row))
                .filter(|v| seen.insert(*v))
                .collect()
        })
        .collect();
    let per_query = per_query.min(attacked.len());
    (0..wanted)
        .map(|_| {
            let chosen: Vec<usize> = attacked.choose_multiple(rng, per_query).copied().collect();
            chosen
                .into_iter()
                .filter_map(|c| {
                    let value = *distinct[c].choose(rng)?;
                    Some(match value {
                        None => Condition {
                            column: c,
                            op: if rng.random_bool(0.5) {
                                Op::IsNull
                            } else {
                                Op::NotNull
                            },
                            value: 0,
                        },
                        Some(value) => {
                            let ops: &[Op] = match release.columns[c] {
                                Values::Numbers(_) => {
                                    &[Op::Eq, Op::Ne, Op::Gt, Op::Lt, Op::Ge, Op::Le]
                                }
                                Values::Codes(_) => &[Op::Eq, Op::Ne],
                            };
                            Condition {
                                column: c,
                                op: ops[rng.random_range(0..ops.len())],
                                value,
                            }
                        }
                    })
                })
                .collect()
        })
        .collect()
}

/// The probability that a query of weight up to `w` singles out one of `n` records,
/// integrated over weights in [0, w] (anonymeter's `singling_out_probability_integral`
/// from 0): `(1 − (n w + 1)(1 − w)^n) / (n + 1)`.
fn singling_out_integral(n: f64, w: f64) -> f64 {
    (1.0 - (n * w + 1.0) * (1.0 - w).powf(n)) / (n + 1.0)
}

/// The factor that brings the control's successes to the source's size, when the two
/// differ (anonymeter's `fit_correction_term`): the queries are asked of samples of the
/// control at ten sizes, five times each; the model `norm · integral(n, w)` is fitted by
/// least squares, and the factor is the model at the source's size over the model at the
/// control's (the norm cancels).
fn size_correction(
    control: &Table,
    columns: &[Column],
    queries: &[Query],
    source_rows: usize,
    rng: &mut ChaCha8Rng,
) -> f64 {
    let n = control.rows;
    let smallest = n.min(1000);
    let mut points = Vec::new();
    for i in 0..10 {
        let size = smallest as f64 + (n - smallest) as f64 * i as f64 / 9.0;
        let size = size as usize;
        for _ in 0..5 {
            let rows: Vec<usize> = rand::seq::index::sample(rng, n, size).into_vec();
            let sample = control.take(&rows);
            points.push((
                size as f64,
                successes(&sample, None, columns, queries, true) as f64,
            ));
        }
    }
    // For a fixed w the best norm is Σ y f / Σ f²; search w on a logarithmic grid, then
    // refine by golden section around the best point.
    let sse = |log_w: f64| {
        let w = 10f64.powf(log_w);
        let f: Vec<f64> = points
            .iter()
            .map(|&(x, _)| singling_out_integral(x, w))
            .collect();
        let ff: f64 = f.iter().map(|f| f * f).sum();
        if ff <= 0.0 {
            return f64::INFINITY;
        }
        let norm = (f.iter().zip(&points).map(|(f, (_, y))| f * y).sum::<f64>() / ff).max(0.0);
        f.iter()
            .zip(&points)
            .map(|(f, (_, y))| (norm * f - y).powi(2))
            .sum::<f64>()
    };
    let grid: Vec<f64> = (0..=360).map(|i| -9.0 + 9.0 * i as f64 / 360.0).collect();
    let best = grid
        .iter()
        .copied()
        .min_by(|a, b| sse(*a).total_cmp(&sse(*b)))
        .unwrap_or(0.0);
    let (mut lo, mut hi) = (best - 0.025, (best + 0.025).min(0.0));
    let golden = (5f64.sqrt() - 1.0) / 2.0;
    for _ in 0..60 {
        let a = hi - golden * (hi - lo);
        let b = lo + golden * (hi - lo);
        if sse(a) < sse(b) {
            hi = b;
        } else {
            lo = a;
        }
    }
    let w = 10f64.powf((lo + hi) / 2.0);
    let at_control = singling_out_integral(n as f64, w);
    if at_control > 0.0 {
        singling_out_integral(source_rows as f64, w) / at_control
    } else {
        1.0
    }
}

/// Runs the attack: `wanted` queries on `per_query` of the `attacked` columns.
#[allow(clippy::too_many_arguments)]
pub fn run(
    release: &Table,
    source: &Table,
    control: Option<&Table>,
    columns: &[Column],
    attacked: &[usize],
    mode: Mode,
    per_query: usize,
    wanted: usize,
    rng: &mut ChaCha8Rng,
) -> Counts {
    // anonymeter drops duplicate rows of every table first.
    let release = release.distinct();
    let source = source.distinct();
    let control = control.map(Table::distinct);
    let per_query = if mode == Mode::Univariate {
        1
    } else {
        per_query
    };
    let source_index = Index::new(&source, columns);
    let baseline = random_queries(&release, attacked, per_query, wanted, rng);
    let baseline = successes(&source, Some(&source_index), columns, &baseline, true);
    let queries = attack_queries(&release, columns, attacked, mode, per_query, wanted, rng);
    let main = successes(&source, Some(&source_index), columns, &queries, true);
    let control = control.map(|control| {
        let index = Index::new(&control, columns);
        let found = successes(&control, Some(&index), columns, &queries, true) as f64;
        if control.rows != source.rows && control.rows > 0 && !queries.is_empty() {
            found * size_correction(&control, columns, &queries, source.rows, rng)
        } else {
            found
        }
    });
    Counts {
        attacks: wanted as u64,
        attacks_run: queries.len() as u64,
        successes: main as f64,
        baseline: baseline as f64,
        control,
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::super::data::Encoder;
    use super::*;
    use crate::attack::tests::table_batch;

    #[test]
    fn a_released_row_that_is_unique_singles_its_record_out() {
        // The release is the source itself: every distinct row singles itself out.
        let batch = table_batch(&[("a", 1), ("b", 2), ("c", 3), ("c", 3)]);
        let mut encoder = Encoder::new(vec![("k".into(), false, None), ("n".into(), true, None)]);
        let release = encoder
            .encode(std::slice::from_ref(&batch))
            .expect("release");
        let source = encoder.encode(&[batch]).expect("source");
        let columns = encoder.finish();
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let counts = run(
            &release,
            &source,
            None,
            &columns,
            &[0, 1],
            Mode::Multivariate,
            2,
            3,
            &mut rng,
        );
        // Three distinct rows (c,3 twice is one after dropping duplicates): every query
        // built from one of them singles it out in the source too.
        assert_eq!(counts.attacks_run, 3);
        assert_eq!(counts.successes, 3.0);
    }

    #[test]
    fn a_label_that_singles_out_a_released_row_may_cover_several_records() {
        let mut encoder = Encoder::new(vec![("k".into(), false, None), ("n".into(), true, None)]);
        let release = encoder
            .encode(&[table_batch(&[("x", 1), ("y", 2)])])
            .expect("release");
        let source = encoder
            .encode(&[table_batch(&[("x", 1), ("x", 5), ("y", 2), ("y", 6)])])
            .expect("source");
        let columns = encoder.finish();
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        // On k alone: "k = x" and "k = y" each single out one released row, and match two
        // source records each.
        let counts = run(
            &release,
            &source,
            None,
            &columns,
            &[0],
            Mode::Univariate,
            1,
            10,
            &mut rng,
        );
        assert_eq!((counts.attacks_run, counts.successes), (2, 0.0));
        // On both columns the univariate queries also compare numbers: "n = 1", "n = 2",
        // "n <= 1" and "n >= 2" single out a released row; in the source "n <= 1" and
        // "n = 1", "n = 2" match one record, "n >= 2" three.
        let counts = run(
            &release,
            &source,
            None,
            &columns,
            &[0, 1],
            Mode::Univariate,
            1,
            10,
            &mut rng,
        );
        assert_eq!((counts.attacks_run, counts.successes), (6, 3.0));
    }

    #[test]
    fn the_size_correction_is_anonymeters() {
        // anonymeter's singling_out_probability_integral(n=100, w_min=0, w_max=0.01).
        assert!((singling_out_integral(100.0, 0.01) - 0.002_652_825).abs() < 1e-8);
        // At equal sizes the fitted model's ratio is 1.
        let rows: Vec<(String, i64)> = (0..400).map(|i| (format!("v{}", i % 97), i % 13)).collect();
        let refs: Vec<(&str, i64)> = rows.iter().map(|(s, n)| (s.as_str(), *n)).collect();
        let mut encoder = Encoder::new(vec![("k".into(), false, None), ("n".into(), true, None)]);
        let control = encoder.encode(&[table_batch(&refs)]).expect("control");
        let columns = encoder.finish();
        let queries: Vec<Query> = (0..97)
            .map(|v| {
                vec![Condition {
                    column: 0,
                    op: Op::Eq,
                    value: v,
                }]
            })
            .collect();
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let factor = size_correction(&control, &columns, &queries, 400, &mut rng);
        assert!((factor - 1.0).abs() < 1e-9, "{factor}");
    }
}
