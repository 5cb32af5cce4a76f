//! Generalization hierarchies (taxonomy trees) in ARX's layout.
//!
//! A hierarchy is a table whose column 0 holds a raw value (a *leaf*) and whose column `i`
//! holds that value's generalization at level `i`. Every row has the same number of levels;
//! a value at level `i` has exactly one parent at level `i + 1`. Values are matched as text,
//! like ARX, so an integer column matches a hierarchy read from CSV.

pub mod builders;
pub mod load;

use std::collections::HashMap;

use datafusion::common::{plan_err, Result};

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
    /// Errors: an empty hierarchy, rows of different heights, empty cells, a raw value
    /// listed twice with different generalizations, a value with two parents.
    pub fn from_rows(attribute: &str, rows: &[Vec<String>]) -> Result<Self> {
        let Some(first) = rows.first() else {
            return plan_err!("hierarchy for column '{attribute}' is empty");
        };
        let width = first.len();
        if width == 0 {
            return plan_err!("hierarchy for column '{attribute}' has rows without values");
        }
        let mut leaf_index: HashMap<String, u32> = HashMap::with_capacity(rows.len());
        let mut leaf_rows: Vec<&Vec<String>> = Vec::with_capacity(rows.len());
        for (row_number, row) in rows.iter().enumerate() {
            if row.len() != width {
                return plan_err!(
                    "hierarchy for column '{attribute}' has rows of different heights: row 1 ('{}') has {} levels, row {} ('{}') has {}",
                    first[0],
                    width - 1,
                    row_number + 1,
                    row.first().map(String::as_str).unwrap_or(""),
                    row.len().saturating_sub(1)
                );
            }
            if let Some(level) = row.iter().position(|cell| cell.is_empty()) {
                return plan_err!(
                    "hierarchy for column '{attribute}' has an empty cell at row {}, level {level}; every row needs a value at every level",
                    row_number + 1
                );
            }
            match leaf_index.get(&row[0]) {
                Some(&code) => {
                    if leaf_rows[code as usize] != row {
                        return plan_err!(
                            "hierarchy for column '{attribute}' lists value '{}' twice with different generalizations",
                            row[0]
                        );
                    }
                }
                None => {
                    let code = u32::try_from(leaf_rows.len()).or_else(|_| {
                        plan_err!("hierarchy for column '{attribute}' has too many values")
                    })?;
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
        for level in 0..width.saturating_sub(1) {
            let lower = &levels[level];
            let upper = &levels[level + 1];
            let mut parent: Vec<Option<u32>> = vec![None; lower.cardinality()];
            for (leaf, &code) in lower.leaf_to_code.iter().enumerate() {
                let up = upper.leaf_to_code[leaf];
                match parent[code as usize] {
                    None => parent[code as usize] = Some(up),
                    Some(existing) if existing != up => {
                        return plan_err!(
                            "hierarchy for column '{attribute}': value '{}' at level {level} has two parents at level {}: '{}' and '{}'",
                            lower.labels[code as usize],
                            level + 1,
                            upper.labels[existing as usize],
                            upper.labels[up as usize]
                        );
                    }
                    Some(_) => {}
                }
            }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::rows;

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
}
