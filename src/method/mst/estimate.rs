//! MST's estimation: the tree-structured distribution whose marginals best fit the noisy
//! measurements, as private-pgm estimates it (McKenna, Sheldon & Miklau 2019): entropic
//! mirror descent on the edges' log-potentials, the marginals computed exactly by
//! sum-product on the tree, minimizing `Σ (μ − y)² / (2·variance)` over every measured cell.
//! Post-processing of the measurements: nothing here reads the data.

use datafusion::common::Result;

use super::select::Measurement;
use crate::progress::Progress;

/// A spanning tree over `cards.len()` attributes.
#[derive(Debug, Clone)]
pub struct Tree {
    /// Each attribute's number of values.
    pub cards: Vec<usize>,
    /// The edges `(a, b)`, `d − 1` of them, spanning.
    pub edges: Vec<(usize, usize)>,
}

/// The fitted model: one probability table per edge (row-major over `(a, b)`), consistent
/// on shared attributes.
#[derive(Debug, Clone)]
pub struct Fitted {
    /// The tree.
    pub tree: Tree,
    /// `p(x_a, x_b)` per edge.
    pub edge_marginals: Vec<Vec<f64>>,
}

impl Fitted {
    /// The distribution of attribute `attr` from the table of edge `e` (which holds it).
    pub fn node_marginal(&self, e: usize, attr: usize) -> Vec<f64> {
        one_way(
            &self.tree,
            &self.edge_marginals[e],
            self.tree.edges[e],
            attr,
        )
    }

    /// The distribution of the other attribute of edge `e` given `given = value`
    /// (weights; uniform where the table gives the value no mass).
    pub fn conditional(&self, e: usize, given: usize, value: usize) -> Vec<f64> {
        let (a, b) = self.tree.edges[e];
        let (ca, cb) = (self.tree.cards[a], self.tree.cards[b]);
        let table = &self.edge_marginals[e];
        let row: Vec<f64> = match given == a {
            true => (0..cb).map(|j| table[value * cb + j]).collect(),
            false => (0..ca).map(|i| table[i * cb + value]).collect(),
        };
        match row.iter().sum::<f64>() > 0.0 {
            true => row,
            false => vec![1.0; row.len()],
        }
    }
}

/// A rooted view of the tree: an order from the root, each node's parent and the edge to
/// it (oriented parent → child).
pub(super) struct Rooted {
    /// The attributes, the root (attribute 0) first, each after its parent.
    pub(super) order: Vec<usize>,
    /// Each attribute's parent and the edge to it (`None` for the root).
    pub(super) parent: Vec<Option<(usize, usize)>>,
}

/// The tree rooted at attribute 0.
pub(super) fn rooted(tree: &Tree) -> Rooted {
    let d = tree.cards.len();
    let mut neighbours: Vec<Vec<(usize, usize)>> = vec![Vec::new(); d];
    for (e, &(a, b)) in tree.edges.iter().enumerate() {
        neighbours[a].push((b, e));
        neighbours[b].push((a, e));
    }
    let mut order = vec![0];
    let mut parent = vec![None; d];
    let mut seen = vec![false; d];
    seen[0] = true;
    let mut at = 0;
    while at < order.len() {
        let node = order[at];
        at += 1;
        for &(next, e) in &neighbours[node] {
            if !seen[next] {
                seen[next] = true;
                parent[next] = Some((node, e));
                order.push(next);
            }
        }
    }
    Rooted { order, parent }
}

/// The potential of edge `e` as a `[parent value][child value]` table.
fn oriented(tree: &Tree, theta: &[Vec<f64>], e: usize, parent: usize) -> Vec<Vec<f64>> {
    let (a, b) = tree.edges[e];
    let (ca, cb) = (tree.cards[a], tree.cards[b]);
    let max = theta[e].iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let exp = |i: usize, j: usize| (theta[e][i * cb + j] - max).exp();
    match parent == a {
        true => (0..ca)
            .map(|i| (0..cb).map(|j| exp(i, j)).collect())
            .collect(),
        false => (0..cb)
            .map(|j| (0..ca).map(|i| exp(i, j)).collect())
            .collect(),
    }
}

/// The edge marginals of the distribution `∝ Π_e exp(θ_e)`, by sum-product.
fn marginals(tree: &Tree, rooted: &Rooted, theta: &[Vec<f64>]) -> Vec<Vec<f64>> {
    let d = tree.cards.len();
    // up[n]: the product of the messages from n's children, per value of n.
    let mut up: Vec<Vec<f64>> = tree.cards.iter().map(|&c| vec![1.0; c]).collect();
    // The message each child sends its parent.
    let mut to_parent: Vec<Vec<f64>> = vec![Vec::new(); d];
    let tables: Vec<Option<Vec<Vec<f64>>>> = (0..d)
        .map(|n| rooted.parent[n].map(|(p, e)| oriented(tree, theta, e, p)))
        .collect();
    for &n in rooted.order.iter().rev() {
        let (Some((p, _)), Some(table)) = (rooted.parent[n], &tables[n]) else {
            continue;
        };
        let mut message: Vec<f64> = table
            .iter()
            .map(|row| row.iter().zip(&up[n]).map(|(psi, u)| psi * u).sum())
            .collect();
        let sum: f64 = message.iter().sum();
        message.iter_mut().for_each(|m| *m /= sum);
        for (u, m) in up[p].iter_mut().zip(&message) {
            *u *= m;
        }
        to_parent[n] = message;
    }
    // down[n]: what the rest of the tree says of n, per value of n.
    let mut down: Vec<Vec<f64>> = tree.cards.iter().map(|&c| vec![1.0; c]).collect();
    let mut out = vec![Vec::new(); tree.edges.len()];
    for &n in &rooted.order {
        let (Some((p, e)), Some(table)) = (rooted.parent[n], &tables[n]) else {
            continue;
        };
        // What p knows without n's own message.
        let outside: Vec<f64> = (0..tree.cards[p])
            .map(|v| down[p][v] * up[p][v] / to_parent[n][v])
            .collect();
        let mut joint = vec![0.0; tree.cards[p] * tree.cards[n]];
        for (pv, row) in table.iter().enumerate() {
            for (cv, psi) in row.iter().enumerate() {
                joint[pv * tree.cards[n] + cv] = outside[pv] * psi * up[n][cv];
            }
        }
        let sum: f64 = joint.iter().sum();
        joint.iter_mut().for_each(|j| *j /= sum);
        let mut below = vec![0.0; tree.cards[n]];
        for pv in 0..tree.cards[p] {
            for cv in 0..tree.cards[n] {
                below[cv] += outside[pv] * table[pv][cv];
            }
        }
        let sum: f64 = below.iter().sum();
        down[n] = below.iter().map(|b| b / sum).collect();
        // Stored in the edge's own orientation, (a, b).
        let (a, _) = tree.edges[e];
        out[e] = match a == p {
            true => joint,
            false => {
                let (cp, cn) = (tree.cards[p], tree.cards[n]);
                let mut t = vec![0.0; cp * cn];
                for pv in 0..cp {
                    for cv in 0..cn {
                        t[cv * cp + pv] = joint[pv * cn + cv];
                    }
                }
                t
            }
        };
    }
    out
}

/// The 1-way marginal of attribute `attr` from the edge table of `(a, b)`.
fn one_way(tree: &Tree, edge: &[f64], (a, b): (usize, usize), attr: usize) -> Vec<f64> {
    let (ca, cb) = (tree.cards[a], tree.cards[b]);
    let mut out = vec![0.0; tree.cards[attr]];
    for i in 0..ca {
        for j in 0..cb {
            out[if attr == a { i } else { j }] += edge[i * cb + j];
        }
    }
    out
}

/// The loss of edge marginals `p` (times `total`) against the measurements, and its
/// gradient with respect to each edge's table (the 1-way terms on the first edge holding
/// their attribute).
fn loss(
    tree: &Tree,
    p: &[Vec<f64>],
    total: f64,
    one: &[Measurement],
    two: &[Measurement],
) -> (f64, Vec<Vec<f64>>) {
    let mut value = 0.0;
    let mut gradient: Vec<Vec<f64>> = p.iter().map(|t| vec![0.0; t.len()]).collect();
    for (e, m) in two.iter().enumerate() {
        for (cell, (&y, &v)) in m.values.iter().zip(&m.variances).enumerate() {
            let r = total * p[e][cell] - y;
            value += r * r / (2.0 * v);
            gradient[e][cell] += r / v;
        }
    }
    for (attr, m) in one.iter().enumerate() {
        let Some(e) = tree.edges.iter().position(|&(a, b)| a == attr || b == attr) else {
            continue;
        };
        let (a, b) = tree.edges[e];
        let mu = one_way(tree, &p[e], (a, b), attr);
        let cb = tree.cards[b];
        for (v, (&y, &var)) in m.values.iter().zip(&m.variances).enumerate() {
            let r = total * mu[v] - y;
            value += r * r / (2.0 * var);
            let g = r / var;
            for other in 0..tree.cards[if attr == a { b } else { a }] {
                let cell = if attr == a {
                    v * cb + other
                } else {
                    other * cb + v
                };
                gradient[e][cell] += g;
            }
        }
    }
    (value, gradient)
}

/// Where the fit starts: log-potentials whose distribution is the root's marginal times,
/// down the tree, each child's conditional given its parent, both read off the 2-way
/// measurements (each cell clipped below at half a record): `ln y_e(p, n) − ln Σ_n y_e(p, n)`
/// on the edge from parent `p` to child `n`, and on the root's first edge also the root's
/// share `ln Σ_n y_e(p, n) − ln Σ y_e`. When the measurements agree with a tree
/// distribution this is that distribution; when they nearly agree the fit starts near its
/// optimum. Post-processing of the measurements, like the fit.
fn warm_start(tree: &Tree, rooted: &Rooted, two: &[Measurement]) -> Vec<Vec<f64>> {
    const FLOOR: f64 = 0.5;
    let mut theta: Vec<Vec<f64>> = tree
        .edges
        .iter()
        .map(|&(a, b)| vec![0.0; tree.cards[a] * tree.cards[b]])
        .collect();
    let root = rooted.order.first().copied();
    let mut root_done = false;
    for &n in &rooted.order {
        let Some((p, e)) = rooted.parent[n] else {
            continue;
        };
        let Some(measured) = two.get(e) else {
            continue;
        };
        let (a, b) = tree.edges[e];
        let cb = tree.cards[b];
        let cell = |pv: usize, nv: usize| if p == a { pv * cb + nv } else { nv * cb + pv };
        let y = |c: usize| measured.values.get(c).copied().unwrap_or(0.0).max(FLOOR);
        let (cp, cn) = (tree.cards[p], tree.cards[n]);
        let rows: Vec<f64> = (0..cp)
            .map(|pv| (0..cn).map(|nv| y(cell(pv, nv))).sum())
            .collect();
        let all: f64 = rows.iter().sum();
        let with_root = Some(p) == root && !root_done;
        for (pv, &row) in rows.iter().enumerate() {
            let share = if with_root { (row / all).ln() } else { 0.0 };
            for nv in 0..cn {
                let c = cell(pv, nv);
                theta[e][c] = (y(c) / row).ln() + share;
            }
        }
        root_done |= with_root;
    }
    theta
}

/// Fits the tree's distribution to the 1-way measurements `one` (per attribute) and the
/// 2-way measurements `two` (per edge, row-major over `(a, b)`), with `total` records,
/// in at most `iterations` steps of mirror descent (each step halved until the loss falls,
/// then grown by a quarter) with Nesterov's momentum, restarted whenever the loss does not
/// fall. Each step is reported to `progress`, whose error (nobody
/// waits for the release any more) stops the fit.
pub fn fit(
    tree: Tree,
    one: &[Measurement],
    two: &[Measurement],
    total: f64,
    iterations: usize,
    progress: &Progress,
) -> Result<Fitted> {
    let rooted = rooted(&tree);
    let mut theta = warm_start(&tree, &rooted, two);
    let total = total.max(1.0);
    let mut p = marginals(&tree, &rooted, &theta);
    let (mut current, mut gradient) = loss(&tree, &p, total, one, two);
    // A first step that moves each log-potential by at most 1.
    let largest = gradient
        .iter()
        .flatten()
        .fold(0.0f64, |m, g| m.max(g.abs()))
        .max(f64::MIN_POSITIVE);
    let mut step = 1.0 / largest;
    // Nesterov's acceleration: each step is taken from the extrapolated point `y`, and the
    // momentum restarts whenever the loss does not fall.
    let mut y = theta.clone();
    let (mut y_value, mut y_gradient) = (current, gradient.clone());
    let mut t = 1.0f64;
    for iteration in 0..iterations {
        match iteration % 16 {
            0 => progress.report(iteration, iterations)?,
            _ => progress.check()?,
        }
        let mut accepted = None;
        for _ in 0..40 {
            let trial: Vec<Vec<f64>> = y
                .iter()
                .zip(&y_gradient)
                .map(|(t, g)| t.iter().zip(g).map(|(t, g)| t - step * g).collect())
                .collect();
            let q = marginals(&tree, &rooted, &trial);
            let (value, next_gradient) = loss(&tree, &q, total, one, two);
            if value < y_value {
                accepted = Some((trial, q, value, next_gradient));
                step *= 1.25;
                break;
            }
            step /= 2.0;
        }
        let Some((next, q, value, next_gradient)) = accepted else {
            break;
        };
        let improvement = (current - value) / current.max(f64::MIN_POSITIVE);
        if value >= current {
            // No progress from the extrapolated point: restart the momentum at theta.
            t = 1.0;
            y = theta.clone();
            y_value = current;
            y_gradient = gradient.clone();
            continue;
        }
        let t_next = (1.0 + (1.0 + 4.0 * t * t).sqrt()) / 2.0;
        let beta = (t - 1.0) / t_next;
        y = next
            .iter()
            .zip(&theta)
            .map(|(n, o)| n.iter().zip(o).map(|(n, o)| n + beta * (n - o)).collect())
            .collect();
        t = t_next;
        theta = next;
        p = q;
        current = value;
        gradient = next_gradient;
        if beta == 0.0 {
            y_value = current;
            y_gradient = gradient.clone();
        } else {
            let py = marginals(&tree, &rooted, &y);
            (y_value, y_gradient) = loss(&tree, &py, total, one, two);
        }
        if improvement <= 1e-12 {
            break;
        }
    }
    progress.report(iterations, iterations)?;
    Ok(Fitted {
        tree,
        edge_marginals: p,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exact(values: Vec<f64>) -> Measurement {
        let n = values.len();
        Measurement {
            values,
            variances: vec![1.0; n],
        }
    }

    /// Measurements without noise of a distribution the tree can hold are fitted back.
    #[test]
    fn exact_measurements_of_a_tree_distribution_are_recovered() {
        // x0 → x1 → x2 (a chain), 1000 records.
        let p01 = [0.3, 0.1, 0.2, 0.4]; // p(x0, x1)
        let p12_given_1 = [[0.9, 0.1], [0.25, 0.75]]; // p(x2 | x1)
        let p1 = [p01[0] + p01[2], p01[1] + p01[3]];
        let p12: Vec<f64> = (0..4)
            .map(|c| p1[c / 2] * p12_given_1[c / 2][c % 2])
            .collect();
        let p0 = [p01[0] + p01[1], p01[2] + p01[3]];
        let p2 = [p12[0] + p12[2], p12[1] + p12[3]];
        let scale = |v: &[f64]| v.iter().map(|x| 1000.0 * x).collect::<Vec<_>>();
        let tree = Tree {
            cards: vec![2, 2, 2],
            edges: vec![(1, 2), (0, 1)],
        };
        let one = vec![exact(scale(&p0)), exact(scale(&p1)), exact(scale(&p2))];
        let two = vec![exact(scale(&p12)), exact(scale(&p01))];
        let fitted = fit(tree, &one, &two, 1000.0, 5000, &Progress::silent()).expect("fitted");
        for (got, want) in fitted
            .edge_marginals
            .iter()
            .zip([p12.clone(), p01.to_vec()])
        {
            for (g, w) in got.iter().zip(&want) {
                assert!((g - w).abs() < 1e-4, "{got:?} against {want:?}");
            }
        }
    }

    /// Sum-product's edge marginals agree on their shared attribute and sum to 1.
    #[test]
    fn edge_marginals_are_consistent() {
        let tree = Tree {
            cards: vec![3, 2, 4, 2],
            edges: vec![(0, 1), (2, 0), (1, 3)],
        };
        let rooted = rooted(&tree);
        let theta: Vec<Vec<f64>> = tree
            .edges
            .iter()
            .enumerate()
            .map(|(e, &(a, b))| {
                (0..tree.cards[a] * tree.cards[b])
                    .map(|i| ((i * 7 + e * 3) % 5) as f64 * 0.3)
                    .collect()
            })
            .collect();
        let p = marginals(&tree, &rooted, &theta);
        for t in &p {
            assert!((t.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        }
        let from = |e: usize, attr: usize| one_way(&tree, &p[e], tree.edges[e], attr);
        for (x, y) in from(0, 0).iter().zip(from(1, 0)) {
            assert!((x - y).abs() < 1e-12);
        }
        for (x, y) in from(0, 1).iter().zip(from(2, 1)) {
            assert!((x - y).abs() < 1e-12);
        }
        // Brute force over the 48 joint states.
        let weight = |x: [usize; 4]| -> f64 {
            tree.edges
                .iter()
                .enumerate()
                .map(|(e, &(a, b))| theta[e][x[a] * tree.cards[b] + x[b]])
                .sum::<f64>()
                .exp()
        };
        let mut joint01 = [0.0; 6];
        let mut z = 0.0;
        for x0 in 0..3 {
            for x1 in 0..2 {
                for x2 in 0..4 {
                    for x3 in 0..2 {
                        let w = weight([x0, x1, x2, x3]);
                        joint01[x0 * 2 + x1] += w;
                        z += w;
                    }
                }
            }
        }
        for (got, want) in p[0].iter().zip(joint01.iter().map(|w| w / z)) {
            assert!((got - want).abs() < 1e-12, "{got} against {want}");
        }
    }
}
