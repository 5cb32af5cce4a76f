//! Distance-based record linkage (Pagliuca and Seri 1999; Domingo-Ferrer and Torra 2001;
//! sdcMicro's `recordLinkage`): the attacker holds the source's records on the
//! quasi-identifiers and links each to the released row nearest it, by the mixed distance
//! of [`Neighbours`] (a value is 0 away from a label that covers it). A link is right when
//! it lands on the record's own released row, which the engine knows for the methods that
//! release each record once ([`crate::release::OwnRows`]).
//!
//! Equal released rows cannot be told apart, and several rows may lie at the nearest
//! distance: the attacker then picks one of them at random, so a record whose own row is
//! among the `n` nearest is linked with probability `1 / n` (sdcMicro reports `n` as
//! `n_best`). The figure is that expectation, summed over records, with no draw. A record
//! is *linked exactly* when its own row is the only one at distance 0. The baseline picks a
//! released row at random.
//!
//! Unlike sdcMicro's global assignment (one source record per released row, by the
//! Hungarian algorithm, which needs `n²` memory), each record is linked on its own, as by
//! an attacker who knows one person's record (METHODS §7.5.6 compares the two).

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

use super::data::{Column, Table};
use super::neighbours::Neighbours;
use super::Counts;

/// Distances computed (links × released groups) above which the attack links a sample of
/// `wanted` records rather than every record.
const EVERY_RECORD_UP_TO: usize = 50_000_000;

/// Two distances closer than this are a tie (sums of the same scaled differences may
/// round differently).
const TIE: f64 = 1e-9;

/// The source's records and the released row each became: row `i` of `own` is the released
/// tuple of the `records[i]` records whose source tuple is row `i` of `targets`.
#[derive(Debug, Clone, Copy)]
pub struct Links<'a> {
    /// The source tuples.
    pub targets: &'a Table,
    /// Their own released tuples.
    pub own: &'a Table,
    /// Records of each.
    pub records: &'a [u64],
}

/// What linking one source tuple gives each of its records: the chance of the right link,
/// and whether the link is exact.
fn link(near: &Neighbours<'_>, links: &Links<'_>, i: usize) -> (f64, bool) {
    let Some(own) = near.group_of(links.own, i) else {
        return (0.0, false);
    };
    let distances = near.distances(links.targets, i);
    let best = distances.iter().copied().fold(f64::INFINITY, f64::min);
    if distances[own] > best + TIE {
        return (0.0, false);
    }
    let tied: usize = distances
        .iter()
        .enumerate()
        .filter(|(_, &d)| d <= best + TIE)
        .map(|(g, _)| near.group_rows(g))
        .sum();
    (1.0 / tied as f64, best <= TIE && tied == 1)
}

/// Links the source's records (every one, or `wanted` drawn at random when that is much
/// work) to the release on the columns `chosen`: the right links (main), the exact ones,
/// and a random row's chance (baseline). Returns the counts of the right links and of the
/// exact ones.
pub fn run(
    release: &Table,
    columns: &[Column],
    chosen: &[usize],
    links: Links<'_>,
    wanted: usize,
    rng: &mut ChaCha8Rng,
) -> (Counts, Counts) {
    let near = Neighbours::new(release, columns, chosen);
    let total: u64 = links.records.iter().sum();
    let released = release.rows.max(1) as f64;
    // Which tuples are linked, and how many records each stands for.
    let weighted: Vec<(usize, u64)> =
        if links.targets.rows.saturating_mul(near.group_count()) <= EVERY_RECORD_UP_TO {
            (0..links.targets.rows)
                .filter(|&i| links.records[i] > 0)
                .map(|i| (i, links.records[i]))
                .collect()
        } else {
            sample(links.records, total, wanted, rng)
        };
    let results: Vec<(f64, bool)> = weighted
        .par_iter()
        .map(|&(i, _)| link(&near, &links, i))
        .collect();
    let attacked: u64 = weighted.iter().map(|w| w.1).sum();
    let (mut right, mut exact) = (0.0, 0.0);
    for (&(_, records), (chance, is_exact)) in weighted.iter().zip(&results) {
        right += records as f64 * chance;
        if *is_exact {
            exact += records as f64;
        }
    }
    let baseline = attacked as f64 / released;
    let counts = |successes: f64| Counts {
        attacks: attacked,
        attacks_run: attacked,
        successes,
        baseline,
        control: None,
    };
    (counts(right), counts(exact))
}

/// `wanted` records drawn with replacement among `total` (the records of each tuple in
/// `records`), as (tuple, times drawn), ascending by tuple.
fn sample(records: &[u64], total: u64, wanted: usize, rng: &mut ChaCha8Rng) -> Vec<(usize, u64)> {
    if total == 0 {
        return Vec::new();
    }
    let mut ends = Vec::with_capacity(records.len());
    let mut sum = 0u64;
    for &r in records {
        sum += r;
        ends.push(sum);
    }
    let mut drawn: Vec<usize> = (0..wanted)
        .map(|_| {
            let at = rng.random_range(0..total);
            ends.partition_point(|&end| end <= at)
        })
        .collect();
    drawn.sort_unstable();
    let mut out: Vec<(usize, u64)> = Vec::new();
    for i in drawn {
        match out.last_mut() {
            Some((last, n)) if *last == i => *n += 1,
            _ => out.push((i, 1)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::super::data::Encoder;
    use super::*;
    use crate::attack::tests::table_batch;

    /// Links over the rows `(k, n)` of a release and of a source, each source row becoming
    /// the release row given by `own`.
    fn linked(release: &[(&str, i64)], source: &[(&str, i64)], own: &[usize]) -> (Counts, Counts) {
        let mut encoder = Encoder::new(vec![("k".into(), false, None), ("n".into(), true, None)]);
        let release = encoder.encode(&[table_batch(release)]).expect("release");
        let targets = encoder.encode(&[table_batch(source)]).expect("source");
        let own = release.take(own);
        let columns = encoder.finish();
        let records = vec![1; targets.rows];
        let links = Links {
            targets: &targets,
            own: &own,
            records: &records,
        };
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        run(&release, &columns, &[0, 1], links, 10, &mut rng)
    }

    #[test]
    fn a_record_is_linked_with_the_chance_of_its_row_among_the_nearest() {
        // Source a/0, a/1, b/5, b/9, released as a/0.5 twice (one class), b/5 and b/9.
        let release = [("a", 5), ("a", 5), ("b", 5), ("b", 9)];
        let source = [("a", 4), ("a", 6), ("b", 5), ("b", 9)];
        let (right, exact) = linked(&release, &source, &[0, 1, 2, 3]);
        // a/4 and a/6: their class (2 rows) is the nearest: 1/2 each. b/5 and b/9: alone at
        // distance 0, exact.
        assert_eq!(right.attacks, 4);
        assert_eq!(right.successes, 0.5 + 0.5 + 1.0 + 1.0);
        assert_eq!(exact.successes, 2.0);
        assert_eq!(right.baseline, 1.0);
        // Records dealt to rows far from them are linked wrongly: b/5 became b/9 and b/9
        // became b/5 (as a swap would).
        let (right, exact) = linked(&release, &source, &[0, 1, 3, 2]);
        assert_eq!(right.successes, 1.0);
        assert_eq!(exact.successes, 0.0);
    }

    #[test]
    fn ties_across_classes_share_the_chance() {
        // "*" covers every value: a/5's nearest rows are its own class and the "*" row.
        let release = [("a", 5), ("*", 5), ("b", 5)];
        let source = [("a", 5), ("c", 5), ("b", 5)];
        let (right, exact) = linked(&release, &source, &[0, 1, 2]);
        // c/5: only "*" covers it, and "*" is its own row: linked, exactly.
        assert_eq!(right.successes, 0.5 + 1.0 + 0.5);
        assert_eq!(exact.successes, 1.0);
    }

    #[test]
    fn a_sample_draws_records_by_their_weight() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let drawn = sample(&[0, 3, 1], 4, 4000, &mut rng);
        assert_eq!(drawn.iter().map(|d| d.1).sum::<u64>(), 4000);
        assert!(drawn.iter().all(|d| d.0 != 0));
        let second = drawn.iter().find(|d| d.0 == 1).map_or(0, |d| d.1);
        // Binomial(4000, 3/4): mean 3000, sd 27; 6 sd either side.
        assert!((2838..=3162).contains(&second), "{second}");
    }
}
