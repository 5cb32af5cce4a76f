//! The sample grouped by generalization scheme (scored in [`super::evaluator`]).
//!
//! A [`Partition`] of a scheme lists the sample's leaf classes grouped into the scheme's
//! equivalence classes, keeping only classes of at least k records. A direct predecessor
//! of the scheme (one attribute one level finer) refines every class; a class below k
//! only splits into smaller ones, so the dropped records stay suppressed in every
//! refinement and are never visited again. Scoring a predecessor is one pass over the
//! kept members of its pivot's partition: no roll-up of the sample from the leaves and no
//! rescan of the source.
//!
//! With an informative column, a record is kept only when its (class, informative value)
//! group holds at least k sampled records, as in the release; such a group also only splits
//! in a refinement, so a partition holding every class of at least k records still holds
//! every kept record.

use crate::hierarchy::Hierarchy;
use crate::histogram::GroupedHistogram;

/// The sample at leaf level plus what the scores need about it.
#[derive(Debug, Clone)]
pub struct SampleData {
    /// Leaf-level histogram of the sampled records.
    pub histogram: GroupedHistogram,
    /// Records of each leaf class of the sample.
    pub sizes: Vec<u64>,
    /// Records in the sample.
    pub sampled: u64,
    /// Records in the input (sampled or not): the size of every scored dataset.
    pub input_rows: u64,
}

impl SampleData {
    /// Wraps a sampled histogram drawn from `input_rows` records.
    pub fn new(histogram: GroupedHistogram, input_rows: u64) -> Self {
        let sizes: Vec<u64> = (0..histogram.class_count())
            .map(|c| histogram.class_size(c))
            .collect();
        let sampled = sizes.iter().sum();
        Self {
            histogram,
            sizes,
            sampled,
            input_rows,
        }
    }

    /// Leaf code of attribute `a` of leaf class `c`.
    pub(super) fn leaf(&self, a: usize, c: u32) -> u32 {
        self.histogram.class_codes[a][c as usize]
    }
}

/// The kept equivalence classes of one scheme, as groups of sample leaf classes.
///
/// Inside a class, leaf classes are grouped into *units*: leaf classes that agree on every
/// attribute one level below the scheme (`max(level − 1, 0)`). No direct predecessor of
/// the scheme can tell the leaf classes of a unit apart, so scoring a predecessor visits
/// units, not leaf classes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Partition {
    /// The scheme.
    pub levels: Vec<usize>,
    /// Sample leaf classes, grouped by unit, units grouped by class.
    pub(super) members: Vec<u32>,
    /// Unit `u` owns `members[unit_starts[u]..unit_starts[u + 1]]`.
    pub(super) unit_starts: Vec<u32>,
    /// Records of each unit.
    pub(super) unit_sizes: Vec<u64>,
    /// First leaf class of each unit (its codes stand for the unit's).
    pub(super) unit_reps: Vec<u32>,
    /// Class `s` owns units `class_starts[s]..class_starts[s + 1]`.
    pub(super) class_starts: Vec<u32>,
    /// Records of each class (at least k).
    pub(super) class_sizes: Vec<u64>,
}

/// The level units are homogeneous at, for a scheme at `level`.
pub(super) fn unit_level(level: usize) -> usize {
    level.saturating_sub(1)
}

impl Partition {
    pub(super) fn empty(levels: Vec<usize>) -> Self {
        Self {
            levels,
            members: Vec::new(),
            unit_starts: vec![0],
            unit_sizes: Vec::new(),
            unit_reps: Vec::new(),
            class_starts: vec![0],
            class_sizes: Vec::new(),
        }
    }

    /// Memory held by this partition, in bytes (approximately).
    /// (allocated capacity, not just the elements in use).
    pub fn bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.levels.capacity() * std::mem::size_of::<usize>()
            + (self.members.capacity()
                + self.unit_starts.capacity()
                + self.unit_reps.capacity()
                + self.class_starts.capacity())
                * std::mem::size_of::<u32>()
            + (self.unit_sizes.capacity() + self.class_sizes.capacity())
                * std::mem::size_of::<u64>()
    }

    /// Releases the capacity a refinement reserved beyond what it kept.
    pub(super) fn shrink(&mut self) {
        self.members.shrink_to_fit();
        self.unit_starts.shrink_to_fit();
        self.unit_reps.shrink_to_fit();
        self.unit_sizes.shrink_to_fit();
        self.class_starts.shrink_to_fit();
        self.class_sizes.shrink_to_fit();
    }

    /// Number of kept classes.
    pub fn class_count(&self) -> usize {
        self.class_sizes.len()
    }

    #[cfg(test)]
    /// Number of units.
    pub fn unit_count(&self) -> usize {
        self.unit_sizes.len()
    }

    #[cfg(test)]
    /// Records in kept classes.
    pub fn kept(&self) -> u64 {
        self.class_sizes.iter().sum()
    }

    #[cfg(test)]
    /// Every kept class: its sample leaf classes and its number of records.
    pub fn classes(&self) -> impl Iterator<Item = (&[u32], u64)> + '_ {
        (0..self.class_count()).map(|s| (self.class_members(s), self.class_sizes[s]))
    }

    #[cfg(test)]
    /// Every unit: its sample leaf classes.
    pub fn units(&self) -> impl Iterator<Item = &[u32]> + '_ {
        (0..self.unit_count()).map(|u| self.unit_members(u))
    }

    pub(super) fn class_members(&self, s: usize) -> &[u32] {
        let first = self.unit_starts[self.class_starts[s] as usize] as usize;
        let last = self.unit_starts[self.class_starts[s + 1] as usize] as usize;
        &self.members[first..last]
    }

    pub(super) fn class_units(&self, s: usize) -> std::ops::Range<usize> {
        self.class_starts[s] as usize..self.class_starts[s + 1] as usize
    }

    pub(super) fn unit_members(&self, u: usize) -> &[u32] {
        &self.members[self.unit_starts[u] as usize..self.unit_starts[u + 1] as usize]
    }

    pub(super) fn push_unit(&mut self, members: &[u32], size: u64) {
        self.unit_reps.push(members[0]);
        self.members.extend_from_slice(members);
        self.unit_starts.push(self.members.len() as u32);
        self.unit_sizes.push(size);
    }

    pub(super) fn close_class(&mut self, size: u64) {
        self.class_starts.push(self.unit_sizes.len() as u32);
        self.class_sizes.push(size);
    }

    /// Groups every sample leaf class by its codes at `levels` (classes) and one level
    /// below (units), keeping classes of at least `k` records.
    pub fn from_scratch(
        sample: &SampleData,
        hierarchies: &[&Hierarchy],
        levels: &[usize],
        k: u64,
    ) -> Self {
        let attrs = hierarchies.len();
        let classes = sample.sizes.len();
        let class_maps: Vec<&[u32]> = (0..attrs)
            .map(|a| hierarchies[a].level(levels[a]).leaf_to_code())
            .collect();
        let unit_maps: Vec<&[u32]> = (0..attrs)
            .map(|a| hierarchies[a].level(unit_level(levels[a])).leaf_to_code())
            .collect();
        // Key: class codes, then unit codes.
        let width = 2 * attrs;
        let mut keys = vec![0u32; classes * width];
        for c in 0..classes {
            for a in 0..attrs {
                let leaf = sample.leaf(a, c as u32) as usize;
                keys[c * width + a] = class_maps[a][leaf];
                keys[c * width + attrs + a] = unit_maps[a][leaf];
            }
        }
        let class_key = |c: u32| &keys[c as usize * width..c as usize * width + attrs];
        let full_key = |c: u32| &keys[c as usize * width..(c as usize + 1) * width];
        let mut order: Vec<u32> = (0..classes as u32).collect();
        order.sort_by(|&x, &y| full_key(x).cmp(full_key(y)));
        let mut partition = Self::empty(levels.to_vec());
        let mut i = 0;
        while i < order.len() {
            let mut j = i;
            let mut size = 0;
            while j < order.len() && class_key(order[j]) == class_key(order[i]) {
                size += sample.sizes[order[j] as usize];
                j += 1;
            }
            if size >= k {
                let mut u = i;
                while u < j {
                    let mut v = u;
                    let mut unit_size = 0;
                    while v < j && full_key(order[v]) == full_key(order[u]) {
                        unit_size += sample.sizes[order[v] as usize];
                        v += 1;
                    }
                    partition.push_unit(&order[u..v], unit_size);
                    u = v;
                }
                partition.close_class(size);
            }
            i = j;
        }
        partition
    }
}

/// Counting sort of small items by a code, in ascending code order, with reusable
/// per-code scratch arrays.
#[derive(Debug, Default)]
pub(super) struct Grouper {
    pub(super) size: Vec<u64>,
    pub(super) count: Vec<u32>,
    pub(super) rep: Vec<u32>,
    pub(super) touched: Vec<u32>,
    pub(super) grouped: Vec<u32>,
    /// `(code, start, end)` of each group in `grouped`, after [`Grouper::group`].
    pub(super) runs: Vec<(u32, usize, usize)>,
}

impl Grouper {
    pub(super) fn ensure(&mut self, codes: usize) {
        if self.size.len() < codes {
            self.size.resize(codes, 0);
            self.count.resize(codes, 0);
            self.rep.resize(codes, 0);
        }
    }

    /// Sums `weight(item)` per `code(item)`; afterwards `touched` lists the codes seen
    /// (first-seen order) with their sums in `size` and first items in `rep`.
    pub(super) fn tally(
        &mut self,
        items: impl Iterator<Item = u32>,
        code: impl Fn(u32) -> u32,
        weight: impl Fn(u32) -> u64,
    ) {
        for item in items {
            let c = code(item) as usize;
            if self.count[c] == 0 {
                self.touched.push(c as u32);
                self.rep[c] = item;
            }
            self.count[c] += 1;
            self.size[c] += weight(item);
        }
    }

    /// After [`Grouper::tally`] of the same items: orders them by code into `grouped` and
    /// lists the runs (ascending code).
    pub(super) fn group(&mut self, items: impl Iterator<Item = u32>, code: impl Fn(u32) -> u32) {
        self.touched.sort_unstable();
        let mut offset = 0u32;
        for &c in &self.touched {
            let n = self.count[c as usize];
            self.count[c as usize] = offset;
            offset += n;
        }
        self.grouped.clear();
        self.grouped.resize(offset as usize, 0);
        for item in items {
            let c = code(item) as usize;
            self.grouped[self.count[c] as usize] = item;
            self.count[c] += 1;
        }
        self.runs.clear();
        let mut start = 0usize;
        for &c in &self.touched {
            let end = self.count[c as usize] as usize;
            self.runs.push((c, start, end));
            start = end;
        }
    }

    /// Clears the per-code arrays touched since the last reset.
    pub(super) fn reset(&mut self) {
        for &c in &self.touched {
            self.count[c as usize] = 0;
            self.size[c as usize] = 0;
        }
        self.touched.clear();
    }
}
