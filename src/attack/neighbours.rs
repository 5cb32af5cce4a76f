//! The released rows nearest to a record, by anonymeter's distance for mixed types (after
//! Gower 1971): over the chosen columns, the sum of `|a − b|` scaled by the column's range
//! for numbers, and 0 or 1 for categories. Here a category is 0 away from a released label
//! that covers it (METHODS §7.5.4); a NULL is 1 away from anything but a NULL category.
//!
//! Released rows that are equal on the chosen columns are one group, measured once. When
//! several rows lie at the same distance, the nearest are drawn among them at random (with
//! the attack's seeded generator), so that an attacker who cannot tell them apart guesses.

use std::collections::HashMap;

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::data::{Column, Table, Values, NULL_CODE};

/// The release grouped on some columns, ready for nearest-neighbour searches.
#[derive(Debug)]
pub struct Neighbours<'a> {
    release: &'a Table,
    columns: &'a [Column],
    chosen: Vec<usize>,
    /// One released row per group, and the rows of the group.
    groups: Vec<(usize, Vec<u32>)>,
    /// The group of each key (a row's values on the chosen columns).
    index: HashMap<Vec<u64>, usize>,
}

impl<'a> Neighbours<'a> {
    /// The release grouped on `chosen` columns.
    pub fn new(release: &'a Table, columns: &'a [Column], chosen: &[usize]) -> Self {
        let mut index: HashMap<Vec<u64>, usize> = HashMap::new();
        let mut groups: Vec<(usize, Vec<u32>)> = Vec::new();
        for row in 0..release.rows {
            let key = key(release, chosen, row);
            let g = *index.entry(key).or_insert_with(|| {
                groups.push((row, Vec::new()));
                groups.len() - 1
            });
            groups[g].1.push(row as u32);
        }
        Self {
            release,
            columns,
            chosen: chosen.to_vec(),
            groups,
            index,
        }
    }

    /// Number of groups of equal released rows.
    pub fn group_count(&self) -> usize {
        self.groups.len()
    }

    /// Released rows of group `g`.
    pub fn group_rows(&self, g: usize) -> usize {
        self.groups[g].1.len()
    }

    /// The group of released rows equal to row `row` of `table` on the chosen columns (the
    /// tables encoded on the same dictionaries), if any.
    pub fn group_of(&self, table: &Table, row: usize) -> Option<usize> {
        self.index.get(&key(table, &self.chosen, row)).copied()
    }

    /// The distance from row `row` of `table` to every group, in group order.
    pub fn distances(&self, table: &Table, row: usize) -> Vec<f64> {
        self.groups
            .iter()
            .map(|(first, _)| self.distance(table, row, *first))
            .collect()
    }

    /// The distance from row `row` of `table` (a source or control record) to released
    /// row `released`.
    fn distance(&self, table: &Table, row: usize, released: usize) -> f64 {
        self.chosen
            .iter()
            .map(|&c| match (&table.columns[c], &self.release.columns[c]) {
                (Values::Numbers(a), Values::Numbers(b)) => {
                    let d = (a[row] - b[released]).abs() * self.columns[c].scale;
                    if d.is_nan() {
                        1.0
                    } else {
                        d.min(1.0)
                    }
                }
                (Values::Codes(a), Values::Codes(b)) => {
                    let (value, label) = (a[row], b[released]);
                    let covered = if value == NULL_CODE || label == NULL_CODE {
                        value == label
                    } else {
                        self.columns[c].covers(label, value)
                    };
                    if covered {
                        0.0
                    } else {
                        1.0
                    }
                }
                _ => 1.0,
            })
            .sum()
    }

    /// The `k` released rows nearest to row `row` of `table`, ties drawn at random.
    pub fn nearest(&self, table: &Table, row: usize, k: usize, rng: &mut ChaCha8Rng) -> Vec<u32> {
        let distances = self.distances(table, row);
        let mut order: Vec<usize> = (0..self.groups.len()).collect();
        if k == 1 {
            let best = distances.iter().copied().fold(f64::INFINITY, f64::min);
            order.retain(|&g| distances[g] == best);
        } else {
            order.sort_by(|&a, &b| distances[a].total_cmp(&distances[b]));
        }
        let mut chosen: Vec<u32> = Vec::with_capacity(k);
        let mut i = 0;
        while chosen.len() < k && i < order.len() {
            let d = distances[order[i]];
            let mut tied: Vec<u32> = Vec::new();
            while i < order.len() && distances[order[i]] == d {
                tied.extend_from_slice(&self.groups[order[i]].1);
                i += 1;
            }
            let need = k - chosen.len();
            if tied.len() <= need {
                chosen.extend(tied);
            } else if need == 1 {
                chosen.push(tied[rng.random_range(0..tied.len())]);
            } else {
                chosen.extend(
                    rand::seq::index::sample(rng, tied.len(), need)
                        .into_iter()
                        .map(|t| tied[t]),
                );
            }
        }
        chosen
    }
}

/// Row `row` of `table` on the columns `chosen`, as one hashable key.
fn key(table: &Table, chosen: &[usize], row: usize) -> Vec<u64> {
    chosen
        .iter()
        .map(|&c| match &table.columns[c] {
            Values::Numbers(x) => x[row].to_bits(),
            Values::Codes(x) => x[row] as u64,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::super::data::Encoder;
    use super::*;
    use crate::attack::tests::table_batch;

    #[test]
    fn the_nearest_rows_by_mixed_distance() {
        let mut encoder = Encoder::new(vec![("k".into(), false, None), ("n".into(), true, None)]);
        let release = encoder
            .encode(&[table_batch(&[("a", 0), ("a", 10), ("b", 1), ("a", 0)])])
            .expect("release");
        let source = encoder.encode(&[table_batch(&[("a", 1)])]).expect("source");
        let columns = encoder.finish();
        let both = Neighbours::new(&release, &columns, &[0, 1]);
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        // ("a", 1): 0.1 from rows 0 and 3 (a tie, one drawn), 0.9 from row 1, 1 from row 2.
        let one = both.nearest(&source, 0, 1, &mut rng);
        assert!(one == vec![0] || one == vec![3], "{one:?}");
        let mut three = both.nearest(&source, 0, 3, &mut rng);
        three.sort_unstable();
        assert_eq!(three, vec![0, 1, 3]);
        // On the category alone rows 0, 1 and 3 tie at 0; over many draws each is chosen.
        let category = Neighbours::new(&release, &columns, &[0]);
        let mut seen = [0; 4];
        for _ in 0..300 {
            seen[category.nearest(&source, 0, 1, &mut rng)[0] as usize] += 1;
        }
        assert_eq!(seen[2], 0);
        assert!(seen[0] > 50 && seen[1] > 50 && seen[3] > 50, "{seen:?}");
    }
}
