//! `privacy_budget()`: what every source table has spent and has left; `privacy_quota()`:
//! what the asking user's own releases have spent of their quota.
//!
//! Both are read when the query runs (not when it is planned), from the ledger in effect
//! (the file named by `anonymize.ledger_path`, else this registration's memory) and the
//! limits currently set.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::{ArrayRef, Float64Array, RecordBatch, StringArray, UInt64Array};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::Result;
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::logical_expr::planner::RelationPlannerContext;
use datafusion::logical_expr::{Expr, TableType};
use datafusion::physical_plan::ExecutionPlan;

use crate::budget::account::{Account, Accounts};
use crate::budget::config::options;
use crate::budget::ledger::{unit_of, Ledger};
use crate::sql::args::{bind, CallArgs, ParamSpec};
use crate::sql::functions::anonymize::ReleaseCache;
use crate::sql::planner::SqlTableFunction;

/// Schema of `privacy_budget()`. Unlimited budgets and their remainders are `+inf`.
pub fn budget_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("table_name", DataType::Utf8, false),
        Field::new("releases", DataType::UInt64, false),
        Field::new("epsilon_spent", DataType::Float64, false),
        Field::new("epsilon_budget", DataType::Float64, false),
        Field::new("epsilon_remaining", DataType::Float64, false),
        Field::new("delta_spent", DataType::Float64, false),
        Field::new("delta_budget", DataType::Float64, false),
        Field::new("delta_remaining", DataType::Float64, false),
        Field::new("privacy_unit", DataType::Utf8, false),
    ]))
}

/// The columns every account view shares, over `accounts` in table-name order.
struct AccountColumns<'a>(&'a Accounts);

impl AccountColumns<'_> {
    /// The source table of each account.
    fn tables(&self) -> ArrayRef {
        Arc::new(StringArray::from_iter_values(
            self.0.keys().map(|k| unit_of(k).0),
        ))
    }

    /// The releases charged to each account.
    fn releases(&self) -> ArrayRef {
        Arc::new(UInt64Array::from_iter_values(
            self.0.values().map(|a| a.releases),
        ))
    }

    /// `f` of each account.
    fn f64s(&self, f: impl Fn(&Account) -> f64) -> ArrayRef {
        Arc::new(Float64Array::from_iter_values(self.0.values().map(f)))
    }

    /// The privacy unit of each account: 'row', or 'person <column>'.
    fn units(&self) -> ArrayRef {
        Arc::new(StringArray::from_iter_values(self.0.keys().map(
            |k| match unit_of(k).1 {
                None => "row".to_string(),
                Some(person) => format!("person {person}"),
            },
        )))
    }
}

/// What is left of `limit` after `spent`.
fn remaining(spent: f64, limit: f64) -> f64 {
    (limit - spent).max(0.0)
}

/// One row per account, in table-name order.
pub fn budget_batch(
    accounts: &Accounts,
    epsilon_budget: f64,
    delta_budget: f64,
) -> Result<RecordBatch> {
    let c = AccountColumns(accounts);
    let columns: Vec<ArrayRef> = vec![
        c.tables(),
        c.releases(),
        c.f64s(|a| a.epsilon_spent),
        c.f64s(|_| epsilon_budget),
        c.f64s(|a| remaining(a.epsilon_spent, epsilon_budget)),
        c.f64s(|a| a.delta_spent),
        c.f64s(|_| delta_budget),
        c.f64s(|a| remaining(a.delta_spent, delta_budget)),
        c.units(),
    ];
    Ok(RecordBatch::try_new(budget_schema(), columns)?)
}

/// `privacy_budget()`.
#[derive(Debug)]
pub struct PrivacyBudgetFunction {
    ledger: Arc<Ledger>,
}

impl PrivacyBudgetFunction {
    /// The function over the ledger releases are charged to.
    pub fn new(ledger: Arc<Ledger>) -> Self {
        Self { ledger }
    }
}

impl SqlTableFunction for PrivacyBudgetFunction {
    fn name(&self) -> &'static str {
        "privacy_budget"
    }

    fn params(&self) -> &'static [ParamSpec] {
        &[]
    }

    fn about(&self) -> &'static str {
        "Privacy budget per source table: releases charged, epsilon and delta spent, budget and remaining (inf = unlimited), and the privacy unit the table is accounted in ('row', or 'person <column>'). Set budgets with SET anonymize.epsilon_budget / anonymize.delta_budget."
    }

    fn create(
        &self,
        args: CallArgs,
        _context: &mut dyn RelationPlannerContext,
    ) -> Result<Arc<dyn TableProvider>> {
        bind(self.name(), &[], &[], args)?;
        Ok(Arc::new(AccountsTable::Budget(self.ledger.clone())))
    }
}

/// Schema of `privacy_quota()`.
pub fn quota_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("table_name", DataType::Utf8, false),
        Field::new("releases", DataType::UInt64, false),
        Field::new("epsilon_spent", DataType::Float64, false),
        Field::new("epsilon_quota", DataType::Float64, false),
        Field::new("epsilon_remaining", DataType::Float64, false),
        Field::new("privacy_unit", DataType::Utf8, false),
    ]))
}

/// One row per source account the user's releases were charged to, in table-name order.
fn quota_batch(quota: f64, accounts: &Accounts) -> Result<RecordBatch> {
    let c = AccountColumns(accounts);
    let columns: Vec<ArrayRef> = vec![
        c.tables(),
        c.releases(),
        c.f64s(|a| a.epsilon_spent),
        c.f64s(|_| quota),
        c.f64s(|a| remaining(a.epsilon_spent, quota)),
        c.units(),
    ];
    Ok(RecordBatch::try_new(quota_schema(), columns)?)
}

/// `privacy_quota()`.
#[derive(Debug)]
pub struct PrivacyQuotaFunction {
    cache: Arc<ReleaseCache>,
}

impl PrivacyQuotaFunction {
    /// The function over the quota of the user `cache`'s releases are made for.
    pub fn new(cache: Arc<ReleaseCache>) -> Self {
        Self { cache }
    }
}

impl SqlTableFunction for PrivacyQuotaFunction {
    fn name(&self) -> &'static str {
        "privacy_quota"
    }

    fn params(&self) -> &'static [ParamSpec] {
        &[]
    }

    fn about(&self) -> &'static str {
        "The asking user's own privacy quota (the most epsilon their releases may add to each source table's account, set per user by the host, e.g. dfanon-server's epsilon_quota): per source table their releases were charged to, the releases, epsilon spent, the quota and what remains. No rows for a user without a quota, or before their first charged release; a release another user already made costs nothing more."
    }

    fn create(
        &self,
        args: CallArgs,
        _context: &mut dyn RelationPlannerContext,
    ) -> Result<Arc<dyn TableProvider>> {
        bind(self.name(), &[], &[], args)?;
        Ok(Arc::new(AccountsTable::Quota(self.cache.clone())))
    }
}

/// The provider behind `privacy_budget()` and `privacy_quota()`: reads its ledger on every
/// scan.
#[derive(Debug)]
enum AccountsTable {
    /// Every source table's account in the ledger releases are charged to.
    Budget(Arc<Ledger>),
    /// The quota accounts of the user this registration's releases are made for.
    Quota(Arc<ReleaseCache>),
}

#[async_trait]
impl TableProvider for AccountsTable {
    fn schema(&self) -> SchemaRef {
        match self {
            AccountsTable::Budget(_) => budget_schema(),
            AccountsTable::Quota(_) => quota_schema(),
        }
    }

    fn table_type(&self) -> TableType {
        TableType::Temporary
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let settings = options(state.config_options());
        let ledger = settings.ledger_path.as_deref();
        let batches = match self {
            AccountsTable::Budget(accounts) => vec![budget_batch(
                &accounts.accounts(ledger)?,
                settings.epsilon_budget,
                settings.delta_budget,
            )?],
            AccountsTable::Quota(cache) => match cache.quota(ledger)? {
                Some((quota, accounts)) => vec![quota_batch(quota, &accounts)?],
                None => Vec::new(),
            },
        };
        MemorySourceConfig::try_new_exec(&[batches], self.schema(), projection.cloned())
            .map(|exec| exec as Arc<dyn ExecutionPlan>)
    }
}
