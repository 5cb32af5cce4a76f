//! The inference attack as anonymeter defines it (`InferenceEvaluator`): the attacker knows
//! some columns of a target record and guesses its secret column as the secret of the
//! nearest released row. A guess is right when it equals the secret (or, for a released
//! label, covers it, METHODS §7.5.4); for a numeric secret, when it is within 5 % of the
//! guess. The baseline guesses the secret of a random released row; the control attacks
//! held-out records.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

use super::data::{Column, Table, Values, NULL_CODE};
use super::neighbours::Neighbours;
use super::Counts;

/// A numeric guess is right within this share of its value (anonymeter's `tolerance`).
pub const TOLERANCE: f64 = 0.05;

/// Whether released row `guess` holds the secret of row `row` of `table`.
fn right(
    release: &Table,
    table: &Table,
    columns: &[Column],
    secret: usize,
    guess: usize,
    row: usize,
) -> bool {
    match (&release.columns[secret], &table.columns[secret]) {
        (Values::Numbers(g), Values::Numbers(t)) => {
            let (g, t) = (g[guess], t[row]);
            (g.is_nan() && t.is_nan()) || (g - t).abs() / (g + 1e-12).abs() <= TOLERANCE
        }
        (Values::Codes(g), Values::Codes(t)) => {
            let (g, t) = (g[guess], t[row]);
            if g == NULL_CODE || t == NULL_CODE {
                g == t
            } else {
                columns[secret].covers(g, t)
            }
        }
        _ => false,
    }
}

/// How many of `targets` the nearest released rows on `auxiliary` guess right.
fn guessed(
    release: &Table,
    table: &Table,
    columns: &[Column],
    secret: usize,
    auxiliary: &[usize],
    targets: &[usize],
    seed: u64,
) -> usize {
    let neighbours = Neighbours::new(release, columns, auxiliary);
    targets
        .par_iter()
        .enumerate()
        .filter(|(i, &row)| {
            let mut rng =
                ChaCha8Rng::seed_from_u64(seed ^ (*i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
            neighbours
                .nearest(table, row, 1, &mut rng)
                .first()
                .is_some_and(|&guess| right(release, table, columns, secret, guess as usize, row))
        })
        .count()
}

/// Runs the attack on `wanted` records of the source (and of the control).
#[allow(clippy::too_many_arguments)]
pub fn run(
    release: &Table,
    source: &Table,
    control: Option<&Table>,
    columns: &[Column],
    secret: usize,
    auxiliary: &[usize],
    wanted: usize,
    rng: &mut ChaCha8Rng,
) -> Counts {
    let n = wanted.min(source.rows);
    if release.rows == 0 || n == 0 {
        return Counts::of_targets(n, 0, 0, control.map(|_| 0.0));
    }
    // The baseline: the secrets of random released rows for random targets.
    let targets = rand::seq::index::sample(rng, source.rows, n).into_vec();
    let guesses = rand::seq::index::sample(rng, release.rows, n.min(release.rows)).into_vec();
    let baseline = targets
        .iter()
        .zip(&guesses)
        .filter(|(&row, &guess)| right(release, source, columns, secret, guess, row))
        .count();
    let targets = rand::seq::index::sample(rng, source.rows, n).into_vec();
    let main = guessed(
        release,
        source,
        columns,
        secret,
        auxiliary,
        &targets,
        rng.random(),
    );
    let control = control.map(|control| {
        let targets = rand::seq::index::sample(rng, control.rows, n.min(control.rows)).into_vec();
        guessed(
            release,
            control,
            columns,
            secret,
            auxiliary,
            &targets,
            rng.random(),
        ) as f64
    });
    Counts::of_targets(n, main, baseline, control)
}

#[cfg(test)]
mod tests {
    use super::super::data::Encoder;
    use super::*;
    use crate::attack::tests::table_batch;

    #[test]
    fn the_nearest_row_gives_the_secret_away() {
        // The secret (n) is a function of the known column: every guess is right.
        let rows: Vec<(String, i64)> = (0..30)
            .map(|i| (format!("v{}", i % 10), 100 * (1 + i % 10)))
            .collect();
        let refs: Vec<(&str, i64)> = rows.iter().map(|(s, n)| (s.as_str(), *n)).collect();
        let mut encoder = Encoder::new(vec![("k".into(), false, None), ("n".into(), true, None)]);
        let release = encoder.encode(&[table_batch(&refs)]).expect("release");
        let columns = encoder.finish();
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        let counts = run(&release, &release, None, &columns, 1, &[0], 30, &mut rng);
        assert_eq!(counts.successes, 30.0);
        // A random row's secret is right only when equal (two secrets differ by at least
        // 100, more than 5 % of any guess up to 1000): one time in ten, and
        // P(more than 10 of 30) < 3e-4.
        assert!(counts.baseline <= 10.0, "{counts:?}");
    }

    #[test]
    fn categorical_secrets_are_guessed_exactly() {
        let rows: Vec<(String, i64)> = (0..40).map(|i| (format!("s{}", i % 4), i % 4)).collect();
        let refs: Vec<(&str, i64)> = rows.iter().map(|(s, n)| (s.as_str(), *n)).collect();
        let mut encoder = Encoder::new(vec![("k".into(), false, None), ("n".into(), true, None)]);
        let release = encoder.encode(&[table_batch(&refs)]).expect("release");
        let columns = encoder.finish();
        let mut rng = ChaCha8Rng::seed_from_u64(4);
        let counts = run(&release, &release, None, &columns, 0, &[1], 40, &mut rng);
        assert_eq!(counts.successes, 40.0);
        // Random guesses are right about one time in four: P(> 20 of 40) < 1e-4.
        assert!(counts.baseline <= 20.0, "{counts:?}");
    }
}
