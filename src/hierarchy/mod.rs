//! Generalization hierarchies (taxonomy trees) in ARX's layout.
//!
//! A hierarchy is a table whose column 0 holds a raw value (a *leaf*) and whose column `i`
//! holds that value's generalization at level `i`. Every row has the same number of levels;
//! a value at level `i` has exactly one parent at level `i + 1`. Values are matched as text,
//! like ARX, so an integer column matches a hierarchy read from CSV.

pub mod builders;
pub mod dates;
mod error;
pub mod load;
pub mod top_bottom;

pub use error::HierarchyError;

use std::collections::HashMap;

/// Label used for a fully generalized or suppressed value.
pub const STAR: &str = "*";

/// One level of a hierarchy: its distinct labels and how leaves map onto them.
#[derive(Debug, Clone)]
pub struct HierarchyLevel {
    /// Label of each code at this level, in order of first appearance in the hierarchy.
    labels: Vec<String>,
    /// For each leaf code, the code of its generalization at this level.
    leaf_to_code: Vec<u32>,
    /// For each code at this level, how many leaves it covers.
    leaf_counts: Vec<u32>,
}

impl HierarchyLevel {
    /// Labels of this level, indexed by code.
    pub fn labels(&self) -> &[String] {
        &self.labels
    }
    /// For each leaf code, the code at this level.
    pub fn leaf_to_code(&self) -> &[u32] {
        &self.leaf_to_code
    }
    /// Number of leaves under each code at this level.
    pub fn leaf_counts(&self) -> &[u32] {
        &self.leaf_counts
    }
    /// Number of distinct values at this level.
    pub fn cardinality(&self) -> usize {
        self.labels.len()
    }
}

/// A validated generalization hierarchy for one attribute.
#[derive(Debug, Clone)]
pub struct Hierarchy {
    attribute: String,
    leaf_index: HashMap<String, u32>,
    levels: Vec<HierarchyLevel>,
}

impl Hierarchy {
    /// Builds and validates a hierarchy from ARX-layout rows (`row[0]` the raw value,
    /// `row[i]` its level-`i` generalization). `attribute` names the column it serves,
    /// for error messages.
    ///
    /// Errors ([`HierarchyError`]): an empty hierarchy, rows of different heights, empty
    /// cells, a raw value listed twice with different generalizations, a value or label
    /// with two parents, a cycle, a `*` below another label, no single root.
    pub fn from_rows(attribute: &str, rows: &[Vec<String>]) -> Result<Self, HierarchyError> {
        let named = || attribute.to_string();
        let Some(first) = rows.first() else {
            return Err(HierarchyError::Empty { attribute: named() });
        };
        let width = first.len();
        if width == 0 {
            return Err(HierarchyError::RowsWithoutValues { attribute: named() });
        }
        let mut leaf_index: HashMap<String, u32> = HashMap::with_capacity(rows.len());
        let mut leaf_rows: Vec<&Vec<String>> = Vec::with_capacity(rows.len());
        for (row_number, row) in rows.iter().enumerate() {
            if row.len() != width {
                return Err(HierarchyError::DifferentHeights {
                    attribute: named(),
                    first_value: first[0].clone(),
                    first_levels: width - 1,
                    row: row_number + 1,
                    value: row.first().cloned().unwrap_or_default(),
                    levels: row.len().saturating_sub(1),
                });
            }
            if let Some(level) = row.iter().position(|cell| cell.is_empty()) {
                return Err(HierarchyError::EmptyCell {
                    attribute: named(),
                    row: row_number + 1,
                    level,
                });
            }
            match leaf_index.get(&row[0]) {
                Some(&code) => {
                    if leaf_rows[code as usize] != row {
                        return Err(HierarchyError::ValueListedTwice {
                            attribute: named(),
                            value: row[0].clone(),
                        });
                    }
                }
                None => {
                    let code = u32::try_from(leaf_rows.len())
                        .map_err(|_| HierarchyError::TooManyValues { attribute: named() })?;
                    leaf_index.insert(row[0].clone(), code);
                    leaf_rows.push(row);
                }
            }
        }

        let mut levels = Vec::with_capacity(width);
        for level in 0..width {
            let mut label_codes: HashMap<&str, u32> = HashMap::new();
            let mut labels = Vec::new();
            let mut leaf_to_code = Vec::with_capacity(leaf_rows.len());
            for row in &leaf_rows {
                let label = row[level].as_str();
                let code = *label_codes.entry(label).or_insert_with(|| {
                    labels.push(label.to_string());
                    (labels.len() - 1) as u32
                });
                leaf_to_code.push(code);
            }
            let mut leaf_counts = vec![0u32; labels.len()];
            for &code in &leaf_to_code {
                leaf_counts[code as usize] += 1;
            }
            levels.push(HierarchyLevel {
                labels,
                leaf_to_code,
                leaf_counts,
            });
        }

        // Every value at level l must have exactly one parent at level l + 1.
        let mut parents: Vec<Vec<u32>> = Vec::with_capacity(width.saturating_sub(1));
        for level in 0..width.saturating_sub(1) {
            let lower = &levels[level];
            let upper = &levels[level + 1];
            let mut parent: Vec<Option<u32>> = vec![None; lower.cardinality()];
            for (leaf, &code) in lower.leaf_to_code.iter().enumerate() {
                let up = upper.leaf_to_code[leaf];
                match parent[code as usize] {
                    None => parent[code as usize] = Some(up),
                    Some(existing) if existing != up => {
                        return Err(HierarchyError::TwoParents {
                            attribute: named(),
                            value: lower.labels[code as usize].clone(),
                            level,
                            first: upper.labels[existing as usize].clone(),
                            second: upper.labels[up as usize].clone(),
                        });
                    }
                    Some(_) => {}
                }
            }
            parents.push(parent.into_iter().map(Option::unwrap_or_default).collect());
        }
        check_star_is_top(attribute, &leaf_rows)?;
        check_label_tree(attribute, &levels, &parents)?;
        let top = &levels[width - 1];
        if top.cardinality() != 1 {
            return Err(HierarchyError::NoSingleRoot {
                attribute: named(),
                top_level: width - 1,
                label_count: top.cardinality(),
                first_labels: top.labels.iter().take(5).cloned().collect(),
            });
        }

        Ok(Self {
            attribute: attribute.to_string(),
            leaf_index,
            levels,
        })
    }

    /// The attribute (column) this hierarchy generalizes.
    pub fn attribute(&self) -> &str {
        &self.attribute
    }

    /// Highest level (the number of generalization steps above the leaves).
    pub fn height(&self) -> usize {
        self.levels.len() - 1
    }

    /// Number of leaves (raw values) in the hierarchy.
    pub fn leaf_count(&self) -> usize {
        self.levels[0].cardinality()
    }

    /// A level by index (0 = the raw values).
    pub fn level(&self, level: usize) -> &HierarchyLevel {
        &self.levels[level]
    }

    /// The leaf code of a raw value, matched as text.
    pub fn leaf_code(&self, value: &str) -> Option<u32> {
        self.leaf_index.get(value).copied()
    }

    /// Lookup array mapping codes at `from` to codes at `to` (`from <= to`).
    pub fn level_map(&self, from: usize, to: usize) -> Vec<u32> {
        let source = &self.levels[from];
        let target = &self.levels[to];
        let mut map = vec![0u32; source.cardinality()];
        for (leaf, &code) in source.leaf_to_code.iter().enumerate() {
            map[code as usize] = target.leaf_to_code[leaf];
        }
        map
    }

    /// Normalized certainty penalty of every code at `level`: 0 for a leaf, otherwise the
    /// share of the hierarchy's leaves it covers (`|v| / |L|`, the IPA paper's Eq. 5).
    pub fn ncp_per_code(&self, level: usize) -> Vec<f64> {
        let total = self.leaf_count() as f64;
        self.levels[level]
            .leaf_counts
            .iter()
            .map(|&count| {
                if count <= 1 {
                    0.0
                } else {
                    count as f64 / total
                }
            })
            .collect()
    }

    /// All rows in ARX layout (leaf first), in leaf-code order.
    pub fn to_rows(&self) -> Vec<Vec<String>> {
        (0..self.leaf_count())
            .map(|leaf| {
                self.levels
                    .iter()
                    .map(|level| level.labels[level.leaf_to_code[leaf] as usize].clone())
                    .collect()
            })
            .collect()
    }
}

/// `*` stands for the fully generalized value: once a row reaches it, every higher level
/// of that row must be `*` too (a `*` that generalizes further is an inner label).
fn check_star_is_top(attribute: &str, leaf_rows: &[&Vec<String>]) -> Result<(), HierarchyError> {
    for row in leaf_rows {
        let Some(star) = row.iter().position(|cell| cell == STAR) else {
            continue;
        };
        if let Some((level, cell)) = row
            .iter()
            .enumerate()
            .skip(star + 1)
            .find(|(_, cell)| *cell != STAR)
        {
            return Err(HierarchyError::InnerStar {
                attribute: attribute.to_string(),
                star_level: star,
                value: row[0].clone(),
                label: cell.clone(),
                level,
            });
        }
    }
    Ok(())
}

/// A label names one group wherever it appears: its parent (the next different label
/// above it) must be the same at every level it occurs on, and following parents must
/// never lead back to it. This rejects labels swapped between levels and cycles, which the
/// level-by-level check cannot see. `parents[l][c]` is the parent (at level `l + 1`) of
/// code `c` at level `l`.
fn check_label_tree(
    attribute: &str,
    levels: &[HierarchyLevel],
    parents: &[Vec<u32>],
) -> Result<(), HierarchyError> {
    // label -> (its parent, the level the label is on)
    let mut parent_of: HashMap<&str, (&str, usize)> = HashMap::new();
    let mut order: Vec<&str> = Vec::new();
    for (level, level_parents) in parents.iter().enumerate() {
        for (code, &up) in level_parents.iter().enumerate() {
            let label = levels[level].labels[code].as_str();
            let parent = levels[level + 1].labels[up as usize].as_str();
            if label == parent {
                // The value is carried up unchanged.
                continue;
            }
            match parent_of.get(label) {
                Some(&(first, first_level)) if first != parent => {
                    return Err(HierarchyError::LabelTwoParents {
                        attribute: attribute.to_string(),
                        label: label.to_string(),
                        first: first.to_string(),
                        first_level,
                        second: parent.to_string(),
                        second_level: level,
                    });
                }
                Some(_) => {}
                None => {
                    parent_of.insert(label, (parent, level));
                    order.push(label);
                }
            }
        }
    }
    // Each label has at most one parent now, so a walk up from any label either ends at
    // the root or runs into a cycle.
    const ON_PATH: u8 = 1;
    const DONE: u8 = 2;
    let mut state: HashMap<&str, u8> = HashMap::with_capacity(parent_of.len());
    for start in order {
        let mut path: Vec<&str> = Vec::new();
        let mut current = start;
        loop {
            match state.get(current) {
                Some(&DONE) => break,
                Some(_) => {
                    let from = path.iter().position(|l| *l == current).unwrap_or(0);
                    return Err(HierarchyError::Cycle {
                        attribute: attribute.to_string(),
                        path: path[from..]
                            .iter()
                            .chain(std::iter::once(&current))
                            .map(|l| (l.to_string(), parent_of.get(l).map(|&(_, level)| level)))
                            .collect(),
                    });
                }
                None => {}
            }
            state.insert(current, ON_PATH);
            path.push(current);
            match parent_of.get(current) {
                Some(&(parent, _)) => current = parent,
                None => break,
            }
        }
        for label in path {
            state.insert(label, DONE);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::rows;
    use datafusion::common::DataFusionError;

    #[test]
    fn builds_levels_maps_and_ncp() {
        let h = Hierarchy::from_rows(
            "age",
            &rows(&[
                &["1", "[0-5)", "*"],
                &["2", "[0-5)", "*"],
                &["7", "[5-10)", "*"],
                &["2", "[0-5)", "*"],
            ]),
        )
        .unwrap();
        assert_eq!(h.height(), 2);
        assert_eq!(h.leaf_count(), 3);
        assert_eq!(h.level(1).labels(), &["[0-5)", "[5-10)"]);
        assert_eq!(h.level_map(0, 1), vec![0, 0, 1]);
        assert_eq!(h.level_map(1, 2), vec![0, 0]);
        assert_eq!(h.ncp_per_code(1), vec![2.0 / 3.0, 0.0]);
        assert_eq!(h.ncp_per_code(2), vec![1.0]);
        assert_eq!(h.leaf_code("7"), Some(2));
        assert_eq!(h.leaf_code("8"), None);
    }

    #[test]
    fn rejects_bad_hierarchies() {
        let err = |data: &[&[&str]]| {
            Hierarchy::from_rows("x", &rows(data))
                .unwrap_err()
                .to_string()
        };
        assert!(err(&[]).contains("is empty"));
        assert!(err(&[&["a", "*"], &["b", "ab", "*"]]).contains("different heights"));
        assert!(err(&[&["a", "ab", "*"], &["b", "ab", "**"]]).contains("two parents"));
        assert!(err(&[&["a", "x"], &["a", "y"]]).contains("twice"));
        assert!(err(&[&["a", ""]]).contains("empty cell"));
    }

    #[test]
    fn rejects_cycles_swapped_labels_inner_stars_and_forests() {
        // As a user sees them: converted to DataFusion's planning error.
        let err = |data: &[&[&str]]| {
            let e = Hierarchy::from_rows("x", &rows(data)).unwrap_err();
            let shown = DataFusionError::from(e.clone()).to_string();
            assert_eq!(shown, format!("Error during planning: {e}"));
            shown
        };
        // A cycle: A -> B on levels 1 -> 2, B -> A on levels 2 -> 3.
        assert_eq!(
            err(&[&["x", "A", "B", "A"], &["y", "C", "B", "A"]]),
            "Error during planning: hierarchy for column 'x': labels form a cycle: 'A' (level 1) -> 'B' (level 2) -> 'A' (level 1); every generalization must lead to a coarser label, never back to a finer one"
        );
        // Labels swapped between levels: B is under C on one level and under * on another.
        assert_eq!(
            err(&[&["a", "A", "B", "*"], &["b", "B", "C", "*"]]),
            "Error during planning: hierarchy for column 'x': label 'B' has two parents: 'C' (level 1 to 2) and '*' (level 2 to 3); a label must stand for the same group on every level (are labels swapped between levels?)"
        );
        // '*' below a real label.
        assert_eq!(
            err(&[&["a", "*", "ab"], &["b", "ab", "ab"]]),
            "Error during planning: hierarchy for column 'x': '*' at level 1 (row of value 'a') is an inner label: it generalizes to 'ab' at level 2; '*' stands for the fully generalized value, so every level above a '*' must be '*' too"
        );
        // Two roots.
        assert_eq!(
            err(&[&["a", "A"], &["b", "B"]]),
            "Error during planning: hierarchy for column 'x' has no single root: its top level 1 has 2 labels ('A', 'B'); add a last level that generalizes every value to one label, e.g. '*'"
        );
        // Values carried up unchanged, '*' reached early and repeated are fine.
        let ok = Hierarchy::from_rows(
            "x",
            &rows(&[
                &["1", "1", "[1-3)", "*"],
                &["2", "[2-3)", "[1-3)", "*"],
                &["9", "*", "*", "*"],
            ]),
        );
        assert!(ok.is_ok(), "{ok:?}");
    }

    #[test]
    fn errors_show_invisible_characters() {
        let e = Hierarchy::from_rows("x", &rows(&[&["F ", "*"], &["F ", "M"]]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("lists value 'F\\x20' twice"), "{e}");
    }
}
