//! The user's tables as the package's engine sees them: every table of the Python
//! `SessionContext`, read through the Arrow C stream interface, beside the tables and views
//! made with `dfanon.sql`.
//!
//! A release is cached by the identity of its source table (and drawn again when that
//! table changes), but a Python table has no identity we can see from here: each lookup
//! through datafusion-python gives a new object. So each Python table is one
//! [`PythonTable`] here, kept while its contents stay the same. Every scan that reads a
//! table to its end records a fingerprint of what it read (per set of columns); at the
//! start of each request ([`PythonTables::new_request`]) the first lookup of a table reads
//! those columns again, and a different fingerprint (or a different schema) makes a new
//! [`PythonTable`], so releases of the old contents are not served for the new ones. A
//! table never read to its end has no release to protect and is not read again.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use datafusion::arrow::array::RecordBatchOptions;
use datafusion::arrow::datatypes::{Schema, SchemaRef};
use datafusion::arrow::ffi::FFI_ArrowSchema;
use datafusion::arrow::ffi_stream::{ArrowArrayStreamReader, FFI_ArrowArrayStream};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::memory::MemorySchemaProvider;
use datafusion::catalog::{SchemaProvider, Session, TableProvider};
use datafusion::common::hash_utils::{create_hashes, RandomState};
use datafusion::common::{exec_err, DataFusionError, Result};
use datafusion::datasource::TableType;
use datafusion::logical_expr::Expr;
use datafusion::physical_plan::ExecutionPlan;
use futures::SinkExt;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

use crate::channel::{ChannelExec, Producer, Sender};

/// The user's Python `SessionContext`, held weakly (a `weakref.ref`): the registration
/// must not keep the user's context alive.
#[derive(Clone)]
pub struct PythonContext(Arc<Py<PyAny>>);

impl PythonContext {
    /// Wraps `weak`, a `weakref.ref` to a `datafusion.SessionContext`.
    pub fn new(weak: Py<PyAny>) -> Self {
        Self(Arc::new(weak))
    }

    /// The context, while it exists.
    pub fn get<'py>(&self, py: Python<'py>) -> Result<Bound<'py, PyAny>> {
        let ctx = self.0.bind(py).call0().map_err(python_error)?;
        if ctx.is_none() {
            return exec_err!("dfanon: the SessionContext this registration belongs to is gone");
        }
        Ok(ctx)
    }
}

impl fmt::Debug for PythonContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PythonContext")
    }
}

/// A Python exception as a DataFusion error (its text only).
pub fn python_error(e: PyErr) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

/// The engine's default schema: its own tables and views first, then the Python tables.
#[derive(Debug)]
pub struct PythonTables {
    ctx: PythonContext,
    local: MemorySchemaProvider,
    known: Mutex<HashMap<String, Known>>,
    request: AtomicU64,
}

#[derive(Debug)]
struct Known {
    table: Arc<PythonTable>,
    /// The request in which the contents were last compared.
    checked: u64,
}

impl PythonTables {
    /// The tables of `ctx`.
    pub fn new(ctx: PythonContext) -> Self {
        Self {
            ctx,
            local: MemorySchemaProvider::new(),
            known: Mutex::new(HashMap::new()),
            request: AtomicU64::new(1),
        }
    }

    /// Starts a request: the next lookup of each table compares its contents again.
    pub fn new_request(&self) {
        self.request.fetch_add(1, Ordering::SeqCst);
    }

    /// The schema of the Python table `name`, `None` when there is none.
    fn python_schema(&self, name: &str) -> Result<Option<SchemaRef>> {
        Python::attach(|py| {
            let ctx = self.ctx.get(py)?;
            let exists: bool = ctx
                .call_method1("table_exist", (name,))
                .and_then(|v| v.extract())
                .map_err(python_error)?;
            if !exists {
                return Ok(None);
            }
            let schema = ctx
                .call_method1("table", (name,))
                .and_then(|df| df.call_method0("schema"))
                .map_err(python_error)?;
            Ok(Some(Arc::new(schema_from_python(&schema)?)))
        })
    }

    fn python_table(&self, name: &str) -> Result<Option<Arc<dyn TableProvider>>> {
        let Some(schema) = self.python_schema(name)? else {
            return Ok(None);
        };
        let request = self.request.load(Ordering::SeqCst);
        let known = self
            .known
            .lock()
            .map_err(|_| DataFusionError::Internal("dfanon: table list poisoned".into()))?
            .get(name)
            .map(|k| (k.table.clone(), k.checked));
        let table = match known {
            Some((table, checked)) if checked == request => table,
            Some((table, _)) if table.schema == schema && table.unchanged()? => table,
            _ => Arc::new(PythonTable::new(name, schema, self.ctx.clone())),
        };
        if let Ok(mut known) = self.known.lock() {
            known.insert(
                name.to_string(),
                Known {
                    table: table.clone(),
                    checked: request,
                },
            );
        }
        Ok(Some(table))
    }
}

#[async_trait]
impl SchemaProvider for PythonTables {
    fn table_names(&self) -> Vec<String> {
        let mut names = self.local.table_names();
        let python: Vec<String> = Python::attach(|py| {
            self.ctx
                .get(py)
                .ok()
                .and_then(|ctx| {
                    ctx.call_method0("catalog")
                        .and_then(|c| c.call_method0("schema"))
                        .and_then(|s| s.call_method0("names"))
                        .and_then(|n| n.extract::<Vec<String>>())
                        .ok()
                })
                .unwrap_or_default()
        });
        for name in python {
            if !names.contains(&name) {
                names.push(name);
            }
        }
        names.sort();
        names
    }

    async fn table(&self, name: &str) -> Result<Option<Arc<dyn TableProvider>>> {
        if let Some(table) = self.local.table(name).await? {
            return Ok(Some(table));
        }
        self.python_table(name)
    }

    fn register_table(
        &self,
        name: String,
        table: Arc<dyn TableProvider>,
    ) -> Result<Option<Arc<dyn TableProvider>>> {
        self.local.register_table(name, table)
    }

    fn deregister_table(&self, name: &str) -> Result<Option<Arc<dyn TableProvider>>> {
        self.local.deregister_table(name)
    }

    fn table_exist(&self, name: &str) -> bool {
        self.local.table_exist(name) || matches!(self.python_schema(name), Ok(Some(_)))
    }
}

/// The arrow schema of a pyarrow schema (any object with `__arrow_c_schema__`).
pub fn schema_from_python(schema: &Bound<'_, PyAny>) -> Result<Schema> {
    let capsule = schema
        .call_method0("__arrow_c_schema__")
        .map_err(python_error)?;
    let capsule = capsule
        .cast::<PyCapsule>()
        .map_err(|e| python_error(e.into()))?;
    let pointer = capsule
        .pointer_checked(Some(c"arrow_schema"))
        .map_err(python_error)?;
    // SAFETY: a capsule named "arrow_schema" holds an FFI_ArrowSchema (Arrow's PyCapsule
    // interface); it is only read here, while the capsule is alive.
    let ffi = unsafe { pointer.cast::<FFI_ArrowSchema>().as_ref() };
    Ok(Schema::try_from(ffi)?)
}

/// One Python table with the contents it had when first looked up.
#[derive(Debug)]
pub struct PythonTable {
    source: Arc<Source>,
    schema: SchemaRef,
}

#[derive(Debug)]
struct Source {
    name: String,
    ctx: PythonContext,
    /// Fingerprints of complete reads, by the columns read.
    read: Mutex<HashMap<Vec<usize>, Fingerprint>>,
}

impl PythonTable {
    fn new(name: &str, schema: SchemaRef, ctx: PythonContext) -> Self {
        Self {
            source: Arc::new(Source {
                name: name.to_string(),
                ctx,
                read: Mutex::new(HashMap::new()),
            }),
            schema,
        }
    }

    /// Whether every set of columns read to its end before reads the same again.
    fn unchanged(&self) -> Result<bool> {
        let read: Vec<(Vec<usize>, Fingerprint)> = match self.source.read.lock() {
            Ok(read) => read.iter().map(|(k, v)| (k.clone(), *v)).collect(),
            Err(_) => return Ok(false),
        };
        for (columns, before) in read {
            let schema = Arc::new(self.schema.project(&columns)?);
            let mut now = Fingerprint::default();
            let reader = self.source.open(&schema)?;
            for batch in reader {
                now.add(&batch?)?;
            }
            if now != before {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

impl Source {
    /// A reader of the columns of `schema` (a projection of the table's), batch by batch.
    /// Reading it calls into Python (datafusion-python takes the GIL for each batch), so it
    /// is read on a thread of its own or a blocking one.
    fn open(&self, schema: &SchemaRef) -> Result<impl Iterator<Item = Result<RecordBatch>>> {
        let names: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
        let reader = Python::attach(|py| -> Result<ArrowArrayStreamReader> {
            let ctx = self.ctx.get(py)?;
            let mut df = ctx
                .call_method1("table", (self.name.as_str(),))
                .map_err(python_error)?;
            // With no column asked for (COUNT(*)), the first column gives the row counts.
            let selected: Vec<String> = if names.is_empty() {
                let all = df
                    .call_method0("schema")
                    .and_then(|s| s.getattr("names"))
                    .and_then(|n| n.extract::<Vec<String>>())
                    .map_err(python_error)?;
                all.into_iter().take(1).collect()
            } else {
                names.clone()
            };
            if !selected.is_empty() {
                df = df
                    .call_method1(
                        "select",
                        pyo3::types::PyTuple::new(py, &selected).map_err(python_error)?,
                    )
                    .map_err(python_error)?;
            }
            let capsule = df
                .call_method0("__arrow_c_stream__")
                .map_err(python_error)?;
            let capsule = capsule
                .cast::<PyCapsule>()
                .map_err(|e| python_error(e.into()))?;
            let pointer = capsule
                .pointer_checked(Some(c"arrow_array_stream"))
                .map_err(python_error)?;
            // SAFETY: a capsule named "arrow_array_stream" holds an FFI_ArrowArrayStream;
            // `from_raw` moves it out and leaves a released one, which the capsule's
            // destructor may drop.
            let stream = unsafe { FFI_ArrowArrayStream::from_raw(pointer.cast().as_ptr()) };
            Ok(ArrowArrayStreamReader::try_new(stream)?)
        })?;
        let schema = schema.clone();
        Ok(reader.map(move |batch| {
            let batch = batch?;
            let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
            let columns = if schema.fields().is_empty() {
                vec![]
            } else {
                batch.columns().to_vec()
            };
            Ok(RecordBatch::try_new_with_options(
                schema.clone(),
                columns,
                &options,
            )?)
        }))
    }

    fn record(&self, columns: Vec<usize>, fingerprint: Fingerprint) {
        if let Ok(mut read) = self.read.lock() {
            read.insert(columns, fingerprint);
        }
    }
}

/// What a read saw: its rows as a multiset (the sum of the rows' hashes) and their number.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Fingerprint {
    rows: u64,
    sum: u64,
}

impl Fingerprint {
    fn add(&mut self, batch: &RecordBatch) -> Result<()> {
        self.rows += batch.num_rows() as u64;
        if batch.num_columns() == 0 {
            return Ok(());
        }
        let mut hashes = vec![0u64; batch.num_rows()];
        create_hashes(
            batch.columns(),
            &RandomState::with_seed(0x6466_616e_6f6e),
            &mut hashes,
        )?;
        for h in hashes {
            // Mixed before summing, so that equal-sum rearrangements of hashes are unlikely.
            self.sum = self
                .sum
                .wrapping_add(h.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(29) ^ h);
        }
        Ok(())
    }
}

#[async_trait]
impl TableProvider for PythonTable {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let columns: Vec<usize> = match projection {
            Some(p) => p.clone(),
            None => (0..self.schema.fields().len()).collect(),
        };
        let schema = Arc::new(self.schema.project(&columns)?);
        Ok(Arc::new(ChannelExec::new(
            schema.clone(),
            Arc::new(PythonRead {
                source: self.source.clone(),
                schema,
                columns,
                limit,
            }),
        )))
    }
}

/// Reads a Python table's columns on a thread of its own.
#[derive(Debug)]
struct PythonRead {
    source: Arc<Source>,
    schema: SchemaRef,
    columns: Vec<usize>,
    limit: Option<usize>,
}

impl Producer for PythonRead {
    fn name(&self) -> &str {
        "PythonScanExec"
    }

    fn start(&self, mut tx: Sender) -> Result<()> {
        let source = self.source.clone();
        let schema = self.schema.clone();
        let columns = self.columns.clone();
        let limit = self.limit;
        std::thread::Builder::new()
            .name("dfanon-read".into())
            .spawn(move || {
                let reader = match source.open(&schema) {
                    Ok(reader) => reader,
                    Err(e) => {
                        let _ = futures::executor::block_on(tx.send(Err(e)));
                        return;
                    }
                };
                let mut fingerprint = Fingerprint::default();
                let mut sent = 0usize;
                for batch in reader {
                    let batch = batch.and_then(|b| fingerprint.add(&b).map(|_| b));
                    let failed = batch.is_err();
                    sent += batch.as_ref().map(|b| b.num_rows()).unwrap_or(0);
                    if futures::executor::block_on(tx.send(batch)).is_err() || failed {
                        return;
                    }
                    if limit.is_some_and(|l| sent >= l) {
                        return;
                    }
                }
                if limit.is_none() {
                    source.record(columns, fingerprint);
                }
            })
            .map_err(|e| {
                DataFusionError::Execution(format!("dfanon: cannot start a reader: {e}"))
            })?;
        Ok(())
    }
}
