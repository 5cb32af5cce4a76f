//! The level arguments of the lattice methods: `min_levels` and `max_levels` (bounds on
//! the lattice a method works on), the check of a `levels` node against them, and a node
//! written as `levels` text.

use datafusion::common::{plan_err, Result};

use crate::hierarchy::Hierarchy;
use crate::lattice::{parse_level_list, LevelBounds};
use crate::params::{ParamDefault, ParamKind, ParamSpec, ParamValues};

/// `min_levels` of the lattice methods.
pub const MIN_LEVELS: ParamSpec = ParamSpec::new(
    "min_levels",
    ParamKind::Text,
    ParamDefault::Optional("none: every attribute may stay at level 0"),
    "lowest generalization level per attribute, 'col=level, ...': the lattice holds only nodes at or above it",
);

/// `max_levels` of the lattice methods.
pub const MAX_LEVELS: ParamSpec = ParamSpec::new(
    "max_levels",
    ParamKind::Text,
    ParamDefault::Optional("none: every attribute may reach its hierarchy's top"),
    "highest generalization level per attribute, 'col=level, ...' (e.g. 'age=1' keeps ages in the first level's intervals): the lattice holds only nodes at or below it",
);

/// `max_nodes` of the methods whose default node is the first of the lattice by a rule
/// (`dp_histogram`, `mst`), unless `levels` names it.
pub const NODE_RULE_MAX_NODES: ParamSpec = ParamSpec::new(
    "max_nodes",
    ParamKind::Count,
    ParamDefault::Integer(crate::lattice::DEFAULT_MAX_NODES as u64),
    "largest lattice the default node rule walks (not used when 'levels' is given)",
);

/// Reads the `min_levels` and `max_levels` arguments (names and levels are checked against
/// the quasi-identifiers and their hierarchies when those are known, see
/// [`LevelBounds::resolve`]).
pub fn level_bounds(values: &ParamValues) -> Result<LevelBounds> {
    let read = |name: &str| -> Result<Vec<(String, usize)>> {
        match values.opt_text(name) {
            Some(text) => Ok(parse_level_list(name, text)?),
            None => Ok(Vec::new()),
        }
    };
    Ok(LevelBounds {
        min: read("min_levels")?,
        max: read("max_levels")?,
    })
}

/// `levels` names one node; it must satisfy `min_levels` and `max_levels` (a column not
/// named in `levels` is at level 0).
pub fn check_levels_within_bounds(levels: &[(String, usize)], bounds: &LevelBounds) -> Result<()> {
    let level_of = |column: &str| {
        levels
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(column))
            .map_or(0, |(_, l)| *l)
    };
    for (column, min) in &bounds.min {
        if level_of(column) < *min {
            return plan_err!(
                "levels: level {} of '{column}' is below its min_levels {min}",
                level_of(column)
            );
        }
    }
    for (column, max) in &bounds.max {
        if level_of(column) > *max {
            return plan_err!(
                "levels: level {} of '{column}' is above its max_levels {max}",
                level_of(column)
            );
        }
    }
    Ok(())
}

/// A node as `levels` text, `age=1, sex=0`: each hierarchy's attribute with its level.
pub fn node_levels(hierarchies: &[&Hierarchy], node: &[usize]) -> String {
    hierarchies
        .iter()
        .zip(node)
        .map(|(h, l)| format!("{}={l}", h.attribute()))
        .collect::<Vec<_>>()
        .join(", ")
}
