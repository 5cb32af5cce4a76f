//! From the records' numeric quasi-identifiers to the released classes of a
//! microaggregation (METHODS.md §10): standardize, group with [`super::mdav`], replace each
//! group's values by their mean or median, and deal the records' other values to the
//! groups. Deterministic: the same data gives the same release.

use datafusion::common::{exec_err, Result};

use super::mdav::{mdav, Group, WeightedPoints};
use crate::method::numeric::{compare, NumericPoints};
use crate::metric::information_loss::InformationLoss;
use crate::progress::Progress;
use crate::release::{OwnRows, OwnValues, ReleasedHistogram};

/// What replaces a group's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Aggregate {
    /// The mean of the group's values.
    Mean,
    /// The median of the group's values (the mean of the two middle ones for an even count).
    Median,
}

impl Aggregate {
    /// The name in SQL.
    pub fn name(self) -> &'static str {
        match self {
            Self::Mean => "mean",
            Self::Median => "median",
        }
    }
}

/// A microaggregation's result.
#[derive(Debug, Clone)]
pub struct Microaggregated {
    /// The released classes: class `c`'s value for quasi-identifier `a` is
    /// `class_values[a][c]`; the class codes of attribute `a` are `0..classes`.
    pub release: ReleasedHistogram,
    /// Per quasi-identifier, the released value of each class.
    pub class_values: Vec<Vec<f64>>,
    /// The MDAV groups, in the order they were formed.
    pub groups: Vec<Group>,
    /// Within-group sum of squares of the standardized values.
    pub sse: f64,
    /// Total sum of squares of the standardized values.
    pub sst: f64,
    /// Information loss of the release against the source (METHODS.md §10.4).
    pub information_loss: InformationLoss,
    /// Owner-only: the released values of every source point's records, group by group.
    pub own_rows: OwnRows,
}

impl Microaggregated {
    /// Records of each MDAV group.
    pub fn group_sizes(&self) -> Vec<u64> {
        self.groups
            .iter()
            .map(|g| g.iter().map(|p| p.1).sum())
            .collect()
    }
}

/// Microaggregates `points` into groups of at least `k` records.
pub fn microaggregate(
    points: &NumericPoints,
    k: u64,
    aggregate: Aggregate,
    progress: &Progress,
) -> Result<Microaggregated> {
    let dims = points.dims;
    let records = points.records();
    let n: u64 = records.iter().sum();
    if n < k {
        return exec_err!(
            "microaggregation needs at least k = {k} records, and the source has {n}"
        );
    }
    // Per column: mean, standard deviation, range, over the records.
    let mut mean = vec![0.0; dims];
    let mut low = vec![f64::INFINITY; dims];
    let mut high = vec![f64::NEG_INFINITY; dims];
    for (p, &r) in records.iter().enumerate() {
        for (a, &x) in points.point(p).iter().enumerate() {
            mean[a] += r as f64 * x;
            low[a] = low[a].min(x);
            high[a] = high[a].max(x);
        }
    }
    mean.iter_mut().for_each(|m| *m /= n as f64);
    let mut sd = vec![0.0; dims];
    for (p, &r) in records.iter().enumerate() {
        for (a, &x) in points.point(p).iter().enumerate() {
            sd[a] += r as f64 * (x - mean[a]) * (x - mean[a]);
        }
    }
    sd.iter_mut().for_each(|s| *s = (*s / n as f64).sqrt());
    let scale = |a: usize, x: f64| if sd[a] > 0.0 { x / sd[a] } else { 0.0 };
    let scaled: Vec<f64> = (0..points.point_count())
        .flat_map(|p| {
            points
                .point(p)
                .iter()
                .enumerate()
                .map(move |(a, &x)| (a, x))
        })
        .map(|(a, x)| scale(a, x))
        .collect();
    let weighted = WeightedPoints {
        coords: &scaled,
        dims,
        counts: &records,
    };
    let groups = mdav(&weighted, k, progress)?;
    progress.check()?;

    // Each group's released vector.
    let vectors: Vec<Vec<f64>> = groups
        .iter()
        .map(|g| {
            (0..dims)
                .map(|a| aggregate_of(points, g, a, aggregate))
                .collect()
        })
        .collect();
    // Information loss, per record and quasi-identifier.
    let (mut sse, mut sst, mut abs_range, mut sq_range) = (0.0, 0.0, 0.0, 0.0);
    for (g, group) in groups.iter().enumerate() {
        for &(p, r) in group {
            for (a, &x) in points.point(p as usize).iter().enumerate() {
                let released = vectors[g][a];
                let z = scale(a, x - released);
                sse += r as f64 * z * z;
                let t = scale(a, x - mean[a]);
                sst += r as f64 * t * t;
                let range = high[a] - low[a];
                if range > 0.0 {
                    let e = (x - released).abs() / range;
                    abs_range += r as f64 * e;
                    sq_range += r as f64 * e * e;
                }
            }
        }
    }
    let ncp = abs_range / (n as f64 * dims as f64);
    // Each group's entries: a point's entries dealt to its groups in ascending value order.
    let group_entries = deal_entries(points, &groups);
    // Classes: groups with equal vectors merged, ascending by vector.
    let mut order: Vec<usize> = (0..groups.len()).collect();
    order.sort_by(|&a, &b| compare(&vectors[a], &vectors[b]).then(a.cmp(&b)));
    let mut release = ReleasedHistogram::new(vec![0; dims], dims);
    let mut class_values: Vec<Vec<f64>> = vec![Vec::new(); dims];
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        let mut entries: Vec<(u32, u64)> = Vec::new();
        while j < order.len() && compare(&vectors[order[i]], &vectors[order[j]]).is_eq() {
            entries.extend_from_slice(&group_entries[order[j]]);
            j += 1;
        }
        entries.sort_unstable();
        let mut merged: Vec<(u32, u64)> = Vec::with_capacity(entries.len());
        for (code, count) in entries {
            match merged.last_mut() {
                Some((last, c)) if *last == code => *c += count,
                _ => merged.push((code, count)),
            }
        }
        let class = class_values[0].len() as u32;
        for (a, values) in class_values.iter_mut().enumerate() {
            values.push(vectors[order[i]][a]);
        }
        release.push_class_pairs(&vec![class; dims], &merged, &[]);
        i = j;
    }
    let own_rows = own_rows(points, &groups, &vectors);
    Ok(Microaggregated {
        own_rows,
        release,
        class_values,
        groups,
        sse,
        sst,
        information_loss: InformationLoss {
            ncp,
            emd: 0.0,
            rate: 0.0,
            lm: ncp,
            rce: sq_range,
        },
    })
}

/// Quasi-identifier `a`'s mean or median over the records of `group`.
/// One link per (point, group): the point's values, its group's released values, and the
/// records of the point in the group.
fn own_rows(points: &NumericPoints, groups: &[Group], vectors: &[Vec<f64>]) -> OwnRows {
    let dims = points.dims;
    let links: usize = groups.iter().map(Vec::len).sum();
    let mut source: Vec<Vec<f64>> = vec![Vec::with_capacity(links); dims];
    let mut released: Vec<Vec<f64>> = vec![Vec::with_capacity(links); dims];
    let mut records = Vec::with_capacity(links);
    for (group, vector) in groups.iter().zip(vectors) {
        for &(p, r) in group {
            for (a, &x) in points.point(p as usize).iter().enumerate() {
                source[a].push(x);
                released[a].push(vector[a]);
            }
            records.push(r);
        }
    }
    OwnRows {
        values: OwnValues::Numbers { source, released },
        records,
    }
}

fn aggregate_of(points: &NumericPoints, group: &Group, a: usize, aggregate: Aggregate) -> f64 {
    let value = |p: u32| points.point(p as usize)[a];
    let size: u64 = group.iter().map(|g| g.1).sum();
    match aggregate {
        Aggregate::Mean => {
            group.iter().map(|&(p, r)| r as f64 * value(p)).sum::<f64>() / size as f64
        }
        Aggregate::Median => {
            let mut pieces: Vec<(f64, u64)> = group.iter().map(|&(p, r)| (value(p), r)).collect();
            pieces.sort_by(|x, y| x.0.total_cmp(&y.0));
            // The values at 1-based ranks lo and hi (equal for an odd count).
            let (lo, hi) = (size.div_ceil(2), size / 2 + 1);
            let at = |rank: u64| {
                let mut seen = 0;
                for &(v, r) in &pieces {
                    seen += r;
                    if seen >= rank {
                        return v;
                    }
                }
                f64::NAN
            };
            (at(lo) + at(hi)) / 2.0
        }
    }
}

/// Each group's `(value code, records)` entries: a point whose records go to one group
/// gives it all its entries; a point split across groups deals its records in ascending
/// value order, to its groups in order of formation.
fn deal_entries(points: &NumericPoints, groups: &[Group]) -> Vec<Vec<(u32, u64)>> {
    // Per point, how many records it still has to give, and its next entry.
    let mut next_entry: Vec<usize> = points.offsets[..points.point_count()].to_vec();
    let mut used_of_entry: Vec<u64> = vec![0; points.point_count()];
    groups
        .iter()
        .map(|group| {
            let mut out = Vec::new();
            for &(p, mut wanted) in group {
                let p = p as usize;
                while wanted > 0 {
                    let e = next_entry[p];
                    let left = points.counts[e] - used_of_entry[p];
                    let take = left.min(wanted);
                    out.push((points.codes[e], take));
                    wanted -= take;
                    used_of_entry[p] += take;
                    if used_of_entry[p] == points.counts[e] {
                        next_entry[p] += 1;
                        used_of_entry[p] = 0;
                    }
                }
            }
            out
        })
        .collect()
}
