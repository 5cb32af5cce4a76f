//! The catalog's groups (Lee et al. 2017, Definition 3, Lemma 1 and the grouping algorithm,
//! Algorithm 2; docs/METHODS.md §5.4).
//!
//! **Lemma 1.** In a group `G`, the counterfeits of a class `E` cannot be identified with
//! certainty when, for every sensitive value `s`, the real records with `s` in the other
//! classes of `G` are at least `E`'s counterfeits with `s`:
//! `real_{G∖E}(s) ≥ fake_E(s)`.
//!
//! The condition only gets easier as a group grows, so a catalog exists at all iff the
//! whole table as one group satisfies it: `fake_E(s) ≤ total(s) − real_E(s)` for every class
//! and value ([`group_classes`] checks this first and fails the node otherwise).
//!
//! **Grouping** (a reconstruction of Algorithm 2, whose figure the paper's text only
//! describes): classes with counterfeits are taken hardest first (most counterfeits, then
//! class order). For each such class `E` and each of its counterfeit values `s` still not
//! concealed by its group, the group absorbs the not-yet-grouped class with the most real
//! records of `s` (ties: class order) — the paper's "most appropriate equivalent class" by
//! matched count — until `s` is concealed. When no ungrouped class holds `s`, it merges with
//! the group of the next class holding `s` (by count) outside its own group; when that list
//! is exhausted too, with every group holding `s` (done once per value; later needs merge
//! with that group). Each class is absorbed at most once and each value's candidate lists are
//! walked once, so the work is `O(pairs · log pairs)`, not quadratic in the number of
//! classes.

use datafusion::common::{internal_err, HashMap, Result};

use super::counterfeits::{real_count, Counterfeits};
use crate::histogram::GroupedHistogram;
use crate::release::catalog::{CatalogEntry, CounterfeitCatalog};

/// Union-find over classes, with each group's real counts of the counterfeit values.
struct Groups {
    parent: Vec<usize>,
    grouped: Vec<bool>,
    real: Vec<HashMap<u32, u64>>,
}

impl Groups {
    fn find(&mut self, mut c: usize) -> usize {
        while self.parent[c] != c {
            self.parent[c] = self.parent[self.parent[c]];
            c = self.parent[c];
        }
        c
    }

    /// Makes `c` a group of its own if it is in none yet.
    fn open(&mut self, hist: &GroupedHistogram, interesting: &[bool], c: usize) {
        if self.grouped[c] {
            return;
        }
        self.grouped[c] = true;
        for p in hist.class_range(c) {
            let v = hist.pair_values[p];
            if interesting[v as usize] {
                self.real[c].insert(v, hist.pair_counts[p]);
            }
        }
    }

    /// Merges the groups of `a` and `b` (both open); the larger map absorbs the smaller.
    fn union(&mut self, a: usize, b: usize) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra == rb {
            return;
        }
        let (big, small) = if self.real[ra].len() >= self.real[rb].len() {
            (ra, rb)
        } else {
            (rb, ra)
        };
        let moved = std::mem::take(&mut self.real[small]);
        for (v, n) in moved {
            *self.real[big].entry(v).or_insert(0) += n;
        }
        self.parent[small] = big;
    }

    fn real_in_group(&mut self, c: usize, v: u32) -> u64 {
        let root = self.find(c);
        self.real[root].get(&v).copied().unwrap_or(0)
    }
}

/// Groups the classes of `hist` so that every class's counterfeits satisfy Lemma 1, and
/// returns the catalog; `None` when no catalog exists (the node is skipped).
pub fn group_classes(
    hist: &GroupedHistogram,
    fakes: &Counterfeits,
    totals: &[u64],
) -> Option<CounterfeitCatalog> {
    let classes = hist.class_count();
    // Existence: the whole table as one group.
    for c in 0..classes {
        for (v, n) in fakes.class(c) {
            if n > totals[v as usize].saturating_sub(real_count(hist, c, v)) {
                return None;
            }
        }
    }
    let mut interesting = vec![false; totals.len()];
    for &v in &fakes.values {
        interesting[v as usize] = true;
    }
    // Per counterfeit value, the classes holding real records of it, most first.
    let mut holders: Vec<Vec<(u64, usize)>> = vec![Vec::new(); totals.len()];
    for c in 0..classes {
        for p in hist.class_range(c) {
            let v = hist.pair_values[p] as usize;
            if interesting[v] {
                holders[v].push((hist.pair_counts[p], c));
            }
        }
    }
    for list in &mut holders {
        list.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    }
    let mut cursor = vec![0usize; totals.len()];
    let mut second = vec![0usize; totals.len()];
    let mut everyone: Vec<Option<usize>> = vec![None; totals.len()];
    let mut groups = Groups {
        parent: (0..classes).collect(),
        grouped: vec![false; classes],
        real: vec![HashMap::new(); classes],
    };

    let mut order: Vec<(u64, usize)> = (0..classes)
        .map(|c| (fakes.class(c).map(|p| p.1).sum::<u64>(), c))
        .filter(|p| p.0 > 0)
        .collect();
    order.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));

    for &(_, e) in &order {
        groups.open(hist, &interesting, e);
        for (v, need) in fakes.class(e) {
            let own = real_count(hist, e, v);
            while groups.real_in_group(e, v) - own < need {
                // The ungrouped class with the most real records of v.
                let list = &holders[v as usize];
                let mut candidate = None;
                while cursor[v as usize] < list.len() {
                    let j = list[cursor[v as usize]].1;
                    cursor[v as usize] += 1;
                    if !groups.grouped[j] {
                        candidate = Some(j);
                        break;
                    }
                }
                if let Some(j) = candidate {
                    groups.open(hist, &interesting, j);
                    groups.union(e, j);
                    continue;
                }
                // Else the next other group holding v, by its holders' counts.
                let mut other = None;
                while second[v as usize] < list.len() {
                    let j = list[second[v as usize]].1;
                    second[v as usize] += 1;
                    if groups.find(j) != groups.find(e) {
                        other = Some(j);
                        break;
                    }
                }
                if let Some(j) = other {
                    groups.union(e, j);
                    continue;
                }
                match everyone[v as usize] {
                    None => {
                        for &(_, j) in list {
                            groups.open(hist, &interesting, j);
                            groups.union(e, j);
                        }
                        everyone[v as usize] = Some(e);
                    }
                    Some(m) if groups.find(m) != groups.find(e) => groups.union(e, m),
                    // Every holder of v is in the group already: impossible after the
                    // existence check, but never loop.
                    Some(_) => return None,
                }
            }
        }
    }

    // Groups in order of their first class; members ascending.
    let mut index_of_root: Vec<usize> = vec![usize::MAX; classes];
    let mut members: Vec<Vec<usize>> = Vec::new();
    for c in 0..classes {
        if !groups.grouped[c] {
            continue;
        }
        let root = groups.find(c);
        if index_of_root[root] == usize::MAX {
            index_of_root[root] = members.len();
            members.push(Vec::new());
        }
        members[index_of_root[root]].push(c);
    }
    let mut entries = Vec::new();
    for (g, classes_of_group) in members.iter().enumerate() {
        let mut values: Vec<(u32, u64)> = classes_of_group
            .iter()
            .flat_map(|&c| fakes.class(c))
            .collect();
        values.sort_unstable_by_key(|&(v, _)| v);
        values.dedup_by(|next, kept| {
            let same = next.0 == kept.0;
            if same {
                kept.1 += next.1;
            }
            same
        });
        entries.extend(values.into_iter().map(|(value, count)| CatalogEntry {
            group: g,
            value,
            count,
        }));
    }
    Some(CounterfeitCatalog {
        groups: members,
        entries,
    })
}

/// Checks a catalog before it is released: every class with counterfeits is in exactly one
/// group, the counts are the groups' counterfeits, and every class of every group satisfies
/// Lemma 1. An error here is a defect; nothing is released.
pub fn check_lemma1(
    hist: &GroupedHistogram,
    fakes: &Counterfeits,
    catalog: &CounterfeitCatalog,
) -> Result<()> {
    let classes = hist.class_count();
    let mut group_of: Vec<Option<usize>> = vec![None; classes];
    for (g, members) in catalog.groups.iter().enumerate() {
        for &c in members {
            if c >= classes || group_of[c].replace(g).is_some() {
                return internal_err!("upa catalog: class {c} is listed twice or does not exist");
            }
        }
    }
    let mut catalogued: HashMap<(usize, u32), u64> = HashMap::new();
    for e in &catalog.entries {
        catalogued.insert((e.group, e.value), e.count);
    }
    let mut counted: HashMap<(usize, u32), u64> = HashMap::new();
    for (c, group) in group_of.iter().enumerate() {
        for (v, n) in fakes.class(c) {
            let Some(g) = *group else {
                return internal_err!("upa catalog: class {c} has counterfeits but no group");
            };
            *counted.entry((g, v)).or_insert(0) += n;
        }
    }
    if counted != catalogued {
        return internal_err!("upa catalog: counts differ from the counterfeits inserted");
    }
    for (g, members) in catalog.groups.iter().enumerate() {
        let mut real: HashMap<u32, u64> = HashMap::new();
        for &c in members {
            for p in hist.class_range(c) {
                *real.entry(hist.pair_values[p]).or_insert(0) += hist.pair_counts[p];
            }
        }
        for &c in members {
            for (v, n) in fakes.class(c) {
                let others = real.get(&v).copied().unwrap_or(0) - real_count(hist, c, v);
                if others < n {
                    return internal_err!(
                        "upa catalog violates Lemma 1: group {g}, class {c}, value {v}: {n} counterfeits, {others} real records elsewhere in the group"
                    );
                }
            }
        }
    }
    Ok(())
}
