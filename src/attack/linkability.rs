//! The linkability attack as anonymeter defines it (`LinkabilityEvaluator`): the attacker
//! holds two tables about the same people, each with some of the source's columns, and
//! links their records through the release: a target record is linked when its nearest
//! released rows on the first columns and on the second share a row. The baseline links at
//! random; the control links held-out records.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

use super::data::{Column, Table};
use super::neighbours::Neighbours;
use super::Counts;

/// Whether the two sets of released rows share one.
fn linked(a: &[u32], b: &[u32]) -> bool {
    a.iter().any(|x| b.contains(x))
}

/// How many of `targets` (rows of `table`) the release links.
#[allow(clippy::too_many_arguments)]
fn links(
    release: &Table,
    table: &Table,
    columns: &[Column],
    first: &[usize],
    second: &[usize],
    k: usize,
    targets: &[usize],
    seed: u64,
) -> usize {
    let a = Neighbours::new(release, columns, first);
    let b = Neighbours::new(release, columns, second);
    targets
        .par_iter()
        .enumerate()
        .filter(|(i, &row)| {
            // One generator per target: the same draws whatever the threads do.
            let mut rng =
                ChaCha8Rng::seed_from_u64(seed ^ (*i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
            linked(
                &a.nearest(table, row, k, &mut rng),
                &b.nearest(table, row, k, &mut rng),
            )
        })
        .count()
}

/// Runs the attack on `wanted` records of the source (and of the control), linking the
/// columns `first` to the columns `second` through the `k` nearest released rows.
#[allow(clippy::too_many_arguments)]
pub fn run(
    release: &Table,
    source: &Table,
    control: Option<&Table>,
    columns: &[Column],
    first: &[usize],
    second: &[usize],
    k: usize,
    wanted: usize,
    rng: &mut ChaCha8Rng,
) -> Counts {
    use rand::Rng;
    let k = k.clamp(1, release.rows.max(1));
    let n = wanted.min(source.rows);
    let sample = |table: &Table, rng: &mut ChaCha8Rng| -> Vec<usize> {
        rand::seq::index::sample(rng, table.rows, n.min(table.rows)).into_vec()
    };
    // The baseline: two random sets of k released rows per target.
    let baseline = if release.rows == 0 {
        0
    } else {
        (0..n)
            .filter(|_| {
                let a = rand::seq::index::sample(rng, release.rows, k).into_vec();
                let b = rand::seq::index::sample(rng, release.rows, k).into_vec();
                a.iter().any(|x| b.contains(x))
            })
            .count()
    };
    let targets = sample(source, rng);
    let main = if release.rows == 0 {
        0
    } else {
        links(
            release,
            source,
            columns,
            first,
            second,
            k,
            &targets,
            rng.random(),
        )
    };
    let control = control.map(|control| {
        let targets = sample(control, rng);
        if release.rows == 0 {
            0.0
        } else {
            links(
                release,
                control,
                columns,
                first,
                second,
                k,
                &targets,
                rng.random(),
            ) as f64
        }
    });
    Counts::of_targets(n, main, baseline, control)
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::super::data::Encoder;
    use super::*;
    use crate::attack::tests::table_batch;

    #[test]
    fn a_release_equal_to_its_source_links_every_distinct_record() {
        let rows: Vec<(String, i64)> = (0..50).map(|i| (format!("v{i}"), i)).collect();
        let refs: Vec<(&str, i64)> = rows.iter().map(|(s, n)| (s.as_str(), *n)).collect();
        let mut encoder = Encoder::new(vec![("k".into(), false, None), ("n".into(), true, None)]);
        let release = encoder.encode(&[table_batch(&refs)]).expect("release");
        let source = release.clone();
        let columns = encoder.finish();
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let counts = run(
            &release,
            &source,
            None,
            &columns,
            &[0],
            &[1],
            1,
            20,
            &mut rng,
        );
        assert_eq!((counts.attacks_run, counts.successes), (20, 20.0));
        // Random links between 50 rows rarely meet: 20 · 1/50 expected.
        assert!(counts.baseline <= 4.0, "{counts:?}");
    }

    #[test]
    fn a_release_with_one_column_constant_links_by_chance_only() {
        // The second column is the same everywhere in the release: its nearest row is any
        // row, so the two searches meet only by chance.
        let release_rows: Vec<(String, i64)> = (0..40).map(|i| (format!("v{i}"), 0)).collect();
        let refs: Vec<(&str, i64)> = release_rows.iter().map(|(s, n)| (s.as_str(), *n)).collect();
        let mut encoder = Encoder::new(vec![("k".into(), false, None), ("n".into(), true, None)]);
        let release = encoder.encode(&[table_batch(&refs)]).expect("release");
        let columns = encoder.finish();
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let counts = run(
            &release,
            &release,
            None,
            &columns,
            &[0],
            &[1],
            1,
            40,
            &mut rng,
        );
        // Each success has probability 1/40: P(more than 6 of 40) < 1e-4.
        assert!(counts.successes <= 6.0, "{counts:?}");
    }
}
