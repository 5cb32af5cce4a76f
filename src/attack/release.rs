//! The attacks on a release of an [`AnonymizeRequest`]: which attacks (the plan, from
//! `anonymize_attack`'s arguments or the report's defaults), which columns they read (the
//! quasi-identifiers with their hierarchies, then the released sensitive columns), the
//! tables read, and the attacks run off the async runtime.

use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::catalog::TableProvider;
use datafusion::common::{exec_datafusion_err, plan_err, Result};
use datafusion::execution::SessionState;
use datafusion::prelude::SessionContext;

use super::order::in_value_order;
use super::{run, Attack, AttackedColumn, Mode, Outcome, OwnTables, Rows, Settings, Tables};
use crate::engine::{load_hierarchy, AnonymizeRequest, ReleaseOutput};
use crate::names::parse_list;
use crate::release::OwnRows;
use crate::session::local_state;

const NAME: &str = "anonymize_attack";

/// Every attack, by name.
pub const ATTACK_NAMES: &[&str] = &[
    "singling_out",
    "singling_out_univariate",
    "linkability",
    "inference",
    "record_linkage",
];

/// The attacks `attack => 'all'` runs (and record linkage, where the release's own rows
/// are known).
const ALL: &[&str] = &["singling_out", "linkability", "inference"];

/// What is known of which released row each source record became.
#[derive(Debug, Clone)]
pub enum Truth {
    /// Nothing: the method draws, adds or merges rows, or the table was named.
    Unknown,
    /// The release's own rows.
    Release(Arc<OwnRows>),
    /// The table attacked is the source itself: each record is its own row.
    Itself,
}

impl Truth {
    /// The own rows of `output`'s release.
    pub fn of(output: &ReleaseOutput) -> Self {
        match &output.own_rows {
            Some(own) => Truth::Release(own.clone()),
            None => Truth::Unknown,
        }
    }

    /// Whether the own rows are known.
    pub fn is_known(&self) -> bool {
        !matches!(self, Truth::Unknown)
    }
}

/// The attacks asked for, before the columns are known.
#[derive(Debug, Clone)]
pub struct AttackPlan {
    /// The attack names, comma-separated (`all` for the three).
    pub attacks: String,
    /// Columns per singling-out query.
    pub query_columns: usize,
    /// Linkability's two column sets, `a, b | c, d`.
    pub link_columns: Option<String>,
    /// Released rows per linkability search.
    pub neighbours: usize,
    /// Inference's secret column.
    pub secret: Option<String>,
    /// Inference's known columns, comma-separated.
    pub known: Option<String>,
    /// Attacks per type, seed and confidence.
    pub settings: Settings,
}

impl AttackPlan {
    /// The three attacks with anonymeter's defaults (500 attacks, 3 columns per query, one
    /// neighbour), seed 0, 95 % intervals.
    pub fn defaults() -> Self {
        Self {
            attacks: "all".into(),
            query_columns: 3,
            link_columns: None,
            neighbours: 1,
            secret: None,
            known: None,
            settings: Settings {
                attacks: 500,
                seed: 0,
                confidence: 0.95,
            },
        }
    }

    /// The attack names asked for, checked; `all` takes in record linkage when `linkage`.
    pub fn kinds(&self, linkage: bool) -> Result<Vec<String>> {
        let mut kinds = Vec::new();
        for name in names("attack", &self.attacks)? {
            let name = name.to_ascii_lowercase();
            if name == "all" {
                kinds.extend(ALL.iter().map(|s| s.to_string()));
                if linkage {
                    kinds.push("record_linkage".into());
                }
            } else if ATTACK_NAMES.contains(&name.as_str()) {
                kinds.push(name);
            } else {
                return plan_err!(
                    "{NAME}(): attack '{name}' is not one of {}, all",
                    ATTACK_NAMES.join(", ")
                );
            }
        }
        if kinds.is_empty() {
            return plan_err!("{NAME}(): attack names no attack");
        }
        let mut seen = std::collections::HashSet::new();
        kinds.retain(|k| seen.insert(k.clone()));
        Ok(kinds)
    }

    /// The attacks on the released columns `attacked`, of which the first `qi` are the
    /// quasi-identifiers; `all` takes in record linkage when `linkage`.
    fn attacks(
        &self,
        attacked: &[AttackedColumn],
        qi: usize,
        linkage: bool,
    ) -> Result<Vec<Attack>> {
        let all: Vec<String> = attacked.iter().map(|c| c.name.clone()).collect();
        self.kinds(linkage)?
            .into_iter()
            .map(|kind| match kind.as_str() {
                "record_linkage" => Ok(Attack::RecordLinkage {
                    columns: all[..qi.max(1).min(all.len())].to_vec(),
                }),
                "singling_out" | "singling_out_univariate" => Ok(Attack::SinglingOut {
                    mode: if kind == "singling_out" {
                        Mode::Multivariate
                    } else {
                        Mode::Univariate
                    },
                    columns: self.query_columns,
                }),
                "linkability" => {
                    let (first, second) = match &self.link_columns {
                        Some(text) => match text.split_once('|') {
                            Some((a, b)) => (names("link_columns", a)?, names("link_columns", b)?),
                            None => return plan_err!("{NAME}(): link_columns must name two sets of columns separated by '|', e.g. 'age, sex | zip'"),
                        },
                        None if qi >= 2 => {
                            let half = qi.div_ceil(2);
                            (all[..half].to_vec(), all[half..qi].to_vec())
                        }
                        None if all.len() >= 2 => (all[..1].to_vec(), all[1..].to_vec()),
                        None => {
                            return plan_err!(
                                "{NAME}(): linkability needs at least two released columns"
                            )
                        }
                    };
                    Ok(Attack::Linkability {
                        first,
                        second,
                        neighbours: self.neighbours,
                    })
                }
                _ => {
                    let secret = match &self.secret {
                        Some(s) => s.clone(),
                        None if attacked.len() > qi => all[qi].clone(),
                        None => match all.last() {
                            Some(last) => last.clone(),
                            None => return plan_err!("{NAME}(): inference needs a released column"),
                        },
                    };
                    let known = match &self.known {
                        Some(k) => names("known_columns", k)?,
                        None => all
                            .iter()
                            .filter(|c| !c.eq_ignore_ascii_case(&secret))
                            .cloned()
                            .collect(),
                    };
                    Ok(Attack::Inference { secret, known })
                }
            })
            .collect()
    }
}

/// The names of a list argument `param`, read with the quoting rules of every column list
/// (`crate::names`).
fn names(param: &str, list: &str) -> Result<Vec<String>> {
    Ok(parse_list(param, list, false)?
        .into_iter()
        .map(|item| item.column.text)
        .collect())
}

/// The columns `names` of `table`, read whole and put in value order (so that the seeded draws,
/// which pick rows by position, do not depend on the order the scan returns rows in);
/// `what` names the table in errors.
async fn read(
    local: &SessionContext,
    table: &Arc<dyn TableProvider>,
    names: &[String],
    what: &str,
) -> Result<Rows> {
    let schema = table.schema();
    for name in names {
        if schema.field_with_name(name).is_err() {
            return plan_err!("{NAME}(): {what} has no column '{name}' (a released column)");
        }
    }
    let columns: Vec<&str> = names.iter().map(String::as_str).collect();
    let frame = local.read_table(table.clone())?.select_columns(&columns)?;
    let schema: SchemaRef = Arc::new(frame.schema().as_arrow().clone());
    let batches = frame.collect().await?;
    let schema = batches.first().map_or(schema, RecordBatch::schema);
    in_value_order(&schema, &batches)
}

/// The columns the attacks read: the quasi-identifiers (with their hierarchies), then the
/// released sensitive columns (not pseudonyms); numeric when numeric in both tables.
async fn attacked_columns(
    local: &SessionContext,
    request: &AnonymizeRequest,
    released: &SchemaRef,
) -> Result<Vec<AttackedColumn>> {
    let source = request.source.schema();
    let numeric = |name: &str| {
        let is = |schema: &SchemaRef| {
            schema
                .field_with_name(name)
                .is_ok_and(|f| f.data_type().is_numeric())
        };
        is(released) && is(&source)
    };
    let mut attacked = Vec::new();
    for q in &request.qi {
        let hierarchy = match &q.hierarchy {
            Some(table) => Some(load_hierarchy(local, table, &q.column, &q.hierarchy_name).await?),
            None => None,
        };
        attacked.push(AttackedColumn {
            name: q.column.clone(),
            numeric: numeric(&q.column),
            hierarchy,
        });
    }
    for (column, _) in request.released_values() {
        attacked.push(AttackedColumn {
            numeric: numeric(&column),
            name: column,
            hierarchy: None,
        });
    }
    Ok(attacked)
}

/// The release's own rows as tables of the attacked columns: the first `qi` (the
/// quasi-identifiers) linked, the others NULL.
fn own_tables(own: &OwnRows, attacked: &[AttackedColumn], qi: usize) -> Result<OwnTables> {
    let names: Vec<String> = attacked[..qi].iter().map(|c| c.name.clone()).collect();
    let hierarchies: Vec<Option<&crate::hierarchy::Hierarchy>> = attacked[..qi]
        .iter()
        .map(|c| c.hierarchy.as_ref())
        .collect();
    let extra: Vec<(String, DataType)> = attacked[qi..]
        .iter()
        .map(|c| {
            let data_type = if c.numeric {
                DataType::Float64
            } else {
                DataType::Utf8
            };
            (c.name.clone(), data_type)
        })
        .collect();
    let (source, released) = own.batches(&names, &hierarchies, &extra)?;
    Ok(OwnTables {
        source: vec![source].into(),
        released: vec![released].into(),
        records: own.records.clone(),
    })
}

/// Runs `plan` on `release` (the request's release, or with `named` a table given in its
/// place) against the request's source, with `control` if given; record linkage scores
/// its links against `truth`.
pub async fn attack_release(
    request: &AnonymizeRequest,
    release: Arc<dyn TableProvider>,
    named: bool,
    control: Option<Arc<dyn TableProvider>>,
    truth: &Truth,
    plan: &AttackPlan,
    state: &SessionState,
) -> Result<Vec<Outcome>> {
    let local = SessionContext::new_with_state(local_state(state));
    let attacked = attacked_columns(&local, request, &release.schema()).await?;
    let attacks = plan.attacks(&attacked, request.qi.len(), truth.is_known())?;
    let names: Vec<String> = attacked.iter().map(|c| c.name.clone()).collect();
    let what = if named {
        "the table named by release"
    } else {
        "the release"
    };
    let source = read(&local, &request.source, &names, "the source").await?;
    let linking = attacks
        .iter()
        .any(|a| matches!(a, Attack::RecordLinkage { .. }));
    let own = match truth {
        _ if !linking => None,
        Truth::Unknown => None,
        Truth::Itself => Some(OwnTables {
            records: vec![1; source.row_count()],
            source: source.clone(),
            released: source.clone(),
        }),
        Truth::Release(own) => Some(own_tables(own, &attacked, request.qi.len())?),
    };
    let tables = Tables {
        release: read(&local, &release, &names, what).await?,
        source,
        control: match &control {
            Some(table) => Some(read(&local, table, &names, "the control table").await?),
            None => None,
        },
        own,
    };
    let settings = plan.settings;
    tokio::task::spawn_blocking(move || run(&attacked, &tables, &attacks, settings))
        .await
        .map_err(|e| exec_datafusion_err!("{NAME}(): the attacks stopped: {e}"))?
}
