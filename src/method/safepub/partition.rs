//! The sample grouped by generalization scheme, and the scoring of schemes from it.
//!
//! A [`Partition`] of a scheme lists the sample's leaf classes grouped into the scheme's
//! equivalence classes, keeping only classes of at least k records. A direct predecessor
//! of the scheme (one attribute one level finer) refines every class; a class below k
//! only splits into smaller ones, so the dropped records stay suppressed in every
//! refinement and are never visited again. Scoring a predecessor is one pass over the
//! kept members of its pivot's partition: no roll-up of the sample from the leaves and no
//! rescan of the source.

use std::collections::HashMap;

use datafusion::common::{internal_err, Result};

use super::score::{Evaluation, ScoreAccumulator, ScoreFunction, ScoreTables};
use super::search::NodeScorer;
use crate::hierarchy::Hierarchy;
use crate::histogram::GroupedHistogram;
use crate::lattice::Lattice;

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
    fn leaf(&self, a: usize, c: u32) -> u32 {
        self.histogram.class_codes[a][c as usize]
    }
}

/// The kept equivalence classes of one scheme, as groups of sample leaf classes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Partition {
    /// The scheme.
    pub levels: Vec<usize>,
    members: Vec<u32>,
    starts: Vec<u32>,
    sizes: Vec<u64>,
}

impl Partition {
    /// Number of kept classes.
    pub fn class_count(&self) -> usize {
        self.sizes.len()
    }

    /// Records in kept classes.
    pub fn kept(&self) -> u64 {
        self.sizes.iter().sum()
    }

    /// Every kept class: its sample leaf classes and its number of records.
    pub fn classes(&self) -> impl Iterator<Item = (&[u32], u64)> + '_ {
        (0..self.class_count()).map(|s| (self.class(s), self.sizes[s]))
    }

    fn class(&self, s: usize) -> &[u32] {
        &self.members[self.starts[s] as usize..self.starts[s + 1] as usize]
    }

    /// Groups every sample leaf class by its codes at `levels` and keeps groups of at
    /// least `k` records.
    pub fn from_scratch(
        sample: &SampleData,
        hierarchies: &[&Hierarchy],
        levels: &[usize],
        k: u64,
    ) -> Self {
        let attrs = hierarchies.len();
        let classes = sample.sizes.len();
        let maps: Vec<&[u32]> = (0..attrs)
            .map(|a| hierarchies[a].level(levels[a]).leaf_to_code())
            .collect();
        let mut keys = vec![0u32; classes * attrs];
        for c in 0..classes {
            for a in 0..attrs {
                keys[c * attrs + a] = maps[a][sample.leaf(a, c as u32) as usize];
            }
        }
        let key = |c: u32| &keys[c as usize * attrs..(c as usize + 1) * attrs];
        let mut order: Vec<u32> = (0..classes as u32).collect();
        order.sort_by(|&x, &y| key(x).cmp(key(y)));
        let mut partition = Self {
            levels: levels.to_vec(),
            members: Vec::new(),
            starts: vec![0],
            sizes: Vec::new(),
        };
        let mut i = 0;
        while i < order.len() {
            let mut j = i;
            let mut size = 0;
            while j < order.len() && key(order[j]) == key(order[i]) {
                size += sample.sizes[order[j] as usize];
                j += 1;
            }
            if size >= k {
                partition.push(&order[i..j], size);
            }
            i = j;
        }
        partition
    }

    fn push(&mut self, members: &[u32], size: u64) {
        self.members.extend_from_slice(members);
        self.starts.push(self.members.len() as u32);
        self.sizes.push(size);
    }
}

/// Reusable per-code scratch arrays for splitting classes.
#[derive(Debug, Default)]
struct SplitScratch {
    size: Vec<u64>,
    count: Vec<u32>,
    rep: Vec<u32>,
    touched: Vec<u32>,
    grouped: Vec<u32>,
}

impl SplitScratch {
    fn ensure(&mut self, codes: usize) {
        if self.size.len() < codes {
            self.size.resize(codes, 0);
            self.count.resize(codes, 0);
            self.rep.resize(codes, 0);
        }
    }
}

/// Calls `f(representative, size, members)` for every class of at least `k` records of the
/// refinement of `parent` in attribute `attr` (codes at the finer level through
/// `child_map`). `members` is filled only when `group` is set.
#[allow(clippy::too_many_arguments)]
fn visit_refinement(
    sample: &SampleData,
    parent: &Partition,
    attr: usize,
    child_map: &[u32],
    codes: usize,
    k: u64,
    group: bool,
    scratch: &mut SplitScratch,
    mut f: impl FnMut(u32, u64, &[u32]),
) {
    scratch.ensure(codes);
    let leaves = &sample.histogram.class_codes[attr];
    for s in 0..parent.class_count() {
        let class = parent.class(s);
        if class.len() == 1 {
            f(class[0], parent.sizes[s], class);
            continue;
        }
        for &m in class {
            let c = child_map[leaves[m as usize] as usize] as usize;
            if scratch.count[c] == 0 {
                scratch.touched.push(c as u32);
                scratch.rep[c] = m;
            }
            scratch.count[c] += 1;
            scratch.size[c] += sample.sizes[m as usize];
        }
        if scratch.touched.len() == 1 {
            let c = scratch.touched[0] as usize;
            f(scratch.rep[c], scratch.size[c], class);
        } else if group {
            scratch.touched.sort_unstable();
            let mut offset = 0u32;
            for &c in &scratch.touched {
                let n = scratch.count[c as usize];
                scratch.count[c as usize] = offset;
                offset += n;
            }
            scratch.grouped.clear();
            scratch.grouped.resize(class.len(), 0);
            for &m in class {
                let c = child_map[leaves[m as usize] as usize] as usize;
                scratch.grouped[scratch.count[c] as usize] = m;
                scratch.count[c] += 1;
            }
            let mut start = 0usize;
            for &c in &scratch.touched {
                let end = scratch.count[c as usize] as usize;
                let size = scratch.size[c as usize];
                if size >= k {
                    f(scratch.rep[c as usize], size, &scratch.grouped[start..end]);
                }
                start = end;
            }
        } else {
            for &c in &scratch.touched {
                let size = scratch.size[c as usize];
                if size >= k {
                    f(scratch.rep[c as usize], size, &[]);
                }
            }
        }
        for &c in &scratch.touched {
            scratch.count[c as usize] = 0;
            scratch.size[c as usize] = 0;
        }
        scratch.touched.clear();
    }
}

/// Largest number of records sharing one informative value among `members`.
fn majority(
    sample: &SampleData,
    members: &[u32],
    counts: &mut [u64],
    touched: &mut Vec<u32>,
) -> u64 {
    let h = &sample.histogram;
    for &m in members {
        for p in h.class_offsets[m as usize]..h.class_offsets[m as usize + 1] {
            let v = h.pair_values[p] as usize;
            if counts[v] == 0 {
                touched.push(v as u32);
            }
            counts[v] += h.pair_counts[p];
        }
    }
    let mut best = 0;
    for &v in touched.iter() {
        best = best.max(counts[v as usize]);
        counts[v as usize] = 0;
    }
    touched.clear();
    best
}

/// Scores schemes on the sample, keeping the partitions of the search's pivots.
#[derive(Debug)]
pub struct Evaluator<'a> {
    sample: &'a SampleData,
    hierarchies: &'a [&'a Hierarchy],
    lattice: &'a Lattice,
    k: u64,
    function: ScoreFunction,
    tables: ScoreTables,
    partitions: HashMap<usize, Partition>,
    origins: HashMap<usize, (usize, usize)>,
    scratch: SplitScratch,
    value_counts: Vec<u64>,
    value_touched: Vec<u32>,
}

impl<'a> Evaluator<'a> {
    /// An evaluator of `function` with threshold `k`; `value_domain` is the number of
    /// informative values.
    pub fn new(
        sample: &'a SampleData,
        hierarchies: &'a [&'a Hierarchy],
        lattice: &'a Lattice,
        k: u64,
        function: ScoreFunction,
        value_domain: usize,
    ) -> Self {
        Self {
            sample,
            hierarchies,
            lattice,
            k,
            function,
            tables: ScoreTables::new(hierarchies),
            partitions: HashMap::new(),
            origins: HashMap::new(),
            scratch: SplitScratch::default(),
            value_counts: vec![0; value_domain.max(1)],
            value_touched: Vec::new(),
        }
    }

    /// Scores a partition's own classes.
    pub fn score_partition(&mut self, partition: &Partition) -> Evaluation {
        let maps: Vec<&[u32]> = (0..self.hierarchies.len())
            .map(|a| {
                self.hierarchies[a]
                    .level(partition.levels[a])
                    .leaf_to_code()
            })
            .collect();
        let mut acc = ScoreAccumulator::new(
            self.function,
            &self.tables,
            &partition.levels,
            self.sample.input_rows,
        );
        let classify = self.function == ScoreFunction::Classification;
        for s in 0..partition.class_count() {
            let class = partition.class(s);
            let rep = class[0];
            let best = if classify {
                majority(
                    self.sample,
                    class,
                    &mut self.value_counts,
                    &mut self.value_touched,
                )
            } else {
                0
            };
            acc.add_class(
                partition.sizes[s],
                |a| maps[a][self.sample.leaf(a, rep) as usize],
                best,
            );
        }
        acc.finish()
    }

    /// Scores the refinement of `parent` one level finer in `attr`.
    pub fn score_refinement(&mut self, parent: &Partition, attr: usize) -> Evaluation {
        let mut levels = parent.levels.clone();
        levels[attr] -= 1;
        let maps: Vec<&[u32]> = (0..self.hierarchies.len())
            .map(|a| self.hierarchies[a].level(levels[a]).leaf_to_code())
            .collect();
        let level = self.hierarchies[attr].level(levels[attr]);
        let mut acc =
            ScoreAccumulator::new(self.function, &self.tables, &levels, self.sample.input_rows);
        let classify = self.function == ScoreFunction::Classification;
        let sample = self.sample;
        let value_counts = &mut self.value_counts;
        let value_touched = &mut self.value_touched;
        visit_refinement(
            sample,
            parent,
            attr,
            level.leaf_to_code(),
            level.cardinality(),
            self.k,
            classify,
            &mut self.scratch,
            |rep, size, members| {
                let best = if classify {
                    majority(sample, members, value_counts, value_touched)
                } else {
                    0
                };
                acc.add_class(size, |a| maps[a][sample.leaf(a, rep) as usize], best);
            },
        );
        acc.finish()
    }

    /// The refinement of `parent` one level finer in `attr`.
    pub fn refine(&mut self, parent: &Partition, attr: usize) -> Partition {
        let mut levels = parent.levels.clone();
        levels[attr] -= 1;
        let level = self.hierarchies[attr].level(levels[attr]);
        let mut child = Partition {
            levels,
            members: Vec::with_capacity(parent.members.len()),
            starts: vec![0],
            sizes: Vec::new(),
        };
        visit_refinement(
            self.sample,
            parent,
            attr,
            level.leaf_to_code(),
            level.cardinality(),
            self.k,
            true,
            &mut self.scratch,
            |_, size, members| child.push(members, size),
        );
        child
    }

    /// Number of partitions held (one per pivot).
    pub fn partitions_held(&self) -> usize {
        self.partitions.len()
    }
}

impl NodeScorer for Evaluator<'_> {
    fn score(&mut self, node: &[usize], from: Option<(&[usize], usize)>) -> Result<Evaluation> {
        let index = self.lattice.index_of(node);
        match from {
            None => {
                let partition =
                    Partition::from_scratch(self.sample, self.hierarchies, node, self.k);
                let evaluation = self.score_partition(&partition);
                self.partitions.insert(index, partition);
                Ok(evaluation)
            }
            Some((parent, attr)) => {
                let parent_index = self.lattice.index_of(parent);
                self.origins.entry(index).or_insert((parent_index, attr));
                let Some(partition) = self.partitions.remove(&parent_index) else {
                    return internal_err!("safepub: pivot {parent:?} has no partition");
                };
                let evaluation = self.score_refinement(&partition, attr);
                self.partitions.insert(parent_index, partition);
                Ok(evaluation)
            }
        }
    }

    fn enter(&mut self, node: &[usize]) -> Result<()> {
        let index = self.lattice.index_of(node);
        if self.partitions.contains_key(&index) {
            return Ok(());
        }
        let Some(&(parent_index, attr)) = self.origins.get(&index) else {
            return internal_err!("safepub: node {node:?} was never scored");
        };
        let Some(parent) = self.partitions.remove(&parent_index) else {
            return internal_err!("safepub: the pivot before {node:?} has no partition");
        };
        let child = self.refine(&parent, attr);
        self.partitions.insert(parent_index, parent);
        self.partitions.insert(index, child);
        Ok(())
    }
}
