//! MDAV, the maximum-distance-to-average-vector heuristic of Domingo-Ferrer and Torra
//! (2005), on weighted points (METHODS.md §10.2).
//!
//! The records are given as distinct points (their standardized quasi-identifier vectors)
//! with the number of records at each. Records at one point are indistinguishable to the
//! algorithm, so grouping points with multiplicities is record-level MDAV with a fixed
//! tie-break: while at least 3k records remain, take the centroid of the remaining records,
//! the record `r` farthest from it and the record `s` farthest from `r`; form the group of
//! the k records nearest to `r` (including `r`), then the group of the k records nearest to
//! `s`. With 2k to 3k − 1 records left, one more group around the record farthest from the
//! centroid; the rest (k to 2k − 1 records) forms the last group. Ties between points go to
//! the lower point index; a point may give its records to several groups.
//!
//! Cost: each step scans the remaining distinct points a bounded number of times, so the
//! whole run evaluates O(n/k · D) distances for n records at D distinct points: O(n²/k)
//! when every record is distinct, far less when values repeat.

use datafusion::common::{internal_err, Result};

use crate::progress::Progress;

/// Distinct points and their records.
#[derive(Debug, Clone, Copy)]
pub struct WeightedPoints<'a> {
    /// Coordinates per point (`dims` each, point after point), already standardized.
    pub coords: &'a [f64],
    /// Number of dimensions.
    pub dims: usize,
    /// Records at each point (each at least one).
    pub counts: &'a [u64],
}

impl WeightedPoints<'_> {
    fn point(&self, p: u32) -> &[f64] {
        let at = p as usize * self.dims;
        &self.coords[at..at + self.dims]
    }

    fn distance2(&self, p: u32, center: &[f64]) -> f64 {
        self.point(p)
            .iter()
            .zip(center)
            .map(|(x, c)| (x - c) * (x - c))
            .sum()
    }
}

/// A group: the records it takes from each point, as `(point, records)` ascending by point.
pub type Group = Vec<(u32, u64)>;

/// The MDAV groups of `points` with at least `k` records each (and fewer than `2k`, unless
/// there are fewer than `2k` records in all). Fails when there are fewer than `k` records.
pub fn mdav(points: &WeightedPoints<'_>, k: u64, progress: &Progress) -> Result<Vec<Group>> {
    let total: u64 = points.counts.iter().sum();
    if points.counts.len() * points.dims != points.coords.len() {
        return internal_err!("MDAV: coordinates do not match the points");
    }
    if k == 0 || total < k {
        return internal_err!("MDAV needs at least k = {k} records, got {total}");
    }
    let mut state = State {
        points,
        left: points.counts.to_vec(),
        alive: (0..points.counts.len() as u32)
            .filter(|&p| points.counts[p as usize] > 0)
            .collect(),
        remaining: total,
        scratch: Vec::new(),
    };
    let mut groups = Vec::new();
    let mut step = 0usize;
    while state.remaining >= 3 * k {
        let centroid = state.centroid();
        let r = state.farthest(&centroid);
        let r_at = points.point(r).to_vec();
        let s = state.farthest(&r_at);
        let s_at = points.point(s).to_vec();
        groups.push(state.take_nearest(r, &r_at, k));
        groups.push(state.take_nearest(s, &s_at, k));
        state.alive.retain(|&p| state.left[p as usize] > 0);
        step += 1;
        if step.is_multiple_of(1024) {
            progress.report((total - state.remaining) as usize, total as usize)?;
        }
    }
    if state.remaining >= 2 * k {
        let centroid = state.centroid();
        let r = state.farthest(&centroid);
        let r_at = points.point(r).to_vec();
        groups.push(state.take_nearest(r, &r_at, k));
        state.alive.retain(|&p| state.left[p as usize] > 0);
    }
    if state.remaining > 0 {
        let rest: Group = state
            .alive
            .iter()
            .map(|&p| (p, state.left[p as usize]))
            .collect();
        groups.push(rest);
    }
    for g in &mut groups {
        g.sort_unstable();
    }
    Ok(groups)
}

struct State<'a, 'b> {
    points: &'b WeightedPoints<'a>,
    /// Records not yet grouped, per point.
    left: Vec<u64>,
    /// Points with records left (a superset between compactions), ascending.
    alive: Vec<u32>,
    remaining: u64,
    scratch: Vec<(f64, u32)>,
}

impl State<'_, '_> {
    /// The mean of the remaining records.
    fn centroid(&self) -> Vec<f64> {
        let dims = self.points.dims;
        let mut sum = vec![0.0; dims];
        for &p in &self.alive {
            let weight = self.left[p as usize] as f64;
            for (s, x) in sum.iter_mut().zip(self.points.point(p)) {
                *s += weight * x;
            }
        }
        let n = self.remaining as f64;
        sum.iter_mut().for_each(|s| *s /= n);
        sum
    }

    /// The remaining point farthest from `center` (the lowest index among equals).
    fn farthest(&self, center: &[f64]) -> u32 {
        let mut best = (f64::NEG_INFINITY, u32::MAX);
        for &p in &self.alive {
            if self.left[p as usize] == 0 {
                continue;
            }
            let d = self.points.distance2(p, center);
            if d > best.0 {
                best = (d, p);
            }
        }
        best.1
    }

    /// Removes and returns the `k` remaining records nearest to `center` (the coordinates
    /// of point `at`), nearer points first, the lower index among equally near ones.
    fn take_nearest(&mut self, at: u32, center: &[f64], k: u64) -> Group {
        // The point itself is the only one at distance 0.
        if self.left[at as usize] >= k {
            self.left[at as usize] -= k;
            self.remaining -= k;
            return vec![(at, k)];
        }
        self.scratch.clear();
        for &p in &self.alive {
            if self.left[p as usize] > 0 {
                self.scratch.push((self.points.distance2(p, center), p));
            }
        }
        let order = |a: &(f64, u32), b: &(f64, u32)| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1));
        // Each point has a record, so the k nearest records lie in the k nearest points.
        let m = (k as usize).min(self.scratch.len());
        if m < self.scratch.len() {
            self.scratch.select_nth_unstable_by(m, order);
        }
        let nearest = &mut self.scratch[..m];
        nearest.sort_unstable_by(order);
        let mut group = Vec::new();
        let mut wanted = k;
        for &(_, p) in nearest.iter() {
            if wanted == 0 {
                break;
            }
            let take = self.left[p as usize].min(wanted);
            self.left[p as usize] -= take;
            wanted -= take;
            group.push((p, take));
        }
        self.remaining -= k - wanted;
        group
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(coords: &[f64], dims: usize, counts: &[u64], k: u64) -> Vec<Group> {
        let points = WeightedPoints {
            coords,
            dims,
            counts,
        };
        mdav(&points, k, &Progress::silent()).unwrap()
    }

    /// Seven records on a line, k = 2, worked by hand. Centroid of {0,1,2,10,11,12,30} is
    /// 66/7 ≈ 9.43: the farthest record is 30 (r), the farthest from it is 0 (s). Around
    /// r: {30, 12}; around s: {0, 1}. Three records remain (< 3k = 6, ≥ 2k = 4? no): they
    /// form the last group {2, 10, 11}.
    #[test]
    fn groups_a_line_as_worked_by_hand() {
        let coords = [0.0, 1.0, 2.0, 10.0, 11.0, 12.0, 30.0];
        let groups = run(&coords, 1, &[1; 7], 2);
        assert_eq!(
            groups,
            vec![
                vec![(5, 1), (6, 1)],
                vec![(0, 1), (1, 1)],
                vec![(2, 1), (3, 1), (4, 1)],
            ]
        );
    }

    /// With 2k to 3k − 1 records left, one group around the record farthest from the
    /// centroid, and the rest: {0,1,2,3,20} with k = 2: centroid 5.2, farthest 20, its
    /// nearest is 3: {3, 20}; the rest {0, 1, 2}.
    #[test]
    fn between_two_and_three_k_forms_one_group_and_the_rest() {
        let coords = [0.0, 1.0, 2.0, 3.0, 20.0];
        let groups = run(&coords, 1, &[1; 5], 2);
        assert_eq!(
            groups,
            vec![vec![(3, 1), (4, 1)], vec![(0, 1), (1, 1), (2, 1)]]
        );
    }

    /// Points with many records give whole groups of their own records, and a point may be
    /// split across groups; weighted MDAV equals MDAV on the expanded records.
    #[test]
    fn multiplicities_split_points_as_records_would_be() {
        // 5 records at 0, 1 at 10, k = 3, 6 records: < 3k, ≥ 2k: centroid 10/6, farthest
        // is 10; its 3 nearest: 10 and two records at 0; the rest: three records at 0.
        let groups = run(&[0.0, 10.0], 1, &[5, 1], 3);
        assert_eq!(groups, vec![vec![(0, 2), (1, 1)], vec![(0, 3)]]);
        let groups = run(&[0.0, 10.0], 1, &[9, 1], 3);
        assert!(groups
            .iter()
            .all(|g| g.iter().map(|p| p.1).sum::<u64>() >= 3));
        assert_eq!(groups.iter().flatten().map(|p| p.1).sum::<u64>(), 10);
    }

    /// Two dimensions: the farthest corner and its neighbours group first.
    #[test]
    fn groups_in_two_dimensions() {
        // Four clusters of two records around (0,0), (0,10), (10,0), (10,10), k = 2.
        let coords = [
            0.0, 0.0, 0.0, 1.0, 0.0, 10.0, 1.0, 10.0, 10.0, 0.0, 10.0, 1.0, 10.0, 10.0, 11.0, 11.0,
        ];
        let groups = run(&coords, 2, &[1; 8], 2);
        let mut sets: Vec<Vec<u32>> = groups
            .iter()
            .map(|g| g.iter().map(|p| p.0).collect())
            .collect();
        sets.sort();
        assert_eq!(sets, vec![vec![0, 1], vec![2, 3], vec![4, 5], vec![6, 7]]);
    }

    #[test]
    fn fewer_records_than_k_fail() {
        let points = WeightedPoints {
            coords: &[1.0],
            dims: 1,
            counts: &[2],
        };
        assert!(mdav(&points, 3, &Progress::silent()).is_err());
        // Exactly k records: one group.
        assert_eq!(run(&[1.0], 1, &[3], 3), vec![vec![(0, 3)]]);
    }
}
