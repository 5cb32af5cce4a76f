//! `nps_demo(...)`: the embedded NPS-shaped demo table.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use datafusion::arrow::array::RecordBatch;
use datafusion::catalog::TableProvider;
use datafusion::common::{plan_err, Result};
use datafusion::execution::SessionState;
use datafusion::logical_expr::planner::RelationPlannerContext;
use tokio::sync::OnceCell;

use crate::demo::nps::{generate_nps, nps_schema, NPS_DEFAULT_ROWS, NPS_DEFAULT_SEED};
use crate::params::{ParamDefault, ParamKind, ParamValues};
use crate::sql::args::{bind, CallArgs, ParamSpec};
use crate::sql::lazy::{BatchProducer, BatchSource, LazyTable};
use crate::sql::planner::SqlTableFunction;

const NPS_PARAMS: &[ParamSpec] = &[
    ParamSpec::new(
        "rows",
        ParamKind::Integer,
        ParamDefault::Integer(NPS_DEFAULT_ROWS as u64),
        "number of rows",
    ),
    ParamSpec::new(
        "seed",
        ParamKind::Integer,
        ParamDefault::Integer(NPS_DEFAULT_SEED),
        "generator seed (the data are synthetic and deterministic)",
    ),
];

/// Largest demo table.
const MAX_DEMO_ROWS: u64 = 100_000_000;

type DemoCells = Mutex<HashMap<(u64, u64), Arc<OnceCell<Arc<Vec<RecordBatch>>>>>>;

/// `nps_demo(rows, seed)`.
#[derive(Debug, Default)]
pub struct NpsDemoFunction {
    cells: DemoCells,
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
        if rows > MAX_DEMO_ROWS {
            return plan_err!("nps_demo(): rows must be at most {MAX_DEMO_ROWS}, got {rows}");
        }
        let seed = values.u64("seed")?;
        let cell = {
            let mut cells = match self.cells.lock() {
                Ok(c) => c,
                Err(p) => p.into_inner(),
            };
            cells.entry((rows, seed)).or_default().clone()
        };
        Ok(Arc::new(LazyTable::new(
            nps_schema(),
            Arc::new(NpsProducer { rows, seed, cell }),
        )))
    }
}

#[derive(Debug)]
struct NpsProducer {
    rows: u64,
    seed: u64,
    cell: Arc<OnceCell<Arc<Vec<RecordBatch>>>>,
}

#[async_trait]
impl BatchProducer for NpsProducer {
    async fn batches(&self, _state: &SessionState) -> Result<Arc<dyn BatchSource>> {
        let (rows, seed) = (self.rows as usize, self.seed);
        self.cell
            .get_or_try_init(|| async move {
                let batches = tokio::task::spawn_blocking(move || generate_nps(rows, seed, 65_536))
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
