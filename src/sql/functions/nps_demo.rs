//! `nps_demo(...)`: the embedded NPS-shaped demo table, and `nps_disease_hierarchy()`: its
//! disease codes.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use datafusion::arrow::array::RecordBatch;
use datafusion::catalog::{MemTable, TableProvider};
use datafusion::common::{plan_err, Result};
use datafusion::execution::SessionState;
use datafusion::logical_expr::planner::RelationPlannerContext;
use tokio::sync::OnceCell;

use crate::demo::nps::{generate_nps, nps_schema, NPS_DEFAULT_ROWS, NPS_DEFAULT_SEED};
use crate::params::{ParamDefault, ParamKind, ParamValues};
use crate::progress::Cancel;
use crate::sql::args::{bind, CallArgs, ParamSpec};
use crate::sql::planner::SqlTableFunction;
use crate::tables::lazy::{BatchProducer, BatchSource, LazyTable};

const NPS_PARAMS: &[ParamSpec] = &[
    ParamSpec::new(
        "rows",
        ParamKind::Integer,
        ParamDefault::Integer(NPS_DEFAULT_ROWS as u64),
        "number of rows: at most 100000000 for the data owner, 1361000 (the default) for public users",
    ),
    ParamSpec::new(
        "seed",
        ParamKind::Integer,
        ParamDefault::Integer(NPS_DEFAULT_SEED),
        "generator seed (the data are synthetic and deterministic)",
    ),
];

/// Largest demo table the data owner may make.
const MAX_DEMO_ROWS: u64 = 100_000_000;

/// Demo tables kept for later scans; making another forgets the oldest (a scan under way
/// keeps its own), so the memory they hold is bounded whatever the calls ask for.
const KEPT_DEMO_TABLES: usize = 2;

type DemoCell = Arc<OnceCell<Arc<Vec<RecordBatch>>>>;

/// The demo tables made, by `(rows, seed)`, and their keys from oldest to newest.
#[derive(Debug, Default)]
struct DemoCells {
    cells: HashMap<(u64, u64), DemoCell>,
    order: VecDeque<(u64, u64)>,
}

impl DemoCells {
    fn cell(&mut self, key: (u64, u64)) -> DemoCell {
        if let Some(cell) = self.cells.get(&key) {
            return cell.clone();
        }
        while self.order.len() >= KEPT_DEMO_TABLES {
            if let Some(oldest) = self.order.pop_front() {
                self.cells.remove(&oldest);
            }
        }
        self.order.push_back(key);
        self.cells.entry(key).or_default().clone()
    }
}

/// `nps_demo(rows, seed)`.
#[derive(Debug)]
pub struct NpsDemoFunction {
    cells: Mutex<DemoCells>,
    /// The most rows one call may ask for.
    max_rows: u64,
}

impl NpsDemoFunction {
    /// For the data owner: tables of up to 100,000,000 rows.
    pub fn for_owner() -> Self {
        Self::with_max_rows(MAX_DEMO_ROWS)
    }

    /// For public users: tables of at most the paper's size (1,361,000 rows), so that no
    /// call makes the server hold more than a few of those.
    pub fn for_public() -> Self {
        Self::with_max_rows(NPS_DEFAULT_ROWS as u64)
    }

    fn with_max_rows(max_rows: u64) -> Self {
        Self {
            cells: Mutex::default(),
            max_rows,
        }
    }
}

impl SqlTableFunction for NpsDemoFunction {
    fn name(&self) -> &'static str {
        "nps_demo"
    }
    fn params(&self) -> &'static [ParamSpec] {
        NPS_PARAMS
    }
    fn about(&self) -> &'static str {
        "Synthetic, deterministic NPS-shaped patient table (age, sex, los, surgery, location, disease) whose stroke counts and stays follow the IPA paper's Tables 9-12."
    }
    fn create(
        &self,
        args: CallArgs,
        _context: &mut dyn RelationPlannerContext,
    ) -> Result<Arc<dyn TableProvider>> {
        let bound = bind(self.name(), NPS_PARAMS, &["rows", "seed"], args)?;
        let values = ParamValues::parse(self.name(), "nps_demo", NPS_PARAMS, bound.values())?;
        let rows = values.u64("rows")?;
        if rows > self.max_rows {
            return plan_err!(
                "nps_demo(): rows must be at most {} in this session, got {rows}",
                self.max_rows
            );
        }
        let seed = values.u64("seed")?;
        let cell = match self.cells.lock() {
            Ok(mut c) => c.cell((rows, seed)),
            Err(p) => p.into_inner().cell((rows, seed)),
        };
        Ok(Arc::new(LazyTable::new(
            nps_schema(),
            Arc::new(NpsProducer { rows, seed, cell }),
        )))
    }
}

/// `nps_disease_hierarchy()`: the demo's disease codes and their groups, a public code
/// list for the `disease` column.
#[derive(Debug)]
pub struct NpsDiseaseHierarchyFunction;

impl SqlTableFunction for NpsDiseaseHierarchyFunction {
    fn name(&self) -> &'static str {
        "nps_disease_hierarchy"
    }
    fn params(&self) -> &'static [ParamSpec] {
        &[]
    }
    fn about(&self) -> &'static str {
        "The disease codes of nps_demo() as a hierarchy (value, level_1 = the code's group, level_2 = '*'): every code the demo data can hold, from the demo's compiled-in code table, so a public code list for its disease column."
    }
    fn create(
        &self,
        args: CallArgs,
        _context: &mut dyn RelationPlannerContext,
    ) -> Result<Arc<dyn TableProvider>> {
        bind(self.name(), &[], &[], args)?;
        let batch = crate::demo::nps::nps_disease_hierarchy()?;
        let table = MemTable::try_new(batch.schema(), vec![vec![batch]])?;
        Ok(Arc::new(table))
    }
}

#[derive(Debug)]
struct NpsProducer {
    rows: u64,
    seed: u64,
    cell: DemoCell,
}

#[async_trait]
impl BatchProducer for NpsProducer {
    async fn batches(&self, _state: &SessionState) -> Result<Arc<dyn BatchSource>> {
        let (rows, seed) = (self.rows as usize, self.seed);
        self.cell
            .get_or_try_init(|| async move {
                // Generation stops when the query is dropped (blocking tasks cannot be aborted).
                let cancel = Cancel::new();
                let _stop_when_dropped = cancel.on_drop();
                let batches = tokio::task::spawn_blocking(move || {
                    generate_nps(rows, seed, 65_536, &|| cancel.is_cancelled())
                })
                .await
                .map_err(|e| {
                    datafusion::error::DataFusionError::Execution(format!("nps_demo(): {e}"))
                })??;
                Ok(Arc::new(batches))
            })
            .await
            .map(|batches| batches.clone() as Arc<dyn BatchSource>)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_most_two_demo_tables_are_kept() {
        let mut cells = DemoCells::default();
        let first = cells.cell((10, 1));
        assert!(Arc::ptr_eq(&first, &cells.cell((10, 1))));
        cells.cell((10, 2));
        cells.cell((10, 3));
        assert_eq!(cells.cells.len(), 2);
        assert_eq!(cells.order, [(10, 2), (10, 3)]);
        // The oldest was forgotten: asking again makes a new one.
        assert!(!Arc::ptr_eq(&first, &cells.cell((10, 1))));
        assert_eq!(cells.order, [(10, 3), (10, 1)]);
    }
}
