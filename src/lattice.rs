//! The full-domain generalization lattice: one node per vector of levels.

use datafusion::common::{plan_err, Result};

/// Default largest lattice an exhaustive method may evaluate.
pub const DEFAULT_MAX_NODES: usize = 100_000;

/// A lattice node: the generalization level of every quasi-identifier.
pub type Node = Vec<usize>;

/// The lattice spanned by per-attribute heights (`0..=height` each).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lattice {
    heights: Vec<usize>,
}

impl Lattice {
    /// A lattice over attributes with the given hierarchy heights, refusing lattices with
    /// more than `max_nodes` nodes.
    pub fn new(heights: Vec<usize>, max_nodes: usize) -> Result<Self> {
        let mut size: usize = 1;
        for &h in &heights {
            size = match size.checked_mul(h + 1) {
                Some(s) if s <= max_nodes => s,
                _ => {
                    return plan_err!(
                        "the generalization lattice has more than {max_nodes} nodes (heights {heights:?}); use fewer quasi-identifiers, shorter hierarchies, or raise max_nodes"
                    )
                }
            };
        }
        Ok(Self { heights })
    }

    /// Hierarchy height of every attribute.
    pub fn heights(&self) -> &[usize] {
        &self.heights
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.heights.iter().map(|h| h + 1).product()
    }

    /// Whether the lattice has no attributes (a single empty node).
    pub fn is_empty(&self) -> bool {
        self.heights.is_empty()
    }

    /// Every node, the first attribute varying slowest (the reference implementation's
    /// nested-loop order).
    pub fn nodes(&self) -> Vec<Node> {
        let mut nodes = Vec::with_capacity(self.len());
        let mut current = vec![0usize; self.heights.len()];
        loop {
            nodes.push(current.clone());
            let mut attr = self.heights.len();
            loop {
                if attr == 0 {
                    return nodes;
                }
                attr -= 1;
                if current[attr] < self.heights[attr] {
                    current[attr] += 1;
                    break;
                }
                current[attr] = 0;
            }
        }
    }

    /// Index of a node in [`Lattice::nodes`] order.
    pub fn index_of(&self, node: &[usize]) -> usize {
        node.iter()
            .zip(&self.heights)
            .fold(0, |acc, (&level, &h)| acc * (h + 1) + level)
    }

    /// Direct predecessors: nodes one level lower in exactly one attribute.
    pub fn predecessors(&self, node: &[usize]) -> Vec<Node> {
        (0..node.len())
            .filter(|&a| node[a] > 0)
            .map(|a| {
                let mut p = node.to_vec();
                p[a] -= 1;
                p
            })
            .collect()
    }

    /// Direct successors: nodes one level higher in exactly one attribute.
    pub fn successors(&self, node: &[usize]) -> Vec<Node> {
        (0..node.len())
            .filter(|&a| node[a] < self.heights[a])
            .map(|a| {
                let mut s = node.to_vec();
                s[a] += 1;
                s
            })
            .collect()
    }

    /// The top node (every attribute fully generalized).
    pub fn top(&self) -> Node {
        self.heights.clone()
    }
}

/// Parses `levels => 'age=1, sex=0'` into `(column, level)` pairs (columns not listed stay
/// at level 0).
pub fn parse_levels(text: &str) -> Result<Vec<(String, usize)>> {
    let mut out: Vec<(String, usize)> = Vec::new();
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let Some((name, level)) = item.split_once('=') else {
            return plan_err!(
                "levels: '{item}' is not 'column=level'; write e.g. levels => 'age=1, sex=0'"
            );
        };
        let name = name.trim().to_string();
        let Ok(level) = level.trim().parse::<usize>() else {
            return plan_err!(
                "levels: level of '{name}' must be a non-negative integer, got '{}'",
                level.trim()
            );
        };
        if out.iter().any(|(n, _)| n.eq_ignore_ascii_case(&name)) {
            return plan_err!("levels: column '{name}' is listed twice");
        }
        out.push((name, level));
    }
    if out.is_empty() {
        return plan_err!("levels: no 'column=level' pairs in '{text}'");
    }
    Ok(out)
}

/// The node that puts each named attribute at its level and the others at level 0;
/// errors name an unknown attribute or a level above its hierarchy's height.
pub fn node_from_levels(
    hierarchies: &[&crate::hierarchy::Hierarchy],
    levels: &[(String, usize)],
) -> Result<Node> {
    let mut node = vec![0usize; hierarchies.len()];
    for (name, level) in levels {
        let Some(a) = hierarchies
            .iter()
            .position(|h| h.attribute().eq_ignore_ascii_case(name))
        else {
            let names: Vec<&str> = hierarchies.iter().map(|h| h.attribute()).collect();
            return plan_err!(
                "levels: '{name}' is not a quasi-identifier; the quasi-identifiers are: {}",
                names.join(", ")
            );
        };
        if *level > hierarchies[a].height() {
            return plan_err!(
                "levels: level {level} of '{}' exceeds its hierarchy's height {}",
                hierarchies[a].attribute(),
                hierarchies[a].height()
            );
        }
        node[a] = *level;
    }
    Ok(node)
}

/// Formats a node as its level digits, e.g. `[1, 0, 2]` → `"1,0,2"`.
pub fn node_label(node: &[usize]) -> String {
    node.iter()
        .map(|l| l.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enumerates_in_nested_loop_order() {
        let lattice = Lattice::new(vec![1, 2], 100).unwrap();
        let nodes = lattice.nodes();
        assert_eq!(
            nodes,
            vec![
                vec![0, 0],
                vec![0, 1],
                vec![0, 2],
                vec![1, 0],
                vec![1, 1],
                vec![1, 2]
            ]
        );
        for (i, n) in nodes.iter().enumerate() {
            assert_eq!(lattice.index_of(n), i);
        }
        assert_eq!(lattice.predecessors(&[1, 1]), vec![vec![0, 1], vec![1, 0]]);
        assert_eq!(lattice.successors(&[1, 1]), vec![vec![1, 2]]);
        assert_eq!(Lattice::new(vec![3, 1, 3, 1, 3], 1000).unwrap().len(), 256);
    }

    #[test]
    fn refuses_large_lattices() {
        let err = Lattice::new(vec![9; 10], 100_000).unwrap_err().to_string();
        assert!(err.contains("more than 100000 nodes"), "{err}");
    }
}
