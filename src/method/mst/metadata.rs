//! MST's public metadata and owner-only diagnostics.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, Float64Array, RecordBatch, StringArray, UInt64Array};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::common::Result;

use super::budget::Split;
use super::params::MstParams;
use super::records::Records;
use super::Synthesis;
use crate::hierarchy::Hierarchy;
use crate::lattice::{node_label, Node};
use crate::mechanism::noise::ExactVariance;
use crate::method::levels::node_levels as describe;
use crate::sensitive::SensitiveDomain;

/// What one release drew and how close it came (owner-only diagnostics).
#[derive(Debug, Clone, PartialEq)]
pub struct MstStats {
    /// The node.
    pub node: Node,
    /// Records of the source (after persons' rows were bounded).
    pub true_records: u64,
    /// Synthetic rows released.
    pub released_rows: u64,
    /// The estimated number of records.
    pub records_estimate: f64,
    /// The tree's edges (attribute pairs).
    pub edges: Vec<(usize, usize)>,
    /// Each attribute's number of values after the domain compression.
    pub compressed_cards: Vec<usize>,
    /// ρ of the zCDP guarantee.
    pub rho: f64,
    /// Over every pair of attributes, the largest and the mean total variation distance
    /// (half the L1 distance) between the source's and the release's 2-way distributions.
    pub pair_distance_max: f64,
    /// See [`Self::pair_distance_max`].
    pub pair_distance_mean: f64,
}

impl MstStats {
    /// The figures of `synthesis`, drawn from `source`.
    pub fn new(source: &Records, synthesis: &Synthesis, node: Node) -> Self {
        let d = source.width();
        let (n, m) = (
            source.total().max(1) as f64,
            synthesis.records.total().max(1) as f64,
        );
        let mut distances = Vec::new();
        for a in 0..d {
            for b in a + 1..d {
                let x = source.marginal(&[a, b]);
                let y = synthesis.records.marginal(&[a, b]);
                let l1: f64 = x
                    .iter()
                    .zip(&y)
                    .map(|(&x, &y)| (x as f64 / n - y as f64 / m).abs())
                    .sum();
                distances.push(l1 / 2.0);
            }
        }
        let count = distances.len().max(1) as f64;
        Self {
            node,
            true_records: source.total(),
            released_rows: synthesis.records.total(),
            records_estimate: synthesis.total,
            edges: synthesis.edges.clone(),
            compressed_cards: synthesis.compressed_cards.clone(),
            rho: synthesis.rho,
            pair_distance_max: distances.iter().copied().fold(0.0, f64::max),
            pair_distance_mean: distances.iter().sum::<f64>() / count,
        }
    }
}

/// The model's attributes by name: the quasi-identifiers, then the informative column(s).
fn attribute_names(hierarchies: &[&Hierarchy], sensitive: &SensitiveDomain) -> Vec<String> {
    let mut names: Vec<String> = hierarchies
        .iter()
        .map(|h| h.attribute().to_string())
        .collect();
    if !sensitive.columns.is_empty() {
        names.push(
            sensitive
                .columns
                .iter()
                .map(|c| c.name.as_str())
                .collect::<Vec<_>>()
                .join("+"),
        );
    }
    names
}

fn tree_text(names: &[String], edges: &[(usize, usize)]) -> String {
    edges
        .iter()
        .map(|&(a, b)| format!("{}-{}", names[a], names[b]))
        .collect::<Vec<_>>()
        .join(", ")
}

fn domains_text(names: &[String], cards: &[usize]) -> String {
    names
        .iter()
        .zip(cards)
        .map(|(n, c)| format!("{n}={c}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The method's public metadata entries. `tree`, `compressed_domains` and
/// `records_estimate` are outputs of the mechanism (noisy); the others depend on the
/// arguments and the public domains only.
pub fn mst_metadata(
    params: &MstParams,
    hierarchies: &[&Hierarchy],
    stats: &MstStats,
    domain: Option<usize>,
    sensitive: &SensitiveDomain,
) -> Vec<(String, String)> {
    let names = attribute_names(hierarchies, sensitive);
    let d = names.len();
    let split = Split::new(stats.rho, d);
    let exact = |v: f64| ExactVariance::at_least(v).map_or(v, |e| e.as_f64());
    let (one_way, two_way) = (exact(split.one_way_variance), exact(split.two_way_variance));
    let (domain_text, domain_claim) = match (domain, sensitive.leaf_domain()) {
        (None, _) => (
            "none: the model is over the quasi-identifiers only".to_string(),
            "no informative column".to_string(),
        ),
        (Some(values), Some(hierarchy)) => (
            format!("the {values} leaves of hierarchy '{hierarchy}' (a public declaration)"),
            format!(
                "the informative domain is the {values} leaves of hierarchy '{hierarchy}', a public \
                 declaration, whatever the data hold"
            ),
        ),
        (Some(values), None) => (
            format!("{values} distinct values taken from the data"),
            format!(
                "the informative domain is the {values} distinct values of the informative column(s) \
                 found in the data: it is not protected (which values occur at all is disclosed \
                 exactly), and must be public knowledge for the guarantee to hold"
            ),
        ),
    };
    let guarantee = format!(
        "(epsilon, delta)-differential privacy with epsilon = {eps} and delta = {delta} (adding or \
         removing one record), for the synthetic rows and everything derived from them, on the \
         condition that the attributes' domains are public: the quasi-identifiers' labels at \
         levels '{levels}' of their hierarchies, and {domain_claim}. MST spends rho-zCDP with \
         rho = {rho}, the largest rho that gives (epsilon, delta)-DP by Bun & Steinke's \
         (2016) or Canonne, Kamath & Steinke's (2020) conversion: a third on the {d} 1-way marginals (exact discrete Gaussian noise of \
         variance {one_way} on every cell), a third on the tree ({edges} exponential mechanisms \
         of epsilon {edge_eps} each, scores of sensitivity 1), a third on the tree's {edges} \
         2-way marginals (variance {two_way}). The domain compression, the fit and the draw read \
         only these measurements. Released rows are synthetic: drawn from the fitted model, \
         not real records.",
        eps = params.epsilon,
        delta = params.delta,
        levels = describe(hierarchies, &stats.node),
        rho = stats.rho,
        edges = d.saturating_sub(1),
        edge_eps = split.edge_epsilon,
    );
    vec![
        ("epsilon".into(), params.epsilon.to_string()),
        ("delta".into(), params.delta.to_string()),
        ("rho".into(), stats.rho.to_string()),
        (
            "noise".into(),
            "exact discrete Gaussian on every cell of the measured marginals".into(),
        ),
        ("one_way_variance".into(), one_way.to_string()),
        ("two_way_variance".into(), two_way.to_string()),
        ("edge_epsilon".into(), split.edge_epsilon.to_string()),
        ("max_cells".into(), params.max_cells.to_string()),
        ("iterations".into(), params.iterations.to_string()),
        ("informative_domain".into(), domain_text),
        ("tree".into(), tree_text(&names, &stats.edges)),
        (
            "compressed_domains".into(),
            domains_text(&names, &stats.compressed_cards),
        ),
        (
            "records_estimate".into(),
            format!("{:.1}", stats.records_estimate),
        ),
        ("guarantee".into(), guarantee),
    ]
}

/// Schema of the method's diagnostics: one row.
pub fn mst_diagnostics_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("node", DataType::Utf8, false),
        Field::new("true_records", DataType::UInt64, false),
        Field::new("released_rows", DataType::UInt64, false),
        Field::new("tree", DataType::Utf8, false),
        Field::new("compressed_domains", DataType::Utf8, false),
        Field::new("pair_distance_max", DataType::Float64, false),
        Field::new("pair_distance_mean", DataType::Float64, false),
    ]))
}

/// The diagnostics batch.
pub fn mst_diagnostics_batch(
    hierarchies: &[&Hierarchy],
    sensitive: &SensitiveDomain,
    stats: &MstStats,
) -> Result<RecordBatch> {
    let names = attribute_names(hierarchies, sensitive);
    let u = |x: u64| Arc::new(UInt64Array::from(vec![x])) as ArrayRef;
    let f = |x: f64| Arc::new(Float64Array::from(vec![x])) as ArrayRef;
    let s = |x: String| Arc::new(StringArray::from(vec![x])) as ArrayRef;
    Ok(RecordBatch::try_new(
        mst_diagnostics_schema(),
        vec![
            s(node_label(&stats.node)),
            u(stats.true_records),
            u(stats.released_rows),
            s(tree_text(&names, &stats.edges)),
            s(domains_text(&names, &stats.compressed_cards)),
            f(stats.pair_distance_max),
            f(stats.pair_distance_mean),
        ],
    )?)
}
