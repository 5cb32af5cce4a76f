//! Runs every `tests/slt/*.slt` file (sqllogictest format) against a fresh
//! `SessionContext` with the anonymization functions registered: for the data owner,
//! except files named `public_*.slt`, which see a session for public users. Their owner's
//! setup is the file beside them named `<name>.init.sql`, run with the owner's rights
//! first, as `dfanon --public --init` does; its `-- public-policy: JSON` line is the
//! release policy (`PublicPolicy` as JSON, what the Python package sends) and its
//! `-- epsilon-budget: E` line the budget. Run from the crate root (cargo does
//! this), so paths like `tests/data/adult/...` resolve.

use std::path::PathBuf;

use async_trait::async_trait;
use datafusion::arrow::datatypes::DataType;
use datafusion::arrow::util::display::array_value_to_string;
use datafusion::error::DataFusionError;
use datafusion::prelude::SessionContext;
use sqllogictest::harness::{run, Arguments, Failed, Trial};
use sqllogictest::{AsyncDB, DBOutput, DefaultColumnType, Runner};

struct Db {
    ctx: SessionContext,
}

#[derive(Debug)]
struct DbError(String);

impl std::fmt::Display for DbError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for DbError {}

impl From<DataFusionError> for DbError {
    fn from(e: DataFusionError) -> Self {
        DbError(e.strip_backtrace())
    }
}

fn is_query(sql: &str) -> bool {
    let head = sql.trim_start().to_ascii_lowercase();
    [
        "select", "with", "values", "explain", "show", "describe", "(",
    ]
    .iter()
    .any(|k| head.starts_with(k))
}

#[async_trait]
impl AsyncDB for Db {
    type Error = DbError;
    type ColumnType = DefaultColumnType;

    async fn run(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>, DbError> {
        let batches = self.ctx.sql(sql).await?.collect().await?;
        if !is_query(sql) {
            return Ok(DBOutput::StatementComplete(0));
        }
        let mut types = Vec::new();
        let mut rows = Vec::new();
        if let Some(first) = batches.first() {
            types = first
                .schema()
                .fields()
                .iter()
                .map(|f| match f.data_type() {
                    DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64 => {
                        DefaultColumnType::Integer
                    }
                    DataType::UInt8 | DataType::UInt16 | DataType::UInt32 | DataType::UInt64 => {
                        DefaultColumnType::Integer
                    }
                    DataType::Float32 | DataType::Float64 | DataType::Decimal128(_, _) => {
                        DefaultColumnType::FloatingPoint
                    }
                    _ => DefaultColumnType::Text,
                })
                .collect();
        }
        for batch in &batches {
            for row in 0..batch.num_rows() {
                let mut cells = Vec::with_capacity(batch.num_columns());
                for column in batch.columns() {
                    let cell = if column.is_null(row) {
                        "NULL".to_string()
                    } else {
                        let text =
                            array_value_to_string(column, row).map_err(DataFusionError::from)?;
                        if text.is_empty() {
                            "(empty)".to_string()
                        } else {
                            text
                        }
                    };
                    cells.push(cell);
                }
                rows.push(cells);
            }
        }
        Ok(DBOutput::Rows { types, rows })
    }

    async fn shutdown(&mut self) {}

    fn engine_name(&self) -> &str {
        "datafusion-anonymize"
    }
}

fn run_file(path: PathBuf) -> Result<(), Failed> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Failed::from(e.to_string()))?;
    let public = path
        .file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with("public_"));
    let init = path.with_extension("init.sql");
    runtime.block_on(async move {
        let mut runner = Runner::new(|| {
            let init = init.clone();
            async move {
                let ctx = SessionContext::new();
                let owner = datafusion_anonymize::RegisterOptions::owner();
                datafusion_anonymize::register_with(&ctx, owner).map_err(DbError::from)?;
                if !public {
                    return Ok(Db { ctx });
                }
                let setup = std::fs::read_to_string(&init)
                    .map_err(|e| DbError(format!("{}: {e}", init.display())))?;
                datafusion_anonymize::run_script(&ctx, &setup).await?;
                let options = public_options(&setup)?;
                let ctx = datafusion_anonymize::public_session(&ctx, options)?;
                Ok(Db { ctx })
            }
        });
        runner.with_column_validator(|_, _| true);
        runner
            .run_file_async(&path)
            .await
            .map_err(|e| Failed::from(format!("{}", e.display(true))))
    })
}

/// The public policy an init file declares in its `-- key: value` lines.
fn public_options(setup: &str) -> Result<datafusion_anonymize::RegisterOptions, DbError> {
    let mut policy = datafusion_anonymize::PublicPolicy::default();
    let mut epsilon_budget = f64::INFINITY;
    for line in setup.lines() {
        let Some((key, value)) = line
            .strip_prefix("-- ")
            .and_then(|rest| rest.split_once(": "))
        else {
            continue;
        };
        let bad = |e: &dyn std::fmt::Display| DbError(format!("init line '{line}': {e}"));
        match key {
            "public-policy" => {
                policy =
                    datafusion_anonymize::PublicPolicy::from_json(value).map_err(|e| bad(&e))?
            }
            "epsilon-budget" => epsilon_budget = value.parse().map_err(|e| bad(&e))?,
            _ => {}
        }
    }
    Ok(datafusion_anonymize::RegisterOptions::public(
        policy,
        epsilon_budget,
    ))
}

fn main() {
    let args = Arguments::from_args();
    let mut files: Vec<PathBuf> = std::fs::read_dir("tests/slt")
        .map(|dir| {
            dir.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "slt"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    assert!(!files.is_empty(), "no .slt files under tests/slt");
    let trials = files
        .into_iter()
        .map(|path| {
            let name = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            Trial::test(name, move || run_file(path))
        })
        .collect();
    run(&args, trials).exit();
}
