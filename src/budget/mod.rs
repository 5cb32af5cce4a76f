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

/// A charge to one ledger account for a release that is being computed: to a source
/// table's account ([`charge_release`]) or to a user's quota account. If the computation
/// fails, nothing is released and [`Charge::refund`] takes the charge back.
#[derive(Debug)]
pub struct Charge<'a> {
    ledger: &'a Ledger,
    account: String,
    cost: Cost,
    file: Option<PathBuf>,
}

/// The charge of a release to its source table's account.
pub type ReleaseCharge<'a> = Charge<'a>;

impl<'a> Charge<'a> {
    /// Charges `cost` to `account` of `ledger` under `limits`, in the ledger file `file` if
    /// given; refused (nothing charged) if it would pass a limit.
    pub fn take(
        ledger: &'a Ledger,
        account: &str,
        cost: Cost,
        limits: Limits,
        file: Option<PathBuf>,
    ) -> Result<Self> {
        ledger.charge(account, cost, limits, file.as_deref())?;
        Ok(Self {
            ledger,
            account: account.to_string(),
            cost,
            file,
        })
    }

    /// Takes the charge back after the release failed with `error`; returns the error to
    /// report (with a note if the refund itself failed, in which case the charge stays).
    pub fn refund(self, error: DataFusionError) -> DataFusionError {
        match self
            .ledger
            .refund(&self.account, self.cost, self.file.as_deref())
        {
            Ok(()) => error,
            Err(refund_error) => error.context(format!(
                "the release failed and its charge to the ledger account '{}' could not be taken back ({})",
                self.account,
                refund_error.strip_backtrace()
            )),
        }
    }
}

/// Charges `cost` to the ledger account `account` (the source's table in its privacy
/// unit, [`account::AccountKey`]), under the limits and ledger file set in `config`. A
/// table has one unit: a charge in another unit than its earlier releases is refused (see
/// [`ledger::apply_charge`]).
pub fn charge_release<'a>(
    ledger: &'a Ledger,
    account: &str,
    cost: Cost,
    config: &ConfigOptions,
) -> Result<ReleaseCharge<'a>> {
    let options = config::options(config);
    let limits = Limits {
        epsilon: options.epsilon_budget,
        delta: options.delta_budget,
    };
    Charge::take(ledger, account, cost, limits, options.ledger_path)
}
