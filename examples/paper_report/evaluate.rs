//! Drawing one release in a fresh session and evaluating it with the SQL evaluator of
//! `sql/paper_q1_q4.sql` and `anonymize_information_loss`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Float64Type};
use datafusion::catalog::TableProvider;
use datafusion::error::Result;
use datafusion::prelude::SessionContext;
use datafusion_anonymize::run_script;

use crate::PAPER_NODE;

const NPS_HIERARCHIES: &str = include_str!("../../sql/nps_hierarchies.sql");

const PAPER_SQL: &str = include_str!("../../sql/paper_q1_q4.sql");

/// The pre-generalized source for "IPA at the paper's node": labels of the paper's node, and
/// identity hierarchies (topped by the `*` every hierarchy needs, kept out of the lattice by
/// [`PAPER_NODE_MAX_LEVELS`]) so that every lattice node is that same partition.
const PAPER_NODE_SQL: &str = "
CREATE VIEW nps_node AS
  SELECT a.level_1 AS age, n.sex, l.level_1 AS los, n.surgery, c.level_1 AS location, n.disease
  FROM nps n
  JOIN nps_hierarchy_age a ON a.value = CAST(n.age AS VARCHAR)
  JOIN nps_hierarchy_los l ON l.value = CAST(n.los AS VARCHAR)
  JOIN nps_hierarchy_location c ON c.value = CAST(n.location AS VARCHAR);
CREATE VIEW nps_node_hierarchy_age AS SELECT DISTINCT age AS value, age AS level_1, '*' AS level_2 FROM nps_node;
CREATE VIEW nps_node_hierarchy_sex AS SELECT DISTINCT sex AS value, sex AS level_1, '*' AS level_2 FROM nps_node;
CREATE VIEW nps_node_hierarchy_los AS SELECT DISTINCT los AS value, los AS level_1, '*' AS level_2 FROM nps_node;
CREATE VIEW nps_node_hierarchy_surgery AS SELECT DISTINCT surgery AS value, surgery AS level_1, '*' AS level_2 FROM nps_node;
CREATE VIEW nps_node_hierarchy_location AS SELECT DISTINCT location AS value, location AS level_1, '*' AS level_2 FROM nps_node;
";

/// Bounds the lattice of the pre-generalized source to its identity levels.
pub(crate) const PAPER_NODE_MAX_LEVELS: &str = "age=1, sex=1, los=1, surgery=1, location=1";

/// One release to draw and evaluate.
#[derive(Debug, Clone)]
pub(crate) struct Spec {
    /// Method label in the report.
    pub(crate) method: &'static str,
    pub(crate) epsilon: Option<f64>,
    pub(crate) run: usize,
    pub(crate) source: &'static str,
    pub(crate) args: String,
}

impl Spec {
    fn id(&self) -> String {
        format!("{}|{}|{}", self.method, eps_label(self.epsilon), self.run)
    }
}

/// Scores of one IPA lattice node.
#[derive(Debug, Clone)]
pub(crate) struct NodeScore {
    pub(crate) node: String,
    pub(crate) ncp: f64,
    pub(crate) emd: f64,
    pub(crate) rate: f64,
    pub(crate) chosen: bool,
}

/// What one release gave.
#[derive(Debug, Clone)]
pub(crate) struct Outcome {
    pub(crate) spec: Spec,
    /// (query, age group) -> (original, estimate).
    pub(crate) compare: BTreeMap<(String, i64), (f64, f64)>,
    pub(crate) errors: BTreeMap<String, f64>,
    /// (NCP, EMD, Rate).
    pub(crate) il: Option<(f64, f64, f64)>,
    pub(crate) levels: String,
    pub(crate) nodes: Vec<NodeScore>,
    pub(crate) seconds: f64,
}

pub(crate) fn eps_label(e: Option<f64>) -> String {
    e.map_or_else(|| "none".to_string(), |e| format!("{e}"))
}

/// The evaluator section of `sql/paper_q1_q4.sql`.
pub(crate) fn evaluator_sql() -> String {
    let begin = PAPER_SQL.find("-- @evaluator begin");
    let end = PAPER_SQL.find("-- @evaluator end");
    match (begin, end) {
        (Some(b), Some(e)) if b < e => PAPER_SQL[b..e].to_string(),
        _ => panic!("sql/paper_q1_q4.sql lost its '-- @evaluator begin/end' markers"),
    }
}

pub(crate) async fn query(ctx: &SessionContext, sql: &str) -> Result<Vec<RecordBatch>> {
    ctx.sql(sql).await?.collect().await
}

pub(crate) fn strings(batches: &[RecordBatch], column: usize) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for b in batches {
        let a = cast(b.column(column), &DataType::Utf8)?;
        let s = a.as_string::<i32>();
        out.extend((0..s.len()).map(|i| {
            if s.is_null(i) {
                String::new()
            } else {
                s.value(i).to_string()
            }
        }));
    }
    Ok(out)
}

pub(crate) fn floats(batches: &[RecordBatch], column: usize) -> Result<Vec<f64>> {
    let mut out = Vec::new();
    for b in batches {
        let a = cast(b.column(column), &DataType::Float64)?;
        let f = a.as_primitive::<Float64Type>();
        out.extend((0..f.len()).map(|i| if f.is_null(i) { f64::NAN } else { f.value(i) }));
    }
    Ok(out)
}

pub(crate) async fn evaluate(
    nps: Arc<dyn TableProvider>,
    spec: &Spec,
    evaluator: &str,
) -> Result<Outcome> {
    let ctx = SessionContext::new();
    datafusion_anonymize::register_with(&ctx, datafusion_anonymize::RegisterOptions::owner())?;
    ctx.register_table("nps", nps)?;
    run_script(&ctx, NPS_HIERARCHIES).await?;
    if spec.source == "nps_node" {
        run_script(&ctx, PAPER_NODE_SQL).await?;
    }
    let start = Instant::now();
    let call = format!("'{}', {}", spec.source, spec.args);
    ctx.sql(&format!(
        "CREATE TABLE releases AS SELECT '{}' AS release, * FROM anonymize({call}) WHERE disease LIKE 'I6%'",
        spec.id()
    ))
    .await?
    .collect()
    .await?;
    let seconds = start.elapsed().as_secs_f64();
    // The interval means the release publishes (IPA by default, metadata `epsilon_means`
    // above 0); none for the rest, which the evaluator reads by midpoints.
    let rows = query(
        &ctx,
        &format!("SELECT value FROM anonymize_metadata({call}) WHERE key = 'epsilon_means'"),
    )
    .await?;
    let publishes_means = strings(&rows, 0)?
        .first()
        .and_then(|v| v.parse::<f64>().ok())
        .is_some_and(|e| e > 0.0);
    let means = if publishes_means {
        format!(
            "CREATE TABLE release_means AS SELECT '{}' AS release, column_name, label, mean FROM anonymize_interval_means({call})",
            spec.id()
        )
    } else {
        "CREATE TABLE release_means(release VARCHAR, column_name VARCHAR, label VARCHAR, mean DOUBLE)"
            .to_string()
    };
    query(&ctx, &means).await?;
    run_script(&ctx, evaluator).await?;

    let rows = query(
        &ctx,
        "SELECT query, age_group, original, estimate FROM paper_compare",
    )
    .await?;
    let (q, g, o, e) = (
        strings(&rows, 0)?,
        floats(&rows, 1)?,
        floats(&rows, 2)?,
        floats(&rows, 3)?,
    );
    let compare = (0..q.len())
        .map(|i| ((q[i].clone(), g[i] as i64), (o[i], e[i])))
        .collect();
    let rows = query(&ctx, "SELECT query, rel_l1 FROM paper_error").await?;
    let (q, x) = (strings(&rows, 0)?, floats(&rows, 1)?);
    let errors = q.into_iter().zip(x).collect();

    let il = if spec.source == "nps" {
        let rows = query(
            &ctx,
            &format!("SELECT ncp, emd, rate FROM anonymize_information_loss({call})"),
        )
        .await?;
        Some((
            floats(&rows, 0)?[0],
            floats(&rows, 1)?[0],
            floats(&rows, 2)?[0],
        ))
    } else {
        None
    };
    let rows = query(
        &ctx,
        &format!("SELECT value FROM anonymize_metadata({call}) WHERE key = 'levels'"),
    )
    .await?;
    let levels = if spec.source == "nps_node" {
        format!("{PAPER_NODE} (pre-generalized)")
    } else {
        strings(&rows, 0)?.pop().unwrap_or_default()
    };
    let nodes = if spec.method.starts_with("ipa") && spec.source == "nps" {
        let rows = query(
            &ctx,
            &format!("SELECT node, ncp, emd, rate, CAST(chosen AS VARCHAR) FROM anonymize_diagnostics({call})"),
        )
        .await?;
        let (n, c, e, r, ch) = (
            strings(&rows, 0)?,
            floats(&rows, 1)?,
            floats(&rows, 2)?,
            floats(&rows, 3)?,
            strings(&rows, 4)?,
        );
        (0..n.len())
            .map(|i| NodeScore {
                node: n[i].clone(),
                ncp: c[i],
                emd: e[i],
                rate: r[i],
                chosen: ch[i] == "true",
            })
            .collect()
    } else {
        Vec::new()
    };
    Ok(Outcome {
        spec: spec.clone(),
        compare,
        errors,
        il,
        levels,
        nodes,
        seconds,
    })
}
