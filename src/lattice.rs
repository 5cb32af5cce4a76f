//! The full-domain generalization lattice: one node per vector of levels.

use std::fmt;

use datafusion::common::{DataFusionError, Result};

use crate::names::{written_name, PairsError};

/// Default largest lattice an exhaustive method may evaluate.
pub const DEFAULT_MAX_NODES: usize = 100_000;

/// A lattice node: the generalization level of every quasi-identifier.
pub type Node = Vec<usize>;

/// The most memory the list of a bounded lattice's nodes may take (1 GB), checked before
/// anything is allocated: `max_nodes => 1e14` on 40 quasi-identifiers asked for terabytes.
pub const MAX_LISTED_BYTES: usize = 1_000_000_000;

/// Why a lattice, a `'column=level, ...'` list or level bounds were refused.
///
/// The [`Display`](fmt::Display) text is the message alone; the caller decides which
/// [`DataFusionError`] it becomes (`From` makes a planning error, the engine an execution
/// error when it checks bounds against loaded hierarchies).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LatticeError {
    /// Bounds with the wrong number of entries, `min > max`, or `max` above a height.
    BoundsDoNotFit {
        /// Lowest level per attribute.
        min: Vec<usize>,
        /// Highest level per attribute.
        max: Vec<usize>,
        /// Hierarchy height per attribute.
        heights: Vec<usize>,
    },
    /// Listing the lattice's nodes would take more memory than [`MAX_LISTED_BYTES`].
    TooLargeToList {
        /// Its nodes.
        nodes: usize,
        /// The memory listing them would take, in bytes.
        bytes: usize,
    },
    /// The lattice would have more than `max_nodes` nodes.
    TooManyNodes {
        /// The largest lattice allowed.
        max_nodes: usize,
        /// Hierarchy height per attribute.
        heights: Vec<usize>,
    },
    /// A column named in argument `param` is not a quasi-identifier.
    NotAQuasiIdentifier {
        /// The argument that names the column (`levels`, `min_levels`, `qi_weights`, ...).
        param: String,
        /// The column as written.
        name: String,
        /// The quasi-identifiers, in order.
        quasi_identifiers: Vec<String>,
    },
    /// An item of a level list is not `column=level`.
    NotColumnLevel {
        /// The argument holding the list.
        param: String,
        /// The item as written (trimmed).
        item: String,
    },
    /// A quoting error or a stray character in a level list (the whole message).
    Syntax {
        /// The message, naming the argument.
        message: String,
    },
    /// A level is not a non-negative integer.
    LevelNotInteger {
        /// The argument holding the list.
        param: String,
        /// The column the level is for.
        column: String,
        /// The level as written (trimmed).
        level: String,
    },
    /// A level list names a column twice (letter case ignored).
    ColumnListedTwice {
        /// The argument holding the list.
        param: String,
        /// The second mention of the column.
        column: String,
    },
    /// A level list holds no pairs.
    NoPairs {
        /// The argument holding the list.
        param: String,
        /// The argument's text.
        text: String,
    },
    /// A level exceeds the height of its attribute's hierarchy.
    LevelAboveHeight {
        /// The argument that gives the level.
        param: String,
        /// The quasi-identifier.
        column: String,
        /// The level asked for.
        level: usize,
        /// The hierarchy's height (or the most its table can hold).
        height: usize,
    },
    /// An attribute's `min_levels` entry lies above its `max_levels` entry.
    MinAboveMax {
        /// The quasi-identifier.
        column: String,
        /// Its lowest level.
        min: usize,
        /// Its highest level.
        max: usize,
    },
    /// The node given by `levels` lies outside the lattice's bounds.
    NodeOutsideBounds {
        /// Every attribute with its level in the node.
        node: Vec<(String, usize)>,
    },
}

impl fmt::Display for LatticeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LatticeError::BoundsDoNotFit { min, max, heights } => write!(
                f,
                "level bounds {min:?}..={max:?} do not fit the hierarchy heights {heights:?}"
            ),
            LatticeError::TooLargeToList { nodes, bytes } => write!(
                f,
                "the generalization lattice has {nodes} nodes, and listing them would take about {} MB, more than the {} MB a lattice may take; use fewer quasi-identifiers, shorter hierarchies, max_levels, or a smaller max_nodes",
                bytes / 1_000_000,
                MAX_LISTED_BYTES / 1_000_000
            ),
            LatticeError::TooManyNodes { max_nodes, heights } => write!(
                f,
                "the generalization lattice has more than {max_nodes} nodes (heights {heights:?}); use fewer quasi-identifiers, shorter hierarchies, max_levels, or raise max_nodes"
            ),
            LatticeError::NotAQuasiIdentifier {
                param,
                name,
                quasi_identifiers,
            } => write!(
                f,
                "{param}: '{name}' is not a quasi-identifier; the quasi-identifiers are: {}",
                quasi_identifiers.join(", ")
            ),
            LatticeError::NotColumnLevel { param, item } => write!(
                f,
                "{param}: '{item}' is not 'column=level'; write e.g. {param} => 'age=1, sex=0'"
            ),
            LatticeError::Syntax { message } => f.write_str(message),
            LatticeError::LevelNotInteger {
                param,
                column,
                level,
            } => write!(
                f,
                "{param}: level of '{column}' must be a non-negative integer, got '{level}'"
            ),
            LatticeError::ColumnListedTwice { param, column } => {
                write!(f, "{param}: column '{column}' is listed twice")
            }
            LatticeError::NoPairs { param, text } => {
                write!(f, "{param}: no 'column=level' pairs in '{text}'")
            }
            LatticeError::LevelAboveHeight {
                param,
                column,
                level,
                height,
            } => write!(
                f,
                "{param}: level {level} of '{column}' exceeds its hierarchy's height {height}"
            ),
            LatticeError::MinAboveMax { column, min, max } => write!(
                f,
                "min_levels: level {min} of '{column}' is above its max_levels {max}"
            ),
            LatticeError::NodeOutsideBounds { node } => {
                let described: Vec<String> =
                    node.iter().map(|(name, l)| format!("{name}={l}")).collect();
                write!(
                    f,
                    "levels: the node '{}' lies outside min_levels / max_levels",
                    described.join(", ")
                )
            }
        }
    }
}

impl std::error::Error for LatticeError {}

impl From<LatticeError> for DataFusionError {
    /// A planning error whose message is the error's [`Display`](fmt::Display).
    fn from(e: LatticeError) -> Self {
        DataFusionError::Plan(e.to_string())
    }
}

/// The lattice spanned by per-attribute level ranges `min..=max` within the hierarchy
/// heights (`0..=height` each when unbounded, see `LevelBounds`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lattice {
    heights: Vec<usize>,
    min: Vec<usize>,
    max: Vec<usize>,
}

impl Lattice {
    /// A lattice over attributes with the given hierarchy heights, refusing lattices with
    /// more than `max_nodes` nodes.
    pub fn new(heights: Vec<usize>, max_nodes: usize) -> Result<Self, LatticeError> {
        let min = vec![0; heights.len()];
        let max = heights.clone();
        Self::build(heights, min, max, max_nodes)
    }

    /// The sub-lattice of the nodes whose levels lie within `min..=max` per attribute.
    /// `min` and `max` must have one entry per attribute with `min ≤ max ≤ height`.
    pub fn bounded(
        heights: Vec<usize>,
        min: Vec<usize>,
        max: Vec<usize>,
        max_nodes: usize,
    ) -> Result<Self, LatticeError> {
        let consistent = min.len() == heights.len()
            && max.len() == heights.len()
            && (0..heights.len()).all(|a| min[a] <= max[a] && max[a] <= heights[a]);
        if !consistent {
            return Err(LatticeError::BoundsDoNotFit { min, max, heights });
        }
        Self::build(heights, min, max, max_nodes)
    }

    fn build(
        heights: Vec<usize>,
        min: Vec<usize>,
        max: Vec<usize>,
        max_nodes: usize,
    ) -> Result<Self, LatticeError> {
        let mut size: usize = 1;
        for a in 0..heights.len() {
            size = match size.checked_mul(max[a] - min[a] + 1) {
                Some(s) if s <= max_nodes => s,
                _ => return Err(LatticeError::TooManyNodes { max_nodes, heights }),
            };
        }
        // A bounded lattice is listed ([`Self::nodes`], one vector per node) by the methods
        // that walk it; an unbounded one (SafePub's search) never is.
        if max_nodes < usize::MAX {
            let per_node =
                std::mem::size_of::<Node>() + heights.len() * std::mem::size_of::<usize>();
            let bytes = size.saturating_mul(per_node);
            if bytes > MAX_LISTED_BYTES {
                return Err(LatticeError::TooLargeToList { nodes: size, bytes });
            }
        }
        Ok(Self { heights, min, max })
    }

    /// Hierarchy height of every attribute.
    pub fn heights(&self) -> &[usize] {
        &self.heights
    }

    /// Lowest level of every attribute in the lattice (0 unless bounded).
    pub fn min_levels(&self) -> &[usize] {
        &self.min
    }

    /// Highest level of every attribute in the lattice (its height unless bounded).
    pub fn max_levels(&self) -> &[usize] {
        &self.max
    }

    /// Whether `node` has one level per attribute, each within the lattice's bounds.
    pub fn contains(&self, node: &[usize]) -> bool {
        node.len() == self.min.len()
            && (0..node.len()).all(|a| self.min[a] <= node[a] && node[a] <= self.max[a])
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        (0..self.min.len())
            .map(|a| self.max[a] - self.min[a] + 1)
            .product()
    }

    /// Whether the lattice has no attributes (a single empty node).
    pub fn is_empty(&self) -> bool {
        self.heights.is_empty()
    }

    /// Every node, the first attribute varying slowest (the reference implementation's
    /// nested-loop order).
    pub fn nodes(&self) -> Vec<Node> {
        let mut nodes = Vec::with_capacity(self.len());
        let mut current = self.min.clone();
        loop {
            nodes.push(current.clone());
            let mut attr = self.min.len();
            loop {
                if attr == 0 {
                    return nodes;
                }
                attr -= 1;
                if current[attr] < self.max[attr] {
                    current[attr] += 1;
                    break;
                }
                current[attr] = self.min[attr];
            }
        }
    }

    /// Index of a node of the lattice in [`Lattice::nodes`] order.
    pub fn index_of(&self, node: &[usize]) -> usize {
        (0..node.len()).fold(0, |acc, a| {
            acc * (self.max[a] - self.min[a] + 1) + node[a].saturating_sub(self.min[a])
        })
    }

    /// The node at position `index` of [`Lattice::nodes`] order (the inverse of
    /// [`Lattice::index_of`]), decoded without listing the lattice; `None` past the end.
    pub fn node_at(&self, index: usize) -> Option<Node> {
        if index >= self.len() {
            return None;
        }
        let mut node = self.min.clone();
        let mut rest = index;
        for a in (0..node.len()).rev() {
            let width = self.max[a] - self.min[a] + 1;
            node[a] = self.min[a] + rest % width;
            rest /= width;
        }
        Some(node)
    }

    /// Direct predecessors within the lattice: nodes one level lower in exactly one
    /// attribute.
    pub fn predecessors(&self, node: &[usize]) -> Vec<Node> {
        (0..node.len())
            .filter(|&a| node[a] > self.min[a])
            .map(|a| {
                let mut p = node.to_vec();
                p[a] -= 1;
                p
            })
            .collect()
    }

    /// Direct successors within the lattice: nodes one level higher in exactly one
    /// attribute.
    pub fn successors(&self, node: &[usize]) -> Vec<Node> {
        (0..node.len())
            .filter(|&a| node[a] < self.max[a])
            .map(|a| {
                let mut s = node.to_vec();
                s[a] += 1;
                s
            })
            .collect()
    }

    /// The top node (every attribute at its highest level in the lattice).
    pub fn top(&self) -> Node {
        self.max.clone()
    }

    /// The bottom node (every attribute at its lowest level in the lattice).
    pub fn bottom(&self) -> Node {
        self.min.clone()
    }
}

/// Position of the quasi-identifier `name` among `columns`: the one spelled exactly so,
/// else the one equal to it ignoring letter case; the error names the argument `param` and
/// lists the quasi-identifiers.
pub fn qi_position<S: AsRef<str>>(
    param: &str,
    columns: &[S],
    name: &str,
) -> Result<usize, LatticeError> {
    let exact = columns.iter().position(|c| c.as_ref() == name);
    match exact.or_else(|| {
        columns
            .iter()
            .position(|c| c.as_ref().eq_ignore_ascii_case(name))
    }) {
        Some(a) => Ok(a),
        None => Err(LatticeError::NotAQuasiIdentifier {
            param: param.to_string(),
            name: name.to_string(),
            quasi_identifiers: columns.iter().map(|c| c.as_ref().to_string()).collect(),
        }),
    }
}

/// Levels per quasi-identifier, as written in `'age=1, sex=0'` (column names as given).
pub type LevelList = Vec<(String, usize)>;

/// Parses a `'column=level, ...'` list given as argument `param` (`levels`, `min_levels`,
/// `max_levels`): names as in `qi` (a name containing `,` or `=` in double quotes,
/// [`crate::names::parse_pairs`]), at least one pair, non-negative integer levels, no
/// column twice (letter case ignored unless a name is quoted).
pub fn parse_level_list(param: &str, text: &str) -> Result<LevelList, LatticeError> {
    let pairs = crate::names::parse_pairs(param, text).map_err(|e| match e {
        PairsError::Syntax(message) => LatticeError::Syntax { message },
        PairsError::NoEquals(item) => LatticeError::NotColumnLevel {
            param: param.to_string(),
            item,
        },
    })?;
    let mut out: LevelList = Vec::new();
    let mut quoted: Vec<bool> = Vec::new();
    for pair in pairs {
        let name = pair.name.text;
        let Ok(level) = pair.value.parse::<usize>() else {
            return Err(LatticeError::LevelNotInteger {
                param: param.to_string(),
                column: name,
                level: pair.value,
            });
        };
        let twice = out.iter().zip(&quoted).any(|((n, _), &q)| {
            if q || pair.name.quoted {
                *n == name
            } else {
                n.eq_ignore_ascii_case(&name)
            }
        });
        if twice {
            return Err(LatticeError::ColumnListedTwice {
                param: param.to_string(),
                column: name,
            });
        }
        out.push((name, level));
        quoted.push(pair.name.quoted);
    }
    if out.is_empty() {
        return Err(LatticeError::NoPairs {
            param: param.to_string(),
            text: text.to_string(),
        });
    }
    Ok(out)
}

/// Data-independent bounds on the generalization levels a lattice method may choose
/// (`min_levels`, `max_levels`): attributes not named are unbounded (`0..=height`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LevelBounds {
    /// Lowest allowed level per named column.
    pub min: LevelList,
    /// Highest allowed level per named column.
    pub max: LevelList,
}

/// No bounds.
pub static NO_LEVEL_BOUNDS: LevelBounds = LevelBounds {
    min: Vec::new(),
    max: Vec::new(),
};

impl LevelBounds {
    /// Whether no attribute is bounded.
    pub fn is_unbounded(&self) -> bool {
        self.min.is_empty() && self.max.is_empty()
    }

    /// Checks the bounds against the quasi-identifiers `columns` and an upper bound on each
    /// hierarchy's height (`height_limits`, e.g. a hierarchy table's column count − 1, or
    /// the exact heights). Returns the per-attribute `(min, max)` levels, unnamed attributes
    /// spanning `0..=height_limit`. Errors name the argument, the column and the level.
    pub fn resolve(
        &self,
        columns: &[&str],
        height_limits: &[usize],
    ) -> Result<(Vec<usize>, Vec<usize>), LatticeError> {
        let mut min = vec![0; columns.len()];
        let mut max = height_limits.to_vec();
        for (param, list, target) in [
            ("min_levels", &self.min, &mut min),
            ("max_levels", &self.max, &mut max),
        ] {
            for (name, level) in list {
                let a = qi_position(param, columns, name)?;
                if *level > height_limits[a] {
                    return Err(LatticeError::LevelAboveHeight {
                        param: param.to_string(),
                        column: columns[a].to_string(),
                        level: *level,
                        height: height_limits[a],
                    });
                }
                target[a] = *level;
            }
        }
        if let Some(a) = (0..columns.len()).find(|&a| min[a] > max[a]) {
            return Err(LatticeError::MinAboveMax {
                column: columns[a].to_string(),
                min: min[a],
                max: max[a],
            });
        }
        Ok((min, max))
    }

    /// The bounds as public metadata text, e.g. `"age=1"` (`"none"` when unbounded); a
    /// name containing `,`, `:` or `=` in double quotes, as the argument takes it.
    pub fn describe(list: &LevelList) -> String {
        if list.is_empty() {
            return "none".to_string();
        }
        list.iter()
            .map(|(n, l)| format!("{}={l}", written_name(n)))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The node of `levels => 'age=1, sex=0'`: each named attribute at its level, the others at
/// level 0; errors name an unknown attribute, a level above its hierarchy's height, or a
/// node outside the lattice's `min_levels` / `max_levels`.
pub fn node_from_levels(
    hierarchies: &[&crate::hierarchy::Hierarchy],
    lattice: &Lattice,
    levels: &[(String, usize)],
) -> Result<Node, LatticeError> {
    let names: Vec<&str> = hierarchies.iter().map(|h| h.attribute()).collect();
    let mut node = vec![0usize; hierarchies.len()];
    for (name, level) in levels {
        let a = qi_position("levels", &names, name)?;
        if *level > hierarchies[a].height() {
            return Err(LatticeError::LevelAboveHeight {
                param: "levels".to_string(),
                column: hierarchies[a].attribute().to_string(),
                level: *level,
                height: hierarchies[a].height(),
            });
        }
        node[a] = *level;
    }
    if !lattice.contains(&node) {
        return Err(LatticeError::NodeOutsideBounds {
            node: hierarchies
                .iter()
                .zip(&node)
                .map(|(h, l)| (h.attribute().to_string(), *l))
                .collect(),
        });
    }
    Ok(node)
}

/// The histogram at `node`: `base` itself at its own node, else rolled up from the computed
/// predecessor in `computed` (keyed by lattice index) with the fewest pairs, or from `base`
/// when none is computed. Among predecessors of equally many pairs, the one that differs in
/// the latest attribute: its classes are more often in the node's order already, which
/// saves the roll-up's sort.
pub fn roll_up_from_nearest(
    base: &crate::histogram::GroupedHistogram,
    computed: &std::collections::HashMap<usize, crate::histogram::GroupedHistogram>,
    lattice: &Lattice,
    hierarchies: &[&crate::hierarchy::Hierarchy],
    node: &[usize],
    value_domain: usize,
) -> Result<crate::histogram::GroupedHistogram> {
    if base.levels == node {
        return Ok(base.clone());
    }
    let source = lattice
        .predecessors(node)
        .into_iter()
        .filter_map(|p| {
            let differs = p.iter().zip(node).rposition(|(a, b)| a != b);
            computed
                .get(&lattice.index_of(&p))
                .map(|h| (h, std::cmp::Reverse(differs)))
        })
        .min_by_key(|(h, latest)| (h.pair_count(), *latest))
        .map_or(base, |(h, _)| h);
    source.roll_up(hierarchies, node, value_domain)
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
    fn a_lattice_too_large_to_list_is_refused_before_anything_is_allocated() {
        // 2^46 nodes within max_nodes => 1e14: terabytes to list.
        let err = Lattice::new(vec![1; 46], 100_000_000_000_000).expect_err("refused");
        assert!(
            matches!(err, LatticeError::TooLargeToList { nodes, .. } if nodes == 1 << 46),
            "{err}"
        );
        assert!(err.to_string().starts_with(
            "the generalization lattice has 70368744177664 nodes, and listing them would take about"
        ));
        // Unbounded (SafePub walks without listing): accepted.
        assert!(Lattice::new(vec![1; 46], usize::MAX).is_ok());
        // A million nodes of 20 attributes fit.
        assert!(Lattice::new(vec![1; 20], 1 << 20).is_ok());
    }

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
            assert_eq!(lattice.node_at(i).as_ref(), Some(n));
        }
        assert_eq!(lattice.node_at(nodes.len()), None);
        assert_eq!(lattice.predecessors(&[1, 1]), vec![vec![0, 1], vec![1, 0]]);
        assert_eq!(lattice.successors(&[1, 1]), vec![vec![1, 2]]);
        assert_eq!(Lattice::new(vec![3, 1, 3, 1, 3], 1000).unwrap().len(), 256);
    }

    #[test]
    fn bounded_lattice_holds_only_nodes_within_the_bounds() {
        let lattice = Lattice::bounded(vec![3, 1, 2], vec![1, 0, 0], vec![2, 0, 2], 100).unwrap();
        let nodes = lattice.nodes();
        assert_eq!(lattice.len(), 6);
        assert_eq!(
            nodes,
            vec![
                vec![1, 0, 0],
                vec![1, 0, 1],
                vec![1, 0, 2],
                vec![2, 0, 0],
                vec![2, 0, 1],
                vec![2, 0, 2]
            ]
        );
        for (i, n) in nodes.iter().enumerate() {
            assert_eq!(lattice.index_of(n), i);
            assert!(lattice.contains(n));
        }
        assert!(!lattice.contains(&[0, 0, 0]));
        assert!(!lattice.contains(&[1, 1, 0]));
        assert_eq!(lattice.top(), vec![2, 0, 2]);
        assert_eq!(lattice.bottom(), vec![1, 0, 0]);
        assert_eq!(lattice.predecessors(&[1, 0, 1]), vec![vec![1, 0, 0]]);
        assert_eq!(
            lattice.predecessors(&[2, 0, 1]),
            vec![vec![1, 0, 1], vec![2, 0, 0]]
        );
        assert_eq!(lattice.successors(&[2, 0, 1]), vec![vec![2, 0, 2]]);
        assert_eq!(lattice.heights(), &[3, 1, 2]);
        let err = Lattice::bounded(vec![3], vec![2], vec![1], 100).unwrap_err();
        assert!(err.to_string().contains("do not fit"), "{err}");
        // A bound can bring a lattice that is too large under max_nodes.
        assert!(Lattice::new(vec![9; 6], 100_000).is_err());
        let mut max = vec![9; 6];
        max[0] = 0;
        max[1] = 0;
        assert_eq!(
            Lattice::bounded(vec![9; 6], vec![0; 6], max, 100_000)
                .unwrap()
                .len(),
            10_000
        );
    }

    #[test]
    fn level_bounds_resolve_and_name_the_culprit() {
        let parse = |min: &str, max: &str| LevelBounds {
            min: if min.is_empty() {
                Vec::new()
            } else {
                parse_level_list("min_levels", min).unwrap()
            },
            max: if max.is_empty() {
                Vec::new()
            } else {
                parse_level_list("max_levels", max).unwrap()
            },
        };
        let columns = ["age", "sex"];
        assert_eq!(
            parse("", "AGE=1").resolve(&columns, &[3, 1]).unwrap(),
            (vec![0, 0], vec![1, 1])
        );
        assert_eq!(
            parse("sex=1", "age=2").resolve(&columns, &[3, 1]).unwrap(),
            (vec![0, 1], vec![2, 1])
        );
        assert!(NO_LEVEL_BOUNDS.is_unbounded());
        for (min, max, msg) in [
            (
                "",
                "zip=1",
                "max_levels: 'zip' is not a quasi-identifier; the quasi-identifiers are: age, sex",
            ),
            (
                "age=4",
                "",
                "min_levels: level 4 of 'age' exceeds its hierarchy's height 3",
            ),
            (
                "age=2",
                "age=1",
                "min_levels: level 2 of 'age' is above its max_levels 1",
            ),
        ] {
            let err = parse(min, max).resolve(&columns, &[3, 1]).unwrap_err();
            assert!(err.to_string().contains(msg), "{min}/{max}: {err}");
        }
        for (bad, msg) in [
            ("age", "max_levels: 'age' is not 'column=level'"),
            (
                "age=x",
                "level of 'age' must be a non-negative integer, got 'x'",
            ),
            ("age=1, AGE=2", "column 'AGE' is listed twice"),
            (" , ", "no 'column=level' pairs"),
        ] {
            let err = parse_level_list("max_levels", bad).unwrap_err().to_string();
            assert!(err.contains(msg), "{bad}: {err}");
        }
        assert_eq!(
            LevelBounds::describe(&parse("", "age=1, sex=0").max),
            "age=1, sex=0"
        );
        assert_eq!(LevelBounds::describe(&Vec::new()), "none");
    }

    /// Level lists take names as `qi` does: in double quotes a name may hold ',' and '=',
    /// and matches its quasi-identifier exactly.
    #[test]
    fn level_lists_take_quoted_names() {
        let columns = ["c,d", "Sex", "sex"];
        let list = parse_level_list("max_levels", r#""c,d"=0, "sex"=1, "Sex" = 2"#).unwrap();
        assert_eq!(
            list,
            vec![("c,d".into(), 0), ("sex".into(), 1), ("Sex".into(), 2)]
        );
        let bounds = LevelBounds {
            min: Vec::new(),
            max: list,
        };
        assert_eq!(
            bounds.resolve(&columns, &[2, 3, 3]).unwrap(),
            (vec![0, 0, 0], vec![0, 2, 1])
        );
        assert_eq!(
            LevelBounds::describe(&bounds.max),
            "\"c,d\"=0, sex=1, Sex=2"
        );
        let min = parse_level_list("min_levels", r#""age"=1"#).unwrap();
        assert_eq!(min, vec![("age".into(), 1)]);
        for (bad, msg) in [
            (
                r#""c,d"=0, "c,d"=1"#,
                "max_levels: column 'c,d' is listed twice",
            ),
            (
                r#""c,d=0"#,
                "argument 'max_levels': the double quote opened in",
            ),
            (r#""c,d""#, "max_levels: '\"c,d\"' is not 'column=level'"),
        ] {
            let err = parse_level_list("max_levels", bad).unwrap_err().to_string();
            assert!(err.contains(msg), "{bad}: {err}");
        }
    }

    #[test]
    fn refuses_large_lattices() {
        let err = Lattice::new(vec![9; 10], 100_000).unwrap_err().to_string();
        assert!(err.contains("more than 100000 nodes"), "{err}");
    }
}
