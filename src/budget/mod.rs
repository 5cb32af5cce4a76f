//! Privacy-budget accounting.
//!
//! Every computed release charges its method's (ε, δ) ([`Method::budget`]) to the
//! account of its source table, once, when it is computed (the first scan of any of
//! `anonymize`, `anonymize_metadata`, `anonymize_diagnostics` with those arguments).
//! Cached releases are served without a new charge, because they are not new draws. A
//! release that would take the table past `anonymize.epsilon_budget` or
//! `anonymize.delta_budget` fails before anything is drawn, naming the table, the spent and
//! the remaining budget. `privacy_budget()` lists every account.
//!
//! [`Method::budget`]: crate::method::Method::budget

pub mod account;
pub mod config;
pub mod ledger;
pub mod store;

use std::path::PathBuf;

use datafusion::common::config::ConfigOptions;
use datafusion::common::{DataFusionError, Result};

pub use account::Cost;
use account::Limits;
use ledger::Ledger;

/// A charge made for a release that is being computed. If the computation fails, nothing is
/// released and [`ReleaseCharge::refund`] takes the charge back.
#[derive(Debug)]
pub struct ReleaseCharge<'a> {
    ledger: &'a Ledger,
    table: String,
    cost: Cost,
    file: Option<PathBuf>,
}

/// Charges `cost` to the ledger account `account` (the source's table in its privacy
/// unit, [`crate::engine::AnonymizeRequest::account`]), under the limits and ledger file
/// set in `config`. A table has one unit: a charge in another unit than its earlier
/// releases is refused (see [`ledger::apply_charge`]).
pub fn charge_release<'a>(
    ledger: &'a Ledger,
    account: &str,
    cost: Cost,
    config: &ConfigOptions,
) -> Result<ReleaseCharge<'a>> {
    let options = config::options(config);
    let table = account.to_string();
    let limits = Limits {
        epsilon: options.epsilon_budget,
        delta: options.delta_budget,
    };
    ledger.charge(&table, cost, limits, options.ledger_path.as_deref())?;
    Ok(ReleaseCharge {
        ledger,
        table,
        cost,
        file: options.ledger_path,
    })
}

impl ReleaseCharge<'_> {
    /// Takes the charge back after the release failed with `error`; returns the error to
    /// report (with a note if the refund itself failed, in which case the charge stays).
    pub fn refund(self, error: DataFusionError) -> DataFusionError {
        match self
            .ledger
            .refund(&self.table, self.cost, self.file.as_deref())
        {
            Ok(()) => error,
            Err(refund_error) => error.context(format!(
                "the release failed and its privacy-budget charge to '{}' could not be taken back ({})",
                self.table,
                refund_error.strip_backtrace()
            )),
        }
    }
}
